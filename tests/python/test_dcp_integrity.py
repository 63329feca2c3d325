# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.dcp checks what it reads: the writer records a checksum per block of every item
(and each object's ETag) in the checkpoint's metadata, and the reader refuses bytes that no
longer match, naming the object, the item and the bytes. One bit of a saved .distcp object is
flipped (the object rewritten through the wharf client, as any S3 tool could) in a large
tensor read straight into its destination, in a small tensor read in a shared GET, and in a
pickled value; and in the rows of a tensor that 3 ranks read in unaligned ranges (a reshard),
where every rank must end with the error. Before the check these loaded silently with wrong
values; verify=False still reads them so. Needs torch.distributed.checkpoint (torch >= 2.2):
skipped, with the reason, on older torch."""
import os
import sys

import pytest
import torch

try:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.tensor import distribute_tensor  # noqa: F401 (DTensor is needed)
    from wharf.torch.dcp import CHECK_BLOCK, WharfStorageReader, WharfStorageWriter
    HAVE_DCP = True
    WHY = ""
except ImportError as e:
    HAVE_DCP = False
    WHY = f"torch {torch.__version__} has no usable torch.distributed.checkpoint ({e})"

import wharf
from conftest import make_client
from wharfd import unique_bucket

pytestmark = pytest.mark.skipif(not HAVE_DCP, reason=WHY)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if HAVE_DCP:
    import dcp_fault_worker as fw  # noqa: E402 (state() and check() of the saved checkpoint)


def save_one(url, c, seed=0):
    dcp.save(fw.state(1, seed), storage_writer=WharfStorageWriter(url, client=c,
                                                                  object_size=1 << 20))


def load_one(url, c, seed=0, verify=True):
    sd = fw.state(1, seed, zeros=True)
    dcp.load(sd, storage_reader=WharfStorageReader(url, client=c, verify=verify))
    return sd


def item(url, c, fqn):
    """The WharfStorageInfo of the item named fqn, from the checkpoint's .metadata."""
    md = WharfStorageReader(url, client=c).read_metadata()
    found = [info for idx, info in md.storage_data.items() if idx.fqn == fqn]
    assert len(found) == 1, (fqn, sorted(i.fqn for i in md.storage_data))
    return found[0]


def flip(c, bucket, key, pos):
    """Rewrites bucket/key with bit 3 of byte pos flipped."""
    data = bytearray(c.get(bucket, key))
    data[pos] ^= 0x08
    c.put(bucket, key, bytes(data))


@pytest.mark.parametrize("prov", ["ofi+shm", "http"])
@pytest.mark.parametrize("what", ["big", "small", "extra.name"])
def test_flipped_bit_refused(wharfd, prov, what):
    c = make_client(wharfd, prov)
    b = unique_bucket("dcpi")
    c.create_bucket(b)
    url = f"s3://{b}/ck"
    save_one(url, c)
    fw.check(load_one(url, c), 1, 0)  # whole, and every checksum matches
    info = item(url, c, what)
    assert info.check == "crc32" and info.sums and info.etag, info
    assert len(info.sums) == -(-info.length // CHECK_BLOCK)
    # in "big" (16 MiB, read straight into its tensor): a byte of its third block
    pos = info.offset + (2 * CHECK_BLOCK + 12345 if what == "big" else info.length // 2)
    flip(c, b, f"ck/{info.key}", pos)
    with pytest.raises(BaseException) as ei:  # DCP's CheckpointException is one
        load_one(url, c)
    e = fw.wharf_error(ei.value)
    assert isinstance(e, wharf.ChecksumError), repr(ei.value)
    msg = str(e)
    assert f"{url}/{info.key}" in msg and what in msg, msg
    assert "crc32" in msg and "replaced after the save" in msg, msg
    if what == "big":  # the block that holds the flipped byte
        assert f"object bytes [{info.offset + 2 * CHECK_BLOCK}, " in msg, msg
    if what != "extra.name":  # unchecked, the changed bytes load silently: what the check stops
        got = load_one(url, c, verify=False)
        assert not torch.equal(got[what], fw.full(0)[what])
    c.close()


def test_old_metadata_without_checksums_still_loads(wharfd):
    """A checkpoint whose metadata carries no checksums (written before they were recorded)
    loads, unchecked."""
    import dataclasses
    import pickle
    c = make_client(wharfd, "http")
    b = unique_bucket("dcpo")
    c.create_bucket(b)
    url = f"s3://{b}/ck"
    save_one(url, c, seed=2)
    md = WharfStorageReader(url, client=c).read_metadata()
    md.storage_data = {k: dataclasses.replace(v, check=None, block=None, sums=None, etag=None)
                       for k, v in md.storage_data.items()}
    c.put(b, "ck/.metadata", pickle.dumps(md))
    fw.check(load_one(url, c, seed=2), 1, 2)
    c.close()


def test_ranged_reads_by_3_ranks_checked(wharfd):
    """3 ranks load a tensor saved by one process, each its rows: ranges that start and end
    inside checksum blocks. Unchanged, every rank loads; with one bit flipped in the second
    block (rows of ranks 0 and 1), every rank ends with the ChecksumError."""
    from test_dcp import env_for, run_all
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("dcpr")
    c.create_bucket(b)
    url = f"s3://{b}/ck"
    save_one(url, c, seed=1)
    env = env_for(wharfd, "ofi+shm", seed=1)
    out = run_all("load", url, 3, env)
    assert all(rc == 0 and "OK" in t for rc, t in out), out
    info = item(url, c, "big")
    flip(c, b, f"ck/{info.key}", info.offset + CHECK_BLOCK + 777)
    out = run_all("load", url, 3, env)
    for r, (rc, text) in enumerate(out):
        assert rc == 3, f"rank {r}: rc {rc}\n{text[-3000:]}"
        line = [ln for ln in text.splitlines() if ln.startswith(f"ERR {r} ")]
        assert line and "| ChecksumError |" in line[0] and info.key in line[0], text[-3000:]
    c.close()
