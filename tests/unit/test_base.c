/* The base layer's small utilities: unsigned-decimal parsing (every form the
 * callers must refuse, the 64-bit edge) and the monotonic clock helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/parse.h"

#define SENTINEL 0xdeadbeefULL

static void test_parse_u64_accepts(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {
        {"0", 0},
        {"7", 7},
        {"0042", 42},
        {"4096", 4096},
        {"18446744073709551615", UINT64_MAX},
        {"000000000000000000000018446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = SENTINEL;
        if (ghd_parse_u64(ok[i].s, &v) != 0 || v != ok[i].v)
            fail_msg("'%s': got %llu", ok[i].s, (unsigned long long)v);
    }
}

static void test_parse_u64_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", " 1", "1 ", "+1", "-1", "0x10", "1e3", "12a", "1.0",
        "18446744073709551616", "99999999999999999999", "184467440737095516150",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = SENTINEL;
        if (ghd_parse_u64(bad[i], &v) != -1)
            fail_msg("'%s' was accepted as %llu", bad[i], (unsigned long long)v);
        assert_int_equal(v, SENTINEL); /* untouched on failure */
    }
}

static void test_parse_u64_prefix(void **state)
{
    (void)state;
    uint64_t v = SENTINEL;
    const char *s = "123-456";
    const char *end = ghd_parse_u64_prefix(s, &v);
    assert_ptr_equal(end, s + 3);
    assert_int_equal(v, 123);
    end = ghd_parse_u64_prefix(end + 1, &v);
    assert_non_null(end);
    assert_int_equal(*end, '\0');
    assert_int_equal(v, 456);

    v = SENTINEL;
    assert_null(ghd_parse_u64_prefix("-5", &v));
    assert_null(ghd_parse_u64_prefix("", &v));
    assert_null(ghd_parse_u64_prefix("18446744073709551616-", &v));
    assert_int_equal(v, SENTINEL);
    end = ghd_parse_u64_prefix("18446744073709551615.npy", &v);
    assert_non_null(end);
    assert_string_equal(end, ".npy");
    assert_int_equal(v, UINT64_MAX);
}

static void test_clock_monotonic(void **state)
{
    (void)state;
    uint64_t a = ghd_clock_ns();
    double ms = ghd_clock_ms(), s = ghd_clock_s();
    uint64_t b = ghd_clock_ns();
    assert_true(b >= a);
    /* The three units read the same clock. */
    assert_true(ms >= (double)a / 1e6 && ms <= (double)b / 1e6);
    assert_true(s >= (double)a / 1e9 && s <= (double)b / 1e9);
}

static void test_clock_deadline(void **state)
{
    (void)state;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (unsigned ms = 0; ms < 5000; ms += 999) {
        struct timespec d = ghd_clock_deadline(CLOCK_MONOTONIC, ms);
        assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
        long long diff = (long long)(d.tv_sec - now.tv_sec) * 1000000000LL +
                         (d.tv_nsec - now.tv_nsec);
        assert_true(diff >= (long long)ms * 1000000LL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_u64_accepts),
        cmocka_unit_test(test_parse_u64_refuses),
        cmocka_unit_test(test_parse_u64_prefix),
        cmocka_unit_test(test_clock_monotonic),
        cmocka_unit_test(test_clock_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
