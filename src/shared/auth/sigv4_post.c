/* SPDX-License-Identifier: Apache-2.0 */
/* SigV4 of a browser POST form: the signature is the HMAC of the base64 policy with the same
 * signing key (auth_sigv4_signing_key) a header-signed request uses. */
#include "auth/sigv4.h"
#include "base/codec.h"
#include "base/digest.h"
#include "auth/sigv4_int.h"

#include <string.h>

void auth_sigv4_post_sign(const char *secret, const char *date8, const char *region,
                          const char *policy_b64, char out[65])
{
    uint8_t key[32], mac[32];
    auth_sigv4_signing_key(secret, date8, region, key);
    wh_hmac_sha256(key, sizeof key, policy_b64, strlen(policy_b64), mac);
    wh_hex_encode(mac, sizeof mac, out);
}

s3_err_t auth_sigv4_post_verify(const auth_post_auth_t *in, auth_secret_cb secret_cb, void *cb_arg,
                                char access_key[128], char *msg, size_t msglen)
{
    if (!in->algorithm || strcmp(in->algorithm, "AWS4-HMAC-SHA256") != 0)
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "x-amz-algorithm must be AWS4-HMAC-SHA256 (signature version 2 "
                       "forms are not served)");
    if (!in->credential || !in->amz_date || !in->signature)
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "a signed POST form needs x-amz-credential, x-amz-date and "
                       "x-amz-signature");
    sigv4_parsed_t p;
    memset(&p, 0, sizeof p);
    s3_err_t e = sigv4_parse_credential(in->credential, strlen(in->credential), &p,
                                        S3_ERR_INVALID_ARGUMENT, msg, msglen);
    if (e != S3_OK)
        return e;
    size_t dl = strlen(in->amz_date);
    if (!sigv4_amz_date_valid(in->amz_date, dl))
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "x-amz-date must be YYYYMMDDTHHMMSSZ, got '%.40s'", in->amz_date);
    if (memcmp(in->amz_date, p.date8, 8) != 0)
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "x-amz-date %.16s is not of the credential's date %s", in->amz_date,
                       p.date8);
    const char *secret = secret_cb(cb_arg, p.access_key);
    if (!secret)
        return s3_errf(S3_ERR_INVALID_ACCESS_KEY, msg, msglen,
                       "the access key in x-amz-credential does not exist");
    char want[65];
    auth_sigv4_post_sign(secret, p.date8, p.region, in->policy_b64, want);
    if (strlen(in->signature) != 64 || !sigv4_ct_equal(want, in->signature, 64))
        return s3_errf(S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                       "x-amz-signature does not match the policy signed with the key of "
                       "x-amz-credential");
    memcpy(access_key, p.access_key, sizeof p.access_key);
    return S3_OK;
}
