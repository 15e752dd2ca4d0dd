/* What kernel.h promises of every kernel, through its kind's table
 * (kind.h): the registry's, the call's and the describer's public
 * functions, none of which asks which kind a kernel is. */
#include "kind.h"

#include <stdlib.h>

#include "registry.h"
#include "base/error.h"

struct ghd_kernel_call {
    const struct ghd_kernel_kind *kind;
    void *impl;             /* the kind's own call */
    const atomic_int *stop; /* ghd_kernel_call_set_stop's, or NULL */
};

/* The defs_*.c tables leave the kind out: a built-in. */
static const struct ghd_kernel_kind *kind_of(const struct ghd_kernel *k)
{
    return k->kind ? k->kind : &ghd_kernel_kind_builtin;
}

const char *ghd_kernel_metric_label(const struct ghd_kernel *k)
{
    const char *label = kind_of(k)->metric_label;
    return label ? label : k->name;
}

json_t *ghd_kernel_describe_new(const struct ghd_kernel *k)
{
    return kind_of(k)->describe_new(k);
}

void ghd_kernel_unref(const struct ghd_kernel *k)
{
    if (k && kind_of(k)->release)
        kind_of(k)->release(k);
}

const char *ghd_kernel_content_hash(const struct ghd_kernel *k, const char **field)
{
    const struct ghd_kernel_kind *kind = kind_of(k);
    *field = "kernel_hash";
    return kind->content_hash ? kind->content_hash(k, field) : NULL;
}

int ghd_kernel_visit(const struct ghd_kernel *k, const struct ghd_kernel_visitor *v, void *ctx)
{
    const struct ghd_kernel_kind *kind = kind_of(k);
    return kind->visit ? kind->visit(k, v, ctx) : 0;
}

int ghd_kernel_call_prepare_new(const struct ghd_kernel *k, json_t *args,
                                ghd_buffer_resolver resolve, void *resolve_ctx,
                                struct ghd_kernel_call **out, struct ghd_err *err)
{
    *out = NULL;
    if (!json_is_object(args))
        return ghd_err_set(err, GHD_EINVAL, "args must be a JSON object");
    struct ghd_kernel_call *call = calloc(1, sizeof(*call));
    if (!call)
        return GHD_ENOHOSTMEM;
    call->kind = kind_of(k);
    int rc = call->kind->bind(k, args, resolve, resolve_ctx, &call->impl, err);
    if (rc) {
        free(call);
        return rc;
    }
    *out = call;
    return 0;
}

int ghd_kernel_call_execute(struct ghd_kernel_call *call, struct ghd_runtime *rt,
                            struct ghd_stream *stream, json_t *result, struct ghd_err *err)
{
    return ghd_kernel_call_execute_timed(call, rt, stream, NULL, NULL, result, err);
}

int ghd_kernel_call_execute_timed(struct ghd_kernel_call *call, struct ghd_runtime *rt,
                                  struct ghd_stream *stream, struct ghd_event *start,
                                  struct ghd_event *end, json_t *result, struct ghd_err *err)
{
    return call->kind->launch(call->impl, rt, stream, start, end, call->stop, result, err);
}

void ghd_kernel_call_set_stop(struct ghd_kernel_call *call, const atomic_int *stop)
{
    call->stop = stop;
}

void ghd_kernel_call_signal_stop(struct ghd_kernel_call *call)
{
    if (call->kind->signal_stop)
        call->kind->signal_stop(call->impl);
}

int ghd_kernel_call_stoppable(const struct ghd_kernel_call *call, enum ghd_backend_kind kind)
{
    return call->kind->stoppable(kind);
}

int ghd_kernel_call_writes(const struct ghd_kernel_call *call, const void *owner)
{
    return call->kind->writes(call->impl, owner);
}

void ghd_kernel_call_rebind(struct ghd_kernel_call *call, const void *owner, void *d_ptr)
{
    call->kind->rebind(call->impl, owner, d_ptr);
}

int ghd_kernel_call_graphable(const struct ghd_kernel_call *call)
{
    return call->kind->graphable && call->kind->graphable(call->impl);
}

void ghd_kernel_call_key(const struct ghd_kernel_call *call,
                         uint64_t out[GHD_KERNEL_CALL_KEY_WORDS])
{
    call->kind->key(call->impl, out); /* pre: graphable */
}

int ghd_kernel_call_launch(struct ghd_kernel_call *call, struct ghd_runtime *rt,
                           struct ghd_stream *stream, json_t *result, struct ghd_err *err)
{
    if (!ghd_kernel_call_graphable(call))
        return ghd_err_set(err, GHD_ENOTSUP, "this kernel cannot be queued without a wait");
    return call->kind->queue(call->impl, rt, stream, result, err);
}

void ghd_kernel_call_free(struct ghd_kernel_call *call)
{
    if (!call)
        return;
    call->kind->call_free(call->impl);
    free(call);
}
