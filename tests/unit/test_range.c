/* Range (RFC 9110 section 14.2) and Content-Range parsing. Every accepted
 * form, the unsatisfiable cases (416) and the malformed ones, which the
 * caller treats as "no range" (serve the whole resource) or as 400. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "base/error.h"
#include "http/range.h"

#define SENTINEL 0xdeadbeefULL

/* Parses `h` against `size`, expecting success with [first, last]. */
static void expect_range(const char *h, uint64_t size, uint64_t first, uint64_t last)
{
    uint64_t a = SENTINEL, b = SENTINEL;
    int rc = ghd_range_parse(h, size, &a, &b);
    if (rc != 0)
        fail_msg("'%s' against %llu bytes: expected success, got %d", h,
                 (unsigned long long)size, rc);
    if (a != first || b != last)
        fail_msg("'%s' against %llu bytes: got [%llu, %llu], expected [%llu, %llu]", h,
                 (unsigned long long)size, (unsigned long long)a, (unsigned long long)b,
                 (unsigned long long)first, (unsigned long long)last);
}

static void expect_range_error(const char *h, uint64_t size, int want)
{
    uint64_t a = SENTINEL, b = SENTINEL;
    int rc = ghd_range_parse(h, size, &a, &b);
    if (rc != want)
        fail_msg("'%s' against %llu bytes: expected %d (%s), got %d (a=%llu b=%llu)", h,
                 (unsigned long long)size, want, ghd_strerror(want), rc, (unsigned long long)a,
                 (unsigned long long)b);
}

static void test_range_closed(void **state)
{
    (void)state;
    expect_range("bytes=0-0", 10, 0, 0);
    expect_range("bytes=0-9", 10, 0, 9);
    expect_range("bytes=3-7", 10, 3, 7);
    expect_range("bytes=9-9", 10, 9, 9);
    /* The unit is case-insensitive (RFC 9110 section 14.1). */
    expect_range("Bytes=2-4", 10, 2, 4);
    expect_range("BYTES=2-4", 10, 2, 4);
    /* Large resources: offsets past 4 GiB. */
    uint64_t big = (uint64_t)5 << 32;
    expect_range("bytes=4294967296-4294967300", big, 4294967296ULL, 4294967300ULL);
}

static void test_range_last_clamped(void **state)
{
    (void)state;
    /* A last-pos at or past the end means "to the end" (RFC 9110 14.1.2). */
    expect_range("bytes=0-10", 10, 0, 9);
    expect_range("bytes=3-1000000", 10, 3, 9);
    expect_range("bytes=0-18446744073709551615", 10, 0, 9);
    /* Numbers past 2^64 - 1 are still numbers (RFC 9110 has no bound): a
     * last-pos that large means "to the end", a suffix that long the whole. */
    expect_range("bytes=0-18446744073709551616", 10, 0, 9);
    expect_range("bytes=2-99999999999999999999999999", 10, 2, 9);
    expect_range("bytes=-99999999999999999999999999", 10, 0, 9);
    expect_range("bytes=5-5", 6, 5, 5);
    expect_range("bytes=5-6", 6, 5, 5);
}

static void test_range_open(void **state)
{
    (void)state;
    expect_range("bytes=0-", 10, 0, 9);
    expect_range("bytes=4-", 10, 4, 9);
    expect_range("bytes=9-", 10, 9, 9);
    expect_range("bytes=0-", 1, 0, 0);
}

static void test_range_suffix(void **state)
{
    (void)state;
    expect_range("bytes=-1", 10, 9, 9);
    expect_range("bytes=-3", 10, 7, 9);
    expect_range("bytes=-10", 10, 0, 9);
    /* A suffix longer than the resource selects all of it. */
    expect_range("bytes=-11", 10, 0, 9);
    expect_range("bytes=-18446744073709551615", 10, 0, 9);
    expect_range("bytes=-1", 1, 0, 0);
}

static void test_range_unsatisfiable(void **state)
{
    (void)state;
    expect_range_error("bytes=10-", 10, GHD_ERANGE);
    expect_range_error("bytes=10-20", 10, GHD_ERANGE);
    expect_range_error("bytes=11-11", 10, GHD_ERANGE);
    expect_range_error("bytes=18446744073709551615-", 10, GHD_ERANGE);
    expect_range_error("bytes=18446744073709551616-", 10, GHD_ERANGE);
    expect_range_error("bytes=99999999999999999999999-99999999999999999999999", 10, GHD_ERANGE);
    /* A zero-length suffix selects nothing. */
    expect_range_error("bytes=-0", 10, GHD_ERANGE);
    /* Nothing is satisfiable in an empty resource. */
    expect_range_error("bytes=0-", 0, GHD_ERANGE);
    expect_range_error("bytes=0-0", 0, GHD_ERANGE);
    expect_range_error("bytes=-5", 0, GHD_ERANGE);
}

static void test_range_malformed(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "bytes",
        "bytes=",
        "bytes=-",
        "bytes=--1",
        "bytes=-1-2",
        "bytes=a-b",
        "bytes=1-a",
        "bytes=1",
        "bytes=1-2-3",
        "bytes=0-1,3-4",      /* multiple ranges: single ranges only */
        "bytes=0-1, 3-4",
        "bytes=-1,0-0",
        "bytes=-5-",          /* negative first-pos */
        "bytes=-5--1",
        "bytes=5--1",         /* negative last-pos */
        "bytes=+1-2",
        "bytes=1-+2",
        "bytes= 0-1",         /* whitespace is not part of the grammar */
        "bytes=0 -1",
        "bytes=0- 1",
        "bytes=0-1 ",
        "bytes =0-1",
        "bytes=0x10-0x20",
        "bytes=1.5-2",
        "bytes=5-4",          /* last < first is invalid, not unsatisfiable */
        "bytes=9-0",
        "items=0-1",
        "0-1",
        "=0-1",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_range_error(bad[i], 100, GHD_EINVAL);
    uint64_t a = SENTINEL, b = SENTINEL;
    assert_int_equal(ghd_range_parse(NULL, 100, &a, &b), GHD_EINVAL);
}

static void test_range_exhaustive_small(void **state)
{
    (void)state;
    /* Every a-b, a- and -n against every small size, checked against the
     * RFC's definition computed independently here. */
    char h[64];
    for (uint64_t size = 0; size <= 12; size++) {
        for (uint64_t a = 0; a <= 14; a++) {
            for (uint64_t b = 0; b <= 14; b++) {
                snprintf(h, sizeof(h), "bytes=%llu-%llu", (unsigned long long)a,
                         (unsigned long long)b);
                if (b < a)
                    expect_range_error(h, size, GHD_EINVAL);
                else if (a >= size)
                    expect_range_error(h, size, GHD_ERANGE);
                else
                    expect_range(h, size, a, b < size ? b : size - 1);
            }
            snprintf(h, sizeof(h), "bytes=%llu-", (unsigned long long)a);
            if (a >= size)
                expect_range_error(h, size, GHD_ERANGE);
            else
                expect_range(h, size, a, size - 1);
            snprintf(h, sizeof(h), "bytes=-%llu", (unsigned long long)a);
            if (a == 0 || size == 0)
                expect_range_error(h, size, GHD_ERANGE);
            else
                expect_range(h, size, a >= size ? 0 : size - a, size - 1);
        }
    }
}

/* ---- Content-Range ------------------------------------------------------ */

/* total_known 0: the total is "*". */
static void expect_cr_known(const char *h, uint64_t first, uint64_t last, uint64_t total,
                            int total_known)
{
    uint64_t a = SENTINEL, b = SENTINEL, n = SENTINEL;
    int known = -1;
    int rc = ghd_content_range_parse(h, &a, &b, &n, &known);
    if (rc != 0)
        fail_msg("'%s': expected success, got %d", h, rc);
    if (known != total_known)
        fail_msg("'%s': total known %d, expected %d", h, known, total_known);
    if (a != first || b != last || (known && n != total))
        fail_msg("'%s': got %llu-%llu/%llu, expected %llu-%llu/%llu", h, (unsigned long long)a,
                 (unsigned long long)b, (unsigned long long)n, (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)total);
}

static void expect_cr(const char *h, uint64_t first, uint64_t last, uint64_t total)
{
    expect_cr_known(h, first, last, total, 1);
}

static void test_content_range_valid(void **state)
{
    (void)state;
    expect_cr("bytes 0-9/10", 0, 9, 10);
    expect_cr("bytes 0-0/1", 0, 0, 1);
    expect_cr("bytes 3-3/10", 3, 3, 10);
    expect_cr("bytes 5-9/10", 5, 9, 10);
    expect_cr_known("bytes 5-9/*", 5, 9, 0, 0);
    /* The largest totals are totals, not "*" (2^64-1 was the old sentinel
     * for "*" and was accepted for any buffer). */
    expect_cr("bytes 0-9/18446744073709551615", 0, 9, UINT64_MAX);
    expect_cr("bytes 0-9/18446744073709551614", 0, 9, UINT64_MAX - 1);
    expect_cr("Bytes 1-2/3", 1, 2, 3);
    expect_cr("bytes 4294967296-8589934591/8589934592", 4294967296ULL, 8589934591ULL,
              8589934592ULL);
}

/* Well formed, but the range ends at or past its own complete length: the
 * upload's range lies outside what it names (416), not a syntax error. */
static void test_content_range_past_total(void **state)
{
    (void)state;
    const char *past[] = {"bytes 0-10/10", "bytes 9-9/9", "bytes 0-0/0", "bytes 1020-1029/1024"};
    for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
        uint64_t a, b, n;
        int known;
        int rc = ghd_content_range_parse(past[i], &a, &b, &n, &known);
        if (rc != GHD_ERANGE)
            fail_msg("'%s': expected GHD_ERANGE, got %d", past[i], rc);
    }
}

static void test_content_range_malformed(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "bytes",
        "bytes ",
        "bytes 0-9",          /* no total */
        "bytes 0-9/",
        "bytes 0-/10",
        "bytes -9/10",
        "bytes */10",         /* the unsatisfied-range form is for responses */
        "bytes 5-4/10",       /* last < first */
        "bytes 0-9/10 ",
        "bytes  0-9/10",
        "bytes 0 -9/10",
        "bytes 0- 9/10",
        "bytes 0-9 /10",
        "bytes 0-9/ 10",
        "bytes 0-9/*x",
        "bytes 0-9/**",
        "bytes -1-9/10",
        "bytes 0--9/10",
        "bytes +0-9/10",
        "bytes 0-9/-10",
        "bytes=0-9/10",
        "bytes 0-9/10, 20-29/30",
        "items 0-9/10",
        "0-9/10",
        "bytes 99999999999999999999-99999999999999999999/*",
        "bytes 0-99999999999999999999/*",
        "bytes 0-9/99999999999999999999",
        "bytes 0x0-9/10",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t a, b, n;
        int known;
        int rc = ghd_content_range_parse(bad[i], &a, &b, &n, &known);
        if (rc != GHD_EINVAL)
            fail_msg("'%s': expected GHD_EINVAL, got %d", bad[i], rc);
    }
    uint64_t a, b, n;
    int known;
    assert_int_equal(ghd_content_range_parse(NULL, &a, &b, &n, &known), GHD_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_closed),
        cmocka_unit_test(test_range_last_clamped),
        cmocka_unit_test(test_range_open),
        cmocka_unit_test(test_range_suffix),
        cmocka_unit_test(test_range_unsatisfiable),
        cmocka_unit_test(test_range_malformed),
        cmocka_unit_test(test_range_exhaustive_small),
        cmocka_unit_test(test_content_range_valid),
        cmocka_unit_test(test_content_range_past_total),
        cmocka_unit_test(test_content_range_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
