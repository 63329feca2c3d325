/* SPDX-License-Identifier: Apache-2.0 */
/* AES-256-GCM sealing of small secrets. See seal.h. */
#include "base/seal.h"

#include "base/codec.h"
#include "base/digest.h"

#include <openssl/evp.h>
#include <string.h>

#define SEAL_PREFIX "g1:"
#define SEAL_NONCE 12
#define SEAL_TAG 16
#define SEAL_MAX_PT 512

int wh_seal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, const void *pt, size_t n,
            char *out, size_t outcap)
{
    uint8_t raw[SEAL_NONCE + SEAL_MAX_PT + SEAL_TAG];
    int len = 0, ok = 0;
    if (n > SEAL_MAX_PT || outcap < WH_SEAL_TEXT_LEN(n))
        return -1;
    if (wh_random_bytes(raw, SEAL_NONCE) != 0)
        return -1;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return -1;
    if (EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, raw) == 1 &&
        (!aad || EVP_EncryptUpdate(c, NULL, &len, (const uint8_t *)aad, (int)strlen(aad)) == 1) &&
        EVP_EncryptUpdate(c, raw + SEAL_NONCE, &len, pt, (int)n) == 1 &&
        EVP_EncryptFinal_ex(c, raw + SEAL_NONCE + len, &len) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SEAL_TAG, raw + SEAL_NONCE + n) == 1)
        ok = 1;
    EVP_CIPHER_CTX_free(c);
    if (!ok)
        return -1;
    /* wh_base64_encode ends the string */
    /* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
    memcpy(out, SEAL_PREFIX, 3);
    wh_base64_encode(raw, SEAL_NONCE + n + SEAL_TAG, out + 3);
    return 0;
}

int wh_unseal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, const char *text, char *out,
              size_t outcap, size_t *n)
{
    uint8_t raw[SEAL_NONCE + SEAL_MAX_PT + SEAL_TAG + 4];
    if (!text || strncmp(text, SEAL_PREFIX, 3) != 0)
        return -1;
    long rl = wh_base64_decode(text + 3, strlen(text + 3), raw, sizeof raw);
    if (rl < SEAL_NONCE + SEAL_TAG)
        return -1;
    size_t ctl = (size_t)rl - SEAL_NONCE - SEAL_TAG;
    if (ctl + 1 > outcap)
        return -1;
    int len = 0, ok = 0;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return -1;
    if (EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, raw) == 1 &&
        (!aad || EVP_DecryptUpdate(c, NULL, &len, (const uint8_t *)aad, (int)strlen(aad)) == 1) &&
        EVP_DecryptUpdate(c, (uint8_t *)out, &len, raw + SEAL_NONCE, (int)ctl) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SEAL_TAG, raw + SEAL_NONCE + ctl) == 1 &&
        EVP_DecryptFinal_ex(c, (uint8_t *)out + len, &len) == 1)
        ok = 1;
    EVP_CIPHER_CTX_free(c);
    if (!ok) {
        memset(out, 0, outcap);
        return -1;
    }
    out[ctl] = '\0';
    *n = ctl;
    return 0;
}
