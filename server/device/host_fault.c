#include "host_fault.h"

#include <pthread.h>
#include <stdio.h>

#include "device.h"
#include "base/error.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static long countdown;
static enum ghd_host_fault armed;
static int lost;
static unsigned long generation; /* bumped by reset: stalled syncs return */

void ghd_host_fault_nth_sync(long n, enum ghd_host_fault fault)
{
    pthread_mutex_lock(&lock);
    countdown = n;
    armed = fault;
    pthread_mutex_unlock(&lock);
}

void ghd_host_fault_reset(void)
{
    pthread_mutex_lock(&lock);
    countdown = 0;
    armed = GHD_HOST_FAULT_NONE;
    lost = 0;
    generation++;
    pthread_cond_broadcast(&released);
    pthread_mutex_unlock(&lock);
}

int ghd_host_fault_sync(struct ghd_device *dev)
{
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (lost) {
        rc = GHD_EDEVICE; /* sticky, as a poisoned CUDA context is */
    } else if (armed != GHD_HOST_FAULT_NONE && --countdown == 0) {
        enum ghd_host_fault f = armed;
        armed = GHD_HOST_FAULT_NONE;
        if (f == GHD_HOST_FAULT_LOSE) {
            lost = 1;
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
        snprintf(dev->last_error, sizeof(dev->last_error),
                 "cudaErrorIllegalAddress (injected by ghd_host_fault_nth_sync)");
    return rc;
}

int ghd_host_fault_health(struct ghd_device *dev)
{
    pthread_mutex_lock(&lock);
    int l = lost;
    pthread_mutex_unlock(&lock);
    if (l)
        snprintf(dev->last_error, sizeof(dev->last_error),
                 "cudaErrorIllegalAddress (injected by ghd_host_fault_nth_sync)");
    return l ? GHD_EDEVICE : 0;
}
