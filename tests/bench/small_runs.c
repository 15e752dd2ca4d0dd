/* small_runs: what a small request costs next to the HTTP floor.
 *
 * Against one running gpuhttpd (127.0.0.1), on keep-alive connections, one thread each:
 *   healthz      GET /healthz, p50/p99, at each --conns count
 *   run_axpy_4k  POST /v1/runs axpy on 1024 f32 (4 KiB), waited for, at each --conns count
 *   phases       where a run's time went on one connection: the mean of each phase of
 *                gpuhttpd_run_phase_seconds{phase} over the runs of that test (its
 *                _sum and _count read from /metrics before and after)
 *   pipeline     a pipeline of k axpy steps over the same two buffers, run again and
 *                again on one connection, p50/p99 for each --steps k; then the slope
 *                of the p50 per extra step (least squares over the k's)
 *   batch        POST /v1/runs with a list of k axpy runs (--batch k; 0 = skip)
 *
 * The server decides whether a repeated pipeline is replayed as a graph
 * (--run-graphs); run_small_runs.sh starts it both ways. One JSON line per result
 * with --json. Exit 1 when a request failed.
 */
#define _GNU_SOURCE
#include "loadgen_http.h"
#include "tool_util.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONNS 1024
#define MAX_LIST 8
#define PHASES 7
static const char *const PHASE_NAMES[PHASES] = {"parse",    "prepare", "queue", "launch",
                                                "complete", "wake",    "reply"};

struct opts {
    int port;
    unsigned conns[MAX_LIST], nconns;
    unsigned steps[MAX_LIST], nsteps;
    unsigned requests;
    double duration_s;
    unsigned batch;
    const char *label;
    int json;
};

/* One connection: its two 4 KiB buffers (x, y) and the latencies it measured. */
struct conn {
    const struct opts *o;
    struct lg_conn c;
    char x[128], y[128];
    uint64_t *lat_ns;
    size_t count;
    int failed;
    char err[320];
    const char *test; /* what the thread runs */
    unsigned k;       /* steps of a pipeline, runs of a batch */
    pthread_barrier_t *barrier;
};

/* Sends one request and reads its answer into text; -1 unless the status is 2xx. */
static int request(struct conn *c, const char *method, const char *path, const char *body,
                   struct lg_text *text)
{
    struct lg_response resp;
    text->len = 0;
    text->data[0] = '\0';
    if (lg_conn_send_request(&c->c, method, path, body ? "application/json" : NULL, NULL, body,
                             body ? strlen(body) : 0) != 0 ||
        lg_conn_read_head(&c->c, &resp) != 0 ||
        lg_conn_read_body(&c->c, &resp, false, lg_text_sink, text) != 0) {
        snprintf(c->err, sizeof c->err, "%s %s: %s", method, path, c->c.err);
        return -1;
    }
    if (resp.status < 200 || resp.status > 299) {
        snprintf(c->err, sizeof c->err, "%s %s: HTTP %d: %.200s", method, path, resp.status,
                 text->data);
        return -1;
    }
    return 0;
}

static int new_buffer(struct conn *c, char *id, size_t cap)
{
    char local[4096];
    struct lg_text text = {local, sizeof local, 0};
    struct lg_response none = {0}; /* no Location: the id comes from the body */
    if (request(c, "POST", "/v1/buffers", "{\"size\":4096}", &text) != 0)
        return -1;
    return lg_parse_buffer_id(&none, local, id, cap);
}

/* One axpy step's JSON: y += 2 x over 1024 f32. */
static int axpy_json(const struct conn *c, char *out, size_t cap)
{
    return snprintf(out, cap,
                    "{\"kernel\":\"axpy\",\"args\":{\"a\":2.0,\"x\":\"%s\",\"y\":\"%s\","
                    "\"dtype\":\"f32\",\"n\":1024}}",
                    c->x, c->y);
}

/* The body of the test: a run, a pipeline of c->k steps, or a list of c->k runs. */
static void body_of(const struct conn *c, char *out, size_t cap)
{
    char step[400];
    int n = axpy_json(c, step, sizeof step);
    size_t used = 0;
    if (strcmp(c->test, "run_axpy_4k") == 0) {
        snprintf(out, cap, "%s", step);
        return;
    }
    int pipeline = strcmp(c->test, "pipeline") == 0;
    used += (size_t)snprintf(out, cap, "%s", pipeline ? "{\"steps\":[" : "[");
    for (unsigned i = 0; i < c->k && used + (size_t)n + 4 < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "," : "", step);
    snprintf(out + used, cap - used, "%s", pipeline ? "]}" : "]");
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    const struct opts *o = c->o;
    char body[16384], reply[16384];
    struct lg_text text = {reply, sizeof reply, 0};
    int healthz = strcmp(c->test, "healthz") == 0;
    if (!healthz)
        body_of(c, body, sizeof body);
    /* Untimed: the first requests pay the connection's and the code's warm-up. */
    for (unsigned i = 0; i < 20 && !c->failed; i++)
        c->failed = healthz ? request(c, "GET", "/healthz", NULL, &text)
                            : request(c, "POST", "/v1/runs", body, &text);
    pthread_barrier_wait(c->barrier);
    double t = lg_now_s(), deadline = t + o->duration_s;
    while (!c->failed && c->count < o->requests && t < deadline) {
        double t0 = t;
        c->failed = healthz ? request(c, "GET", "/healthz", NULL, &text)
                            : request(c, "POST", "/v1/runs", body, &text);
        t = lg_now_s();
        c->lat_ns[c->count++] = (uint64_t)((t - t0) * 1e9);
    }
    if (!c->failed && !healthz && !strstr(reply, "succeeded")) {
        snprintf(c->err, sizeof c->err, "the last run did not succeed: %.200s", reply);
        c->failed = 1;
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct result {
    double rps, p50_us, p99_us;
    size_t n;
    int ok;
};

/* Runs `test` on `n` connections at once; *r the figures over all of them. */
static void run_test(struct conn *cs, unsigned n, const char *test, unsigned k,
                     struct result *r)
{
    pthread_barrier_t barrier;
    pthread_t th[MAX_CONNS];
    pthread_barrier_init(&barrier, NULL, n + 1);
    for (unsigned i = 0; i < n; i++) {
        cs[i].test = test;
        cs[i].k = k;
        cs[i].count = 0;
        cs[i].barrier = &barrier;
        pthread_create(&th[i], NULL, conn_main, &cs[i]);
    }
    pthread_barrier_wait(&barrier);
    double t0 = lg_now_s();
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    double secs = lg_now_s() - t0;
    pthread_barrier_destroy(&barrier);
    size_t total = 0, j = 0;
    *r = (struct result){.ok = 1};
    for (unsigned i = 0; i < n; i++) {
        total += cs[i].count;
        r->ok &= !cs[i].failed;
        if (cs[i].failed)
            fprintf(stderr, "small_runs: %s conn %u: %s\n", test, i, cs[i].err);
    }
    uint64_t *all = malloc((total ? total : 1) * sizeof *all);
    for (unsigned i = 0; all && i < n; i++)
        for (size_t m = 0; m < cs[i].count; m++)
            all[j++] = cs[i].lat_ns[m];
    if (all && total) {
        qsort(all, total, sizeof *all, cmp_u64);
        r->p50_us = (double)all[(size_t)(0.50 * (double)(total - 1) + 0.5)] / 1e3;
        r->p99_us = (double)all[(size_t)(0.99 * (double)(total - 1) + 0.5)] / 1e3;
    }
    free(all);
    r->n = total;
    r->rps = secs > 0 ? (double)total / secs : 0;
}

static void print_result(const struct opts *o, const char *test, unsigned conns, unsigned k,
                         const struct result *r)
{
    if (o->json)
        printf("{\"tool\":\"small_runs\",\"label\":\"%s\",\"test\":\"%s\",\"conns\":%u,"
               "\"k\":%u,\"requests\":%zu,\"rps\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
               "\"status\":\"%s\"}\n",
               o->label, test, conns, k, r->n, r->rps, r->p50_us, r->p99_us,
               r->ok ? "ok" : "FAILED");
    else
        printf("%-12s k=%-3u %3u conns: %8zu in total %10.1f /s  p50 %8.1f us  p99 %8.1f us%s\n",
               test, k, conns, r->n, r->rps, r->p50_us, r->p99_us, r->ok ? "" : "  FAILED");
    fflush(stdout);
}

/* The sum and count of each phase of gpuhttpd_run_phase_seconds, from /metrics. */
static int read_phases(struct conn *c, double sum[PHASES], double count[PHASES])
{
    static char page[1 << 20];
    struct lg_text text = {page, sizeof page, 0};
    if (request(c, "GET", "/metrics", NULL, &text) != 0)
        return -1;
    for (int p = 0; p < PHASES; p++) {
        char key[96];
        snprintf(key, sizeof key, "gpuhttpd_run_phase_seconds_sum{phase=\"%s\"} ",
                 PHASE_NAMES[p]);
        const char *at = strstr(page, key);
        sum[p] = at ? atof(at + strlen(key)) : 0;
        snprintf(key, sizeof key, "gpuhttpd_run_phase_seconds_count{phase=\"%s\"} ",
                 PHASE_NAMES[p]);
        at = strstr(page, key);
        count[p] = at ? atof(at + strlen(key)) : 0;
    }
    return 0;
}

static void print_phases(const struct opts *o, const double s0[PHASES], const double n0[PHASES],
                         const double s1[PHASES], const double n1[PHASES])
{
    double total = 0, us[PHASES];
    for (int p = 0; p < PHASES; p++) {
        double n = n1[p] - n0[p];
        us[p] = n > 0 ? (s1[p] - s0[p]) / n * 1e6 : 0;
        total += us[p];
    }
    printf(o->json ? "{\"tool\":\"small_runs\",\"label\":\"%s\",\"test\":\"phases\",\"conns\":1"
                   : "phases (mean us, %s): ",
           o->label);
    for (int p = 0; p < PHASES; p++)
        printf(o->json ? ",\"%s_us\":%.2f" : "%s %.2f  ", PHASE_NAMES[p], us[p]);
    printf(o->json ? ",\"total_us\":%.2f}\n" : "total %.2f\n", total);
}

/* The p50 per extra step: the least-squares slope of p50 over k. */
static void print_slope(const struct opts *o, const double *p50, unsigned n)
{
    double mk = 0, mp = 0, sxy = 0, sxx = 0;
    for (unsigned i = 0; i < n; i++) {
        mk += o->steps[i] / (double)n;
        mp += p50[i] / n;
    }
    for (unsigned i = 0; i < n; i++) {
        sxy += (o->steps[i] - mk) * (p50[i] - mp);
        sxx += (o->steps[i] - mk) * (o->steps[i] - mk);
    }
    double slope = sxx > 0 ? sxy / sxx : 0;
    printf(o->json ? "{\"tool\":\"small_runs\",\"label\":\"%s\",\"test\":\"pipeline_slope\","
                     "\"us_per_step\":%.2f}\n"
                   : "pipeline slope (%s): %.2f us per extra step\n",
           o->label, slope);
}

static int parse_list(const char *s, unsigned *out, unsigned *n, unsigned max)
{
    *n = 0;
    if (strcmp(s, "none") == 0)
        return 0;
    for (const char *p = s; *p;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || v == 0 || v > max || *n == MAX_LIST)
            return -1;
        out[(*n)++] = (unsigned)v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"port", 1, 0, 'p'},     {"conns", 1, 0, 'c'}, {"steps", 1, 0, 's'},
        {"requests", 1, 0, 'n'}, {"duration", 1, 0, 'd'}, {"batch", 1, 0, 'b'},
        {"label", 1, 0, 'l'},    {"json", 0, 0, 'j'},     {0, 0, 0, 0}};
    *o = (struct opts){.requests = 5000, .duration_s = 5, .label = ""};
    parse_list("1,64", o->conns, &o->nconns, MAX_CONNS);
    parse_list("1,4,16", o->steps, &o->nsteps, 16);
    int ch, bad = 0;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'p': o->port = atoi(optarg); break;
        case 'c': bad |= parse_list(optarg, o->conns, &o->nconns, MAX_CONNS); break;
        case 's': bad |= parse_list(optarg, o->steps, &o->nsteps, 16); break;
        case 'n': o->requests = (unsigned)atoi(optarg); break;
        case 'd': o->duration_s = atof(optarg); break;
        case 'b': o->batch = (unsigned)atoi(optarg); break;
        case 'l': o->label = optarg; break;
        case 'j': o->json = 1; break;
        default: bad = 1;
        }
    }
    if (bad || o->port <= 0 || o->requests == 0 || o->duration_s <= 0) {
        fprintf(stderr, "usage: small_runs --port P [--conns 1,64|none] [--steps 1,4,16|none] "
                        "[--requests N] [--duration S] [--batch K] [--label L] [--json]\n");
        return -1;
    }
    return 0;
}

static int open_conns(const struct opts *o, struct conn *cs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        cs[i].o = o;
        cs[i].lat_ns = calloc(o->requests, sizeof(uint64_t));
        if (!cs[i].lat_ns || lg_conn_open(&cs[i].c, "127.0.0.1", o->port, 0, 64 << 10) != 0 ||
            new_buffer(&cs[i], cs[i].x, sizeof cs[i].x) != 0 ||
            new_buffer(&cs[i], cs[i].y, sizeof cs[i].y) != 0) {
            fprintf(stderr, "small_runs: conn %u: %s%s\n", i, cs[i].err, cs[i].c.err);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    unsigned most = 1;
    for (unsigned i = 0; i < o.nconns; i++)
        most = o.conns[i] > most ? o.conns[i] : most;
    struct conn *cs = calloc(most, sizeof *cs);
    if (!cs || open_conns(&o, cs, most) != 0)
        return 1;
    int ok = 1;
    struct result r;
    double s0[PHASES], n0[PHASES], s1[PHASES], n1[PHASES], p50[MAX_LIST];
    for (unsigned i = 0; i < o.nconns; i++) {
        run_test(cs, o.conns[i], "healthz", 0, &r);
        print_result(&o, "healthz", o.conns[i], 0, &r);
        ok &= r.ok;
        int phases = o.conns[i] == 1 && read_phases(&cs[0], s0, n0) == 0;
        run_test(cs, o.conns[i], "run_axpy_4k", 1, &r);
        print_result(&o, "run_axpy_4k", o.conns[i], 1, &r);
        ok &= r.ok;
        if (phases && read_phases(&cs[0], s1, n1) == 0)
            print_phases(&o, s0, n0, s1, n1);
    }
    for (unsigned i = 0; i < o.nsteps; i++) {
        run_test(cs, 1, "pipeline", o.steps[i], &r);
        print_result(&o, "pipeline", 1, o.steps[i], &r);
        p50[i] = r.p50_us;
        ok &= r.ok;
    }
    if (o.nsteps > 1)
        print_slope(&o, p50, o.nsteps);
    if (o.batch) {
        run_test(cs, 1, "batch", o.batch, &r);
        print_result(&o, "batch", 1, o.batch, &r);
        ok &= r.ok;
    }
    for (unsigned i = 0; i < most; i++) {
        lg_conn_close(&cs[i].c);
        free(cs[i].lat_ns);
    }
    free(cs);
    return ok ? 0 : 1;
}
