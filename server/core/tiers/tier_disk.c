/* The disk tier's file format (tier_disk.h): a versioned header, then the
 * bytes, written and read in large pieces at aligned offsets, with O_DIRECT
 * where asked (f->direct) and the filesystem takes it: a spilled buffer does
 * not also fill the page cache, whose copy of it would only crowd out what
 * the host needs when the tier is larger than the cache could hold. A
 * folder whose filesystem refuses O_DIRECT (EINVAL at open: tmpfs before
 * Linux 6.6) gets plain I/O; so does an unaligned piece (a buffer's ragged
 * end, a download's range), from that piece on. */
#define _GNU_SOURCE
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
static atomic_int refuse_direct;

void ghd_tier_file_refuse_direct(int on)
{
    atomic_store(&refuse_direct, on);
}

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

/* What O_DIRECT needs of an address, a length and a file offset. */
#define TIER_DIRECT_ALIGN 4096
_Static_assert(GHD_TIER_FILE_HEADER % TIER_DIRECT_ALIGN == 0, "the data lies aligned");

static int is_aligned(uint64_t v)
{
    return v % TIER_DIRECT_ALIGN == 0;
}

/* Opens path with O_DIRECT (direct 1), or without where the filesystem
 * refuses it. */
static int open_direct(const char *path, int flags, mode_t mode, int direct)
{
    int d;
    if (!direct)
        return open(path, flags, mode);
#ifdef GHD_TESTABLE
    if (atomic_load(&refuse_direct)) { /* as tmpfs did before Linux 6.6 */
        d = -1;
        errno = EINVAL;
    } else
#endif
        d = open(path, flags | O_DIRECT, mode);
    return d < 0 && errno == EINVAL ? open(path, flags, mode) : d;
}

/* Turns fd's O_DIRECT off (from now on, its I/O goes through the page
 * cache); 1 when it was on. */
static int direct_off(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || !(fl & O_DIRECT))
        return 0;
    return fcntl(fd, F_SETFL, fl & ~O_DIRECT) == 0;
}

/* All n bytes at `at`, in as few calls as the kernel takes: pwrite (write
 * 1) or pread. A piece an O_DIRECT descriptor refuses (EINVAL) goes on
 * without O_DIRECT. 0, or an errno (ENOSPC for a write that wrote nothing,
 * ENODATA for a read past the end). */
static int io_loop(int fd, char *p, size_t n, off_t at, int write)
{
    while (n > 0) {
        ssize_t k = write ? pwrite(fd, p, n, at) : pread(fd, p, n, at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EINVAL && direct_off(fd))
            continue;
        if (k <= 0)
            return k < 0 ? errno : write ? ENOSPC : ENODATA;
        p += k;
        n -= (size_t)k;
        at += k;
    }
    return 0;
}

/* As io_loop; of an unaligned piece, the aligned part from its start (if
 * any) keeps O_DIRECT, and the rest goes through the page cache. */
static int io_all(int fd, char *p, size_t n, off_t at, int write)
{
    if (is_aligned((uintptr_t)p) && is_aligned(n) && is_aligned((uint64_t)at))
        return io_loop(fd, p, n, at, write);
    size_t head =
        is_aligned((uintptr_t)p) && is_aligned((uint64_t)at) ? n - n % TIER_DIRECT_ALIGN : 0;
    int e = head ? io_loop(fd, p, head, at, write) : 0;
    direct_off(fd);
    return e ? e : io_loop(fd, p + head, n - head, at + (off_t)head, write);
}

static int write_all(int fd, const void *src, size_t n, off_t at)
{
    return io_all(fd, (char *)src, n, at, 1);
}

int ghd_tier_file_create(const struct ghd_tier_file_id *f, int *fd, struct ghd_err *err)
{
    char path[512];
    ghd_tier_file_path(f->dir, f->id, path, sizeof(path));
    int d = open_direct(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600, f->direct);
    if (d < 0)
        return ghd_err_set(err, GHD_ENOMEM, "disk tier: cannot create %s: %s", path,
                           strerror(errno));
    _Alignas(TIER_DIRECT_ALIGN) unsigned char h[GHD_TIER_FILE_HEADER];
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
    int d = open_direct(path, O_RDONLY | O_CLOEXEC, 0, f->direct);
    if (d < 0)
        return ghd_err_set(err, GHD_EUNREADABLE, "disk tier: cannot open %s: %s", path,
                           strerror(errno));
    _Alignas(TIER_DIRECT_ALIGN) unsigned char h[GHD_TIER_FILE_HEADER];
    unsigned char want[GHD_TIER_FILE_HEADER];
    header_fill(f, want);
    const char *bad = NULL;
    if (io_all(d, (char *)h, sizeof(h), 0, 0) != 0)
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
#ifdef GHD_TESTABLE
    if (hook_fires(&fail_read))
        return ghd_err_set(err, GHD_EUNREADABLE, "disk tier: read failed: %s", strerror(EIO));
#endif
    int e = io_all(fd, dst, n, (off_t)(GHD_TIER_FILE_HEADER + off), 0);
    if (e)
        return ghd_err_set(err, GHD_EUNREADABLE, "disk tier: read failed: %s",
                           e == ENODATA ? "the file is short" : strerror(e));
    return 0;
}

void ghd_tier_file_remove(const char *dir, const char *id)
{
    char path[512];
    ghd_tier_file_path(dir, id, path, sizeof(path));
    unlink(path);
}
