/* Page-locking the HTTP layer's own memory (device/hostreg.h) on the host
 * backend, which refuses an overlapping registration as cudaHostRegister
 * does: two connections' buffers in one page never reach the backend as a
 * request it must refuse; the buffer just is not locked (the caller
 * stages). Locks are given back when their thread exits, and then the
 * pages can be locked again. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "device/device.h"
#include "device/host_fault.h"
#include "device/hostreg.h"

#define PAGE 4096

struct fixture {
    struct ghd_device dev;
    char *mem; /* four pages */
};

struct covers_call {
    struct ghd_device *dev;
    const char *p;
    size_t n;
    int covered;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(ghd_device_open(&f->dev, GHD_BACKEND_HOST, 0, NULL), 0);
    assert_int_equal(posix_memalign((void **)&f->mem, PAGE, 4 * PAGE), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ghd_device_close(&f->dev);
    free(f->mem);
    free(f);
    return 0;
}

/* ghd_hostreg_thread_covers on a thread of its own, which exits (giving
 * its locks back) before this returns. */
static void *covers_main(void *arg)
{
    struct covers_call *c = arg;
    c->covered = ghd_hostreg_thread_covers(c->dev, c->p, c->n);
    return NULL;
}

struct held_call {
    struct covers_call call;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int locked, done;
};

/* The same, but the thread keeps its lock until told to finish. */
static void *holder_main(void *arg)
{
    struct held_call *h = arg;
    h->call.covered = ghd_hostreg_thread_covers(h->call.dev, h->call.p, h->call.n);
    pthread_mutex_lock(&h->lock);
    h->locked = 1;
    pthread_cond_broadcast(&h->cond);
    while (!h->done)
        pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static void holder_start(struct held_call *h, pthread_t *t)
{
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    assert_int_equal(pthread_create(t, NULL, holder_main, h), 0);
    pthread_mutex_lock(&h->lock);
    while (!h->locked)
        pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

static void holder_finish(struct held_call *h, pthread_t t)
{
    pthread_mutex_lock(&h->lock);
    h->done = 1;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    pthread_join(t, NULL);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
}

static int covers_on_thread(struct ghd_device *dev, const char *p, size_t n)
{
    struct covers_call c = {dev, p, n, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, covers_main, &c), 0);
    pthread_join(t, NULL);
    return c.covered;
}

static void test_neighbours_in_one_page(void **state)
{
    struct fixture *f = *state;
    long overlaps = ghd_host_fault_register_overlaps();
    /* One connection's read buffer ends in page 1, the next one's starts there. */
    struct held_call first = {.call = {&f->dev, f->mem + 100, PAGE + 100, -1}};
    pthread_t t;
    holder_start(&first, &t);
    assert_int_equal(first.call.covered, 1);
    assert_int_equal(covers_on_thread(&f->dev, f->mem + PAGE + 1000, 2 * PAGE), 0);
    /* The backend never saw a request it had to refuse. */
    assert_int_equal(ghd_host_fault_register_overlaps(), overlaps);
    holder_finish(&first, t);
    /* Given back at the thread's exit: the pages lock again. */
    assert_int_equal(covers_on_thread(&f->dev, f->mem + PAGE + 1000, 2 * PAGE), 1);
    assert_int_equal(ghd_host_fault_register_overlaps(), overlaps);
}

/* On one thread: a piece, a longer piece of the same buffer (the union is
 * locked again), a piece inside; 1 when each was covered. */
static void *grow_main(void *arg)
{
    struct covers_call *c = arg;
    c->covered = ghd_hostreg_thread_covers(c->dev, c->p, 100) &&
                 ghd_hostreg_thread_covers(c->dev, c->p + 50, 3 * PAGE) &&
                 ghd_hostreg_thread_covers(c->dev, c->p + 10, 20);
    return NULL;
}

static void test_growing_buffer_relocks_the_union(void **state)
{
    struct fixture *f = *state;
    long overlaps = ghd_host_fault_register_overlaps();
    struct covers_call c = {&f->dev, f->mem, 0, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, grow_main, &c), 0);
    pthread_join(t, NULL);
    assert_int_equal(c.covered, 1);
    assert_int_equal(ghd_host_fault_register_overlaps(), overlaps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_neighbours_in_one_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_growing_buffer_relocks_the_union, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
