/* The cache of parsed JSON bodies (server/base/json_cache.c): through it a
 * body reads exactly as ghd_json_loadb_u64 parses it, the first time (a
 * miss) and every time after (a copy of what was kept), and fails with the
 * same error, on random and hostile bodies: both paths side by side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json_cache.h"
#include "base/json_text.h"
#include "base/json_u64.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

struct text {
    char b[8192];
    size_t n;
};

static void put(struct text *t, const char *s)
{
    size_t len = strlen(s);
    if (t->n + len < sizeof(t->b)) {
        memcpy(t->b + t->n, s, len);
        t->n += len;
    }
}

/* A random JSON value's text: what run bodies hold and what breaks parsers
 * (escapes, NULs, surrogates, integers past 2^63 and 2^64, reals). */
static void value(struct text *t, int depth)
{
    static const char *const atoms[] = {
        "0", "-1", "1024", "2.0", "-0.5e-3", "1E400", "9223372036854775807",
        "9223372036854775808", "18446744073709551615", "18446744073709551616", "true", "false",
        "null", "\"axpy\"", "\"f32\"", "\"\\u0000\"", "\"a\\u0000u64:5\"", "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"", "\"\\n\\t\\\"\\\\/\"", "\"i0000-91b1beb4-59b869ecd3827f85f9a9a79c7dca0028\"",
        "\"\xc3\xa9\"", "\"\xff\"", "1.5e3"};
    static const char *const keys[] = {"\"kernel\"", "\"args\"", "\"x\"", "\"y\"", "\"a\"",
                                       "\"n\"", "\"steps\"", "\"wait\"", "\"\"", "\"k\\u0000\"",
                                       "\"\\u00e9\""};
    unsigned kind = depth > 4 ? 0 : rnd(4);
    if (kind < 2) {
        put(t, atoms[rnd(sizeof(atoms) / sizeof(atoms[0]))]);
    } else if (kind == 2) {
        put(t, "[");
        for (unsigned i = 0, n = rnd(5); i < n; i++) {
            if (i)
                put(t, rnd(8) ? "," : " , ");
            value(t, depth + 1);
        }
        put(t, "]");
    } else {
        put(t, "{");
        for (unsigned i = 0, n = rnd(6); i < n; i++) {
            if (i)
                put(t, ",");
            put(t, keys[rnd(sizeof(keys) / sizeof(keys[0]))]); /* a key twice now and then */
            put(t, rnd(4) ? ":" : " : ");
            value(t, depth + 1);
        }
        put(t, "}");
    }
}

/* Hostile edits of a body: a byte changed, cut short, a NUL or garbage
 * inserted, nested past reason. */
static void mutate(struct text *t)
{
    switch (rnd(6)) {
    case 0:
        if (t->n)
            t->b[rnd((unsigned)t->n)] = (char)rnd(256);
        break;
    case 1:
        t->n = t->n ? rnd((unsigned)t->n) : 0;
        break;
    case 2:
        if (t->n && t->n + 1 < sizeof(t->b)) {
            size_t at = rnd((unsigned)t->n);
            memmove(t->b + at + 1, t->b + at, t->n - at);
            t->b[at] = rnd(2) ? '\0' : '}';
            t->n++;
        }
        break;
    case 3:
        for (unsigned i = 0; i < 2100 && t->n + 1 < sizeof(t->b); i++)
            t->b[t->n++] = '[';
        break;
    default:
        break; /* left valid (or as generated) */
    }
}

static char *dump(const json_t *doc)
{
    char *s = ghd_json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(s);
    return s;
}

/* The body through the cache equals its parse: document or error. */
static void same(struct ghd_json_cache *c, const char *scope, const struct text *t, size_t flags)
{
    json_error_t want, got;
    json_t *ref = ghd_json_loadb_u64(t->b, t->n, flags, &want);
    for (int round = 0; round < 3; round++) { /* a miss, then hits */
        memset(&got, 0x5a, sizeof(got));
        json_t *doc = ghd_json_cache_loadb(c, scope, t->b, t->n, flags, &got);
        if (!ref) {
            if (doc)
                fail_msg("the cache parsed a body the parser refuses (%s): %.*s", want.text,
                         (int)t->n, t->b);
            assert_string_equal(got.text, want.text);
            assert_int_equal(got.line, want.line);
            assert_int_equal(got.column, want.column);
            assert_int_equal(got.position, want.position);
            assert_int_equal(json_error_code(&got), json_error_code(&want));
            continue;
        }
        assert_non_null(doc);
        assert_true(json_equal(doc, ref));
        char *a = dump(ref), *b = dump(doc);
        assert_string_equal(a, b);
        free(a);
        free(b);
        /* The copy is the caller's: changing it changes nothing kept. */
        if (json_is_object(doc))
            json_object_set_new(doc, "changed", json_true());
        else if (json_is_array(doc))
            json_array_clear(doc);
        json_decref(doc);
    }
    json_decref(ref);
}

static void test_fuzz_against_the_parser(void **state)
{
    (void)state;
    static struct ghd_json_cache c = GHD_JSON_CACHE_INIT;
    for (int i = 0; i < 4000; i++) {
        struct text t = {.n = 0};
        value(&t, rnd(3) ? 2 : 0);
        if (rnd(2))
            mutate(&t);
        same(&c, rnd(2) ? "alice" : NULL, &t, rnd(4) ? JSON_REJECT_DUPLICATES : 0);
    }
    assert_true(c.hits > 0 && c.misses > 0);
    ghd_json_cache_clear(&c);
}

/* The key is the bytes, the flags and the scope: a body kept under flags 0
 * is still refused under JSON_REJECT_DUPLICATES, and another tenant's same
 * body is a miss (its timing says nothing of what another sent). */
static void test_key_is_bytes_flags_scope(void **state)
{
    (void)state;
    static struct ghd_json_cache c = GHD_JSON_CACHE_INIT;
    static const char dup[] = "{\"a\": 1, \"a\": 2}";
    json_error_t e;
    json_t *doc = ghd_json_cache_loadb(&c, NULL, dup, sizeof(dup) - 1, 0, &e);
    assert_non_null(doc);
    json_decref(doc);
    assert_null(ghd_json_cache_loadb(&c, NULL, dup, sizeof(dup) - 1, JSON_REJECT_DUPLICATES, &e));
    assert_non_null(strstr(e.text, "duplicate"));
    static const char body[] = "{\"kernel\": \"axpy\"}";
    for (int i = 0; i < 2; i++)
        json_decref(ghd_json_cache_loadb(&c, "alice", body, sizeof(body) - 1, 0, &e));
    uint64_t hits = c.hits;
    assert_int_equal(hits, 1);
    json_decref(ghd_json_cache_loadb(&c, "bob", body, sizeof(body) - 1, 0, &e));
    json_decref(ghd_json_cache_loadb(&c, "alice\0x", body, sizeof(body) - 1, 0, &e));
    assert_int_equal(c.hits, hits + 1); /* bob missed; "alice" again hit */
    /* More bodies than entries: the least recently used go, all still right. */
    for (int i = 0; i < 3 * GHD_JSON_CACHE_ENTRIES; i++) {
        char b[32];
        int n = snprintf(b, sizeof(b), "[%d]", i % (GHD_JSON_CACHE_ENTRIES + 4));
        doc = ghd_json_cache_loadb(&c, NULL, b, (size_t)n, 0, &e);
        assert_int_equal(json_integer_value(json_array_get(doc, 0)),
                         i % (GHD_JSON_CACHE_ENTRIES + 4));
        json_decref(doc);
    }
    ghd_json_cache_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_against_the_parser),
        cmocka_unit_test(test_key_is_bytes_flags_scope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
