#ifndef GHD_TESTS_SUPPORT_TWO_TENANTS_H
#define GHD_TESTS_SUPPORT_TWO_TENANTS_H

/* The setup of an HTTP suite about what one tenant reaches of another's:
 * one server H (support_start through SUPPORT_RUN_GROUP(tests, &H, &opts)),
 * tokens on with two tenants, alice (ALICE) and mallory (MALLORY), and the
 * REST shorthands on H as expect() and expect_detail(). Included by the
 * suite's one .c file, which it gives these definitions. */
#include "harness.h"
#include "harness_rest.h"

static struct support_server H;
static const struct support_opts opts = {.tokens = "tok-alice:alice,tok-mallory:mallory"};
#define ALICE "tok-alice"
#define MALLORY "tok-mallory"

#define expect(...) support_expect(&H, __VA_ARGS__)
#define expect_detail support_expect_detail

#endif
