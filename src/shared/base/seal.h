/* SPDX-License-Identifier: Apache-2.0 */
/* Sealing small secrets at rest: AES-256-GCM (libcrypto) under a 32-byte key, with additional
 * authenticated data that binds the sealed text to its context (an access key's secret is
 * sealed with the access key id, so a row's secret cannot be moved to another key).
 *
 * Text form: "g1:" + base64(12-byte random nonce | ciphertext | 16-byte tag). */
#ifndef WH_BASE_SEAL_H
#define WH_BASE_SEAL_H

#include <stddef.h>
#include <stdint.h>

#define WH_SEAL_KEY_LEN 32
/* Text length of a sealed n-byte secret, with its NUL. */
#define WH_SEAL_TEXT_LEN(n) (3 + 4 * (((n) + 28 + 2) / 3) + 1)

/* Seals n bytes of pt into out (outcap >= WH_SEAL_TEXT_LEN(n)). 0, or -1 on a libcrypto or
 * random-source failure or a short buffer. */
int wh_seal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, const void *pt, size_t n,
            char *out, size_t outcap);
/* Opens a sealed text into out (NUL-terminated; *n its length). -1 when the text is malformed,
 * the key or aad is wrong (the tag fails), or out is too small. */
int wh_unseal(const uint8_t key[WH_SEAL_KEY_LEN], const char *aad, const char *text, char *out,
              size_t outcap, size_t *n);

#endif
