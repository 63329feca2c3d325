/* `wharfd node list|drain|remove`: a cluster's storage servers from the command line, over
 * the cluster's PostgreSQL (the node table is the state: the maintenance gateway acts on it at
 * its next pass, and a gateway that restarts reads it again).
 *
 *   list            every storage server: id, address, state, zone, capacity, free space, the
 *                   chunk copies the chunk map lists on it (text, or --json)
 *   drain ADDR      no new copies go there; repair moves every copy off it (rate-limited by the
 *                   gateways' --drain-rate), keeping the replica count; `list` says drained
 *                   once it holds none
 *   remove ADDR     refused while it holds the only live copy of some chunk (the error says how
 *                   many: drain it first); else it is never dialed again and what it still
 *                   held is re-replicated from the other copies */
#include "base/log.h"
#include "base/util.h"
#include "meta/meta.h"
#include "roles/roles.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A node whose heartbeat is older is down (the gateways' default, cl_remote_config_init). */
#define NODE_DOWN_AFTER_S 5

static int nc_usage(FILE *f)
{
    fprintf(f, "usage: wharfd node list [--json] --meta postgresql://USER@HOST:PORT/DB\n"
               "       wharfd node drain HOST:PORT --meta URL\n"
               "       wharfd node remove HOST:PORT --meta URL\n"
               "\n"
               "A cluster's storage servers, by the address they registered (--listen).\n"
               "  list    id, address, state (up, down, draining, drained, removed, retired),\n"
               "          zone, capacity, free bytes and the chunk copies each holds\n"
               "  drain   no new copies go to it; the maintenance gateway moves every copy off\n"
               "          it (at --drain-rate bytes/s), keeping the replica count; resumed by any\n"
               "          gateway after a restart; list says drained when it holds none\n"
               "  remove  refused while it holds the only live copy of some chunk (drain it\n"
               "          first); then it is never dialed again, and copies it still held are\n"
               "          re-replicated from the others. A removed server does not register\n"
               "          again: empty its data directory to join as a new node.\n");
    return 0;
}

static int nc_bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "wharfd: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nrun 'wharfd node --help' for the commands\n");
    return 2;
}

/* A JSON string body: the node table's text is addresses and zone names, but escape anyway. */
static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static const char *node_state(const meta_node_t *n, uint64_t copies, bool *up)
{
    *up = !n->retired && n->state != META_NODE_REMOVED &&
          (int64_t)n->now - (int64_t)n->heartbeat <= NODE_DOWN_AFTER_S;
    if (n->retired)
        return "retired";
    if (n->state == META_NODE_REMOVED)
        return "removed";
    if (n->state == META_NODE_DRAINING)
        return copies ? "draining" : "drained";
    return *up ? "up" : "down";
}

static int node_list(meta_t *m, bool json)
{
    meta_node_t *nodes = NULL;
    meta_node_copies_t *cp = NULL;
    size_t n = 0, nc = 0;
    wh_status_t st = meta_node_list(m, &nodes, &n);
    if (st == WH_OK)
        st = meta_node_copies(m, &cp, &nc);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot read the node table: %s\n", wh_status_str(st));
        free(nodes);
        return 1;
    }
    if (json)
        printf("{\"nodes\":[");
    else
        printf("%-4s %-24s %-9s %-10s %-3s %14s %14s %8s %6s\n", "ID", "ADDRESS", "STATE", "ZONE",
               "UP", "CAPACITY", "FREE", "COPIES", "AGE_S");
    for (size_t i = 0; i < n; i++) {
        uint64_t copies = 0;
        for (size_t j = 0; j < nc; j++)
            if (cp[j].id == nodes[i].id)
                copies = cp[j].copies;
        bool up;
        const char *state = node_state(&nodes[i], copies, &up);
        int64_t age = (int64_t)nodes[i].now - (int64_t)nodes[i].heartbeat;
        if (json) {
            printf("%s{\"id\":%" PRIu32 ",\"addr\":", i ? "," : "", nodes[i].id);
            json_str(nodes[i].addr);
            printf(",\"state\":\"%s\",\"zone\":", state);
            json_str(nodes[i].zone);
            printf(",\"up\":%s,\"capacity\":%" PRIu64 ",\"free\":%" PRIu64 ",\"copies\":%" PRIu64
                   ",\"heartbeat_age_s\":%" PRId64 "}",
                   up ? "true" : "false", nodes[i].capacity, nodes[i].free, copies, age);
        } else {
            printf("%-4" PRIu32 " %-24s %-9s %-10s %-3s %14" PRIu64 " %14" PRIu64 " %8" PRIu64
                   " %6" PRId64 "\n",
                   nodes[i].id, nodes[i].addr, state, nodes[i].zone[0] ? nodes[i].zone : "-",
                   up ? "yes" : "no", nodes[i].capacity, nodes[i].free, copies, age);
        }
    }
    if (json)
        printf("]}\n");
    free(nodes);
    free(cp);
    return 0;
}

int srv_node_main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)
        return argc < 3 ? (nc_usage(stderr), 2) : nc_usage(stdout);
    const char *verb = argv[2];
    const char *meta_url = NULL;
    bool json = false;
    wh_log_level_t lvl = WH_LOG_WARN;
    enum { O_META = 1, O_JSON, O_LOG, O_HELP };
    static const struct option opts[] = {
        {"meta", required_argument, NULL, O_META},
        {"json", no_argument, NULL, O_JSON},
        {"log-level", required_argument, NULL, O_LOG},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 3;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_META:
            meta_url = optarg;
            break;
        case O_JSON:
            json = true;
            break;
        case O_LOG:
            if (wh_log_parse_level(optarg, &lvl) != 0)
                return nc_bad("--log-level wants error, warn, info, debug or trace, got '%s'",
                              optarg);
            break;
        case O_HELP:
            return nc_usage(stdout);
        case ':':
            return nc_bad("option %s needs a value", argv[optind - 1]);
        default:
            return nc_bad("unknown option '%s'", argv[optind - 1]);
        }
    }
    bool is_list = !strcmp(verb, "list");
    if (!is_list && strcmp(verb, "drain") != 0 && strcmp(verb, "remove") != 0)
        return nc_bad("unknown node command '%s' (list, drain, remove)", verb);
    const char *addr = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return nc_bad("unexpected argument '%s'", argv[optind]);
    if (is_list && addr)
        return nc_bad("unexpected argument '%s'", addr);
    if (!is_list && !addr)
        return nc_bad("%s needs the storage server's HOST:PORT (as `wharfd node list` shows it)",
                      verb);
    if (!is_list && json)
        return nc_bad("%s--json goes with list", "");
    if (addr && (strlen(addr) >= sizeof(((meta_node_t *)0)->addr) || !strchr(addr, ':')))
        return nc_bad("a storage server is named by HOST:PORT, got '%s'", addr);
    if (!meta_url || !meta_url_is_pg(meta_url))
        return nc_bad("--meta postgresql://USER@HOST:PORT/DB is required, got '%s'",
                      meta_url ? meta_url : "");
    wh_log_set_level(lvl);
    meta_t *m = NULL;
    wh_status_t st = meta_open(meta_url, &m);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot open the metadata database %s: %s\n", meta_url,
                wh_status_str(st));
        return 1;
    }
    int rc = 0;
    uint32_t id = 0;
    if (is_list) {
        rc = node_list(m, json);
    } else if (!strcmp(verb, "drain")) {
        st = meta_node_drain(m, addr, &id);
        if (st == WH_OK)
            printf("node=%" PRIu32 " addr=%s state=draining\n", id, addr);
        else if (st == WH_ERR_NOT_FOUND)
            fprintf(stderr, "wharfd: no storage node at %s (wharfd node list shows them)\n", addr);
        else if (st == WH_ERR_PRECONDITION)
            fprintf(stderr, "wharfd: storage node %" PRIu32 " at %s was removed: nothing to drain\n",
                    id, addr);
        else
            fprintf(stderr, "wharfd: drain %s: %s\n", addr, wh_status_str(st));
        rc = st == WH_OK ? 0 : st == WH_ERR_NOT_FOUND ? 3 : st == WH_ERR_PRECONDITION ? 4 : 1;
    } else {
        uint64_t sole = 0;
        st = meta_node_remove(m, addr, NODE_DOWN_AFTER_S, &id, &sole);
        if (st == WH_OK)
            printf("node=%" PRIu32 " addr=%s state=removed\n", id, addr);
        else if (st == WH_ERR_NOT_FOUND)
            fprintf(stderr, "wharfd: no storage node at %s (wharfd node list shows them)\n", addr);
        else if (st == WH_ERR_BUSY)
            fprintf(stderr,
                    "wharfd: storage node %" PRIu32 " at %s holds the only live copy of %" PRIu64
                    " chunk%s: not removed; drain it first (wharfd node drain %s) and remove it "
                    "once wharfd node list says drained\n",
                    id, addr, sole, sole == 1 ? "" : "s", addr);
        else
            fprintf(stderr, "wharfd: remove %s: %s\n", addr, wh_status_str(st));
        rc = st == WH_OK ? 0 : st == WH_ERR_NOT_FOUND ? 3 : st == WH_ERR_BUSY ? 4 : 1;
    }
    meta_close(m);
    return rc;
}
