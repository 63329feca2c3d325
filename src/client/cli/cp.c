/* SPDX-License-Identifier: Apache-2.0 */
/* `wharf cp SRC DST`: a local file to s3://bucket/key or back, over RDMA (the file is mapped
 * and registered, so the server moves the bytes straight into or out of the page cache) or
 * over HTTP, with a progress line on a TTY. */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- cp --------------------------------------------------------------------------------- */

typedef struct progress {
    const char *label;
    uint64_t total;
    _Atomic uint64_t done;
    atomic_bool stop;
    bool known; /* done is meaningful (GET in segments); else elapsed time only */
    double t0;
    pthread_t th;
    bool running;
} progress_t;

static void progress_draw(progress_t *p, bool final)
{
    char a[32], b[32];
    uint64_t done = atomic_load(&p->done);
    double el = now_s() - p->t0;
    cli_fmt_bytes(done, a, sizeof a);
    cli_fmt_bytes(p->total, b, sizeof b);
    if (p->known || final) {
        int pct = p->total ? (int)(done * 100 / p->total) : 100;
        int w = 30, fill = pct * w / 100;
        char bar[32];
        for (int i = 0; i < w; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[w] = '\0';
        fprintf(stderr, "\r%s [%s] %3d%% %s/%s %.1fs ", p->label, bar, pct, a, b, el);
    } else {
        static const char spin[] = "|/-\\";
        fprintf(stderr, "\r%s [%c] %s %.1fs ", p->label, spin[(int)(el * 5) % 4], b, el);
    }
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

static void *progress_main(void *arg)
{
    progress_t *p = arg;
    while (!atomic_load(&p->stop)) {
        progress_draw(p, false);
        usleep(200000);
    }
    return NULL;
}

static void progress_start(progress_t *p, const cli_t *g, const char *label, uint64_t total,
                           bool known)
{
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->known = known;
    p->t0 = now_s();
    if (g->quiet || !isatty(STDERR_FILENO))
        return;
    p->running = pthread_create(&p->th, NULL, progress_main, p) == 0;
}

static void progress_stop(progress_t *p, bool ok)
{
    if (!p->running)
        return;
    atomic_store(&p->stop, true);
    pthread_join(p->th, NULL);
    if (ok)
        atomic_store(&p->done, p->total);
    progress_draw(p, true);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int parse_transport(const char *s, wharf_transport_t *t)
{
    if (!s || !strcmp(s, "auto"))
        *t = WHARF_TRANSPORT_AUTO;
    else if (!strcmp(s, "rdma"))
        *t = WHARF_TRANSPORT_RDMA;
    else if (!strcmp(s, "http"))
        *t = WHARF_TRANSPORT_HTTP;
    else
        return -1;
    return 0;
}

static int cp_upload(const cli_t *g, wharf_client_t *c, const char *path, const char *bucket,
                     const char *key, wharf_transport_t t)
{
    int rc = 1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "wharf cp: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "wharf cp: %s is not a regular file\n", path);
        close(fd);
        return 1;
    }
    uint64_t size = (uint64_t)sb.st_size;
    void *p = NULL;
    wharf_mem_t *m = NULL;
    static const char empty[1];
    if (size) {
        p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "wharf cp: cannot map %s: %s\n", path, strerror(errno));
            close(fd);
            return 1;
        }
        madvise(p, size, MADV_SEQUENTIAL);
        if (t != WHARF_TRANSPORT_HTTP && strcmp(wharf_client_provider(c), "none") != 0) {
            wharf_status_t st = wharf_mem_register(c, p, size, WHARF_MEM_HOST, &m);
            if (st != WHARF_OK) {
                rc = cli_fail("cp", st);
                goto out;
            }
        }
    }
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = t;
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    progress_t pr;
    char label[256];
    snprintf(label, sizeof label, "upload %s", base_name(path));
    progress_start(&pr, g, label, size, false);
    wharf_status_t st = wharf_object_put(c, bucket, key, size ? p : empty, size, &o, &r);
    progress_stop(&pr, st == WHARF_OK);
    if (st != WHARF_OK) {
        rc = cli_fail("cp", st);
        goto out;
    }
    if (!g->quiet) {
        printf("upload: %s to s3://%s/%s\n", path, bucket, key);
        cli_print_report(stdout, "cp", &r);
    }
    rc = 0;
out:
    wharf_mem_deregister(m);
    if (size)
        munmap(p, size);
    close(fd);
    return rc;
}

static int cp_download(const cli_t *g, wharf_client_t *c, const char *bucket, const char *key,
                       const char *path, wharf_transport_t t)
{
    wharf_stat_t s;
    wharf_stat_init(&s, sizeof s);
    wharf_status_t st = wharf_object_stat(c, bucket, key, &s);
    if (st != WHARF_OK)
        return cli_fail("cp", st);
    int rc = 1;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "wharf cp: cannot create %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint64_t size = s.length;
    void *p = NULL;
    wharf_mem_t *m = NULL;
    wharf_report_t total;
    wharf_report_init(&total, sizeof total);
    if (size == 0) {
        rc = 0;
        goto done;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        fprintf(stderr, "wharf cp: cannot size %s to %" PRIu64 " bytes: %s\n", path, size,
                strerror(errno));
        goto out;
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        p = NULL;
        fprintf(stderr, "wharf cp: cannot map %s: %s\n", path, strerror(errno));
        goto out;
    }
    if (t != WHARF_TRANSPORT_HTTP && strcmp(wharf_client_provider(c), "none") != 0) {
        st = wharf_mem_register(c, p, size, WHARF_MEM_HOST, &m);
        if (st != WHARF_OK) {
            rc = cli_fail("cp", st);
            goto out;
        }
    }
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = t;
    /* In segments, so the progress bar moves; each segment still runs in parallel pieces. */
    uint64_t seg = 256ull << 20;
    progress_t pr;
    char label[256];
    snprintf(label, sizeof label, "download %s", base_name(key));
    progress_start(&pr, g, label, size, true);
    double t0 = now_s();
    for (uint64_t off = 0; off < size; off += seg) {
        uint64_t n = size - off < seg ? size - off : seg;
        wharf_report_t r;
        wharf_report_init(&r, sizeof r);
        st = wharf_object_get(c, bucket, key, (char *)p + off, n, off, n, &o, &r);
        if (st != WHARF_OK)
            break;
        if (r.bytes != n) {
            st = WHARF_ERR_PROTOCOL;
            fprintf(stderr,
                    "wharf cp: got %" PRIu64 " of %" PRIu64 " bytes at offset %" PRIu64
                    " (did the object change?)\n",
                    r.bytes, n, off);
            break;
        }
        if (off == 0) {
            total = r;
        } else {
            total.bytes += r.bytes;
            total.requests += r.requests;
            total.retries += r.retries;
            if (r.transport == WHARF_TRANSPORT_HTTP)
                total.transport = WHARF_TRANSPORT_HTTP;
            if (r.fell_back && !total.fell_back) {
                total.fell_back = 1;
                memcpy(total.fallback_reason, r.fallback_reason, sizeof r.fallback_reason);
            }
            total.crc64nvme = 0; /* per segment only */
        }
        atomic_fetch_add(&pr.done, n);
    }
    total.wall_s = now_s() - t0;
    progress_stop(&pr, st == WHARF_OK);
    if (st != WHARF_OK) {
        rc = st == WHARF_ERR_PROTOCOL && !*wharf_last_error() ? 1 : cli_fail("cp", st);
        goto out;
    }
    if (msync(p, size, MS_SYNC) != 0) {
        fprintf(stderr, "wharf cp: writing %s failed: %s\n", path, strerror(errno));
        goto out;
    }
    rc = 0;
done:
    if (!g->quiet) {
        printf("download: s3://%s/%s to %s\n", bucket, key, path);
        cli_print_report(stdout, "cp", &total);
    }
out:
    wharf_mem_deregister(m);
    if (p)
        munmap(p, size);
    close(fd);
    if (rc != 0)
        unlink(path);
    return rc;
}

int cli_cp(const cli_t *g, int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "wharf cp: expected SRC DST (one of them s3://bucket/key)\n");
        return 2;
    }
    wharf_transport_t t;
    if (parse_transport(g->transport, &t) != 0) {
        fprintf(stderr, "wharf cp: --transport must be rdma, http or auto, not %s\n", g->transport);
        return 2;
    }
    bool s3src = !strncmp(argv[0], "s3://", 5), s3dst = !strncmp(argv[1], "s3://", 5);
    if (s3src == s3dst) {
        fprintf(stderr, "wharf cp: exactly one of SRC and DST must be s3://bucket/key\n");
        return 2;
    }
    char bucket[256], keybuf[1200], pathbuf[4096];
    const char *key;
    if (cli_parse_s3(s3src ? argv[0] : argv[1], bucket, sizeof bucket, &key) != 0) {
        fprintf(stderr, "wharf cp: bad s3 URL %s\n", s3src ? argv[0] : argv[1]);
        return 2;
    }
    wharf_client_t *c;
    if (cli_client(g, &c))
        return 1;
    int rc;
    if (s3dst) {
        if (!*key || key[strlen(key) - 1] == '/') {
            snprintf(keybuf, sizeof keybuf, "%s%s", key, base_name(argv[0]));
            key = keybuf;
        }
        rc = cp_upload(g, c, argv[0], bucket, key, t);
    } else {
        if (!*key) {
            fprintf(stderr, "wharf cp: %s names no key\n", argv[0]);
            wharf_client_destroy(c);
            return 2;
        }
        const char *path = argv[1];
        struct stat sb;
        size_t pl = strlen(path);
        if ((stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) || (pl && path[pl - 1] == '/')) {
            snprintf(pathbuf, sizeof pathbuf, "%s%s%s", path, pl && path[pl - 1] == '/' ? "" : "/",
                     base_name(key));
            path = pathbuf;
        }
        rc = cp_download(g, c, bucket, key, path, t);
    }
    wharf_client_destroy(c);
    return rc;
}
