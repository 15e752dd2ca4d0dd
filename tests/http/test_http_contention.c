/* Staging contention: a ring of only a few chunks and many more concurrent
 * transfers than it can serve at once. Each transfer needs two chunks for a
 * short while; served one after another they all fit well within the
 * staging timeout, so every one of them must succeed (none may starve into
 * a 503 because the others each hold half of what they need). */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "harness_thread.h"

static struct support_server H;

/* A ring of four 64 KiB chunks that waits at most 3 s for one. */
static const struct support_opts few_chunks = {
    .staging_chunk = 64 << 10,
    .staging_chunks = 4,
    .staging_timeout_ms = 3000,
};

struct client {
    int index;
    int rounds;
    char error[256];
    long statuses[8];
};

static void *client_main(void *p)
{
    struct client *c = p;
    size_t size = 300000 + (size_t)c->index * 1013;
    char *data = malloc(size);
    if (!data)
        return NULL;
    for (int round = 0; round < c->rounds && !c->error[0]; round++) {
        support_fill((uint64_t)(c->index * 100 + round), 0, data, size);
        struct support_resp r;
        char id[GHD_BUFFER_ID_LEN + 1];
        if (support_buffer_post_try(&H, data, size, id, &r) != 0) {
            snprintf(c->error, sizeof(c->error), "round %d POST: %ld: %.150s", round, r.status,
                     r.body ? r.body : "");
            support_resp_free(&r);
            break;
        }
        char path[128];
        snprintf(path, sizeof(path), "/v1/buffers/%s", id);
        struct support_req get = {.path = path};
        support_do(&H, &get, &r);
        if (r.status != 200 || r.body_len != size || memcmp(r.body, data, size) != 0)
            snprintf(c->error, sizeof(c->error), "round %d GET: %ld, %zu bytes: %.150s", round,
                     r.status, r.body_len, r.status != 200 && r.body ? r.body : "");
        support_resp_free(&r);
        struct support_req del = {.method = "DELETE", .path = path};
        support_do(&H, &del, &r);
        support_resp_free(&r);
    }
    free(data);
    return NULL;
}

static void test_many_transfers_few_chunks(void **state)
{
    (void)state;
    enum { N = 12 };
    struct client c[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&c[i], 0, sizeof(c[i]));
        c[i].index = i;
        c[i].rounds = 4;
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &c[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    struct ghd_staging_stats ss;
    ghd_staging_get_stats(&ghd_service_runtime(&H.svc, 0)->staging, &ss);
    print_message("staging: %u chunks, %llu acquires, %llu waits, %llu timeouts\n", ss.chunks,
                  (unsigned long long)ss.acquires, (unsigned long long)ss.waits,
                  (unsigned long long)ss.timeouts);
    int failed = 0;
    for (int i = 0; i < N; i++) {
        if (c[i].error[0]) {
            print_error("client %d: %s\n", i, c[i].error);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
    /* gpuhttpd_staging_timeouts_total means "answered 503": none was. */
    assert_int_equal(ss.timeouts, 0);
    assert_int_equal(support_await_idle(&H, (size_t)-1, 5000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_transfers_few_chunks),
    };
    return SUPPORT_RUN_GROUP(tests, &H, &few_chunks);
}
