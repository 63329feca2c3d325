# SPDX-License-Identifier: Apache-2.0
"""wharf:// as an fsspec filesystem, so that anything that takes an fsspec URL (torch.save to
fsspec.open, Lightning's ModelCheckpoint(dirpath=...) and default_root_dir, pandas, datasets)
reads and writes wharf objects through libwharf.

    import fsspec, torch, wharf.fsspec
    with fsspec.open("wharf://bucket/ckpt.pt", "wb") as f:   # client: wharf.Client()
        torch.save(model.state_dict(), f)
    fs = fsspec.filesystem("wharf", client=wharf.Client(...))

The wheel registers the protocol through an fsspec.specs entry point; importing this module
registers it too. wharf.fsspec.serve_s3() (or WHARF_FSSPEC_S3=1 before `import wharf`) makes
s3:// URLs use it as well, for code that only knows S3 URLs.

Paths are bucket/key; S3 has no directories, so a "directory" is a bucket or a key prefix
that some key sits under: ls/find/info see prefixes, mkdir of a bucket creates it, mkdir of a
prefix is a no-op (there is nothing to create until a key is written), rmdir of a bucket
deletes it. Reads are ranged GETs of block_size (over RDMA when the client has a provider);
writes are buffered, spilled to a temporary file past block_size, and sent as one PUT at
close (libwharf makes it a multipart upload at or above the client's multipart_threshold),
so nothing is visible under the key until the file is closed whole. Append ("ab"), as
Lightning's CSVLogger does, is a read-modify-write: the object comes down, the writes follow
it, and close() PUTs the whole on condition (If-Match) that no other writer changed it in
between; one that did makes the close raise PreconditionFailedError.
"""
from __future__ import annotations

import contextlib
import datetime
import errno
import inspect
import io
import mmap
import os
import tempfile
import threading
from typing import IO, Any, Dict, Iterator, List, Optional, Set, Tuple

import fsspec
# (fsspec ships no type information)
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from . import _lib
from .client import Client
from .errors import NotFoundError, WharfError


def _fsspec_version() -> Tuple[int, ...]:
    try:
        return tuple(int(x) for x in fsspec.__version__.split(".")[:2])
    except (AttributeError, ValueError):
        return (0,)


# AbstractFileSystem.find(withdirs=True) includes the directory searched from fsspec
# 2023.9.0 on (the glob rework for POSIX semantics); earlier versions leave it out.
_FIND_LISTS_ROOT = _fsspec_version() >= (2023, 9)

PROTOCOLS = ("wharf", "s3", "s3a")
# s3fs-style storage options, so that code written for s3fs passes its settings through
_S3FS_NAMES = {"key": "access_key", "secret": "secret_key", "endpoint_url": "endpoint",
               "region_name": "region"}


_CLIENT_ARGS = set(inspect.signature(Client.__init__).parameters) - {"self"}


@contextlib.contextmanager
def _mapped(fileno: int, size: int, access: int) -> Iterator[Any]:
    """mmap of a file, closed after; when the body raised, the error's traceback may still
    hold a view of it, and the mapping is then left to the garbage collector."""
    mm = mmap.mmap(fileno, size, access=access)
    try:
        yield mm
    finally:
        try:
            mm.close()
        except BufferError:
            pass


def _is_missing(e: WharfError) -> bool:
    return e.status == _lib.WHARF_ERR_NOT_FOUND


# fsspec ships no type information: its classes are Any to mypy
class WharfFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """fsspec filesystem over a wharf.Client. client: a wharf.Client (default: wharf.Client()
    from the environment and AWS profile); or the Client's keyword arguments (endpoint,
    access_key, secret_key, region, provider, unix_socket, ...; s3fs's key, secret,
    endpoint_url and client_kwargs={"endpoint_url", "region_name"} are understood too).
    block_size: the read block (one ranged GET) and the write buffer before spilling."""

    protocol = PROTOCOLS
    root_marker = ""
    DEFAULT_BLOCK_SIZE = 16 << 20

    def __init__(self, client: Optional[Client] = None, block_size: Optional[int] = None,
                 transport: str = "auto", **kwargs: Any) -> None:
        ck = dict(kwargs.pop("client_kwargs", None) or {})
        opts = {}
        for k in list(kwargs):
            if k in _S3FS_NAMES or k in _CLIENT_ARGS:
                opts[_S3FS_NAMES.get(k, k)] = kwargs.pop(k)
        for k, v in ck.items():
            if k in _S3FS_NAMES:
                opts[_S3FS_NAMES[k]] = v
        super().__init__(**kwargs)
        if client is not None and opts:
            raise WharfError(_lib.WHARF_ERR_INVALID, "WharfFileSystem: pass client= or the "
                             f"client's settings ({', '.join(sorted(opts))}), not both")
        self.client = client if client is not None else Client(**opts)
        self.block_size = int(block_size or self.DEFAULT_BLOCK_SIZE)
        self.transport = transport
        # Directories made with mkdir/makedirs under an existing bucket. S3 has no
        # directories: a prefix exists once a key is under it. Until then this filesystem
        # object remembers the ones it made, so that makedirs then isdir holds (Lightning's
        # loggers check the folder they made before writing into it).
        self._made_dirs: Set[str] = set()
        self._made_lock = threading.Lock()

    # ---- paths -----------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = fsspec.utils.stringify_path(path)
        for p in PROTOCOLS:
            if path.startswith(p + "://"):
                path = path[len(p) + 3:]
                break
        return path.strip("/")

    def unstrip_protocol(self, name: str) -> str:
        return f"wharf://{name}"

    @staticmethod
    def split_path(path: str) -> Tuple[str, str]:
        bucket, _, key = path.partition("/")
        return bucket, key.strip("/")

    def _split(self, path: str) -> Tuple[str, str]:
        return self.split_path(self._strip_protocol(path))

    def _bucket_exists(self, bucket: str) -> bool:
        return bucket in self.client.list_buckets()

    # ---- listing ---------------------------------------------------------------------------

    @staticmethod
    def _file_info(bucket: str, key: str, length: int, mtime: int, etag: str) -> Dict[str, Any]:
        return {"name": f"{bucket}/{key}", "size": length, "type": "file", "ETag": etag,
                "mtime": mtime}

    @staticmethod
    def _dir_info(name: str) -> Dict[str, Any]:
        return {"name": name, "size": 0, "type": "directory"}

    def _keys(self, bucket: str, prefix: str) -> List[Any]:
        try:
            return self.client.list(bucket, prefix=prefix or None)
        except WharfError as e:
            if _is_missing(e):
                raise FileNotFoundError(errno.ENOENT, f"no bucket {bucket}", bucket) from e
            raise

    def ls(self, path: str, detail: Any = True, **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        if not path:
            out = [self._dir_info(b) for b in self.client.list_buckets()]
            return out if detail else [o["name"] for o in out]
        bucket, key = self.split_path(path)
        prefix = f"{key}/" if key else ""
        seen: Dict[str, Dict[str, Any]] = {}
        for o in self._keys(bucket, prefix):
            rest = o.key[len(prefix):]
            if not rest:
                continue  # a "dir/" marker object: the directory itself
            head, sep, _ = rest.partition("/")
            name = f"{bucket}/{prefix}{head}"
            if sep:
                seen.setdefault(name, self._dir_info(name))
            else:
                seen[name] = self._file_info(bucket, o.key, o.length, o.mtime, o.etag)
        if not seen and key:
            info = self.info(path)  # a file: ls gives the file itself; else FileNotFoundError
            out = [] if info["type"] == "directory" else [info]  # a made, still empty dir
        else:
            out = [seen[n] for n in sorted(seen)]
        return out if detail else [o["name"] for o in out]

    def info(self, path: str, **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        if not path:
            return self._dir_info("")
        bucket, key = self.split_path(path)
        if not key:
            if self._bucket_exists(bucket):
                return self._dir_info(bucket)
            raise FileNotFoundError(errno.ENOENT, f"no bucket {bucket}", path)
        try:
            st = self.client.stat(bucket, key)
            out = self._file_info(bucket, key, st.length, st.mtime, st.etag)
            out["ContentType"] = st.content_type
            if st.crc64nvme is not None:
                out["crc64nvme"] = st.crc64nvme
            return out
        except WharfError as e:
            if not _is_missing(e):
                raise
        try:
            under = self.client.list(bucket, prefix=key + "/")
        except WharfError as e:
            if not _is_missing(e):
                raise
            under = []
        if under:
            return self._dir_info(path)
        with self._made_lock:
            made = path.rstrip("/") in self._made_dirs
        if made:
            return self._dir_info(path.rstrip("/"))
        raise FileNotFoundError(errno.ENOENT, f"no object or prefix {path}", path)

    def _remember_dirs(self, bucket: str, key: str) -> None:
        parts = [p for p in key.split("/") if p]
        with self._made_lock:
            for i in range(1, len(parts) + 1):
                self._made_dirs.add(f"{bucket}/{'/'.join(parts[:i])}")

    def find(self, path: str, maxdepth: Any = None, withdirs: Any = False, detail: Any = False,
             **kwargs: Any) -> Any:
        # one listing of the whole prefix, not a walk of ls calls
        path = self._strip_protocol(path)
        if not path:
            out: Dict[str, Dict[str, Any]] = {}
            for b in self.client.list_buckets():
                if withdirs:
                    out[b] = self._dir_info(b)
                if maxdepth is None or maxdepth > 1:
                    sub = self.find(b, None if maxdepth is None else maxdepth - 1, withdirs,
                                    detail=True)
                    out.update(sub)
            names = sorted(out)
            return {n: out[n] for n in names} if detail else names
        bucket, key = self.split_path(path)
        prefix = f"{key}/" if key else ""
        out = {}
        for o in self._keys(bucket, prefix):
            rest = o.key[len(prefix):]
            if not rest:
                continue
            parts = rest.split("/")
            if maxdepth is not None and len(parts) > maxdepth:
                if withdirs:
                    for d in range(1, maxdepth + 1):
                        n = f"{bucket}/{prefix}{'/'.join(parts[:d])}"
                        out.setdefault(n, self._dir_info(n))
                continue
            if withdirs:
                for d in range(1, len(parts)):
                    n = f"{bucket}/{prefix}{'/'.join(parts[:d])}"
                    out.setdefault(n, self._dir_info(n))
            if parts[-1]:
                out[f"{bucket}/{o.key}"] = self._file_info(bucket, o.key, o.length, o.mtime,
                                                           o.etag)
        if not out and key:
            try:
                info = self.info(path)
            except FileNotFoundError:
                info = None
            if info is not None and info["type"] == "file":
                out[path] = info
        elif withdirs and _FIND_LISTS_ROOT:
            # fsspec since 2023.9 lists the directory itself under withdirs (glob's "d/**"
            # then matches d): the base class's rule, kept whatever fsspec is installed
            out.setdefault(path, self._dir_info(path))
        names = sorted(out)
        return {n: out[n] for n in names} if detail else names

    def modified(self, path: str) -> Any:
        return datetime.datetime.fromtimestamp(self.info(path)["mtime"],
                                               tz=datetime.timezone.utc)

    # ---- buckets and prefixes --------------------------------------------------------------

    def mkdir(self, path: str, create_parents: Any = True, **kwargs: Any) -> None:
        bucket, key = self._split(path)
        if not bucket:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"mkdir {path!r}: no bucket in the path")
        if self._bucket_exists(bucket):
            if not key:
                raise FileExistsError(errno.EEXIST, f"bucket {bucket} exists", bucket)
            self._remember_dirs(bucket, key)  # a prefix: a key under it makes it real
            return
        if key and not create_parents:
            raise FileNotFoundError(errno.ENOENT, f"no bucket {bucket} (create_parents=False)",
                                    path)
        self.client.create_bucket(bucket)

    def makedirs(self, path: str, exist_ok: Any = False) -> None:
        bucket, key = self._split(path)
        if not bucket:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"makedirs {path!r}: no bucket in the path")
        if self._bucket_exists(bucket):
            if not exist_ok and (not key or self.isdir(path)):
                raise FileExistsError(errno.EEXIST, f"{self._strip_protocol(path)} exists",
                                      path)
            if key:
                self._remember_dirs(bucket, key)
            return
        self.client.create_bucket(bucket)
        if key:
            self._remember_dirs(bucket, key)

    def rmdir(self, path: str) -> None:
        bucket, key = self._split(path)
        if key:
            if self.client.list(bucket, prefix=key + "/"):
                raise OSError(errno.ENOTEMPTY, f"{bucket}/{key} has keys under it", path)
            with self._made_lock:
                self._made_dirs.discard(f"{bucket}/{key.strip('/')}")
            return  # an empty prefix is no object: nothing else to remove
        try:
            self.client.delete_bucket(bucket)
        except WharfError as e:
            if e.status == _lib.WHARF_ERR_NOT_EMPTY or "BucketNotEmpty" in str(e):
                raise OSError(errno.ENOTEMPTY, f"bucket {bucket} is not empty", path) from e
            raise

    def rm_file(self, path: str) -> None:
        bucket, key = self._split(path)
        if not key:
            raise IsADirectoryError(errno.EISDIR, f"{bucket} is a bucket: rmdir or "
                                    "rm(recursive=True) removes it", path)
        self.client.delete(bucket, key)

    def rm(self, path: Any, recursive: Any = False, maxdepth: Any = None) -> None:
        if isinstance(path, str) and not any(ch in path for ch in "*?[") and \
                not self.exists(path):
            # as local and memory filesystems do (an S3 DELETE of nothing says nothing)
            raise FileNotFoundError(errno.ENOENT, f"no object or prefix {path}", path)
        paths = self.expand_path(path, recursive=recursive, maxdepth=maxdepth)
        for p in reversed(paths):
            bucket, key = self._split(p)
            if not key:
                if recursive:
                    self.rmdir(bucket)
                continue
            try:
                self.client.delete(bucket, key)
            except WharfError as e:
                # an implied directory (a prefix) has no object of its own
                if not (_is_missing(e) or self.isdir(p)):
                    raise

    # ---- whole objects ---------------------------------------------------------------------

    def cat_file(self, path: str, start: Optional[int] = None, end: Any = None,
                 **kwargs: Any) -> Any:
        bucket, key = self._split(path)
        try:
            if start is None and end is None:
                return self.client.get(bucket, key, transport=self.transport)
            size = self.client.stat(bucket, key).length
        except NotFoundError as e:
            raise FileNotFoundError(errno.ENOENT, str(e), path) from e
        start = 0 if start is None else (max(size + start, 0) if start < 0 else min(start, size))
        end = size if end is None else (max(size + end, 0) if end < 0 else min(end, size))
        if end <= start:
            return b""
        return self.client.get(bucket, key, offset=start, length=end - start,
                               transport=self.transport)

    def pipe_file(self, path: str, value: Any, **kwargs: Any) -> None:
        bucket, key = self._split(path)
        self.client.put(bucket, key, bytes(value) if not isinstance(value, bytes) else value,
                        transport=self.transport)

    def put_file(self, lpath: Any, rpath: Any, callback: Any = fsspec.callbacks._DEFAULT_CALLBACK,
                 **kwargs: Any) -> None:
        if os.path.isdir(lpath):
            return  # S3 prefixes need no creating
        bucket, key = self._split(rpath)
        size = os.path.getsize(lpath)
        callback.set_size(size)
        if size == 0:
            self.client.put(bucket, key, b"", transport=self.transport)
        else:
            with open(lpath, "rb") as f, \
                    _mapped(f.fileno(), size, mmap.ACCESS_COPY) as mm:
                # ACCESS_COPY: a writable (registrable) private mapping; nothing is copied
                # unless written, and nothing here writes
                self.client.put_from(bucket, key, mm, transport=self.transport, cache=False)
        callback.relative_update(size)

    def get_file(self, rpath: Any, lpath: Any, callback: Any = fsspec.callbacks._DEFAULT_CALLBACK,
                 outfile: Any = None, **kwargs: Any) -> None:
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        bucket, key = self._split(rpath)
        size = self.client.stat(bucket, key).length
        callback.set_size(size)
        tmp = f"{lpath}.wharf-part"
        with open(tmp, "w+b") as f:
            if size:
                f.truncate(size)
                with _mapped(f.fileno(), size, mmap.ACCESS_WRITE) as mm:
                    rep = self.client.get_into(bucket, key, mm, transport=self.transport,
                                               cache=False)
                    if rep.bytes != size:
                        raise WharfError(_lib.WHARF_ERR_IO, f"get {rpath}: {rep.bytes} of "
                                         f"{size} bytes landed (the object changed?)")
        os.replace(tmp, lpath)
        callback.relative_update(size)

    def cp_file(self, path1: Any, path2: Any, **kwargs: Any) -> None:
        # no server-side copy in libwharf's ABI: through this process
        self.pipe_file(path2, self.cat_file(path1))

    # ---- open ------------------------------------------------------------------------------

    def _open(self, path: str, mode: str = "rb", block_size: Any = None, autocommit: Any = True,
              cache_options: Any = None, **kwargs: Any) -> Any:
        return WharfFile(self, path, mode, block_size=block_size or self.block_size,
                         autocommit=autocommit, cache_options=cache_options, **kwargs)


# fsspec ships no type information: its classes are Any to mypy
class WharfFile(AbstractBufferedFile):  # type: ignore[misc]
    """A buffered wharf object: reads are ranged GETs of block_size through fsspec's cache;
    writes go to memory, then to a temporary file past block_size, and are PUT as one object
    at close (or at commit() when autocommit=False)."""

    def __init__(self, fs: Any, path: str, mode: str = "rb", block_size: Any = None,
                 autocommit: Any = True, cache_type: Any = "readahead", cache_options: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(fs, path, mode, block_size=block_size, autocommit=autocommit,
                         cache_type=cache_type, cache_options=cache_options, **kwargs)
        self.bucket, self.key = fs._split(path)
        if not self.key:
            raise IsADirectoryError(errno.EISDIR, f"{path} is a bucket, not an object", path)
        self._spill: Optional[IO[bytes]] = None
        self._pending: Optional[IO[bytes]] = None
        self._if_match: Optional[str] = None
        if mode == "ab":
            self._start_append()

    def _start_append(self) -> None:
        """S3 objects cannot grow in place: the current object comes down into the spill
        file, the writes follow it, and close() PUTs the whole, on condition that the object
        is still the one read (if_match: a writer in between gets PreconditionFailedError,
        not a silent loss)."""
        c = self.fs.client
        try:
            st = c.stat(self.bucket, self.key)
        except NotFoundError:
            self._if_none_match = True
            return
        self._if_match = st.etag
        self._spill = tempfile.TemporaryFile(prefix="wharf-upload-")
        if st.length:
            self._spill.truncate(st.length)
            with _mapped(self._spill.fileno(), st.length, mmap.ACCESS_WRITE) as mm:
                rep = c.get_into(self.bucket, self.key, mm, transport=self.fs.transport,
                                 cache=False)
            if rep.bytes != st.length:
                raise WharfError(_lib.WHARF_ERR_IO, f"append to {self.path}: {rep.bytes} of "
                                 f"{st.length} bytes came down (the object changed?)")
        self._spill.seek(st.length)
        self.loc = st.length

    def _fetch_range(self, start: int, end: Any) -> Any:
        end = min(end, self.size)
        if end <= start:
            return b""
        return self.fs.client.get(self.bucket, self.key, offset=start, length=end - start,
                                  transport=self.fs.transport)

    def _initiate_upload(self) -> None:
        pass

    def _upload_chunk(self, final: Any = False) -> Any:
        data = self.buffer.getbuffer()
        if not final or self._spill is not None:
            if self._spill is None:
                self._spill = tempfile.TemporaryFile(prefix="wharf-upload-")
            self._spill.write(data)
            del data
            if not final:
                return True
        if not self.autocommit:
            self._pending = self._spill if self._spill is not None else \
                io.BytesIO(bytes(data))
            self._spill = None
            return True
        self._send(self._spill if self._spill is not None else data)
        self._spill = None
        return True

    def _send(self, src: Any) -> None:
        c = self.fs.client
        kw = dict(transport=self.fs.transport, if_match=self._if_match,
                  if_none_match=getattr(self, "_if_none_match", False))
        if isinstance(src, memoryview):
            c.put_from(self.bucket, self.key, src, cache=False, **kw)
            return
        if isinstance(src, io.BytesIO):
            c.put_from(self.bucket, self.key, src.getbuffer(), cache=False, **kw)
            return
        try:
            size = src.seek(0, os.SEEK_END)
            if size == 0:
                c.put(self.bucket, self.key, b"", **kw)
            else:
                with _mapped(src.fileno(), size, mmap.ACCESS_WRITE) as mm:
                    c.put_from(self.bucket, self.key, mm, cache=False, **kw)
        finally:
            src.close()

    def commit(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._send(pending)

    def discard(self) -> None:
        if self._pending is not None:
            self._pending.close()
            self._pending = None
        if self._spill is not None:
            self._spill.close()
            self._spill = None


def register(clobber: bool = True) -> None:
    """Registers wharf:// with fsspec (done on import)."""
    fsspec.register_implementation("wharf", WharfFileSystem, clobber=clobber)


def serve_s3() -> None:
    """Makes s3:// URLs use wharf as well (instead of s3fs), for code that only knows S3
    URLs. Also done at `import wharf` when WHARF_FSSPEC_S3=1."""
    fsspec.register_implementation("s3", WharfFileSystem, clobber=True)
    fsspec.register_implementation("s3a", WharfFileSystem, clobber=True)


register()
if os.environ.get("WHARF_FSSPEC_S3") == "1":
    serve_s3()

__all__ = ["WharfFileSystem", "WharfFile", "register", "serve_s3"]
