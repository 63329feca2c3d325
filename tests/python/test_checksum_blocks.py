# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.checksum's block sums, which wharf.torch.dcp records per item at save and
checks after every read (whole or ranged): each block's sum is the sum of its bytes, a
flipped bit is found in the block that holds it from any block-aligned part, a partial last
block and an empty range work, bytes and tensors agree, and the GPU's sum64 equals the
host's. Runs on any torch (the DCP tests that use it need torch >= 2.2)."""
import zlib

import pytest
import torch

from wharf.torch.checksum import (block_sum, block_sums, first_mismatch, sum64,
                                  sum64_reference)

BLOCK = 1000   # not a power of two, not a multiple of 4: the sum64 padding path too


def data(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n,), dtype=torch.uint8, generator=g)


def test_block_sums_are_per_block_crc32_on_the_host():
    flat = data(3 * BLOCK + 17)
    check, sums = block_sums(flat, BLOCK)
    raw = bytes(flat.numpy())
    assert check == "crc32" and len(sums) == 4
    assert list(sums) == [zlib.crc32(raw[a:a + BLOCK]) for a in range(0, len(raw), BLOCK)]
    assert block_sums(torch.empty(0, dtype=torch.uint8), BLOCK) == ("crc32", ())
    assert block_sum("sum64", raw[:BLOCK]) == tuple(sum64_reference(raw[:BLOCK]))
    assert block_sum("sum64", flat[:BLOCK]) == tuple(sum64(flat[:BLOCK].clone()))
    with pytest.raises(ValueError, match="unknown checksum"):
        block_sum("md5", raw)


@pytest.mark.parametrize("check", ["crc32", "sum64"])
def test_a_flipped_bit_is_found_in_its_block_from_any_aligned_part(check):
    flat = data(5 * BLOCK + 3, seed=1)
    sums = tuple(block_sum(check, flat[a:a + BLOCK]) for a in range(0, flat.numel(), BLOCK))
    for start, end in ((0, flat.numel()), (BLOCK, 3 * BLOCK), (4 * BLOCK, flat.numel())):
        assert first_mismatch(check, sums, BLOCK, flat[start:end], start) is None
        assert first_mismatch(check, sums, BLOCK, bytes(flat[start:end].numpy()), start) is None
    bad = flat.clone()
    bad[2 * BLOCK + 500] ^= 0x10
    k, got, want = first_mismatch(check, sums, BLOCK, bad, 0)
    assert k == 2 and want == sums[2] and got != want
    assert first_mismatch(check, sums, BLOCK, bad[BLOCK:3 * BLOCK], BLOCK)[0] == 2
    assert first_mismatch(check, sums, BLOCK, memoryview(bytes(bad.numpy()))[2 * BLOCK:],
                          2 * BLOCK)[0] == 2
    # the parts that do not hold it still match
    assert first_mismatch(check, sums, BLOCK, bad[3 * BLOCK:], 3 * BLOCK) is None
    # bytes past the end the sums were taken of: the short last block no longer matches,
    # and a block with no sum at all never does
    longer = torch.cat([flat, data(BLOCK, seed=2)])
    assert first_mismatch(check, sums, BLOCK, longer, 0)[0] == 5
    assert first_mismatch(check, sums[:5], BLOCK, flat, 0)[:3:2] == (5, None)
    with pytest.raises(ValueError, match="not a multiple"):
        first_mismatch(check, sums, BLOCK, flat[10:], 10)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_gpu_block_sums_are_sum64_and_match_the_host():
    flat = data(3 * BLOCK + 17, seed=3)
    check, sums = block_sums(flat.cuda(), BLOCK)
    assert check == "sum64"
    assert first_mismatch("sum64", sums, BLOCK, flat, 0) is None   # checked on the host
    assert first_mismatch("crc32", block_sums(flat, BLOCK)[1], BLOCK, flat.cuda(), 0) is None
