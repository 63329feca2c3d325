# SPDX-License-Identifier: Apache-2.0
"""Bucket lifecycle against a real wharfd with boto3: the LifecycleConfiguration round trip
and its refusals, then the lifecycle worker applying rules, with the test-only setting
WHARF_LIFECYCLE_DAY_SECONDS=1 (one "day" is one second) and --lifecycle-period 1: expiration
by days and by date, prefix / tag / size filters, noncurrent versions beyond
NewerNoncurrentVersions, expired delete markers, incomplete multipart uploads, Disabled rules,
and every object that no rule names left as it was."""
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, WharfServer, assert_start_refused,
                    unique_bucket, wait_until)

FAR = 100000  # days: never within a test


@pytest.fixture(scope="module")
def srv():
    s = WharfServer(extra_args=["--lifecycle-period", "1"],
                    env={"WHARF_LIFECYCLE_DAY_SECONDS": "1"})
    s.start()
    yield s
    s.stop()
    s.cleanup()


@pytest.fixture(scope="module")
def s3(srv):
    return boto3.session.Session().client(
        "s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def code(e):
    return e.value.response["Error"]["Code"]


def message(e):
    return e.value.response["Error"]["Message"]


def new_bucket(s3, versioned=False):
    b = unique_bucket("lc")
    s3.create_bucket(Bucket=b)
    if versioned:
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return b


def put_lc(s3, bucket, rules):
    s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                          LifecycleConfiguration={"Rules": rules})


def keys(s3, bucket):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def passes(srv):
    return srv.metric_sum("wharf_lifecycle_passes_total")


def wait_passes(srv, n=2):
    """Waits until n more whole lifecycle passes have run."""
    start = passes(srv)
    assert wait_until(lambda: passes(srv) >= start + n + 1, timeout=20), "no lifecycle passes"


# ---- the configuration ----

def test_round_trip_and_delete(s3):
    b = new_bucket(s3)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=b)
    assert code(e) == "NoSuchLifecycleConfiguration"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    rules = [
        {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
         "Expiration": {"Days": FAR}},
        {"ID": "tagged", "Status": "Disabled",
         "Filter": {"And": {"Prefix": "t/", "Tags": [{"Key": "k", "Value": "v"}],
                            "ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 1000}},
         "NoncurrentVersionExpiration": {"NoncurrentDays": FAR, "NewerNoncurrentVersions": 3}},
        {"ID": "uploads", "Status": "Enabled", "Filter": {"Prefix": ""},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": FAR}},
        {"ID": "markers", "Status": "Enabled", "Filter": {"Tag": {"Key": "a", "Value": "b"}},
         "Expiration": {"Date": "2100-01-01T00:00:00Z"}},
        {"ID": "dm", "Status": "Enabled", "Filter": {"ObjectSizeLessThan": 5},
         "Expiration": {"ExpiredObjectDeleteMarker": True}},
    ]
    put_lc(s3, b, rules)
    got = s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert [r["ID"] for r in got] == ["logs", "tagged", "uploads", "markers", "dm"]
    assert got[0]["Filter"] == {"Prefix": "logs/"} and got[0]["Expiration"] == {"Days": FAR}
    assert got[1]["Status"] == "Disabled"
    assert got[1]["Filter"]["And"] == rules[1]["Filter"]["And"]
    assert got[1]["NoncurrentVersionExpiration"] == {"NoncurrentDays": FAR,
                                                    "NewerNoncurrentVersions": 3}
    assert got[2]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": FAR}
    assert got[3]["Filter"] == {"Tag": {"Key": "a", "Value": "b"}}
    assert got[3]["Expiration"]["Date"].year == 2100
    assert got[4]["Expiration"] == {"ExpiredObjectDeleteMarker": True}
    # The legacy form: a rule's top-level Prefix (PutBucketLifecycle).
    s3.put_bucket_lifecycle(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "old", "Prefix": "x/", "Status": "Enabled", "Expiration": {"Days": FAR}}]})
    got = s3.get_bucket_lifecycle(Bucket=b)["Rules"]
    assert got[0]["Prefix"] == "x/" and got[0]["Expiration"] == {"Days": FAR}
    s3.delete_bucket_lifecycle(Bucket=b)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=b)
    assert code(e) == "NoSuchLifecycleConfiguration"
    s3.delete_bucket(Bucket=b)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=b)
    assert code(e) == "NoSuchBucket"


def one(rule):
    r = {"ID": "r", "Status": "Enabled", "Filter": {"Prefix": "p/"}}
    r.update(rule)
    return [r]


@pytest.mark.parametrize("rules,err,words", [
    (one({"Transitions": [{"Days": 30, "StorageClass": "GLACIER"}]}), "NotImplemented",
     "transition"),
    (one({"NoncurrentVersionTransitions": [{"NoncurrentDays": 30, "StorageClass": "GLACIER"}]}),
     "NotImplemented", "transition"),
    (one({"Expiration": {"Days": 0}}), "InvalidArgument", "Days"),
    (one({"Expiration": {"Date": "2030-01-01T12:00:00Z"}}), "InvalidArgument", "midnight"),
    (one({"Expiration": {"Days": 1, "ExpiredObjectDeleteMarker": True}}), "InvalidArgument",
     "only one"),
    (one({"Status": "Maybe", "Expiration": {"Days": 1}}), "MalformedXML", "Status"),
    (one({}), "MalformedXML", "no action"),
    (one({"Prefix": "a/", "Expiration": {"Days": 1}}), "MalformedXML", "Filter"),
    (one({"Filter": {"Prefix": "a", "Tag": {"Key": "k", "Value": "v"}},
          "Expiration": {"Days": 1}}), "MalformedXML", "And"),
    (one({"Filter": {"And": {"ObjectSizeGreaterThan": 100, "ObjectSizeLessThan": 50}},
          "Expiration": {"Days": 1}}), "InvalidArgument", "ObjectSizeGreaterThan"),
    (one({"Filter": {"Tag": {"Key": "k", "Value": "v"}},
          "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}), "InvalidArgument",
     "AbortIncompleteMultipartUpload"),
    ([{"ID": "same", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}}] * 2,
     "InvalidArgument", "same"),
    ([{"ID": f"r{i}", "Status": "Enabled", "Filter": {"Prefix": f"{i}/"},
       "Expiration": {"Days": 1}} for i in range(1001)], "MalformedXML", "1000"),
])
def test_refusals(s3, rules, err, words):
    b = new_bucket(s3)
    try:
        with pytest.raises(ClientError) as e:
            put_lc(s3, b, rules)
        assert code(e) == err, message(e)
        assert words.lower() in message(e).lower(), message(e)
        with pytest.raises(ClientError) as e:
            s3.get_bucket_lifecycle_configuration(Bucket=b)
        assert code(e) == "NoSuchLifecycleConfiguration"  # nothing kept
    finally:
        s3.delete_bucket(Bucket=b)


def test_thousand_rules_taken(s3):
    b = new_bucket(s3)
    rules = [{"ID": f"r{i}", "Status": "Enabled", "Filter": {"Prefix": f"{i}/"},
              "Expiration": {"Days": FAR}} for i in range(1000)]
    put_lc(s3, b, rules)
    assert len(s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]) == 1000
    s3.delete_bucket(Bucket=b)


# ---- the worker ----

def test_expiration_days_date_and_filters(srv, s3):
    b = new_bucket(s3)
    body = {"logs/a": b"a", "logs/b": b"b", "keep/c": b"c" * 7, "old/x": b"x",
            "new/y": b"y", "t/tagged": b"1", "t/other": b"2", "t/none": b"3",
            "s/big": b"B" * 200, "s/small": b"s" * 10, "far/z": b"z"}
    tags = {"t/tagged": "k=v", "t/other": "k=w"}
    for k, v in body.items():
        s3.put_object(Bucket=b, Key=k, Body=v, Tagging=tags.get(k, ""))
    before = srv.metric_sum("wharf_lifecycle_objects_expired_total")
    put_lc(s3, b, [
        {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
         "Expiration": {"Days": 1}},
        {"ID": "date-past", "Status": "Enabled", "Filter": {"Prefix": "old/"},
         "Expiration": {"Date": "2020-01-01T00:00:00Z"}},
        {"ID": "date-future", "Status": "Enabled", "Filter": {"Prefix": "new/"},
         "Expiration": {"Date": "2100-01-01T00:00:00Z"}},
        {"ID": "tag", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "t/", "Tags": [{"Key": "k", "Value": "v"}]}},
         "Expiration": {"Days": 1}},
        {"ID": "size", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "s/", "ObjectSizeGreaterThan": 100}},
         "Expiration": {"Days": 1}},
        {"ID": "far", "Status": "Enabled", "Filter": {"Prefix": "far/"},
         "Expiration": {"Days": FAR}},
    ])
    gone = {"logs/a", "logs/b", "old/x", "t/tagged", "s/big"}
    kept = sorted(set(body) - gone)
    assert wait_until(lambda: keys(s3, b) == kept, timeout=20), keys(s3, b)
    wait_passes(srv)
    assert keys(s3, b) == kept
    for k in kept:  # untouched, byte for byte
        assert s3.get_object(Bucket=b, Key=k)["Body"].read() == body[k]
    assert srv.metric_sum("wharf_lifecycle_objects_expired_total") - before >= len(gone)


def test_disabled_rule_does_nothing(srv, s3):
    b = new_bucket(s3)
    for i in range(3):
        s3.put_object(Bucket=b, Key=f"d/{i}", Body=b"keep")
    put_lc(s3, b, [{"ID": "off", "Status": "Disabled", "Filter": {},
                    "Expiration": {"Days": 1}},
                   {"ID": "off2", "Status": "Disabled", "Filter": {"Prefix": ""},
                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}])
    up = s3.create_multipart_upload(Bucket=b, Key="d/mpu")["UploadId"]
    time.sleep(2)
    wait_passes(srv, 3)
    assert keys(s3, b) == ["d/0", "d/1", "d/2"]
    assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=b).get("Uploads", [])] == [up]


def versions(s3, b, prefix):
    r = s3.list_object_versions(Bucket=b, Prefix=prefix)
    vs = [(v["Key"], v["VersionId"], v["IsLatest"], False) for v in r.get("Versions", [])]
    vs += [(m["Key"], m["VersionId"], m["IsLatest"], True) for m in r.get("DeleteMarkers", [])]
    return vs


def test_versioned_expiration_and_noncurrent(srv, s3):
    b = new_bucket(s3, versioned=True)
    ids = [s3.put_object(Bucket=b, Key="nc/k", Body=f"v{i}".encode())["VersionId"]
           for i in range(5)]
    cur = s3.put_object(Bucket=b, Key="cur/k", Body=b"current")["VersionId"]
    other = [s3.put_object(Bucket=b, Key="other/k", Body=f"o{i}".encode())["VersionId"]
             for i in range(3)]
    before = srv.metric_sum("wharf_lifecycle_versions_expired_total")
    put_lc(s3, b, [
        {"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "nc/"},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 2}},
        {"ID": "cur", "Status": "Enabled", "Filter": {"Prefix": "cur/"},
         "Expiration": {"Days": 1}},
    ])
    # nc/k: the current version and the two newest noncurrent ones stay.
    want = {ids[4], ids[3], ids[2]}
    assert wait_until(lambda: {v[1] for v in versions(s3, b, "nc/")} == want, timeout=20), \
        versions(s3, b, "nc/")
    assert s3.get_object(Bucket=b, Key="nc/k")["Body"].read() == b"v4"
    # cur/k: expiring the current version of a versioned bucket makes a delete marker; the
    # bytes stay as a noncurrent version (no rule removes those here).
    def marker_made():
        vs = versions(s3, b, "cur/")
        return len(vs) == 2 and any(v[3] and v[2] for v in vs) and \
            any(v[1] == cur and not v[2] for v in vs)
    assert wait_until(marker_made, timeout=20), versions(s3, b, "cur/")
    assert s3.get_object(Bucket=b, Key="cur/k", VersionId=cur)["Body"].read() == b"current"
    wait_passes(srv)
    assert {v[1] for v in versions(s3, b, "nc/")} == want
    assert sorted(v[1] for v in versions(s3, b, "other/")) == sorted(other)
    assert srv.metric_sum("wharf_lifecycle_versions_expired_total") - before >= 2


def test_expired_delete_markers(srv, s3):
    b = new_bucket(s3, versioned=True)
    only = s3.put_object(Bucket=b, Key="dm/only", Body=b"1")["VersionId"]
    s3.delete_object(Bucket=b, Key="dm/only")
    s3.delete_object(Bucket=b, Key="dm/only", VersionId=only)  # the marker alone is left
    two = s3.put_object(Bucket=b, Key="dm/two", Body=b"2")["VersionId"]
    s3.delete_object(Bucket=b, Key="dm/two")  # a marker over a version: kept
    s3.put_object(Bucket=b, Key="x/k", Body=b"x")["VersionId"]
    s3.delete_object(Bucket=b, Key="x/k")
    vx = [v for v in versions(s3, b, "x/")]
    s3.delete_object(Bucket=b, Key="x/k", VersionId=[v[1] for v in vx if not v[3]][0])
    before = srv.metric_sum("wharf_lifecycle_markers_removed_total")
    put_lc(s3, b, [{"ID": "dm", "Status": "Enabled", "Filter": {"Prefix": "dm/"},
                    "Expiration": {"ExpiredObjectDeleteMarker": True}}])
    assert wait_until(lambda: versions(s3, b, "dm/only") == [], timeout=20)
    wait_passes(srv)
    vs = versions(s3, b, "dm/two")
    assert len(vs) == 2 and any(v[1] == two for v in vs)
    assert len(versions(s3, b, "x/")) == 1  # outside the filter: its lone marker stays
    assert srv.metric_sum("wharf_lifecycle_markers_removed_total") - before == 1


def test_abort_incomplete_uploads(srv, s3):
    b = new_bucket(s3)
    a = s3.create_multipart_upload(Bucket=b, Key="mp/a")["UploadId"]
    s3.upload_part(Bucket=b, Key="mp/a", UploadId=a, PartNumber=1, Body=b"p" * 1000)
    keep = s3.create_multipart_upload(Bucket=b, Key="other/b")["UploadId"]
    before = srv.metric_sum("wharf_lifecycle_uploads_aborted_total")
    put_lc(s3, b, [{"ID": "mpu", "Status": "Enabled", "Filter": {"Prefix": "mp/"},
                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}])

    def uploads():
        return sorted(u["UploadId"] for u in
                      s3.list_multipart_uploads(Bucket=b).get("Uploads", []))
    assert wait_until(lambda: uploads() == [keep], timeout=20), uploads()
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=b, Key="mp/a", UploadId=a)
    assert code(e) == "NoSuchUpload"
    wait_passes(srv)
    assert uploads() == [keep]
    assert srv.metric_sum("wharf_lifecycle_uploads_aborted_total") - before == 1


def test_bad_day_setting_refused():
    s = WharfServer(env={"WHARF_LIFECYCLE_DAY_SECONDS": "0"})
    try:
        with pytest.raises(Exception):
            s.start(timeout=5)
        assert "WHARF_LIFECYCLE_DAY_SECONDS" in s.log_tail()
    finally:
        s.kill()
        s.cleanup()


def test_cluster_one_gateway_runs_lifecycle():
    """Two gateways over PostgreSQL: rules are applied, by the one holding the maintenance
    lock only; the other runs no passes."""
    import pgserver
    reason = pgserver.missing_reason()
    if reason:
        pytest.skip(reason)
    from cluster import Cluster
    with Cluster(storage=2, gateways=2, replicas=2, providers="none",
                 gateway_args=["--lifecycle-period", "1"],
                 env={"WHARF_LIFECYCLE_DAY_SECONDS": "1"}) as c:
        s3 = c.boto3()
        b = unique_bucket("lcc")
        s3.create_bucket(Bucket=b)
        for k in ("exp/a", "exp/b", "keep/c"):
            s3.put_object(Bucket=b, Key=k, Body=k.encode() * 100)
        put_lc(s3, b, [{"ID": "e", "Status": "Enabled", "Filter": {"Prefix": "exp/"},
                        "Expiration": {"Days": 1}}])
        assert wait_until(lambda: keys(s3, b) == ["keep/c"], timeout=30), keys(s3, b)
        assert s3.get_object(Bucket=b, Key="keep/c")["Body"].read() == b"keep/c" * 100
        p = [g.metric_sum("wharf_lifecycle_passes_total") for g in c.gateways]
        assert sorted(p)[0] == 0 and sorted(p)[1] >= 1, p
        leader = c.gateways[p.index(max(p))]
        assert leader.metric_sum("wharf_lifecycle_objects_expired_total") == 2


def test_pass_is_bounded_and_resumes(srv, s3):
    """1500 expiring objects: no pass takes more than 1000 actions in a bucket, and the next
    passes finish the work."""
    import re
    from concurrent.futures import ThreadPoolExecutor
    b = new_bucket(s3)
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: s3.put_object(Bucket=b, Key=f"many/{i:05d}", Body=b"x"),
                    range(1500)))
    s3.put_object(Bucket=b, Key="zz/keep", Body=b"keep")
    put_lc(s3, b, [{"ID": "many", "Status": "Enabled", "Filter": {"Prefix": "many/"},
                    "Expiration": {"Days": 1}}])

    def left():
        return s3.list_objects_v2(Bucket=b, Prefix="many/").get("KeyCount", 0)
    assert wait_until(lambda: left() == 0, timeout=60), left()
    acts = [int(m) for m in re.findall(rf"pass bucket={b} actions=(\d+)", srv.log_tail(10**7))]
    assert sum(acts) == 1500 and len(acts) >= 2 and max(acts) <= 1000, acts
    assert keys(s3, b) == ["zz/keep"]


def test_configuration_survives_restart(tmp_path):
    """The configuration is kept with the bucket (schema step 6), and is applied after a
    restart."""
    s = WharfServer(data_dir=str(tmp_path), extra_args=["--lifecycle-period", "1"],
                    env={"WHARF_LIFECYCLE_DAY_SECONDS": "1"})
    try:
        s.start()

        def client():
            return boto3.session.Session().client(
                "s3", endpoint_url=s.endpoint, aws_access_key_id=ACCESS_KEY,
                aws_secret_access_key=SECRET_KEY, region_name=REGION,
                config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        c = client()
        c.create_bucket(Bucket="lcr")
        put_lc(c, "lcr", [{"ID": "r", "Status": "Enabled", "Filter": {"Prefix": "e/"},
                           "Expiration": {"Days": FAR}}])
        s.stop()
        s.start()
        c = client()  # the port may differ
        got = c.get_bucket_lifecycle_configuration(Bucket="lcr")["Rules"]
        assert [(r["ID"], r["Expiration"]) for r in got] == [("r", {"Days": FAR})]
        c.put_object(Bucket="lcr", Key="e/x", Body=b"x")
        put_lc(c, "lcr", [{"ID": "r", "Status": "Enabled", "Filter": {"Prefix": "e/"},
                           "Expiration": {"Days": 1}}])
        assert wait_until(lambda: keys(c, "lcr") == [], timeout=20)
    finally:
        s.stop()
        s.cleanup()


@pytest.mark.parametrize("value", ["0", "x", "604801"])
def test_bad_period_refused(value):
    assert_start_refused(["--lifecycle-period", value], "--lifecycle-period wants seconds")
