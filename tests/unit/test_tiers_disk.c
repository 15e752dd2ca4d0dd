/* The disk tier and the bytes of spilled buffers (server/core/tiers/tier_disk.c,
 * tier_io.c, tier.c) on a host-backend runtime: a page-in brings back the
 * very bytes from the host tier and from disk, large buffers included, a
 * read finds them where they are, and a disk that refuses (full, gone,
 * failing, a damaged file) is an error, never stale bytes; files are written
 * and read with O_DIRECT where the filesystem takes it, plainly on tmpfs. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "core/tiers/tier_disk.h"
#include "tiers_fixture.h"

/* A buffer spilled to the host tier, then to disk, comes back with its
 * bytes; its version does not move; the file and the host copy go. */
static void test_page_in_from_each_tier(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(2 * MIB, 64 * MIB);
    struct ghd_buffer *b = make(f, 3 * MIB / 2, NULL);
    fill(b, 5);
    uint64_t v = ghd_buffer_version(b);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_move(b, GHD_TIER_HOST, 0, &err), 0);
    assert_int_equal(tier_of(b), GHD_TIER_HOST);
    assert_null(b->d_ptr);
    assert_true(holds_seed(b, 5));
    assert_int_equal(tier_of(b), GHD_TIER_DEVICE);
    assert_int_equal(ghd_tier_move(b, GHD_TIER_DISK, 0, &err), 0);
    assert_int_equal(tier_of(b), GHD_TIER_DISK);
    char path[256];
    ghd_tier_file_path(f->dir, b->id, path, sizeof(path));
    assert_int_equal(access(path, F_OK), 0);
    assert_true(holds_seed(b, 5));
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(ghd_buffer_version(b), v);
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* A buffer of several pieces of the disk tier's copies (8 MiB each, two
 * bounces taking turns) and a ragged end goes to disk and back whole. */
static void test_large_through_disk(void **state)
{
    (void)state;
    struct fixture *f = open_pool_tiers(32 * MIB, 0, 128 * MIB);
    struct ghd_buffer *b = make(f, 19 * MIB + 4097, NULL);
    fill(b, 11);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_move(b, GHD_TIER_DISK, 0, &err), 0);
    assert_int_equal(tier_of(b), GHD_TIER_DISK);
    assert_true(holds_seed(b, 11));
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* A read finds the bytes where they are, without bringing them back. */
static void test_read_where_it_is(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(2 * MIB, 64 * MIB);
    struct ghd_buffer *b = make(f, MIB, NULL);
    fill(b, 9);
    unsigned char *want = malloc(MIB);
    assert_non_null(want);
    memcpy(want, b->d_ptr, MIB);
    struct ghd_err err = {0};
    for (int to = GHD_TIER_HOST; to < GHD_TIER_COUNT; to++) {
        assert_int_equal(ghd_tier_move(b, (enum ghd_tier)to, 0, &err), 0);
        struct ghd_tier_read r;
        assert_int_equal(ghd_tier_read_begin(b, &r, &err), 0);
        assert_int_equal(r.tier, to);
        unsigned char *got = malloc(MIB);
        assert_non_null(got);
        if (to == GHD_TIER_HOST)
            memcpy(got, r.h_ptr, MIB);
        else
            assert_int_equal(ghd_tier_file_read(r.fd, got, MIB, r.offset, &err), 0);
        /* A read pins it: it neither moves out nor back in under the reader. */
        assert_int_equal(ghd_tier_move(b, GHD_TIER_DISK, 0, &err),
                         to == GHD_TIER_DISK ? 0 : GHD_EBUSY);
        ghd_tier_read_end(b, &r);
        assert_memory_equal(got, want, MIB);
        assert_int_equal(tier_of(b), to);
        free(got);
    }
    free(want);
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* The disk refuses a write (full): the spill does not happen, the buffer
 * stays on its device with its bytes, and the allocation that needed the
 * room answers 507. The disk tier's own size refuses the same way. */
static void test_disk_full(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(0, 64 * MIB);
    struct ghd_buffer *b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = make(f, MIB, NULL);
        fill(b[i], (unsigned)i);
    }
    ghd_tier_file_fail_write_nth(1);
    struct ghd_buffer_spec spec = {.size = MIB};
    struct ghd_buffer *extra;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &extra), GHD_ENOMEM);
    ghd_tier_file_fail_write_nth(0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tier_of(b[i]), GHD_TIER_DEVICE);
        assert_true(holds_seed(b[i], (unsigned)i));
    }
    struct ghd_err err = {0};
    f->t.tiers->disk_cap = MIB / 2; /* smaller than one buffer */
    assert_int_equal(ghd_tier_move(b[0], GHD_TIER_DISK, 0, &err), GHD_ENOMEM);
    assert_non_null(strstr(err.detail, "disk tier is full"));
    assert_int_equal(tier_of(b[0]), GHD_TIER_DEVICE);
    for (int i = 0; i < 4; i++)
        ghd_buffer_unref(b[i]);
    close_tiers(f);
}

/* A disk tier whose folder cannot be written (here: removed under it): the
 * spill fails, nothing is lost. */
static void test_disk_unwritable(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(0, 64 * MIB);
    struct ghd_buffer *b = make(f, MIB, NULL);
    fill(b, 3);
    assert_int_equal(rmdir(f->dir), 0);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_move(b, GHD_TIER_DISK, 0, &err), GHD_ENOMEM);
    assert_non_null(strstr(err.detail, "cannot create"));
    assert_int_equal(tier_of(b), GHD_TIER_DEVICE);
    assert_true(holds_seed(b, 3));
    assert_int_equal(mkdir(f->dir, 0700), 0);
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* A read that fails, and a file damaged on disk, leave the buffer
 * unreadable: every use answers GHD_EUNREADABLE, never other bytes. */
static void test_unreadable_never_stale(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(0, 64 * MIB);
    struct ghd_buffer *b = make(f, MIB, NULL), *c = make(f, MIB, NULL);
    fill(b, 1);
    fill(c, 2);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_move(b, GHD_TIER_DISK, 0, &err), 0);
    assert_int_equal(ghd_tier_move(c, GHD_TIER_DISK, 0, &err), 0);
    ghd_tier_file_fail_read_nth(1);
    assert_int_equal(ghd_tier_hold(b, &err), GHD_EUNREADABLE);
    ghd_tier_file_fail_read_nth(0);
    assert_int_equal(ghd_tier_hold(b, &err), GHD_EUNREADABLE);
    struct ghd_tier_read r;
    assert_int_equal(ghd_tier_read_begin(b, &r, &err), GHD_EUNREADABLE);
    /* c's file: another buffer's header written over its own */
    char path[256];
    ghd_tier_file_path(f->dir, c->id, path, sizeof(path));
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "XXXX", 4, 40), 4);
    close(fd);
    assert_int_equal(ghd_tier_hold(c, &err), GHD_EUNREADABLE);
    assert_non_null(strstr(err.detail, "another buffer"));
    ghd_buffer_unref(b);
    ghd_buffer_unref(c);
    close_tiers(f);
}

/* Whether `dir`'s filesystem takes O_DIRECT: a probe of the test's own. */
static int takes_direct(const char *dir)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/probe", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0600);
    if (fd >= 0)
        close(fd);
    unlink(path);
    return fd >= 0;
}

/* A file in `dir`, header and a ragged size (an aligned part and a tail),
 * written and read back through the format's calls: O_DIRECT exactly where
 * the filesystem takes it, the same bytes either way. */
static void direct_round_trip(const char *dir, int refused)
{
    size_t n = 3 * 4096 + 1234;
    char *src = aligned_alloc(4096, 4 * 4096), *dst = aligned_alloc(4096, 4 * 4096);
    assert_true(src && dst);
    for (size_t i = 0; i < n; i++)
        src[i] = (char)(i * 7 + 1);
    struct ghd_tier_file_id id = {dir, "probe-buffer", n, 3, 1};
    struct ghd_err err = {0};
    int fd = -1;
    assert_int_equal(ghd_tier_file_create(&id, &fd, &err), 0);
    assert_int_equal(!!(fcntl(fd, F_GETFL) & O_DIRECT), !refused && takes_direct(dir));
    assert_int_equal(ghd_tier_file_write(fd, src, n, 0, &err), 0);
    close(fd);
    assert_int_equal(ghd_tier_file_open(&id, &fd, &err), 0);
    assert_int_equal(!!(fcntl(fd, F_GETFL) & O_DIRECT), !refused && takes_direct(dir));
    assert_int_equal(ghd_tier_file_read(fd, dst, n, 0, &err), 0);
    assert_memory_equal(src, dst, n);
    assert_int_equal(ghd_tier_file_read(fd, dst, 10, 4097, &err), 0); /* a range, unaligned */
    assert_memory_equal(src + 4097, dst, 10);
    assert_int_equal(ghd_tier_file_read(fd, dst, 4096, n - 100, &err), GHD_EUNREADABLE);
    close(fd);
    struct stat st;
    char path[256];
    ghd_tier_file_path(dir, id.id, path, sizeof(path));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, GHD_TIER_FILE_HEADER + n); /* nothing after the bytes */
    ghd_tier_file_remove(dir, id.id);
    free(src);
    free(dst);
}

/* On the test's folder (O_DIRECT on most disks), on tmpfs (which refused
 * O_DIRECT at open, EINVAL, before Linux 6.6) and on a filesystem that
 * refuses it: the disk tier works on each. */
static void test_direct_where_taken(void **state)
{
    (void)state;
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/ghd-direct-XXXXXX");
    assert_non_null(mkdtemp(dir));
    direct_round_trip(dir, 0);
    ghd_tier_file_refuse_direct(1);
    direct_round_trip(dir, 1);
    ghd_tier_file_refuse_direct(0);
    assert_int_equal(rmdir(dir), 0);
    snprintf(dir, sizeof(dir), "/dev/shm/ghd-direct-XXXXXX");
    if (!mkdtemp(dir))
        return; /* no /dev/shm here */
    direct_round_trip(dir, 0);
    assert_int_equal(rmdir(dir), 0);
}

/* The options' disk tier takes O_DIRECT when it may hold more than half
 * the host's memory, and not when the page cache can hold all of it. */
static void test_direct_when_beyond_the_cache(void **state)
{
    (void)state;
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
    unit_host_open(&rt, &t, 4 * MIB);
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/ghd-direct-XXXXXX");
    assert_non_null(mkdtemp(dir));
    size_t ram = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    size_t sizes[2] = {64 * MIB, ram};
    for (int i = 0; i < 2; i++) {
        struct ghd_tier_config tc = {.disk_dir = dir, .disk_bytes = sizes[i],
                                     .direct = GHD_TIER_DIRECT_AUTO};
        struct ghd_tiers *tiers;
        assert_int_equal(ghd_tiers_new(&tc, &rt, 1, &tiers, NULL), 0);
        assert_int_equal(tiers->direct, i);
        ghd_tiers_free(tiers);
    }
    assert_int_equal(rmdir(dir), 0);
    unit_host_close(&rt, &t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_in_from_each_tier),
        cmocka_unit_test(test_large_through_disk),
        cmocka_unit_test(test_read_where_it_is),
        cmocka_unit_test(test_disk_full),
        cmocka_unit_test(test_disk_unwritable),
        cmocka_unit_test(test_unreadable_never_stale),
        cmocka_unit_test(test_direct_where_taken),
        cmocka_unit_test(test_direct_when_beyond_the_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
