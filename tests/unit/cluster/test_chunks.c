/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/server/cluster/chunks.c: durable write and read back with the footer's crc, abort
 * and leftover temp files leave nothing, damage is detected. */
#include "base/crc.h"
#include "base/digest.h"
#include "check.h"
#include "cluster/chunks.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static const char ID[] = "00112233445566778899aabbccddeeff";

static char g_dir[] = "/tmp/wharf-chunks-XXXXXX";

static void test_write_read(void)
{
    const char *dir = g_dir;
    cl_chunks_t *cs;
    CHECK(cl_chunks_open(dir, &cs) == WH_OK);
    static uint8_t buf[300000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 31 + 7);
    cl_chunk_writer_t *w;
    CHECK(cl_chunk_writer_open(cs, ID, true, &w) == WH_OK);
    CHECK(cl_chunk_writer_write(w, buf, 1000) == WH_OK);
    CHECK(cl_chunk_writer_write(w, buf + 1000, sizeof buf - 1000) == WH_OK);
    uint64_t crc = 0;
    uint8_t md5[16], want[16];
    CHECK(cl_chunk_writer_commit(w, &crc, md5) == WH_OK);
    CHECK_EQ_U64(crc, wh_crc64nvme(0, buf, sizeof buf));
    wh_md5(buf, sizeof buf, want);
    CHECK(memcmp(md5, want, 16) == 0);
    int fd;
    cl_chunk_info_t info;
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_OK);
    CHECK_EQ_U64(info.size, sizeof buf);
    CHECK_EQ_U64(info.crc, crc);
    CHECK(cl_chunk_verify(fd, &info) == WH_OK);
    cl_chunk_info_free(&info);
    uint8_t back[100];
    CHECK(pread(fd, back, 100, 5000) == 100 && memcmp(back, buf + 5000, 100) == 0);
    close(fd);
    CHECK_EQ_U64(cl_chunks_count(cs), 1);

    /* damage one byte: verify catches it */
    char path[512];
    snprintf(path, sizeof path, "%s/chunks/00/%s", dir, ID);
    int wfd = open(path, O_WRONLY);
    CHECK(wfd >= 0 && pwrite(wfd, "\x00", 1, 77) == 1);
    close(wfd);
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_OK);
    CHECK(cl_chunk_verify(fd, &info) == WH_ERR_CHECKSUM);
    cl_chunk_info_free(&info);
    close(fd);
    /* a truncated file has no footer */
    CHECK(truncate(path, 10) == 0);
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_ERR_CHECKSUM);

    CHECK(cl_chunk_delete(cs, ID) == WH_OK);
    CHECK(cl_chunk_delete(cs, ID) == WH_OK);
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_ERR_NOT_FOUND);
    CHECK(cl_chunk_open(cs, "../etc/passwd", &fd, &info) == WH_ERR_INVALID);

    /* abort and a crash's leftover */
    CHECK(cl_chunk_writer_open(cs, ID, true, &w) == WH_OK);
    CHECK(cl_chunk_writer_write(w, buf, 10) == WH_OK);
    cl_chunk_writer_abort(w);
    /* A crash: a child leaves a writer open and dies; its temp file stays behind. (A writer
     * must not outlive its chunk store, so the crash is a real process's.) */
    pid_t pid = fork();
    if (pid == 0) {
        cl_chunk_writer_t *cw = NULL;
        if (cl_chunk_writer_open(cs, ID, true, &cw) != WH_OK ||
            cl_chunk_writer_write(cw, buf, 10) != WH_OK)
            _exit(1);
        _exit(0);
    }
    int wst = 0;
    CHECK(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    cl_chunks_close(cs);
    CHECK(cl_chunks_open(dir, &cs) == WH_OK); /* removes the temp file */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    int n = 0;
    FILE *p = NULL;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", tmp);
    p = popen(cmd, "r");
    CHECK(p && fscanf(p, "%d", &n) == 1);
    if (p)
        pclose(p);
    CHECK(n == 0);
    CHECK_EQ_U64(cl_chunks_count(cs), 0);
    cl_chunks_close(cs);
}

/* Per-block checksums: a ranged read verifies exactly the blocks it covers, so damage in one
 * block fails the reads that touch it and no other; range_expect (the RDMA path) verifies the
 * partial end blocks and combines the table's crcs of the whole ones; quarantine moves the
 * file aside, a rewrite or a delete clears it; the first format still reads. */
static void test_blocks(void)
{
    cl_chunks_t *cs;
    CHECK(cl_chunks_open(g_dir, &cs) == WH_OK);
    const size_t n = 3 * CL_CHUNK_BLOCK + 12345;
    uint8_t *buf = malloc(n);
    CHECK(buf != NULL);
    if (!buf)
        return;
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 131 + (i >> 13));
    cl_chunk_writer_t *w;
    uint64_t crc = 0;
    CHECK(cl_chunk_writer_open(cs, ID, false, &w) == WH_OK);
    for (size_t off = 0; off < n; off += 70001) /* writes that straddle blocks */
        CHECK(cl_chunk_writer_write(w, buf + off, off + 70001 <= n ? 70001 : n - off) == WH_OK);
    CHECK(cl_chunk_writer_commit(w, &crc, NULL) == WH_OK);
    int fd;
    cl_chunk_info_t info;
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_OK);
    CHECK_EQ_U64(info.size, n);
    CHECK_EQ_U64(info.nblocks, 4);
    CHECK_EQ_U64(info.block, CL_CHUNK_BLOCK);
    static const uint64_t ranges[][2] = {{0, 1},
                                         {5, 100},
                                         {CL_CHUNK_BLOCK - 3, 10},
                                         {CL_CHUNK_BLOCK, CL_CHUNK_BLOCK},
                                         {100, 2 * CL_CHUNK_BLOCK + 7},
                                         {0, 0}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        uint64_t o = ranges[i][0], l = ranges[i][1], a = 1, b = 2;
        CHECK(cl_chunk_verify_range(fd, &info, o, l, &a) == WH_OK);
        CHECK(cl_chunk_range_expect(fd, &info, o, l, &b) == WH_OK);
        CHECK_EQ_U64(a, wh_crc64nvme(0, buf + o, l));
        CHECK_EQ_U64(b, a);
    }
    uint64_t whole = 0;
    CHECK(cl_chunk_range_expect(fd, &info, 0, n, &whole) == WH_OK);
    CHECK_EQ_U64(whole, crc);
    CHECK(cl_chunk_verify_range(fd, &info, n - 1, 2, &whole) == WH_ERR_RANGE);
    close(fd);
    cl_chunk_info_free(&info);
    /* damage in block 2 */
    char path[512];
    snprintf(path, sizeof path, "%s/chunks/00/%s", g_dir, ID);
    int wfd = open(path, O_WRONLY);
    CHECK(wfd >= 0 && pwrite(wfd, "\xff\x00", 2, 2 * CL_CHUNK_BLOCK + 500) == 2);
    close(wfd);
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_OK);
    uint64_t c = 0;
    CHECK(cl_chunk_verify_range(fd, &info, 10, 1000, &c) == WH_OK); /* block 0 */
    CHECK(cl_chunk_verify_range(fd, &info, 2 * CL_CHUNK_BLOCK + 600, 10, &c) ==
          WH_ERR_CHECKSUM); /* block 2 */
    CHECK(cl_chunk_range_expect(fd, &info, 2 * CL_CHUNK_BLOCK + 400, 200, &c) == WH_ERR_CHECKSUM);
    /* a whole block is not read here: the expectation is the intact bytes' crc, which the
     * damaged bytes an RDMA push computes over cannot match */
    CHECK(cl_chunk_range_expect(fd, &info, 2 * CL_CHUNK_BLOCK, CL_CHUNK_BLOCK, &c) == WH_OK);
    CHECK_EQ_U64(c, wh_crc64nvme(0, buf + 2 * CL_CHUNK_BLOCK, CL_CHUNK_BLOCK));
    uint8_t *on_disk = malloc(CL_CHUNK_BLOCK);
    CHECK(on_disk && pread(fd, on_disk, CL_CHUNK_BLOCK, 2 * CL_CHUNK_BLOCK) == CL_CHUNK_BLOCK);
    CHECK(on_disk && wh_crc64nvme(0, on_disk, CL_CHUNK_BLOCK) != c);
    free(on_disk);
    CHECK(cl_chunk_verify(fd, &info) == WH_ERR_CHECKSUM);
    CHECK(cl_chunk_quarantine(cs, ID, fd) == WH_OK);
    close(fd);
    cl_chunk_info_free(&info);
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(cl_chunks_damaged_count(cs), 1);
    char(*ids)[CL_CHUNK_ID_LEN + 1] = NULL;
    size_t nid = 0;
    CHECK(cl_chunks_list_damaged(cs, &ids, &nid) == WH_OK && nid == 1 && strcmp(ids[0], ID) == 0);
    free(ids);
    /* the repair rewrites it: the damaged copy goes */
    CHECK(cl_chunk_writer_open(cs, ID, false, &w) == WH_OK);
    CHECK(cl_chunk_writer_write(w, buf, n) == WH_OK);
    CHECK(cl_chunk_writer_commit(w, &crc, NULL) == WH_OK);
    CHECK_EQ_U64(cl_chunks_damaged_count(cs), 0);
    CHECK(cl_chunks_list_prefix(cs, 0, &ids, &nid) == WH_OK && nid == 1);
    free(ids);
    CHECK(cl_chunk_delete(cs, ID) == WH_OK);
    /* a file of the first format (bytes + WHC1 footer) still reads, verified whole */
    int v1 = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    uint8_t foot[16] = {'W', 'H', 'C', '1'};
    uint64_t c1 = wh_crc64nvme(0, buf, 5000);
    for (int i = 0; i < 8; i++)
        foot[8 + i] = (uint8_t)(c1 >> (8 * i));
    CHECK(v1 >= 0 && write(v1, buf, 5000) == 5000 && write(v1, foot, 16) == 16);
    close(v1);
    CHECK(cl_chunk_open(cs, ID, &fd, &info) == WH_OK);
    CHECK(info.block == 0 && info.size == 5000 && info.crc == c1);
    CHECK(cl_chunk_range_expect(fd, &info, 10, 20, &c) == WH_OK);
    CHECK_EQ_U64(c, wh_crc64nvme(0, buf + 10, 20));
    close(fd);
    cl_chunk_info_free(&info);
    CHECK(cl_chunk_delete(cs, ID) == WH_OK);
    free(buf);
    cl_chunks_close(cs);
}

/* A committed chunk is never replaced: other bytes under its id are WH_ERR_EXISTS and leave
 * it as it was, the same bytes again succeed; cl_chunk_matches holds only for the map's crc. */
static void test_no_replace(void)
{
    static const char id[] = "feedfacefeedfacefeedfacefeedface";
    cl_chunks_t *cs;
    CHECK(cl_chunks_open(g_dir, &cs) == WH_OK);
    static uint8_t a[3 << 20], b[3 << 20];
    for (size_t i = 0; i < sizeof a; i++) {
        a[i] = (uint8_t)(i * 13 + 1);
        b[i] = (uint8_t)(i * 17 + 3);
    }
    const uint8_t *bodies[] = {a, b, a};
    wh_status_t want[] = {WH_OK, WH_ERR_EXISTS, WH_OK};
    for (int k = 0; k < 3; k++) {
        cl_chunk_writer_t *w;
        uint64_t crc = 0;
        CHECK(cl_chunk_writer_open(cs, id, false, &w) == WH_OK);
        CHECK(cl_chunk_writer_write(w, bodies[k], sizeof a) == WH_OK);
        CHECK(cl_chunk_writer_commit(w, &crc, NULL) == want[k]);
    }
    int fd;
    cl_chunk_info_t info;
    CHECK(cl_chunk_open(cs, id, &fd, &info) == WH_OK);
    CHECK_EQ_U64(info.crc, wh_crc64nvme(0, a, sizeof a));
    CHECK(cl_chunk_verify(fd, &info) == WH_OK);
    CHECK(cl_chunk_matches(&info, info.crc) == WH_OK);
    CHECK(cl_chunk_matches(&info, wh_crc64nvme(0, b, sizeof b)) == WH_ERR_CHECKSUM);
    info.blocks[1] ^= 1; /* a table that does not make up the footer's crc */
    CHECK(cl_chunk_matches(&info, info.crc) == WH_ERR_CHECKSUM);
    cl_chunk_info_free(&info);
    close(fd);
    CHECK(cl_chunk_delete(cs, id) == WH_OK);
    cl_chunks_close(cs);
}

int main(void)
{
    char *dir = g_dir;
    if (!mkdtemp(g_dir))
        return 1;
    RUN(test_write_read);
    RUN(test_blocks);
    RUN(test_no_replace);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    return check_done();
}
