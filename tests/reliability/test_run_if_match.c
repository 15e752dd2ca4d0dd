/* Conditional writes of runs (host backend unless GHD_TEST_BACKEND says otherwise):
 * - writers racing on one tag: in each trial, runs with "if_match" on the
 *   buffer they write and PUTs with If-Match, all naming the version just
 *   read, are sent at once from threads of their own; exactly one may be
 *   accepted, the others 412 (before, the check and the version's move were
 *   not one step: two runs, or a run and a PUT, could both be accepted);
 * - an if_match key that names no buffer argument of the step ("Z", a
 *   typo; "n"; "dtype"; a user kernel's scalar input) is a 422 naming it,
 *   not a run without the condition it meant. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rel.h"

#define RUNNERS 6  /* runs per trial */
#define PUTTERS 2  /* PUTs per trial */
#define CONTENDERS (RUNNERS + PUTTERS)
#define TRIALS 400
#define TRIAL_BUDGET_MS 40000 /* the trials stop early past this */
#define BYTES 4096

struct race {
    struct support_server *s;
    pthread_barrier_t go, done;
    char y[64], z[64];
    uint64_t version; /* the tag of this trial, set before `go` */
    int stop;
    long status[CONTENDERS];
    void *zeros;
};

struct contender {
    struct race *race;
    int index;
};

/* A pipeline whose first step names y in if_match and whose 15 more steps
 * (scale on z) widen the time between the request's arrival and its
 * acceptance, where a check that is not the acceptance could be passed by
 * two. */
static void run_body(const struct race *race, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap,
                                "{\"steps\": [{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", "
                                "\"dtype\": \"f32\", \"n\": 1024, \"value\": 1}, "
                                "\"if_match\": {\"x\": \"\\\"v%llu\\\"\"}}",
                                race->y, (unsigned long long)race->version);
    for (int i = 0; i < 15 && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n,
                              ", {\"kernel\": \"scale\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", "
                              "\"dtype\": \"f32\", \"n\": 1024, \"a\": 1}}",
                              race->z, race->z);
    snprintf(out + n, cap - n, "]}");
}

static void *contend(void *arg)
{
    struct contender *c = arg;
    struct race *race = c->race;
    for (;;) {
        pthread_barrier_wait(&race->go);
        if (race->stop)
            return NULL;
        char body[8192], path[128], tag[64];
        struct support_resp r;
        if (c->index < RUNNERS) {
            run_body(race, body, sizeof(body));
            struct support_call rq = {.method = "POST", .path = "/v1/runs",
                                      .ctype = "application/json", .body = body,
                                      .len = strlen(body)};
            support_do_call(race->s, &rq, &r);
        } else {
            snprintf(path, sizeof(path), "/v1/buffers/%s", race->y);
            snprintf(tag, sizeof(tag), "If-Match: \"v%llu\"", (unsigned long long)race->version);
            struct support_call rq = {.method = "PUT", .path = path,
                                      .ctype = "application/octet-stream", .body = race->zeros,
                                      .len = BYTES, .extra_header = tag};
            support_do_call(race->s, &rq, &r);
        }
        race->status[c->index] = r.status;
        support_resp_free(&r);
        pthread_barrier_wait(&race->done);
    }
}

static void test_one_writer_per_tag(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.run_workers = 4;
    support_start_config(&s, &cfg);
    struct race race = {.s = &s};
    race.zeros = calloc(1, BYTES);
    assert_int_equal(support_buffer_try_create(&s, NULL, BYTES, race.y, sizeof(race.y)), 201);
    assert_int_equal(support_buffer_try_create(&s, NULL, BYTES, race.z, sizeof(race.z)), 201);
    pthread_barrier_init(&race.go, NULL, CONTENDERS + 1);
    pthread_barrier_init(&race.done, NULL, CONTENDERS + 1);
    pthread_t th[CONTENDERS];
    struct contender cs[CONTENDERS];
    for (int i = 0; i < CONTENDERS; i++) {
        cs[i] = (struct contender){&race, i};
        assert_int_equal(pthread_create(&th[i], NULL, contend, &cs[i]), 0);
    }
    long t0 = support_now_ms();
    int trials = 0, bad = 0, runs_won = 0, puts_won = 0;
    char first_bad[256] = "";
    while (trials < TRIALS && support_now_ms() - t0 < TRIAL_BUDGET_MS) {
        /* Every writer of the last trial has ended (a run's reply came
         * after its end): this version moves only by this trial's winner. */
        race.version = support_buffer_version(&s, NULL, race.y);
        pthread_barrier_wait(&race.go);
        pthread_barrier_wait(&race.done);
        trials++;
        int won = 0;
        for (int i = 0; i < CONTENDERS; i++) {
            long st = race.status[i];
            if (st >= 200 && st < 300) {
                won++;
                if (i < RUNNERS)
                    runs_won++;
                else
                    puts_won++;
            } else if (st != 412 && !(i >= RUNNERS && st == 409)) {
                /* a PUT may meet another upload holding the writer (409) */
                fail_msg("trial %d: contender %d got %ld", trials, i, st);
            }
        }
        if (won != 1 && !bad++)
            snprintf(first_bad, sizeof(first_bad), "trial %d: %d writers accepted for \"v%llu\"",
                     trials, won, (unsigned long long)race.version);
    }
    race.stop = 1;
    pthread_barrier_wait(&race.go);
    for (int i = 0; i < CONTENDERS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&race.go);
    pthread_barrier_destroy(&race.done);
    free(race.zeros);
    printf("%d trials in %ld ms: %d with other than one writer; runs won %d, PUTs %d\n", trials,
           support_now_ms() - t0, bad, runs_won, puts_won);
    if (bad)
        fail_msg("%d of %d trials let other than exactly one writer through (first: %s)", bad,
                 trials, first_bad);
    assert_true(trials >= 20);
    support_stop(&s);
}

/* POSTs a run of user kernel twice (y = 2 x over 16 elements), as one step
 * of a pipeline or alone, with the members `tags` in its if_match. */
static void twice(struct support_server *s, struct support_resp *r, int pipeline, const char *x,
                  const char *y, const char *tags)
{
    char step[512], body[600];
    snprintf(step, sizeof(step),
             "{\"kernel\": \"twice\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"a\": 2, "
             "\"n\": 16}, \"if_match\": {%s}}",
             x, y, tags);
    snprintf(body, sizeof(body), pipeline ? "{\"steps\": [%s]}" : "%s", step);
    support_json(s, "POST", "/v1/runs", NULL, body, r);
}

static void test_unknown_if_match_key(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    support_start_config(&s, &cfg);
    char x[64], y[64], body[1024];
    assert_int_equal(support_buffer_try_create(&s, NULL, BYTES, x, sizeof(x)), 201);
    assert_int_equal(support_buffer_try_create(&s, NULL, BYTES, y, sizeof(y)), 201);
    uint64_t v = support_buffer_version(&s, NULL, y);
    static const char *const keys[] = {"Z", "n", "dtype", "a"};
    struct support_resp r;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"kernel\": \"axpy\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"dtype\": "
                 "\"f32\", \"n\": 16, \"a\": 2}, \"if_match\": {\"%s\": \"\\\"v1\\\"\"}}",
                 x, y, keys[i]);
        support_json(&s, "POST", "/v1/runs", NULL, body, &r);
        char want[64];
        snprintf(want, sizeof(want), "if_match names '%s'", keys[i]);
        support_expect_reply(&r, 422, want);
        support_resp_free(&r);
    }
    assert_int_equal(support_buffer_version(&s, NULL, y), v); /* nothing ran */
    /* In a pipeline, per step; a user kernel's number input is no buffer. */
    support_json(&s, "POST", "/v1/kernels", NULL,
                 "{\"name\": \"twice\", \"in\": \"f32 x, f32 a\", \"out\": \"f32 y\","
                 " \"body\": \"y = a * x\"}", &r);
    support_expect_reply(&r, 201, NULL);
    support_resp_free(&r);
    char tags[128];
    snprintf(tags, sizeof(tags), "\"y\": \"\\\"v%llu\\\"\", \"a\": \"\\\"v1\\\"\"",
             (unsigned long long)v);
    twice(&s, &r, 1, x, y, tags);
    support_expect_reply(&r, 422, "steps[0]: if_match names 'a'");
    support_resp_free(&r);
    assert_int_equal(support_buffer_version(&s, NULL, y), v);
    /* The keys that are buffer arguments still work: stale is 412, current runs. */
    snprintf(tags, sizeof(tags), "\"x\": \"\\\"v%llu\\\"\", \"y\": \"\\\"v%llu\\\"\"",
             (unsigned long long)support_buffer_version(&s, NULL, x), (unsigned long long)v + 7);
    twice(&s, &r, 0, x, y, tags);
    support_expect_reply(&r, 412, "argument y");
    char etag[64], want[64];
    support_header(&r, "ETag", etag, sizeof(etag));
    snprintf(want, sizeof(want), "\"v%llu\"", (unsigned long long)v);
    assert_string_equal(etag, want); /* the version found, to retry with */
    support_resp_free(&r);
    snprintf(tags, sizeof(tags), "\"y\": \"\\\"v%llu\\\"\"", (unsigned long long)v);
    twice(&s, &r, 0, x, y, tags);
    support_expect_reply(&r, 200, "succeeded");
    support_resp_free(&r);
    support_stop(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_writer_per_tag),
        cmocka_unit_test(test_unknown_if_match_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
