/* SPDX-License-Identifier: Apache-2.0 */
/* The safetensors header parser (safetensors.c): strict validation of an untrusted header
 * before any byte of the data section is planned or fetched. Its table is the public ABI's
 * opaque wharf_st_t; libwharf's wharf_st_* functions (src/client/client/safetensors.c) are these,
 * with the message copied to wharf_last_error(). Depends on nothing but the public header's
 * types and jansson, so the fuzz driver and any other user link it alone.
 *
 * Errors: a failing call writes a message naming the tensor and the field into err (errlen
 * bytes, truncated to fit; err may be NULL with errlen 0) and leaves it untouched otherwise. */
#ifndef WH_SAFETENSORS_SAFETENSORS_H
#define WH_SAFETENSORS_SAFETENSORS_H

#include "wharf/wharf.h"

#include <stddef.h>
#include <stdint.h>

/* As wharf_st_header_len, wharf_st_parse and wharf_st_tensor (wharf/wharf.h). */
wharf_status_t st_header_len(const void *prefix8, uint64_t file_size, uint64_t *n, char *err,
                             size_t errlen);
wharf_status_t st_parse(const void *buf, size_t len, uint64_t file_size, wharf_st_t **out,
                        char *err, size_t errlen);
wharf_status_t st_tensor(const wharf_st_t *st, size_t i, const char **name, const char **dtype,
                         uint32_t *ndim, uint64_t *shape, uint32_t shape_cap, uint64_t *begin,
                         uint64_t *end, char *err, size_t errlen);
/* As wharf_st_count, wharf_st_data_offset, wharf_st_data_len, wharf_st_metadata_json,
 * wharf_st_dtype_bits and wharf_st_free (NULL-safe). */
size_t st_count(const wharf_st_t *st);
uint64_t st_data_offset(const wharf_st_t *st);
uint64_t st_data_len(const wharf_st_t *st);
const char *st_metadata_json(const wharf_st_t *st);
unsigned st_dtype_bits(const char *dtype);
void st_free(wharf_st_t *st);

#endif
