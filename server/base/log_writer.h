#ifndef GHD_BASE_LOG_WRITER_H
#define GHD_BASE_LOG_WRITER_H

#include <stddef.h>

/* Where log lines go: straight to stderr, one write(2) a line, until
 * ghd_log_writer_start; from then on into a ring that one background thread
 * writes out in batches. Under load many request threads appending to one
 * file each took the file's lock in the kernel: at 64 connections that doubled
 * the p99 of a request pair (tests/bench/RESULTS.md, run 16). Lines keep their
 * order; a full ring makes the caller wait for room, so none is lost. */

/* Starts the writer thread (with the caller's signal mask); flushes at exit. */
int ghd_log_writer_start(void);
/* Writes out what the ring holds and stops the thread; lines go straight to
 * stderr again. */
void ghd_log_writer_stop(void);
/* One line, without its newline. */
void ghd_log_writer_put(const char *line, size_t len);

#endif
