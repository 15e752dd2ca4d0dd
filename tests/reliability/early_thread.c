/* Preloaded into gpuhttpd by test_shutdown: starts a thread named
 * "ghd-early" before main(), as compute-sanitizer or a profiler does, so that
 * thread has no signal blocked and a SIGTERM may land in it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

static void *idle_forever(void *arg)
{
    (void)arg;
    for (;;)
        pause(); /* any thread may take a process-directed signal; this one waits for one */
    return NULL;
}

__attribute__((constructor)) static void start_early_thread(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, idle_forever, NULL) == 0) {
        pthread_setname_np(t, "ghd-early");
        pthread_detach(t);
    }
}
