#ifndef GHD_DEVICE_NVML_H
#define GHD_DEVICE_NVML_H

/* GPU utilisation from NVML, which the NVIDIA driver installs. It is
 * loaded with dlopen at the first call, so the binary has no link-time
 * dependency on it and runs where it is absent (the host backend, a
 * container without the driver's libraries). */

/* The percentage of the last sample period in which a kernel ran on the
 * GPU at `pci_bus_id` ("0000:3b:00.0", as CUDA names it). Returns 0, or -1
 * when NVML or the device is not available. Thread-safe. */
int ghd_nvml_utilization(const char *pci_bus_id, unsigned *gpu_percent);

#endif
