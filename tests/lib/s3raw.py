# SPDX-License-Identifier: Apache-2.0
"""Signed raw S3 requests for tests that need control no SDK gives: exact bytes on the wire,
odd paths, broken bodies, half-sent uploads, hand-made aws-chunked streams.

SigV4 is implemented here from the AWS specification (not from the server's code), so a test
that passes proves the server agrees with an independent signer; test_s3raw_matches_botocore in
tests/func/test_badinput.py checks this signer against botocore's.

    raw = S3Raw(srv.endpoint)                      # credentials default to the test server's
    r = raw.request("PUT", "/bucket/key", body=b"x")
    r.status, r.headers["etag"], r.body, r.error_code()
    sock = raw.open_socket("PUT", "/b/k", content_length=1 << 25)   # headers sent, no body
"""
import datetime
import hashlib
import hmac
import http.client
import re
import socket
import urllib.parse

from wharfd import ACCESS_KEY, REGION, SECRET_KEY

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED = "UNSIGNED-PAYLOAD"
STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"


def uri_encode(s, keep_slash=True):
    """RFC 3986 encoding as SigV4 wants it: unreserved A-Za-z0-9-._~ kept, rest %XX."""
    return urllib.parse.quote(s, safe="/~" if keep_slash else "~")


def amz_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signing_key(secret, date, region, service="s3"):
    k = _hmac(("AWS4" + secret).encode(), date)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, "aws4_request")


def canonical_query(query):
    """query: list of (name, value) pairs or a dict; values may be None (for "?uploads")."""
    items = query.items() if isinstance(query, dict) else list(query or ())
    enc = sorted((uri_encode(k, False), uri_encode("" if v is None else str(v), False))
                 for k, v in items)
    return "&".join(f"{k}={v}" for k, v in enc)


def wire_query(query):
    items = query.items() if isinstance(query, dict) else list(query or ())
    parts = []
    for k, v in items:
        parts.append(uri_encode(k, False) if v is None
                     else f"{uri_encode(k, False)}={uri_encode(str(v), False)}")
    return "&".join(parts)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def error_code(self):
        m = re.search(rb"<Code>([^<]*)</Code>", self.body or b"")
        # Bodiless error replies (HEAD, x-amz-rdma-token requests) carry the code in a header.
        return m.group(1).decode() if m else self.headers.get("x-amz-error-code")

    def __repr__(self):
        return f"Response({self.status}, {self.error_code()!r}, {self.body[:300]!r})"


class S3Raw:
    def __init__(self, endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
                 unix_socket=None):
        """unix_socket: send over wharfd's Unix-domain socket instead of TCP (the Host header
        and the signature still name endpoint)."""
        self.unix_socket = unix_socket
        u = urllib.parse.urlsplit(endpoint)
        self.host = u.hostname
        self.port = u.port or 80
        self.netloc = u.netloc
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region

    # ---- signing ----
    def sign_headers(self, method, path, query=None, headers=None, payload_hash=EMPTY_SHA256,
                     amz_date=None, raw_path=False, access_key=None, secret_key=None,
                     region=None):
        """Returns (headers with host/x-amz-date/x-amz-content-sha256/Authorization, seed
        signature). path is encoded per segment unless raw_path (then used verbatim). Every
        header given is signed."""
        amz_date = amz_date or amz_now()
        date = amz_date[:8]
        region = region or self.region
        h = {"host": self.netloc, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash}
        for k, v in (headers or {}).items():
            h[k.lower()] = str(v)
        names = sorted(h)
        canon_headers = "".join(f"{n}:{' '.join(h[n].strip().split())}\n" for n in names)
        signed = ";".join(names)
        curi = path if raw_path else uri_encode(path)
        creq = "\n".join([method, curi, canonical_query(query), canon_headers, signed,
                          payload_hash])
        scope = f"{date}/{region}/s3/aws4_request"
        sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
        key = signing_key(secret_key or self.secret_key, date, region)
        sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        h["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key or self.access_key}/"
                              f"{scope}, SignedHeaders={signed}, Signature={sig}")
        return h, sig

    def presign(self, method, path, expires=300, query=None, amz_date=None):
        """A presigned URL path+query (append to the endpoint)."""
        amz_date = amz_date or amz_now()
        date = amz_date[:8]
        scope = f"{date}/{self.region}/s3/aws4_request"
        q = list((query.items() if isinstance(query, dict) else query) or ())
        q += [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
              ("X-Amz-Credential", f"{self.access_key}/{scope}"),
              ("X-Amz-Date", amz_date), ("X-Amz-Expires", str(expires)),
              ("X-Amz-SignedHeaders", "host")]
        creq = "\n".join([method, uri_encode(path), canonical_query(q),
                          f"host:{self.netloc}\n", "host", UNSIGNED])
        sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
        sig = hmac.new(signing_key(self.secret_key, date, self.region), sts.encode(),
                       hashlib.sha256).hexdigest()
        q.append(("X-Amz-Signature", sig))
        return f"{uri_encode(path)}?{wire_query(q)}"

    # ---- requests ----
    def _connection(self, timeout):
        if not self.unix_socket:
            return http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        path = self.unix_socket

        class _Unix(http.client.HTTPConnection):
            def connect(self):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(timeout)
                s.connect(path)
                self.sock = s
        return _Unix("localhost", timeout=timeout)

    def request(self, method, path, query=None, headers=None, body=b"", sign=True,
                payload_hash=None, raw_path=False, timeout=30, extra_unsigned=None, **sign_kw):
        """One request on a fresh connection. payload_hash defaults to sha256(body).
        extra_unsigned: headers sent but not signed."""
        if payload_hash is None:
            payload_hash = hashlib.sha256(body).hexdigest()
        if sign:
            h, _ = self.sign_headers(method, path, query, headers, payload_hash,
                                     raw_path=raw_path, **sign_kw)
        else:
            h = {k.lower(): str(v) for k, v in (headers or {}).items()}
        h.update({k.lower(): str(v) for k, v in (extra_unsigned or {}).items()})
        h.pop("host", None)
        url = (path if raw_path else uri_encode(path))
        q = wire_query(query)
        if q:
            url += "?" + q
        conn = self._connection(timeout)
        try:
            conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", self.netloc)
            for k, v in h.items():
                conn.putheader(k, v)
            if "content-length" not in h:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            r = conn.getresponse()
            data = r.read()
            return Response(r.status, r.getheaders(), data)
        finally:
            conn.close()

    def open_socket(self, method, path, content_length, query=None, headers=None,
                    payload_hash=UNSIGNED, timeout=30):
        """Sends a signed request's line and headers (Content-Length as given) and returns the
        connected socket, for the caller to send some body bytes and/or close."""
        h, _ = self.sign_headers(method, path, query, headers, payload_hash)
        h.pop("host")
        url = uri_encode(path)
        q = wire_query(query)
        if q:
            url += "?" + q
        lines = [f"{method} {url} HTTP/1.1", f"Host: {self.netloc}",
                 f"Content-Length: {content_length}"]
        lines += [f"{k}: {v}" for k, v in h.items()]
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return s

    # ---- aws-chunked bodies ----
    def chunked_signed(self, method, path, data, chunk_size=65536, headers=None,
                       tamper_chunk=None, amz_date=None, content_encoding="aws-chunked"):
        """(headers, body) for STREAMING-AWS4-HMAC-SHA256-PAYLOAD: every chunk signed and
        chained from the seed signature. tamper_chunk=i flips a byte of chunk i's data after
        signing (its signature no longer matches). content_encoding: the Content-Encoding
        sent (a list such as "gzip, aws-chunked" names the object's own encoding too)."""
        amz_date = amz_date or amz_now()
        hdrs = dict(headers or {})
        hdrs.update({"content-encoding": content_encoding,
                     "x-amz-decoded-content-length": str(len(data))})
        chunks = [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)] + [b""]
        body_len = sum(len(f"{len(c):x};chunk-signature=") + 64 + 2 + len(c) + 2
                       for c in chunks)
        hdrs["content-length"] = str(body_len)
        h, seed = self.sign_headers(method, path, None, hdrs, STREAMING_SIGNED,
                                    amz_date=amz_date)
        date = amz_date[:8]
        scope = f"{date}/{self.region}/s3/aws4_request"
        key = signing_key(self.secret_key, date, self.region)
        prev, out = seed, []
        for i, c in enumerate(chunks):
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, EMPTY_SHA256,
                             hashlib.sha256(c).hexdigest()])
            sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
            if tamper_chunk == i and c:
                c = bytes([c[0] ^ 1]) + c[1:]
            out.append(f"{len(c):x};chunk-signature={sig}\r\n".encode() + c + b"\r\n")
            prev = sig
        body = b"".join(out)
        assert len(body) == body_len
        return h, body

    def chunked_trailer(self, method, path, data, trailer_name, trailer_value, chunk_size=65536,
                        headers=None):
        """(headers, body) for STREAMING-UNSIGNED-PAYLOAD-TRAILER with one checksum trailer
        (e.g. x-amz-checksum-crc32c), as newer SDKs send it."""
        chunks = [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)]
        body = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks)
        body += f"0\r\n{trailer_name}:{trailer_value}\r\n\r\n".encode()
        hdrs = dict(headers or {})
        hdrs.update({"content-encoding": "aws-chunked",
                     "x-amz-decoded-content-length": str(len(data)),
                     "x-amz-trailer": trailer_name, "content-length": str(len(body))})
        h, _ = self.sign_headers(method, path, None, hdrs, STREAMING_UNSIGNED_TRAILER)
        return h, body

    def send_prepared(self, method, path, headers, body, timeout=30):
        """Sends headers exactly as prepared (already signed) with body."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.putrequest(method, uri_encode(path), skip_host=True, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders(body)
            r = conn.getresponse()
            return Response(r.status, r.getheaders(), r.read())
        finally:
            conn.close()
