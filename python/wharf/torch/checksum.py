# SPDX-License-Identifier: Apache-2.0
"""sum64: a checksum of a tensor's bytes that runs where the bytes are (GPU or host).

A checkpoint saved from GPU memory over the direct path never brings its bytes to the host,
so the per-tensor CRC-32 that host saves record (zlib, on the CPU) cannot be had without a
copy that would cost more than the save. sum64 is computed by torch on the tensor's own
device instead, at memory bandwidth:

    w_i  = the bytes as little-endian uint32 words, the last one zero-padded; i = 1, 2, ...
    s1   = sum(w_i)       mod 2**64
    s2   = sum(i * w_i)   mod 2**64
    sum64 = (s1, s2, nbytes)

It is a position-weighted (Fletcher-style) sum: any change to one word, any swap of two
unequal words, and any change of length changes it. It is not a CRC: it guards against
bytes lost, misplaced or overwritten on the way, not against an adversary. The words are
taken in pieces of PIECE bytes, so the scratch memory it needs is bounded (about 3 x PIECE on
the device) whatever the tensor's size.

Block sums (block_sums, first_mismatch) checksum a byte range in fixed blocks, so that a
reader of part of it can check what it read by reading at most the partial blocks at its
ends (wharf.torch.dcp): "crc32" (zlib) where the bytes are in host memory, "sum64" where they
are on a GPU.
"""
import zlib
from typing import Any, List, Optional, Sequence, Tuple

import torch

PIECE = 64 << 20
_M64 = (1 << 64) - 1


def sum64(flat: torch.Tensor) -> List[int]:
    """sum64 of a 1-D uint8 tensor, on its own device: [s1, s2, nbytes]."""
    if flat.dtype != torch.uint8 or flat.dim() != 1:
        raise ValueError("sum64 takes a 1-D uint8 tensor")
    n = flat.numel()
    s1 = s2 = 0
    for off in range(0, n, PIECE):
        piece = flat[off:off + PIECE]
        m = piece.numel()
        if m % 4 or piece.storage_offset() % 4:
            padded = torch.zeros((m + 3) // 4 * 4, dtype=torch.uint8, device=flat.device)
            padded[:m] = piece
            piece = padded
        w = piece.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
        first = off // 4 + 1
        idx = torch.arange(first, first + w.numel(), dtype=torch.int64, device=flat.device)
        # int64 sums and products wrap modulo 2**64, which is the arithmetic wanted: the
        # order torch reduces in does not matter, and a product past 2**63 (a tensor over
        # 8 GiB) is still right modulo 2**64.
        s1 = (s1 + int(w.sum())) & _M64
        s2 = (s2 + int((w * idx).sum())) & _M64
        del w, idx
    return [s1, s2, n]


def sum64_reference(data: Any) -> List[int]:
    """The same sum in plain Python over bytes (for tests, and for readers without torch)."""
    data = bytes(data)
    n = len(data)
    if n % 4:
        data += b"\0" * (4 - n % 4)
    s1 = s2 = 0
    for i in range(0, len(data), 4):
        w = int.from_bytes(data[i:i + 4], "little")
        s1 = (s1 + w) & _M64
        s2 = (s2 + (i // 4 + 1) * w) & _M64
    return [s1, s2, n]


def block_sum(check: str, piece: Any) -> Any:
    """The check ("crc32" or "sum64") of one block: piece is bytes-like, or a 1-D uint8
    tensor on any device (a GPU block is copied to the host for crc32)."""
    if check == "crc32":
        if isinstance(piece, torch.Tensor):
            piece = piece.cpu().numpy() if piece.numel() else b""
        return zlib.crc32(piece)
    if check == "sum64":
        if not isinstance(piece, torch.Tensor):
            piece = torch.frombuffer(bytearray(piece), dtype=torch.uint8) if len(piece) else \
                torch.empty(0, dtype=torch.uint8)
        return tuple(sum64(piece))
    raise ValueError(f"unknown checksum {check!r} (crc32 and sum64 are known)")


def block_sums(flat: torch.Tensor, block: int) -> Tuple[str, Tuple[Any, ...]]:
    """(check, per-block sums) of a 1-D uint8 tensor in blocks of block bytes (the last one
    shorter): crc32 on the host, sum64 on a GPU, where the bytes are."""
    check = "crc32" if flat.device.type == "cpu" else "sum64"
    return check, tuple(block_sum(check, flat[a:a + block]) for a in range(0, flat.numel(), block))


def first_mismatch(check: str, sums: Sequence[Any], block: int, flat: Any,
                   start: int) -> Optional[Tuple[int, Any, Any]]:
    """flat (bytes-like, or a 1-D uint8 tensor) holds bytes [start, start + len) of a range
    whose block sums are sums; start is a block boundary and the end one too or the range's
    end. Returns None when every block matches, else (block index, got, want)."""
    n = flat.numel() if isinstance(flat, torch.Tensor) else len(flat)
    if start % block:
        raise ValueError(f"start {start} is not a multiple of the block size {block}")
    for a in range(0, n, block):
        k = (start + a) // block
        want = sums[k] if k < len(sums) else None
        got = block_sum(check, flat[a:min(a + block, n)])
        if got != want:
            return k, got, want
    return None
