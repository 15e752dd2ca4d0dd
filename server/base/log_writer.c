#include "log_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"

#define RING_SIZE ((size_t)1 << 20)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t has_lines; /* the writer waits here */
    pthread_cond_t has_room;  /* callers wait here when the ring is full */
    char *ring;
    size_t head, tail; /* byte counts ever put and written; head - tail is queued */
    int running, stopping;
    int idle; /* the writer sleeps until a line comes (not in its short nap) */
    pthread_t thread;
} w = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .has_lines = PTHREAD_COND_INITIALIZER,
       .has_room = PTHREAD_COND_INITIALIZER};

/* Writes all of [p, p + n) to stderr, retrying partial writes. */
static void write_all(const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(STDERR_FILENO, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return; /* nowhere to report a failed log write */
        p += k;
        n -= (size_t)k;
    }
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&w.lock);
    for (;;) {
        while (w.head == w.tail && !w.stopping) {
            w.idle = 1;
            pthread_cond_wait(&w.has_lines, &w.lock);
            w.idle = 0;
        }
        if (w.head == w.tail)
            break; /* stopping, and everything is out */
        /* The queued bytes up to the ring's end; callers only append past head. */
        size_t start = w.tail % RING_SIZE;
        size_t n = w.head - w.tail;
        if (n > RING_SIZE - start)
            n = RING_SIZE - start;
        pthread_mutex_unlock(&w.lock);
        write_all(w.ring + start, n);
        pthread_mutex_lock(&w.lock);
        w.tail += n;
        pthread_cond_broadcast(&w.has_room);
        /* Lines that come within a millisecond go out in one write, and the
         * threads that put them wake no one: a wake-up per request line cost
         * each small request a context switch. */
        if (w.head == w.tail && !w.stopping) {
            struct timespec until = ghd_clock_deadline(CLOCK_REALTIME, 1);
            pthread_cond_timedwait(&w.has_lines, &w.lock, &until);
        }
    }
    pthread_mutex_unlock(&w.lock);
    return NULL;
}

int ghd_log_writer_start(void)
{
    if (w.running)
        return 0;
    w.ring = malloc(RING_SIZE);
    if (!w.ring)
        return -1;
    w.head = w.tail = 0;
    w.stopping = 0;
    if (pthread_create(&w.thread, NULL, writer_main, NULL) != 0) {
        free(w.ring);
        w.ring = NULL;
        return -1;
    }
    pthread_mutex_lock(&w.lock);
    w.running = 1;
    pthread_mutex_unlock(&w.lock);
    static int at_exit;
    if (!at_exit++)
        atexit(ghd_log_writer_stop);
    return 0;
}

void ghd_log_writer_stop(void)
{
    pthread_mutex_lock(&w.lock);
    if (!w.running) {
        pthread_mutex_unlock(&w.lock);
        return;
    }
    w.running = 0; /* new lines go straight out, after the queued ones below */
    w.stopping = 1;
    pthread_cond_signal(&w.has_lines);
    pthread_cond_broadcast(&w.has_room);
    pthread_mutex_unlock(&w.lock);
    pthread_join(w.thread, NULL);
    free(w.ring);
    w.ring = NULL;
}

/* pre: lock held, writer running. Copies `n` bytes in at head, wrapping. */
static void append_locked(const char *p, size_t n)
{
    size_t at = w.head % RING_SIZE;
    size_t first = n < RING_SIZE - at ? n : RING_SIZE - at;
    memcpy(w.ring + at, p, first);
    memcpy(w.ring, p + first, n - first);
    w.head += n;
}

void ghd_log_writer_put(const char *line, size_t len)
{
    if (len > RING_SIZE / 4)
        len = RING_SIZE / 4;
    pthread_mutex_lock(&w.lock);
    while (w.running && RING_SIZE - (w.head - w.tail) < len + 1)
        pthread_cond_wait(&w.has_room, &w.lock);
    if (!w.running) {
        pthread_mutex_unlock(&w.lock);
        struct iovec iov[2] = {{(void *)line, len}, {"\n", 1}};
        ssize_t rc = writev(STDERR_FILENO, iov, 2); /* one line, one write */
        (void)rc;
        return;
    }
    append_locked(line, len);
    append_locked("\n", 1);
    if (w.idle || w.head - w.tail > RING_SIZE / 2) /* asleep, or its nap is too long */
        pthread_cond_signal(&w.has_lines);
    pthread_mutex_unlock(&w.lock);
}
