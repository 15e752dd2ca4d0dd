/* The load generator's shared state: options, the per-connection workers, and the
 * pieces that the bulk modes (loadgen.c) and the small-request mode (loadgen_small.c)
 * both use. Worker functions return 0, or -1 with a sentence in w->err.
 */
#ifndef GHD_TESTS_BENCH_LOADGEN_H
#define GHD_TESTS_BENCH_LOADGEN_H

#include "loadgen_http.h"
#include "loadgen_pattern.h"
#include "machine_usage.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum mode { MODE_UPLOAD, MODE_DOWNLOAD, MODE_SMALL };
enum small_test { SMALL_HEALTHZ, SMALL_ALLOC, SMALL_PUT, SMALL_RUN, SMALL_COUNT };
#define SMALL_BYTES 4096

struct options {
    const char *host;
#define LG_PORTS_MAX 16
    int ports[LG_PORTS_MAX]; /* connection i talks to ports[i % nports] */
    unsigned nports;
    unsigned conns;
    uint64_t bytes;
    enum mode mode;
    bool json;
    unsigned timeout_s;
    int sockbuf;
    size_t recv_buf;
    size_t send_chunk;
    uint64_t pattern_len; /* bulk bodies repeat a pattern of this many bytes */
    bool compare; /* verify byte for byte */
    bool hash;    /* verify by checksum */
    unsigned requests;
    double duration_s;
    unsigned small_tests; /* bit per enum small_test */
    const char *put_path; /* upload to this path, no buffer API, no verification */
    const char *get_path; /* download from this path, no buffer API, no verification */
    const char *label;
    pid_t server_pid;      /* when set, sample its CPU time and peak RSS around the timed part */
    char auth_header[320]; /* "Authorization: Bearer <token>\r\n" with --token, else "" */
    bool direct; /* after its first buffer, a connection talks to that buffer's owner */
};

struct small_result {
    uint64_t *latency_ns;
    size_t count;
    double t_start;
    double t_end;
    bool failed;
    char err[320]; /* why, when failed */
};

/* The server's CPU time and peak RSS over the timed part, read from /proc; this
 * process's CPU time and the whole machine's over the same part. */
struct server_usage {
    bool cpu_ok;
    double cpu_before_s;
    double cpu_after_s;
    bool rss_reset; /* the peak was reset at the start, so it covers the timed part only */
    long peak_rss_kib;
    double client_cpu_before_s;
    double client_cpu_after_s;
    struct lg_machine machine;
};

struct shared {
    const struct options *opt;
    pthread_barrier_t barrier;
    struct lg_pattern pattern;
    struct server_usage usage;
};

struct worker {
    unsigned index;
    struct shared *shared;
    pthread_t thread;
    struct lg_conn conn;
    bool conn_open;
    int direct_port; /* --direct: the owner's port once known, else 0 */
    char id[128];
    char small_id[128];
    double t_start;
    double t_end;
    uint64_t moved;
    bool failed;
    char err[320];
    bool bytes_ok;
    uint64_t checksum_want;
    uint64_t checksum_got;
    struct small_result small[SMALL_COUNT];
};

/* ---- loadgen_worker.c: one connection's requests --------------------------------- */

/* Records "conn N: what: <the connection's error>" in w->err and marks the connection
 * for reopening; returns -1. */
int lg_worker_fail(struct worker *w, const char *what);

/* Opens the connection, or reopens it after the server asked to close it. */
int lg_worker_connect(struct worker *w);

/* Reads a response and fails unless its status is in [lo, hi]; the body lands in text. */
int lg_expect_status(struct worker *w, const char *what, int lo, int hi, struct lg_response *resp,
                     struct lg_text *text);

/* POST /v1/buffers {"size":size}; the new buffer's id lands in id. */
int lg_create_buffer(struct worker *w, uint64_t size, char *id, size_t id_cap);
int lg_delete_buffer(struct worker *w, const char *id);

/* PUTs length bytes of this connection's pattern stream to path. */
int lg_put_stream(struct worker *w, const char *path, uint64_t length);

/* GETs path, expecting length bytes; when check is true, verifies them against this
 * connection's stream (per the options) and records the outcome in w->bytes_ok. */
int lg_get_stream(struct worker *w, const char *path, uint64_t length, bool check);

/* Runs fn unless this worker already failed, then waits for the other workers. */
void lg_step(struct worker *w, int (*fn)(struct worker *));

/* Like lg_step; then one thread runs hook while the others wait for it. */
void lg_step_then(struct worker *w, int (*fn)(struct worker *), void (*hook)(struct shared *));

/* The first worker that failed or moved wrong bytes, or NULL. */
const struct worker *lg_first_failure(const struct worker *workers, unsigned n);

/* ---- loadgen_proc.c: the server's CPU time and peak RSS, from /proc --------------- */

/* Reset the server's peak RSS and read its CPU time (start), read both again (end);
 * the same for this process's CPU time and the machine's. */
void lg_usage_mark_start(struct shared *shared);
void lg_usage_mark_end(struct shared *shared);

/* The usage as JSON members each followed by a comma, or as text lines; the server's
 * part only when a server pid was given. */
void lg_format_usage(const struct options *opt, const struct server_usage *u, uint64_t bytes,
                     char *out, size_t cap);

/* ---- loadgen_small.c: the small-request mode --------------------------------------- */

void *lg_small_main(void *arg); /* a worker's thread */
int lg_report_small(const struct options *opt, const struct worker *w);

#endif
