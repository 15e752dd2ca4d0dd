#include "host_fault.h"

#include <pthread.h>
#include <stdint.h>

#include "base/err.h"
#include "base/error.h"
#include "device.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static long countdown;
static enum ghd_host_fault armed;
static int armed_on = -1; /* the ordinal whose syncs count; -1: every device's */
static int lost[GHD_HOST_DEVICES_MAX];
/* What a lost device's detail says (a test looks for the CUDA error's name). */
#define INJECTED "cudaErrorIllegalAddress (injected by ghd_host_fault_nth_sync)"

static unsigned long generation; /* bumped by reset: stalled syncs return */
static long register_countdown;

void ghd_host_fault_nth_sync_on(int ordinal, long n, enum ghd_host_fault fault)
{
    pthread_mutex_lock(&lock);
    countdown = n;
    armed = fault;
    armed_on = ordinal;
    pthread_mutex_unlock(&lock);
}

void ghd_host_fault_nth_sync(long n, enum ghd_host_fault fault)
{
    ghd_host_fault_nth_sync_on(-1, n, fault);
}

void ghd_host_fault_reset(void)
{
    pthread_mutex_lock(&lock);
    countdown = 0;
    register_countdown = 0;
    armed = GHD_HOST_FAULT_NONE;
    armed_on = -1;
    for (int i = 0; i < GHD_HOST_DEVICES_MAX; i++)
        lost[i] = 0;
    generation++;
    pthread_cond_broadcast(&released);
    pthread_mutex_unlock(&lock);
}

/* The host backend opens ordinals 0 to GHD_HOST_DEVICES_MAX - 1 only. */
static int slot(const struct ghd_device *dev)
{
    GHD_ASSERT(dev->ordinal >= 0 && dev->ordinal < GHD_HOST_DEVICES_MAX);
    return dev->ordinal;
}

int ghd_host_fault_sync(struct ghd_device *dev, struct ghd_err *error)
{
    int rc = 0, d = slot(dev);
    pthread_mutex_lock(&lock);
    if (lost[d]) {
        rc = GHD_EDEVICE; /* sticky, as a poisoned CUDA context is */
    } else if (armed != GHD_HOST_FAULT_NONE && (armed_on < 0 || armed_on == d) &&
               --countdown == 0) {
        enum ghd_host_fault f = armed;
        armed = GHD_HOST_FAULT_NONE;
        if (f == GHD_HOST_FAULT_LOSE) {
            lost[d] = 1;
            rc = GHD_EDEVICE;
        } else {
            unsigned long g = generation;
            while (g == generation)
                pthread_cond_wait(&released, &lock);
            rc = GHD_EDEVICE;
        }
    }
    pthread_mutex_unlock(&lock);
    if (rc)
        ghd_err_set(error, rc, INJECTED);
    return rc;
}

int ghd_host_fault_poll(struct ghd_device *dev)
{
    int d = slot(dev);
    pthread_mutex_lock(&lock);
    int next = lost[d] ||
               (armed != GHD_HOST_FAULT_NONE && (armed_on < 0 || armed_on == d) && countdown == 1);
    pthread_mutex_unlock(&lock);
    return next;
}

int ghd_host_fault_health(struct ghd_device *dev, struct ghd_err *error)
{
    int d = slot(dev);
    pthread_mutex_lock(&lock);
    int l = lost[d];
    pthread_mutex_unlock(&lock);
    if (l)
        return ghd_err_set(error, GHD_EDEVICE, INJECTED);
    return 0;
}

void ghd_host_fault_nth_register(long n)
{
    pthread_mutex_lock(&lock);
    register_countdown = n;
    pthread_mutex_unlock(&lock);
}

/* The ranges registered now, as the CUDA driver keeps them. */
#define REGISTERED_MAX 4096
static struct {
    uintptr_t base, end;
} registered[REGISTERED_MAX];
static unsigned registered_count;
static long register_overlaps;

int ghd_host_fault_register(const void *h_ptr, size_t size, struct ghd_err *error)
{
    uintptr_t a = (uintptr_t)h_ptr, b = a + size;
    pthread_mutex_lock(&lock);
    int fail = register_countdown > 0 && --register_countdown == 0;
    int overlap = 0;
    for (unsigned i = 0; i < registered_count && !fail && !overlap; i++)
        overlap = a < registered[i].end && registered[i].base < b;
    if (overlap)
        register_overlaps++;
    else if (!fail && registered_count < REGISTERED_MAX) {
        registered[registered_count].base = a;
        registered[registered_count++].end = b;
    }
    pthread_mutex_unlock(&lock);
    if (fail)
        return ghd_err_set(error, GHD_EDEVICE,
                           "cudaErrorMemoryAllocation (injected by ghd_host_fault_nth_register)");
    if (overlap)
        return ghd_err_set(error, GHD_EDEVICE, "cudaErrorHostMemoryAlreadyRegistered (the "
                                               "host backend refuses overlaps as CUDA does)");
    return 0;
}

void ghd_host_fault_unregister(const void *h_ptr)
{
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < registered_count; i++)
        if (registered[i].base == (uintptr_t)h_ptr) {
            registered[i] = registered[--registered_count];
            break;
        }
    pthread_mutex_unlock(&lock);
}

long ghd_host_fault_register_overlaps(void)
{
    pthread_mutex_lock(&lock);
    long n = register_overlaps;
    pthread_mutex_unlock(&lock);
    return n;
}
