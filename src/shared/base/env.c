/* SPDX-License-Identifier: Apache-2.0 */
#include "base/env.h"

#include <stddef.h>
#include <stdlib.h>

/* The order is the contract (base/env.h); python/wharf/config.py repeats it. */
static const struct {
    const char *vars[4];
    const char *text;
} g_env[WH_ENV_COUNT] = {
    [WH_ENV_ENDPOINT] = {{"WHARF_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", NULL},
                         "WHARF_ENDPOINT, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL"},
    [WH_ENV_ACCESS_KEY] = {{"WHARF_ACCESS_KEY", "AWS_ACCESS_KEY_ID", NULL},
                           "WHARF_ACCESS_KEY or AWS_ACCESS_KEY_ID"},
    [WH_ENV_SECRET_KEY] = {{"WHARF_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", NULL},
                           "WHARF_SECRET_KEY or AWS_SECRET_ACCESS_KEY"},
    [WH_ENV_REGION] = {{"WHARF_REGION", "AWS_REGION", "AWS_DEFAULT_REGION", NULL},
                       "WHARF_REGION, AWS_REGION or AWS_DEFAULT_REGION"},
    [WH_ENV_PROVIDER] = {{"WHARF_PROVIDER", NULL}, "WHARF_PROVIDER"},
    [WH_ENV_UNIX_SOCKET] = {{"WHARF_UNIX_SOCKET", NULL}, "WHARF_UNIX_SOCKET"},
    [WH_ENV_CA_BUNDLE] = {{"WHARF_CA_BUNDLE", "AWS_CA_BUNDLE", NULL},
                          "WHARF_CA_BUNDLE or AWS_CA_BUNDLE"},
};

static const char *env_getenv(const char *name)
{
    return getenv(name);
}

void wh_env_read(wh_env_t *e, const char *(*get)(const char *name))
{
    if (!get)
        get = env_getenv;
    for (int k = 0; k < WH_ENV_COUNT; k++) {
        e->value[k] = e->source[k] = NULL;
        for (size_t i = 0; g_env[k].vars[i]; i++) {
            const char *v = get(g_env[k].vars[i]);
            if (v && *v) {
                e->value[k] = v;
                e->source[k] = g_env[k].vars[i];
                break;
            }
        }
    }
}

const char *wh_env_vars(wh_env_key_t k)
{
    return (int)k >= 0 && k < WH_ENV_COUNT ? g_env[k].text : "";
}
