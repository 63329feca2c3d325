# SPDX-License-Identifier: Apache-2.0
"""Internal tokens (src/server/cluster/itoken.h) against real storage servers, a real gateway and a
real PostgreSQL (tests/lib/cluster.py), with tokens signed by the harness's independent signer
as a gateway signs them:

- a put token is bound to the chunk's crc64nvme, to one storage server and to one use: replayed
  with other bytes it is refused and the chunk keeps its bytes; sent to another storage server
  it is refused and nothing is stored there; a fresh token for other bytes never replaces a
  committed chunk;
- a chunk whose file was replaced on disk by another, self-consistent one (what a replayed put
  used to leave), or whose bytes rotted on every replica, is served to nobody: a ranged GET
  over HTTP and over RDMA (ofi+tcp) fails, and no byte of it lands in the client's buffer.
"""
import os
import struct

import pytest
from botocore.exceptions import ClientError

import wharf
from cluster import Cluster, crc64nvme, http, new_chunk_id, sign_itoken, target_of
from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, unique_bucket

CHUNK = 256 * 1024
BLOCK = 1 << 20


@pytest.fixture(scope="module")
def cl():
    c = Cluster(storage=2, replicas=1, chunk_size=CHUNK, providers="tcp")
    c.start()
    yield c
    rcs = c.stop()
    c.cleanup()
    assert rcs == [0] * len(rcs), f"members exited with {rcs} on SIGTERM"


def put(st, c, body, tok=None):
    tok = tok or sign_itoken("put", c, 0, len(body), target=target_of(st), crc=crc64nvme(body))
    return http("PUT", f"{st.endpoint}/chunk/{c}", {"x-wharf-itoken": tok}, body), tok


def get(st, c, off, n, crc=None):
    tok = sign_itoken("get", c, off, n, target=target_of(st), crc=crc)
    return http("GET", f"{st.endpoint}/chunk/{c}", {"x-wharf-itoken": tok})


def test_put_token_is_single_use_bound_to_crc_and_server(cl):
    a, b = cl.storage
    good, evil = os.urandom(50_000), os.urandom(50_000)
    c = new_chunk_id()
    (st, _h, msg), tok = put(a, c, good)
    assert st == 200, msg
    # the captured token replayed with other bytes: refused, the chunk unchanged
    (st, _h, msg), _ = put(a, c, evil, tok)
    assert st == 403 and b"replay" in msg, (st, msg)
    # ...and with the same bytes too (single use)
    assert put(a, c, good, tok)[0][0] == 403
    # a fresh token naming good's crc but carrying other bytes: not stored
    tok2 = sign_itoken("put", c, 0, len(evil), target=target_of(a), crc=crc64nvme(good))
    st, _h, msg = put(a, c, evil, tok2)[0]
    assert st == 409 and b"not stored" in msg, (st, msg)
    # a fresh, valid token for other bytes never replaces the committed chunk
    st, _h, msg = put(a, c, evil)[0]
    assert st == 409 and b"not replaced" in msg, (st, msg)
    st, _h, got = get(a, c, 0, len(good), crc=crc64nvme(good))
    assert st == 200 and got == good
    # the same bytes again (a retried put) are a success
    assert put(a, c, good)[0][0] == 200
    # a put token for server a, sent to server b: refused, nothing stored on b
    c2 = new_chunk_id()
    tok3 = sign_itoken("put", c2, 0, len(evil), target=target_of(a), crc=crc64nvme(evil))
    st, _h, msg = put(b, c2, evil, tok3)[0]
    assert st == 403 and b"not this one" in msg, (st, msg)
    assert get(b, c2, 0, len(evil))[0] == 404
    # a put token without the chunk's crc is malformed
    raw = sign_itoken("put", c2, 0, len(evil), target=target_of(b))
    st, _h, msg = put(b, c2, evil, raw)[0]
    assert st == 403 and b"crc" in msg, (st, msg)
    assert cl.tmp_files() == 0


def chunk_file(data):
    """A self-consistent WHC2 chunk file of data (chunks.h): bytes, block table, footer."""
    blocks = [crc64nvme(data[i:i + BLOCK]) for i in range(0, len(data), BLOCK)]
    table = b"".join(struct.pack("<Q", x) for x in blocks)
    foot = b"WHC2" + struct.pack("<IQQQ", BLOCK, len(data), crc64nvme(data), crc64nvme(table))
    return data + table + foot


def one_chunk_object(cl, s3, tag):
    b = unique_bucket(tag)
    s3.create_bucket(Bucket=b)
    data = os.urandom(CHUNK)
    s3.put_object(Bucket=b, Key="o", Body=data)
    (cid, _off, _ln, reps), = [r for r in cl.chunk_map() if r[2] == CHUNK and
                               os.path.exists(cl.chunk_path(r[3][0], r[0]))
                               and open(cl.chunk_path(r[3][0], r[0]), "rb").read(CHUNK) == data]
    return b, data, cid, reps


def rdma_client(cl):
    g = cl.gateway
    return wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+tcp")


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
@pytest.mark.parametrize("damage", ["replaced", "rotted"])
def test_ranged_get_serves_no_byte_of_a_chunk_the_map_does_not_have(cl, damage):
    s3 = cl.boto3(attempts=1)
    b, data, cid, reps = one_chunk_object(cl, s3, "cltok")
    rc = rdma_client(cl)
    try:
        lo, n = 1000, 5000
        assert rc.get(b, "o", offset=lo, length=n, transport="rdma") == data[lo:lo + n]
        forged = bytes(x ^ 0x5A for x in data)
        for i in reps:
            path = cl.chunk_path(i, cid)
            if damage == "replaced":  # another, self-consistent chunk under the same id
                with open(path, "wb") as f:
                    f.write(chunk_file(forged))
            else:  # bit rot of the range on every replica
                cl.corrupt(i, cid, lo, n)
        buf = bytearray(n)
        with pytest.raises(wharf.WharfError):
            rc.get_into(b, "o", buf, offset=lo, length=n, transport="rdma")
        assert buf == bytearray(n), "a byte of the damaged chunk landed in the client's buffer"
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=b, Key="o", Range=f"bytes={lo}-{lo + n - 1}")["Body"].read()
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] >= 500, e.value.response
    finally:
        rc.close()


def test_rget_for_a_unix_socket_client_names_this_host_only(cl):
    """An itoken whose client came over the gateway's Unix socket (ADDR unix) with a network
    memory token: the storage server writes only to an endpoint on its own host, never to the
    address the token names elsewhere (403, nothing dialled)."""
    a = cl.storage[0]
    body = os.urandom(4096)
    c = new_chunk_id()
    assert put(a, c, body)[0][0] == 200
    ep = struct.pack("<H", 2) + struct.pack(">H", 4242) + bytes([192, 0, 2, 1]) + b"\0" * 8
    mem = f"10000:{len(body):x}:ofi1:tcp;ofi_rxm:{ep.hex()}:1"
    tok = sign_itoken("rget", c, 0, len(body), peer="unix", addr="unix", pid=os.getpid(),
                      uid=os.getuid(), mtok=mem, target=target_of(a), crc=crc64nvme(body))
    st, _h, msg = http("POST", f"{a.endpoint}/chunk/{c}", {"x-wharf-itoken": tok}, b"",
                       timeout=20)
    assert st == 403 and b"not the requester's address" in msg, (st, msg)
