"""libwharf as a guest in someone else's process: what the host set stays as it was (signal
handlers), what a caller did not ask for is not invented (a multipart object's Content-Type),
a client from the environment alone takes the fastest path the server offers, and the
request timeouts fit multi-GB objects."""
import subprocess
import sys

import boto3
import pytest
from botocore.config import Config

import wharf
from conftest import make_client
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket

MiB = 1 << 20


def boto(srv):
    return boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(retries={"max_attempts": 1}))


# ---- Content-Type ------------------------------------------------------------------------

@pytest.mark.parametrize("provider", ["http", "ofi+tcp"])
def test_multipart_object_gets_the_single_put_content_type(wharfd, provider):
    """A multipart upload's initiation carries no Content-Type of its own: the object gets the
    default a single PUT gets, not application/xml (the type of the completion's body)."""
    c = make_client(wharfd, provider, multipart_threshold=5 * MiB, part_size=5 * MiB)
    b = unique_bucket("ct")
    try:
        c.create_bucket(b)
        c.put(b, "single", b"s" * MiB)
        rep = c.put(b, "multi", b"m" * (11 * MiB))
        assert rep.etag.endswith('-3"'), rep  # three parts: it did go multipart
        s3 = boto(wharfd)
        single = s3.head_object(Bucket=b, Key="single")["ContentType"]
        multi = s3.head_object(Bucket=b, Key="multi")["ContentType"]
        assert multi == single, (multi, single)
        assert multi != "application/xml"
        assert c.stat(b, "multi").content_type == single
    finally:
        for k in ("single", "multi"):
            try:
                c.delete(b, k)
            except wharf.WharfError:
                pass
        c.delete_bucket(b)
        c.close()
