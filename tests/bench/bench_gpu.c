#include "bench_gpu.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench_stats.h"

int bench_gpu_start(struct bench_gpu *b, const char *dir_template)
{
    const char *e;
    b->mib = (e = getenv("BENCH_MIB")) && *e ? strtoul(e, NULL, 10) : 256;
    b->reps = 20;
    if ((e = getenv("BENCH_REPS")) && *e)
        b->reps = atoi(e) > 0 && atoi(e) <= 256 ? atoi(e) : 20;
    if (tk_init(&b->d, GHD_BACKEND_CUDA) != 0) {
        printf("skipped: no CUDA device (%s)\n", b->d.err.detail);
        return 77;
    }
    snprintf(b->dir, sizeof(b->dir), "%s", dir_template);
    if (!mkdtemp(b->dir))
        return 1;
    b->cc = (struct ghd_ucompiler_config){
        .cache_dir = b->dir, .cache_max_bytes = 1 << 30, .workers = 2, .queue = 16};
    struct ghd_err err = {0};
    if (ghd_ucompiler_new(&b->cc, &b->compiler, &err) != 0) {
        printf("skipped: %s\n", err.detail);
        return 77;
    }
    return 0;
}

int bench_gpu_restart_compiler(struct bench_gpu *b)
{
    ghd_ucompiler_free(b->compiler);
    return ghd_ucompiler_new(&b->cc, &b->compiler, NULL) != 0;
}

int bench_gpu_arrays(struct bench_gpu *b, struct ghd_buffer **x, struct ghd_buffer **y)
{
    size_t bytes = b->mib << 20;
    *x = tk_buf(&b->d, bytes);
    *y = tk_buf(&b->d, bytes);
    float *h = *x && *y ? malloc(bytes) : NULL;
    if (!h) {
        fprintf(stderr, "cannot allocate 2 x %zu MiB\n", b->mib);
        return 1;
    }
    for (size_t i = 0; i < bytes / 4; i++)
        h[i] = (float)tk_uniform(&b->d, -1, 1);
    tk_upload(&b->d, *x, h, bytes);
    tk_upload(&b->d, *y, h, bytes);
    free(h);
    return 0;
}

double bench_gpu_time_call(struct bench_gpu *b, const struct ghd_kernel *k, json_t *args,
                           json_t **result)
{
    struct tk *d = &b->d;
    const struct ghd_device_ops *ops = d->rt.dev.ops;
    struct ghd_kernel_call *call;
    struct ghd_event *start, *end;
    double v[256];
    if (ops->event_new(&d->rt.dev, &start, &d->err) || ops->event_new(&d->rt.dev, &end, &d->err) ||
        ghd_kernel_call_prepare_new(k, args, tk_resolve, d, &call, &d->err)) {
        fprintf(stderr, "%s: %s\n", ghd_kernel_name(k), d->err.detail);
        exit(1);
    }
    json_decref(args);
    for (int i = -3; i < b->reps; i++) {
        json_t *res = json_object();
        float ms = -1;
        if (ghd_kernel_call_execute_timed(call, &d->rt, d->stream, start, end, res, &d->err) ||
            ops->event_elapsed(&d->rt.dev, start, end, &ms, &d->err)) {
            fprintf(stderr, "%s: %s\n", ghd_kernel_name(k), d->err.detail);
            exit(1);
        }
        if (i >= 0)
            v[i] = ms;
        if (result && i == b->reps - 1)
            *result = res;
        else
            json_decref(res);
    }
    ghd_kernel_call_free(call);
    ops->event_free(&d->rt.dev, start);
    ops->event_free(&d->rt.dev, end);
    return bench_median(v, b->reps);
}

int bench_gpu_end(struct bench_gpu *b)
{
    tk_destroy(&b->d);
    ghd_ucompiler_free(b->compiler);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b->dir);
    return system(cmd) == 0 ? 0 : 1;
}
