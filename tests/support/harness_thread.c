/* Requests on threads of their own, flags awaited, and a buffer POST that
 * reports instead of asserting (harness_thread.h). */
#include "harness_thread.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

static void *async_main(void *p)
{
    struct support_async *a = p;
    support_do(a->h, &a->req, &a->resp);
    return NULL;
}

void support_async_start(struct support_async *a, struct support_server *h)
{
    a->h = h;
    int rc = pthread_create(&a->thread, NULL, async_main, a);
    if (rc != 0)
        fail_msg("pthread_create for %s %s: %d", a->req.method ? a->req.method : "GET",
                 a->req.path, rc);
}

void support_async_join(struct support_async *a)
{
    pthread_join(a->thread, NULL);
}

int support_await_flag(atomic_int *flag, unsigned timeout_ms)
{
    for (unsigned i = 0; i < timeout_ms && !atomic_load(flag); i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    return atomic_load(flag);
}

int support_buffer_post_try(struct support_server *h, const void *data, size_t len, char id[GHD_BUFFER_ID_LEN + 1],
                            struct support_resp *r)
{
    struct support_req post = {.method = "POST", .path = "/v1/buffers", .body = data,
                               .body_len = len, .has_body = 1};
    post.headers[0] = "Content-Type: application/octet-stream";
    support_do(h, &post, r);
    json_t *doc = r->status == 201 ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
    const char *s = doc ? json_string_value(json_object_get(doc, "id")) : NULL;
    if (!s) {
        json_decref(doc);
        return -1;
    }
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", s);
    json_decref(doc);
    support_resp_free(r);
    return 0;
}
