/* Grid sizing, with the multiprocessor count of each device cached. */
#include "common.cuh"

#include <atomic>

namespace ghd {

static std::atomic<int> sm_counts[64];

unsigned grid_for(const ghd_device *dev, uint64_t items)
{
    int ord = dev->ordinal >= 0 && dev->ordinal < 64 ? dev->ordinal : 0;
    int sms = sm_counts[ord].load(std::memory_order_relaxed);
    if (sms == 0) {
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev->ordinal) !=
                cudaSuccess ||
            sms <= 0) {
            (void)cudaGetLastError();
            sms = 132;
        }
        sm_counts[ord].store(sms, std::memory_order_relaxed);
    }
    uint64_t need = (items + kThreads - 1) / kThreads;
    uint64_t cap = (uint64_t)sms * (2048 / kThreads);
    uint64_t blocks = need < cap ? need : cap;
    return blocks ? (unsigned)blocks : 1u;
}

} // namespace ghd
