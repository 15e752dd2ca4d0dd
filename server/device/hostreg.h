#ifndef GHD_DEVICE_HOSTREG_H
#define GHD_DEVICE_HOSTREG_H

#include <stddef.h>

#include "device.h"

/* Direct copies to the device from host memory that the HTTP layer owns
 * (libmicrohttpd's per-connection read buffer), so the bytes skip the extra
 * memcpy through the staging ring. The memory is
 * page-locked with the backend's host_register. When registration fails (for
 * example because a neighbour already locked an overlapping page) callers fall
 * back to the staging ring; nothing here is required for correctness. */

/* Whether [p, p+n) lies in memory this thread has page-locked for `dev`. On
 * first sight it locks the pages of [p, p+n), growing an overlapping locked
 * range to the union, and keeps them locked until the thread exits (one
 * connection per thread: the read buffer stays put for the connection's
 * life). Returns 1 when a direct copy is possible, else 0. */
int ghd_hostreg_thread_covers(struct ghd_device *dev, const void *p, size_t n);

#endif
