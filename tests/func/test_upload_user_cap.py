# SPDX-License-Identifier: Apache-2.0
"""The cap on incomplete multipart uploads per principal, over every bucket
(--max-user-uploads, config key max-user-uploads): past it CreateMultipartUpload is 400
TooManyUploads naming the cap; another user is not counted against it; completing or aborting
an upload makes room again. (The per-bucket cap, --max-uploads, is test_s3_gaps.py's.)"""
import uuid

import pytest
from botocore.exceptions import ClientError

import users
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer, assert_start_refused, unique_bucket


def test_uploads_capped_per_user():
    srv = WharfServer(extra_args=["--max-user-uploads", "3", "--max-uploads", "100"])
    srv.start()
    try:
        root = users.client(srv, ACCESS_KEY, SECRET_KEY)
        alice = users.create_user(srv, f"alice-{uuid.uuid4().hex[:8]}").boto3(srv)
        bob = users.create_user(srv, f"bob-{uuid.uuid4().hex[:8]}").boto3(srv)
        b1, b2 = unique_bucket("ucap"), unique_bucket("ucap2")
        alice.create_bucket(Bucket=b1)
        alice.create_bucket(Bucket=b2)
        policy = ('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",'
                  '"Action":["s3:PutObject","s3:AbortMultipartUpload"],'
                  f'"Resource":"arn:aws:s3:::{b1}/*"}}]}}')
        alice.put_bucket_policy(Bucket=b1, Policy=policy)
        ids = [alice.create_multipart_upload(Bucket=b, Key=f"k{i}")["UploadId"]
               for i, b in enumerate((b1, b2, b2))]
        # The fourth, in either bucket: refused, naming the cap; nothing made.
        for b in (b1, b2):
            with pytest.raises(ClientError) as e:
                alice.create_multipart_upload(Bucket=b, Key="one-too-many")
            assert e.value.response["Error"]["Code"] == "TooManyUploads"
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
            assert "--max-user-uploads 3" in e.value.response["Error"]["Message"]
        assert len(alice.list_multipart_uploads(Bucket=b2)["Uploads"]) == 2
        # Another user's uploads in the same bucket are its own count.
        up = bob.create_multipart_upload(Bucket=b1, Key="bobs")["UploadId"]
        root.create_multipart_upload(Bucket=b1, Key="roots")
        # Aborting one makes room again.
        alice.abort_multipart_upload(Bucket=b1, Key="k0", UploadId=ids[0])
        alice.create_multipart_upload(Bucket=b1, Key="fits-again")
        bob.abort_multipart_upload(Bucket=b1, Key="bobs", UploadId=up)
    finally:
        assert srv.stop() == 0
        srv.cleanup()


def test_bad_value_refused():
    assert_start_refused(["--max-user-uploads", "0"],
                         "--max-user-uploads wants a whole number from 1 to 100000000, got '0'")
