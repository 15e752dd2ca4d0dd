#ifndef GHD_TESTS_SUPPORT_HARNESS_THREAD_H
#define GHD_TESTS_SUPPORT_HARNESS_THREAD_H

/* Requests from threads other than the test's (harness.h). cmocka's
 * assertions belong to the test's thread, so what runs on another thread
 * reports what happened and the test asserts after the join. */

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "harness.h"

/* One request performed on its own thread. The struct must outlive the
 * thread (make it static where an assertion could end the test first):
 * the thread reads req and writes resp. */
struct support_async {
    struct support_server *h;
    struct support_req req;
    struct support_resp resp;
    pthread_t thread;
};

/* Starts a->req against h on a new thread; fails the test if it cannot. */
void support_async_start(struct support_async *a, struct support_server *h);
/* Waits for the request to end; a->resp then holds the answer (the caller
 * frees it with support_resp_free). */
void support_async_join(struct support_async *a);

/* Waits, 1 ms at a time, for up to timeout_ms until *flag is nonzero;
 * returns its value (0: it was not set in time). Bounded, so that a failed
 * test does not leave a thread stuck. */
int support_await_flag(atomic_int *flag, unsigned timeout_ms);

/* POSTs `len` bytes as a new buffer (application/octet-stream). Returns 0
 * with the new id in id (r freed), or -1 with the reply left in r for the
 * caller to describe and free. No assertion: safe on any thread. */
int support_buffer_post_try(struct support_server *h, const void *data, size_t len, char id[GHD_BUFFER_ID_LEN + 1],
                            struct support_resp *r);

#endif
