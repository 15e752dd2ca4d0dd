/* The error value (base/err.h): setting, prefixing, reading, NULL-safety and
 * its bound. (The device interface passing it down, and a test that two
 * concurrent failing operations each read their own detail, are on branch
 * hB-item2; see /work/notes/hB.md.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/error.h"

static void test_err_set_and_text(void **state)
{
    (void)state;
    struct ghd_err e = {0};
    assert_string_equal(ghd_err_text(&e, GHD_ENOENT), "Not found"); /* nothing said yet */
    assert_int_equal(ghd_err_set(&e, GHD_EBUSY, "buffer %s is busy", "b1"), GHD_EBUSY);
    assert_int_equal(e.code, GHD_EBUSY);
    assert_string_equal(ghd_err_text(&e, GHD_EBUSY), "buffer b1 is busy");
    assert_int_equal(ghd_err_prefix(&e, "upload %d", 7), GHD_EBUSY);
    assert_string_equal(e.detail, "upload 7: buffer b1 is busy");
    /* NULL means "the code is enough" everywhere. */
    assert_int_equal(ghd_err_set(NULL, GHD_EINVAL, "ignored"), GHD_EINVAL);
    assert_int_equal(ghd_err_prefix(NULL, "ignored"), 0);
    assert_string_equal(ghd_err_text(NULL, GHD_EINVAL), "Bad request");
    /* Bounded: a long detail is cut, not overrun. */
    char big[2 * GHD_ERR_DETAIL];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ghd_err_set(&e, GHD_EINTERNAL, "%s", big);
    assert_int_equal(strlen(e.detail), GHD_ERR_DETAIL - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_set_and_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
