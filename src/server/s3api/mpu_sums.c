/* SPDX-License-Identifier: Apache-2.0 */
/* The whole-object checksum of a multipart upload, as S3 negotiates it:
 * CreateMultipartUpload names an algorithm (x-amz-checksum-algorithm) and a type
 * (x-amz-checksum-type: COMPOSITE, the checksum of the parts' checksums with a "-<parts>"
 * suffix, or FULL_OBJECT, the checksum of all the bytes); CompleteMultipartUpload derives it
 * from the parts' stored checksums and answers it; GET and HEAD send it back.
 *
 * What is derived: CRC-32C, COMPOSITE or FULL_OBJECT, and CRC-64/NVME, FULL_OBJECT (every object
 * has that one). The store keeps both CRCs of every part, so neither needs the bytes again.
 * CRC-32, SHA-1 and SHA-256 are accepted as before (each part's value is verified when it
 * arrives) but give the object no whole-object value: the parts' values of those are not
 * kept. The choice lives in the upload's metadata JSON under the header names. */
#include "s3api/s3api.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const g_algos[] = {"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"};

int s3api_mpu_sum_request(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m)
{
    const char *a = front_hdr(r, S3API_MPU_SUM_ALGO), *t = front_hdr(r, S3API_MPU_SUM_TYPE);
    if (!a) {
        if (t)
            return s3h_err(o, S3_ERR_INVALID_REQUEST,
                           "x-amz-checksum-type is only valid together with "
                           "x-amz-checksum-algorithm");
        return 0;
    }
    const char *algo = NULL;
    for (size_t i = 0; i < WH_ARRAY_SIZE(g_algos); i++)
        if (strcasecmp(a, g_algos[i]) == 0)
            algo = g_algos[i];
    if (!algo)
        return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                        "x-amz-checksum-algorithm must be one of CRC32, CRC32C, CRC64NVME, SHA1 "
                        "or SHA256, not '%.40s'",
                        a);
    bool crc64 = strcmp(algo, "CRC64NVME") == 0, sha = strncmp(algo, "SHA", 3) == 0;
    const char *type = crc64 ? "FULL_OBJECT" : "COMPOSITE"; /* S3's defaults */
    if (t && strcasecmp(t, "COMPOSITE") == 0)
        type = "COMPOSITE";
    else if (t && strcasecmp(t, "FULL_OBJECT") == 0)
        type = "FULL_OBJECT";
    else if (t)
        return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                        "x-amz-checksum-type must be COMPOSITE or FULL_OBJECT, not '%.40s'", t);
    if ((crc64 && strcmp(type, "COMPOSITE") == 0) || (sha && strcmp(type, "FULL_OBJECT") == 0))
        return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                        "The %s checksum type cannot be used with the %s checksum algorithm", type,
                        algo);
    if (!crc64 && strcmp(algo, "CRC32C") != 0) {
        /* accepted (the parts' checksums are checked); no whole-object value (see above) */
        s3h_out_header(o, S3API_MPU_SUM_ALGO, algo);
        s3h_out_header(o, S3API_MPU_SUM_TYPE, type);
        return 0;
    }
    json_t *j = m->user_meta_json ? json_loads(m->user_meta_json, 0, NULL) : json_object();
    char *js = NULL;
    if (j && json_object_set_new(j, S3API_MPU_SUM_ALGO, json_string(algo)) == 0 &&
        json_object_set_new(j, S3API_MPU_SUM_TYPE, json_string(type)) == 0)
        js = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (!js)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the checksum algorithm");
    free(m->user_meta_json);
    m->user_meta_json = js;
    s3h_out_header(o, S3API_MPU_SUM_ALGO, algo);
    s3h_out_header(o, S3API_MPU_SUM_TYPE, type);
    return 0;
}

bool s3api_mpu_names_crc32c(const data_obj_meta_t *upload)
{
    json_t *j = upload->user_meta_json ? json_loads(upload->user_meta_json, 0, NULL) : NULL;
    const char *algo = json_string_value(json_object_get(j, S3API_MPU_SUM_ALGO));
    bool yes = algo && strcmp(algo, "CRC32C") == 0;
    json_decref(j);
    return yes;
}

int s3api_mpu_sum_complete(front_req_t *r, s3h_out_t *o, store_mpu_sums_t *sums)
{
    memset(sums, 0, sizeof *sums);
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    wh_status_t st =
        store_mpu_meta(s3h_st(r), s3h_b(r), s3h_k(r), front_route_q(&r->route, "uploadId"), &m);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "looking up the upload");
    json_t *j = m.user_meta_json ? json_loads(m.user_meta_json, 0, NULL) : NULL;
    const char *algo = json_string_value(json_object_get(j, S3API_MPU_SUM_ALGO));
    const char *type = json_string_value(json_object_get(j, S3API_MPU_SUM_TYPE));
    if (algo && type && strcmp(algo, "CRC32C") == 0)
        sums->crc32c =
            strcmp(type, "FULL_OBJECT") == 0 ? STORE_SUM_FULL_OBJECT : STORE_SUM_COMPOSITE;
    json_decref(j);
    data_obj_meta_free(&m);
    /* What the client expects of the whole object, checked before anything is committed. */
    sums->want_crc32c = front_hdr(r, "x-amz-checksum-crc32c");
    sums->want_crc64nvme = front_hdr(r, "x-amz-checksum-crc64nvme");
    return 0;
}
