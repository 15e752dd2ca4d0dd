#ifndef GHD_KERNELS_USER_UCUDA_H
#define GHD_KERNELS_USER_UCUDA_H

/* The CUDA side of user kernels (kernels/user/cuda.c): a binding's code
 * generated, compiled by NVRTC for the device's architecture (through the
 * compile cache) and loaded, then launched. Without the CUDA backend these
 * report GHD_ENOTSUP (GHD_HAVE_NVRTC: the CUDA toolkit has NVRTC); the host backend never calls them. */
#include "ukernel.h"
#include "base/error.h"

/* One launch's device state: a reduction's scratch (partials, counter,
 * result), freed by ghd_ucuda_done once the stream has synchronized. */
struct ghd_ucuda_run {
    struct ghd_pool_block *scratch;
    void *d_result;
};

#ifdef GHD_HAVE_NVRTC
/* A word of page-locked host memory the device maps, for one launch's stop
 * flag (0: go, 1: stop, 2: a thread of the kernel stopped), or NULL when
 * every word is in use (that launch cannot be stopped). The host writes it
 * while the kernel runs; ghd_ucuda_launch passes it to the kernel. */
volatile int *ghd_ucuda_stop_word_acquire(void);
void ghd_ucuda_stop_word_release(volatile int *word);
/* Builds and loads the binding's code for rt's device once (under k's
 * lock): compiled for the device's architecture on its first use there (a
 * second device of the same architecture finds the compile in the cache). */
int ghd_ucuda_prepare(struct ghd_ukernel *k, struct ghd_ubinding *b, struct ghd_runtime *rt,
                      struct ghd_err *e);
/* Enqueues the kernel on `stream`. */
int ghd_ucuda_launch(struct ghd_ubinding *b, struct ghd_runtime *rt, struct ghd_stream *stream,
                     const struct ghd_uarg *args, uint64_t n, volatile int *stop_word,
                     struct ghd_ucuda_run *run, struct ghd_err *e);
/* The binding's build (on the first device that has it) in a 201's
 * "build" object: compile log, seconds, registers, shared memory, cache hit. */
void ghd_ucuda_report(const struct ghd_ubinding *b, json_t *build);
/* After the stream has synchronized: a reduction's value. */
int ghd_ucuda_result(struct ghd_ucuda_run *run, struct ghd_runtime *rt, union ghd_uval *acc,
                     struct ghd_err *e);
/* Frees the launch's scratch. */
void ghd_ucuda_done(struct ghd_ucuda_run *run, struct ghd_runtime *rt);
#else
static inline volatile int *ghd_ucuda_stop_word_acquire(void)
{
    return NULL;
}

static inline void ghd_ucuda_stop_word_release(volatile int *word)
{
    (void)word;
}

static inline int ghd_ucuda_prepare(struct ghd_ukernel *k, struct ghd_ubinding *b,
                                    struct ghd_runtime *rt, struct ghd_err *e)
{
    (void)k;
    (void)b;
    (void)rt;
    return ghd_err_set(e, GHD_ENOTSUP, "this build cannot compile user kernels for CUDA (no NVRTC)");
}

static inline int ghd_ucuda_launch(struct ghd_ubinding *b, struct ghd_runtime *rt,
                                   struct ghd_stream *stream, const struct ghd_uarg *args,
                                   uint64_t n, volatile int *stop_word, struct ghd_ucuda_run *run,
                                   struct ghd_err *e)
{
    (void)b;
    (void)rt;
    (void)stream;
    (void)args;
    (void)n;
    (void)stop_word;
    (void)run;
    return ghd_err_set(e, GHD_ENOTSUP, "this build cannot compile user kernels for CUDA (no NVRTC)");
}

static inline void ghd_ucuda_report(const struct ghd_ubinding *b, json_t *build)
{
    (void)b;
    (void)build;
}

static inline int ghd_ucuda_result(struct ghd_ucuda_run *run, struct ghd_runtime *rt,
                                   union ghd_uval *acc, struct ghd_err *e)
{
    (void)run;
    (void)rt;
    (void)acc;
    return ghd_err_set(e, GHD_ENOTSUP, "this build cannot compile user kernels for CUDA (no NVRTC)");
}

static inline void ghd_ucuda_done(struct ghd_ucuda_run *run, struct ghd_runtime *rt)
{
    (void)run;
    (void)rt;
}
#endif

#endif
