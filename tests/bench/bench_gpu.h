#ifndef GHD_TESTS_BENCH_GPU_H
#define GHD_TESTS_BENCH_GPU_H

/* What the benchmarks of user kernels and raw modules (bench_ukernels.c,
 * bench_modules.c) share: the CUDA device as a struct tk, the BENCH_MIB and
 * BENCH_REPS settings, a compiler on a fresh cache folder, and the median
 * device time of one kernel call. */
#include <jansson.h>
#include <stddef.h>

#include "kernel_fixture.h"
#include "kernels/user/compile.h"

struct bench_gpu {
    struct tk d;
    size_t mib;   /* BENCH_MIB (default 256): bytes per array, in MiB */
    int reps;     /* BENCH_REPS (default 20, at most 256) */
    char dir[64]; /* the compile cache folder; bench_gpu_end removes it */
    struct ghd_ucompiler_config cc;
    struct ghd_ucompiler *compiler;
};

/* Reads the settings, opens the CUDA device and starts a compiler on a new
 * cache folder made from `dir_template` (mkdtemp's trailing XXXXXX).
 * Returns 0, or the exit status: 77 without a CUDA device or NVRTC (after
 * printing "skipped: ..."), 1 on any other failure. */
int bench_gpu_start(struct bench_gpu *b, const char *dir_template);
/* A new compiler on the same cache folder, as a restarted server finds it
 * (only the disk cache). 0, or 1 when it does not start. */
int bench_gpu_restart_compiler(struct bench_gpu *b);
/* Two f32 buffers x and y of b->mib MiB each, holding the same uniform
 * values in [-1, 1). 0, or 1 (said on stderr) when they do not fit. */
int bench_gpu_arrays(struct bench_gpu *b, struct ghd_buffer **x, struct ghd_buffer **y);
/* The median over b->reps calls (after 3 warm-up calls) of kernel k's
 * device time in ms with `args` (stolen). When `result` is not NULL, it
 * gets the last call's result (a new reference). Exits on any failure. */
double bench_gpu_time_call(struct bench_gpu *b, const struct ghd_kernel *k, json_t *args,
                           json_t **result);
/* Frees the device and the compiler and removes the cache folder; returns
 * the exit status (0, or 1 when the folder stays). */
int bench_gpu_end(struct bench_gpu *b);

#endif
