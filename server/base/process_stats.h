#ifndef GHD_BASE_PROCESS_STATS_H
#define GHD_BASE_PROCESS_STATS_H

#include <stdint.h>

/* What the standard Prometheus process_* families report, read from the
 * kernel at each scrape (Linux: getrusage, /proc/self). */
struct ghd_process_stats {
    double cpu_seconds;      /* user + system CPU time */
    uint64_t resident_bytes; /* resident set size */
    uint64_t virtual_bytes;  /* virtual memory size */
    uint64_t open_fds;       /* file descriptors open now */
    uint64_t max_fds;        /* RLIMIT_NOFILE's soft limit */
};

/* Fills *st; a value the kernel would not give stays 0. Returns 0, or -1
 * when /proc/self could not be read (the rest is still filled). */
int ghd_process_stats_get(struct ghd_process_stats *st);

#endif
