/* Tests of src/cluster/chunks.c: durable write and read back with the footer's crc, abort and
 * leftover temp files leave nothing, damage is detected. */
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
    uint64_t size, c2;
    CHECK(cl_chunk_open(cs, ID, &fd, &size, &c2) == WH_OK);
    CHECK_EQ_U64(size, sizeof buf);
    CHECK_EQ_U64(c2, crc);
    CHECK(cl_chunk_verify(fd, size, c2) == WH_OK);
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
    CHECK(cl_chunk_open(cs, ID, &fd, &size, &c2) == WH_OK);
    CHECK(cl_chunk_verify(fd, size, c2) == WH_ERR_CHECKSUM);
    close(fd);
    /* a truncated file has no footer */
    CHECK(truncate(path, 10) == 0);
    CHECK(cl_chunk_open(cs, ID, &fd, &size, &c2) == WH_ERR_CHECKSUM);

    CHECK(cl_chunk_delete(cs, ID) == WH_OK);
    CHECK(cl_chunk_delete(cs, ID) == WH_OK);
    CHECK(cl_chunk_open(cs, ID, &fd, &size, &c2) == WH_ERR_NOT_FOUND);
    CHECK(cl_chunk_open(cs, "../etc/passwd", &fd, &size, &c2) == WH_ERR_INVALID);

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

int main(void)
{
    char *dir = g_dir;
    if (!mkdtemp(g_dir))
        return 1;
    RUN(test_write_read);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    return check_done();
}
