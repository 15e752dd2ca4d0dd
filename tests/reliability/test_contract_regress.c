/* Regressions for what contract fuzzing (schemathesis, tests/contract)
 * and HTTP fuzzing (tests/fuzz/fuzz_http.c) found: a label of raw bytes that
 * are not UTF-8 (the buffer was made, then its 201 failed as a 500); a time to live so long that the expiry date left RFC 3339 (year
 * 38140) or overflowed time_t; query parameters of the octet-stream form
 * taken as 0 when not numbers ("ttl_s=false"), or silently ignored on the
 * JSON form; integral JSON numbers written as 4096.0 refused. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"
#include "core/buffers/buffer.h"

static int setup(void **state)
{
    struct ghd_config cfg;
    support_config(&cfg);
    return support_setup_with(state, &cfg);
}

static int teardown(void **state)
{
    struct support_server *s = *state;
    assert_true(support_wait_rest(s, SIZE_MAX, 2000));
    return support_teardown(state);
}

static long post_json(struct support_server *s, const char *path, const char *json, char *expires,
                      size_t cap)
{
    struct support_resp r;
    long st = support_json(s, "POST", path, NULL, json, &r);
    if (expires)
        support_json_str(&r, "expires", expires, cap);
    support_resp_free(&r);
    return st;
}

static long post_octets(struct support_server *s, const char *query)
{
    char path[256];
    snprintf(path, sizeof(path), "/v1/buffers%s", query);
    struct support_call rq = {.method = "POST", .path = path, .ctype = "application/octet-stream",
                              .body = "0123456789abcdef", .len = 16};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    support_resp_free(&r);
    return r.status;
}

static void test_ttl_bounds(void **state)
{
    struct support_server *s = *state;
    char exp[64];
    assert_int_equal(post_json(s, "/v1/buffers", "{\"size\":16,\"ttl_s\":1139628243717}", NULL, 0),
                     422);
    assert_int_equal(
        post_json(s, "/v1/buffers", "{\"size\":16,\"ttl_s\":9223372036854775807}", NULL, 0), 422);
    assert_int_equal(post_json(s, "/v1/buffers", "{\"size\":16,\"ttl_s\":315360000}", exp,
                               sizeof(exp)), 201);
    /* RFC 3339: a four-digit year. */
    assert_int_equal(strlen(exp), 20);
    assert_int_equal(post_json(s, "/v1/buffers", "{\"size\":16,\"ttl_s\":315360001}", NULL, 0),
                     422);
    assert_int_equal(post_octets(s, "?ttl_s=1139628243717"), 422);
    assert_int_equal(post_octets(s, "?ttl_s=99999999999999999999999"), 400);
    assert_int_equal(post_octets(s, "?ttl_s=3600"), 201);
}

/* Regression: a buffer created from a body with ?ttl_s=2 whose body
 * took longer than that was answered 201 with an `expires` in the past, and
 * was gone at once. The clock now starts when the buffer is published, so its
 * expiry is no earlier than the body's last byte plus the TTL. */
static void test_ttl_starts_at_publish(void **state)
{
    struct support_server *s = *state;
    int fd = support_raw_connect(s->port);
    const char head[] = "POST /v1/buffers?ttl_s=2 HTTP/1.1\r\nHost: x\r\nContent-Type: "
                        "application/octet-stream\r\nContent-Length: 16\r\n"
                        "Connection: close\r\n\r\n01234567";
    assert_int_equal(support_raw_send(fd, head, sizeof(head) - 1), 0);
    support_sleep_ms(2600); /* past the TTL, the body half sent */
    time_t sent = time(NULL);
    assert_int_equal(support_raw_send(fd, "89abcdef", 8), 0);
    char buf[4096];
    int closed;
    support_raw_recv(fd, buf, sizeof(buf), 5000, &closed);
    close(fd);
    time_t now = sent + 2;
    assert_int_equal(support_raw_status_of(buf), 201);
    const char *e = strstr(buf, "\"expires\":\"");
    assert_non_null(e);
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    assert_non_null(strptime(e + 11, "%Y-%m-%dT%H:%M:%SZ", &tm));
    if (timegm(&tm) < now)
        fail_msg("201 with an expiry %lld s before the last byte + TTL: %.300s",
                 (long long)(now - timegm(&tm)),
                 buf);
    const char *idp = strstr(buf, "\"id\":\"");
    assert_non_null(idp);
    char path[128];
    const char *idend = strchr(idp + 6, '"');
    assert_non_null(idend);
    snprintf(path, sizeof(path), "/v1/buffers/%.*s", (int)(idend - (idp + 6)), idp + 6);
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", path, NULL, NULL, &r), 200); /* still there */
    support_resp_free(&r);
    support_json(s, "DELETE", path, NULL, NULL, &r);
    support_resp_free(&r);
}

/* ST201: a label over the limit on a size over --max-buffer-size was a 413;
 * a malformed request is a 400 or 422 (the status rule: a label over the
 * schema's maxLength is 400, an alignment that is no power of two 422),
 * whatever size it asks for. */
static void test_malformed_before_too_large(void **state)
{
    struct support_server *s = *state;
    char label[GHD_LABEL_MAX + 2], body[GHD_LABEL_MAX + 128];
    memset(label, '*', sizeof(label) - 1);
    label[sizeof(label) - 1] = '\0';
    snprintf(body, sizeof(body), "{\"size\":464347689573421,\"label\":\"%s\"}", label);
    assert_int_equal(post_json(s, "/v1/buffers", body, NULL, 0), 400);
    assert_int_equal(post_json(s, "/v1/buffers", "{\"size\":16,\"alignment\":31915}", NULL, 0),
                     422);
    assert_int_equal(
        post_json(s, "/v1/buffers", "{\"size\":464347689573421,\"alignment\":31915}", NULL, 0),
        422);
    assert_int_equal(post_json(s, "/v1/buffers", "{\"size\":464347689573421}", NULL, 0), 413);
}

/* Network error: a PUT to an id of Devanagari letters answered nothing and
 * closed the connection: the 404's detail quotes the id cut at 64 bytes,
 * inside a 3-byte letter, and invalid UTF-8 made the problem body fail to
 * build. Now such bytes become '?'. */
static void test_problem_detail_cut_inside_a_letter(void **state)
{
    struct support_server *s = *state;
    char path[512] = "/v1/buffers/";
    for (int i = 0; i < 30; i++) /* U+092A, 3 bytes each: byte 64 falls inside one */
        strcat(path, "%E0%A4%AA");
    struct support_call rq = {.method = "PUT", .path = path, .ctype = "application/octet-stream",
                              .body = "png", .len = 3};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    assert_int_equal(r.status, 404);
    char type[256];
    support_json_str(&r, "type", type, sizeof(type));
    assert_string_equal(type, "/problems/not-found");
    support_resp_free(&r);
}

static void test_octet_query_must_be_numbers(void **state)
{
    struct support_server *s = *state;
    const char *bad[] = {"?ttl_s=false", "?ttl_s=-1", "?ttl_s=", "?ttl_s=1x", "?alignment=abc",
                         "?alignment=-256", "?alignment=%2B256"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        long st = post_octets(s, bad[i]);
        if (st != 400)
            fail_msg("POST /v1/buffers%s: expected 400, got %ld", bad[i], st);
    }
    assert_int_equal(post_octets(s, "?alignment=3000"), 422); /* not a power of two */
    assert_int_equal(post_octets(s, "?alignment=4096&label=ok"), 201);
}

static void test_json_form_refuses_query(void **state)
{
    struct support_server *s = *state;
    assert_int_equal(post_json(s, "/v1/buffers?label=lost", "{\"size\":16}", NULL, 0), 400);
    assert_int_equal(post_json(s, "/v1/buffers?ttl_s=false", "{\"size\":16}", NULL, 0), 400);
    assert_int_equal(post_json(s, "/v1/buffers?alignment=256", "{\"size\":16}", NULL, 0), 400);
}

static void test_integral_reals(void **state)
{
    struct support_server *s = *state;
    assert_int_equal(post_json(s, "/v1/buffers", "{\"size\":4096.0}", NULL, 0), 201);
    assert_int_equal(post_json(s, "/v1/buffers", "{\"size\":4096.0,\"alignment\":512.0}", NULL, 0),
                     201);
    const char *bad[] = {"{\"size\":4096.5}", "{\"size\":-1.0}", "{\"size\":1e300}",
                         "{\"size\":-0.5}", "{\"size\":\"4096\"}", "{\"size\":true}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        long st = post_json(s, "/v1/buffers", bad[i], NULL, 0);
        if (st != 400)
            fail_msg("%s: expected 400, got %ld", bad[i], st);
    }
}

static void test_put_range_and_offset(void **state)
{
    struct support_server *s = *state;
    char id[64], path[160];
    assert_int_equal(support_buffer_try_create(s, NULL, 64, id, sizeof(id)), 201);
    /* Both ways of placing the body: refused, even with a malformed offset
     * that Content-Range used to hide (416 instead of 400). */
    const char *queries[] = {"?offset=0", "?offset=-1838003047025984694254676006141952"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/v1/buffers/%s%s", id, queries[i]);
        struct support_call rq = {.method = "PUT", .path = path, .ctype = "application/octet-stream",
                                  .body = "0123456789abcdef", .len = 16,
                                  .extra_header = "Content-Range: bytes 0-15/64"};
        struct support_resp r;
        support_do_call(s, &rq, &r);
        assert_int_equal(r.status, 400);
        support_resp_free(&r);
    }
    snprintf(path, sizeof(path), "/v1/buffers/%s?offset=-1", id);
    struct support_call rq = {.method = "PUT", .path = path, .ctype = "application/octet-stream",
                              .body = "0123456789abcdef", .len = 16};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    assert_int_equal(r.status, 400);
    support_resp_free(&r);
    /* Regression: a total of 2^64-1 was the parser's sentinel for "*"
     * and was accepted; it is a total like 2^64-2, which differs from 64. */
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    const char *totals[] = {"18446744073709551615", "18446744073709551614"};
    for (int i = 0; i < 2; i++) {
        char cr[96];
        snprintf(cr, sizeof(cr), "Content-Range: bytes 0-15/%s", totals[i]);
        struct support_call big = {.method = "PUT", .path = path, .ctype = "application/octet-stream",
                                   .body = "0123456789abcdef", .len = 16, .extra_header = cr};
        support_do_call(s, &big, &r);
        assert_int_equal(r.status, 416);
        support_resp_free(&r);
    }
    struct support_call star = {.method = "PUT", .path = path, .ctype = "application/octet-stream",
                                .body = "0123456789abcdef", .len = 16,
                                .extra_header = "Content-Range: bytes 0-15/*"};
    support_do_call(s, &star, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    assert_int_equal(support_json(s, "DELETE", path, NULL, NULL, &r), 204);
    support_resp_free(&r);
}

static void test_label_must_be_utf8(void **state)
{
    struct support_server *s = *state;
    size_t base = support_pool_in_use(s);
    assert_int_equal(post_octets(s, "?label=x%ff%ff%ffy"), 422);
    assert_int_equal(post_octets(s, "?label=%c3%28"), 422);      /* a broken sequence */
    assert_int_equal(post_octets(s, "?label=%ed%a0%80"), 422);   /* a UTF-16 surrogate */
    assert_int_equal(post_octets(s, "?label=gr%c3%bc%c3%9fe"), 201); /* real UTF-8 */
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", "/v1/buffers", NULL, NULL, &r), 200);
    assert_non_null(strstr(r.body, "grüße"));
    support_resp_free(&r);
    assert_true(support_pool_in_use(s) > base); /* only the good one was made */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ttl_bounds),
        cmocka_unit_test(test_ttl_starts_at_publish),
        cmocka_unit_test(test_malformed_before_too_large),
        cmocka_unit_test(test_problem_detail_cut_inside_a_letter),
        cmocka_unit_test(test_octet_query_must_be_numbers),
        cmocka_unit_test(test_json_form_refuses_query),
        cmocka_unit_test(test_integral_reals),
        cmocka_unit_test(test_put_range_and_offset),
        cmocka_unit_test(test_label_must_be_utf8),
    };
    return cmocka_run_group_tests_name("contract_regressions", tests, setup, teardown);
}
