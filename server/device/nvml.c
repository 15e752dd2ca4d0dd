#include "nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

/* The few NVML entry points used, declared here rather than taken from
 * nvml.h so that every build (CUDA or not) compiles this file; their ABI is
 * stable across driver releases. 0 is NVML_SUCCESS. */
typedef struct nvml_device *nvml_device_t;
struct nvml_utilization {
    unsigned gpu, memory;
};
static int (*p_init)(void);
static int (*p_by_pci)(const char *pci_bus_id, nvml_device_t *dev);
static int (*p_utilization)(nvml_device_t dev, struct nvml_utilization *u);
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    *(void **)&p_init = dlsym(lib, "nvmlInit_v2");
    *(void **)&p_by_pci = dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&p_utilization = dlsym(lib, "nvmlDeviceGetUtilizationRates");
    if (p_init && p_by_pci && p_utilization && p_init() == 0)
        loaded = 1; /* kept loaded and initialised for the process's life */
    else
        dlclose(lib);
}

int ghd_nvml_utilization(const char *pci_bus_id, unsigned *gpu_percent)
{
    pthread_once(&once, load);
    nvml_device_t dev;
    struct nvml_utilization u;
    if (!loaded || !pci_bus_id || !pci_bus_id[0] || p_by_pci(pci_bus_id, &dev) != 0 ||
        p_utilization(dev, &u) != 0)
        return -1;
    *gpu_percent = u.gpu;
    return 0;
}
