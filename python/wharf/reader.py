# SPDX-License-Identifier: Apache-2.0
"""Lazy, file-like readers of one object, and the coalescing of byte ranges.

    with wharf.reader.open_object(client, "bucket", "key", reader="range") as f:
        head = f.read(64)
        f.seek(off)
        f.readinto(buf)          # a ranged GET straight into buf (RDMA where the client has it)

Three reader choices, after s3torchconnector's reader constructors (its sequential() buffers
the whole object, which is "whole" here; its range_based(buffer_size) ranged GETs through a
buffer, "range" here without one and "sequential" with one):
    "sequential"  a read-ahead buffer of buffer_size bytes (default 8 MiB): a read outside it
                  GETs [position, position + max(n, buffer_size)) into it; reads and short
                  seeks inside it cost nothing. For files read front to back.
    "range"       each read is a ranged GET of exactly the bytes asked (readinto lands them in
                  the caller's buffer). For a header and a slice of a large object.
    "whole"       the first read GETs the whole object into memory; every read after is a
                  copy. For small objects read in full.
coalesce() merges byte ranges that are adjacent or near (within a gap) into fewer GETs, in
offset order; ObjectReader.read_ranges() and the DCP reader use it over HTTP. Over RDMA both
send the ranges as one scatter GET instead (Client.get_scatter: only their bytes move).
"""
import io
from typing import Any, List, Optional, Sequence, Tuple

from . import _lib
from .errors import WharfError

READERS = ("sequential", "range", "whole")
DEFAULT_BUFFER_SIZE = 8 << 20


def coalesce(ranges: Sequence[Tuple[int, int]], max_gap: int = 0,
             max_span: Optional[int] = None) -> List[Tuple[int, int, List[int]]]:
    """[(offset, length, [indexes of the ranges it covers])]: the ranges (offset, length)
    sorted by offset and merged where the next begins at most max_gap bytes after the end of
    the span so far (overlapping and adjacent ones always, while the span stays within
    max_span bytes when given). Every input range lies whole inside its span."""
    if max_gap < 0:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"max_gap must be >= 0, not {max_gap}")
    order = sorted(range(len(ranges)), key=lambda i: (ranges[i][0], ranges[i][1]))
    out: List[Tuple[int, int, List[int]]] = []
    start = end = 0
    members: List[int] = []
    for i in order:
        off, n = int(ranges[i][0]), int(ranges[i][1])
        if off < 0 or n < 0:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"range {i} ({off}, {n}): offset and "
                             "length must be >= 0")
        if members and off - end <= max_gap and (
                max_span is None or max(end, off + n) - start <= max_span):
            end = max(end, off + n)
            members.append(i)
            continue
        if members:
            out.append((start, end - start, members))
        start, end, members = off, off + n, [i]
    if members:
        out.append((start, end - start, members))
    return out


def runs(items: Sequence[Tuple[Any, int, int]], max_gap: int, small: int,
         max_span: int) -> List[Tuple[int, int]]:
    """[(i, j)]: items (object, offset, length), sorted by object and offset, in runs
    items[i:j] of one GET each: an item of small bytes or more alone; smaller items of one
    object coalesced (coalesce(): within max_gap, each run at most max_span bytes). The DCP
    reader plans its GETs with it."""
    out: List[Tuple[int, int]] = []
    i = 0
    while i < len(items):
        if items[i][2] >= small:
            out.append((i, i + 1))
            i += 1
            continue
        j = i
        while j < len(items) and items[j][0] == items[i][0] and items[j][2] < small:
            j += 1
        for _, _, members in coalesce([(off, n) for _, off, n in items[i:j]], max_gap,
                                      max_span):
            out.append((i + min(members), i + max(members) + 1))  # sorted: consecutive
        i = j
    return out


def scatter_runs(items: Sequence[Tuple[Any, int, int]], small: int, max_bytes: int,
                 max_windows: int) -> List[Tuple[int, int]]:
    """[(i, j)] as runs(), for a client with the scatter GET (Client.get_scatter): smaller
    items of one object share one request whatever the gaps between them, since a scatter
    GET moves only the items' own bytes; each run holds at most max_windows items and
    max_bytes of their bytes. An item of small bytes or more stays alone."""
    out: List[Tuple[int, int]] = []
    i = 0
    while i < len(items):
        if items[i][2] >= small:
            out.append((i, i + 1))
            i += 1
            continue
        j, tot = i, 0
        while (j < len(items) and items[j][0] == items[i][0] and items[j][2] < small
               and j - i < max_windows and (j == i or tot + items[j][2] <= max_bytes)):
            tot += items[j][2]
            j += 1
        out.append((i, j))
        i = j
    return out


class ObjectReader(io.RawIOBase):
    """A read-only, seekable file over one object (see the module doc for reader). size:
    the object's length (a HEAD when not given). stats: gets (GETs made) and bytes (fetched),
    which say what a sample cost."""

    def __init__(self, client: Any, bucket: str, key: str, size: Optional[int] = None,
                 reader: str = "sequential", buffer_size: int = DEFAULT_BUFFER_SIZE,
                 transport: str = "auto") -> None:
        super().__init__()
        if reader not in READERS:
            raise WharfError(_lib.WHARF_ERR_INVALID, f'reader must be one of {READERS}, not '
                             f"{reader!r}")
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"buffer_size must be a positive int, "
                             f"not {buffer_size!r}")
        self.client, self.bucket, self.key = client, bucket, key
        self.reader, self.buffer_size, self.transport = reader, buffer_size, transport
        self.size = int(client.stat(bucket, key).length if size is None else size)
        self._pos = 0
        self._buf = bytearray()
        self._buf_at = 0  # the object offset of _buf[0]
        self.stats = {"gets": 0, "bytes": 0}

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def __repr__(self) -> str:
        return f"<wharf.ObjectReader {self.url} reader={self.reader!r} size={self.size}>"

    # io protocol
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size + offset
        else:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"seek {self.url}: whence {whence} is not "
                             "SEEK_SET, SEEK_CUR or SEEK_END")
        if pos < 0:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"seek {self.url}: position {pos} is "
                             "before the start")
        self._pos = int(pos)
        return self._pos

    def readinto(self, b: Any) -> int:
        self._check_open()
        mv = memoryview(b).cast("B")
        n = max(0, min(len(mv), self.size - self._pos))
        if n == 0:
            return 0
        if self.reader == "range":
            self._get_into(mv[:n], self._pos, n)
        else:
            if self.reader == "whole" and not self._buf:
                self._fill(0, self.size)
            elif not (self._buf_at <= self._pos and
                      self._pos + n <= self._buf_at + len(self._buf)):
                self._fill(self._pos, min(self.size - self._pos, max(n, self.buffer_size)))
            rel = self._pos - self._buf_at
            mv[:n] = self._buf[rel:rel + n]
        self._pos += n
        return n

    def readall(self) -> bytes:
        return self.read(max(0, self.size - self._pos)) or b""

    def read_ranges(self, ranges: Sequence[Tuple[int, int]], max_gap: int = 64 << 10,
                    max_span: Optional[int] = 64 << 20) -> List[bytes]:
        """The bytes of each (offset, length), fetched by as few ranged GETs as coalesce()
        makes of them (sorted by offset, near ones merged within max_gap); the position is
        left where it was."""
        self._check_open()
        if ranges and getattr(self.client, "rdma", False) and self.transport != "http":
            try:
                return self._read_ranges_scatter(ranges)
            except WharfError as e:  # a server without the scatter GET: ranged GETs
                if e.status not in (_lib.WHARF_ERR_DECLINED, _lib.WHARF_ERR_UNSUPPORTED):
                    raise
        out: List[bytes] = [b""] * len(ranges)
        for off, n, members in coalesce(ranges, max_gap, max_span):
            n = max(0, min(n, self.size - off))
            buf = bytearray(n)
            if n:
                self._get_into(memoryview(buf), off, n)
            for i in members:
                o, ln = ranges[i]
                out[i] = bytes(buf[o - off:o - off + ln])
        return out

    def _read_ranges_scatter(self, ranges: Sequence[Tuple[int, int]]) -> List[bytes]:
        """read_ranges over RDMA: every range (cut at the object's end) by one scatter GET
        (Client.get_scatter) into one buffer, gaps unread, however far apart they are."""
        wins, at = [], 0
        for i, (o, ln) in enumerate(ranges):
            o, ln = int(o), int(ln)
            if o < 0 or ln < 0:
                raise WharfError(_lib.WHARF_ERR_INVALID, f"range {i} ({o}, {ln}): offset and "
                                 "length must be >= 0")
            n = max(0, min(ln, self.size - o))
            wins.append((min(o, self.size), n, at))
            at += n
        buf = bytearray(max(at, 1))
        rep = self.client.get_scatter(self.bucket, self.key, buf, wins,
                                      transport=self.transport, cache=False)
        self.stats["gets"] += rep.requests
        self.stats["bytes"] += rep.bytes
        return [bytes(buf[a:a + n]) for _, n, a in wins]

    def _fill(self, offset: int, n: int) -> None:
        buf = bytearray(n)
        self._get_into(memoryview(buf), offset, n)
        self._buf, self._buf_at = buf, offset

    def _get_into(self, mv: memoryview, offset: int, n: int) -> None:
        rep = self.client.get_into(self.bucket, self.key, mv, offset=offset, length=n,
                                   transport=self.transport, cache=False)
        self.stats["gets"] += 1
        self.stats["bytes"] += rep.bytes
        if rep.bytes != n:
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"{self.url}: {rep.bytes} bytes landed "
                             f"of {n} at {offset}: the object is shorter than its size "
                             f"{self.size} (replaced since?)")

    def _check_open(self) -> None:
        if self.closed:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{self.url}: the reader is closed")

    def close(self) -> None:
        self._buf = bytearray()
        super().close()


def open_object(client: Any, bucket: str, key: str, reader: str = "sequential",
                size: Optional[int] = None, buffer_size: int = DEFAULT_BUFFER_SIZE,
                transport: str = "auto") -> ObjectReader:
    """An ObjectReader over s3://bucket/key (see the module doc for reader)."""
    return ObjectReader(client, bucket, key, size, reader, buffer_size, transport)
