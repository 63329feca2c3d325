/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf's safetensors functions (wharf/wharf.h): the parser of src/client/safetensors, with its
 * message in wharf_last_error(). Each clears the error where it did before the parser had a
 * layer of its own (header_len, parse and tensor always; the accessors never). */
#include "wharf/wharf.h"

#include "client/client_int.h"
#include "safetensors/safetensors.h"

/* The parser's message, if any, as the thread's last error (cleared first). */
static wharf_status_t st_report(wharf_status_t rc, const char *err)
{
    wc_clear_error();
    if (err[0])
        wc_set_error("%s", err);
    return rc;
}

WHARF_API wharf_status_t wharf_st_header_len(const void *prefix8, uint64_t file_size, uint64_t *n)
{
    char err[WC_ERR_LEN] = "";
    return st_report(st_header_len(prefix8, file_size, n, err, sizeof err), err);
}

WHARF_API wharf_status_t wharf_st_parse(const void *buf, size_t len, uint64_t file_size,
                                        wharf_st_t **out)
{
    char err[WC_ERR_LEN] = "";
    return st_report(st_parse(buf, len, file_size, out, err, sizeof err), err);
}

WHARF_API wharf_status_t wharf_st_tensor(const wharf_st_t *st, size_t i, const char **name,
                                         const char **dtype, uint32_t *ndim, uint64_t *shape,
                                         uint32_t shape_cap, uint64_t *begin, uint64_t *end)
{
    char err[WC_ERR_LEN] = "";
    return st_report(
        st_tensor(st, i, name, dtype, ndim, shape, shape_cap, begin, end, err, sizeof err), err);
}

WHARF_API size_t wharf_st_count(const wharf_st_t *st)
{
    return st_count(st);
}

WHARF_API uint64_t wharf_st_data_offset(const wharf_st_t *st)
{
    return st_data_offset(st);
}

WHARF_API uint64_t wharf_st_data_len(const wharf_st_t *st)
{
    return st_data_len(st);
}

WHARF_API const char *wharf_st_metadata_json(const wharf_st_t *st)
{
    return st_metadata_json(st);
}

WHARF_API unsigned wharf_st_dtype_bits(const char *dtype)
{
    return st_dtype_bits(dtype);
}

WHARF_API void wharf_st_free(wharf_st_t *st)
{
    st_free(st);
}
