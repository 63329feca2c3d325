#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""How long a DELETE of a large object takes, for two wharfd builds, paired A B A B.

  /usr/bin/python3 bench/delete_large.py BUILD_A BUILD_B [--gib 2] [--repeats 3] [--rounds 2]
      [--data DIR]

Each round starts a fresh wharfd of each build on DIR/<side> (default under /root: a disk,
not tmpfs), PUTs one object of --gib GiB with boto3, DELETEs it, and times the DELETE's
round trip, --repeats times (2 s apart, so the last one's work is done); it prints the
times and wharf_storage_reclaimed_files_total (None: a build without it)."""
import argparse
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_a")
    ap.add_argument("build_b")
    ap.add_argument("--gib", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--data", default="/root/wharf-delete-large")
    a = ap.parse_args()
    data = os.urandom(1 << 20) * (a.gib * 1024)
    for rnd in range(a.rounds):
        for side, build in (("A", a.build_a), ("B", a.build_b)):
            os.environ["WHARF_BUILD_DIR"] = os.path.abspath(build)
            d = os.path.join(a.data, side)
            shutil.rmtree(d, ignore_errors=True)
            s = WharfServer(data_dir=d)
            s.start()
            try:
                c = boto3.session.Session().client(
                    "s3", endpoint_url=s.endpoint, aws_access_key_id=ACCESS_KEY,
                    aws_secret_access_key=SECRET_KEY, region_name=REGION,
                    config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
                c.create_bucket(Bucket="bench-delete")
                ts = []
                for _ in range(a.repeats):
                    c.put_object(Bucket="bench-delete", Key="k", Body=data)
                    t = time.perf_counter()
                    c.delete_object(Bucket="bench-delete", Key="k")
                    ts.append(time.perf_counter() - t)
                    time.sleep(2)
                rec = s.metrics().get("wharf_storage_reclaimed_files_total")
            finally:
                s.stop()
                s.cleanup()
                shutil.rmtree(d, ignore_errors=True)
            print(f"{side} ({build}) round {rnd + 1}: DELETE of {a.gib} GiB "
                  f"{', '.join(f'{x:.3f}' for x in ts)} s; reclaimed files {rec}", flush=True)
    shutil.rmtree(a.data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
