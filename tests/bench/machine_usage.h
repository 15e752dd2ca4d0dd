/* What the whole machine did over a timed part, for the benchmark tools (loadgen,
 * tcp_ceiling): the busy and stolen share of all cores (from /proc/stat), and the mean
 * count of runnable threads (the running count of /proc/loadavg, sampled every 5 ms by
 * a thread of its own). A transfer that keeps every core busy is bound by CPU time per
 * byte; one that leaves cores idle waits on something else.
 */
#ifndef GHD_TESTS_BENCH_MACHINE_USAGE_H
#define GHD_TESTS_BENCH_MACHINE_USAGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_machine {
    bool ok; /* both /proc/stat reads worked */
    unsigned long long busy0, steal0, total0;
    unsigned long long busy, steal, total; /* jiffies over the timed part */
    pthread_t sampler;
    bool sampling;
    atomic_bool stop;
    double runnable_sum;
    unsigned long samples;
};

/* Reads /proc/stat and starts the sampler. */
void lg_machine_start(struct lg_machine *m);

/* Stops the sampler and reads /proc/stat again. */
void lg_machine_stop(struct lg_machine *m);

/* JSON members, each followed by a comma: "cores", "machine_busy" and "machine_steal"
 * (shares of all cores' time, 0..1), "machine_cpu_s" (busy CPU seconds), and
 * "runnable_mean" (threads that were running or waiting for a core, the sampler not
 * counted); -1 for a figure that could not be read. */
void lg_machine_json(const struct lg_machine *m, char *out, size_t cap);

/* The same as one line of text. */
void lg_machine_text(const struct lg_machine *m, char *out, size_t cap);

/* This process's user + system CPU seconds so far (all its threads). */
double lg_process_cpu_s(void);

#endif
