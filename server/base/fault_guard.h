#ifndef GHD_BASE_FAULT_GUARD_H
#define GHD_BASE_FAULT_GUARD_H

#include <stddef.h>

/* CPU access to memory another process controls (a client's shared-memory
 * segment, mapped by the server) faults with SIGBUS when the client shrinks
 * the file under the mapping. A guarded call turns such a fault inside one
 * address range into a return value instead of a crash: a thread-local
 * sigsetjmp point that the SIGBUS handler jumps back to. Faults outside the
 * range, or on threads with no guard active, get the action they had before
 * (the default: the process dies, as it should for a bug).
 *
 * The guarded function must hold no lock and own no allocation it would leak
 * when cut short at any point: a plain copy. Guards do not nest. */

/* Runs fn(ctx) and returns what it returns; when it touches [lo, lo+n) and
 * that raises SIGBUS, it is cut short, *faulted is set to 1 and the return
 * value is 0. *faulted is 0 otherwise. */
int ghd_fault_guard_run(const void *lo, size_t n, int (*fn)(void *ctx), void *ctx,
                        int *faulted);

#endif
