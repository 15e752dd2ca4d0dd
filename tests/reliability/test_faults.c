/* Fault injection: the pool and the staging ring failing on purpose
 * (ghd_pool_fail_nth, ghd_staging_fail_nth, a ring of two chunks), clients
 * that disconnect at every phase of an upload and a download, malformed
 * chunked encoding, bodies that lie about their length, and a thousand idle
 * connections. After each: the server still serves, and pool bytes in use,
 * staging chunks busy and requests in flight are back at rest. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"
#include "core/runs/run_queue.h"

#define CHUNK (64 << 10)

struct fixture {
    struct support_server s;
    unsigned served;   /* requests checked after a fault */
    unsigned faults;   /* faults injected */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.staging_chunks = 4;
    /* Every client here is 127.0.0.1, and these tests exhaust the whole ring
     * from it: the per-address cap is test_slowloris's. */
    cfg.staging_address_share = 0;
    cfg.connection_timeout_s = 5;
    cfg.header_timeout_s = 5;
    cfg.min_transfer_rate = 0; /* here only the faults below end connections */
    cfg.connection_limit = 1200;
    support_start_config(&f->s, &cfg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    print_message("faults injected: %u, recoveries checked: %u\n", f->faults, f->served);
    support_stop(&f->s);
    free(f);
    return 0;
}

/* The server is at rest (pool back to `baseline`) and answers. */
static void recovered(struct fixture *f, size_t baseline)
{
    if (!support_wait_rest(&f->s, baseline, 5000))
        fail_msg("the server did not return to rest");
    struct support_resp r;
    assert_int_equal(support_json(&f->s, "GET", "/healthz", NULL, NULL, &r), 200);
    support_resp_free(&r);
    f->served++;
}

static void delete_id(struct support_server *s, const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%.64s", id);
    struct support_resp r;
    assert_int_equal(support_json(s, "DELETE", path, NULL, NULL, &r), 204);
    support_resp_free(&r);
}

/* ---- the pool ---------------------------------------------------------- */

static void test_pool_fail_nth(void **state)
{
    struct fixture *f = *state;
    struct ghd_pool *pool = &f->s.svc.runtimes[0].pool;
    size_t base = support_pool_in_use(&f->s);
    for (long nth = 1; nth <= 3; nth++) {
        ghd_pool_fail_nth(pool, nth);
        f->faults++;
        long codes[3];
        char ids[3][64];
        for (int i = 0; i < 3; i++)
            codes[i] = support_buffer_try_create(&f->s, NULL, 4096, ids[i], sizeof(ids[i]));
        for (int i = 0; i < 3; i++) {
            assert_int_equal(codes[i], i + 1 == nth ? 507 : 201);
            if (codes[i] == 201)
                delete_id(&f->s, ids[i]);
        }
        recovered(f, base);
    }
    /* The octet-stream form fails before its body. */
    ghd_pool_fail_nth(pool, 1);
    f->faults++;
    static char body[100 << 10];
    struct support_call rq = {.method = "POST", .path = "/v1/buffers",
                              .ctype = "application/octet-stream", .body = body, .len = sizeof(body)};
    struct support_resp r;
    support_do_call(&f->s, &rq, &r);
    assert_int_equal(r.status, 507);
    assert_non_null(strstr(r.body, "insufficient-storage"));
    support_resp_free(&r);
    recovered(f, base);
}

static void test_pool_limit_reached(void **state)
{
    struct fixture *f = *state;
    size_t base = support_pool_in_use(&f->s);
    /* Fill the 64 MiB pool with 4 MiB buffers until it refuses. */
    char ids[32][64];
    int n = 0;
    long st = 0;
    while (n < 32 && (st = support_buffer_try_create(&f->s, NULL, 4 << 20, ids[n], sizeof(ids[n]))) == 201)
        n++;
    assert_int_equal(st, 507);
    assert_true(n >= 8);
    f->faults++;
    /* Runs still validate and fail cleanly while the pool is full. */
    struct support_resp r;
    char body[256];
    snprintf(body, sizeof(body),
             "{\"kernel\":\"sort\",\"args\":{\"keys\":\"%s\",\"dtype\":\"u32\",\"n\":1048576}}",
             ids[0]);
    long rs = support_json(&f->s, "POST", "/v1/runs", NULL, body, &r);
    assert_true(rs != 0 && rs != 500);
    support_resp_free(&r);
    for (int i = 0; i < n; i++)
        delete_id(&f->s, ids[i]);
    recovered(f, base);
    assert_int_equal(support_buffer_try_create(&f->s, NULL, 4 << 20, ids[0], sizeof(ids[0])), 201);
    delete_id(&f->s, ids[0]);
    recovered(f, base);
}

/* ---- the staging ring -------------------------------------------------- */

static void test_staging_fail_nth(void **state)
{
    struct fixture *f = *state;
    struct ghd_staging *st = &f->s.svc.runtimes[0].staging;
    char id[64];
    assert_int_equal(support_buffer_try_create(&f->s, NULL, 256 << 10, id, sizeof(id)), 201);
    size_t base = support_pool_in_use(&f->s);
    static char data[256 << 10];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 7);
    /* nth = 1: a transfer's one needed chunk: 503. nth = 2: the optional
     * second chunk (for overlap): the transfer goes on with one, intact. */
    for (long nth = 1; nth <= 2; nth++) {
        ghd_staging_fail_nth(st, nth);
        f->faults++;
        char path[128];
        snprintf(path, sizeof(path), "/v1/buffers/%s", id);
        struct support_call rq = {.method = "PUT", .path = path, .ctype = "application/octet-stream",
                                  .body = data, .len = sizeof(data)};
        struct support_resp r;
        support_do_call(&f->s, &rq, &r);
        assert_int_equal(r.status, nth == 1 ? 503 : 200);
        if (nth == 1) {
            char v[32];
            support_header(&r, "Retry-After", v, sizeof(v));
            assert_string_equal(v, "1");
        }
        support_resp_free(&r);
        recovered(f, base);

        ghd_staging_fail_nth(st, nth);
        f->faults++;
        assert_int_equal(support_json(&f->s, "GET", path, NULL, NULL, &r), nth == 1 ? 503 : 200);
        if (nth == 2) {
            assert_int_equal(r.body_len, sizeof(data));
            assert_memory_equal(r.body, data, sizeof(data));
        }
        support_resp_free(&r);
        recovered(f, base);
        ghd_staging_fail_nth(st, 0);
    }
    /* And the octet-stream create: the new buffer is dropped again. */
    ghd_staging_fail_nth(st, 1);
    f->faults++;
    struct support_call rq = {.method = "POST", .path = "/v1/buffers",
                              .ctype = "application/octet-stream", .body = data, .len = sizeof(data)};
    struct support_resp r;
    support_do_call(&f->s, &rq, &r);
    assert_int_equal(r.status, 503);
    support_resp_free(&r);
    recovered(f, base);
    assert_int_equal(support_buffer_try_put(&f->s, NULL, id, data, sizeof(data)), 200);
    delete_id(&f->s, id);
    recovered(f, 0);
}

/* Stalled uploads hold all four chunks; the next waits --staging-timeout-ms
 * and gets 503; when they finish, it goes through. */
static void test_staging_ring_exhausted(void **state)
{
    struct fixture *f = *state;
    enum { MAXS = 4 };
    char ids[MAXS + 1][64];
    for (int i = 0; i <= MAXS; i++)
        assert_int_equal(support_buffer_try_create(&f->s, NULL, 1 << 20, ids[i], sizeof(ids[i])), 201);
    size_t base = support_pool_in_use(&f->s);
    int fds[MAXS], stalled = 0;
    while (stalled < MAXS && support_staging_busy(&f->s) < 4) {
        fds[stalled] = support_raw_begin_put(f->s.port, ids[stalled], 1 << 20, 3 * CHUNK);
        stalled++;
        support_sleep_ms(150);
    }
    assert_int_equal(support_staging_busy(&f->s), 4);
    f->faults++;
    static char data[1 << 20];
    long t0 = support_now_ms();
    assert_int_equal(support_buffer_try_put(&f->s, NULL, ids[MAXS], data, sizeof(data)), 503);
    assert_true(support_now_ms() - t0 >= 400); /* it waited --staging-timeout-ms */
    /* Finish the stalled uploads. */
    size_t left = (1 << 20) - 3 * CHUNK;
    char *rest = calloc(1, left);
    for (int i = 0; i < stalled; i++)
        assert_int_equal(support_raw_send(fds[i], rest, left), 0);
    free(rest);
    for (int i = 0; i < stalled; i++) {
        char buf[2048];
        int closed;
        support_raw_recv(fds[i], buf, sizeof(buf), 2000, &closed);
        assert_int_equal(support_raw_status_of(buf), 200);
        close(fds[i]);
    }
    assert_int_equal(support_buffer_try_put(&f->s, NULL, ids[MAXS], data, sizeof(data)), 200);
    recovered(f, base);
    for (int i = 0; i <= MAXS; i++)
        delete_id(&f->s, ids[i]);
    recovered(f, 0);
}

/* ---- disconnects ------------------------------------------------------- */

static void abort_conn(int fd, int reset)
{
    if (reset) { /* RST instead of FIN */
        struct linger l = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    close(fd);
}

/* Deletes every buffer but `keep`. A POST whose whole body arrived creates
 * its buffer even when the client leaves before reading the 201; the id is
 * then only found by listing (or the buffer expires with its ttl_s). */
static void drop_others(struct support_server *s, const char *keep)
{
    support_sleep_ms(100);
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", "/v1/buffers", NULL, NULL, &r), 200);
    for (char *p = r.body; (p = strstr(p, "\"id\":\"")) != NULL;) {
        char id[GHD_BUFFER_ID_LEN + 1];
        p += 6;
        memcpy(id, p, GHD_BUFFER_ID_LEN);
        id[GHD_BUFFER_ID_LEN] = '\0';
        if (strcmp(id, keep) != 0)
            delete_id(s, id);
    }
    support_resp_free(&r);
}

static void test_upload_disconnects(void **state)
{
    struct fixture *f = *state;
    char id[64];
    size_t size = 512 << 10;
    assert_int_equal(support_buffer_try_create(&f->s, NULL, size, id, sizeof(id)), 201);
    size_t base = support_pool_in_use(&f->s);
    /* Where the client goes: in the request line, in the headers, right
     * after them, one byte in, at a chunk edge and past it, half way, one
     * byte short, and with the whole body but before the reply. */
    const long cuts[] = {-3, -2, -1, 0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 256 << 10,
                         (long)size - 1, (long)size};
    static char body[512 << 10];
    for (int create = 0; create < 2; create++) {
        for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
            for (int reset = 0; reset < 2; reset++) {
                int fd = support_raw_connect(f->s.port);
                char head[512];
                int n = create ? snprintf(head, sizeof(head),
                                          "POST /v1/buffers HTTP/1.1\r\nHost: x\r\n"
                                          "Content-Type: application/octet-stream\r\n"
                                          "Content-Length: %zu\r\n\r\n",
                                          size)
                               : snprintf(head, sizeof(head),
                                          "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\n"
                                          "Content-Type: application/octet-stream\r\n"
                                          "Content-Length: %zu\r\n\r\n",
                                          id, size);
                size_t send_head = (size_t)n;
                if (cuts[i] == -3)
                    send_head = 10; /* inside the request line */
                else if (cuts[i] == -2)
                    send_head = (size_t)n - 10; /* inside the headers */
                support_raw_send(fd, head, send_head);
                if (cuts[i] > 0)
                    support_raw_send(fd, body, (size_t)cuts[i]);
                support_sleep_ms(30);
                abort_conn(fd, reset);
                f->faults++;
                if (create && cuts[i] == (long)size)
                    drop_others(&f->s, id); /* complete: the buffer exists, its 201 lost */
                recovered(f, base);
            }
        }
    }
    /* The buffer still takes a whole upload and gives it back. */
    for (size_t i = 0; i < size; i++)
        body[i] = (char)(i * 3);
    assert_int_equal(support_buffer_try_put(&f->s, NULL, id, body, size), 200);
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_resp r;
    assert_int_equal(support_json(&f->s, "GET", path, NULL, NULL, &r), 200);
    assert_int_equal(r.body_len, size);
    assert_memory_equal(r.body, body, size);
    support_resp_free(&r);
    delete_id(&f->s, id);
    recovered(f, 0);
}

static void test_download_disconnects(void **state)
{
    struct fixture *f = *state;
    char id[64];
    size_t size = 4 << 20;
    assert_int_equal(support_buffer_try_create(&f->s, NULL, size, id, sizeof(id)), 201);
    size_t base = support_pool_in_use(&f->s);
    const long reads[] = {-1, 0, 100, CHUNK, 3 * CHUNK + 7, 1 << 20};
    const char *ranges[] = {NULL, "Range: bytes=1000-\r\n", "Range: bytes=-70000\r\n"};
    for (size_t k = 0; k < 3; k++) {
        for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
            for (int reset = 0; reset < 2; reset++) {
                int fd = support_raw_connect(f->s.port);
                int rcv = 16 << 10; /* keep most of the body on the server's side */
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
                char req[256];
                int n = snprintf(req, sizeof(req), "GET /v1/buffers/%s HTTP/1.1\r\nHost: x\r\n%s\r\n",
                                 id, ranges[k] ? ranges[k] : "");
                if (reads[i] < 0)
                    n -= 2; /* the head is never finished */
                support_raw_send(fd, req, (size_t)n);
                long want = reads[i] > 0 ? reads[i] : 0;
                char *buf = malloc((size_t)want + 4096);
                long got = 0;
                int closed = 0;
                while (got < want && !closed) {
                    long r = support_raw_recv(fd, buf + got, (size_t)(want - got) + 1, 200, &closed);
                    if (r <= 0)
                        break;
                    got += r;
                }
                free(buf);
                abort_conn(fd, reset);
                f->faults++;
                recovered(f, base);
            }
        }
    }
    delete_id(&f->s, id);
    recovered(f, 0);
}

/* ---- malformed framing ------------------------------------------------- */

/* A chunked PUT of `chunks` (the body after the head) to buffer `id`: 200,
 * `written` bytes written. */
static void put_chunked_ok(unsigned port, const char *id, const char *chunks, unsigned written)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg),
                     "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     "application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n%s",
                     id, chunks);
    char buf[4096], want[32];
    int closed;
    support_raw_exchange(port, msg, (size_t)n, buf, sizeof(buf), 1000, &closed);
    assert_int_equal(support_raw_status_of(buf), 200);
    snprintf(want, sizeof(want), "\"bytes_written\":%u", written);
    assert_non_null(strstr(buf, want));
}

static void test_malformed_chunked(void **state)
{
    struct fixture *f = *state;
    char id[64];
    assert_int_equal(support_buffer_try_create(&f->s, NULL, 4096, id, sizeof(id)), 201);
    size_t base = support_pool_in_use(&f->s);
    const char *bodies[] = {
        "zz\r\nhello\r\n0\r\n\r\n",                /* not hex */
        "5\r\nhelloXX0\r\n\r\n",                    /* no CRLF after the data */
        "ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n", /* size overflow */
        "-5\r\nhello\r\n0\r\n\r\n",                 /* negative */
        "3\r\nhello\r\n0\r\n\r\n",                  /* more data than the size */
        "5\r\nhel",                                  /* truncated, then the client leaves */
        "\r\n\r\n",
        "1000\r\n",                                  /* promises 4096 bytes, sends none */
        "5\r\nhello\r\n0\r\nX-Trailer: a\r\n",       /* trailer never finished */
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        for (int create = 0; create < 2; create++) {
            int fd = support_raw_connect(f->s.port);
            char head[256];
            int n = create ? snprintf(head, sizeof(head),
                                      "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                      "application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
                                      id)
                           : snprintf(head, sizeof(head),
                                      "POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                      "application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
            support_raw_send(fd, head, (size_t)n);
            support_raw_send(fd, bodies[i], strlen(bodies[i]));
            char buf[4096];
            int closed;
            support_raw_recv(fd, buf, sizeof(buf), 300, &closed);
            int st = support_raw_status_of(buf);
            if (st && st < 400)
                fail_msg("chunked body %zu (%s): accepted with %d", i,
                         create ? "PUT" : "POST /v1/runs", st);
            close(fd);
            f->faults++;
            recovered(f, base);
        }
    }
    /* A chunk extension, even a sloppy one, is skipped to its CRLF (RFC 9112
     * lets a recipient ignore extensions); the framing stays exact.
     * libmicrohttpd 1.0.1 unpatched read the LF as data: every one was a 400. */
    const char *exts[] = {";ext=v", ";ext=\"quoted\"", ";ext=\"unterminated"};
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        char chunks[64];
        snprintf(chunks, sizeof(chunks), "5%s\r\nhello\r\n0\r\n\r\n", exts[i]);
        put_chunked_ok(f->s.port, id, chunks, 5);
    }
    /* A well-formed chunked upload still works. */
    put_chunked_ok(f->s.port, id, "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 11);
    delete_id(&f->s, id);
    recovered(f, 0);
}

static void test_lying_lengths(void **state)
{
    struct fixture *f = *state;
    char id[64], path[128];
    assert_int_equal(support_buffer_try_create(&f->s, NULL, 4096, id, sizeof(id)), 201);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    size_t base = support_pool_in_use(&f->s);
    char buf[8192];
    int closed;

    /* Says 1000, sends 500, and leaves. */
    int fd = support_raw_connect(f->s.port);
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
                     "Content-Length: 1000\r\n\r\n",
                     path);
    support_raw_send(fd, head, (size_t)n);
    char data[1200];
    memset(data, 'A', sizeof(data));
    support_raw_send(fd, data, 500);
    support_sleep_ms(50);
    close(fd);
    f->faults++;
    recovered(f, base);

    /* Says 1000, sends 500, and waits: the idle timeout (5 s here) ends it. */
    fd = support_raw_connect(f->s.port);
    support_raw_send(fd, head, (size_t)n);
    support_raw_send(fd, data, 500);
    assert_true(support_raw_wait_closed(fd, 10000));
    close(fd);
    f->faults++;
    recovered(f, base);

    /* Says 100, sends 150: the first 100 bytes are the body; the other 50
     * are read as the next request, which is malformed: the server closes. */
    fd = support_raw_connect(f->s.port);
    n = snprintf(head, sizeof(head),
                 "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
                 "Content-Length: 100\r\n\r\n",
                 path);
    support_raw_send(fd, head, (size_t)n);
    memset(data, 'B', 100);
    memset(data + 100, 'C', 46);
    memcpy(data + 146, "\r\n\r\n", 4);
    support_raw_send(fd, data, 150);
    support_raw_recv(fd, buf, sizeof(buf), 1000, &closed);
    assert_int_equal(support_raw_status_of(buf), 200);
    assert_non_null(strstr(buf, "\"bytes_written\":100"));
    char *second = strstr(buf + 1, "HTTP/1.1 ");
    if (second)
        assert_int_equal(support_raw_status_of(second), 400);
    assert_true(closed || support_raw_wait_closed(fd, 3000));
    close(fd);
    f->faults++;
    recovered(f, base);
    /* The same with a valid request after the 100 bytes: it is answered on
     * its own, so the framing is exact (no smuggling through the body). */
    fd = support_raw_connect(f->s.port);
    support_raw_send(fd, head, (size_t)n);
    const char next[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    memcpy(data + 100, next, sizeof(next) - 1);
    support_raw_send(fd, data, 100 + sizeof(next) - 1);
    support_raw_recv(fd, buf, sizeof(buf), 1000, &closed);
    assert_int_equal(support_raw_status_of(buf), 200);
    second = strstr(buf + 1, "HTTP/1.1 ");
    assert_non_null(second);
    assert_int_equal(support_raw_status_of(second), 200);
    assert_non_null(strstr(second, "{\"status\":\"ok\"}"));
    close(fd);
    recovered(f, base);
    struct support_resp r;
    struct support_call rq = {.method = "GET", .path = path, .extra_header = "Range: bytes=0-199"};
    support_do_call(&f->s, &rq, &r);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.body_len, 200);
    for (int i = 0; i < 100; i++)
        assert_int_equal(r.body[i], 'B');
    assert_int_equal(r.body[100], 0); /* nothing of the 'C's was written */
    support_resp_free(&r);

    /* Framing that must be refused outright: both Content-Length and
     * chunked (request smuggling), two different Content-Lengths, a length
     * that is no number, and a body larger than the buffer. */
    const char *heads[] = {
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        "Content-Length: 5\r\nContent-Length: 50\r\n",
        "Content-Length: 5\r\nContent-Length: 5\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Content-Length: 5x\r\n",
        "Content-Length: -5\r\n",
        "Content-Length: 99999999999999999999999\r\n",
        "Content-Length: 5000\r\n",
    };
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        fd = support_raw_connect(f->s.port);
        n = snprintf(head, sizeof(head),
                     "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n%s\r\n"
                     "hello",
                     path, heads[i]);
        support_raw_send(fd, head, (size_t)n);
        support_raw_recv(fd, buf, sizeof(buf), 500, &closed);
        int st = support_raw_status_of(buf);
        if (st < 400)
            fail_msg("'%.40s': expected a 4xx, got %d", heads[i], st);
        if (i < 4 && !closed && !support_raw_wait_closed(fd, 2000)) /* framing conflicts: closed */
            fail_msg("'%.40s': the connection stayed open", heads[i]);
        close(fd);
        f->faults++;
        recovered(f, base);
    }
    delete_id(&f->s, id);
    recovered(f, 0);
}

/* ---- many idle connections --------------------------------------------- */

static void test_thousand_idle_connections(void **state)
{
    struct fixture *f = *state;
    if (!support_enough_files(2200)) {
        skip(); /* reported as skipped, not passed */
        return;
    }
    enum { N = 1000 };
    static int fds[N];
    int open = 0;
    long w0 = support_now_ms(); /* connections of earlier tests finish closing */
    while (ghd_http_connections(f->s.http) > 0 && support_now_ms() - w0 < 10000)
        support_sleep_ms(50);
    /* From 8 addresses, each under the default --per-ip-connection-limit. */
    for (int i = 0; i < N; i++) {
        char src[16];
        snprintf(src, sizeof(src), "127.0.0.%d", 1 + i % 8);
        fds[i] = support_raw_connect_from(f->s.port, src);
        open += fds[i] >= 0;
    }
    assert_int_equal(open, N);
    long t0 = support_now_ms();
    while (ghd_http_connections(f->s.http) < N && support_now_ms() - t0 < 10000)
        support_sleep_ms(50);
    assert_int_equal(ghd_http_connections(f->s.http), N);
    f->faults++;
    /* Real work goes on beside them. */
    char id[64];
    assert_int_equal(support_buffer_try_create(&f->s, NULL, 1 << 20, id, sizeof(id)), 201);
    static char data[1 << 20];
    assert_int_equal(support_buffer_try_put(&f->s, NULL, id, data, sizeof(data)), 200);
    delete_id(&f->s, id);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    t0 = support_now_ms();
    while (ghd_http_connections(f->s.http) > 0 && support_now_ms() - t0 < 10000)
        support_sleep_ms(50);
    assert_int_equal(ghd_http_connections(f->s.http), 0);
    recovered(f, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_fail_nth),
        cmocka_unit_test(test_pool_limit_reached),
        cmocka_unit_test(test_staging_fail_nth),
        cmocka_unit_test(test_staging_ring_exhausted),
        cmocka_unit_test(test_upload_disconnects),
        cmocka_unit_test(test_download_disconnects),
        cmocka_unit_test(test_malformed_chunked),
        cmocka_unit_test(test_lying_lengths),
        cmocka_unit_test(test_thousand_idle_connections),
    };
    if (getenv("GHD_TEST_FILTER")) /* e.g. GHD_TEST_FILTER='*chunked*' */
        cmocka_set_test_filter(getenv("GHD_TEST_FILTER"));
    return cmocka_run_group_tests_name("faults", tests, setup, teardown);
}
