/* The raw function kind (kernels/kind.h): a raw module's function's struct
 * ghd_kernel is the `base` of its struct ghd_rfunc. Its calls are
 * rcall.c's; a kernel reference held on a function is one on its module. */
#include "module.h"

#include "base/list.h"
#include "kernels/kind.h"

static struct ghd_rfunc *func_of(const struct ghd_kernel *k)
{
    return ghd_container_of(k, struct ghd_rfunc, base);
}

/* args: the launch (grid, block, shared_mem, args). */
static int raw_bind(const struct ghd_kernel *k, json_t *args, ghd_buffer_resolver resolve,
                    void *resolve_ctx, void **call, struct ghd_err *err)
{
    struct ghd_rcall *c = NULL;
    int rc = ghd_rcall_prepare_new(func_of(k), args, resolve, resolve_ctx, &c, err);
    *call = c;
    return rc;
}

/* A raw function runs to its end once started: `stop` is not looked at. */
static int raw_launch(void *call, struct ghd_runtime *rt, struct ghd_stream *stream,
                      struct ghd_event *start, struct ghd_event *end, const atomic_int *stop,
                      json_t *result, struct ghd_err *err)
{
    (void)stop;
    return ghd_rcall_execute(call, rt, stream, start, end, result, err);
}

static int raw_stoppable(enum ghd_backend_kind kind)
{
    (void)kind;
    return 0;
}

static int raw_writes(const void *call, const void *owner)
{
    return ghd_rcall_writes(call, owner);
}

static void raw_rebind(void *call, const void *owner, void *d_ptr)
{
    ghd_rcall_rebind(call, owner, d_ptr);
}

static void raw_call_free(void *call)
{
    ghd_rcall_free(call);
}

static void raw_release(const struct ghd_kernel *k)
{
    ghd_rmodule_unref(func_of(k)->module);
}

static const char *raw_content_hash(const struct ghd_kernel *k, const char **field)
{
    const char *h = func_of(k)->module->hash;
    *field = "module_hash";
    return h[0] ? h : NULL;
}

/* Tenants choose the modules' names: "raw" keeps them out of /metrics. */
const struct ghd_kernel_kind ghd_kernel_kind_raw = {
    .metric_label = "raw",
    .describe_new = ghd_kernel_builtin_describe_new, /* its name and doc; no parameters */
    .bind = raw_bind,
    .launch = raw_launch,
    .stoppable = raw_stoppable,
    .writes = raw_writes,
    .rebind = raw_rebind,
    .call_free = raw_call_free,
    .release = raw_release,
    .content_hash = raw_content_hash,
};
