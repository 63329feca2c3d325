# SPDX-License-Identifier: Apache-2.0
"""kill -9 of wharfd around CompleteMultipartUpload, which composes the object from its parts'
files in one metadata transaction: after every restart each acknowledged object reads back
byte-exact (SHA-256), an unacknowledged one is either the whole new object or still its upload
with every part, and the data directory holds exactly the files the rows name (start-up
recovery keeps the files a composed object's extents name and removes the rest).

Bounded: at most ROUNDS kills and DEADLINE_S seconds."""
import hashlib
import os
import random
import threading
import time

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer

MIB = 1 << 20
ROUNDS = 14
DEADLINE_S = 150


def client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4", connect_timeout=5, read_timeout=20))


def files_under(d):
    n = 0
    for _, _, fs in os.walk(d):
        n += len(fs)
    return n


def check_store(srv, s3, bucket, acked, pending):
    """Every acknowledged key reads back exactly; an unacknowledged one is its whole object or
    its intact upload; objects/ holds exactly the files the rows name; tmp/ is empty."""
    want_files = 0
    for key, (digest, nparts) in acked.items():
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert hashlib.sha256(body).hexdigest() == digest, key
        want_files += nparts
    for key, (upload_id, digest, nparts) in list(pending.items()):
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as e:
            assert e.response["Error"]["Code"] == "NoSuchKey", e.response
            body = None
        got = hashlib.sha256(body).hexdigest() if body is not None else None
        if got == digest:
            # Committed, but the reply was lost to the kill: the new object, whole.
            del pending[key]
            want_files += nparts - (acked[key][1] if key in acked else 0)
            acked[key] = (digest, nparts)
            continue
        # Not committed: the old object (if any) whole, checked above, and the upload intact.
        assert got is None or (key in acked and got == acked[key][0]), key
        parts = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id).get("Parts", [])
        assert len(parts) == nparts, (key, parts)
        want_files += nparts
    assert files_under(os.path.join(srv.data_dir, "objects")) == want_files, srv.log_tail()
    assert files_under(os.path.join(srv.data_dir, "tmp")) == 0


def test_kill_around_complete(tmp_path):
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    d = tmp_path / "data"
    d.mkdir()
    srv = WharfServer(data_dir=str(d))
    srv.start()
    s3 = client(srv.endpoint)
    bucket = "crash"
    s3.create_bucket(Bucket=bucket)
    acked, pending = {}, {}
    outcomes = {"acked": 0, "lost_reply": 0, "not_committed": 0}
    t_end = time.monotonic() + DEADLINE_S
    rounds = 0
    try:
        while rounds < ROUNDS and time.monotonic() < t_end:
            rounds += 1
            key = f"k{rounds % 5}"  # overwrites: completing replaces composed objects
            sizes = [5 * MIB] * rng.randint(1, 3) + [rng.randint(1, 300000)]
            data = os.urandom(sum(sizes))
            digest = hashlib.sha256(data).hexdigest()
            u = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            parts, off = [], 0
            for i, n in enumerate(sizes, 1):
                r = s3.upload_part(Bucket=bucket, Key=key, UploadId=u, PartNumber=i,
                                   Body=data[off:off + n])
                parts.append({"PartNumber": i, "ETag": r["ETag"]})
                off += n
            result = {}

            def complete():
                try:
                    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=u,
                                                 MultipartUpload={"Parts": parts})
                    result["ok"] = True
                except Exception as e:  # the kill: connection reset, or an error reply
                    result["err"] = e

            # The upload this key had pending before is superseded: S3 keeps it, and so
            # does this check (its parts stay until aborted).
            old = pending.pop(key, None)
            prev = acked.pop(key, None)
            th = threading.Thread(target=complete)
            th.start()
            # From before the request arrives to after its reply: most kills land while
            # the server parses, validates or commits.
            time.sleep(rng.uniform(0, 0.012))
            srv.kill()
            th.join(30)
            assert not th.is_alive()
            if result.get("ok"):
                outcomes["acked"] += 1
                acked[key] = (digest, len(sizes))
            else:
                pending[key] = (u, digest, len(sizes))
                if prev:  # the old object stays unless the new one committed
                    acked_prev = prev
                else:
                    acked_prev = None
            srv.start()
            s3 = client(srv.endpoint)
            if old:
                # Abort the superseded upload so each key has at most one pending.
                s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=old[0])
            if not result.get("ok"):
                try:
                    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
                    got = hashlib.sha256(body).hexdigest()
                    if got == digest:  # committed; the reply was lost
                        outcomes["lost_reply"] += 1
                        del pending[key]
                        acked[key] = (digest, len(sizes))
                    else:  # the old object, whole
                        outcomes["not_committed"] += 1
                        assert acked_prev and got == acked_prev[0], key
                        acked[key] = acked_prev
                except ClientError as e:
                    outcomes["not_committed"] += 1
                    assert e.response["Error"]["Code"] == "NoSuchKey" and not acked_prev
            check_store(srv, s3, bucket, acked, pending)
        assert rounds >= 3
        print(f"rounds={rounds} outcomes={outcomes}")
        # A clean restart changes nothing, and after aborting the uploads only objects remain.
        srv.stop()
        srv.start()
        s3 = client(srv.endpoint)
        for key, (u, _, _) in list(pending.items()):
            s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=u)
            del pending[key]
        check_store(srv, s3, bucket, acked, pending)
    finally:
        srv.stop()
