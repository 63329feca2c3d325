# SPDX-License-Identifier: Apache-2.0
"""ListMultipartUploads pages: following NextKeyMarker / NextUploadIdMarker through pages of any
size gives exactly the unpaged listing, which is exactly the uploads made (by key, then by
initiation time, then upload id, several uploads of one key included), with prefixes, delimiters (CommonPrefixes
rolled up and skipped as a whole), a key-marker that is a CommonPrefix, and a key that ends in
the delimiter (a key-marker with an upload-id-marker is a key, not a CommonPrefix). The server
reads each page from the metadata page by page (max-uploads + 1 rows, a CommonPrefix skipped at
once; the rows a page reads are tests/unit/meta/test_meta.c's). Against a real wharfd with
boto3.
"""
import boto3
import pytest
from botocore.config import Config

from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket

KEYS = ["a", "a/1", "a/2", "a/b/1", "a/b/2", "a/c", "b", "b/x/1", "c", "c/", "c//d", "dd"]
MULTI = {"a/2": 3, "b": 2, "c": 4}  # several uploads of one key


@pytest.fixture(scope="module")
def s3(wharfd):
    return boto3.client("s3", endpoint_url=wharfd.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


@pytest.fixture(scope="module")
def made(s3):
    b = unique_bucket("lsup")
    s3.create_bucket(Bucket=b)
    ups = []
    for k in KEYS:
        for _ in range(MULTI.get(k, 1)):
            ups.append((k, s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]))
    return b, ups


def _listing(s3, b, page, **kw):
    """Every page, followed by its markers: (uploads [(key, id)], prefixes [p], pages)."""
    ups, cps, pages = [], [], 0
    args = dict(kw)
    for _ in range(500):
        r = s3.list_multipart_uploads(Bucket=b, MaxUploads=page, **args)
        pages += 1
        got = [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        got_cp = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        assert len(got) + len(got_cp) <= page
        ups += got
        cps += got_cp
        if not r["IsTruncated"]:
            return ups, cps, pages
        assert len(got) + len(got_cp) == page
        args["KeyMarker"] = r["NextKeyMarker"]
        args["UploadIdMarker"] = r.get("NextUploadIdMarker", "")
    raise AssertionError("no end after 500 pages")


def _expected(ups, prefix="", delim=None):
    out_u, out_cp = [], []
    for k, uid in ups:  # created in key order, and within a key in initiation order
        if not k.startswith(prefix):
            continue
        rest = k[len(prefix):]
        if delim and delim in rest:
            cp = prefix + rest[:rest.index(delim) + len(delim)]
            if cp not in out_cp:
                out_cp.append(cp)
            continue
        out_u.append((k, uid))
    return out_u, out_cp


@pytest.mark.parametrize("prefix,delim", [("", None), ("", "/"), ("a/", "/"), ("a", None),
                                          ("c/", "/"), ("zz", "/")])
@pytest.mark.parametrize("page", [1, 2, 3, 5, 1000])
def test_pages_give_the_whole_listing(s3, made, prefix, delim, page):
    b, ups = made
    kw = {"Prefix": prefix}
    if delim:
        kw["Delimiter"] = delim
    got_u, got_cp, _ = _listing(s3, b, page, **kw)
    want_u, want_cp = _expected(sorted(ups, key=lambda t: t[0]), prefix, delim)
    assert [k for k, _ in got_u] == [k for k, _ in want_u]
    assert sorted(got_u) == sorted(want_u)
    assert got_cp == want_cp
    # Pages give exactly the unpaged order (within a key: initiation time, then upload id).
    all_u, all_cp, _ = _listing(s3, b, 1000, **kw)
    assert got_u == all_u and got_cp == all_cp


def test_key_marker_that_is_a_common_prefix_skips_it(s3, made):
    b, ups = made
    r = s3.list_multipart_uploads(Bucket=b, Delimiter="/", KeyMarker="a/")
    keys = [u["Key"] for u in r.get("Uploads", [])]
    assert all(not k.startswith("a/") for k in keys), keys
    assert "b" in keys and [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["b/", "c/"]


def test_upload_id_marker_within_a_key(s3, made):
    b, ups = made
    all_u, _, _ = _listing(s3, b, 1000)
    cs = [u for k, u in all_u if k == "c"]
    assert len(cs) == 4
    r = s3.list_multipart_uploads(Bucket=b, KeyMarker="c", UploadIdMarker=cs[1])
    got = [(u["Key"], u["UploadId"]) for u in r["Uploads"]]
    assert got[:2] == [("c", cs[2]), ("c", cs[3])], got
    assert got[2][0] == "c/"


def test_pages_of_one_key_across_seconds(s3):
    """Uploads of one key initiated in different seconds are listed by time, then id: paging
    with the upload-id-marker follows that order (a marker compared by id alone showed an
    upload twice, or looped, once a later upload had a smaller id). Uploads are made a second
    apart until such a pair exists (bounded: 8 uploads)."""
    import time
    b = unique_bucket("lsup-sec")
    s3.create_bucket(Bucket=b)
    ids = []
    for _ in range(8):
        ids.append(s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"])
        if any(later < earlier for i, earlier in enumerate(ids) for later in ids[i + 1:]):
            break
        time.sleep(1.05)
    ids.append(s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"])
    whole = [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=b)["Uploads"]]
    assert sorted(whole) == sorted(ids)
    for page in (1, 2):
        got, _, pages = _listing(s3, b, page)
        assert [i for _, i in got] == whole, (page, got, whole)
        assert pages <= len(ids) // page + 1
