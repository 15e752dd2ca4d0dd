/* Small helpers shared by the benchmark tools (loadgen, tcp_ceiling, mhd_static). */
#ifndef GHD_TESTS_BENCH_TOOL_UTIL_H
#define GHD_TESTS_BENCH_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Parses a byte count with an optional binary suffix: 4096, 64K, 1M, 1G, 1GiB.
 * Returns 0, or -1 when s is not such a count. */
int lg_parse_size(const char *s, uint64_t *out);

/* Sets the socket's SO_SNDBUF and SO_RCVBUF to `bytes` each; 0 or less leaves
 * the kernel's autotuning. */
void lg_set_sockbuf(int fd, int bytes);

/* Seconds on the monotonic clock. */
double lg_now_s(void);

/* Copies s into out (cap bytes) as the inside of a JSON string, truncating. */
void lg_json_escape(char *out, size_t cap, const char *s);

#endif
