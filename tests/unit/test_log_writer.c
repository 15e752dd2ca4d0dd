/* The background log writer: every line comes out once, whole, and in the
 * order each thread put it, also when the threads fill the ring faster than
 * it drains (the callers then wait); stop writes out what is queued. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/log_writer.h"

#define THREADS 8
#define LINES 4000
#define PAD 300 /* 8 x 4000 x ~320 bytes: ten times the 1 MiB ring */

static void *put_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    char line[PAD + 64];
    for (int i = 0; i < LINES; i++) {
        int n = snprintf(line, sizeof(line), "t%d %d ", t, i);
        memset(line + n, 'a' + t, PAD);
        ghd_log_writer_put(line, (size_t)n + PAD);
    }
    return NULL;
}

/* Sends stderr to a fresh temporary file; returns the saved stderr. */
static int stderr_to(FILE *f)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fileno(f), STDERR_FILENO), STDERR_FILENO);
    return saved;
}

static void stderr_back(int saved)
{
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
}

static void test_every_line_once_in_order(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    int saved = stderr_to(f);
    assert_int_equal(ghd_log_writer_start(), 0);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, put_main, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    ghd_log_writer_stop();
    ghd_log_writer_put("after stop", 10); /* straight to stderr now */
    stderr_back(saved);

    rewind(f);
    int next[THREADS] = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int after_stop = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (strcmp(line, "after stop\n") == 0) {
            after_stop++;
            continue;
        }
        int t, i, n;
        assert_int_equal(sscanf(line, "t%d %d %n", &t, &i, &n), 2);
        assert_true(t >= 0 && t < THREADS);
        if (i != next[t])
            fail_msg("thread %d: line %d where %d was due", t, i, next[t]);
        next[t]++;
        assert_int_equal(len, n + PAD + 1); /* whole, with its newline */
        for (int k = 0; k < PAD; k++)
            assert_int_equal(line[n + k], 'a' + t);
    }
    free(line);
    fclose(f);
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(next[t], LINES);
    assert_int_equal(after_stop, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_line_once_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
