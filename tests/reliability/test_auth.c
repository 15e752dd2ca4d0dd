/* The token parser and table (server/core/tenancy/auth.c): every line form, the list
 * form, file errors with line numbers, reload keeping the old table on error,
 * and that no error message ever contains a token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/tenancy/auth.h"
#include "base/error.h"

static int parse(const char *line, char *tok, char *ten, const char **why)
{
    unsigned perms;
    *why = NULL;
    return ghd_auth_parse_line(line, strlen(line), tok, ten, &perms, why);
}

static void test_parse_line_entries(void **state)
{
    (void)state;
    char tok[GHD_TOKEN_MAX + 1], ten[GHD_TENANT_MAX + 1];
    const char *why;
    static const struct {
        const char *line, *tok, *ten;
    } ok[] = {
        {"abc tenant", "abc", "tenant"},
        {"  abc\t tenant  ", "abc", "tenant"},
        {"abc tenant\r\n", "abc", "tenant"},
        {"abc tenant # a comment", "abc", "tenant"},
        {"abc tenant#comment", "abc", "tenant"},
        {"A-Za-z0-9._~+/== t.e_n-1", "A-Za-z0-9._~+/==", "t.e_n-1"},
        {"x==== y", "x====", "y"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int rc = parse(ok[i].line, tok, ten, &why);
        if (rc != 1)
            fail_msg("'%s': expected an entry, got %d (%s)", ok[i].line, rc, why ? why : "");
        assert_string_equal(tok, ok[i].tok);
        assert_string_equal(ten, ok[i].ten);
    }
}

static void test_parse_line_blank_and_comment(void **state)
{
    (void)state;
    char tok[GHD_TOKEN_MAX + 1], ten[GHD_TENANT_MAX + 1];
    const char *why;
    const char *blank[] = {"", " ", "\t\t", "\r\n", "# comment", "   # comment abc def", "#"};
    for (size_t i = 0; i < sizeof(blank) / sizeof(blank[0]); i++)
        assert_int_equal(parse(blank[i], tok, ten, &why), 0);
}

static void test_parse_line_errors(void **state)
{
    (void)state;
    char tok[GHD_TOKEN_MAX + 1], ten[GHD_TENANT_MAX + 1];
    const char *why;
    char long_token[GHD_TOKEN_MAX + 16], long_tenant[GHD_TENANT_MAX + 16];
    memset(long_token, 'a', GHD_TOKEN_MAX + 1);
    strcpy(long_token + GHD_TOKEN_MAX + 1, " t");
    memcpy(long_tenant, "x ", 2);
    memset(long_tenant + 2, 'b', GHD_TENANT_MAX + 1);
    long_tenant[GHD_TENANT_MAX + 3] = '\0';
    const char *bad[] = {
        "onlytoken",          /* no tenant */
        "a b c",              /* an unknown permission */
        "a b raw c",          /* one of them unknown */
        "a b RAW",            /* permissions are lower case */
        "tok\"en tenant",     /* quote in the token */
        "tok:en tenant",      /* colon */
        "tok,en tenant",      /* comma */
        "=abc tenant",        /* padding first */
        "ab=c tenant",        /* padding in the middle */
        "abc ten/ant",        /* slash in the tenant */
        "abc tenänt",         /* non-ASCII */
        long_token,           /* 257 characters */
        long_tenant,          /* 65 characters */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i], tok, ten, &why);
        if (rc != GHD_EINVAL)
            fail_msg("'%.40s': expected GHD_EINVAL, got %d", bad[i], rc);
        assert_non_null(why);
    }
    /* The longest allowed lengths are accepted. */
    char max_line[GHD_TOKEN_MAX + GHD_TENANT_MAX + 4];
    memset(max_line, 'a', GHD_TOKEN_MAX);
    max_line[GHD_TOKEN_MAX] = ' ';
    memset(max_line + GHD_TOKEN_MAX + 1, 'b', GHD_TENANT_MAX);
    max_line[GHD_TOKEN_MAX + 1 + GHD_TENANT_MAX] = '\0';
    assert_int_equal(parse(max_line, tok, ten, &why), 1);
    assert_int_equal(strlen(tok), GHD_TOKEN_MAX);
    assert_int_equal(strlen(ten), GHD_TENANT_MAX);
}

static void test_parse_line_not_terminated(void **state)
{
    (void)state;
    /* Only `len` bytes are read: the rest of the buffer is not part of it. */
    char tok[GHD_TOKEN_MAX + 1], ten[GHD_TENANT_MAX + 1];
    const char *why;
    unsigned perms;
    const char buf[] = "abc tenantXXXX garbage";
    assert_int_equal(ghd_auth_parse_line(buf, 10, tok, ten, &perms, &why), 1);
    assert_string_equal(ten, "tenant");
    /* An embedded NUL is just a bad character. */
    const char nul[] = "ab\0c tenant";
    assert_int_equal(ghd_auth_parse_line(nul, sizeof(nul) - 1, tok, ten, &perms, &why),
                     GHD_EINVAL);
}

static void test_bearer(void **state)
{
    (void)state;
    const char *t;
    size_t n;
    assert_int_equal(ghd_auth_bearer("Bearer abc", &t, &n), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(t, "abc", 3);
    assert_int_equal(ghd_auth_bearer("bearer   abc==  ", &t, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(ghd_auth_bearer("BEARER\tx", &t, &n), 0);
    const char *bad[] = {"", "Bearer", "Bearer ", "Bearerabc", "Basic abc", "Bearer a b",
                         "Bearer a,b", "Token abc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(ghd_auth_bearer(bad[i], &t, &n), GHD_EUNAUTH);
    assert_int_equal(ghd_auth_bearer(NULL, &t, &n), GHD_EUNAUTH);
}

/* The header authenticates as tenant `want`. */
static void assert_tenant(struct ghd_auth *a, const char *header, const char *want)
{
    char tenant[GHD_TENANT_MAX + 1];
    assert_int_equal(ghd_auth_check(a, header, tenant, NULL), 0);
    assert_string_equal(tenant, want);
}

static void test_list_and_check(void **state)
{
    (void)state;
    struct ghd_auth *a;
    struct ghd_err err = {0};
    assert_int_equal(ghd_auth_new(NULL, " tokA1:alice , tokB2:bob,", NULL, &a, &err),
                     0);
    assert_true(ghd_auth_enabled(a));
    assert_false(ghd_auth_metrics_guarded(a));
    assert_int_equal(ghd_auth_count(a), 2);
    char tenant[GHD_TENANT_MAX + 1];
    assert_tenant(a, "Bearer tokA1", "alice");
    assert_tenant(a, "Bearer tokB2", "bob");
    /* Prefixes, extensions and case changes of a token do not match. */
    const char *wrong[] = {"Bearer tokA", "Bearer tokA12", "Bearer TOKA1", "Bearer tokB2=",
                           "Basic tokA1", NULL};
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++)
        assert_int_equal(ghd_auth_check(a, wrong[i], tenant, NULL), GHD_EUNAUTH);
    ghd_auth_free(a);

    /* No tokens at all: authentication is off. */
    assert_int_equal(ghd_auth_new(NULL, "", "", &a, &err), 0);
    assert_false(ghd_auth_enabled(a));
    assert_int_equal(ghd_auth_check(a, "Bearer x", tenant, NULL), GHD_EUNAUTH);
    ghd_auth_free(a);
    assert_false(ghd_auth_enabled(NULL));
}

static void test_list_errors_never_echo_tokens(void **state)
{
    (void)state;
    const char *bad[] = {"secretAAA", "secretAAA:", ":bob", "secretAAA:bob:x",
                         "secretAAA:al ice", "secretAAA:alice,secretAAA:bob", "sec\"retAAA:bob"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ghd_auth *a = NULL;
        struct ghd_err err = {0};
        int rc = ghd_auth_new(NULL, bad[i], NULL, &a, &err);
        if (rc != GHD_EINVAL)
            fail_msg("'%s': expected GHD_EINVAL, got %d", bad[i], rc);
        assert_null(strstr(err.detail, "secret"));
        assert_non_null(strstr(err.detail, "item"));
    }
    /* The same pair twice is harmless. */
    struct ghd_auth *a;
    struct ghd_err err = {0};
    assert_int_equal(ghd_auth_new(NULL, "t1:a,t1:a", NULL, &a, &err), 0);
    assert_int_equal(ghd_auth_count(a), 1);
    ghd_auth_free(a);
}

/* The optional permissions after the tenant: "raw" in a file line and as a
 * third list field; ghd_auth_check hands them out; ghd_auth_raw_check's
 * verdict in each mode. */
static void test_permissions(void **state)
{
    (void)state;
    char tok[GHD_TOKEN_MAX + 1], ten[GHD_TENANT_MAX + 1];
    const char *why;
    unsigned perms = 99;
    assert_int_equal(ghd_auth_parse_line("abc alice raw # trusted", 23, tok, ten, &perms, &why), 1);
    assert_string_equal(ten, "alice");
    assert_int_equal(perms, GHD_PERM_RAW);
    assert_int_equal(ghd_auth_parse_line("abc alice", 9, tok, ten, &perms, &why), 1);
    assert_int_equal(perms, 0);
    assert_int_equal(ghd_auth_parse_line("abc alice raw raw", 17, tok, ten, &perms, &why), 1);
    assert_int_equal(perms, GHD_PERM_RAW);
    assert_int_equal(ghd_auth_parse_line("abc alice admin", 15, tok, ten, &perms, &why), GHD_EINVAL);
    assert_non_null(strstr(why, "'raw'"));
    /* A weight in the devices' shares: 1 to 1000, 1 when none is given. */
    assert_int_equal(ghd_auth_parse_line("abc alice weight=3 raw", 22, tok, ten, &perms, &why), 1);
    assert_int_equal(perms & GHD_PERM_RAW, GHD_PERM_RAW);
    assert_int_equal(ghd_perm_weight(perms), 3);
    assert_int_equal(ghd_perm_weight(GHD_PERM_RAW), 1);
    static const char *bad_weights[] = {"abc a weight=0", "abc a weight=1001",
                                        "abc a weight=07", "abc a weight=", "abc a weight=x"};
    for (size_t i = 0; i < sizeof(bad_weights) / sizeof(bad_weights[0]); i++) {
        const char *w = bad_weights[i];
        assert_int_equal(ghd_auth_parse_line(w, strlen(w), tok, ten, &perms, &why), GHD_EINVAL);
        assert_non_null(strstr(why, "weight=N"));
    }

    struct ghd_auth *a;
    struct ghd_err err = {0};
    assert_int_equal(ghd_auth_new(NULL, "tokR:alice:raw, tokP:bob", NULL, &a, &err), 0);
    char tenant[GHD_TENANT_MAX + 1];
    assert_int_equal(ghd_auth_check(a, "Bearer tokR", tenant, &perms), 0);
    assert_string_equal(tenant, "alice");
    assert_int_equal(perms, GHD_PERM_RAW);
    assert_int_equal(ghd_auth_check(a, "Bearer tokP", tenant, &perms), 0);
    assert_string_equal(tenant, "bob");
    assert_int_equal(perms, 0);
    /* With tokens: the flag and the permission. */
    assert_int_equal(ghd_auth_raw_check(a, 1, GHD_PERM_RAW, "alice", &err), 0);
    assert_int_equal(ghd_auth_raw_check(a, 1, 0, "bob", &err), GHD_EFORBIDDEN);
    assert_non_null(strstr(err.detail, "'raw'"));
    assert_non_null(strstr(err.detail, "bob"));
    assert_int_equal(ghd_auth_raw_check(a, 0, GHD_PERM_RAW, "alice", &err),
                     GHD_EFORBIDDEN);
    assert_non_null(strstr(err.detail, "--allow-raw-kernels"));
    ghd_auth_free(a);
    /* Without tokens the flag alone decides. */
    assert_int_equal(ghd_auth_new(NULL, NULL, NULL, &a, &err), 0);
    assert_int_equal(ghd_auth_raw_check(a, 1, 0, NULL, &err), 0);
    assert_int_equal(ghd_auth_raw_check(a, 0, 0, NULL, &err), GHD_EFORBIDDEN);
    ghd_auth_free(a);
    /* The same token with two sets of permissions, blanks inside an item,
     * an unknown permission: refused, never echoing the token. */
    const char *bad[] = {"secretQ:alice:raw,secretQ:alice", "secretQ:alice: raw",
                         "secretQ:alice:root", "secretQ:alice raw"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = NULL;
        if (ghd_auth_new(NULL, bad[i], NULL, &a, &err) != GHD_EINVAL)
            fail_msg("'%s' was accepted", bad[i]);
        assert_null(strstr(err.detail, "secret"));
    }
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_file_load_reload(void **state)
{
    (void)state;
    char path[] = "/tmp/ghd-tokens-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "# tenants\n\nfileTok1 alice\r\nfileTok2   bob  # the second\n");
    struct ghd_auth *a;
    struct ghd_err err = {0};
    assert_int_equal(ghd_auth_new(path, "envTok:carol", NULL, &a, &err), 0);
    assert_int_equal(ghd_auth_count(a), 3);
    char tenant[GHD_TENANT_MAX + 1];
    assert_tenant(a, "Bearer fileTok2", "bob");
    assert_tenant(a, "Bearer envTok", "carol");

    /* Reload: bob's token is rotated, dave is added. */
    write_file(path, "fileTok1 alice\nfileTok3 bob\nfileTok4 dave\n");
    size_t count = 0;
    assert_int_equal(ghd_auth_reload(a, &count, &err), 0);
    assert_int_equal(count, 4);
    assert_int_equal(ghd_auth_check(a, "Bearer fileTok2", tenant, NULL), GHD_EUNAUTH);
    assert_tenant(a, "Bearer fileTok3", "bob");

    /* A broken file is refused and the old table stays, naming the line. */
    write_file(path, "fileTok1 alice\n\nsecretBROKEN\n");
    assert_int_equal(ghd_auth_reload(a, &count, &err), GHD_EINVAL);
    assert_non_null(strstr(err.detail, "line 3"));
    assert_null(strstr(err.detail, "secretBROKEN"));
    assert_tenant(a, "Bearer fileTok4", "dave");

    /* One token for two tenants is refused. */
    write_file(path, "same alice\nsame bob\n");
    assert_int_equal(ghd_auth_reload(a, &count, &err), GHD_EINVAL);
    assert_non_null(strstr(err.detail, "line 2"));

    /* A file that disappeared: refused, old table stays. */
    unlink(path);
    assert_int_equal(ghd_auth_reload(a, &count, &err), GHD_EINVAL);
    assert_int_equal(ghd_auth_check(a, "Bearer fileTok1", tenant, NULL), 0);
    ghd_auth_free(a);

    /* An empty file still turns authentication on: nobody gets in. */
    write_file(path, "# nobody yet\n");
    assert_int_equal(ghd_auth_new(path, NULL, NULL, &a, &err), 0);
    assert_true(ghd_auth_enabled(a));
    assert_int_equal(ghd_auth_check(a, "Bearer anything", tenant, NULL), GHD_EUNAUTH);
    ghd_auth_free(a);
    /* A missing file at start is an error. */
    unlink(path);
    assert_int_equal(ghd_auth_new(path, NULL, NULL, &a, &err), GHD_EINVAL);
    assert_non_null(strstr(err.detail, path));
}

static void test_metrics_token(void **state)
{
    (void)state;
    struct ghd_auth *a;
    struct ghd_err err = {0};
    assert_int_equal(ghd_auth_new(NULL, NULL, "metricsSecret", &a, &err), 0);
    assert_false(ghd_auth_enabled(a));
    assert_true(ghd_auth_metrics_guarded(a));
    assert_int_equal(ghd_auth_check_metrics(a, "Bearer metricsSecret"), 0);
    assert_int_equal(ghd_auth_check_metrics(a, "Bearer metricsSecre"), GHD_EUNAUTH);
    assert_int_equal(ghd_auth_check_metrics(a, NULL), GHD_EUNAUTH);
    ghd_auth_free(a);
    assert_int_equal(ghd_auth_new(NULL, NULL, "bad token", &a, &err), GHD_EINVAL);
    assert_null(strstr(err.detail, "bad token"));
}

static void test_loopback(void **state)
{
    (void)state;
    assert_true(ghd_auth_is_loopback("127.0.0.1"));
    assert_true(ghd_auth_is_loopback("127.255.0.9"));
    assert_false(ghd_auth_is_loopback("0.0.0.0"));
    assert_false(ghd_auth_is_loopback("10.0.0.1"));
    assert_false(ghd_auth_is_loopback("128.0.0.1"));
    assert_false(ghd_auth_is_loopback("localhost"));
    assert_false(ghd_auth_is_loopback(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_line_entries),
        cmocka_unit_test(test_parse_line_blank_and_comment),
        cmocka_unit_test(test_parse_line_errors),
        cmocka_unit_test(test_parse_line_not_terminated),
        cmocka_unit_test(test_bearer),
        cmocka_unit_test(test_list_and_check),
        cmocka_unit_test(test_list_errors_never_echo_tokens),
        cmocka_unit_test(test_permissions),
        cmocka_unit_test(test_file_load_reload),
        cmocka_unit_test(test_metrics_token),
        cmocka_unit_test(test_loopback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
