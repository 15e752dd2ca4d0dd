/* What the CUDA benchmark tools (pinned_ceiling, ipc_peer) share: a check
 * that names the failed call and exits, since a tool has nothing to
 * recover. Include after cuda_runtime_api.h. */
#ifndef GHD_TESTS_BENCH_TOOL_CUDA_H
#define GHD_TESTS_BENCH_TOOL_CUDA_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(expr)                                                                       \
    do {                                                                                  \
        cudaError_t err_ = (expr);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s failed at %s:%d: %s\n", #expr, __FILE__, __LINE__,        \
                    cudaGetErrorString(err_));                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#endif
