/* Slow clients, over raw sockets, against short timeouts: a client that
 * connects and says nothing, one that sends its head a byte at a time, one
 * that stalls or trickles an upload body, one that does not read its
 * download. Each is dropped in bounded time, and afterwards no staging chunk
 * is held, no half-made buffer stays, and the server still answers. Half
 * heads that fill the connection limit are shed, oldest first, for a new
 * client. */
#include <netinet/in.h>
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

#define HEAD_TIMEOUT_S 2
#define IDLE_TIMEOUT_S 30 /* long: every drop below is the guard's doing */
#define RATE 4096 /* bytes/s */
#define WINDOW_S 1
#define HOLD_S 2 /* --staging-hold */

static int setup(void **state)
{
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.connection_timeout_s = IDLE_TIMEOUT_S;
    cfg.header_timeout_s = HEAD_TIMEOUT_S;
    cfg.min_transfer_rate = RATE;
    cfg.transfer_rate_window_s = WINDOW_S;
    cfg.staging_hold_s = HOLD_S;
    return support_setup_with(state, &cfg);
}


static void still_serves(struct support_server *s)
{
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", "/healthz", NULL, NULL, &r), 200);
    support_resp_free(&r);
}

/* Waits for the server to close fd; returns the seconds it took. */
static double closed_after(int fd, long limit_ms)
{
    long t0 = support_now_ms();
    int closed = support_raw_wait_closed(fd, limit_ms);
    double took = (double)(support_now_ms() - t0) / 1e3;
    if (!closed)
        fail_msg("the server kept the connection open for %ld ms", limit_ms);
    return took;
}

static void test_silent_connection(void **state)
{
    struct support_server *s = *state;
    int fd = support_raw_connect(s->port);
    assert_true(fd >= 0);
    double took = closed_after(fd, 8000);
    print_message("silent connection dropped after %.1f s\n", took);
    assert_true(took < HEAD_TIMEOUT_S + 2.0);
    close(fd);
    still_serves(s);
}

static void test_head_byte_by_byte(void **state)
{
    struct support_server *s = *state;
    uint64_t heads0, slow0, heads1, slow1;
    ghd_http_guard_stats(s->http, &heads0, &slow0);
    int fd = support_raw_connect(s->port);
    assert_true(fd >= 0);
    /* Never idle for long, so only a deadline on the whole head catches it. */
    const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow-1: aaaaaaaaaaaaaaaaaaaa\r\n"
                        "X-Slow-2: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n";
    long t0 = support_now_ms();
    int dropped = 0;
    for (size_t i = 0; i < sizeof(head) - 1; i++) {
        if (support_raw_send(fd, head + i, 1) != 0) {
            dropped = 1;
            break;
        }
        char buf[256];
        int closed;
        support_raw_recv(fd, buf, sizeof(buf), 250, &closed);
        if (closed) {
            dropped = 1;
            break;
        }
    }
    double took = (double)(support_now_ms() - t0) / 1e3;
    assert_true(dropped);
    print_message("byte-by-byte head dropped after %.1f s\n", took);
    assert_true(took < HEAD_TIMEOUT_S + 2.0);
    close(fd);
    ghd_http_guard_stats(s->http, &heads1, &slow1);
    assert_int_equal(heads1, heads0 + 1);
    still_serves(s);
}

/* Starts an upload of `total` bytes to a new buffer and sends `first` bytes. */
static int start_upload(struct support_server *s, size_t total, size_t first)
{
    return support_raw_begin_upload(s->port, "POST", "/v1/buffers", total, first);
}

static void test_upload_stalls(void **state)
{
    struct support_server *s = *state;
    int fd = start_upload(s, 1 << 20, 200 << 10);
    support_sleep_ms(200);
    /* The upload holds its two staging chunks and its new buffer now. */
    assert_int_equal(support_staging_busy(s), 2);
    assert_true(support_pool_in_use(s) >= (1 << 20));
    double took = closed_after(fd, 10000);
    print_message("stalled upload dropped after %.1f s\n", took);
    assert_true(took < 4.0);
    close(fd);
    /* Chunks back, the half-written buffer gone. */
    assert_true(support_wait_rest(s, 0, 3000));
    still_serves(s);
}

static void test_upload_trickles(void **state)
{
    struct support_server *s = *state;
    uint64_t h0, slow0, h1, slow1;
    ghd_http_guard_stats(s->http, &h0, &slow0);
    int fd = start_upload(s, 1 << 20, 1000);
    /* 64 bytes every 100 ms: never idle, far below RATE. */
    long t0 = support_now_ms();
    int dropped = 0;
    char piece[64] = {0};
    while (support_now_ms() - t0 < 10000) {
        if (support_raw_send(fd, piece, sizeof(piece)) != 0) {
            dropped = 1;
            break;
        }
        char buf[512];
        int closed;
        support_raw_recv(fd, buf, sizeof(buf), 100, &closed);
        if (closed) {
            dropped = 1;
            break;
        }
    }
    double took = (double)(support_now_ms() - t0) / 1e3;
    assert_true(dropped);
    print_message("trickling upload dropped after %.1f s\n", took);
    close(fd);
    ghd_http_guard_stats(s->http, &h1, &slow1);
    assert_int_equal(slow1, slow0 + 1);
    assert_true(support_wait_rest(s, 0, 3000));
    still_serves(s);
}

/* junk: while not reading, the client sends 10 KB/s of bytes that are no
 * request (the guard counted received bytes too, so this
 * kept an unread download and its staging chunk until
 * --connection-timeout). A response's rate is what the client takes. */
static void download_not_read(struct support_server *s, int junk)
{
    char id[64];
    size_t size = 8 << 20;
    assert_int_equal(support_buffer_try_create(s, NULL, size, id, sizeof(id)), 201);
    size_t baseline = support_pool_in_use(s);
    /* A small receive window, and the client never reads. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int rcv = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)); /* before connect: the window */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    char req[128];
    int n = snprintf(req, sizeof(req), "GET /v1/buffers/%s HTTP/1.1\r\nHost: x\r\n\r\n", id);
    assert_int_equal(support_raw_send(fd, req, (size_t)n), 0);
    support_sleep_ms(300);
    /* One chunk: the download's windows take turns in its two halves. */
    assert_int_equal(support_staging_busy(s), 1);
    /* Wait without reading; then see whether the server gave up. */
    long t0 = support_now_ms();
    char trickle[1024];
    memset(trickle, 'j', sizeof(trickle));
    while (support_staging_busy(s) != 0 && support_now_ms() - t0 < 10000) {
        support_sleep_ms(100);
        if (junk)
            send(fd, trickle, sizeof(trickle), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    double took = (double)(support_now_ms() - t0) / 1e3;
    assert_int_equal(support_staging_busy(s), 0);
    print_message("unread download%s given up after %.1f s\n", junk ? " (junk sent)" : "", took);
    assert_true(took < 6.0);
    close(fd);
    assert_true(support_wait_rest(s, baseline, 3000));
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_resp r;
    assert_int_equal(support_json(s, "DELETE", path, NULL, NULL, &r), 204);
    support_resp_free(&r);
    still_serves(s);
}

static void test_download_not_read(void **state)
{
    download_not_read(*state, 0);
}

static void test_download_not_read_junk_sent(void **state)
{
    download_not_read(*state, 1);
}

/* Another client's 256 KiB upload while slow ones are about: its status. */
static long other_upload(struct support_server *s)
{
    char other[64], path[128];
    assert_int_equal(support_buffer_try_create(s, NULL, 256 << 10, other, sizeof(other)), 201);
    snprintf(path, sizeof(path), "/v1/buffers/%s", other);
    char *data = calloc(1, 256 << 10);
    struct support_call rq = {.method = "PUT", .path = path, .ctype = "application/octet-stream",
                              .body = data, .len = 256 << 10, .timeout_ms = 3000};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    long st = r.status;
    support_resp_free(&r);
    free(data);
    support_json(s, "DELETE", path, NULL, NULL, &r);
    support_resp_free(&r);
    return st;
}

/* Closes the 8 slow clients and deletes their buffers; the server is at rest. */
static void end_slow_clients(struct support_server *s, int fds[8], char id[8][64])
{
    char path[640];
    struct support_resp r;
    for (int i = 0; i < 8; i++) {
        close(fds[i]);
        snprintf(path, sizeof(path), "/v1/buffers/%s", id[i]);
        support_json(s, "DELETE", path, NULL, NULL, &r);
        support_resp_free(&r);
    }
    assert_true(support_wait_rest(s, 0, 3000));
}

/* Regression: a PUT that sends its head (here with Expect:
 * 100-continue) and then nothing took a staging chunk at once; a ring's
 * worth of them starved every other upload (503). A chunk is now taken when
 * the first body bytes arrive. */
static void test_heads_without_body_hold_no_chunk(void **state)
{
    struct support_server *s = *state;
    char id[8][64];
    int fds[8];
    for (int i = 0; i < 8; i++) {
        assert_int_equal(support_buffer_try_create(s, NULL, 1 << 20, id[i], sizeof(id[i])), 201);
        fds[i] = support_raw_connect(s->port);
        char head[256];
        int n = snprintf(head, sizeof(head),
                         "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                         "application/octet-stream\r\nContent-Length: 1048576\r\n"
                         "Expect: 100-continue\r\n\r\n",
                         id[i]);
        assert_int_equal(support_raw_send(fds[i], head, (size_t)n), 0);
    }
    support_sleep_ms(300);
    unsigned busy = support_staging_busy(s);
    long st = other_upload(s); /* another upload goes through meanwhile */
    end_slow_clients(s, fds, id);
    if (busy != 0 || st != 200)
        fail_msg("8 bodiless PUT heads held %u staging chunks; another upload got %ld", busy, st);
}

/* Regression: uploads that trickle just over --min-transfer-rate held
 * their staging chunks for as long as they lasted: a ring's worth of them
 * gave every other upload a 503. After --staging-hold they give the chunks
 * back and go on without; the others get chunks again. */
static void test_trickles_give_chunks_back(void **state)
{
    struct support_server *s = *state;
    char id[8][64], path[640];
    int fds[8];
    for (int i = 0; i < 8; i++) {
        assert_int_equal(support_buffer_try_create(s, NULL, 1 << 20, id[i], sizeof(id[i])), 201);
        snprintf(path, sizeof(path), "/v1/buffers/%s", id[i]);
        fds[i] = support_raw_begin_upload(s->port, "PUT", path, 1 << 20, 600);
    }
    support_sleep_ms(200);
    unsigned held = support_staging_busy(s);
    char piece[600];
    memset(piece, 't', sizeof(piece));
    long t0 = support_now_ms();
    while (support_now_ms() - t0 < (HOLD_S + 1) * 1000L) { /* 6 KB/s each, above RATE */
        support_sleep_ms(100);
        for (int i = 0; i < 8; i++)
            send(fds[i], piece, sizeof(piece), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    unsigned busy = support_staging_busy(s);
    long st = other_upload(s);
    print_message("8 trickles: %u chunks held at first, %u after %d s; another upload %ld\n",
                  held, busy, HOLD_S + 1, st);
    end_slow_clients(s, fds, id);
    if (held == 0 || busy != 0 || st != 200)
        fail_msg("trickling uploads kept %u staging chunks; another upload got %ld", busy, st);
}

static void test_fast_clients_unaffected(void **state)
{
    struct support_server *s = *state;
    /* A normal upload and download of 4 MiB, a keep-alive pause shorter than
     * the idle timeout, and a second request on the same connection. */
    size_t size = 4 << 20;
    char *data = malloc(size);
    for (size_t i = 0; i < size; i++)
        data[i] = (char)(i * 31);
    struct support_call rq = {.method = "POST", .path = "/v1/buffers",
                              .ctype = "application/octet-stream", .body = data, .len = size};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    assert_int_equal(r.status, 201);
    char id[64], path[128];
    support_json_str(&r, "id", id, sizeof(id));
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    assert_int_equal(support_json(s, "GET", path, NULL, NULL, &r), 200);
    assert_int_equal(r.body_len, size);
    assert_memory_equal(r.body, data, size);
    support_resp_free(&r);
    free(data);

    int fd = support_raw_connect(s->port);
    const char get[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    char buf[1024];
    int closed;
    assert_int_equal(support_raw_send(fd, get, sizeof(get) - 1), 0);
    support_raw_recv(fd, buf, sizeof(buf), 300, &closed);
    assert_int_equal(support_raw_status_of(buf), 200);
    support_sleep_ms(1000); /* idle, under the idle timeout */
    assert_int_equal(support_raw_send(fd, get, sizeof(get) - 1), 0);
    support_raw_recv(fd, buf, sizeof(buf), 300, &closed);
    assert_int_equal(support_raw_status_of(buf), 200);
    close(fd);
    assert_int_equal(support_json(s, "DELETE", path, NULL, NULL, &r), 204);
    support_resp_free(&r);
    assert_true(support_wait_rest(s, 0, 2000));
}

/* Without the guard, MHD's idle timeout alone still ends a stalled upload
 * and the chunks come back. */
static void test_idle_timeout_alone(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.connection_timeout_s = 2;
    cfg.header_timeout_s = 0;
    cfg.min_transfer_rate = 0;
    support_start_config(&s, &cfg);
    int fd = start_upload(&s, 1 << 20, 100 << 10);
    support_sleep_ms(200);
    assert_int_equal(support_staging_busy(&s), 2);
    double took = closed_after(fd, 10000);
    print_message("stalled upload, idle timeout only: dropped after %.1f s\n", took);
    assert_true(took < 5.0);
    close(fd);
    fd = support_raw_connect(s.port); /* and a silent connection */
    took = closed_after(fd, 10000);
    assert_true(took < 5.0);
    close(fd);
    assert_true(support_wait_rest(&s, 0, 3000));
    still_serves(&s);
    support_stop(&s);
}

/* Connection exhaustion by half heads: 8 loopback addresses, 8 connections
 * each (within --per-ip-connection-limit), fill --connection-limit 64 with
 * heads that never end, under the default 30 s --header-timeout. A full
 * request from another address is still served at once: near the limit the
 * server sheds the oldest connections without a head, counted in
 * gpuhttpd_connections_shed_total, and the newest half heads stay. */
#define FILL_ADDRESSES 8
#define FILL_PER_ADDRESS 8

static void test_half_heads_shed_near_limit(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.connection_limit = FILL_ADDRESSES * FILL_PER_ADDRESS;
    assert_int_equal(cfg.header_timeout_s, 30); /* the default: no deadline helps here */
    support_start_config(&s, &cfg);
    long shed0 = support_metric(&s, "gpuhttpd_connections_shed_total");
    assert_true(shed0 >= 0);
    int fds[FILL_ADDRESSES * FILL_PER_ADDRESS];
    const char half[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Never-Ends: aaaa";
    for (int a = 0; a < FILL_ADDRESSES; a++) {
        char src[32];
        snprintf(src, sizeof(src), "127.0.0.%d", a + 2);
        for (int i = 0; i < FILL_PER_ADDRESS; i++) {
            int *fd = &fds[a * FILL_PER_ADDRESS + i];
            *fd = support_raw_connect_from(s.port, src);
            support_raw_send(*fd, half, sizeof(half) - 1); /* refused ones fail here or later */
            support_sleep_ms(5);
        }
    }
    support_sleep_ms(300);
    struct support_call rq = {.method = "GET", .path = "/healthz", .timeout_ms = 3000};
    struct support_resp r;
    long t0 = support_now_ms();
    support_do_call(&s, &rq, &r);
    long took = support_now_ms() - t0;
    print_message("a full request among %d half heads: %ld in %ld ms\n",
                  FILL_ADDRESSES * FILL_PER_ADDRESS, r.status, took);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    assert_true(took < 2000);
    long shed = support_metric(&s, "gpuhttpd_connections_shed_total") - shed0;
    print_message("%ld connections shed\n", shed);
    assert_true(shed >= 1);
    /* Oldest first: the first half head is gone, the last one still waits. */
    assert_true(support_raw_wait_closed(fds[0], 2000));
    char buf[64];
    int closed = 0;
    support_raw_recv(fds[FILL_ADDRESSES * FILL_PER_ADDRESS - 1], buf, sizeof(buf), 200, &closed);
    assert_false(closed);
    for (int i = 0; i < FILL_ADDRESSES * FILL_PER_ADDRESS; i++)
        close(fds[i]);
    support_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_connection),
        cmocka_unit_test(test_head_byte_by_byte),
        cmocka_unit_test(test_upload_stalls),
        cmocka_unit_test(test_upload_trickles),
        cmocka_unit_test(test_download_not_read),
        cmocka_unit_test(test_download_not_read_junk_sent),
        cmocka_unit_test(test_heads_without_body_hold_no_chunk),
        cmocka_unit_test(test_trickles_give_chunks_back),
        cmocka_unit_test(test_fast_clients_unaffected),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(test_idle_timeout_alone),
        cmocka_unit_test(test_half_heads_shed_near_limit),
    };
    int failed = cmocka_run_group_tests_name("slowloris", tests, setup, support_teardown);
    return failed + cmocka_run_group_tests_name("idle_timeout", alone, NULL, NULL);
}
