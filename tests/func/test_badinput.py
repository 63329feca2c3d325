# SPDX-License-Identifier: Apache-2.0
"""Bad input against a real wharfd: the right S3 error, the server stays up, nothing is stored.

Requests are built by hand (tests/lib/s3raw.py, raw sockets) so the bytes on the wire are
exactly the broken ones. The module runs its own wharfd so that data-directory snapshots
(WharfServer.data_files) see only what these tests did. After every case, check_clean() proves:
GET /health is 200, the bucket lists exactly the keys the test expects, and no file appeared
in (or stayed behind in) the data directory.
"""
import base64
import hashlib
import os
import socket
import time
import urllib.parse
import zlib
import xml.etree.ElementTree as ET

import pytest

from s3raw import EMPTY_SHA256, UNSIGNED, S3Raw, uri_encode
from wharfd import (ACCESS_KEY, SECRET_KEY, WharfServer, crc32c_b64, md5_hex, unique_bucket,
                    wait_until)

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def srv():
    s = WharfServer()
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f"wharfd exited with {rc} on SIGTERM"


@pytest.fixture(scope="module")
def raw(srv):
    return S3Raw(srv.endpoint)


@pytest.fixture()
def bucket(raw):
    name = unique_bucket("bad")
    r = raw.request("PUT", f"/{name}")
    assert r.status == 200, r
    return name


def _strip_ns(tag):
    return tag.rsplit("}", 1)[-1]


def list_keys(raw, bucket):
    r = raw.request("GET", f"/{bucket}", query=[("list-type", "2")])
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    return sorted(el.text or "" for el in root.iter() if _strip_ns(el.tag) == "Key")


def list_buckets(raw):
    r = raw.request("GET", "/")
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    return sorted(el.text for el in root.iter() if _strip_ns(el.tag) == "Name")


def health(srv):
    import urllib.request
    with urllib.request.urlopen(srv.endpoint + "/health", timeout=5) as r:
        return r.status


def check_clean(srv, raw, bucket, keys, files_before, wait=10.0):
    """The server is up, the bucket holds exactly `keys`, and the data directory holds the
    same files as before the bad request (waiting, bounded, for a temp file to be cleaned)."""
    assert srv.alive(), srv.log_tail()
    assert health(srv) == 200
    assert list_keys(raw, bucket) == sorted(keys)
    final = wait_until(lambda: srv.data_files() == files_before, timeout=wait)
    assert final, (f"data dir changed: new {sorted(srv.data_files() - files_before)}, "
                   f"gone {sorted(files_before - srv.data_files())}")


def put_ok(raw, bucket, key, body=b"ok"):
    r = raw.request("PUT", f"/{bucket}/{key}", body=body)
    assert r.status == 200, r
    return r


def test_s3raw_matches_botocore():
    """The raw signer agrees with botocore on a request with an odd key and query."""
    import datetime
    import botocore.auth
    import botocore.awsrequest
    import botocore.credentials
    raw = S3Raw("http://127.0.0.1:1", "AK", "SK", "us-east-1")
    date = "20260101T000000Z"
    body = b"hello"
    ph = hashlib.sha256(body).hexdigest()
    query = [("prefix", "a b/"), ("list-type", "2")]
    h, sig = raw.sign_headers("PUT", "/b/ü key+x", query, {"x-amz-meta-a": "v"}, ph,
                              amz_date=date)
    url = "http://127.0.0.1:1" + uri_encode("/b/ü key+x") + "?prefix=a%20b%2F&list-type=2"
    req = botocore.awsrequest.AWSRequest("PUT", url, data=body, headers={
        "x-amz-meta-a": "v", "x-amz-date": date, "x-amz-content-sha256": ph})

    class FixedNow(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return datetime.datetime(2026, 1, 1)

        @classmethod
        def now(cls, tz=None):
            return datetime.datetime(2026, 1, 1, tzinfo=tz)

    saved = botocore.auth.datetime.datetime
    botocore.auth.datetime.datetime = FixedNow
    try:
        botocore.auth.S3SigV4Auth(botocore.credentials.Credentials("AK", "SK"), "s3",
                                  "us-east-1").add_auth(req)
    finally:
        botocore.auth.datetime.datetime = saved
    assert req.headers["Authorization"].endswith("Signature=" + sig)


# ---- malformed XML ----

MALFORMED = [b"", b"not xml at all", b"<CompleteMultipartUpload><Part>",
             b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>",
             b"<Delete><Object><Key>a</Key></Object></Delete><trailing/>",
             b"\xff\xfe<bad encoding/>"]


def _create_upload(raw, bucket, key):
    r = raw.request("POST", f"/{bucket}/{key}", query=[("uploads", None)])
    assert r.status == 200, r
    return ET.fromstring(r.body).find("{*}UploadId").text


def test_malformed_xml_complete_multipart(srv, raw, bucket):
    put_ok(raw, bucket, "keep")
    uid = _create_upload(raw, bucket, "mpu")
    r = raw.request("PUT", f"/{bucket}/mpu", query=[("partNumber", "1"), ("uploadId", uid)],
                    body=b"part one")
    assert r.status == 200, r
    before = srv.data_files()
    for body in MALFORMED + [b"<Foo><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></Foo>"]:
        r = raw.request("POST", f"/{bucket}/mpu", query=[("uploadId", uid)], body=body)
        assert (r.status, r.error_code()) == (400, "MalformedXML"), (body, r)
    check_clean(srv, raw, bucket, ["keep"], before)
    # The upload survived the bad completions.
    r = raw.request("GET", f"/{bucket}/mpu", query=[("uploadId", uid)])
    assert r.status == 200 and b"<PartNumber>1</PartNumber>" in r.body, r
    r = raw.request("DELETE", f"/{bucket}/mpu", query=[("uploadId", uid)])
    assert r.status == 204, r


def _delete_objects(raw, bucket, body):
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    return raw.request("POST", f"/{bucket}", query=[("delete", None)], body=body,
                       headers={"content-md5": md5})


def test_malformed_xml_delete_objects(srv, raw, bucket):
    put_ok(raw, bucket, "a")
    put_ok(raw, bucket, "b")
    before = srv.data_files()
    for body in MALFORMED + [b"<Delete><Object><Key>a</Key></Object>"]:
        r = _delete_objects(raw, bucket, body)
        assert (r.status, r.error_code()) == (400, "MalformedXML"), (body, r)
    check_clean(srv, raw, bucket, ["a", "b"], before)
    # A well-formed request still works afterwards.
    r = _delete_objects(raw, bucket, b"<Delete><Object><Key>a</Key></Object></Delete>")
    assert r.status == 200 and b"<Deleted>" in r.body, r
    assert list_keys(raw, bucket) == ["b"]


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<Delete><Object><Key>&lol9;</Key></Object></Delete>"""

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<Delete><Object><Key>&x;</Key></Object></Delete>"""

PLAIN_DOCTYPE = b"""<?xml version="1.0"?><!DOCTYPE Delete>
<Delete><Object><Key>a</Key></Object></Delete>"""


def test_xml_doctype_refused(srv, raw, bucket):
    put_ok(raw, bucket, "a")
    before = srv.data_files()
    for body in (BILLION_LAUGHS, XXE, PLAIN_DOCTYPE):
        t0 = time.monotonic()
        r = _delete_objects(raw, bucket, body)
        assert r.status == 400, (body[:60], r)
        assert r.error_code() in ("MalformedXML", "InvalidArgument", "InvalidRequest"), r
        assert b"root:" not in r.body
        assert time.monotonic() - t0 < 5, "entity expansion took too long"
    uid = _create_upload(raw, bucket, "m")
    for body in (BILLION_LAUGHS.replace(b"<Delete><Object><Key>&lol9;</Key></Object></Delete>",
                                        b"<CompleteMultipartUpload><Part><PartNumber>&lol9;"
                                        b"</PartNumber></Part></CompleteMultipartUpload>"),):
        r = raw.request("POST", f"/{bucket}/m", query=[("uploadId", uid)], body=body)
        assert r.status == 400, r
    assert raw.request("DELETE", f"/{bucket}/m", query=[("uploadId", uid)]).status == 204
    check_clean(srv, raw, bucket, ["a"], before)


# ---- authentication ----

def test_missing_auth(srv, raw, bucket):
    put_ok(raw, bucket, "a")
    before = srv.data_files()
    for method, path, body in [("GET", "/", b""), ("GET", f"/{bucket}", b""),
                               ("GET", f"/{bucket}/a", b""), ("PUT", f"/{bucket}/anon", b"x"),
                               ("PUT", f"/{unique_bucket('anon')}", b""),
                               ("DELETE", f"/{bucket}/a", b"")]:
        r = raw.request(method, path, body=body, sign=False)
        assert (r.status, r.error_code()) == (403, "AccessDenied"), (method, path, r)
    check_clean(srv, raw, bucket, ["a"], before)


def test_bad_signature(srv, raw, bucket):
    before = srv.data_files()
    wrong = S3Raw(srv.endpoint, ACCESS_KEY, SECRET_KEY + "x")
    r = wrong.request("PUT", f"/{bucket}/bad-sig", body=b"data")
    assert (r.status, r.error_code()) == (403, "SignatureDoesNotMatch"), r
    r = wrong.request("GET", f"/{bucket}")
    assert (r.status, r.error_code()) == (403, "SignatureDoesNotMatch"), r
    # Signed for one path, sent to another.
    h, _ = raw.sign_headers("PUT", f"/{bucket}/signed-path", payload_hash=EMPTY_SHA256)
    r = raw.send_prepared("PUT", f"/{bucket}/other-path", h, b"")
    assert (r.status, r.error_code()) == (403, "SignatureDoesNotMatch"), r
    # The payload hash is signed, but the body sent is different.
    r = raw.request("PUT", f"/{bucket}/bad-hash", body=b"B" * 1000,
                    payload_hash=hashlib.sha256(b"A" * 1000).hexdigest())
    assert (r.status, r.error_code()) == (400, "XAmzContentSHA256Mismatch"), r
    # Clock skew over 15 minutes.
    old = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - 3600))
    h, _ = raw.sign_headers("GET", f"/{bucket}", amz_date=old)
    r = raw.send_prepared("GET", f"/{bucket}", h, b"")
    assert (r.status, r.error_code()) == (403, "RequestTimeTooSkewed"), r
    # A presigned URL with a bad signature, and one that expired.
    url = raw.presign("GET", f"/{bucket}", expires=60)
    bad = url[:-4] + ("0000" if not url.endswith("0000") else "1111")
    r = raw.request("GET", bad, sign=False, raw_path=True)
    assert (r.status, r.error_code()) == (403, "SignatureDoesNotMatch"), r
    past = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - 600))
    r = raw.request("GET", raw.presign("GET", f"/{bucket}", expires=60, amz_date=past),
                    sign=False, raw_path=True)
    assert (r.status, r.error_code()) == (403, "AccessDenied"), r
    # The good presigned URL works (so the two above failed for the reason tested).
    r = raw.request("GET", url, sign=False, raw_path=True)
    assert r.status == 200, r
    check_clean(srv, raw, bucket, [], before)


def test_expect_continue_refused_before_body(srv, raw, bucket):
    """A 32 MiB PUT with Expect: 100-continue and a bad signature (or no such bucket) gets its
    error at once instead of 100 Continue: the body is never invited, nothing is stored."""
    before = srv.data_files()
    wrong = S3Raw(srv.endpoint, ACCESS_KEY, SECRET_KEY + "x")
    for client, path, code in ((wrong, f"/{bucket}/expect", b"SignatureDoesNotMatch"),
                               (raw, f"/{unique_bucket('nosuch')}/expect", b"NoSuchBucket")):
        s = client.open_socket("PUT", path, 32 * MIB, headers={"expect": "100-continue"})
        try:
            s.settimeout(10)
            buf = b""
            while b"</Error>" not in buf and len(buf) < 65536:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        finally:
            s.close()
        assert not buf.startswith(b"HTTP/1.1 100"), buf[:200]
        assert buf.split(b" ", 2)[1] in (b"403", b"404") and code in buf, buf[:400]
    check_clean(srv, raw, bucket, [], before)


def test_unknown_access_key(srv, raw, bucket):
    before = srv.data_files()
    stranger = S3Raw(srv.endpoint, "NOSUCHKEY", SECRET_KEY)
    r = stranger.request("PUT", f"/{bucket}/k", body=b"x")
    assert (r.status, r.error_code()) == (403, "InvalidAccessKeyId"), r
    r = stranger.request("GET", "/")
    assert (r.status, r.error_code()) == (403, "InvalidAccessKeyId"), r
    check_clean(srv, raw, bucket, [], before)


def test_garbage_authorization(srv, raw, bucket):
    before = srv.data_files()
    date = time.strftime("%Y%m%d", time.gmtime())
    amz = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    malformed = [
        "AWS4-HMAC-SHA256 garbage",
        "AWS4-HMAC-SHA256 Credential=, SignedHeaders=, Signature=",
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}, SignedHeaders=host, Signature=00",
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{date}/us-east-1/s3/aws4_request, "
        "Signature=" + "0" * 64,  # no SignedHeaders
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{date}/us-east-1/s3/aws4_request",
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/notadate/us-east-1/s3/aws4_request, "
        "SignedHeaders=host, Signature=" + "0" * 64,
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{date}/us-east-1/s3/wrong_term, "
        "SignedHeaders=host, Signature=" + "0" * 64,
        "AWS4-HMAC-SHA256 " + "A" * 4000,
    ]
    for auth in malformed:
        hdrs = {"authorization": auth, "x-amz-date": amz, "x-amz-content-sha256": EMPTY_SHA256}
        r = raw.request("PUT", f"/{bucket}/g", body=b"", headers=hdrs, sign=False)
        assert (r.status, r.error_code()) == (400, "AuthorizationHeaderMalformed"), (auth, r)
    # Not SigV4 at all: refused (S3 answers 400 InvalidArgument / 400 or 403 for v2).
    for auth in ("Bearer abc", "AWS " + ACCESS_KEY + ":c2lnbmF0dXJl", "\x01\x02"):
        hdrs = {"authorization": auth, "x-amz-date": amz, "x-amz-content-sha256": EMPTY_SHA256}
        r = raw.request("PUT", f"/{bucket}/g", body=b"", headers=hdrs, sign=False)
        assert r.status in (400, 403) and r.error_code(), (auth, r)
    check_clean(srv, raw, bucket, [], before)


def test_streaming_signed_chunks(srv, raw, bucket):
    """STREAMING-AWS4-HMAC-SHA256-PAYLOAD: good chunks are stored; a chunk whose data no
    longer matches its signature is refused and nothing is stored."""
    data = os.urandom(200_000)
    h, body = raw.chunked_signed("PUT", f"/{bucket}/chunked", data)
    r = raw.send_prepared("PUT", f"/{bucket}/chunked", h, body)
    assert r.status == 200, r
    assert r.headers["etag"] == f'"{md5_hex(data)}"'
    g = raw.request("GET", f"/{bucket}/chunked")
    assert g.status == 200 and g.body == data
    before = srv.data_files()
    for i in (0, 2, 3):  # first, middle, last data chunk (the 0-length final has no data)
        h, body = raw.chunked_signed("PUT", f"/{bucket}/tampered", data, tamper_chunk=i)
        r = raw.send_prepared("PUT", f"/{bucket}/tampered", h, body)
        assert (r.status, r.error_code()) == (403, "SignatureDoesNotMatch"), (i, r)
    check_clean(srv, raw, bucket, ["chunked"], before)


def test_streaming_bad_chunk_framing(srv, raw, bucket):
    """aws-chunked bodies whose framing lies (same total length, so the server cannot just
    wait for more bytes): a non-hex size, a size past the end of the body, a size one off."""
    before = srv.data_files()
    data = os.urandom(1000)
    h, body = raw.chunked_signed("PUT", f"/{bucket}/framing", data)
    assert body.startswith(b"3e8;")
    for bad_size, codes in ((b"zzz;", ("IncompleteBody", "InvalidArgument", "InvalidRequest")),
                            (b"fff;", ("IncompleteBody", "InvalidArgument", "InvalidRequest")),
                            (b"3e9;", ("SignatureDoesNotMatch", "IncompleteBody"))):
        r = raw.send_prepared("PUT", f"/{bucket}/framing", h, bad_size + body[4:])
        assert r.status in (400, 403) and r.error_code() in codes, (bad_size, r)
    check_clean(srv, raw, bucket, [], before)


def test_bad_query_arguments(srv, raw, bucket):
    before = srv.data_files()
    for query in ([("list-type", "2"), ("max-keys", "-1")],
                  [("list-type", "2"), ("max-keys", "abc")],
                  [("list-type", "2"), ("continuation-token", "!!!not-a-token")],
                  [("list-type", "2"), ("encoding-type", "zip")]):
        r = raw.request("GET", f"/{bucket}", query=query)
        assert (r.status, r.error_code()) == (400, "InvalidArgument"), (query, r)
    for part in ("0", "10001", "-1", "x"):
        r = raw.request("PUT", f"/{bucket}/k", query=[("partNumber", part), ("uploadId", "u")],
                        body=b"z")
        assert (r.status, r.error_code()) == (400, "InvalidArgument"), (part, r)
    r = raw.request("PUT", f"/{bucket}/cp", headers={"x-amz-copy-source": "nonsense"})
    assert (r.status, r.error_code()) == (400, "InvalidArgument"), r
    check_clean(srv, raw, bucket, [], before)


def test_streaming_unsigned_trailer(srv, raw, bucket):
    """STREAMING-UNSIGNED-PAYLOAD-TRAILER with x-amz-checksum-crc32c: a right trailer is
    stored and returned on HEAD; a wrong one is BadDigest and nothing is stored."""
    data = os.urandom(150_000)
    want = crc32c_b64(data)
    h, body = raw.chunked_trailer("PUT", f"/{bucket}/tr", data, "x-amz-checksum-crc32c", want)
    r = raw.send_prepared("PUT", f"/{bucket}/tr", h, body)
    assert r.status == 200, r
    head = raw.request("HEAD", f"/{bucket}/tr", headers={"x-amz-checksum-mode": "ENABLED"})
    assert head.status == 200 and head.headers.get("x-amz-checksum-crc32c") == want, \
        head.headers
    assert raw.request("GET", f"/{bucket}/tr").body == data
    before = srv.data_files()
    h, body = raw.chunked_trailer("PUT", f"/{bucket}/tr-bad", data, "x-amz-checksum-crc32c",
                                  crc32c_b64(data + b"x"))
    r = raw.send_prepared("PUT", f"/{bucket}/tr-bad", h, body)
    assert (r.status, r.error_code()) == (400, "BadDigest"), r
    check_clean(srv, raw, bucket, ["tr"], before)


def _crc64nvme(data):
    """CRC-64/NVME, bit by bit (reflected poly 0x9A6C9329AC4BC9B5): an independent reference."""
    crc = 0xFFFFFFFFFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x9A6C9329AC4BC9B5 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFFFFFFFFFF


def _checksums(data):
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return {"crc32": b64(zlib.crc32(data).to_bytes(4, "big")),
            "crc32c": crc32c_b64(data),
            "crc64nvme": b64(_crc64nvme(data).to_bytes(8, "big")),
            "sha1": b64(hashlib.sha1(data).digest()),
            "sha256": b64(hashlib.sha256(data).digest())}


def test_checksum_headers_round_trip(srv, raw, bucket):
    """A right x-amz-checksum-* of each algorithm is accepted and comes back on HEAD and GET
    with x-amz-checksum-mode: ENABLED."""
    assert _crc64nvme(b"123456789") == 0xAE8B14860A799888
    data = os.urandom(3000)
    sums = _checksums(data)
    for algo, value in sums.items():
        r = raw.request("PUT", f"/{bucket}/ok-{algo}", body=data,
                        headers={f"x-amz-checksum-{algo}": value})
        assert r.status == 200, (algo, r)
        for method in ("HEAD", "GET"):
            g = raw.request(method, f"/{bucket}/ok-{algo}",
                            headers={"x-amz-checksum-mode": "ENABLED"})
            assert g.status == 200 and g.headers.get(f"x-amz-checksum-{algo}") == value, \
                (algo, method, g.headers)
            # As S3: without x-amz-checksum-mode: ENABLED no checksum of any algorithm.
            g = raw.request(method, f"/{bucket}/ok-{algo}")
            assert g.status == 200, g
            assert not [h for h in g.headers if h.lower().startswith("x-amz-checksum")], \
                (algo, method, g.headers)
    assert list_keys(raw, bucket) == sorted(f"ok-{a}" for a in sums)


def test_wrong_checksum_headers_not_stored(srv, raw, bucket):
    """A PUT whose x-amz-checksum-* value (of the right length) does not match the body is
    refused for every algorithm S3 defines, never stored with a checksum nobody verified.
    An algorithm the server does not implement may be refused with 501 NotImplemented."""
    before = srv.data_files()
    body = b"hello, checksums"
    zeros = {"crc32": 4, "crc32c": 4, "crc64nvme": 8, "sha1": 20, "sha256": 32}
    for algo, n in zeros.items():
        wrong = base64.b64encode(b"\x01" * n).decode()
        r = raw.request("PUT", f"/{bucket}/ck-{algo}", body=body,
                        headers={f"x-amz-checksum-{algo}": wrong})
        assert (r.status, r.error_code()) in ((400, "BadDigest"), (501, "NotImplemented")), \
            (algo, r)
    check_clean(srv, raw, bucket, [], before)


def test_streaming_trailer_unverifiable_refused(srv, raw, bucket):
    """An unsigned-payload upload is only as safe as its trailer checksum: a declared trailer
    that never arrives, or a wrong one of another S3 algorithm, must not be stored."""
    before = srv.data_files()
    data = os.urandom(100_000)
    # Declared in x-amz-trailer (and signed), but the body ends without it.
    h, body = raw.chunked_trailer("PUT", f"/{bucket}/no-trailer", data,
                                  "x-amz-checksum-crc32c", crc32c_b64(data))
    body = body[:body.rindex(b"0\r\nx-amz-checksum-crc32c:") + 3] + b"\r\n"
    hdrs = {k: v for k, v in h.items()
            if k not in ("authorization", "host", "x-amz-date", "x-amz-content-sha256")}
    hdrs["content-length"] = str(len(body))
    h, _ = raw.sign_headers("PUT", f"/{bucket}/no-trailer", None, hdrs,
                            "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    r = raw.send_prepared("PUT", f"/{bucket}/no-trailer", h, body)
    assert r.status == 400, r
    # Wrong values of the other algorithms.
    for algo, n in (("crc32", 4), ("sha1", 20), ("sha256", 32), ("crc64nvme", 8)):
        wrong = base64.b64encode(b"\x01" * n).decode()
        h, body = raw.chunked_trailer("PUT", f"/{bucket}/tr-{algo}", data,
                                      f"x-amz-checksum-{algo}", wrong)
        r = raw.send_prepared("PUT", f"/{bucket}/tr-{algo}", h, body)
        assert (r.status, r.error_code()) in ((400, "BadDigest"), (501, "NotImplemented")), \
            (algo, r)
    check_clean(srv, raw, bucket, [], before)


# ---- oversized headers ----

def _raw_exchange(srv, data, timeout=10):
    """Sends bytes, returns the status code of the reply, or None if the server closed or
    reset the connection without one."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf = b""
        try:
            while b"\r\n" not in buf and len(buf) < 65536:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        if buf.startswith(b"HTTP/1."):
            return int(buf.split(b" ", 2)[1])
        return None
    finally:
        s.close()


def test_oversized_headers(srv, raw, bucket):
    before = srv.data_files()
    h, _ = raw.sign_headers("PUT", f"/{bucket}/big-headers", payload_hash=UNSIGNED)
    head = f"PUT /{bucket}/big-headers HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n"
                                                                for k, v in h.items())
    many = "".join(f"x-pad-{i}: {'p' * 1000}\r\n" for i in range(200))  # 200 KiB
    one = f"x-huge: {'h' * 200 * 1024}\r\n"
    for pad in (many, one):
        req = (head + pad + "Content-Length: 1\r\n\r\nx").encode()
        status = _raw_exchange(srv, req)
        assert status in (None, 400, 413, 431), status
        assert srv.alive() and health(srv) == 200
    # A 200 KiB request line (URL).
    status = _raw_exchange(srv, f"GET /{bucket}/{'u' * 200 * 1024} HTTP/1.1\r\n"
                                f"Host: x\r\n\r\n".encode())
    assert status in (None, 400, 403, 414, 431), status
    check_clean(srv, raw, bucket, [], before)


# ---- names and keys ----

def test_invalid_bucket_names(srv, raw):
    before_buckets = list_buckets(raw)
    for name in ("ab", "a" * 64, "Upper", "under_score", "-dash", "dash-", ".dot", "dot.",
                 "a..b", "192.168.1.1", "bad!char", "xn--punycode", "sp ace"):
        r = raw.request("PUT", f"/{name}")
        assert (r.status, r.error_code()) == (400, "InvalidBucketName"), (name, r)
    assert list_buckets(raw) == before_buckets
    assert health(srv) == 200


def test_path_traversal_and_bad_keys(srv, raw, bucket, tmp_path):
    canary = tmp_path / "canary"
    canary.mkdir()
    before = srv.data_files()
    passwd = os.stat("/etc/passwd")
    up = "../" * 16
    target = up + str(canary).lstrip("/") + "/pwned"
    stored = []
    for key in ("../../etc/passwd", target, "..", "../", "a/../../b", "./x"):
        # As a key of an ordinary PUT: either a literal key or refused, never a path.
        r = raw.request("PUT", f"/{bucket}/{key}", body=b"traversal")
        assert r.status in (200, 400), (key, r)
        if r.status == 200:
            stored.append(key)
            g = raw.request("GET", f"/{bucket}/{key}")
            assert g.status == 200 and g.body == b"traversal", (key, g)
    # The same keys with the dots and slashes percent-encoded in the URL.
    enc = "/" + bucket + "/" + urllib.parse.quote(target, safe="")
    r = raw.request("PUT", enc, raw_path=True, body=b"traversal")
    assert r.status in (200, 400), r
    if r.status == 200 and target not in stored:
        stored.append(target)
    assert list(canary.iterdir()) == []
    # Relative to the data directory, "../../etc/passwd" is /etc/passwd or /tmp/etc/passwd.
    assert os.stat("/etc/passwd").st_mtime_ns == passwd.st_mtime_ns
    assert not os.path.exists(os.path.join(os.path.dirname(srv.data_dir), "etc"))
    # NUL, invalid UTF-8 and a key over 1024 bytes are refused.
    for path, code in [(f"/{bucket}/a%00b", None), (f"/{bucket}/%00", None),
                       (f"/{bucket}/bad%ff%feutf8", None),
                       (f"/{bucket}/" + "k" * 1025, "KeyTooLongError")]:
        r = raw.request("PUT", path, raw_path=True, body=b"x")
        assert r.status == 400, (path, r)
        if code:
            assert r.error_code() == code, r
        else:
            assert r.error_code() in ("InvalidArgument", "InvalidURI", "InvalidRequest"), r
    assert list_keys(raw, bucket) == sorted(stored)
    for key in stored:
        assert raw.request("DELETE", f"/{bucket}/{key}").status == 204
    check_clean(srv, raw, bucket, [], before)
    assert list(canary.iterdir()) == []


# ---- bodies ----

def _send_partial(raw, path, total, send, shutdown_write, query=None):
    """Starts a PUT of `total` bytes, sends `send` of them, then closes (optionally after a
    write shutdown and reading whatever the server answers). Returns the status or None."""
    s = raw.open_socket("PUT", path, total, query=query)
    status = None
    try:
        block = os.urandom(min(send, MIB)) or b""
        left = send
        while left > 0:
            s.sendall(block[:left])
            left -= min(left, len(block))
        if shutdown_write:
            s.shutdown(socket.SHUT_WR)
            s.settimeout(10)
            try:
                buf = s.recv(4096)
                if buf.startswith(b"HTTP/1."):
                    status = int(buf.split(b" ", 2)[1])
            except (ConnectionResetError, socket.timeout):
                pass
    finally:
        s.close()
    return status


def test_truncated_body(srv, raw, bucket):
    put_ok(raw, bucket, "keep")
    before = srv.data_files()
    status = _send_partial(raw, f"/{bucket}/trunc", total=MIB, send=100_000, shutdown_write=True)
    assert status in (None, 400), status
    assert raw.request("HEAD", f"/{bucket}/trunc").status == 404
    # Nothing at all after the headers.
    status = _send_partial(raw, f"/{bucket}/trunc0", total=5000, send=0, shutdown_write=True)
    assert status in (None, 400), status
    check_clean(srv, raw, bucket, ["keep"], before)
    # A truncated UploadPart leaves no part.
    uid = _create_upload(raw, bucket, "mp")
    _send_partial(raw, f"/{bucket}/mp", total=MIB, send=4096, shutdown_write=True,
                  query=[("partNumber", "1"), ("uploadId", uid)])
    r = raw.request("GET", f"/{bucket}/mp", query=[("uploadId", uid)])
    assert r.status == 200 and b"<Part>" not in r.body, r
    assert raw.request("DELETE", f"/{bucket}/mp", query=[("uploadId", uid)]).status == 204
    check_clean(srv, raw, bucket, ["keep"], before)


def test_disconnect_mid_upload(srv, raw, bucket):
    put_ok(raw, bucket, "keep")
    before = srv.data_files()
    _send_partial(raw, f"/{bucket}/half", total=32 * MIB, send=16 * MIB, shutdown_write=False)
    check_clean(srv, raw, bucket, ["keep"], before, wait=15.0)
    assert raw.request("HEAD", f"/{bucket}/half").status == 404
    # The server still takes a full upload afterwards.
    data = os.urandom(MIB)
    put_ok(raw, bucket, "after", data)
    assert raw.request("GET", f"/{bucket}/after").body == data


def test_bad_range(srv, raw, bucket):
    body = bytes(range(256)) * 4
    put_ok(raw, bucket, "r", body)
    put_ok(raw, bucket, "empty", b"")
    before = srv.data_files()
    for rng in ("bytes=1024-", "bytes=2000-3000", "bytes=1024-1024"):
        r = raw.request("GET", f"/{bucket}/r", headers={"range": rng})
        assert (r.status, r.error_code()) == (416, "InvalidRange"), (rng, r)
        assert r.headers.get("content-range") == "bytes */1024", (rng, r.headers)
    r = raw.request("GET", f"/{bucket}/empty", headers={"range": "bytes=0-0"})
    assert r.status == 416, r
    # Syntactically invalid ranges are ignored (RFC 9110, as S3 does): the whole object.
    for rng in ("bytes=abc", "bytes=5-2", "chars=0-1", "bytes=", "bytes=0-1,5-6",
                "bytes=--1", "bytes=99999999999999999999999-"):
        r = raw.request("GET", f"/{bucket}/r", headers={"range": rng})
        assert r.status in (200, 416), (rng, r)
        if r.status == 200:
            assert r.body == body, rng
    check_clean(srv, raw, bucket, ["empty", "r"], before)


def test_content_md5_mismatch(srv, raw, bucket):
    put_ok(raw, bucket, "keep")
    before = srv.data_files()
    data = os.urandom(300_000)
    wrong = base64.b64encode(hashlib.md5(data + b"!").digest()).decode()
    r = raw.request("PUT", f"/{bucket}/md5", body=data, headers={"content-md5": wrong})
    assert (r.status, r.error_code()) == (400, "BadDigest"), r
    r = raw.request("PUT", f"/{bucket}/md5", body=data, headers={"content-md5": "not-base64!"})
    assert (r.status, r.error_code()) == (400, "InvalidDigest"), r
    r = raw.request("PUT", f"/{bucket}/md5", body=data,
                    headers={"content-md5": base64.b64encode(b"short").decode()})
    assert (r.status, r.error_code()) == (400, "InvalidDigest"), r
    # Same with UNSIGNED-PAYLOAD (no sha256 to catch it first).
    r = raw.request("PUT", f"/{bucket}/md5", body=data, headers={"content-md5": wrong},
                    payload_hash=UNSIGNED)
    assert (r.status, r.error_code()) == (400, "BadDigest"), r
    check_clean(srv, raw, bucket, ["keep"], before)
    # UploadPart with a wrong Content-MD5 leaves no part.
    uid = _create_upload(raw, bucket, "mp")
    r = raw.request("PUT", f"/{bucket}/mp", query=[("partNumber", "1"), ("uploadId", uid)],
                    body=data, headers={"content-md5": wrong})
    assert (r.status, r.error_code()) == (400, "BadDigest"), r
    r = raw.request("GET", f"/{bucket}/mp", query=[("uploadId", uid)])
    assert r.status == 200 and b"<Part>" not in r.body, r
    assert raw.request("DELETE", f"/{bucket}/mp", query=[("uploadId", uid)]).status == 204
    # And the right one is accepted.
    right = base64.b64encode(hashlib.md5(data).digest()).decode()
    r = raw.request("PUT", f"/{bucket}/md5", body=data, headers={"content-md5": right})
    assert r.status == 200 and r.headers["etag"] == f'"{md5_hex(data)}"', r
    assert list_keys(raw, bucket) == ["keep", "md5"]


def test_bad_content_length(srv, raw, bucket):
    before = srv.data_files()
    h, _ = raw.sign_headers("PUT", f"/{bucket}/cl", payload_hash=UNSIGNED)
    head = f"PUT /{bucket}/cl HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
    for cl in ("-1", "abc", "99999999999999999999999", "1, 2"):
        status = _raw_exchange(srv, (head + f"Content-Length: {cl}\r\n\r\n").encode())
        assert status in (None, 400, 411, 413), (cl, status)
        assert health(srv) == 200
    check_clean(srv, raw, bucket, [], before)
