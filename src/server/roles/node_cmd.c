/* SPDX-License-Identifier: Apache-2.0 */
/* `wharfd node list|drain|remove`: a cluster's storage servers from the command line, over
 * the cluster's PostgreSQL (the node table is the state: the maintenance gateway acts on it at
 * its next pass, and a gateway that restarts reads it again).
 *
 *   status          the dashboard: list's nodes plus zones, capacity, the maintenance leader and
 *                   its backlogs (repair, drain, damaged copies), the scrubbers' progress
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
#include "store/store.h"
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
               "       wharfd node status [--json] --meta URL\n"
               "       wharfd node drain HOST:PORT --meta URL\n"
               "       wharfd node remove HOST:PORT --meta URL\n"
               "\n"
               "A cluster's storage servers, by the address they registered (--listen).\n"
               "  list    id, address, state (up, down, draining, drained, removed, retired),\n"
               "          zone, capacity, free bytes and the chunk copies each holds\n"
               "  status  the dashboard: servers by state, capacity, zones, the maintenance\n"
               "          gateway (leader) and its repair, drain and damage backlogs, the\n"
               "          scrubbers' progress, then every server as list shows it\n"
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
static void json_str(wh_sbuf_t *b, const char *s)
{
    wh_sbuf_puts(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            wh_sbuf_printf(b, "\\%c", ch);
        else if (ch < 0x20)
            wh_sbuf_printf(b, "\\u%04x", ch);
        else
            wh_sbuf_append(b, &ch, 1);
    }
    wh_sbuf_puts(b, "\"");
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

/* A leader that wrote its view longer ago than this is gone (a pass runs every 2 s and takes
 * at most about 5 s). */
#define NODE_LEADER_STALE_S 15

typedef struct {
    meta_node_t *nodes;
    size_t n;
    uint64_t *copies; /* per node */
} nc_view_t;

static int view_load(meta_t *m, nc_view_t *v)
{
    memset(v, 0, sizeof *v);
    meta_node_copies_t *cp = NULL;
    size_t nc = 0;
    wh_status_t st = meta_node_list(m, &v->nodes, &v->n);
    if (st == WH_OK)
        st = meta_node_copies(m, &cp, &nc);
    if (st == WH_OK && !(v->copies = calloc(v->n ? v->n : 1, sizeof *v->copies)))
        st = WH_ERR_NOMEM;
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot read the node table: %s\n", wh_status_str(st));
        free(v->nodes);
        free(cp);
        return 1;
    }
    for (size_t i = 0; i < v->n; i++)
        for (size_t j = 0; j < nc; j++)
            if (cp[j].id == v->nodes[i].id)
                v->copies[i] = cp[j].copies;
    free(cp);
    return 0;
}

static void view_free(nc_view_t *v)
{
    free(v->nodes);
    free(v->copies);
}

static void nodes_json(wh_sbuf_t *b, const nc_view_t *v)
{
    wh_sbuf_printf(b, "\"nodes\":[");
    for (size_t i = 0; i < v->n; i++) {
        const meta_node_t *nd = &v->nodes[i];
        bool up;
        const char *state = node_state(nd, v->copies[i], &up);
        wh_sbuf_printf(b, "%s{\"id\":%" PRIu32 ",\"addr\":", i ? "," : "", nd->id);
        json_str(b, nd->addr);
        wh_sbuf_printf(b, ",\"state\":\"%s\",\"zone\":", state);
        json_str(b, nd->zone);
        wh_sbuf_printf(b,
                       ",\"up\":%s,\"capacity\":%" PRIu64 ",\"free\":%" PRIu64
                       ",\"copies\":%" PRIu64 ",\"heartbeat_age_s\":%" PRId64
                       ",\"scrub_progress\":%.4f,\"scrub_passes\":%" PRIu64 ",\"damaged\":%" PRIu64
                       "}",
                       up ? "true" : "false", nd->capacity, nd->free, v->copies[i],
                       (int64_t)nd->now - (int64_t)nd->heartbeat, nd->scrub_progress,
                       nd->scrub_passes, nd->damaged);
    }
    wh_sbuf_printf(b, "]");
}

static void nodes_text(wh_sbuf_t *b, const nc_view_t *v, bool wide)
{
    wh_sbuf_printf(b, "%-4s %-24s %-9s %-10s %-3s %14s %14s %8s %6s", "ID", "ADDRESS", "STATE",
                   "ZONE", "UP", "CAPACITY", "FREE", "COPIES", "AGE_S");
    wh_sbuf_printf(b, wide ? " %6s %7s\n" : "\n", "SCRUB", "DAMAGED");
    for (size_t i = 0; i < v->n; i++) {
        const meta_node_t *nd = &v->nodes[i];
        bool up;
        const char *state = node_state(nd, v->copies[i], &up);
        wh_sbuf_printf(b,
                       "%-4" PRIu32 " %-24s %-9s %-10s %-3s %14" PRIu64 " %14" PRIu64 " %8" PRIu64
                       " %6" PRId64,
                       nd->id, nd->addr, state, nd->zone[0] ? nd->zone : "-", up ? "yes" : "no",
                       nd->capacity, nd->free, v->copies[i],
                       (int64_t)nd->now - (int64_t)nd->heartbeat);
        if (wide)
            wh_sbuf_printf(b, " %5.1f%% %7" PRIu64, nd->scrub_progress * 100.0, nd->damaged);
        wh_sbuf_printf(b, "\n");
    }
}

static int node_list(meta_t *m, bool json, wh_sbuf_t *b)
{
    nc_view_t v;
    if (view_load(m, &v) != 0)
        return 1;
    if (json) {
        wh_sbuf_printf(b, "{");
        nodes_json(b, &v);
        wh_sbuf_printf(b, "}\n");
    } else {
        nodes_text(b, &v, false);
    }
    view_free(&v);
    return 0;
}

/* The dashboard: servers by state, capacity, zones, the maintenance leader and its backlogs
 * (repair, drain, damaged copies), the scrubbers' progress, then every node. */
int role_node_status(meta_t *m, bool json, wh_sbuf_t *b)
{
    nc_view_t v;
    if (view_load(m, &v) != 0)
        return 1;
    meta_cluster_status_t cs;
    wh_status_t st = meta_cluster_status_get(m, &cs);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND) {
        fprintf(stderr, "wharfd: cannot read the cluster status: %s\n", wh_status_str(st));
        view_free(&v);
        return 1;
    }
    bool have_leader = st == WH_OK, leader_live = have_leader && cs.age_s <= NODE_LEADER_STALE_S;
    enum { S_UP, S_DOWN, S_DRAINING, S_DRAINED, S_REMOVED, S_RETIRED, S_N };
    static const char *const sname[S_N] = {"up",      "down",    "draining",
                                           "drained", "removed", "retired"};
    uint64_t by[S_N] = {0}, cap = 0, fre = 0, copies = 0, damaged = 0, mid = 0, scrubbing = 0;
    double low = 1.0;
    char zones[64][META_ZONE_MAX];
    uint64_t zn[64] = {0}, zup[64] = {0}, zcap[64] = {0}, zfree[64] = {0}, zcp[64] = {0};
    size_t nz = 0;
    for (size_t i = 0; i < v.n; i++) {
        const meta_node_t *nd = &v.nodes[i];
        bool up;
        const char *state = node_state(nd, v.copies[i], &up);
        for (int k = 0; k < S_N; k++)
            by[k] += !strcmp(state, sname[k]);
        if (nd->retired || nd->state == META_NODE_REMOVED)
            continue; /* out of the cluster: not in its capacity */
        cap += nd->capacity;
        fre += nd->free;
        copies += v.copies[i];
        damaged += nd->damaged;
        if (up) {
            scrubbing++;
            if (nd->scrub_progress > 0 && nd->scrub_progress < 1)
                mid++;
            if (nd->scrub_progress < low)
                low = nd->scrub_progress;
        }
        size_t z = 0;
        while (z < nz && strcmp(zones[z], nd->zone) != 0)
            z++;
        if (z == nz && nz < 64)
            snprintf(zones[nz++], META_ZONE_MAX, "%s", nd->zone);
        if (z < 64) {
            zn[z]++;
            zup[z] += up;
            zcap[z] += nd->capacity;
            zfree[z] += nd->free;
            zcp[z] += v.copies[i];
        }
    }
    if (!scrubbing)
        low = 0;
    if (json) {
        wh_sbuf_printf(b, "{\"servers\":{");
        for (int k = 0; k < S_N; k++)
            wh_sbuf_printf(b, "%s\"%s\":%" PRIu64, k ? "," : "", sname[k], by[k]);
        wh_sbuf_printf(b,
                       ",\"total\":%zu},\"capacity\":%" PRIu64 ",\"free\":%" PRIu64
                       ",\"copies\":%" PRIu64 ",\"leader\":",
                       v.n, cap, fre, copies);
        if (have_leader) {
            wh_sbuf_printf(b, "{\"addr\":");
            json_str(b, cs.leader);
            wh_sbuf_printf(b, ",\"age_s\":%" PRId64 ",\"live\":%s}", cs.age_s,
                           leader_live ? "true" : "false");
        } else {
            wh_sbuf_printf(b, "null");
        }
        wh_sbuf_printf(b,
                       ",\"backlog\":{\"repair_pending\":%" PRIu64 ",\"repair_nodes\":%" PRIu64
                       ",\"drain_pending\":%" PRIu64 ",\"damage_pending\":%" PRIu64
                       ",\"damaged_copies\":%" PRIu64 ",\"scrub_servers\":%" PRIu64
                       ",\"scrub_mid_pass\":%" PRIu64 ",\"scrub_lowest_progress\":%.4f}",
                       cs.repair_pending, cs.repair_nodes, cs.drain_pending, cs.damage_pending,
                       damaged, scrubbing, mid, low);
        wh_sbuf_printf(b, ",\"zones\":[");
        for (size_t z = 0; z < nz; z++) {
            wh_sbuf_printf(b, "%s{\"zone\":", z ? "," : "");
            json_str(b, zones[z]);
            wh_sbuf_printf(b,
                           ",\"servers\":%" PRIu64 ",\"up\":%" PRIu64 ",\"capacity\":%" PRIu64
                           ",\"free\":%" PRIu64 ",\"copies\":%" PRIu64 "}",
                           zn[z], zup[z], zcap[z], zfree[z], zcp[z]);
        }
        wh_sbuf_printf(b, "],");
        nodes_json(b, &v);
        wh_sbuf_printf(b, "}\n");
    } else {
        wh_sbuf_printf(b, "servers:  %zu (", v.n);
        for (int k = 0, first = 1; k < S_N; k++)
            if (by[k] || k == S_UP) {
                wh_sbuf_printf(b, "%s%" PRIu64 " %s", first ? "" : ", ", by[k], sname[k]);
                first = 0;
            }
        wh_sbuf_printf(b, ")\n");
        wh_sbuf_printf(
            b, "capacity: %" PRIu64 " bytes, %" PRIu64 " free (%.1f%%), %" PRIu64 " chunk copies\n",
            cap, fre, cap ? 100.0 * (double)fre / (double)cap : 0.0, copies);
        if (!have_leader)
            wh_sbuf_printf(b, "leader:   none yet (no maintenance pass has run)\n");
        else
            wh_sbuf_printf(b, "leader:   %s (last pass %" PRId64 " s ago%s)\n", cs.leader, cs.age_s,
                           leader_live ? "" : ": no gateway holds the maintenance lock now?");
        wh_sbuf_printf(b,
                       "backlog:  repair %" PRIu64 " chunks on %" PRIu64 " servers, drain %" PRIu64
                       " chunks, damaged %" PRIu64 " copies (servers report %" PRIu64 ")\n",
                       cs.repair_pending, cs.repair_nodes, cs.drain_pending, cs.damage_pending,
                       damaged);
        wh_sbuf_printf(
            b, "scrub:    %" PRIu64 " of %" PRIu64 " servers mid-pass, lowest progress %.1f%%\n",
            mid, scrubbing, low * 100.0);
        wh_sbuf_printf(b, "zones:    %zu\n", nz);
        wh_sbuf_printf(b, "  %-12s %7s %3s %14s %14s %8s\n", "ZONE", "SERVERS", "UP", "CAPACITY",
                       "FREE", "COPIES");
        for (size_t z = 0; z < nz; z++)
            wh_sbuf_printf(
                b, "  %-12s %7" PRIu64 " %3" PRIu64 " %14" PRIu64 " %14" PRIu64 " %8" PRIu64 "\n",
                zones[z][0] ? zones[z] : "-", zn[z], zup[z], zcap[z], zfree[z], zcp[z]);
        wh_sbuf_printf(b, "\n");
        nodes_text(b, &v, true);
    }
    view_free(&v);
    return 0;
}

int role_node_main(int argc, char **argv)
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
    bool is_status = !strcmp(verb, "status");
    bool is_list = !strcmp(verb, "list") || is_status;
    if (!is_list && strcmp(verb, "drain") != 0 && strcmp(verb, "remove") != 0)
        return nc_bad("unknown node command '%s' (list, status, drain, remove)", verb);
    const char *addr = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return nc_bad("unexpected argument '%s'", argv[optind]);
    if (is_list && addr)
        return nc_bad("unexpected argument '%s'", addr);
    if (!is_list && !addr)
        return nc_bad("%s needs the storage server's HOST:PORT (as `wharfd node list` shows it)",
                      verb);
    if (!is_list && json)
        return nc_bad("%s--json goes with list and status", "");
    if (addr && (strlen(addr) >= sizeof(((meta_node_t *)0)->addr) || !strchr(addr, ':')))
        return nc_bad("a storage server is named by HOST:PORT, got '%s'", addr);
    if (!meta_url || !meta_url_is_pg(meta_url))
        return nc_bad("--meta postgresql://USER@HOST:PORT/DB is required, got '%s'",
                      meta_url ? meta_url : "");
    wh_log_set_level(lvl);
    meta_t *m = NULL;
    wh_status_t st = store_meta_open(meta_url, &m);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot open the metadata database %s: %s\n", meta_url,
                wh_status_str(st));
        return 1;
    }
    int rc = 0;
    uint32_t id = 0;
    wh_sbuf_t out;
    wh_sbuf_init(&out);
    if (is_status) {
        rc = role_node_status(m, json, &out);
    } else if (is_list) {
        rc = node_list(m, json, &out);
    } else if (!strcmp(verb, "drain")) {
        st = meta_node_drain(m, addr, &id);
        if (st == WH_OK)
            printf("node=%" PRIu32 " addr=%s state=draining\n", id, addr);
        else if (st == WH_ERR_NOT_FOUND)
            fprintf(stderr, "wharfd: no storage node at %s (wharfd node list shows them)\n", addr);
        else if (st == WH_ERR_PRECONDITION)
            fprintf(stderr,
                    "wharfd: storage node %" PRIu32 " at %s was removed: nothing to drain\n", id,
                    addr);
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
    if (out.len)
        fwrite(out.data, 1, out.len, stdout);
    wh_sbuf_free(&out);
    meta_close(m);
    return rc;
}
