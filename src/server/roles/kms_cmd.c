/* SPDX-License-Identifier: Apache-2.0 */
/* `wharfd kms ...`: the master keys of the key service wharfd runs itself (SSE-KMS,
 * ident/kms.h), from the command line. Like `wharfd user`, it opens the server's metadata
 * store and server key, so a change holds at the server's next request. */
#include "base/log.h"
#include "base/util.h"
#include "ident/kms.h"
#include "roles/roles.h"
#include "store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int kc_usage(FILE *f)
{
    fprintf(f,
            "usage: wharfd kms create [--name ID] STORE   (ID: 1-64 of A-Z a-z 0-9 - _ .;\n"
            "                                              without it a random UUID)\n"
            "       wharfd kms list STORE\n"
            "       wharfd kms rotate KEY STORE    (a new version; older objects stay readable)\n"
            "       wharfd kms disable KEY STORE   (new writes and reads under KEY refused)\n"
            "       wharfd kms enable KEY STORE\n"
            "\n"
            "KEY is a key id, alias/ID or its ARN. STORE is the server's metadata: --data DIR\n"
            "(SQLite in DIR; the server key is DIR/server.key) or --meta\n"
            "postgresql://USER@HOST:PORT/DB with --server-key-file FILE (also\n"
            "WHARF_SERVER_KEY_FILE): every key version is sealed under that server key.\n");
    return 0;
}

static int kc_bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "wharfd: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nrun 'wharfd kms --help' for the commands\n");
    return 2;
}

static void kc_print(const ident_kms_key_t *k)
{
    char when[25];
    wh_iso8601(k->created, when);
    printf("key_id=%s state=%s versions=%u created=%s\n", k->id, ident_kms_state_name(k->state),
           k->versions, when);
}

int role_kms_main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)
        return argc < 3 ? (kc_usage(stderr), 2) : kc_usage(stdout);
    const char *verb = argv[2];
    const char *data = NULL, *meta_url = NULL, *key_file = NULL, *name = NULL;
    enum { O_DATA = 1, O_META, O_KEYFILE, O_NAME, O_HELP };
    static const struct option opts[] = {
        {"data", required_argument, NULL, O_DATA},
        {"meta", required_argument, NULL, O_META},
        {"server-key-file", required_argument, NULL, O_KEYFILE},
        {"name", required_argument, NULL, O_NAME},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 3;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_DATA:
            data = optarg;
            break;
        case O_META:
            meta_url = optarg;
            break;
        case O_KEYFILE:
            key_file = optarg;
            break;
        case O_NAME:
            name = optarg;
            break;
        case O_HELP:
            return kc_usage(stdout);
        case ':':
            return kc_bad("option %s needs a value", argv[optind - 1]);
        default:
            return kc_bad("unknown option '%s'", argv[optind - 1]);
        }
    }
    const char *arg = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return kc_bad("unexpected argument '%s'", argv[optind]);
    bool takes_key = !strcmp(verb, "rotate") || !strcmp(verb, "disable") || !strcmp(verb, "enable");
    if (!takes_key && strcmp(verb, "create") != 0 && strcmp(verb, "list") != 0)
        return kc_bad("unknown kms command '%s' (create, list, rotate, disable, enable)", verb);
    if (takes_key && !arg)
        return kc_bad("%s needs the key (its id, alias/ID or ARN)", verb);
    if (!takes_key && arg)
        return kc_bad("unexpected argument '%s'", arg);
    if (name && strcmp(verb, "create") != 0)
        return kc_bad("%s--name goes with create only", "");
    if (name && !ident_kms_id_valid(name))
        return kc_bad("--name wants 1 to 64 of A-Z a-z 0-9 - _ ., got '%s'", name);
    if (!data == !meta_url)
        return kc_bad("%sgive the server's store: --data DIR or --meta postgresql://...", "");
    if (meta_url && !meta_url_is_pg(meta_url))
        return kc_bad("--meta wants postgresql://USER@HOST:PORT/DB, got '%s'", meta_url);
    struct stat sb;
    if (data && (stat(data, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return kc_bad("--data %s is not a directory", data);
    wh_log_set_level(WH_LOG_WARN);

    char path[1024], kbuf[1024];
    if (data)
        snprintf(path, sizeof path, "%s/meta.db", data);
    bool create_key = false;
    const char *kf = ident_key_path(key_file, data, kbuf, sizeof kbuf, &create_key);
    if (!kf && strcmp(verb, "list") != 0)
        return kc_bad("%sKMS keys are sealed under the server key: --server-key-file FILE (or "
                      "WHARF_SERVER_KEY_FILE)",
                      "");
    meta_t *m = NULL;
    wh_status_t st = store_meta_open(data ? path : meta_url, &m);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot open the metadata store %s: %s\n", data ? path : meta_url,
                wh_status_str(st));
        return 1;
    }
    ident_config_t icfg = {.meta = m, .key_file = kf, .create_key = create_key};
    ident_t *id = NULL;
    if ((st = ident_open(&icfg, &id)) != WH_OK) {
        meta_close(m);
        fprintf(stderr, "wharfd: cannot use the server key %s: %s\n", kf ? kf : "",
                wh_status_str(st));
        return 1;
    }
    int rc = 0;
    ident_kms_key_t k = {0};
    if (!strcmp(verb, "list")) {
        ident_kms_key_t *ks = NULL;
        size_t n = 0;
        if ((st = ident_kms_list(id, &ks, &n)) == WH_OK) {
            for (size_t i = 0; i < n; i++)
                kc_print(&ks[i]);
            free(ks);
        }
    } else if (!strcmp(verb, "create")) {
        st = ident_kms_create(id, name, &k);
    } else if (!strcmp(verb, "rotate")) {
        st = ident_kms_rotate(id, arg, &k);
    } else {
        st = ident_kms_set_state(
            id, arg, !strcmp(verb, "enable") ? IDENT_KMS_ENABLED : IDENT_KMS_DISABLED, 0, &k);
    }
    if (st == WH_OK && strcmp(verb, "list") != 0)
        kc_print(&k);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: kms %s %s: %s\n", verb,
                arg    ? arg
                : name ? name
                       : "",
                st == WH_ERR_NOT_FOUND ? "no such key"
                : st == WH_ERR_EXISTS  ? "a key of that id exists"
                                       : wh_status_str(st));
        rc = st == WH_ERR_NOT_FOUND || st == WH_ERR_EXISTS ? 3 : 1;
    }
    ident_close(id);
    meta_close(m);
    return rc;
}
