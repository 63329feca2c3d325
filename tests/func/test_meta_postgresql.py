# SPDX-License-Identifier: Apache-2.0
"""wharfd with its metadata in PostgreSQL (wharfd serve --meta postgresql://...), against a
private PostgreSQL started by tests/lib/pgserver.py.

- the S3 basics (buckets, PUT/GET/overwrite/DELETE, listings, multipart) behave as with SQLite;
- two wharfd processes share one database: what one commits, the other serves;
- PostgreSQL restarts (fast shutdown and kill -9): requests during the outage get 503
  ServiceUnavailable, wharfd stays up and reconnects by itself, and nothing committed is lost.
"""
import hashlib
import os
import subprocess

import pytest

import pgserver
from s3raw import S3Raw
from wharfd import WharfServer, unique_bucket, wait_until

reason = pgserver.missing_reason()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")


@pytest.fixture(scope="module")
def pg():
    with pgserver.PgServer() as p:
        yield p


def _server(pg, db):
    url = pg.create_db(db)
    return WharfServer(extra_args=["--meta", url]), url


def _body(i, n=1000):
    return hashlib.sha256(str(i).encode()).digest() * (n // 32 + 1)


def test_basics_on_postgresql(pg):
    srv, _ = _server(pg, "basics")
    with srv:
        raw = S3Raw(srv.endpoint)
        b = unique_bucket("pgb")
        assert raw.request("PUT", f"/{b}").status == 200
        for i in range(5):
            assert raw.request("PUT", f"/{b}/dir/k{i}", body=_body(i)).status == 200
        assert raw.request("PUT", f"/{b}/top", body=b"x").status == 200
        r = raw.request("GET", f"/{b}/dir/k3")
        assert r.status == 200 and r.body == _body(3)
        assert raw.request("PUT", f"/{b}/dir/k3", body=b"new").status == 200
        assert raw.request("GET", f"/{b}/dir/k3").body == b"new"
        r = raw.request("GET", f"/{b}", query={"list-type": "2", "delimiter": "/"})
        assert r.status == 200
        assert b"<Prefix>dir/</Prefix>" in r.body and b"<Key>top</Key>" in r.body
        r = raw.request("GET", f"/{b}", query={"list-type": "2", "prefix": "dir/", "max-keys": "2"})
        assert r.body.count(b"<Key>") == 2 and b"<IsTruncated>true</IsTruncated>" in r.body
        assert raw.request("DELETE", f"/{b}/dir/k0").status == 204
        assert raw.request("GET", f"/{b}/dir/k0").status == 404
        # Multipart: two parts, the first at the 5 MiB minimum.
        r = raw.request("POST", f"/{b}/mp", query={"uploads": None})
        assert r.status == 200, r
        uid = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
        p1, p2 = b"a" * (5 << 20), b"tail"
        etags = []
        for n, data in ((1, p1), (2, p2)):
            r = raw.request("PUT", f"/{b}/mp", query={"partNumber": str(n), "uploadId": uid},
                            body=data)
            assert r.status == 200, r
            etags.append(r.headers["etag"])
        xml = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>"
            for n, e in zip((1, 2), etags)) + "</CompleteMultipartUpload>"
        r = raw.request("POST", f"/{b}/mp", query={"uploadId": uid}, body=xml.encode())
        assert r.status == 200, r
        r = raw.request("GET", f"/{b}/mp")
        assert r.status == 200 and r.body == p1 + p2
        # No SQLite database was made: the metadata is in PostgreSQL.
        assert not os.path.exists(os.path.join(srv.data_dir, "meta.db"))
        assert pg.sql("SELECT count(*) FROM objects", db="basics") == "6"


def test_two_servers_share_one_database(pg):
    url = pg.create_db("shared")
    # Two processes, one database; bytes are local to each, so the second serves metadata
    # the first wrote (buckets, listings) and its own objects.
    a = WharfServer(extra_args=["--meta", url]).start()
    try:
        b_srv = WharfServer(extra_args=["--meta", url]).start()
        try:
            ra, rb = S3Raw(a.endpoint), S3Raw(b_srv.endpoint)
            b = unique_bucket("shared")
            assert ra.request("PUT", f"/{b}").status == 200
            # already there, seen by the other: its owner re-creating it is 200 in us-east-1
            assert rb.request("PUT", f"/{b}").status == 200
            assert rb.request("HEAD", f"/{b}").status == 200
            assert rb.request("PUT", f"/{b}/from-b", body=b"bbb").status == 200
            r = ra.request("GET", f"/{b}", query={"list-type": "2"})
            assert b"<Key>from-b</Key>" in r.body
        finally:
            b_srv.cleanup()
    finally:
        a.cleanup()


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_postgresql_restart(pg, how):
    srv, _ = _server(pg, f"restart_{how}")
    with srv:
        raw = S3Raw(srv.endpoint)
        b = unique_bucket("pgr")
        assert raw.request("PUT", f"/{b}").status == 200
        for i in range(20):
            assert raw.request("PUT", f"/{b}/k{i}", body=_body(i)).status == 200
        if how == "stop":
            pg.stop()
        else:
            pg.kill()
        try:
            # During the outage: 503 with an S3 error, and wharfd stays up.
            r = raw.request("GET", f"/{b}/k1", timeout=20)
            assert r.status == 503, r
            assert r.error_code() == "ServiceUnavailable", r
            r = raw.request("PUT", f"/{b}/during", body=b"x", timeout=20)
            assert r.status == 503, r
            # It names what is down, not the request rate.
            assert b"unreachable" in r.body and b"request rate" not in r.body, r.body
            assert srv.alive()
        finally:
            pg.start()
        # Back: every committed object intact, new writes work, without restarting wharfd.
        r = wait_until(lambda: raw.request("GET", f"/{b}/k0", timeout=20).status == 200, 20)
        assert r, srv.log_tail()
        for i in range(20):
            r = raw.request("GET", f"/{b}/k{i}")
            assert r.status == 200 and r.body == _body(i), (i, r)
        assert raw.request("GET", f"/{b}/during").status == 404
        assert raw.request("PUT", f"/{b}/after", body=b"after").status == 200
        assert raw.request("GET", f"/{b}/after").body == b"after"


def test_bad_meta_urls_are_refused_clearly(pg, tmp_path):
    wharfd = WharfServer().binary
    r = subprocess.run([wharfd, "serve", "--data", str(tmp_path / "d1"), "--meta", "mysql://x/y"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--meta wants postgresql://" in r.stderr, r
    # Nothing listens on port 1: the start fails at once, naming the database.
    (tmp_path / "d2").mkdir()
    srv = WharfServer(data_dir=str(tmp_path / "d2"),
                      extra_args=["--meta", "postgresql://postgres@127.0.0.1:1/none"])
    with pytest.raises(RuntimeError):
        srv.start(timeout=20)
    assert "cannot open PostgreSQL metadata" in srv.log_tail(), srv.log_tail()


def test_libpq_is_loaded_only_for_postgresql(pg, tmp_path):
    """wharfd does not link libpq (a single-node server needs no PostgreSQL or LDAP libraries):
    it loads libpq when a postgresql:// URL is opened, and says what to install when it
    cannot."""
    from wharfd import build_dir
    needed = subprocess.run(["readelf", "-d", os.path.join(build_dir(), "wharfd")],
                            capture_output=True, text=True, check=True, timeout=30).stdout
    assert "libpq" not in needed, needed
    # SQLite metadata with no loadable libpq at all: serves.
    env = {"WHARF_LIBPQ": str(tmp_path / "no-such-libpq.so.5")}
    with WharfServer(env=env) as srv:
        raw = S3Raw(srv.endpoint)
        b = unique_bucket("nopq")
        assert raw.request("PUT", f"/{b}").status == 200
        assert raw.request("PUT", f"/{b}/k", body=b"v").status == 200
        assert raw.request("GET", f"/{b}/k").body == b"v"
    # PostgreSQL metadata without it: refused at start, naming libpq and the package.
    url = pg.create_db("nopq")
    srv = WharfServer(extra_args=["--meta", url], env=env)
    try:
        with pytest.raises(RuntimeError):
            srv.start(timeout=10)
        log = srv.log_tail()
        assert "PostgreSQL metadata needs libpq" in log and "libpq5" in log, log
        assert "no-such-libpq.so.5" in log, log
    finally:
        srv.cleanup()
