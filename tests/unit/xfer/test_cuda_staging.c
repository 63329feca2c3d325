/* SPDX-License-Identifier: Apache-2.0 */
/* The server side of cuda+ipc without a GPU: WHARF_LIBCUDA names tests/unit/xfer/fake_cuda.c
 * (host memory behind the driver's entry points), so the IPC open, the region checks, the
 * pinned staging with the crc fused in, and the source read from a file (WHARF_CUDA_SOURCE=read)
 * move real bytes that are compared here. What a GPU does with them is tested on a GPU host. */
#include "base/crc.h"
#include "check.h"
#include "cuda_fake.h"
#include "xfer/token.h"
#include "xfer/xfer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#define DEV_BYTES (24u << 20)
#define FILE_BYTES ((20u << 20) + 123u)

static char g_err[256];

static xfer_t *open_server(const char *source)
{
    setenv("WHARF_CUDA_SOURCE", source, 1);
    return fake_cuda_server();
}

int main(void)
{
    /* These are the paths without the registration cache (test_cuda_regcache.c has it). */
    setenv("WHARF_CUDA_REGCACHE", "0", 1);
    const char *lib = getenv("WHARF_LIBCUDA");
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    int (*dev_alloc)(unsigned long long *, size_t) = h ? dlsym(h, "fakecuMemAlloc") : NULL;
    if (!dev_alloc) {
        fprintf(stderr, "WHARF_LIBCUDA must name the fake driver (fake_cuda.c)\n");
        return 1;
    }
    unsigned long long dptr = 0;
    CHECK(dev_alloc(&dptr, DEV_BYTES) == 0);
    uint8_t *dev = (uint8_t *)(uintptr_t)dptr;

    /* The client: registers the "device" memory and packs a cuda1 token for 21 MiB of it. */
    xfer_t *cx = NULL;
    xfer_mr_t *mr = NULL;
    xfer_token_t t;
    CHECK(fake_cuda_token(dev, DEV_BYTES, 21u << 20, &cx, &mr, &t));

    /* The object: a file of random bytes. */
    char path[] = "/tmp/wharf-cuda-staging-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    uint8_t *src = malloc(FILE_BYTES);
    for (size_t i = 0; i < FILE_BYTES; i++)
        src[i] = (uint8_t)(rand() >> 7);
    CHECK(write(fd, src, FILE_BYTES) == (ssize_t)FILE_BYTES);
    unlink(path);
    uint64_t off = 4096, len = FILE_BYTES - off;

    xfer_target_t tgt = {.token = &t, .bind_pid = getpid()};
    xfer_batch_t *b = NULL;
    uint64_t crc = 0;

    /* read: the batch reads the file itself; bytes and crc are the file's. */
    xfer_t *sr = open_server("read");
    CHECK(sr != NULL);
    CHECK(xfer_batch_begin(sr, &tgt, &b, g_err, sizeof g_err) == WH_OK);
    CHECK(xfer_batch_reads_fd(b, fd));
    memset(dev, 0, DEV_BYTES);
    CHECK(xfer_batch_post_fd_crc(b, fd, off, len, 0, &crc) == WH_OK);
    CHECK_EQ_U64(crc, wh_crc64nvme(0, src + off, len));
    CHECK(memcmp(dev, src + off, len) == 0);
    CHECK_EQ_U64(xfer_batch_bytes(b), len);
    /* outside the token's 21 MiB region: refused, nothing moved */
    CHECK(xfer_batch_post_fd_crc(b, fd, 0, 2u << 20, 20u << 20, &crc) == WH_ERR_INVALID);
    CHECK(xfer_batch_end(b) == WH_OK);
    /* past the file's end: a short read fails the batch with WH_ERR_IO and says so */
    CHECK(xfer_batch_begin(sr, &tgt, &b, g_err, sizeof g_err) == WH_OK);
    CHECK(xfer_batch_post_fd_crc(b, fd, FILE_BYTES - 100, 4096, 0, &crc) == WH_ERR_IO);
    char msg[256];
    xfer_batch_error(b, msg, sizeof msg);
    CHECK(strstr(msg, "read of 4096 bytes") != NULL);
    xfer_batch_end(b);
    xfer_close(sr);

    /* map (the default): the engine maps the file and posts the mapping. */
    xfer_t *sm = open_server("map");
    CHECK(sm != NULL);
    CHECK(xfer_batch_begin(sm, &tgt, &b, g_err, sizeof g_err) == WH_OK);
    CHECK(!xfer_batch_reads_fd(b, fd));
    CHECK(xfer_batch_post_fd_crc(b, fd, off, len, 0, &crc) == WH_ERR_UNSUPPORTED);
    uint8_t *m = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    memset(dev, 0, DEV_BYTES);
    CHECK(xfer_batch_post_crc(b, m + off, len, 4096, &crc) == WH_OK);
    CHECK_EQ_U64(crc, wh_crc64nvme(0, src + off, len));
    CHECK(memcmp(dev + 4096, src + off, len) == 0);
    CHECK(xfer_batch_end(b) == WH_OK);
    munmap(m, FILE_BYTES);
    xfer_close(sm);

    /* auto (the default): read a file on a tmpfs in 4 KiB pages, map a file elsewhere. */
    xfer_t *sa = open_server("auto");
    CHECK(sa != NULL);
    CHECK(xfer_batch_begin(sa, &tgt, &b, g_err, sizeof g_err) == WH_OK);
    char shm_path[] = "/dev/shm/wharf-cuda-staging-XXXXXX";
    int sfd = mkstemp(shm_path);
    CHECK(sfd >= 0);
    unlink(shm_path);
    CHECK(write(sfd, src, 1u << 20) == (ssize_t)(1u << 20));
    struct statfs tsf;
    bool tmp_is_tmpfs = fstatfs(fd, &tsf) == 0 && tsf.f_type == TMPFS_MAGIC;
    CHECK(xfer_batch_reads_fd(b, sfd)); /* /dev/shm as mounted: 4 KiB pages */
    CHECK(xfer_batch_reads_fd(b, fd) == tmp_is_tmpfs);
    memset(dev, 0, DEV_BYTES);
    CHECK(xfer_batch_post_fd_crc(b, sfd, 0, 1u << 20, 0, &crc) == WH_OK);
    CHECK_EQ_U64(crc, wh_crc64nvme(0, src, 1u << 20));
    CHECK(memcmp(dev, src, 1u << 20) == 0);
    CHECK(xfer_batch_end(b) == WH_OK);
    close(sfd);
    xfer_close(sa);

    xfer_mr_dereg(mr);
    xfer_close(cx);
    close(fd);
    free(src);
    printf("%d passed, %d failed\n", g_check_pass, g_check_fail);
    return g_check_fail ? 1 : 0;
}
