/* SPDX-License-Identifier: Apache-2.0 */
/* Checksums used by S3 and by the RDMA reply: CRC-64/NVME (x-amz-checksum-crc64nvme) and
 * CRC-32C (x-amz-checksum-crc32c). Both take and return the finished (post-xor) value, so a
 * running checksum is crc = wh_crc64nvme(crc, p, n) starting from 0. */
#ifndef WH_BASE_CRC_H
#define WH_BASE_CRC_H

#include <stddef.h>
#include <stdint.h>

uint64_t wh_crc64nvme(uint64_t crc, const void *p, size_t n);
/* Table-driven reference (slower); the fast path above is tested against it. */
uint64_t wh_crc64nvme_ref(uint64_t crc, const void *p, size_t n);
/* The folding code wh_crc64nvme uses on this CPU: "vpclmulqdq-512" (sixteen lanes in AVX-512
 * registers), "pclmulqdq-128" (four lanes), or "table" (wh_crc64nvme_ref). */
const char *wh_crc64nvme_impl(void);
/* Tests and benchmarks: use "vpclmulqdq-512" or "pclmulqdq-128" from now on. -1 when this CPU
 * cannot. Not to be called while another thread computes a CRC. */
int wh_crc64nvme_set_impl(const char *name);
uint32_t wh_crc32c(uint32_t crc, const void *p, size_t n);

/* crc(A||B) from crc(A), crc(B) and len(B). */
uint64_t wh_crc64nvme_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);
uint32_t wh_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* combine for many pieces of one length: build the operator once (costly, ~100 us), then each
 * combine is 64 shifts and xors. */
typedef struct wh_crc64_shift {
    uint64_t m[64];
} wh_crc64_shift_t;
void wh_crc64nvme_shift_init(wh_crc64_shift_t *op, uint64_t len_b);
uint64_t wh_crc64nvme_shift_combine(const wh_crc64_shift_t *op, uint64_t crc_a, uint64_t crc_b);

/* S3 wire form: base64 of the big-endian checksum bytes. out needs 13 bytes (crc64) / 9 (crc32). */
void wh_crc64nvme_b64(uint64_t crc, char out[13]);
void wh_crc32c_b64(uint32_t crc, char out[9]);
int wh_crc64nvme_from_b64(const char *s, uint64_t *out);
int wh_crc32c_from_b64(const char *s, uint32_t *out);

#endif
