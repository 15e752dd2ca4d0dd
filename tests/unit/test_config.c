/* Configuration: defaults, environment, flags (a flag wins), size suffixes,
 * percent pool limits, and refusals that name the offending option. Output
 * and error streams are captured with open_memstream. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/config/config.h"

extern char **environ;

/* Captured output of one ghd_config_parse call. */
struct parse_result {
    int rc;
    char *out;
    char *err;
};

static void result_free(struct parse_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Parses a NULL-terminated list of arguments (the program name is added). */
static struct parse_result parse_args(struct ghd_config *cfg, const char *first, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)"gpuhttpd";
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        assert_true(argc < 63);
        argv[argc++] = (char *)a;
    }
    va_end(ap);
    argv[argc] = NULL;
    struct parse_result r = {0};
    size_t out_len = 0, err_len = 0;
    FILE *out = open_memstream(&r.out, &out_len);
    FILE *err = open_memstream(&r.err, &err_len);
    assert_non_null(out);
    assert_non_null(err);
    r.rc = ghd_config_parse(cfg, argc, argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}

#define PARSE(cfg, ...) parse_args((cfg), __VA_ARGS__, (const char *)NULL)

/* Every test starts from an environment without GHD_* variables, so that a
 * variable set by the caller of the test cannot change its outcome. */
static int clear_env(void **state)
{
    (void)state;
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e; e++) {
            if (strncmp(*e, "GHD_", 4) == 0) {
                const char *eq = strchr(*e, '=');
                size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
                if (n < sizeof(name)) {
                    memcpy(name, *e, n);
                    name[n] = '\0';
                }
                break;
            }
        }
        if (!name[0])
            return 0;
        unsetenv(name);
    }
}

static void test_defaults(void **state)
{
    (void)state;
    struct ghd_config d, p;
    ghd_config_defaults(&d);
    assert_int_equal(d.port, 8080);
    assert_string_equal(d.bind, "127.0.0.1");
    assert_int_equal(d.backend, GHD_CHOICE_AUTO);
    assert_string_equal(d.device, "");
    assert_string_equal(d.devices, "all");
    assert_int_equal(d.host_devices, 1);
    assert_string_equal(d.placement, "most-free");
    assert_string_equal(d.ready_needs, "any");
    assert_int_equal(d.pool_limit, 0);
    assert_int_equal(d.pool_limit_percent, 90);
    assert_int_equal(d.pool_alignment, 256);
    assert_int_equal(d.pool_slab, (size_t)256 << 20);
    assert_int_equal(d.pool_initial, (size_t)256 << 20);
    assert_int_equal(d.staging_chunk, (size_t)8 << 20);
    assert_int_equal(d.staging_chunks, 32);
    assert_int_equal(d.staging_timeout_ms, 10000);
    assert_int_equal(d.max_buffer_size, (size_t)64 << 30);
    assert_int_equal(d.max_json_body, (size_t)1 << 20);
    assert_int_equal(d.connection_limit, 1000);
    assert_int_equal(d.connection_timeout_s, 60);
    assert_int_equal(d.connection_memory, (size_t)64 << 10);
    assert_int_equal(d.socket_buffer, (size_t)4 << 20);
    assert_int_equal(d.socket_recv_max, (size_t)8 << 20);
    assert_int_equal(d.socket_bounce, 0);
    assert_int_equal(d.socket_bounce_uploads, 0);
    assert_int_equal(d.download_block, (size_t)4 << 20);
    assert_int_equal(d.sync_spin_us, 50);
    assert_int_equal(d.default_ttl_s, 0);
    assert_string_equal(d.log_level, "info");
    assert_string_equal(d.log_format, "text");
    assert_string_equal(d.port_file, "");

    /* Parsing nothing gives exactly the defaults. */
    struct parse_result r = PARSE(&p, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_memory_equal(&d, &p, sizeof(d));
    result_free(&r);
}

static void test_flags(void **state)
{
    (void)state;
    struct ghd_config c;
    struct parse_result r = PARSE(&c, "--port", "9090", "--bind=0.0.0.0", "--backend", "host",
                                  "--staging-chunks", "4", "--staging-chunk", "1M",
                                  "--log-level", "debug", "--log-format=json",
                                  "--default-ttl", "3600", "--port-file", "/tmp/p");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_int_equal(c.port, 9090);
    assert_string_equal(c.bind, "0.0.0.0");
    assert_int_equal(c.backend, GHD_CHOICE_HOST);
    assert_int_equal(c.staging_chunks, 4);
    assert_int_equal(c.staging_chunk, (size_t)1 << 20);
    assert_string_equal(c.log_level, "debug");
    assert_string_equal(c.log_format, "json");
    assert_int_equal(c.default_ttl_s, 3600);
    assert_string_equal(c.port_file, "/tmp/p");
    result_free(&r);

    r = PARSE(&c, "--backend", "cuda");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.backend, GHD_CHOICE_CUDA);
    result_free(&r);
    r = PARSE(&c, "--backend=auto");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.backend, GHD_CHOICE_AUTO);
    result_free(&r);
    /* Port 0 asks the kernel for a free port. */
    r = PARSE(&c, "--port", "0");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.port, 0);
    result_free(&r);
    /* The last occurrence of a flag wins. */
    r = PARSE(&c, "--port", "1", "--port", "2");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.port, 2);
    result_free(&r);
}

static void test_env_applies(void **state)
{
    (void)state;
    struct ghd_config c;
    setenv("GHD_PORT", "7070", 1);
    setenv("GHD_STAGING_TIMEOUT_MS", "250", 1);
    setenv("GHD_POOL_LIMIT", "2G", 1);
    setenv("GHD_LOG_LEVEL", "warn", 1);
    setenv("GHD_BACKEND", "host", 1);
    struct parse_result r = PARSE(&c, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_int_equal(c.port, 7070);
    assert_int_equal(c.staging_timeout_ms, 250);
    assert_int_equal(c.pool_limit, (size_t)2 << 30);
    assert_int_equal(c.pool_limit_percent, 0);
    assert_string_equal(c.log_level, "warn");
    assert_int_equal(c.backend, GHD_CHOICE_HOST);
    result_free(&r);
    /* An empty variable is as good as an unset one. */
    setenv("GHD_PORT", "", 1);
    r = PARSE(&c, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.port, 8080);
    result_free(&r);
}

static void test_flag_overrides_env(void **state)
{
    (void)state;
    struct ghd_config c;
    setenv("GHD_PORT", "7070", 1);
    setenv("GHD_POOL_LIMIT", "50%", 1);
    setenv("GHD_BIND", "10.0.0.1", 1);
    struct parse_result r = PARSE(&c, "--port", "6060", "--pool-limit", "1G");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.port, 6060);
    assert_int_equal(c.pool_limit, (size_t)1 << 30);
    assert_int_equal(c.pool_limit_percent, 0); /* the flag's bytes replace the env's percent */
    assert_string_equal(c.bind, "10.0.0.1"); /* untouched by flags: the env's value */
    result_free(&r);

    /* And the other way round: a percent flag replaces a byte count from the env. */
    setenv("GHD_POOL_LIMIT", "3G", 1);
    r = PARSE(&c, "--pool-limit", "25%");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.pool_limit_percent, 25);
    assert_int_equal(c.pool_limit, 0);
    result_free(&r);
}

static void test_size_suffixes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t value;
    } good[] = {
        {"0", 0},
        {"4096", 4096},
        {"1K", 1024},
        {"1k", 1024},
        {"64K", 64 << 10},
        {"8M", (size_t)8 << 20},
        {"8m", (size_t)8 << 20},
        {"2G", (size_t)2 << 30},
        {"1T", (size_t)1 << 40},
        {"3KiB", 3 << 10},
        {"5MB", (size_t)5 << 20},
        {"5Mi", (size_t)5 << 20},
        {"7B", 7},
        {"16777215T", (size_t)16777215 << 40},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        size_t v = 12345;
        if (ghd_parse_size(good[i].text, &v) != 0)
            fail_msg("'%s' was refused", good[i].text);
        if (v != good[i].value)
            fail_msg("'%s' parsed as %zu, expected %zu", good[i].text, v, good[i].value);
    }
    static const char *const bad[] = {
        "", "K", "-1", "+1", " 1", "1 ", "1.5G", "1Q", "1KK", "1iB", "1Ki B", "0x10",
        "99999999999999999999", "16777216T", "18446744073709551615K", "1e6",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t v = 12345;
        if (ghd_parse_size(bad[i], &v) == 0)
            fail_msg("'%s' was accepted as %zu", bad[i], v);
        assert_int_equal(v, 12345); /* untouched on refusal */
    }
    size_t v;
    assert_int_equal(ghd_parse_size(NULL, &v), -1);

    /* The suffixes reach the configuration through flags and the env. */
    struct ghd_config c;
    setenv("GHD_MAX_BUFFER_SIZE", "3G", 1);
    struct parse_result r = PARSE(&c, "--pool-slab", "64M", "--staging-chunk=512K",
                                  "--max-json-body", "2KiB", "--socket-recv-max", "1M",
                                  "--download-block", "1M", "--socket-bounce", "64K",
                                  "--socket-bounce-uploads", "3");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.socket_bounce, (size_t)64 << 10);
    assert_int_equal(c.socket_bounce_uploads, 3);
    assert_int_equal(c.socket_recv_max, (size_t)1 << 20);
    assert_int_equal(c.download_block, (size_t)1 << 20);
    assert_int_equal(c.pool_slab, (size_t)64 << 20);
    assert_int_equal(c.staging_chunk, (size_t)512 << 10);
    assert_int_equal(c.max_json_body, 2048);
    assert_int_equal(c.max_buffer_size, (size_t)3 << 30);
    result_free(&r);
}

static void test_pool_limit_percent(void **state)
{
    (void)state;
    struct ghd_config c;
    static const unsigned good[] = {1, 50, 99, 100};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char arg[16];
        snprintf(arg, sizeof(arg), "%u%%", good[i]);
        struct parse_result r = PARSE(&c, "--pool-limit", arg);
        assert_int_equal(r.rc, 0);
        assert_int_equal(c.pool_limit_percent, good[i]);
        assert_int_equal(c.pool_limit, 0);
        result_free(&r);
    }
    /* Bytes clear the default percent. */
    struct parse_result r = PARSE(&c, "--pool-limit", "512M");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.pool_limit, (size_t)512 << 20);
    assert_int_equal(c.pool_limit_percent, 0);
    result_free(&r);
    static const char *const bad[] = {"0%", "101%", "%", "-5%", "50%%", "1.5%", "x%", "50 %"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = PARSE(&c, "--pool-limit", bad[i]);
        if (r.rc != -1)
            fail_msg("--pool-limit '%s' was accepted (rc %d)", bad[i], r.rc);
        assert_non_null(strstr(r.err, "--pool-limit"));
        result_free(&r);
    }
}

/* A refused value: rc -1, nothing on stdout, one message naming `name`. */
static void expect_refusal(struct parse_result *r, const char *name)
{
    if (r->rc != -1)
        fail_msg("expected -1 naming %s, got rc %d (err '%s')", name, r->rc, r->err);
    if (!strstr(r->err, name))
        fail_msg("the message '%s' does not name %s", r->err, name);
    assert_string_equal(r->out, "");
    /* One line. */
    size_t len = strlen(r->err);
    assert_true(len > 0 && r->err[len - 1] == '\n');
    assert_null(memchr(r->err, '\n', len - 1));
    result_free(r);
}

static void test_bad_flag_values(void **state)
{
    (void)state;
    struct ghd_config c;
    struct parse_result r;
    r = PARSE(&c, "--port", "65536");
    expect_refusal(&r, "--port");
    r = PARSE(&c, "--port", "-1");
    expect_refusal(&r, "--port");
    r = PARSE(&c, "--port", "80x");
    expect_refusal(&r, "--port");
    r = PARSE(&c, "--port=");
    expect_refusal(&r, "--port");
    r = PARSE(&c, "--port", "99999999999999999999999");
    expect_refusal(&r, "--port");
    r = PARSE(&c, "--backend", "opencl");
    expect_refusal(&r, "--backend");
    r = PARSE(&c, "--staging-chunks", "1"); /* below the minimum of 2 */
    expect_refusal(&r, "--staging-chunks");
    r = PARSE(&c, "--staging-chunk", "1K"); /* below 64K */
    expect_refusal(&r, "--staging-chunk");
    r = PARSE(&c, "--staging-chunk", "2G"); /* above 1G */
    expect_refusal(&r, "--staging-chunk");
    r = PARSE(&c, "--download-block", "4K"); /* below 64K */
    expect_refusal(&r, "--download-block");
    r = PARSE(&c, "--socket-recv-max", "2G"); /* above 1G */
    expect_refusal(&r, "--socket-recv-max");
    r = PARSE(&c, "--socket-bounce", "128M"); /* above 64M */
    expect_refusal(&r, "--socket-bounce");
    r = PARSE(&c, "--pool-slab", "1M");
    expect_refusal(&r, "--pool-slab");
    r = PARSE(&c, "--pool-alignment", "128");
    expect_refusal(&r, "--pool-alignment");
    r = PARSE(&c, "--pool-alignment", "384"); /* in range but not a power of two */
    expect_refusal(&r, "--pool-alignment");
    r = PARSE(&c, "--max-buffer-size", "0");
    expect_refusal(&r, "--max-buffer-size");
    r = PARSE(&c, "--log-level", "verbose");
    expect_refusal(&r, "--log-level");
    r = PARSE(&c, "--log-format", "xml");
    expect_refusal(&r, "--log-format");
    r = PARSE(&c, "--port", "8080", "--probe-port", "8080"); /* one socket cannot be both */
    expect_refusal(&r, "--probe-port");
    r = PARSE(&c, "--probe-port", "65536");
    expect_refusal(&r, "--probe-port");
    char longbind[200];
    memset(longbind, '1', sizeof(longbind) - 1);
    longbind[sizeof(longbind) - 1] = '\0';
    r = PARSE(&c, "--bind", longbind);
    expect_refusal(&r, "--bind");
    r = PARSE(&c, "--no-such-option");
    expect_refusal(&r, "--no-such-option");
    r = PARSE(&c, "--port"); /* missing value */
    expect_refusal(&r, "--port");
    r = PARSE(&c, "stray");
    expect_refusal(&r, "stray");
}

/* --devices takes all or a list of ordinals and UUIDs; --device N is the
 * one-device list; the placement and readiness flags take their words. */
static void test_devices(void **state)
{
    (void)state;
    struct ghd_config c;
    struct parse_result r = PARSE(&c, "--devices", "0,1,3");
    assert_int_equal(r.rc, 0);
    assert_string_equal(c.devices, "0,1,3");
    result_free(&r);
    r = PARSE(&c, "--devices", "GPU-8f2e1a3c-0000-1111-2222-333344445555,2");
    assert_int_equal(r.rc, 0);
    result_free(&r);
    r = PARSE(&c, "--device", "2");
    assert_int_equal(r.rc, 0);
    assert_string_equal(c.devices, "2");
    result_free(&r);
    r = PARSE(&c, "--host-devices", "3", "--placement", "round-robin", "--ready-needs", "all");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.host_devices, 3);
    assert_string_equal(c.placement, "round-robin");
    assert_string_equal(c.ready_needs, "all");
    result_free(&r);
    static const char *const bad[][3] = {
        {"--devices", "0,0", "twice"},
        {"--devices", "0,,1", "neither an ordinal"},
        {"--devices", "sixty", "neither an ordinal"},
        {"--devices", "64", "neither an ordinal"},
        {"--device", "x", "--device"},
        {"--placement", "random", "--placement"},
        {"--ready-needs", "most", "--ready-needs"},
        {"--host-devices", "17", "--host-devices"},
        {"--host-devices", "0", "--host-devices"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = PARSE(&c, bad[i][0], bad[i][1]);
        expect_refusal(&r, bad[i][2]);
    }
    r = PARSE(&c, "--devices", "0,1", "--device", "1");
    expect_refusal(&r, "not both");
}

static void test_bad_env_values(void **state)
{
    (void)state;
    struct ghd_config c;
    setenv("GHD_PORT", "http", 1);
    struct parse_result r = PARSE(&c, NULL);
    expect_refusal(&r, "GHD_PORT");
    r = PARSE(&c, NULL);
    expect_refusal(&r, "--port");
    unsetenv("GHD_PORT");
    setenv("GHD_STAGING_CHUNK", "12Q", 1);
    r = PARSE(&c, NULL);
    expect_refusal(&r, "GHD_STAGING_CHUNK");
    unsetenv("GHD_STAGING_CHUNK");
    setenv("GHD_POOL_LIMIT", "150%", 1);
    r = PARSE(&c, NULL);
    expect_refusal(&r, "GHD_POOL_LIMIT");
    unsetenv("GHD_POOL_LIMIT");
    /* Cross-option validation applies to env values too. */
    setenv("GHD_POOL_ALIGNMENT", "768", 1);
    r = PARSE(&c, NULL);
    expect_refusal(&r, "--pool-alignment");
}

static void test_help_and_version(void **state)
{
    (void)state;
    struct ghd_config c;
    struct parse_result r = PARSE(&c, "--help");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "usage"));
    /* Every option is listed with its variable. */
    assert_non_null(strstr(r.out, "--pool-limit"));
    assert_non_null(strstr(r.out, "GHD_POOL_LIMIT"));
    assert_non_null(strstr(r.out, "--staging-timeout-ms"));
    assert_non_null(strstr(r.out, "GHD_STAGING_TIMEOUT_MS"));
    assert_string_equal(r.err, "");
    result_free(&r);

    r = PARSE(&c, "-h");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "usage"));
    result_free(&r);

    /* --help wins even after other valid flags. */
    r = PARSE(&c, "--port", "1", "--help");
    assert_int_equal(r.rc, 1);
    result_free(&r);

    r = PARSE(&c, "--version");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, GHD_VERSION));
    result_free(&r);
}

static void test_reparse_is_independent(void **state)
{
    (void)state;
    /* Parsing is repeatable in one process: a second parse sees only its own
     * arguments, whatever the first one stopped on. */
    struct ghd_config c;
    struct parse_result r = PARSE(&c, "-hV");
    assert_int_equal(r.rc, 1);
    result_free(&r);
    r = PARSE(&c, "--port", "5000");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.port, 5000);
    assert_string_equal(r.out, "");
    result_free(&r);

    r = PARSE(&c, "--no-such", "--port", "1");
    assert_int_equal(r.rc, -1);
    result_free(&r);
    r = PARSE(&c, "--staging-chunks", "3");
    assert_int_equal(r.rc, 0);
    assert_int_equal(c.staging_chunks, 3);
    assert_int_equal(c.port, 8080);
    result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_flags, clear_env),
        cmocka_unit_test_setup(test_env_applies, clear_env),
        cmocka_unit_test_setup(test_flag_overrides_env, clear_env),
        cmocka_unit_test_setup(test_size_suffixes, clear_env),
        cmocka_unit_test_setup(test_pool_limit_percent, clear_env),
        cmocka_unit_test_setup(test_bad_flag_values, clear_env),
        cmocka_unit_test_setup(test_devices, clear_env),
        cmocka_unit_test_setup(test_bad_env_values, clear_env),
        cmocka_unit_test_setup(test_help_and_version, clear_env),
        cmocka_unit_test_setup(test_reparse_is_independent, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
