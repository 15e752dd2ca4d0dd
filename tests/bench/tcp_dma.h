/* The device side of tcp_ceiling: pinned host memory and per-thread copy lanes, so that
 * the loopback ceiling can be measured with the DMA an HTTP transfer adds (each chunk a
 * reader fills copied to the device, each chunk a writer sends first copied from it), or
 * with a copy loop running beside it at full speed.
 *
 * A lane is one non-blocking stream, a device buffer and two events, one per slot (the
 * two chunks a transfer alternates between, as gpuhttpd's uploads and downloads do).
 * Waits block in the driver (cudaDeviceScheduleBlockingSync, as the server's CUDA
 * backend sets) instead of spinning, so they cost no CPU while the copy runs.
 *
 * Built without CUDA, td_init fails with "built without CUDA" and nothing else may be
 * called. Functions return 0, or -1 with a sentence in err.
 */
#ifndef GHD_TESTS_BENCH_TCP_DMA_H
#define GHD_TESTS_BENCH_TCP_DMA_H

#include <stdbool.h>
#include <stddef.h>

enum td_dir { TD_H2D, TD_D2H };

struct td_lane;

/* Selects the device and creates its context. */
int td_init(char *err, size_t cap);

/* How page-locked host memory is made: cudaHostAlloc (the driver's 4 KiB pages);
 * cudaHostAllocWriteCombined (not cached by the CPU, not snooped by the device's
 * reads: for memory the CPU only writes); or 2 MiB-aligned anonymous memory advised
 * for transparent huge pages, then cudaHostRegister (tool_huge.h). */
enum td_host_kind { TD_HOST_PINNED, TD_HOST_WRITE_COMBINED, TD_HOST_HUGE_PAGES };

/* Page-locked host memory of n bytes, touched once; NULL with err on failure. */
void *td_host_alloc(size_t n, enum td_host_kind kind, char *err, size_t cap);
/* Frees what td_host_alloc(n, kind) returned; NULL does nothing. */
void td_host_free(void *p, size_t n, enum td_host_kind kind);

/* A lane with a device buffer of dev_bytes bytes. */
int td_lane_new(size_t dev_bytes, struct td_lane **out, char *err, size_t cap);
void td_lane_free(struct td_lane *lane);

/* Queues a copy of n bytes between host and the lane's device buffer at dev_off, then
 * marks the slot (0 or 1) as done when it completes.
 * pre: host is from td_host_alloc; dev_off + n <= the lane's dev_bytes. */
int td_copy(struct td_lane *lane, enum td_dir dir, size_t dev_off, void *host, size_t n, int slot,
            char *err, size_t cap);

/* Waits until the slot's last copy is done (at once when it has none). */
int td_wait(struct td_lane *lane, int slot, char *err, size_t cap);

#endif
