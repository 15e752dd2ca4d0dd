/* The base layer's small utilities: unsigned-decimal parsing (every form the
 * callers must refuse, the 64-bit edge), the monotonic clock helpers, the
 * intrusive list, the id map and the "did you mean" suggestion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/idmap.h"
#include "base/json_text.h"
#include "base/json_u64.h"
#include "base/list.h"
#include "base/owner.h"
#include "base/error.h"
#include "base/parse.h"
#include "base/hash.h"
#include "base/stream_copy.h"
#include "base/suggest.h"

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

/* ---- base/list.h ---- */

struct item {
    int v;
    struct ghd_list_node link;
};

/* The list holds exactly want[0..n) in order, walked both ways. */
static void assert_list(const struct ghd_list *l, const int *want, int n)
{
    int i = 0;
    struct ghd_list_node *before = NULL;
    for (struct ghd_list_node *p = l->first; p; before = p, p = p->next, i++) {
        assert_true(i < n);
        assert_int_equal(ghd_container_of(p, struct item, link)->v, want[i]);
        assert_ptr_equal(p->prev, before);
    }
    assert_ptr_equal(l->last, before);
    assert_int_equal(i, n);
    for (struct ghd_list_node *p = l->last; p; p = p->prev)
        assert_int_equal(ghd_container_of(p, struct item, link)->v, want[--i]);
    assert_int_equal(i, 0);
    assert_int_equal(ghd_list_empty(l), n == 0);
}

static void test_list_push_remove(void **state)
{
    (void)state;
    struct item it[5];
    struct ghd_list l;
    ghd_list_init(&l);
    assert_true(ghd_list_empty(&l));
    assert_null(ghd_list_pop_front(&l));
    for (int i = 0; i < 5; i++)
        it[i].v = i;
    ghd_list_push_back(&l, &it[1].link);
    ghd_list_push_back(&l, &it[2].link);
    ghd_list_push_front(&l, &it[0].link);
    ghd_list_push_back(&l, &it[3].link);
    ghd_list_push_back(&l, &it[4].link);
    assert_list(&l, (int[]){0, 1, 2, 3, 4}, 5);

    ghd_list_remove(&l, &it[2].link); /* middle */
    assert_null(it[2].link.prev);
    assert_null(it[2].link.next);
    assert_list(&l, (int[]){0, 1, 3, 4}, 4);
    ghd_list_remove(&l, &it[0].link); /* first */
    assert_list(&l, (int[]){1, 3, 4}, 3);
    ghd_list_remove(&l, &it[4].link); /* last */
    assert_list(&l, (int[]){1, 3}, 2);

    struct ghd_list_node *n = ghd_list_pop_front(&l);
    assert_ptr_equal(ghd_list_entry(n, struct item, link), &it[1]);
    assert_list(&l, (int[]){3}, 1);
    ghd_list_remove(&l, &it[3].link); /* the only one */
    assert_list(&l, NULL, 0);
    assert_null(l.last);
    assert_null(ghd_list_entry(ghd_list_pop_front(&l), struct item, link));

    /* A removed node can go back on, at either end. */
    ghd_list_push_front(&l, &it[2].link);
    ghd_list_push_front(&l, &it[4].link);
    ghd_list_push_back(&l, &it[0].link);
    assert_list(&l, (int[]){4, 2, 0}, 3);
}

/* ---- base/idmap.h ---- */

struct entry {
    char id[24];
    int tenant;
    struct ghd_idmap_node node;
};

static struct entry *find_entry(const struct ghd_idmap *m, const char *id)
{
    struct ghd_idmap_node *n = ghd_idmap_find(m, id);
    return n ? ghd_container_of(n, struct entry, node) : NULL;
}

static void test_idmap_insert_find_remove(void **state)
{
    (void)state;
    struct ghd_idmap m;
    assert_int_equal(ghd_idmap_init(&m, 0), 0);
    assert_int_equal(m.mask + 1, 16);
    struct entry a = {.id = "alpha"}, b = {.id = "beta"}, c = {.id = "gamma"};
    assert_null(ghd_idmap_find(&m, "alpha"));
    ghd_idmap_insert(&m, &a.node, a.id);
    ghd_idmap_insert(&m, &b.node, b.id);
    ghd_idmap_insert(&m, &c.node, c.id);
    assert_int_equal(m.count, 3);
    assert_ptr_equal(find_entry(&m, "alpha"), &a);
    assert_ptr_equal(find_entry(&m, "beta"), &b);
    assert_ptr_equal(find_entry(&m, "gamma"), &c);
    assert_null(find_entry(&m, "alph"));   /* a prefix is not the id */
    assert_null(find_entry(&m, "alphaa")); /* nor a longer one */
    assert_null(find_entry(&m, ""));

    ghd_idmap_remove(&m, &b.node);
    assert_int_equal(m.count, 2);
    assert_null(find_entry(&m, "beta"));
    assert_ptr_equal(find_entry(&m, "alpha"), &a);
    assert_ptr_equal(find_entry(&m, "gamma"), &c);
    ghd_idmap_insert(&m, &b.node, b.id); /* back in */
    assert_ptr_equal(find_entry(&m, "beta"), &b);
    ghd_idmap_destroy(&m);
}

static void test_idmap_same_id(void **state)
{
    (void)state;
    /* Two tenants may hold the same id: find + find_next give both, and
     * removing one leaves the other. */
    struct ghd_idmap m;
    assert_int_equal(ghd_idmap_init(&m, 1), 0);
    struct entry e[3] = {{.id = "same", .tenant = 1}, {.id = "same", .tenant = 2},
                         {.id = "other", .tenant = 1}};
    for (int i = 0; i < 3; i++)
        ghd_idmap_insert(&m, &e[i].node, e[i].id);
    int seen = 0;
    for (struct ghd_idmap_node *n = ghd_idmap_find(&m, "same"); n; n = ghd_idmap_find_next(n)) {
        struct entry *x = ghd_container_of(n, struct entry, node);
        assert_string_equal(x->id, "same");
        seen |= 1 << x->tenant;
    }
    assert_int_equal(seen, (1 << 1) | (1 << 2));
    ghd_idmap_remove(&m, &e[0].node);
    struct entry *left = find_entry(&m, "same");
    assert_ptr_equal(left, &e[1]);
    assert_null(ghd_idmap_find_next(&left->node));
    ghd_idmap_destroy(&m);
}

static void test_idmap_grows(void **state)
{
    (void)state;
    /* 5000 ids from 16 slots: the map doubles as it fills, and every id is
     * still found after each growth and after half are removed. */
    enum { N = 5000 };
    struct entry *e = calloc(N, sizeof(*e));
    assert_non_null(e);
    struct ghd_idmap m;
    assert_int_equal(ghd_idmap_init(&m, 16), 0);
    for (int i = 0; i < N; i++) {
        snprintf(e[i].id, sizeof(e[i].id), "%016x", (unsigned)i * 2654435761u);
        ghd_idmap_insert(&m, &e[i].node, e[i].id);
        if ((i & (i + 1)) == 0) /* at 2^k - 1: everything so far */
            for (int j = 0; j <= i; j++)
                assert_ptr_equal(find_entry(&m, e[j].id), &e[j]);
    }
    assert_int_equal(m.count, N);
    assert_true(m.mask + 1 >= N);
    assert_int_equal((m.mask + 1) & m.mask, 0); /* a power of two */
    for (int i = 0; i < N; i += 2)
        ghd_idmap_remove(&m, &e[i].node);
    assert_int_equal(m.count, N / 2);
    for (int i = 0; i < N; i++)
        assert_ptr_equal(find_entry(&m, e[i].id), i % 2 ? &e[i] : NULL);
    ghd_idmap_destroy(&m);
    free(e);
}

/* Near misses find the name; far ones, and names that only share a letter,
 * find nothing (a wrong suggestion misleads more than none). */
static void test_suggest(void **state)
{
    (void)state;
    static const char *const params[] = {"keys", "keys_out", "values", "values_out",
                                         "dtype", "value_dtype", "n", "descending"};
    static const struct {
        const char *word, *want;
    } cases[] = {
        {"dtyp", "dtype"},     {"dtpye", "dtype"},  {"DTYPE", "dtype"},
        {"key", "keys"},       {"Keys_Out", "keys_out"}, {"valeus", "values"},
        {"decending", "descending"}, {"N", "n"},
        {"x", NULL},           {"m", NULL},         {"y", NULL},
        {"dtypes_in", NULL},   {"", NULL},          {"alpha", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = ghd_suggest(cases[i].word, params, 8);
        if ((got == NULL) != (cases[i].want == NULL) ||
            (got && strcmp(got, cases[i].want) != 0))
            fail_msg("'%s': got %s, want %s", cases[i].word, got ? got : "NULL",
                     cases[i].want ? cases[i].want : "NULL");
    }
    /* Ties go to the earlier name; long words are nobody's near miss. */
    static const char *const ab[] = {"ab", "ba"};
    assert_string_equal(ghd_suggest("AB", ab, 2), "ab");
    char longword[200];
    memset(longword, 'a', sizeof(longword) - 1);
    longword[sizeof(longword) - 1] = '\0';
    static const char *const one[] = {"a"};
    assert_null(ghd_suggest(longword, one, 1));
    char buf[64];
    assert_string_equal(ghd_suggest_clause(buf, sizeof(buf), "dtype"), ": did you mean 'dtype'?");
    assert_string_equal(ghd_suggest_clause(buf, sizeof(buf), NULL), "");
}

/* The id prefix: its form, the hostname's ordinal, and which ids are whose. */
static void test_owner(void **state)
{
    (void)state;
    assert_int_equal(ghd_owner_from_hostname("gpuhttpd-3"), 3);
    assert_int_equal(ghd_owner_from_hostname("gpuhttpd-1234"), 1234);
    assert_int_equal(ghd_owner_from_hostname("gpuhttpd-12345"), 0);
    assert_int_equal(ghd_owner_from_hostname("gpuhttpd"), 0);
    assert_int_equal(ghd_owner_from_hostname(""), 0);
    struct ghd_owner a, b;
    assert_int_equal(ghd_owner_init(&a, 3), 0);
    assert_int_equal(ghd_owner_init(&b, 3), 0);
    assert_int_equal(strlen(a.prefix), GHD_OWNER_PREFIX_LEN);
    assert_memory_equal(a.prefix, "i0003-", 6);
    assert_string_not_equal(a.boot, b.boot); /* 1 in 2^32 to fail */
    char id[64];
    snprintf(id, sizeof(id), "%s0123456789abcdef0123456789abcdef", a.prefix);
    struct ghd_err err = {0};
    assert_int_equal(ghd_owner_check(&a, id, &err), 0);
    assert_int_equal(ghd_owner_check(&b, id, &err), GHD_EGONE);
    assert_non_null(strstr(err.detail, "earlier start of instance 3"));
    struct ghd_owner other;
    assert_int_equal(ghd_owner_init(&other, 12), 0);
    assert_int_equal(ghd_owner_check(&other, id, &err), GHD_EMISDIRECTED);
    assert_non_null(strstr(err.detail, "owned by instance 3"));
    /* Not of the form: the caller's 404. */
    const char *plain[] = {"nope", "", "i0003-5f2c9a1e-", "i00x3-5f2c9a1e-00", "i0003-5F2C9A1E-00",
                           "x0003-5f2c9a1e-00", "0123456789abcdef0123456789abcdef"};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        assert_int_equal(ghd_owner_check(&other, plain[i], &err), 0);
}

/* Ids anywhere in a request body: one other instance is 421, an earlier
 * start 410, two instances 422; labels and non-id strings do not count. */
static void test_owner_json(void **state)
{
    (void)state;
    struct ghd_owner self, two, self_before;
    assert_int_equal(ghd_owner_init(&self, 1), 0);
    assert_int_equal(ghd_owner_init(&two, 2), 0);
    assert_int_equal(ghd_owner_init(&self_before, 1), 0);
    char mine[64], theirs[64], old[64], body[512];
    snprintf(mine, sizeof(mine), "%s0123456789abcdef0123456789abcdef", self.prefix);
    snprintf(theirs, sizeof(theirs), "%s0123456789abcdef0123456789abcdef", two.prefix);
    snprintf(old, sizeof(old), "%s0123456789abcdef0123456789abcdef", self_before.prefix);
    struct {
        const char *fmt, *a, *b;
        int want;
        const char *words;
    } cases[] = {
        {"{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"dtype\": \"%s\"}}", mine, "u8",
         0, NULL},
        {"{\"args\": {\"x\": \"%s\", \"y\": \"%s\"}}", theirs, theirs, GHD_EMISDIRECTED,
         "owned by instance 2"},
        /* The refused id is named by where it is in the body. */
        {"{\"args\": {\"x\": \"%s\", \"y\": \"%s\"}}", theirs, theirs, GHD_EMISDIRECTED,
         "'args.x' "},
        {"{\"steps\": [{\"args\": {\"x\": \"%s\"}}, {\"args\": {\"y\": [1, \"%s\"]}}]}",
         "x", old, GHD_EGONE, "'steps[1].args.y[1]' "},
        {"{\"steps\": [{\"args\": {\"x\": \"%s\"}}, {\"args\": {\"y\": [\"%s\"]}}]}", mine,
         theirs, GHD_EUNPROC, "instances 1 and 2"},
        {"{\"copy_of\": \"%s\", \"x\": \"%s\"}", old, mine, GHD_EGONE, "earlier start"},
        {"{\"size\": 4, \"label\": \"%s\", \"x\": \"%s\"}", theirs, mine, 0, NULL},
        {"{\"x\": \"%s-not-hex\", \"y\": \"%s\"}", theirs, "i0002-zzzz", 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(body, sizeof(body), cases[i].fmt, cases[i].a, cases[i].b);
        json_t *doc = json_loads(body, 0, NULL);
        assert_non_null(doc);
        struct ghd_err err = {0};
        int rc = ghd_owner_check_json(&self, doc, &err);
        if (rc != cases[i].want)
            fail_msg("case %zu: %d, not %d (%s)", i, rc, cases[i].want, err.detail);
        if (cases[i].words && !strstr(err.detail, cases[i].words))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.detail, cases[i].words);
        json_decref(doc);
    }
}

/* FIPS 180-4's examples, a message of exactly one padded block (55 bytes)
 * and one of 56 (the length spills into a second block), and a million
 * bytes fed in pieces that straddle blocks. */
static void test_sha256(void **state)
{
    (void)state;
    char name[GHD_SHA256_NAME_LEN + 1];
    ghd_sha256_name("", 0, name);
    assert_string_equal(name, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    ghd_sha256_name("abc", 3, name);
    assert_string_equal(name, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    ghd_sha256_name(two, strlen(two), name);
    assert_string_equal(name, "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char a[1000];
    memset(a, 'a', sizeof(a));
    ghd_sha256_name(a, 55, name);
    assert_string_equal(name, "sha256:9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    ghd_sha256_name(a, 56, name);
    assert_string_equal(name, "sha256:b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    struct ghd_sha256 s;
    unsigned char d[GHD_SHA256_LEN];
    ghd_sha256_init(&s);
    for (size_t done = 0, step = 1; done < 1000000; done += step, step = step % 997 + 1)
        ghd_sha256_update(&s, a, done + step > 1000000 ? 1000000 - done : step);
    ghd_sha256_final(&s, d);
    static const unsigned char million[GHD_SHA256_LEN] = {
        0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
        0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    assert_memory_equal(d, million, GHD_SHA256_LEN);
}

/* Streaming stores: every length and alignment of source and destination
 * (the head before dst's 16-byte boundary, 64-byte steps, the tail) copies
 * exactly those bytes, and not one byte around them. */
static void test_stream_copy(void **state)
{
    (void)state;
    enum { SPAN = 4096, POISON = 0xEE };
    unsigned char *src = malloc(SPAN), *dst = malloc(SPAN), *want = malloc(SPAN);
    assert_non_null(src);
    assert_non_null(dst);
    assert_non_null(want);
    uint32_t x = 12345;
    for (size_t i = 0; i < SPAN; i++) {
        x = x * 1103515245u + 12345u;
        src[i] = (unsigned char)(x >> 16);
    }
    for (size_t n = 0; n <= 300; n += n < 70 ? 1 : 23)
        for (size_t so = 0; so < 17; so++)
            for (size_t dof = 0; dof < 17; dof++) {
                memset(dst, POISON, SPAN);
                memset(want, POISON, SPAN);
                memcpy(want + 64 + dof, src + so, n);
                ghd_stream_copy(dst + 64 + dof, src + so, n);
                assert_memory_equal(dst, want, SPAN);
            }
    memset(dst, POISON, SPAN);
    ghd_stream_copy(dst + 3, src + 5, SPAN - 8); /* a long one, both unaligned */
    assert_memory_equal(dst + 3, src + 5, SPAN - 8);
    assert_int_equal(dst[2], POISON);
    assert_int_equal(dst[SPAN - 5], POISON);
    free(src);
    free(dst);
    free(want);
}

/* The reference: the fewest significant digits from 15 to 17 that read
 * back as v, ".0" added to a whole number (json_text.h). */
static void shortest_reference(double v, char *out, size_t room)
{
    for (int digits = 15; digits <= 17; digits++) {
        int n = snprintf(out, room, "%.*g", digits, v);
        if (strtod(out, NULL) == v) {
            if (!strpbrk(out, ".eE"))
                snprintf(out + n, room - (size_t)n, ".0");
            return;
        }
    }
}

/* Reals are written as the reference writes them: durations rounded to the
 * microsecond (the fast path), whole thousandths to 1e12, both signs,
 * zeros; any other double reads back exactly and is no longer (but for the
 * exponent's sign Jansson leaves out). */
static void test_json_reals(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v;
        switch (i % 4) {
        case 0: v = ghd_round_ms((double)(x % 100000000) / 7919.0); break;
        case 1: v = (double)(int64_t)(x % 2000000000000000ull - 1000000000000000ll) / 1000.0; break;
        case 2: v = ghd_round_ms((double)(x >> 11) / 9007199254740992.0 * 1e13); break;
        default: memcpy(&v, &x, sizeof(v)); if (!isfinite(v)) v = 1.0 / 3.0; break;
        }
        if (i < 6)
            v = (double[]){0.0, -0.0, 60.0, 1.5, -0.001, 999999999999.999}[i];
        json_t *r = json_real(v);
        char *text = ghd_json_dumps(r, JSON_ENCODE_ANY), want[64];
        shortest_reference(v, want, sizeof(want));
        if (i % 4 != 3 && strcmp(text, want) != 0)
            fail_msg("%.17g: wrote %s, the reference %s", v, text, want);
        if (strtod(text, NULL) != v || strlen(text) > strlen(want) + 1) /* any double: exact, short */
            fail_msg("%.17g: wrote %s", v, text);
        free(text);
        json_decref(r);
    }
}

/* Integers from 2^63 to 2^64 - 1 parse and write back exactly (a tagged
 * string inside, json_u64.h); a body's own "\u0000" is never read as the
 * tag; smaller integers and bodies without big ones are untouched. */
static void test_json_u64(void **state)
{
    (void)state;
    static const char body[] = "{\"a\": 18446744073709551615, \"b\": [9223372036854775808, -5, 1.5e3],"
                               " \"c\": \"18446744073709551615\"}";
    json_error_t e;
    json_t *doc = ghd_json_loadb_u64(body, sizeof(body) - 1, JSON_REJECT_DUPLICATES, &e);
    if (!doc)
        fail_msg("%s", e.text);
    uint64_t v = 0;
    assert_true(ghd_json_u64_big(json_object_get(doc, "a"), &v) && v == UINT64_MAX);
    assert_true(ghd_json_u64_big(json_array_get(json_object_get(doc, "b"), 0), &v) && v == 1ull << 63);
    assert_false(ghd_json_u64_big(json_object_get(doc, "c"), &v)); /* a string stays one */
    char *text = ghd_json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, "{\"a\":18446744073709551615,\"b\":[9223372036854775808,-5,1500.0],"
                              "\"c\":\"18446744073709551615\"}");
    free(text);
    json_decref(doc);
    json_t *small = ghd_json_u64(42), *big = ghd_json_u64(UINT64_MAX - 1);
    assert_true(json_is_integer(small) && json_integer_value(small) == 42);
    text = ghd_json_dumps(big, JSON_ENCODE_ANY);
    assert_string_equal(text, "18446744073709551614");
    free(text);
    json_decref(small);
    json_decref(big);
    /* refused as before: past 2^64 - 1, and a body with a NUL of its own */
    static const char *bad[] = {"{\"a\": 18446744073709551616}",
                                "{\"a\": 18446744073709551615, \"s\": \"\\u0000u64:5\"}"};
    for (size_t i = 0; i < 2; i++) {
        assert_null(ghd_json_loadb_u64(bad[i], strlen(bad[i]), 0, &e));
        assert_int_equal(json_error_code(&e), json_error_numeric_overflow);
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
        cmocka_unit_test(test_list_push_remove),
        cmocka_unit_test(test_idmap_insert_find_remove),
        cmocka_unit_test(test_idmap_same_id),
        cmocka_unit_test(test_idmap_grows),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_owner),
        cmocka_unit_test(test_owner_json),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_stream_copy),
        cmocka_unit_test(test_json_u64), cmocka_unit_test(test_json_reals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
