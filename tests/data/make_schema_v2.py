"""Writes tests/data/schema-v2.tar.gz: a data directory written by wharfd at metadata schema
version 2 (the release before users, keys and ACLs), for the migration test
(tests/func/test_access_users.py). Run once with that release's build:

    WHARF_BUILD_DIR=/path/to/old/build PYTHONPATH=tests/lib /usr/bin/python3 \
        tests/data/make_schema_v2.py tests/data/schema-v2.tar.gz

The objects' bytes are a repeating pattern (so the archive stays small) and manifest.json,
inside the archive, lists each object's size, MD5 and SHA-256, and the upload left in
progress."""
import hashlib
import json
import os
import sys
import tarfile
import tempfile

import boto3
from botocore.config import Config

from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer

MIB = 1 << 20


def pattern(tag, n):
    line = (tag + " wharf schema-v2 fixture\n").encode()
    return (line * (n // len(line) + 1))[:n]


def main(out):
    tmp = tempfile.mkdtemp(prefix="wharf-v2-")
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    srv = WharfServer(data_dir=data, providers="none")
    srv.start()
    s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                      aws_secret_access_key=SECRET_KEY, region_name=REGION,
                      config=Config(s3={"addressing_style": "path"}))
    objs = {}

    def put(bucket, key, body, **kw):
        s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)
        objs[f"{bucket}/{key}"] = {"bucket": bucket, "key": key, "size": len(body),
                                  "md5": hashlib.md5(body).hexdigest(),
                                  "sha256": hashlib.sha256(body).hexdigest()}

    for b in ("alpha", "beta", "gamma-empty"):
        s3.create_bucket(Bucket=b)
    put("alpha", "hello.txt", b"hello, schema 2\n", ContentType="text/plain")
    put("alpha", "dir/nested/obj.bin", pattern("nested", 300_000),
        Metadata={"origin": "schema-v2"})
    put("alpha", "empty", b"")
    put("beta", "caf\u00e9/\u00fcml\u00e4ut", pattern("utf8", 4096))
    # A completed multipart object of two parts.
    mp = s3.create_multipart_upload(Bucket="beta", Key="multi.bin", ContentType="x-test/multi")
    p1, p2 = pattern("part-1", 5 * MIB), pattern("part-2", 1 * MIB + 17)
    e1 = s3.upload_part(Bucket="beta", Key="multi.bin", UploadId=mp["UploadId"], PartNumber=1,
                        Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket="beta", Key="multi.bin", UploadId=mp["UploadId"], PartNumber=2,
                        Body=p2)["ETag"]
    s3.complete_multipart_upload(Bucket="beta", Key="multi.bin", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                                            {"PartNumber": 2, "ETag": e2}]})
    body = p1 + p2
    objs["beta/multi.bin"] = {"bucket": "beta", "key": "multi.bin", "size": len(body),
                              "md5": hashlib.md5(body).hexdigest(),
                              "sha256": hashlib.sha256(body).hexdigest()}
    # An upload left in progress, with one part.
    up = s3.create_multipart_upload(Bucket="alpha", Key="pending.bin")
    pp = pattern("pending", 5 * MIB)
    pe = s3.upload_part(Bucket="alpha", Key="pending.bin", UploadId=up["UploadId"],
                        PartNumber=1, Body=pp)["ETag"]
    srv.stop()
    for f in ("wharfd.log", "wharfd.sock"):
        if os.path.exists(os.path.join(data, f)):
            os.remove(os.path.join(data, f))
    manifest = {"schema_version": 2, "objects": sorted(objs.values(), key=lambda o: (o["bucket"], o["key"])),
                "buckets": ["alpha", "beta", "gamma-empty"],
                "pending": {"bucket": "alpha", "key": "pending.bin",
                            "upload_id": up["UploadId"], "part_etag": pe.strip('"'),
                            "part_sha256": hashlib.sha256(pp).hexdigest()},
                "access_key": ACCESS_KEY, "secret_key": SECRET_KEY}
    with open(os.path.join(data, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=True)
    with tarfile.open(out, "w:gz") as t:
        t.add(data, arcname="schema-v2")
    print(f"wrote {out}: {len(objs)} objects, {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
