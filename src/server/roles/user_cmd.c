/* SPDX-License-Identifier: Apache-2.0 */
/* `wharfd user ...` and `wharfd key ...`: IAM users and their access keys, from the command
 * line. They open the same metadata store as the server (SQLite in WAL mode lets them run
 * while it serves; PostgreSQL is shared anyway), so what they change holds at the server's
 * next request. */
#include "base/log.h"
#include "base/util.h"
#include "ident/identity.h"
#include "roles/roles.h"
#include "store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int uc_usage(FILE *f)
{
    fprintf(f, "usage: wharfd user create NAME [--access-key AK --secret-key-file F] STORE\n"
               "       wharfd user list STORE\n"
               "       wharfd user delete NAME STORE      (also its keys and policies)\n"
               "       wharfd key create NAME [--access-key AK --secret-key-file F] STORE\n"
               "       wharfd key list NAME STORE\n"
               "       wharfd key delete AK STORE\n"
               "       wharfd key disable AK STORE  |  wharfd key enable AK STORE\n"
               "\n"
               "STORE is the server's metadata: --data DIR (SQLite in DIR; the server key is\n"
               "DIR/server.key, made on first use) or --meta postgresql://USER@HOST:PORT/DB with\n"
               "--server-key-file FILE (the file every gateway of that database uses; also\n"
               "WHARF_SERVER_KEY_FILE). --account-id N (or WHARF_ACCOUNT_ID): the 12-digit\n"
               "account of the ARNs shown. New keys are printed once, as access_key=... and\n"
               "secret_key=...; the store keeps the secret only sealed under the server key.\n"
               "They work while the server runs: a deleted or disabled key is refused at its\n"
               "next request.\n"
               "A chosen secret comes from --secret-key-file FILE (its first line) or the\n"
               "environment's WHARF_USER_SECRET_KEY; --secret-key SK still works but shows the\n"
               "secret to every local user in the process list, and warns.\n");
    return 0;
}

static int uc_bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "wharfd: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nrun 'wharfd user --help' for the commands\n");
    return 2;
}

static int uc_fail(const char *what, const char *name, wh_status_t st)
{
    const char *why = st == WH_ERR_NOT_FOUND   ? "not found"
                      : st == WH_ERR_EXISTS    ? "already exists"
                      : st == WH_ERR_NOT_EMPTY ? "still has keys or policies"
                                               : wh_status_str(st);
    fprintf(stderr, "wharfd: %s %s: %s\n", what, name, why);
    return st == WH_ERR_NOT_FOUND || st == WH_ERR_EXISTS ? 3 : 1;
}

int role_user_main(int argc, char **argv)
{
    bool is_key = strcmp(argv[1], "key") == 0;
    if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)
        return argc < 3 ? (uc_usage(stderr), 2) : uc_usage(stdout);
    const char *verb = argv[2];
    const char *data = NULL, *meta_url = NULL, *key_file = NULL, *account = NULL;
    const char *ak = NULL, *sk = NULL;
    wh_log_level_t lvl = WH_LOG_WARN;
    enum { O_DATA = 1, O_META, O_KEYFILE, O_ACCOUNT, O_AK, O_SK, O_SKFILE, O_LOG, O_HELP };
    const char *sk_file = NULL;
    char sk_buf[IDENT_SECRET_MAX + 2];
    static const struct option opts[] = {
        {"data", required_argument, NULL, O_DATA},
        {"meta", required_argument, NULL, O_META},
        {"server-key-file", required_argument, NULL, O_KEYFILE},
        {"account-id", required_argument, NULL, O_ACCOUNT},
        {"access-key", required_argument, NULL, O_AK},
        {"secret-key", required_argument, NULL, O_SK},
        {"secret-key-file", required_argument, NULL, O_SKFILE},
        {"log-level", required_argument, NULL, O_LOG},
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
        case O_ACCOUNT:
            account = optarg;
            break;
        case O_AK:
            ak = optarg;
            break;
        case O_SK:
            sk = optarg;
            fprintf(stderr, "wharfd: warning: --secret-key shows the secret in the process list "
                            "(ps, /proc/PID/cmdline) to every local user; use --secret-key-file "
                            "FILE or WHARF_USER_SECRET_KEY\n");
            break;
        case O_SKFILE:
            sk_file = optarg;
            break;
        case O_LOG:
            if (wh_log_parse_level(optarg, &lvl) != 0)
                return uc_bad("--log-level wants error, warn, info, debug or trace, got '%s'",
                              optarg);
            break;
        case O_HELP:
            return uc_usage(stdout);
        case ':':
            return uc_bad("option %s needs a value", argv[optind - 1]);
        default:
            return uc_bad("unknown option '%s'", argv[optind - 1]);
        }
    }
    const char *arg = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return uc_bad("unexpected argument '%s'", argv[optind]);
    bool needs_arg = strcmp(verb, "list") != 0 || is_key;
    bool known =
        is_key ? (!strcmp(verb, "create") || !strcmp(verb, "list") || !strcmp(verb, "delete") ||
                  !strcmp(verb, "disable") || !strcmp(verb, "enable"))
               : (!strcmp(verb, "create") || !strcmp(verb, "list") || !strcmp(verb, "delete"));
    if (!known)
        return uc_bad(is_key ? "unknown key command '%s' (create, list, delete, disable, enable)"
                             : "unknown user command '%s' (create, list, delete)",
                      verb);
    if (needs_arg && !arg)
        return uc_bad("%s needs a name (a user name, or an access key id)", verb);
    if (!needs_arg && arg)
        return uc_bad("unexpected argument '%s'", arg);
    if (sk && sk_file)
        return uc_bad("%s--secret-key and --secret-key-file are one choice: give one", "");
    if (sk_file) {
        FILE *f = fopen(sk_file, "r");
        if (!f)
            return uc_bad("cannot read --secret-key-file %s", sk_file);
        bool got = fgets(sk_buf, sizeof sk_buf, f) != NULL;
        fclose(f);
        size_t n = got ? strcspn(sk_buf, "\r\n") : 0;
        if (!got || n == 0 || n > IDENT_SECRET_MAX)
            return uc_bad("--secret-key-file %s must hold the secret on its first line", sk_file);
        sk_buf[n] = '\0';
        sk = sk_buf;
    } else if (!sk && ak) {
        const char *env = getenv("WHARF_USER_SECRET_KEY");
        if (env && *env)
            sk = env;
    }
    if ((ak || sk) && strcmp(verb, "create") != 0)
        return uc_bad("%s--access-key and --secret-key go with create only", "");
    if ((ak == NULL) != (sk == NULL))
        return uc_bad("%s--access-key and --secret-key go together", "");
    if (!data == !meta_url)
        return uc_bad("%sgive the server's store: --data DIR or --meta postgresql://...", "");
    if (meta_url && !meta_url_is_pg(meta_url))
        return uc_bad("--meta wants postgresql://USER@HOST:PORT/DB, got '%s'", meta_url);
    struct stat sb;
    if (data && (stat(data, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return uc_bad("--data %s is not a directory", data);
    if (!(account = ident_account_arg(account)))
        return 2;
    wh_log_set_level(lvl);

    char path[1024], kbuf[1024];
    if (data)
        snprintf(path, sizeof path, "%s/meta.db", data);
    bool create_key = false;
    const char *kf = ident_key_path(key_file, data, kbuf, sizeof kbuf, &create_key);
    bool writes_key = !strcmp(verb, "create");
    if (writes_key && !kf)
        return uc_bad("%screating keys needs the server key: --server-key-file FILE (or "
                      "WHARF_SERVER_KEY_FILE)",
                      "");
    meta_t *m = NULL;
    wh_status_t st = store_meta_open(data ? path : meta_url, &m);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot open the metadata store %s: %s\n", data ? path : meta_url,
                wh_status_str(st));
        return 1;
    }
    ident_config_t icfg = {.meta = m,
                           .key_file = writes_key ? kf : NULL,
                           .create_key = create_key,
                           .account_id = account};
    ident_t *id = NULL;
    if ((st = ident_open(&icfg, &id)) != WH_OK) {
        meta_close(m);
        fprintf(stderr, "wharfd: cannot use the server key %s: %s\n", kf, wh_status_str(st));
        return 1;
    }
    int rc = 0;
    char arn[256], when[25], msg[200], secret[IDENT_SECRET_MAX + 1];
    if (!is_key && !strcmp(verb, "create")) {
        meta_user_t u;
        if (!ident_name_valid(arg, META_USER_MAX)) {
            rc = uc_bad("user names are 1 to 64 of A-Z a-z 0-9 + = , . @ _ -, got '%s'", arg);
            goto out;
        }
        if ((st = ident_user_create(id, arg, &u)) != WH_OK) {
            rc = uc_fail("user", arg, st);
            goto out;
        }
        meta_access_key_t k;
        if ((st = ident_key_create(id, arg, ak, sk, &k, secret, msg, sizeof msg)) != WH_OK) {
            /* No user without the key the command promised. */
            meta_user_delete(m, arg, true);
            fprintf(stderr, "wharfd: access key for %s: %s\n", arg,
                    msg[0] ? msg : wh_status_str(st));
            rc = st == WH_ERR_INVALID ? 2 : st == WH_ERR_EXISTS ? 3 : 1;
            goto out;
        }
        ident_user_arn(id, arg, arn, sizeof arn);
        printf("user=%s user_id=%s arn=%s\naccess_key=%s secret_key=%s\n", u.name, u.user_id, arn,
               k.access_key, secret);
    } else if (!is_key && !strcmp(verb, "list")) {
        meta_user_t *us = NULL;
        size_t n = 0;
        if ((st = meta_user_list(m, &us, &n)) != WH_OK) {
            rc = uc_fail("user", "list", st);
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            wh_iso8601(us[i].created, when);
            ident_user_arn(id, us[i].name, arn, sizeof arn);
            printf("%s user_id=%s arn=%s created=%s\n", us[i].name, us[i].user_id, arn, when);
        }
        free(us);
    } else if (!is_key && !strcmp(verb, "delete")) {
        if ((st = meta_user_delete(m, arg, true)) != WH_OK)
            rc = uc_fail("user", arg, st);
        else
            printf("user=%s deleted\n", arg);
    } else if (!strcmp(verb, "create")) {
        meta_access_key_t k;
        if ((st = ident_key_create(id, arg, ak, sk, &k, secret, msg, sizeof msg)) != WH_OK) {
            fprintf(stderr, "wharfd: access key for %s: %s\n", arg,
                    msg[0] ? msg : wh_status_str(st));
            rc = st == WH_ERR_INVALID ? 2 : (st == WH_ERR_EXISTS || st == WH_ERR_NOT_FOUND) ? 3 : 1;
            goto out;
        }
        printf("user=%s\naccess_key=%s secret_key=%s\n", arg, k.access_key, secret);
    } else if (!strcmp(verb, "list")) {
        meta_access_key_t *ks = NULL;
        size_t n = 0;
        if ((st = meta_key_list(m, arg, &ks, &n)) != WH_OK) {
            rc = uc_fail("user", arg, st);
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            wh_iso8601(ks[i].created, when);
            printf("%s status=%s created=%s\n", ks[i].access_key,
                   ks[i].active ? "Active" : "Inactive", when);
        }
        free(ks);
    } else if (!strcmp(verb, "delete")) {
        if ((st = meta_key_delete(m, arg)) != WH_OK)
            rc = uc_fail("access key", arg, st);
        else
            printf("access_key=%s deleted\n", arg);
    } else {
        bool on = !strcmp(verb, "enable");
        if ((st = meta_key_set_active(m, arg, on)) != WH_OK)
            rc = uc_fail("access key", arg, st);
        else
            printf("access_key=%s status=%s\n", arg, on ? "Active" : "Inactive");
    }
out:
    memset(secret, 0, sizeof secret);
    ident_close(id);
    meta_close(m);
    return rc;
}
