# SPDX-License-Identifier: Apache-2.0
"""The writers of wharf.torch.data's fixed layouts: TokenShardWriter and RawImageShardWriter (and
write_token_shards, write_raw_image_shards), which write the shards TokenDataset and
RawImageShards read (docs/pytorch.md, "Dataset layouts"). wharf.torch.data re-exports them."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import numpy as np
import torch

from .. import _lib
from ..client import Client
from ..config import join as _join, parse_url
from ..errors import WharfError
from ._stream import _default_client


class _ShardWriter:
    """Shards <prefix>/<name>-<i:05d><suffix> with a <name>-<i:05d>.json beside each, PUT as
    each fills (the .json after its data object, so a listed data object's metadata follows
    it); close() writes the last, partial shard and returns the data keys. Used as a context
    manager, an exception drops the rows not yet written."""

    def _meta(self, data: Any, extra: Any) -> Dict[str, Any]:
        raise NotImplementedError

    def __init__(self, url: str, per_shard: int, client: Optional[Client], name: str, suffix: Any,
                 first_index: int) -> None:
        if not isinstance(per_shard, int) or per_shard < 1:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"rows per shard must be a positive int, "
                             f"not {per_shard!r}")
        self.client = _default_client(client)
        self.bucket, prefix = parse_url(url, need_key=False)
        self.prefix, self.name, self.suffix = prefix, name, suffix
        self.per_shard, self.index = per_shard, int(first_index)
        self.keys: List[str] = []
        self._rows, self._closed = 0, False
        self._pending: List[Any] = []

    def _add(self, rows: Any, extra: Any) -> None:
        if self._closed:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{type(self).__name__} is closed")
        self._pending.append((rows, extra))
        self._rows += rows.shape[0]
        while self._rows >= self.per_shard:
            self._flush(self.per_shard)

    def _flush(self, n: int) -> None:
        rows, extras, got = [], [], 0
        while got < n:
            r, e = self._pending.pop(0)
            take = min(n - got, r.shape[0])
            rows.append(r[:take])
            extras.append(e[:take])
            if take < r.shape[0]:
                self._pending.insert(0, (r[take:], e[take:]))
            got += take
        self._rows -= n
        data = np.ascontiguousarray(np.concatenate(rows))
        extra = [x for e in extras for x in e]
        stem = _join(self.prefix, f"{self.name}-{self.index:05d}")
        self.client.put_from(self.bucket, stem + self.suffix, data)
        self.client.put(self.bucket, stem + ".json", json.dumps(self._meta(data, extra)).encode())
        self.keys.append(stem + self.suffix)
        self.index += 1

    def close(self) -> Any:
        """Writes what is pending as a last shard; returns the keys of every data object."""
        if not self._closed:
            if self._rows:
                self._flush(self._rows)
            self._closed = True
        return list(self.keys)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self._pending, self._rows, self._closed = [], 0, True


def _ints(a: Any, what: str) -> Any:
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{what} must be integers, not {a.dtype}")
    return a


class TokenShardWriter(_ShardWriter):
    """Writes token shards TokenDataset reads: <prefix>/<name>-00000.bin (int32 LE,
    sequences_per_shard x seq_len) and its .json {sequences, seq_len, dtype, bytes_per_token,
    vocab_size, sequence_bytes}. write(tokens): integers whose count is a multiple of
    seq_len (any shape: [n, seq_len] or flat), each in [0, vocab_size) when vocab_size is
    given, else in int32's range."""

    def __init__(self, url: str, seq_len: int, sequences_per_shard: int,
                 vocab_size: Optional[int] = None, client: Optional[Client] = None,
                 name: str = "shard", first_index: int = 0, metadata: Any = None) -> None:
        super().__init__(url, sequences_per_shard, client, name, ".bin", first_index)
        if not isinstance(seq_len, int) or seq_len < 1:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"seq_len must be a positive int, not "
                             f"{seq_len!r}")
        self.seq_len, self.vocab_size, self.metadata = seq_len, vocab_size, dict(metadata or {})

    def write(self, tokens: Any) -> None:
        a = _ints(tokens, "tokens")
        if a.size % self.seq_len:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{a.size} tokens are not a whole number "
                             f"of sequences of seq_len {self.seq_len}")
        if a.size:
            lo, hi = int(a.min()), int(a.max())
            top = self.vocab_size if self.vocab_size is not None else 2 ** 31
            bottom = 0 if self.vocab_size is not None else -2 ** 31
            if lo < bottom or hi >= top:
                raise WharfError(_lib.WHARF_ERR_RANGE, f"token {lo if lo < bottom else hi} is "
                                 f"outside [{bottom}, {top})" + (" (vocab_size)" if
                                                                 self.vocab_size else ""))
        rows = a.astype("<i4").reshape(-1, self.seq_len)
        self._add(rows, [None] * rows.shape[0])

    def _meta(self, data: Any, _: Any) -> Any:
        m = dict(self.metadata)
        m.update(sequences=int(data.shape[0]), seq_len=self.seq_len, dtype="int32",
                 bytes_per_token=4, sequence_bytes=self.seq_len * 4)
        if self.vocab_size is not None:
            m["vocab_size"] = int(self.vocab_size)
        return m


class RawImageShardWriter(_ShardWriter):
    """Writes raw image shards RawImageShards reads: <prefix>/<name>-00000.raw (uint8
    samples_per_shard x H x W x C) and its .json {samples, height, width, channels, dtype,
    sample_bytes, labels, keys}. write(images, labels, keys=None): uint8 [B, H, W, C] (numpy or
    a tensor), B int labels, and B sample keys (default: the running sample number)."""

    def __init__(self, url: str, height: int, width: int, channels: int, samples_per_shard: int,
                 client: Optional[Client] = None, name: str = "shard",
                 first_index: int = 0) -> None:
        super().__init__(url, samples_per_shard, client, name, ".raw", first_index)
        self.shape = (int(height), int(width), int(channels))
        if min(self.shape) < 1:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"height, width and channels must be "
                             f"positive, not {self.shape}")
        self._count = 0

    def write(self, images: Any, labels: Any, keys: Any = None) -> None:
        a = images.detach().cpu().numpy() if isinstance(images, torch.Tensor) else \
            np.asarray(images)
        if a.dtype != np.uint8 or a.ndim != 4 or tuple(a.shape[1:]) != self.shape:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"images must be uint8 [B, "
                             f"{', '.join(map(str, self.shape))}], not {a.dtype} "
                             f"{list(a.shape)}")
        labs = [int(x) for x in _ints(labels, "labels").reshape(-1)]
        if len(labs) != a.shape[0]:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{len(labs)} labels for {a.shape[0]} "
                             "images")
        if keys is None:
            keys = [f"{self._count + i:09d}" for i in range(a.shape[0])]
        keys = [str(k) for k in keys]
        if len(keys) != a.shape[0]:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{len(keys)} keys for {a.shape[0]} "
                             "images")
        self._count += a.shape[0]
        self._add(a, list(zip(labs, keys)))

    def _meta(self, data: Any, extra: Any) -> Any:
        h, w, c = self.shape
        return {"samples": int(data.shape[0]), "height": h, "width": w, "channels": c,
                "dtype": "uint8", "sample_bytes": h * w * c, "labels": [e[0] for e in extra],
                "keys": [e[1] for e in extra]}


def write_token_shards(url: str, tokens: Any, seq_len: int, sequences_per_shard: int,
                       vocab_size: Optional[int] = None, client: Optional[Client] = None,
                       name: str = "shard", metadata: Any = None) -> Any:
    """TokenShardWriter in one call: the keys of the .bin objects written."""
    with TokenShardWriter(url, seq_len, sequences_per_shard, vocab_size, client, name,
                          metadata=metadata) as w:
        w.write(tokens)
    return w.keys


def write_raw_image_shards(url: str, images: Any, labels: Any, samples_per_shard: int,
                           keys: Any = None, client: Optional[Client] = None,
                           name: str = "shard") -> Any:
    """RawImageShardWriter in one call: images uint8 [N, H, W, C]; the .raw keys written."""
    height, width, channels = tuple(images.shape[1:]) if len(images.shape) == 4 else (0, 0, 0)
    with RawImageShardWriter(url, height, width, channels, samples_per_shard, client=client,
                             name=name) as w:
        w.write(images, labels, keys)
    return w.keys
