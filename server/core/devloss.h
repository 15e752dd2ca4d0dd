#ifndef GHD_CORE_DEVLOSS_H
#define GHD_CORE_DEVLOSS_H

/* A lost device: a kernel that faulted (the CUDA context is
 * poisoned: every later call fails) or a run whose step could not be
 * stopped and still ran --run-timeout after the run's deadline (a kernel
 * cannot be pre-empted, so its stream never frees). Once lost, a device
 * stays lost until the process restarts: /readyz answers 503 with the
 * reason, every route that needs the device answers 503 at once, and with
 * --on-device-loss exit the process exits with GHD_EXIT_DEVICE_LOST after
 * the replies in flight. Thread-safe. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "base/err.h"

/* The exit status of --on-device-loss exit (documented in the README). */
#define GHD_EXIT_DEVICE_LOST 3

struct ghd_devloss {
    atomic_int lost;
    pthread_mutex_t lock; /* the reason */
    char reason[256];
};

void ghd_devloss_init(struct ghd_devloss *d);
void ghd_devloss_destroy(struct ghd_devloss *d);
/* Marks the device lost (printf-style reason). Returns 1 for the first
 * mark, 0 when it was lost already (the first reason stays). */
int ghd_devloss_mark(struct ghd_devloss *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 1 once lost (err, when not NULL, set to GHD_EDEVLOST and the reason),
 * else 0 (err untouched). */
int ghd_devloss_get(struct ghd_devloss *d, struct ghd_err *err);

#endif
