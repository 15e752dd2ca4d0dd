/* The error value (base/err.h) and its promise: the detail travels with the
 * call. Two threads share one host device and fail different operations at
 * once, many times over; each must read back its own detail, never the
 * other's (with the old dev->last_error they shared one string). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/error.h"
#include "device/device.h"

#define ROUNDS 2000

/* The value carries the detail alone: the code lives in the return value,
 * never a second copy here that could disagree with it. */
_Static_assert(sizeof(struct ghd_err) == GHD_ERR_DETAIL, "struct ghd_err holds only the detail");

static void test_err_set_and_text(void **state)
{
    (void)state;
    struct ghd_err e = {0};
    assert_string_equal(ghd_err_text(&e, GHD_ENOENT), "Not found"); /* nothing said yet */
    int rc = ghd_err_set(&e, GHD_EBUSY, "buffer %s is busy", "b1");
    assert_int_equal(rc, GHD_EBUSY); /* the code is the returned value alone */
    assert_string_equal(ghd_err_text(&e, rc), "buffer b1 is busy");
    ghd_err_prefix(&e, rc, "upload %d", 7);
    assert_string_equal(ghd_err_text(&e, rc), "upload 7: buffer b1 is busy");
    /* A detail nothing filled: the prefix goes before the code's title. */
    struct ghd_err empty = {0};
    ghd_err_prefix(&empty, GHD_ENOENT, "step %d", 2);
    assert_string_equal(empty.detail, "step 2: Not found");
    /* NULL means "the code is enough" everywhere. */
    assert_int_equal(ghd_err_set(NULL, GHD_EINVAL, "ignored"), GHD_EINVAL);
    ghd_err_prefix(NULL, GHD_EINVAL, "ignored"); /* no-op */
    assert_string_equal(ghd_err_text(NULL, GHD_EINVAL), "Bad request");
    /* Bounded: a long detail is cut, not overrun. */
    char big[2 * GHD_ERR_DETAIL];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ghd_err_set(&e, GHD_EINTERNAL, "%s", big);
    assert_int_equal(strlen(e.detail), GHD_ERR_DETAIL - 1);
}

struct worker {
    struct ghd_device *dev;
    pthread_barrier_t *start;
    int host;           /* 0: device memory (mem_alloc), 1: page-locked (host_alloc) */
    unsigned wrong;     /* rounds whose detail was not this thread's own */
    char first_bad[3 * GHD_ERR_DETAIL];
};

/* Sizes no allocator can give (2^62 bytes and up), different in every round
 * and for each thread, so a detail names exactly one call. */
static size_t impossible(const struct worker *w, unsigned round)
{
    return ((size_t)1 << 62) + ((size_t)round * 2 + (size_t)w->host) * 4096;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(w->start);
    for (unsigned i = 0; i < ROUNDS; i++) {
        struct ghd_err err = {0};
        void *p = NULL;
        size_t size = impossible(w, i);
        int rc = w->host ? w->dev->ops->host_alloc(w->dev, size, &p, &err)
                         : w->dev->ops->mem_alloc(w->dev, size, &p, &err);
        char want[GHD_ERR_DETAIL];
        snprintf(want, sizeof(want), "%s of %zu bytes failed",
                 w->host ? "page-locked host memory" : "device memory", size);
        int want_rc = w->host ? GHD_ENOHOSTMEM : GHD_ENOMEM;
        if (rc != want_rc || strcmp(err.detail, want) != 0) {
            if (!w->wrong++)
                snprintf(w->first_bad, sizeof(w->first_bad), "rc %d (want %d), '%s' (want '%s')",
                         rc, want_rc, err.detail, want);
        }
    }
    return NULL;
}

static void test_concurrent_failures_keep_their_detail(void **state)
{
    (void)state;
    struct ghd_device dev;
    assert_int_equal(ghd_device_open(&dev, GHD_BACKEND_HOST, 0, NULL), 0);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    struct worker w[2] = {{.dev = &dev, .start = &start, .host = 0},
                          {.dev = &dev, .start = &start, .host = 1}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    ghd_device_close(&dev);
    for (int i = 0; i < 2; i++)
        if (w[i].wrong)
            fail_msg("thread %d: %u of %d rounds reported another detail; first: %s", i,
                     w[i].wrong, ROUNDS, w[i].first_bad);
}

static void test_open_failure_says_why(void **state)
{
    (void)state;
    struct ghd_device dev;
    struct ghd_err err = {0};
    int rc = ghd_device_open(&dev, GHD_BACKEND_HOST, 16, &err);
    assert_int_equal(rc, GHD_EUNAVAIL);
    assert_string_equal(err.detail, "the host backend simulates devices 0 to 15 (--host-devices)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_set_and_text),
        cmocka_unit_test(test_concurrent_failures_keep_their_detail),
        cmocka_unit_test(test_open_failure_says_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
