/* The disk tier's file format (tier_disk.h): a versioned header, then the
 * bytes, written and read in large pieces at aligned offsets. */
#include "tier_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

static const char magic[8] = "GHDTIER";

#ifdef GHD_TESTABLE
static atomic_long fail_write, fail_read;

void ghd_tier_file_fail_write_nth(long n)
{
    atomic_store(&fail_write, n);
}

void ghd_tier_file_fail_read_nth(long n)
{
    atomic_store(&fail_read, n);
}

/* Whether the countdown reaches its turn now. */
static int hook_fires(atomic_long *c)
{
    long v = atomic_load(c);
    while (v > 0 && !atomic_compare_exchange_weak(c, &v, v - 1))
        ;
    return v == 1;
}
#endif

void ghd_tier_file_path(const char *dir, const char *id, char *out, size_t len)
{
    snprintf(out, len, "%s/%s%s", dir, id, GHD_TIER_FILE_SUFFIX);
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void header_fill(const struct ghd_tier_file_id *f, unsigned char h[GHD_TIER_FILE_HEADER])
{
    memset(h, 0, GHD_TIER_FILE_HEADER);
    memcpy(h, magic, sizeof(magic));
    uint32_t version = GHD_TIER_FILE_VERSION, bytes = GHD_TIER_FILE_HEADER;
    for (int i = 0; i < 4; i++) {
        h[8 + i] = (unsigned char)(version >> (8 * i));
        h[12 + i] = (unsigned char)(bytes >> (8 * i));
    }
    put64(h + 16, f->size);
    put64(h + 24, f->version);
    snprintf((char *)h + 32, 72, "%s", f->id);
}

static int write_all(int fd, const void *src, size_t n, off_t at)
{
    const char *p = src;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : ENOSPC;
        p += w;
        n -= (size_t)w;
        at += w;
    }
    return 0;
}

int ghd_tier_file_create(const struct ghd_tier_file_id *f, int *fd, struct ghd_err *err)
{
    char path[512];
    ghd_tier_file_path(f->dir, f->id, path, sizeof(path));
    int d = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (d < 0)
        return ghd_err_set(err, GHD_ENOMEM, "disk tier: cannot create %s: %s", path,
                           strerror(errno));
    unsigned char h[GHD_TIER_FILE_HEADER];
    header_fill(f, h);
    int e = write_all(d, h, sizeof(h), 0);
    if (e) {
        close(d);
        unlink(path);
        return ghd_err_set(err, GHD_ENOMEM, "disk tier: cannot write %s: %s", path, strerror(e));
    }
    *fd = d;
    return 0;
}

int ghd_tier_file_write(int fd, const void *src, size_t n, uint64_t off, struct ghd_err *err)
{
    int e = 0;
#ifdef GHD_TESTABLE
    if (hook_fires(&fail_write))
        e = ENOSPC;
#endif
    if (!e)
        e = write_all(fd, src, n, (off_t)(GHD_TIER_FILE_HEADER + off));
    if (e)
        return ghd_err_set(err, GHD_ENOMEM, "disk tier: write failed: %s", strerror(e));
    return 0;
}

int ghd_tier_file_open(const struct ghd_tier_file_id *f, int *fd, struct ghd_err *err)
{
    char path[512];
    ghd_tier_file_path(f->dir, f->id, path, sizeof(path));
    int d = open(path, O_RDONLY | O_CLOEXEC);
    if (d < 0)
        return ghd_err_set(err, GHD_EUNREADABLE, "disk tier: cannot open %s: %s", path,
                           strerror(errno));
    unsigned char h[GHD_TIER_FILE_HEADER], want[GHD_TIER_FILE_HEADER];
    header_fill(f, want);
    ssize_t got = pread(d, h, sizeof(h), 0);
    const char *bad = NULL;
    if (got != (ssize_t)sizeof(h))
        bad = "its header is short";
    else if (memcmp(h, magic, sizeof(magic)) != 0)
        bad = "its magic is not GHDTIER";
    else if (memcmp(h + 8, want + 8, 8) != 0)
        bad = "its format version is not 1";
    else if (get64(h + 16) != f->size || memcmp(h + 32, want + 32, 72) != 0)
        bad = "it holds another buffer";
    if (bad) {
        close(d);
        return ghd_err_set(err, GHD_EUNREADABLE, "disk tier: %s: %s", path, bad);
    }
    *fd = d;
    return 0;
}

int ghd_tier_file_read(int fd, void *dst, size_t n, uint64_t off, struct ghd_err *err)
{
    char *p = dst;
    off_t at = (off_t)(GHD_TIER_FILE_HEADER + off);
#ifdef GHD_TESTABLE
    if (hook_fires(&fail_read))
        return ghd_err_set(err, GHD_EUNREADABLE, "disk tier: read failed: %s", strerror(EIO));
#endif
    while (n > 0) {
        ssize_t r = pread(fd, p, n, at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return ghd_err_set(err, GHD_EUNREADABLE, "disk tier: read failed: %s",
                               r < 0 ? strerror(errno) : "the file is short");
        p += r;
        n -= (size_t)r;
        at += r;
    }
    return 0;
}

void ghd_tier_file_remove(const char *dir, const char *id)
{
    char path[512];
    ghd_tier_file_path(dir, id, path, sizeof(path));
    unlink(path);
}
