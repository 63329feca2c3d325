# SPDX-License-Identifier: Apache-2.0
"""Erasure coding in a cluster (wharfd gateway --ec K+M; a bucket's tag wharf-ec overrides).

4+2 over 6 storage servers: every chunk is 4 data + 2 parity shards, each on its own server,
recorded in the chunk map (k, m, shard index). PUT/GET/Range byte for byte (sizes that are
not multiples of K, 0 and 1 byte, several chunks); M servers killed (-9): every object still
reads byte for byte (decoded); M+1 down: 503, never wrong bytes; a shard corrupted on disk:
right bytes, and the shard rebuilt; a dead server's shards rebuilt on servers holding no
shard of their stripe (every stripe back to K+M); the per-bucket override both ways; RDMA:
a healthy GET through the data shards' servers; a degraded one (whole and ranged; M servers
down; a surviving shard damaged; a shard whose write fails mid-GET) rebuilt at a storage
server of the stripe and written into the client's memory from there, the gateway moving
none of the bytes; an RDMA PUT encoded and spread by a storage server, 503 with a server
down."""
import os
import subprocess

import pytest

import wharf
from cluster import Cluster
from wharfd import (ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, build_dir, unique_bucket,
                    wait_until)

CHUNK = 256 * 1024
K, M = 4, 2
SIZES = [0, 1, 3, 4, 5, 1000, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7, 5 * CHUNK + 4095]


def _cli(cl, *args, check=True):
    """The C CLI against the cluster's gateway (it runs under ASan too)."""
    p = subprocess.run([os.path.join(build_dir(), "wharf"), "--quiet", *args],
                       env=cl.client_env(), capture_output=True, text=True, timeout=120)
    assert not check or p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def ec_rows(cl):
    """{data chunk offset key: [(chunk_id, storage index, k, m, shard)]} of every EC row."""
    rows = cl.pg.sql("SELECT c.data_id, c.off, c.chunk_id, c.ec_k, c.ec_m, c.ec_index,"
                     " (SELECT n.addr FROM nodes n WHERE n.id = c.replicas[1]),"
                     " array_length(c.replicas, 1)"
                     " FROM chunks c WHERE c.ec_k > 0 ORDER BY c.data_id, c.idx")
    index = {f"{s.host}:{s.port}": i for i, s in enumerate(cl.storage)}
    out = {}
    for line in rows.splitlines():
        if not line.strip():
            continue
        did, off, cid, k, m, ix, addr, nrep = line.split("|")
        assert int(nrep) == 1, line
        out.setdefault((did, int(off)), []).append(
            (cid, index.get(addr), int(k), int(m), int(ix)))
    return out


def check_layout(cl, live=None):
    """Every stripe has K+M shards, indexes 0..K+M-1, on K+M distinct servers (live ones)."""
    stripes = ec_rows(cl)
    files = cl.chunk_files()
    for key, shards in stripes.items():
        assert [s[4] for s in shards] == list(range(K + M)), (key, shards)
        assert all(s[2] == K and s[3] == M for s in shards), shards
        servers = [s[1] for s in shards]
        assert None not in servers and len(set(servers)) == K + M, (key, shards)
        for cid, i, *_ in shards:
            assert live is None or i in live, (key, shards, live)
            assert cid in files[i], (cid, i)
    return stripes


@pytest.fixture(scope="module")
def data():
    return {f"s{n}": os.urandom(n) for n in SIZES}


def put_all(s3, b, data):
    for k, v in data.items():
        s3.put_object(Bucket=b, Key=k, Body=v)


def read_all(s3, b, data):
    for k, v in data.items():
        got = s3.get_object(Bucket=b, Key=k)["Body"].read()
        assert got == v, (k, len(got), len(v))


def test_ec_round_trip_ranges_layout_and_rdma(data, tmp_path):
    tmp = str(tmp_path)
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="tcp",
                 gateway_args=["--ec", f"{K}+{M}"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clec")
        s3.create_bucket(Bucket=b)
        put_all(s3, b, data)
        read_all(s3, b, data)
        stripes = check_layout(cl)
        want = sum((n + CHUNK - 1) // CHUNK for n in SIZES)
        assert len(stripes) == want, (len(stripes), want)
        g = cl.gateway
        assert abs(g.metric_sum("wharf_cluster_storage_overhead") - (K + M) / K) < 1e-3
        assert g.metric_sum("wharf_cluster_ec_stripes_written_total") == want
        assert g.metric_sum("wharf_cluster_ec_degraded_reads_total") == 0
        # stored bytes: (K+M) shards of ceil(len/K) per stripe
        big = data["s%d" % (5 * CHUNK + 4095)]
        for off, n in [(0, 1), (7, 100), (CHUNK - 5, 10), (CHUNK // 3, 2 * CHUNK + 11),
                       (len(big) - 9, 9), (CHUNK * 5, 4095)]:
            r = s3.get_object(Bucket=b, Key="s%d" % len(big), Range=f"bytes={off}-{off + n - 1}")
            assert r["Body"].read() == big[off:off + n], (off, n)
        # RDMA GET (healthy), by the C CLI (so this runs under ASan too): the data shards'
        # servers write into the client's memory, the gateway moves none of the bytes
        key = "s%d" % len(big)
        r0 = cl.storage_sum("wharf_rdma_read_bytes_total")
        out = os.path.join(tmp, "big")
        _cli(cl, "--provider", "ofi+tcp", "cp", "--transport", "rdma", f"s3://{b}/{key}", out)
        with open(out, "rb") as f:
            assert f.read() == big
        assert cl.storage_sum("wharf_rdma_read_bytes_total") - r0 == len(big)
        assert g.metric_sum("wharf_rdma_read_bytes_total") == 0
        # RDMA PUT into an EC bucket: each stripe pulled from the client's memory by one
        # storage server, which encodes it, keeps its shard and sends the others on; the
        # gateway moves none of the bytes
        src = os.path.join(tmp, "src")
        body = os.urandom(2 * CHUNK + 1000)
        with open(src, "wb") as f:
            f.write(body)
        w0 = cl.storage_sum("wharf_rdma_write_bytes_total")
        e0 = cl.storage_sum("wharf_ec_rdma_encoded_stripes_total")
        _cli(cl, "--provider", "ofi+tcp", "cp", "--transport", "rdma", src, f"s3://{b}/rdma-put")
        assert cl.storage_sum("wharf_rdma_write_bytes_total") - w0 == len(body)
        assert g.metric_sum("wharf_rdma_write_bytes_total") == 0
        assert cl.storage_sum("wharf_ec_rdma_encoded_stripes_total") - e0 == 3
        assert s3.get_object(Bucket=b, Key="rdma-put")["Body"].read() == body
        after = check_layout(cl)  # its 3 stripes: K+M shards on K+M servers, on disk
        assert len(after) == len(stripes) + 3
        assert g.metric_sum("wharf_cluster_ec_stripes_written_total") == want + 3
        # a degraded RDMA GET: every stripe of the object with a data shard on the dead
        # server is rebuilt at one storage server of the stripe, which writes it into the
        # client's memory; the gateway moves none of the bytes
        shard0 = {}
        for k, sh in stripes.items():
            shard0.setdefault(sh[0][1], []).append(k)
        dead = max(shard0, key=lambda i: len(shard0[i]))
        big_id = [d for d, _ in stripes if sum(1 for e in stripes if e[0] == d) == 6]
        assert len(set(big_id)) == 1, big_id
        want_dec = sum(1 for (d, _), sh in stripes.items()
                       if d == big_id[0] and dead in [x[1] for x in sh[:K]])
        assert want_dec > 0
        cl.storage[dead].kill()
        cl.wait_nodes_up(5)
        os.unlink(out)
        r0 = cl.storage_sum("wharf_rdma_read_bytes_total")
        dec0 = cl.storage_sum("wharf_ec_rdma_decoded_reads_total")
        deg0 = g.metric_sum("wharf_cluster_ec_degraded_reads_total")
        _cli(cl, "--provider", "ofi+tcp", "cp", "--transport", "rdma", f"s3://{b}/{key}", out)
        with open(out, "rb") as f:
            assert f.read() == big
        assert cl.storage_sum("wharf_rdma_read_bytes_total") - r0 == len(big)
        assert g.metric_sum("wharf_rdma_read_bytes_total") == 0
        assert cl.storage_sum("wharf_ec_rdma_decoded_reads_total") - dec0 == want_dec
        assert g.metric_sum("wharf_cluster_ec_degraded_reads_total") - deg0 == want_dec
        read_all(s3, b, data)  # HTTP decodes too
        assert s3.get_object(Bucket=b, Key="rdma-put")["Body"].read() == body
        # an RDMA PUT with fewer than K+M servers up: 503, nothing stored
        p = _cli(cl, "--provider", "ofi+tcp", "cp", "--transport", "rdma", src,
                 f"s3://{b}/rdma-put2", check=False)
        assert p.returncode != 0 and "503" in p.stderr, p.stderr
        with pytest.raises(s3.exceptions.NoSuchKey):
            s3.get_object(Bucket=b, Key="rdma-put2")
        # more than M down: 503, never a file of wrong bytes
        others = [i for i in range(6) if i != dead]
        for i in others[:M]:
            cl.storage[i].kill()
        cl.wait_nodes_up(3)
        os.unlink(out)
        p = _cli(cl, "--provider", "ofi+tcp", "cp", "--transport", "rdma", f"s3://{b}/{key}",
                 out, check=False)
        assert p.returncode != 0 and "503" in p.stderr, p.stderr
        assert not os.path.exists(out) or open(out, "rb").read() != big


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_ec_rdma_ranged_get():
    """Ranged RDMA GETs of an EC object (libwharf through Python: the CLI reads whole
    objects): each range is written by the servers of the data shards it covers."""
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="tcp",
                 gateway_args=["--ec", f"{K}+{M}"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clecrr")
        s3.create_bucket(Bucket=b)
        big = os.urandom(5 * CHUNK + 4095)
        s3.put_object(Bucket=b, Key="big", Body=big)
        g = cl.gateway
        c = wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+tcp")
        try:
            r0 = cl.storage_sum("wharf_rdma_read_bytes_total")
            n = 0
            for off, ln in [(3, 5), (CHUNK - 100, 300), (CHUNK // 4 - 1, 2),
                            (CHUNK // 3, 2 * CHUNK + 11), (len(big) - 9, 9)]:
                assert c.get(b, "big", offset=off, length=ln, transport="rdma") == \
                    big[off:off + ln], (off, ln)
                n += ln
            assert cl.storage_sum("wharf_rdma_read_bytes_total") - r0 == n
            assert g.metric_sum("wharf_rdma_read_bytes_total") == 0
            assert cl.storage_sum("wharf_ec_rdma_reads_total") == 0

            def rdma_reads(ranges):
                """Each range byte for byte over RDMA; the storage servers wrote exactly the
                bytes asked, the gateway none."""
                r0 = cl.storage_sum("wharf_rdma_read_bytes_total")
                n = 0
                for off, ln in ranges:
                    got = c.get(b, "big", offset=off, length=ln, transport="rdma")
                    assert got == big[off:off + ln], (off, ln)
                    n += ln
                assert cl.storage_sum("wharf_rdma_read_bytes_total") - r0 == n
                assert g.metric_sum("wharf_rdma_read_bytes_total") == 0

            stripes = [sh for _k, sh in sorted(ec_rows(cl).items(), key=lambda e: e[0][1])]
            slen = CHUNK // K
            # data shard 1 of the first stripe on a server that is down
            x = stripes[0][1][1]
            cl.storage[x].kill()
            cl.wait_nodes_up(5)
            dec0 = cl.storage_sum("wharf_ec_rdma_decoded_reads_total")
            deg0 = g.metric_sum("wharf_cluster_ec_degraded_reads_total")
            rdma_reads([(slen + 10, 100),         # inside the missing shard
                        (slen - 50, 100),         # the missing one and a present one
                        (CHUNK - 100, 300),       # two chunks
                        (CHUNK // 3, 2 * CHUNK + 11),
                        (0, len(big))])
            assert cl.storage_sum("wharf_ec_rdma_decoded_reads_total") - dec0 >= 3
            assert g.metric_sum("wharf_cluster_ec_degraded_reads_total") - deg0 >= 3
            # a surviving shard damaged on disk: the server rebuilding the stripe finds its crc
            # wrong, counts it missing and reads another; and the healthy read of that shard's
            # own slice, which fails at its server, is rebuilt the same way
            y = stripes[0][0][1]  # data shard 0 of the first stripe
            cl.corrupt(y, stripes[0][0][0], 0, 4096)
            bad0 = cl.storage_sum("wharf_storage_checksum_failures_total")
            deg0 = g.metric_sum("wharf_cluster_ec_degraded_reads_total")
            rdma_reads([(3, 5)])  # shard 0's own slice: its write fails, then is rebuilt
            assert "is rebuilt at another storage server" in g.log_tail(1 << 20)
            assert g.metric_sum("wharf_cluster_ec_degraded_reads_total") == deg0 + 1
            rdma_reads([(slen + 10, 100)])  # the rebuild reads shard 0, finds it bad
            assert cl.storage_sum("wharf_storage_checksum_failures_total") > bad0
            # the damaged copy is rewritten from the others before a second server goes
            assert wait_until(lambda: g.metric_sum("wharf_cluster_damage_repaired_total") >= 1,
                              timeout=30, interval=0.5), g.log_tail(3000)
            # M servers down: every stripe missing a data shard is rebuilt from the K left,
            # K-1 of them fetched from other servers
            z = next(i for i in range(6) if i not in (x, y))
            cl.storage[z].kill()
            cl.wait_nodes_up(4)
            want = sum(1 for sh in stripes if {x, z} & {e[1] for e in sh[:K]})
            f0 = cl.storage_sum("wharf_ec_rdma_shards_fetched_total")
            dec0 = cl.storage_sum("wharf_ec_rdma_decoded_reads_total")
            rdma_reads([(0, len(big))])
            assert cl.storage_sum("wharf_ec_rdma_decoded_reads_total") - dec0 == want
            assert cl.storage_sum("wharf_ec_rdma_shards_fetched_total") - f0 == want * (K - 1)
            rdma_reads([(slen + 10, 100), (CHUNK - 100, 300), (len(big) - 9, 9)])
        finally:
            c.close()


def test_ec_multipart_and_copy_share_stripes():
    """A multipart upload into an EC bucket: its parts are striped, the completion takes
    their stripes by reference (offsets shifted, shards unchanged); a copy too. Both read back
    byte for byte, also with M servers down."""
    import boto3.s3.transfer as tr
    import io
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--ec", f"{K}+{M}"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clecmp")
        s3.create_bucket(Bucket=b)
        v = os.urandom(11 * 1024 * 1024 + 3)
        cfg = tr.TransferConfig(multipart_threshold=5 * 1024 * 1024,
                                multipart_chunksize=5 * 1024 * 1024)
        s3.upload_fileobj(io.BytesIO(v), b, "mp", Config=cfg)
        assert s3.head_object(Bucket=b, Key="mp")["ETag"].endswith('-3"')
        s3.copy_object(Bucket=b, Key="cp", CopySource={"Bucket": b, "Key": "mp"})
        check_layout(cl)
        for key in ("mp", "cp"):
            assert s3.get_object(Bucket=b, Key=key)["Body"].read() == v
            r = s3.get_object(Bucket=b, Key=key, Range="bytes=5242870-5242900")
            assert r["Body"].read() == v[5242870:5242901]
        cl.storage[1].kill()
        cl.storage[4].kill()
        for key in ("mp", "cp"):
            assert s3.get_object(Bucket=b, Key=key)["Body"].read() == v


def test_ec_m_down_reads_m_plus_one_refuses(data):
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--ec", f"{K}+{M}"]) as cl:
        s3 = cl.boto3(attempts=1)
        b = unique_bucket("clecm")
        s3.create_bucket(Bucket=b)
        put_all(s3, b, data)
        cl.storage[0].kill()
        cl.storage[3].kill()
        # before and after the gateway sees them down
        read_all(s3, b, data)
        cl.wait_nodes_up(4)
        read_all(s3, b, data)
        # a PUT now needs 6 servers: 503 naming why
        from botocore.exceptions import ClientError
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=b, Key="new", Body=b"x" * 10)
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert "erasure coding 4+2 needs 6 storage servers up for a stripe's shards, 4 are" \
            in str(e.value), str(e.value)
        cl.storage[5].kill()
        cl.wait_nodes_up(3)
        for k, v in data.items():
            if not v:
                continue
            with pytest.raises(ClientError) as e:
                got = s3.get_object(Bucket=b, Key=k)["Body"].read()
                assert got == v  # never wrong bytes, should it answer
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503, k
            assert "shards" in str(e.value), str(e.value)


def test_ec_bucket_tag_rules_rdma_put_and_upload_part_copy(tmp_path):
    """The bucket's tag decides the layout of an RDMA PUT and of an UploadPartCopy as it does
    an HTTP PUT's (the RDMA PUT and the part copy did not ask it: a bucket tagged 3+2 on a
    replica gateway got replicated chunks, and one tagged replicas on an EC gateway a 501).
    The RDMA PUT by the C CLI, so this runs under ASan too."""
    v = os.urandom(2 * CHUNK + 5)
    src = os.path.join(str(tmp_path), "src")
    with open(src, "wb") as f:
        f.write(v)
    out = os.path.join(str(tmp_path), "out")
    for gw_args, tag, want_k in (([], "3+2", 3), (["--ec", "4+2"], "replicas", 0)):
        with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="tcp",
                     gateway_args=gw_args) as cl:
            s3 = cl.boto3()
            b = unique_bucket("clecrt")
            s3.create_bucket(Bucket=b)
            s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "wharf-ec",
                                                                 "Value": tag}]})
            _cli(cl, "--provider", "ofi+tcp", "cp", "--transport", "rdma", src, f"s3://{b}/o")
            stripes = ec_rows(cl)
            if want_k:
                assert len(stripes) == 3 and all(len(sh) == 5 and sh[0][2] == want_k
                                                 for sh in stripes.values()), stripes
            else:
                assert stripes == {}
                assert [len(c[3]) for c in cl.chunk_map()] == [2, 2, 2]
            if os.path.exists(out):
                os.unlink(out)
            _cli(cl, "--provider", "ofi+tcp", "cp", "--transport", "rdma", f"s3://{b}/o", out)
            with open(out, "rb") as f:
                assert f.read() == v
            # UploadPartCopy of a range that cuts chunks: its new bytes take the tag's layout
            before = set(ec_rows(cl))
            up = s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
            e = s3.upload_part_copy(Bucket=b, Key="mp", UploadId=up, PartNumber=1,
                                    CopySource={"Bucket": b, "Key": "o"},
                                    CopySourceRange=f"bytes=7-{CHUNK + 99}")
            s3.complete_multipart_upload(
                Bucket=b, Key="mp", UploadId=up,
                MultipartUpload={"Parts": [{"PartNumber": 1,
                                            "ETag": e["CopyPartResult"]["ETag"]}]})
            assert s3.get_object(Bucket=b, Key="mp")["Body"].read() == v[7:CHUNK + 100]
            new = set(ec_rows(cl)) - before
            if want_k:
                assert new and all(ec_rows(cl)[x][0][2] == want_k for x in new), new
            else:
                assert ec_rows(cl) == {}


def test_ec_bucket_override_both_ways():
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="none") as cl:
        s3 = cl.boto3()
        rep, ec, bad = unique_bucket("clrep"), unique_bucket("clov"), unique_bucket("clbad")
        for x in (rep, ec, bad):
            s3.create_bucket(Bucket=x)
        s3.put_bucket_tagging(Bucket=ec, Tagging={"TagSet": [{"Key": "wharf-ec", "Value": "3+2"}]})
        s3.put_bucket_tagging(Bucket=bad, Tagging={"TagSet": [{"Key": "wharf-ec", "Value": "9+9"}]})
        v = os.urandom(2 * CHUNK + 5)
        s3.put_object(Bucket=rep, Key="o", Body=v)
        s3.put_object(Bucket=ec, Key="o", Body=v)
        assert s3.get_object(Bucket=rep, Key="o")["Body"].read() == v
        assert s3.get_object(Bucket=ec, Key="o")["Body"].read() == v
        stripes = ec_rows(cl)
        assert len(stripes) == 3 and all(len(s) == 5 and s[0][2] == 3 for s in stripes.values())
        assert sum(1 for c in cl.chunk_map() if len(c[3]) == 2) == 3  # the replicated object
        from botocore.exceptions import ClientError
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bad, Key="o", Body=v)
        assert e.value.response["Error"]["Code"] == "InvalidArgument"
        assert "wharf-ec" in str(e.value) and "K+M <= 16" in str(e.value), str(e.value)
    # and the other way: an EC gateway, a bucket back to replicas
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--ec", "4+2"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clrp")
        s3.create_bucket(Bucket=b)
        s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "wharf-ec",
                                                             "Value": "replicas"}]})
        v = os.urandom(CHUNK + 3)
        s3.put_object(Bucket=b, Key="o", Body=v)
        assert s3.get_object(Bucket=b, Key="o")["Body"].read() == v
        assert ec_rows(cl) == {}
        assert all(len(c[3]) == 2 for c in cl.chunk_map())


def test_ec_gateway_option_validated():
    import subprocess
    from wharfd import build_dir
    for bad in ["4", "0+2", "4+0", "15+2", "x+y"]:
        r = subprocess.run([os.path.join(build_dir(), "wharfd"), "gateway", "--meta",
                            "postgresql://nobody@127.0.0.1:1/x", "--ec", bad],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        assert r.returncode != 0 and b"--ec" in r.stderr and b"erasure coding" in r.stderr, \
            (bad, r.returncode, r.stderr)


def test_ec_corrupted_shard_read_right_and_rebuilt(data):
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--ec", f"{K}+{M}"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clecd")
        s3.create_bucket(Bucket=b)
        v = os.urandom(3 * CHUNK + 7)
        s3.put_object(Bucket=b, Key="o", Body=v)
        stripes = check_layout(cl)
        key = sorted(stripes)[1]  # the second chunk
        cid, node, *_ = stripes[key][0]  # its data shard 0
        cl.corrupt(node, cid, 100, 64)
        g = cl.gateway
        assert s3.get_object(Bucket=b, Key="o")["Body"].read() == v
        assert g.metric_sum("wharf_cluster_ec_degraded_reads_total") >= 1
        assert wait_until(lambda: g.metric_sum("wharf_cluster_damage_repaired_total") >= 1
                          and g.metric_sum("wharf_cluster_ec_shards_rebuilt_total") >= 1,
                          timeout=30, interval=0.5), g.log_tail(3000)
        check_layout(cl)
        # the rebuilt shard is good: with the two servers of other shards down, it is needed
        others = [s[1] for s in stripes[key][1:]]
        cl.storage[others[0]].kill()
        cl.storage[others[1]].kill()
        cl.wait_nodes_up(4)
        d0 = g.metric_sum("wharf_cluster_ec_degraded_reads_total")
        r = s3.get_object(Bucket=b, Key="o", Range=f"bytes={key[1]}-{key[1] + CHUNK - 1}")
        assert r["Body"].read() == v[key[1]:key[1] + CHUNK]
        assert g.metric_sum("wharf_cluster_ec_degraded_reads_total") == d0 + 1


def test_ec_repair_after_node_loss_back_to_k_plus_m(data):
    """Seven servers, 4+2: one killed for good; after --repair-after every stripe has six
    shards on six distinct live servers again, rebuilt by the maintenance gateway; then M
    more die and everything still reads."""
    with Cluster(storage=7, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--ec", f"{K}+{M}", "--repair-after", "3"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clecr")
        s3.create_bucket(Bucket=b)
        put_all(s3, b, data)
        stripes = check_layout(cl)
        on0 = sum(1 for sh in stripes.values() for s in sh if s[1] == 0)
        assert on0 > 0
        g = cl.gateway
        cl.storage[0].kill()
        live = set(range(1, 7))
        ok = wait_until(lambda: g.metric_sum("wharf_cluster_ec_shards_rebuilt_total") >= on0
                        and g.metric_sum("wharf_cluster_repair_pending") == 0,
                        timeout=90, interval=0.5)
        assert ok, (g.metric_sum("wharf_cluster_ec_shards_rebuilt_total"), on0, g.log_tail(3000))
        check_layout(cl, live=live)
        read_all(s3, b, data)
        cl.storage[1].kill()
        cl.storage[2].kill()
        read_all(s3, b, data)


def test_ec_remove_refused_drain_rebuilds_elsewhere(data):
    """Seven servers, 4+2: removing a server that holds shards is refused (each shard is the
    only copy of its bytes); a drain rebuilds its shards on servers holding none of their
    stripe, then it is drained and removed, and everything reads with M more down."""
    with Cluster(storage=7, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--ec", f"{K}+{M}"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clecdr")
        s3.create_bucket(Bucket=b)
        put_all(s3, b, data)
        check_layout(cl)
        victim = cl.addr(0)
        held = len(cl.chunk_files()[0])
        assert held > 0
        rc, out, err = cl.node_cmd("remove", victim, check=False)
        assert rc == 4 and f"holds the only live copy of {held} chunks" in err, (rc, err)
        cl.node_cmd("drain", victim)
        ok = wait_until(lambda: cl.node_list()[victim]["state"] == "drained", timeout=90,
                        interval=0.5)
        assert ok, (cl.node_list(), cl.gateway.log_tail(3000))
        assert cl.gateway.metric_sum("wharf_cluster_ec_shards_rebuilt_total") >= held
        check_layout(cl, live=set(range(1, 7)))
        cl.node_cmd("remove", victim)
        cl.storage[0].kill()
        cl.storage[1].kill()
        cl.storage[2].kill()
        read_all(s3, b, data)


def test_ec_shards_spread_over_zones():
    """2+1 over six servers in three zones: every stripe's three shards in three zones."""
    zones = ["za", "za", "zb", "zb", "zc", "zc"]
    with Cluster(storage=6, replicas=2, chunk_size=CHUNK, providers="none", zones=zones,
                 gateway_args=["--ec", "2+1"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clecz")
        s3.create_bucket(Bucket=b)
        for i in range(6):
            s3.put_object(Bucket=b, Key=f"o{i}", Body=os.urandom(3 * CHUNK + i))
        stripes = ec_rows(cl)
        assert len(stripes) == 3 + 5 * 4
        for key, sh in stripes.items():
            assert len(sh) == 3 and len({zones[s[1]] for s in sh}) == 3, (key, sh)
        for i in range(6):
            assert len(s3.get_object(Bucket=b, Key=f"o{i}")["Body"].read()) == 3 * CHUNK + i
