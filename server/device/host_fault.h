#ifndef GHD_DEVICE_HOST_FAULT_H
#define GHD_DEVICE_HOST_FAULT_H

/* Test-only fault injection for the host backend, like ghd_pool_fail_nth:
 * it lets the device-loss path (core/devloss.h) run where no kernel can
 * fault. Process-wide, as a CUDA context is per process and device: a
 * fault armed for one simulated device (--host-devices) loses that device
 * alone, whichever service in the process opened it. Compiled into test
 * builds only (GHD_TESTABLE, as ghd_pool_fail_nth): the product's host
 * backend syncs and checks its health without asking it. */

#ifdef GHD_TESTABLE

#include <stddef.h>

enum ghd_host_fault {
    GHD_HOST_FAULT_NONE,
    GHD_HOST_FAULT_LOSE,  /* the sync fails like a sticky CUDA error; health fails after */
    GHD_HOST_FAULT_STALL, /* the sync blocks until ghd_host_fault_reset (a spinning kernel) */
};

/* The n-th sync from now (1 = the next), of a stream or an event, on any
 * device does `fault`
 * (LOSE: to the device that sync was on). */
void ghd_host_fault_nth_sync(long n, enum ghd_host_fault fault);
/* The n-th host_register from now (1 = the next) fails, as cudaHostRegister
 * does when the host cannot page-lock the range. */
void ghd_host_fault_nth_register(long n);
/* The same, counting only the syncs on simulated device `ordinal`. */
void ghd_host_fault_nth_sync_on(int ordinal, long n, enum ghd_host_fault fault);
/* Clears every fault: stalled syncs return (with an error), health is good again. */
void ghd_host_fault_reset(void);

/* The host backend's hooks (host.c). */
struct ghd_device;
struct ghd_err;
int ghd_host_fault_sync(struct ghd_device *dev, struct ghd_err *error);
int ghd_host_fault_health(struct ghd_device *dev, struct ghd_err *error);
/* A wait for an event is a sync as a stream's is (the wait for a kernel
 * queued without one: an injected fault or stall happens there alike); a
 * poll says "not ended yet" (1) while the next sync on `dev` would fail or
 * stall, else 0. */
int ghd_host_fault_poll(struct ghd_device *dev);
/* host_register and host_unregister: like cudaHostRegister, a range that
 * overlaps one registered before is refused (as
 * cudaErrorHostMemoryAlreadyRegistered), and counted. */
int ghd_host_fault_register(const void *h_ptr, size_t size, struct ghd_err *error);
void ghd_host_fault_unregister(const void *h_ptr);
/* Registrations refused for overlapping a registered range, since the start. */
long ghd_host_fault_register_overlaps(void);

#endif /* GHD_TESTABLE */

#endif
