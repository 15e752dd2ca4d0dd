/* The user kernel kind (kernels/kind.h): a user kernel's struct ghd_kernel
 * is the `base` of its struct ghd_ukernel, and each operation finds the
 * kernel back from it. Its calls are ucall.c's. */
#include "ukernel.h"

#include "base/list.h"
#include "kernels/kind.h"

static struct ghd_ukernel *user_of(const struct ghd_kernel *k)
{
    return ghd_container_of(k, struct ghd_ukernel, base);
}

static json_t *user_describe_new(const struct ghd_kernel *k)
{
    return ghd_ukernel_describe_new(user_of(k));
}

static int user_bind(const struct ghd_kernel *k, json_t *args, ghd_buffer_resolver resolve,
                     void *resolve_ctx, void **call, struct ghd_err *err)
{
    struct ghd_ucall *c = NULL;
    int rc = ghd_ucall_prepare_new(user_of(k), args, resolve, resolve_ctx, &c, err);
    *call = c;
    return rc;
}

static int user_launch(void *call, struct ghd_runtime *rt, struct ghd_stream *stream,
                       struct ghd_event *start, struct ghd_event *end, const atomic_int *stop,
                       json_t *result, struct ghd_err *err)
{
    return ghd_ucall_execute(call, rt, stream, start, end, stop, result, err);
}

static void user_signal_stop(void *call)
{
    ghd_ucall_signal_stop(call);
}

static int user_writes(const void *call, const void *owner)
{
    return ghd_ucall_writes(call, owner);
}

static void user_rebind(void *call, const void *owner, void *d_ptr)
{
    ghd_ucall_rebind(call, owner, d_ptr);
}

static void user_call_free(void *call)
{
    ghd_ucall_free(call);
}

/* k lives inside what it names: nothing of it is read once that may be freed. */
static void user_release(const struct ghd_kernel *k)
{
    ghd_ukernel_unref(user_of(k));
}

static const char *user_content_hash(const struct ghd_kernel *k, const char **field)
{
    const char *h = user_of(k)->hash;
    *field = "kernel_hash";
    return h[0] ? h : NULL;
}

static int user_visit(const struct ghd_kernel *k, const struct ghd_kernel_visitor *v, void *ctx)
{
    return v->user ? v->user(ctx, user_of(k)) : 0;
}

/* Tenants choose the kernels' names: "user" keeps them out of /metrics. */
const struct ghd_kernel_kind ghd_kernel_kind_user = {
    .metric_label = "user",
    .describe_new = user_describe_new,
    .bind = user_bind,
    .launch = user_launch,
    .signal_stop = user_signal_stop,
    .stoppable = ghd_ucall_stoppable,
    .writes = user_writes,
    .rebind = user_rebind,
    .call_free = user_call_free,
    .release = user_release,
    .content_hash = user_content_hash,
    .visit = user_visit,
};
