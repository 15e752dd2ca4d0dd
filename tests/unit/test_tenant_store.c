/* The one store of named, reference-counted objects that tenants own
 * (base/tenant_store.h), through both of its users: user kernels and raw
 * modules. Two tenants, one of them choosing the other's names: what each
 * finds, removes, counts and lists; the quota; and a listing longer than
 * any fixed bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/error.h"
#include "kernels/raw/module.h"
#include "kernels/user/ukernel.h"

static const struct ghd_ulimits limits = {.max_definition = 16384, .max_depth = 64};

static struct ghd_ukernel *ukernel(const char *name, const char *tenant)
{
    json_t *def = json_pack("{s:s, s:s, s:s, s:s}", "name", name, "in", "T x", "out", "T y",
                            "body", "y = x");
    struct ghd_ukernel *k = NULL;
    struct ghd_err e = {0};
    assert_int_equal(ghd_ukernel_new(def, &limits, tenant, NULL, &k, &e), 0);
    json_decref(def);
    return k;
}

/* A tenant with no quota lists every kernel it has: none is left out of
 * GET /v1/kernels, however many. */
static void test_listing_is_whole(void **state)
{
    (void)state;
    struct ghd_ukernel_store s;
    ghd_ukernel_store_init(&s, 0);
    enum { N = 300 };
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "k%03d", i);
        struct ghd_ukernel *k = ukernel(name, "a");
        assert_int_equal(ghd_ukernel_store_add(&s, k), 0);
        ghd_ukernel_unref(k);
    }
    struct ghd_ukernel *other = ukernel("k000", "b"); /* b's own, of a's name */
    assert_int_equal(ghd_ukernel_store_add(&s, other), 0);
    ghd_ukernel_unref(other);
    json_t *list = json_array();
    ghd_ukernel_store_describe(&s, "a", list);
    assert_int_equal(json_array_size(list), N);
    for (int i = 0; i < N; i++) { /* in the order they were defined */
        char name[32];
        snprintf(name, sizeof(name), "k%03d", i);
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, (size_t)i),
                                                              "name")), name);
    }
    json_decref(list);
    list = json_array();
    ghd_ukernel_store_describe(&s, "b", list);
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
    ghd_ukernel_store_destroy(&s);
}

/* Two tenants, one name: each finds and removes its own only; the quota
 * counts a tenant's own; a built-in's name is taken. */
static void test_kernels_by_tenant(void **state)
{
    (void)state;
    struct ghd_ukernel_store s;
    ghd_ukernel_store_init(&s, 2);
    struct ghd_ukernel *a1 = ukernel("f", "a"), *b1 = ukernel("f", "b"), *a2 = ukernel("g", "a");
    struct ghd_ukernel *a3 = ukernel("h", "a"), *dup = ukernel("f", "a");
    struct ghd_ukernel *axpy = ukernel("axpy", "a"), *got = NULL;
    assert_int_equal(ghd_ukernel_store_add(&s, a1), 0);
    assert_int_equal(ghd_ukernel_store_add(&s, b1), 0);
    assert_int_equal(ghd_ukernel_store_add(&s, dup), GHD_EBUSY);
    assert_int_equal(ghd_ukernel_store_add(&s, axpy), GHD_EBUSY);
    assert_int_equal(ghd_ukernel_store_add(&s, a2), 0);
    assert_int_equal(ghd_ukernel_store_add(&s, a3), GHD_ELIMIT);
    assert_int_equal(ghd_ukernel_store_find_new(&s, "b", "g", &got), GHD_ENOENT);
    assert_int_equal(ghd_ukernel_store_find_new(&s, "b", "f", &got), 0);
    assert_ptr_equal(got, b1);
    ghd_ukernel_unref(got);
    assert_int_equal(ghd_ukernel_store_remove(&s, "b", "g"), GHD_ENOENT);
    assert_int_equal(ghd_ukernel_store_remove(&s, "a", "f"), 0);
    assert_int_equal(ghd_ukernel_store_find_new(&s, "a", "f", &got), GHD_ENOENT);
    assert_int_equal(ghd_ukernel_store_find_new(&s, "b", "f", &got), 0); /* b's stays */
    assert_ptr_equal(got, b1);
    ghd_ukernel_unref(got);
    assert_int_equal(ghd_ukernel_store_add(&s, a3), 0); /* room again */
    struct ghd_ukernel *all[] = {a1, b1, a2, a3, dup, axpy};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        ghd_ukernel_unref(all[i]);
    ghd_ukernel_store_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing_is_whole),
        cmocka_unit_test(test_kernels_by_tenant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
