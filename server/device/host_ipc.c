#include "host_ipc.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/error.h"

/* A handle: this magic, then the export's slot and serial number. */
static const char MAGIC[16] = "ghd-host-ipc-v1";

struct export {
    void *ptr;
    size_t size;
    uint64_t serial; /* 0: the slot is free */
    long opens;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct export exports[16];
static uint64_t next_serial = 1;
static long open_count;

struct handle_view {
    char magic[16];
    uint32_t slot;
    uint64_t serial;
};

void ghd_host_ipc_export(void *ptr, size_t size, unsigned char handle[GHD_HOST_IPC_HANDLE_LEN])
{
    _Static_assert(sizeof(struct handle_view) <= GHD_HOST_IPC_HANDLE_LEN, "a handle holds it");
    pthread_mutex_lock(&lock);
    uint32_t i = 0;
    while (i < 16 && exports[i].serial != 0)
        i++;
    GHD_ASSERT(i < 16);
    exports[i] = (struct export){ptr, size, next_serial++, 0};
    struct handle_view v = {.slot = i, .serial = exports[i].serial};
    memcpy(v.magic, MAGIC, sizeof(MAGIC));
    pthread_mutex_unlock(&lock);
    memset(handle, 0, GHD_HOST_IPC_HANDLE_LEN);
    memcpy(handle, &v, sizeof(v));
}

/* The live export a handle names, or NULL. pre: lock held. */
static struct export *find_locked(const void *handle, size_t len, int *ours)
{
    struct handle_view v;
    *ours = len == GHD_HOST_IPC_HANDLE_LEN && memcmp(handle, MAGIC, sizeof(MAGIC)) == 0;
    if (!*ours)
        return NULL;
    memcpy(&v, handle, sizeof(v));
    if (v.slot >= 16 || exports[v.slot].serial != v.serial)
        return NULL;
    return &exports[v.slot];
}

void ghd_host_ipc_revoke(const unsigned char handle[GHD_HOST_IPC_HANDLE_LEN])
{
    int ours;
    pthread_mutex_lock(&lock);
    struct export *e = find_locked(handle, GHD_HOST_IPC_HANDLE_LEN, &ours);
    GHD_ASSERT(e && e->opens == 0);
    e->serial = 0;
    pthread_mutex_unlock(&lock);
}

long ghd_host_ipc_open_count(void)
{
    pthread_mutex_lock(&lock);
    long n = open_count;
    pthread_mutex_unlock(&lock);
    return n;
}

int ghd_host_ipc_open(const void *handle, size_t len, void **d_ptr, size_t *bytes,
                      struct ghd_err *error)
{
    int ours;
    pthread_mutex_lock(&lock);
    struct export *e = find_locked(handle, len, &ours);
    if (e) {
        e->opens++;
        open_count++;
        *d_ptr = e->ptr;
        *bytes = e->size;
    }
    pthread_mutex_unlock(&lock);
    if (!ours)
        return GHD_ENOTSUP;
    if (!e) /* what CUDA answers for an allocation freed since its export */
        return ghd_err_set(error, GHD_EUNPROC,
                           "cudaIpcOpenMemHandle failed: cudaErrorInvalidValue (simulated)");
    return 0;
}

void ghd_host_ipc_close(void *d_ptr)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 16; i++)
        if (exports[i].serial != 0 && exports[i].ptr == d_ptr && exports[i].opens > 0) {
            exports[i].opens--;
            open_count--;
            break;
        }
    pthread_mutex_unlock(&lock);
}
