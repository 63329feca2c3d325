# SPDX-License-Identifier: Apache-2.0
"""A cluster on loopback (tests/lib/cluster.py: a private PostgreSQL, one gateway, storage
servers) through real S3 clients over HTTP: boto3 and aws. Checks the layout on disk (every
chunk on --replicas distinct servers, spread over all of them), ranged reads across chunk
boundaries, multipart, copy, overwrite and delete (their chunks garbage-collected, shared
chunks kept), the storage servers' internal-token checks, and that a PUT the cluster cannot
place fails cleanly and leaves nothing behind."""
import hashlib
import os
import subprocess
import time

import pytest

from cluster import Cluster, crc64nvme, http, new_chunk_id, sign_itoken, target_of
from wharfd import multipart_etag, rclone_remote_env, unique_bucket, wait_until

CHUNK = 256 * 1024
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def cl():
    c = Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="none")
    c.start()
    yield c
    rcs = c.stop()
    c.cleanup()
    assert rcs == [0] * len(rcs), f"members exited with {rcs} on SIGTERM"


@pytest.fixture()
def s3(cl):
    return cl.boto3()


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("cl")
    s3.create_bucket(Bucket=b)
    return b


def new_chunks(cl, before):
    after = cl.chunk_files()
    return {i: after[i] - before.get(i, set()) for i in after}


def test_members_registered_and_healthy(cl):
    assert cl.nodes_up() == 3
    for m in cl.storage + cl.gateways:
        st, _h, body = http("GET", m.endpoint + "/health")
        assert st == 200, (m.endpoint, st, body)
    assert cl.gateway.metric_sum("wharf_storage_nodes") == 3


def test_put_get_layout_and_ranges(cl, s3, bucket):
    data = os.urandom(3 * MIB + 17)
    before = cl.chunk_files()
    r = s3.put_object(Bucket=bucket, Key="obj", Body=data)
    assert r["ETag"].strip('"') == hashlib.md5(data).hexdigest()
    got = s3.get_object(Bucket=bucket, Key="obj")["Body"].read()
    assert got == data
    nchunks = (len(data) + CHUNK - 1) // CHUNK
    new = new_chunks(cl, before)
    copies = {}
    for i, ids in new.items():
        for c in ids:
            copies.setdefault(c, set()).add(i)
    assert len(copies) == nchunks, (len(copies), nchunks)
    assert all(len(v) == 2 for v in copies.values()), copies  # two distinct servers each
    assert all(len(ids) > 0 for ids in new.values()), "every server holds some chunks"
    # ranges inside a chunk, across a boundary, the last byte, to the end
    for a, b in [(0, 0), (5, 1000), (CHUNK - 10, CHUNK + 10), (len(data) - 1, len(data) - 1),
                 (2 * CHUNK, len(data) - 1), (CHUNK, 3 * CHUNK - 1)]:
        part = s3.get_object(Bucket=bucket, Key="obj", Range=f"bytes={a}-{b}")["Body"].read()
        assert part == data[a:b + 1], (a, b)
    head = s3.head_object(Bucket=bucket, Key="obj")
    assert head["ContentLength"] == len(data)


def test_empty_and_small(cl, s3, bucket):
    s3.put_object(Bucket=bucket, Key="empty", Body=b"")
    assert s3.get_object(Bucket=bucket, Key="empty")["Body"].read() == b""
    s3.put_object(Bucket=bucket, Key="tiny", Body=b"x")
    assert s3.get_object(Bucket=bucket, Key="tiny")["Body"].read() == b"x"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["empty", "tiny"]


def test_awscli_multipart(cl, bucket, tmp_path):
    cfg = tmp_path / "config"
    cfg.write_text("[default]\nregion = us-east-1\ns3 =\n  multipart_threshold = 8MB\n"
                   "  multipart_chunksize = 8MB\n")
    env = cl.client_env()
    env.update({"AWS_CONFIG_FILE": str(cfg), "AWS_PAGER": "",
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")})
    data = os.urandom(20 * MIB + 5)
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(data)
    aws = ["/usr/bin/aws", "--endpoint-url", cl.gateway.endpoint, "--no-cli-pager"]
    subprocess.run(aws + ["s3", "cp", str(src), f"s3://{bucket}/big"], env=env, check=True,
                   capture_output=True, timeout=180)
    subprocess.run(aws + ["s3", "cp", f"s3://{bucket}/big", str(dst)], env=env, check=True,
                   capture_output=True, timeout=180)
    assert dst.read_bytes() == data
    out = subprocess.run(aws + ["s3api", "head-object", "--bucket", bucket, "--key", "big"],
                         env=env, check=True, capture_output=True, timeout=60).stdout.decode()
    assert multipart_etag(data, 8 * MIB) in out, out


def test_overwrite_and_delete_collect_chunks(cl, s3, bucket):
    before = cl.chunk_files()
    s3.put_object(Bucket=bucket, Key="k", Body=os.urandom(CHUNK * 2 + 1))
    first = new_chunks(cl, before)
    first_ids = set().union(*first.values())
    assert len(first_ids) == 3
    s3.put_object(Bucket=bucket, Key="k", Body=b"second version")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"second version"
    gone = wait_until(lambda: not (set().union(*cl.chunk_files().values()) & first_ids),
                      timeout=20)
    assert gone, "the overwritten version's chunks were not collected"
    mid = cl.chunk_files()
    s3.delete_object(Bucket=bucket, Key="k")
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket=bucket, Key="k")
    assert wait_until(lambda: cl.chunk_files() != mid and
                      sum(len(v) for v in cl.chunk_files().values()) <
                      sum(len(v) for v in mid.values()), timeout=20)
    assert cl.gateway.metric_sum("wharf_cluster_gc_deleted_total") > 0


def test_copy_shares_chunks_until_both_are_gone(cl, s3, bucket):
    data = os.urandom(CHUNK * 3)
    s3.put_object(Bucket=bucket, Key="src", Body=data)
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    s3.delete_object(Bucket=bucket, Key="src")
    time.sleep(3)  # a GC pass or more
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == data


def test_versions_keep_their_chunks(cl, s3, bucket):
    """Garbage collection never takes the chunks of a non-current version; deleting that
    version lets them go."""
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    before = cl.chunk_files()
    data = os.urandom(CHUNK * 2 + 5)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=data)["VersionId"]
    ids = set().union(*new_chunks(cl, before).values())
    assert len(ids) == 3
    s3.put_object(Bucket=bucket, Key="k", Body=b"newer")
    s3.delete_object(Bucket=bucket, Key="k")  # a delete marker on top
    time.sleep(3)  # a GC pass or more
    assert ids <= set().union(*cl.chunk_files().values())
    assert s3.get_object(Bucket=bucket, Key="k", VersionId=v1)["Body"].read() == data
    r = s3.get_object(Bucket=bucket, Key="k", VersionId=v1, Range="bytes=%d-%d" % (CHUNK, CHUNK + 9))
    assert r["Body"].read() == data[CHUNK:CHUNK + 10]
    s3.delete_object(Bucket=bucket, Key="k", VersionId=v1)
    assert wait_until(lambda: not (set().union(*cl.chunk_files().values()) & ids), timeout=20)


def test_storage_refuses_without_a_valid_token(cl):
    st0 = cl.storage[0]
    c = new_chunk_id()
    url = f"{st0.endpoint}/chunk/{c}"
    body = b"z" * 100
    to = target_of(st0)
    ok = sign_itoken("put", c, 0, len(body), target=to, crc=crc64nvme(body))
    assert http("PUT", url, {"x-wharf-itoken": ok}, body)[0] == 200
    rejects0 = st0.metric_sum("wharf_storage_token_rejects_total")
    cases = {
        "none": {},
        "bad-mac": {"x-wharf-itoken": sign_itoken("get", c, 0, 100, secret="x" * 40,
                                                  target=to)},
        "expired": {"x-wharf-itoken": sign_itoken("get", c, 0, 100, target=to,
                                                  expires=int(time.time()) - 5)},
        "op": {"x-wharf-itoken": sign_itoken("del", c, 0, 0, target=to)},
        "other-chunk": {"x-wharf-itoken": sign_itoken("get", new_chunk_id(), 0, 100,
                                                      target=to)},
        "garbage": {"x-wharf-itoken": "wit2|get|zz"},
    }
    for name, hdrs in cases.items():
        status, _h, msg = http("GET", url, hdrs)
        assert status == 403, (name, status, msg)
        assert msg.strip(), name
    # a widened range keeps the old MAC: refused
    t = sign_itoken("get", c, 0, 10, target=to)
    forged = t.replace("|0|a|", "|0|64|", 1)
    assert forged != t and http("GET", url, {"x-wharf-itoken": forged})[0] == 403
    assert st0.metric_sum("wharf_storage_token_rejects_total") == rejects0 + len(cases) + 1
    st, _h, got = http("GET", url, {"x-wharf-itoken": sign_itoken("get", c, 10, 20, target=to)})
    assert st == 200 and got == body[10:30]
    assert http("DELETE", url,
                {"x-wharf-itoken": sign_itoken("del", c, 0, 0, target=to)})[0] == 200


def test_put_that_cannot_be_placed_fails_cleanly(tmp_path):
    """Two storage servers, replicas 2, one killed: a PUT gets 503, no
    object appears, and no chunk or temp file of it remains on the survivor."""
    with Cluster(storage=2, replicas=2, chunk_size=CHUNK, providers="none") as c:
        s3 = c.boto3()
        b = unique_bucket("clfail")
        s3.create_bucket(Bucket=b)
        s3.put_object(Bucket=b, Key="before", Body=b"ok")
        c.storage[1].kill()
        before = c.chunk_files()
        from botocore.exceptions import ClientError
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=b, Key="lost", Body=os.urandom(CHUNK * 2))
        err = e.value.response
        assert err["ResponseMetadata"]["HTTPStatusCode"] == 503, err
        assert err["Error"]["Code"] == "ServiceUnavailable", err
        with pytest.raises(s3.exceptions.NoSuchKey):
            s3.get_object(Bucket=b, Key="lost")
        assert c.chunk_files()[0] == before[0]
        assert c.tmp_files() == 0
        # and the survivor still serves what it has (replicas 2: it holds everything)
        assert s3.get_object(Bucket=b, Key="before")["Body"].read() == b"ok"


def test_s3cmd_and_rclone(cl, tmp_path):
    """The other two clients of the suite: s3cmd (multipart at 5 MiB) and rclone copy/check
    through the gateway."""
    from wharfd import ACCESS_KEY, SECRET_KEY
    env = cl.client_env()
    env["HOME"] = str(tmp_path)
    host = f"127.0.0.1:{cl.gateway.port}"
    cfg = tmp_path / "s3cfg"
    cfg.write_text(f"[default]\naccess_key = {ACCESS_KEY}\nsecret_key = {SECRET_KEY}\n"
                   f"host_base = {host}\nhost_bucket = {host}\nuse_https = False\n"
                   "signature_v2 = False\nbucket_location = us-east-1\n"
                   "check_ssl_certificate = False\nprogress_meter = False\n"
                   "multipart_chunk_size_mb = 5\n")
    b = unique_bucket("cls3cmd")
    s3c = ["/usr/bin/s3cmd", "-c", str(cfg)]
    data = os.urandom(12 * MIB + 9)
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(data)
    for args in (["mb", f"s3://{b}"], ["put", str(src), f"s3://{b}/obj"],
                 ["get", f"s3://{b}/obj", str(dst)]):
        r = subprocess.run(s3c + args, env=env, capture_output=True, timeout=180)
        assert r.returncode == 0, (args, r.stdout[-500:], r.stderr[-1500:])
    assert dst.read_bytes() == data

    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "a.txt").write_bytes(b"a" * 1000)
    (tree / "d" / "b.bin").write_bytes(os.urandom(3 * CHUNK + 5))
    env.pop("AWS_CA_BUNDLE", None)
    env.update(rclone_remote_env(cl.gateway.endpoint, tmp_path),
               XDG_CACHE_HOME=str(tmp_path / "c"))
    for args in (["copy", str(tree), f"w:{b}/tree"], ["check", str(tree), f"w:{b}/tree"]):
        r = subprocess.run(["/usr/bin/rclone"] + args, env=env, capture_output=True,
                           timeout=180)
        assert r.returncode == 0, (args, r.stdout[-500:], r.stderr[-1500:])


def test_stripe_requests_refused_unless_their_body_is_the_one_signed(cl):
    """rdec and renc (a degraded RDMA read rebuilt, an RDMA PUT encoded at a storage server)
    carry the stripe's description as their body, authenticated through its SHA-256 in the
    signed token: a body that is not the one signed is 403 naming the hashes, a signed body
    that does not parse is 400 naming the fault, a token without the hash is 400; nothing is
    read or written, and the server stays up."""
    import hashlib as _h
    st0 = cl.storage[0]
    c = new_chunk_id()
    url = f"{st0.endpoint}/chunk/{c}"
    mem = "1:2:ofi1:tcp:0a:1f"
    good = (f"rdec1 2 1 10\n0 {c} 0000000000000000 0 -\n"
            f"1 {new_chunk_id()} 0000000000000000 0 -\n"
            f"2 {new_chunk_id()} 0000000000000000 0 -\n").encode()
    for op in ("rdec", "renc"):
        signed = _h.sha256(good).hexdigest()
        tok = sign_itoken(op, c, 0, 10, mtok=f"{signed}@{mem}", target=target_of(st0))
        status, _hd, msg = http("POST", url, {"x-wharf-itoken": tok}, good.replace(b"2 1", b"2 9"))
        assert status == 403 and b"SHA-256" in msg and signed.encode() in msg, (op, status, msg)
        bad = b"rdec1 2 1\n"
        tok = sign_itoken(op, c, 0, 10, mtok=f"{_h.sha256(bad).hexdigest()}@{mem}",
                          target=target_of(st0))
        status, _hd, msg = http("POST", url, {"x-wharf-itoken": tok}, bad)
        assert status == 400 and msg.strip(), (op, status, msg)
        status, _hd, msg = http("POST", url, {"x-wharf-itoken": sign_itoken(
            op, c, 0, 10, target=target_of(st0))}, good)
        assert status in (400, 403) and msg.strip(), (op, status, msg)
    assert st0.alive()
    assert http("GET", f"{st0.endpoint}/metrics")[0] == 200
