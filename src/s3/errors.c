#include "s3/errors.h"

static const struct {
    const char *code;
    int http;
    const char *msg;
} g_errs[] = {
#define S3_ERR_ROW_(e, c, h, m) {c, h, m},
    S3_ERR_LIST(S3_ERR_ROW_)
#undef S3_ERR_ROW_
};

const char *s3_err_code(s3_err_t e)
{
    return (unsigned)e < S3_ERR__COUNT ? g_errs[e].code : "InternalError";
}

int s3_err_http_status(s3_err_t e)
{
    return (unsigned)e < S3_ERR__COUNT ? g_errs[e].http : 500;
}

const char *s3_err_message(s3_err_t e)
{
    return (unsigned)e < S3_ERR__COUNT ? g_errs[e].msg : "internal error";
}
