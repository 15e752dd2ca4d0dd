/* Header framing (request smuggling, lenient headers and short bodies; the Host and
 * Authorization rules): every request whose framing is not exactly one
 * reading of RFC 9112 is refused with ONE well-framed problem+json response
 * and a closed connection (or a clean close), and nothing after its head is
 * ever run as a request. Raw sockets on loopback, since no HTTP client sends
 * these heads. After each: the server is at rest and the victim buffer is
 * still there. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"

/* A --docs-dir with the two files /docs needs, so that a file name cut
 * short by a NUL would be served. */
static char docs_dir[] = "/tmp/ghd-framing-docs-XXXXXX";

static void docs_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", docs_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.connection_timeout_s = 5;
    cfg.header_timeout_s = 5;
    assert_non_null(mkdtemp(docs_dir));
    docs_file("swagger-ui-bundle.js", "/* bundle */\n");
    docs_file("swagger-ui.css", "/* css */\n");
    snprintf(cfg.docs_dir, sizeof(cfg.docs_dir), "%s", docs_dir);
    return support_setup_with(state, &cfg);
}

static int teardown(void **state)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/swagger-ui-bundle.js", docs_dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/swagger-ui.css", docs_dir);
    unlink(path);
    rmdir(docs_dir);
    return support_teardown(state);
}

/* Sends `msg` on a fresh connection; reads what comes back for up to
 * timeout_ms or until the server closes. */
/* Exactly one response (nothing after the body its Content-Length frames),
 * of status `want`, problem+json, and then the close. */
static void expect_one_problem(const char *what, const char *buf, int closed, int want)
{
    int st = support_raw_status_of(buf);
    if (st != want || !closed)
        fail_msg("%s: want one %d and a close; got (closed %d):\n%.600s", what, want, closed, buf);
    const char *end = strstr(buf, "\r\n\r\n");
    const char *ct = strcasestr(buf, "\r\nContent-Type: application/problem+json");
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (!end || !ct || ct > end || !cl || cl > end)
        fail_msg("%s: not a framed problem+json:\n%.600s", what, buf);
    size_t body = strtoul(cl + 17, NULL, 10);
    if (strlen(end + 4) != body || end[4] != '{' || !strstr(end, "\"status\":"))
        fail_msg("%s: body of %zu bytes does not match its Content-Length %zu:\n%.600s", what,
                 strlen(end + 4), body, buf);
}

static void expect_buffer_alive(struct support_server *s, const char *id)
{
    char path[128];
    struct support_resp r;
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    assert_int_equal(support_json(s, "GET", path, NULL, NULL, &r), 200);
    support_resp_free(&r);
}

/* Item 1: a head that 0.9 parsed leniently (the Content-Length or
 * Transfer-Encoding vanished, or the head ended early) so that its body ran
 * as a second request: here a DELETE of a buffer. */
static void test_smuggling_refused(void **state)
{
    struct support_server *s = *state;
    char id[64];
    assert_int_equal(support_buffer_try_create(s, NULL, 64, id, sizeof(id)), 201);
    char smuggled[160];
    int sn = snprintf(smuggled, sizeof(smuggled), "DELETE /v1/buffers/%s HTTP/1.1\r\nHost: x\r\n\r\n",
                      id);
    const char *heads[] = {
        "Content-Length : %d\r\n",                     /* space before the colon */
        "Content-Length:\r\n %d\r\n",                  /* obs-fold */
        "Content-Length: %d\r\n folded\r\n",           /* a fold line after it */
        "Content-Length: %d\r\n\tfolded\r\n",
        "Transfer-Encoding : chunked\r\nContent-Length: %d\r\n", /* TE+CL guard bypass */
        "Content-Length\t: %d\r\n",
        "X: a\r\n: v\r\nContent-Length: %d\r\n",       /* empty header name */
        " Content-Length: %d\r\n",                     /* whitespace before a name */
    };
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        char msg[512], hdr[128];
        snprintf(hdr, sizeof(hdr), heads[i], sn);
        int n = snprintf(msg, sizeof(msg), "GET /healthz HTTP/1.1\r\nHost: x\r\n%s\r\n%s", hdr,
                         smuggled);
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
        expect_one_problem(heads[i], buf, closed, 400);
        expect_buffer_alive(s, id);
    }
    /* The empty name as the issue found it: what follows ran as a request. */
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "GET /healthz HTTP/1.1\r\nHost: x\r\n: v\r\n%s", smuggled);
    char buf[8192];
    int closed;
    support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
    expect_one_problem("empty header name", buf, closed, 400);
    expect_buffer_alive(s, id);
    if (!support_wait_rest(s, support_pool_in_use(s), 5000))
        fail_msg("not at rest");
}

/* Item 7: a Content-Length that is no plain number had its status line and
 * headers sent twice by 0.9 (the first head declared a body that was the
 * second head), and libmicrohttpd's own errors were HTML. */
static void test_bad_content_length_one_problem(void **state)
{
    struct support_server *s = *state;
    const char *values[] = {"-1", "+5", "5, 5", "abc", "5 5", "0x5", ""};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char msg[256];
        int n = snprintf(msg, sizeof(msg),
                         "POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         "Content-Length: %s\r\n\r\nhello",
                         values[i]);
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
        char what[64];
        snprintf(what, sizeof(what), "Content-Length '%s'", values[i]);
        expect_one_problem(what, buf, closed, 400);
    }
}

/* Item 5: a coding other than exactly "chunked" hung with no reply and held
 * the buffer's writer flag. Now refused at once (400: chunked missing, not
 * the final coding, or twice; 501: a coding we do not implement before the
 * final chunked), and the buffer takes the next PUT. */
static void test_transfer_codings(void **state)
{
    struct support_server *s = *state;
    char id[64];
    assert_int_equal(support_buffer_try_create(s, NULL, 16, id, sizeof(id)), 201);
    const char *codings[] = {"chunked, identity", "gzip, chunked", "identity", "gzip",
                             "chunked, chunked", "chunkedx", "deflate"};
    for (size_t i = 0; i < sizeof(codings) / sizeof(codings[0]); i++) {
        char msg[512];
        int n = snprintf(msg, sizeof(msg),
                         "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                         "application/octet-stream\r\nTransfer-Encoding: %s\r\n\r\n"
                         "5\r\nhello\r\n0\r\n\r\n",
                         id, codings[i]);
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
        /* 501 only where chunked is final (once) after a coding we lack. */
        int want = strcmp(codings[i], "gzip, chunked") == 0 ? 501 : 400;
        expect_one_problem(codings[i], buf, closed, want);
        /* the writer flag is free */
        assert_int_equal(support_buffer_try_put(s, NULL, id, "0123456789abcdef", 16), 200);
    }
    /* Plain chunked still works. */
    char msg[512];
    int n = snprintf(msg, sizeof(msg),
                     "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     "application/octet-stream\r\nTransfer-Encoding: Chunked\r\n\r\n"
                     "5\r\nhello\r\n0\r\n\r\n",
                     id);
    char buf[8192];
    int closed;
    support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 1000, &closed);
    assert_int_equal(support_raw_status_of(buf), 200);
}

/* Regression: a Content-Length shorter than what the client sends (a
 * multi-byte memoryview given to requests) left the rest to be parsed as the
 * next request on the keep-alive connection, answered with libmicrohttpd's
 * HTML page. */
static void test_short_content_length(void **state)
{
    struct support_server *s = *state;
    char id[64];
    assert_int_equal(support_buffer_try_create(s, NULL, 4, id, sizeof(id)), 201);
    /* float32 [1, 2, 3, 4]: Content-Length 4 (the elements), 16 bytes sent,
     * then the client's next request on the same connection. */
    static const char floats[16] = {0, 0, (char)0x80, 0x3f, 0, 0, 0, 0x40,
                                    0, 0, 0x40,       0x40, 0, 0, (char)0x80, 0x40};
    char msg[512];
    int n = snprintf(msg, sizeof(msg),
                     "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     "application/octet-stream\r\nContent-Length: 4\r\n\r\n",
                     id);
    memcpy(msg + n, floats, sizeof(floats));
    n += (int)sizeof(floats);
    n += snprintf(msg + n, sizeof(msg) - (size_t)n, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    char buf[8192];
    int closed;
    support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
    if (support_raw_status_of(buf) != 200)
        fail_msg("the upload itself: %.400s", buf);
    /* The rest is answered with a problem, or the connection simply closes. */
    const char *second = strstr(buf + 1, "HTTP/1.");
    if (second) {
        expect_one_problem("the rest after a short Content-Length", second, closed, 400);
    } else if (!closed) {
        fail_msg("neither a problem nor a close after the short body: %.400s", buf);
    }
    if (strstr(buf, "<html") || strstr(buf, "text/html"))
        fail_msg("HTML in an answer: %.600s", buf);
}

/* Item 8 and libmicrohttpd's other refusals: too many query parameters (0.9
 * closed without a response), a head too large, an HTTP version we do not
 * speak. One problem+json each. */
static void test_library_refusals_are_problems(void **state)
{
    struct support_server *s = *state;
    size_t cap = 64 << 10;
    char *msg = malloc(cap);
    size_t n = (size_t)snprintf(msg, cap, "GET /v1/buffers?");
    for (int i = 0; i < 1500; i++)
        n += (size_t)snprintf(msg + n, cap - n, "q%d=%d&", i, i);
    n += (size_t)snprintf(msg + n, cap - n, " HTTP/1.1\r\nHost: x\r\n\r\n");
    char buf[16384];
    int closed;
    support_raw_exchange(s->port, msg, n, buf, sizeof(buf), 3000, &closed);
    int st = support_raw_status_of(buf);
    if (st != 431 && st != 414)
        fail_msg("1500 query parameters: got %d: %.300s", st, buf);
    expect_one_problem("1500 query parameters", buf, closed, st);

    n = (size_t)snprintf(msg, cap, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(msg + n, cap - n, "X-H%d: %d\r\n", i, i);
    n += (size_t)snprintf(msg + n, cap - n, "\r\n");
    support_raw_exchange(s->port, msg, n, buf, sizeof(buf), 3000, &closed);
    expect_one_problem("2000 headers", buf, closed, 431);

    n = (size_t)snprintf(msg, cap, "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n");
    support_raw_exchange(s->port, msg, n, buf, sizeof(buf), 2000, &closed);
    expect_one_problem("HTTP/2.0", buf, closed, 505);
    n = (size_t)snprintf(msg, cap, "GET /healthz HTTP/1.1\nHost: x\n\n");
    support_raw_exchange(s->port, msg, n, buf, sizeof(buf), 2000, &closed);
    expect_one_problem("bare LF", buf, closed, 400);
    free(msg);
}

/* Smaller: a missing or doubled Host header on HTTP/1.1 (RFC 9112 section
 * 3.2), two Authorization, Range or Content-Range headers (the first won),
 * a NUL in a query value. */
static void test_host_and_authorization_once(void **state)
{
    struct support_server *s = *state;
    const char *msgs[] = {
        "GET /healthz HTTP/1.1\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET /v1/buffers HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n"
        "Authorization: Bearer y\r\n\r\n",
        /* A NUL in a query value cut it short silently. */
        "GET /v1/buffers?limit=1%00000 HTTP/1.1\r\nHost: a\r\n\r\n",
        /* Two Range lines (the first won; neither is a list) and two
         * Content-Range lines (which bytes would the PUT write?). */
        "GET /v1/buffers/b0 HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\n"
        "Range: bytes=4-5\r\n\r\n",
        "PUT /v1/buffers/b0 HTTP/1.1\r\nHost: a\r\nContent-Range: bytes 0-1/*\r\n"
        "Content-Range: bytes 4-5/*\r\nContent-Length: 2\r\n\r\nab",
    };
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, msgs[i], strlen(msgs[i]), buf, sizeof(buf), 2000, &closed);
        expect_one_problem(msgs[i], buf, closed, 400);
    }
    /* A JSON body with a key twice (the last won). */
    const char dup[] = "{\"size\": 16, \"size\": 1048576}";
    char msg[256];
    int n = snprintf(msg, sizeof(msg),
                     "POST /v1/buffers HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     sizeof(dup) - 1, dup);
    char dbuf[8192];
    int dclosed;
    support_raw_exchange(s->port, msg, (size_t)n, dbuf, sizeof(dbuf), 2000, &dclosed);
    if (support_raw_status_of(dbuf) != 400 || !strstr(dbuf, "duplicate"))
        fail_msg("a duplicate JSON key: %.500s", dbuf);
    /* HTTP/1.0 needs no Host; one Host is fine. */
    const char *ok[] = {"GET /healthz HTTP/1.0\r\n\r\n",
                        "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, ok[i], strlen(ok[i]), buf, sizeof(buf), 2000, &closed);
        assert_int_equal(support_raw_status_of(buf), 200);
    }
}

/* A %00 in the request target decodes to a NUL, and every C string made of
 * the path then ends there: "/v1/buffers/ID%00/meta" was routed as
 * "/v1/buffers/ID" (a DELETE deleted the buffer, a GET of .../meta downloaded
 * it), "/healthz%00x" was /healthz, and a docs file name ending "%00.png"
 * served the file, past any proxy that filters by path or suffix. A NUL
 * anywhere in the decoded path or query, its names too, is a 400. */
static void test_nul_in_target_refused(void **state)
{
    struct support_server *s = *state;
    char id[64];
    assert_int_equal(support_buffer_try_create(s, NULL, 16, id, sizeof(id)), 201);
    const char *forms[] = {
        "DELETE /v1/buffers/%s%%00/meta HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /v1/buffers/%s%%00junk/meta HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /healthz%%00x HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /docs/swagger-ui-bundle.js%%00.png HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /v1/buffers?lim%%00it=1 HTTP/1.1\r\nHost: x\r\n\r\n", /* a query name */
        "GET /v1/buffers/%s?x=%%00 HTTP/1.1\r\nHost: x\r\n\r\n",    /* a query value */
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        char msg[256];
        int n = snprintf(msg, sizeof(msg), forms[i], id);
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
        expect_one_problem(msg, buf, closed, 400);
        if (!strstr(buf, "NUL"))
            fail_msg("%s: the detail does not name the NUL: %.600s", msg, buf);
        expect_buffer_alive(s, id);
    }
    /* An escaped percent sign is no NUL; the file itself is still served. */
    const char *ok[] = {"GET /healthz?x=%2500 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        "GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n"
                        "Connection: close\r\n\r\n"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, ok[i], strlen(ok[i]), buf, sizeof(buf), 2000, &closed);
        if (support_raw_status_of(buf) != 200)
            fail_msg("%s: %.400s", ok[i], buf);
    }
}

/* An HTTP/1.x version above 1.1 was served as 1.1, and an expectation other
 * than 100-continue was ignored and the request carried out (RFC 9110
 * section 10.1.1 allows 417 for it, and a client that asked for something we
 * do not do should not see its request done). Now 505 and 417, each one
 * framed problem and a close, and the request is not run. */
static void test_version_and_expectation(void **state)
{
    struct support_server *s = *state;
    const char *versions[] = {"HTTP/1.2", "HTTP/1.9"};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        char msg[256];
        int n = snprintf(msg, sizeof(msg), "GET /healthz %s\r\nHost: x\r\n\r\n", versions[i]);
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
        expect_one_problem(versions[i], buf, closed, 505);
    }
    char id[64];
    assert_int_equal(support_buffer_try_create(s, NULL, 16, id, sizeof(id)), 201);
    const char *expects[] = {"200-ok", "100-continue, 200-ok", "nothing"};
    for (size_t i = 0; i < sizeof(expects) / sizeof(expects[0]); i++) {
        char msg[512];
        int n = snprintf(msg, sizeof(msg),
                         "DELETE /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nExpect: %s\r\n\r\n",
                         id, expects[i]);
        char buf[8192];
        int closed;
        support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
        expect_one_problem(expects[i], buf, closed, 417);
        expect_buffer_alive(s, id);
        n = snprintf(msg, sizeof(msg),
                     "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nExpect: %s\r\n"
                     "Content-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n"
                     "0123456789abcdef",
                     id, expects[i]);
        support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
        expect_one_problem(expects[i], buf, closed, 417);
    }
    /* 100-continue, in any case, is what it always was. */
    char msg[512];
    int n = snprintf(msg, sizeof(msg),
                     "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n"
                     "Content-Type: application/octet-stream\r\nContent-Length: 16\r\n"
                     "Connection: close\r\n\r\n0123456789abcdef",
                     id);
    char buf[8192];
    int closed;
    support_raw_exchange(s->port, msg, (size_t)n, buf, sizeof(buf), 2000, &closed);
    if (!strstr(buf, "HTTP/1.1 200"))
        fail_msg("Expect: 100-continue: %.400s", buf);
    if (!support_wait_rest(s, support_pool_in_use(s), 5000))
        fail_msg("not at rest");
}

/* Item 4: a chunked body past its limit (the upload's length, or
 * --max-json-body) was read to its end before the 413: a client that never
 * ends it held a staging chunk and the buffer's writer flag for ever. Now the
 * 413 comes while the client is still sending, and the buffer is free. */
static void test_chunked_over_limit_refused_at_once(void **state)
{
    struct support_server *s = *state;
    char id[64];
    assert_int_equal(support_buffer_try_create(s, NULL, 16, id, sizeof(id)), 201);
    size_t base = support_pool_in_use(s);
    for (int json = 0; json < 2; json++) {
        int fd = support_raw_connect(s->port);
        char head[256];
        int n = json ? snprintf(head, sizeof(head),
                                "POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                "application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                     : snprintf(head, sizeof(head),
                                "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                "application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
                                id);
        assert_int_equal(support_raw_send(fd, head, (size_t)n), 0);
        /* 4 KiB chunks, past 16 bytes and past --max-json-body, no last chunk. */
        static char chunk[4096 + 16];
        memcpy(chunk, "1000\r\n", 6);
        memset(chunk + 6, json ? ' ' : 'x', 4096);
        memcpy(chunk + 6 + 4096, "\r\n", 2);
        size_t limit = s->svc.cfg.max_json_body;
        size_t sent = 0;
        while (sent < (json ? limit + 8192 : 8192) && support_raw_send(fd, chunk, 4096 + 8) == 0)
            sent += 4096;
        char buf[8192];
        int closed;
        support_raw_recv(fd, buf, sizeof(buf), 3000, &closed);
        if (support_raw_status_of(buf) != 413 || !strstr(buf, "application/problem+json"))
            fail_msg("%s: no 413 while the body still comes (sent %zu): %.400s",
                     json ? "JSON" : "upload", sent, buf);
        if (!json) { /* the writer flag is free while this client still holds its socket */
            assert_int_equal(support_buffer_try_put(s, NULL, id, "0123456789abcdef", 16), 200);
        }
        close(fd);
    }
    if (!support_wait_rest(s, base, 5000))
        fail_msg("not at rest");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smuggling_refused),
        cmocka_unit_test(test_bad_content_length_one_problem),
        cmocka_unit_test(test_transfer_codings),
        cmocka_unit_test(test_short_content_length),
        cmocka_unit_test(test_library_refusals_are_problems),
        cmocka_unit_test(test_host_and_authorization_once),
        cmocka_unit_test(test_chunked_over_limit_refused_at_once),
        cmocka_unit_test(test_nul_in_target_refused),
        cmocka_unit_test(test_version_and_expectation),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
