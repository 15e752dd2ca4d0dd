#ifndef GHD_DEVICE_HOST_IPC_H
#define GHD_DEVICE_HOST_IPC_H

/* CUDA IPC, simulated on the host backend for tests: a test "exports"
 * memory of its own process (the host backend's device memory is host
 * memory) as a 64-byte handle, and the host backend's ipc_open maps it, so
 * the region rules for device memory another process owns (its size, the
 * same handle twice, a handle whose allocation is gone, every open closed)
 * run where there is no GPU. Handles the test did not make are left to the
 * backend (GHD_ENOTSUP). Process-wide, thread-safe; compiled into test
 * builds only (GHD_TESTABLE, as host_fault.h). */

#ifdef GHD_TESTABLE

#include <stddef.h>

#define GHD_HOST_IPC_HANDLE_LEN 64

struct ghd_err;

/* Exports [ptr, ptr+size) as `handle`, as cudaIpcGetMemHandle does for an
 * allocation of `size` bytes. At most 16 exports live at once (asserted). */
void ghd_host_ipc_export(void *ptr, size_t size, unsigned char handle[GHD_HOST_IPC_HANDLE_LEN]);
/* The exporter frees the allocation: opening `handle` fails from now on.
 * pre: no open of it is left (as with cudaFree before the importer closes). */
void ghd_host_ipc_revoke(const unsigned char handle[GHD_HOST_IPC_HANDLE_LEN]);
/* Opens not yet closed, over all handles. */
long ghd_host_ipc_open_count(void);

/* The host backend's hooks (host.c): GHD_ENOTSUP for a handle no test made,
 * GHD_EUNPROC for a revoked one, else the pointer and the export's size. */
int ghd_host_ipc_open(const void *handle, size_t len, void **d_ptr, size_t *bytes,
                      struct ghd_err *error);
void ghd_host_ipc_close(void *d_ptr);

#endif /* GHD_TESTABLE */

#endif
