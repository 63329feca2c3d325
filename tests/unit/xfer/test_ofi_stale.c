/* SPDX-License-Identifier: Apache-2.0 */
/* ofi_iface.c: a process that gets the pid of one that died without closing its shm endpoint (kill
 * -9) can still open ofi+shm. libfabric 1.17 names regions /dev/shm/<pid>:<domain>:<ep> and fails
 * with EBUSY when the name exists. */
#include "check.h"
#include "xfer/xfer.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int child_open_over_stale(void)
{
    char n[64];
    /* What a dead process with our pid would have left. */
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "/dev/shm/%d:0:%d", (int)getpid(), i);
        int fd = open(n, O_CREAT | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, 4096) != 0)
            return 2;
        close(fd);
    }
    xfer_config_t cfg;
    xfer_config_init(&cfg);
    cfg.provider = "ofi+shm";
    cfg.role = XFER_ROLE_CLIENT;
    xfer_t *x = NULL;
    char err[512] = "";
    wh_status_t st = xfer_open(&cfg, &x, err, sizeof err);
    if (st != WH_OK) {
        fprintf(stderr, "xfer_open over stale regions: %s\n", err);
        return 1;
    }
    /* and a second open in the same process keeps the first one's region */
    xfer_t *y = NULL;
    st = xfer_open(&cfg, &y, err, sizeof err);
    xfer_close(y);
    xfer_close(x);
    return st == WH_OK ? 0 : 3;
}

static void test_stale_region(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(child_open_over_stale());
    int ws = 0;
    CHECK(c > 0 && waitpid(c, &ws, 0) == c);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    char n[64];
    snprintf(n, sizeof n, "/dev/shm/%d:0:3", (int)c);
    unlink(n);
}

int main(void)
{
    RUN(test_stale_region);
    return check_done();
}
