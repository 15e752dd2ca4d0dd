/* Tokens rotated without a restart, as a Kubernetes Secret volume rotates
 * them: the tokens file is a link through "..data" to a directory of the
 * version, and an update makes a new directory and swaps "..data" to it in
 * one rename. Nobody sends SIGHUP: the server sees the file change (within
 * two seconds: it waits until the file is still for one), swaps its token
 * table, and keeps everything else. The new token is accepted, the old one
 * refused, another tenant's stays, and the buffer the tenant made under the
 * old token is there under the new one with its bytes. A broken version is
 * refused once, and the tokens in force stay. No token reaches the log.
 * The metrics token rotates the same way from its own key of the Secret
 * (--metrics-token-file). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"

static char dir[64];

static void write_key(const char *version, const char *key, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s/%s", dir, version, key);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0600), 0);
}

/* The metrics token's key in the next versions published (NULL: none). */
static const char *metrics_key;

/* dir/<version>/tokens with `text` (and metrics-token with metrics_key),
 * then dir/..data -> <version> in one rename, as the kubelet's atomic
 * writer does; the old version goes. */
static void publish(const char *version, const char *old, const char *text)
{
    char path[256], tmp[256], data[256];
    snprintf(path, sizeof(path), "%s/%s", dir, version);
    assert_int_equal(mkdir(path, 0755), 0);
    write_key(version, "tokens", text);
    if (metrics_key)
        write_key(version, "metrics-token", metrics_key);
    snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
    snprintf(data, sizeof(data), "%s/..data", dir);
    assert_int_equal(symlink(version, tmp), 0);
    assert_int_equal(rename(tmp, data), 0);
    if (old) {
        snprintf(path, sizeof(path), "%s/%s/tokens", dir, old);
        unlink(path);
        snprintf(path, sizeof(path), "%s/%s/metrics-token", dir, old);
        unlink(path);
        snprintf(path, sizeof(path), "%s/%s", dir, old);
        rmdir(path);
    }
}

static long status_with(struct support_server *s, const char *path, const char *token)
{
    struct support_resp r;
    long st = support_json(s, "GET", path, token, NULL, &r);
    support_resp_free(&r);
    return st;
}

/* The change is seen within about two seconds; poll up to ten. */
static long await_status(struct support_server *s, const char *token, long want)
{
    long st = 0;
    for (int i = 0; i < 200 && (st = status_with(s, "/v1/buffers", token)) != want; i++)
        support_sleep_ms(50);
    return st;
}

static int count_in_log(const struct support_child *p, const char *text)
{
    FILE *f = fopen(p->log_path, "r");
    if (!f)
        return -1;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, text) != NULL;
    fclose(f);
    return n;
}

static void test_secret_volume_rotation(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ghd-secret-XXXXXX");
    assert_non_null(mkdtemp(dir));
    publish("..2026_01", NULL, "first-token-aaaa alice\nbob-token-zzzz bob\n");
    char link[256];
    snprintf(link, sizeof(link), "%s/tokens", dir);
    assert_int_equal(symlink("..data/tokens", link), 0);

    const char *args[] = {"--tokens-file", link, NULL};
    struct support_child p;
    if (support_child_spawn(&p, args, NULL, 20000) < 0)
        fail_msg("gpuhttpd did not start");
    struct support_server s;
    support_server_for(&s, &p);

    char id[80], path[128];
    unsigned char data[4096];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 7 + 3);
    assert_int_equal(support_buffer_try_create(&s, "first-token-aaaa", sizeof(data), id, sizeof(id)), 201);
    assert_int_equal(support_buffer_try_put(&s, "first-token-aaaa", id, data, sizeof(data)), 200);
    assert_int_equal(status_with(&s, "/v1/buffers", "second-token-bbbb"), 401);

    publish("..2026_02", "..2026_01", "second-token-bbbb alice\nbob-token-zzzz bob\n");
    assert_int_equal(await_status(&s, "second-token-bbbb", 200), 200);
    assert_int_equal(status_with(&s, "/v1/buffers", "first-token-aaaa"), 401);
    assert_int_equal(status_with(&s, "/v1/buffers", "bob-token-zzzz"), 200);
    /* Nothing lost: alice's buffer, its bytes, under her new token. */
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_call get = {.method = "GET", .path = path, .token = "second-token-bbbb"};
    struct support_resp r;
    support_do_call(&s, &get, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, sizeof(data));
    assert_memory_equal(r.body, data, sizeof(data));
    support_resp_free(&r);
    assert_int_equal(status_with(&s, path, "first-token-aaaa"), 401);
    assert_int_equal(count_in_log(&p, "the tokens file changed: tokens re-read"), 1);

    /* A broken version: refused, once; the tokens in force stay. */
    publish("..2026_03", "..2026_02", "second-token-bbbb alice\nthird-token-cccc\n");
    for (int i = 0; i < 100 && count_in_log(&p, "keeping the tokens in force") < 1; i++)
        support_sleep_ms(50);
    support_sleep_ms(2500); /* two more looks at the file: no second warning */
    assert_int_equal(count_in_log(&p, "keeping the tokens in force"), 1);
    assert_int_equal(status_with(&s, "/v1/buffers", "second-token-bbbb"), 200);
    assert_int_equal(status_with(&s, "/v1/buffers", "third-token-cccc"), 401);

    /* Mended: read again. */
    publish("..2026_04", "..2026_03", "third-token-cccc alice\n");
    assert_int_equal(await_status(&s, "third-token-cccc", 200), 200);
    assert_int_equal(status_with(&s, "/v1/buffers", "second-token-bbbb"), 401);
    assert_int_equal(status_with(&s, "/v1/buffers", "bob-token-zzzz"), 401);

    const char *secrets[] = {"token-aaaa", "token-bbbb", "token-cccc", "token-zzzz"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        assert_false(support_child_log_contains(&p, secrets[i]));
    support_child_signal(&p, SIGTERM);
    assert_int_equal(support_child_wait_exit_or_kill(&p, 10000), 0);
    unlink(p.log_path);
    publish("..2026_05", "..2026_04", "");
    unlink(link);
    char data_link[256], last[256];
    snprintf(data_link, sizeof(data_link), "%s/..data", dir);
    unlink(data_link);
    snprintf(last, sizeof(last), "%s/..2026_05/tokens", dir);
    unlink(last);
    snprintf(last, sizeof(last), "%s/..2026_05", dir);
    rmdir(last);
    rmdir(dir);
}

/* The last version, the links and the folder go. */
static void remove_secret(const char *last_version)
{
    char path[256];
    const char *names[] = {"tokens", "metrics-token", "..data"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
        snprintf(path, sizeof(path), "%s/%s/%s", dir, last_version, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/%s", dir, last_version);
    rmdir(path);
    rmdir(dir);
}

static long metrics_with(struct support_server *s, const char *token)
{
    return status_with(s, "/metrics", token);
}

static void test_metrics_token_rotation(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ghd-secret-XXXXXX");
    assert_non_null(mkdtemp(dir));
    metrics_key = "metrics-one-aaaa\n"; /* a Secret's value may end in a newline */
    publish("..2026_01", NULL, "tenant-token-aaaa alice\n");
    char tokens[256], metrics[256];
    snprintf(tokens, sizeof(tokens), "%s/tokens", dir);
    snprintf(metrics, sizeof(metrics), "%s/metrics-token", dir);
    assert_int_equal(symlink("..data/tokens", tokens), 0);
    assert_int_equal(symlink("..data/metrics-token", metrics), 0);

    const char *args[] = {"--tokens-file", tokens, "--metrics-token-file", metrics, NULL};
    struct support_child p;
    if (support_child_spawn(&p, args, NULL, 20000) < 0)
        fail_msg("gpuhttpd did not start");
    struct support_server s;
    support_server_for(&s, &p);
    assert_int_equal(metrics_with(&s, "metrics-one-aaaa"), 200);
    assert_int_equal(metrics_with(&s, "tenant-token-aaaa"), 401);
    assert_int_equal(metrics_with(&s, "metrics-two-bbbb"), 401);

    metrics_key = "metrics-two-bbbb";
    publish("..2026_02", "..2026_01", "tenant-token-aaaa alice\n");
    long st = 0;
    for (int i = 0; i < 200 && (st = metrics_with(&s, "metrics-two-bbbb")) != 200; i++)
        support_sleep_ms(50);
    assert_int_equal(st, 200);
    assert_int_equal(metrics_with(&s, "metrics-one-aaaa"), 401);
    assert_int_equal(count_in_log(&p, "the metrics token file changed: the metrics token re-read"),
                     1);

    /* Two words are not one token: refused once, the token in force stays. */
    metrics_key = "metrics-three-cccc metrics-four-dddd";
    publish("..2026_03", "..2026_02", "tenant-token-aaaa alice\n");
    for (int i = 0; i < 100 && count_in_log(&p, "keeping the metrics token in force") < 1; i++)
        support_sleep_ms(50);
    support_sleep_ms(2500);
    assert_int_equal(count_in_log(&p, "keeping the metrics token in force"), 1);
    assert_int_equal(metrics_with(&s, "metrics-two-bbbb"), 200);
    /* SIGHUP reads it again (still broken: a second warning, nothing else). */
    support_child_signal(&p, SIGHUP);
    for (int i = 0; i < 100 && count_in_log(&p, "keeping the metrics token in force") < 2; i++)
        support_sleep_ms(50);
    assert_int_equal(count_in_log(&p, "SIGHUP: keeping the metrics token in force"), 1);
    assert_int_equal(metrics_with(&s, "metrics-two-bbbb"), 200);

    const char *secrets[] = {"one-aaaa", "two-bbbb", "three-cccc", "four-dddd", "token-aaaa"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        assert_false(support_child_log_contains(&p, secrets[i]));
    support_child_signal(&p, SIGTERM);
    assert_int_equal(support_child_wait_exit_or_kill(&p, 10000), 0);
    unlink(p.log_path);
    metrics_key = NULL;
    remove_secret("..2026_03");
}

int main(void)
{
    if (!getenv("GHD_BIN")) {
        printf("SKIP: GHD_BIN does not name the gpuhttpd binary\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_volume_rotation),
        cmocka_unit_test(test_metrics_token_rotation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
