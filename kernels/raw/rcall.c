/* A call of a raw module's function: the launch shape checked against the
 * function's and the device's limits, the arguments packed and matched
 * against its parameter layout, each buffer (a view; the run holds the
 * reference) with the access the client declared (default inout), which
 * orders the run against others (run.c's conflicts: a writer waits for and
 * is waited for by every other user of the buffer). What the kernel really
 * touches cannot be checked: that is why raw modules are for trusted
 * tenants only. */
#include "module.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/error.h"

struct ghd_rcall {
    struct ghd_rfunc *f;
    struct ghd_raw_shape shape;
    struct ghd_raw_pack pack;
    const void *owner[GHD_RAW_MAX_ARGS]; /* each buffer once */
    const void *arg_owner[GHD_RAW_MAX_ARGS]; /* per argument; NULL: not a buffer */
    unsigned access[GHD_RAW_MAX_ARGS];   /* per buffer, every argument's together */
    size_t nbuf;
};

/* Notes a buffer once, however many arguments name it, with the union of
 * their accesses. */
static void note(struct ghd_rcall *c, const void *owner, unsigned access)
{
    for (size_t i = 0; i < c->nbuf; i++)
        if (c->owner[i] == owner) {
            c->access[i] |= access;
            return;
        }
    c->owner[c->nbuf] = owner;
    c->access[c->nbuf++] = access;
}

int ghd_rcall_prepare_new(struct ghd_rfunc *f, json_t *launch, ghd_buffer_resolver resolve,
                          void *resolve_ctx, struct ghd_rcall **out, struct ghd_err *err)
{
    *out = NULL;
    struct ghd_rcall *c = calloc(1, sizeof(*c));
    if (!c)
        return GHD_ENOHOSTMEM;
    c->f = f;
    const struct ghd_rmodule *m = f->module;
    struct ghd_raw_limits lim = {.max_threads = f->max_threads,
                                 .static_shared = f->static_shared,
                                 .max_dyn_shared = f->max_dyn_shared};
    memcpy(lim.max_block, m->max_block, sizeof(lim.max_block));
    memcpy(lim.max_grid, m->max_grid, sizeof(lim.max_grid));
    int rc = ghd_raw_shape_parse(launch, &lim, &c->shape, err);
    if (rc == 0)
        rc = ghd_raw_args_parse(json_object_get(launch, "args"), &c->pack, err);
    if (rc == 0)
        rc = ghd_raw_args_match(&c->pack, &f->params, f->name, err);
    for (unsigned i = 0; rc == 0 && i < c->pack.nargs; i++) {
        struct ghd_raw_arg *a = &c->pack.a[i];
        struct ghd_buffer_view v;
        if (a->kind != GHD_RAW_BUFFER)
            continue;
        int r = resolve(resolve_ctx, a->buffer, &v);
        if (r == GHD_ENOENT) {
            rc = ghd_err_set(err, GHD_ENOENT, "args[%u]: no buffer '%.64s'", i, a->buffer);
            break;
        }
        if (r) {
            rc = ghd_err_set(err, r == GHD_EINTERNAL ? GHD_EUNPROC : r,
                             "args[%u]: buffer '%.64s' cannot be used (at most %d buffers in a "
                             "call)",
                             i, a->buffer, GHD_KERNEL_CALL_MAX_BUFFERS);
            break;
        }
        if (a->byte_offset > v.size) {
            rc = ghd_err_set(err, GHD_EUNPROC,
                             "args[%u]: offset %llu is past the end of buffer %.64s (%zu bytes)", i,
                             (unsigned long long)a->byte_offset, a->buffer, v.size);
            break;
        }
        ghd_raw_pack_pointer(&c->pack, i, (uint64_t)(uintptr_t)v.d_ptr + a->byte_offset);
        note(c, v.owner, a->access);
        c->arg_owner[i] = v.owner;
    }
    if (rc) {
        ghd_rcall_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int ghd_rcall_execute(struct ghd_rcall *c, struct ghd_runtime *rt, struct ghd_stream *stream,
                      struct ghd_event *start, struct ghd_event *end, json_t *result,
                      struct ghd_err *err)
{
    const struct ghd_device_ops *ops = rt->dev.ops;
    /* A library is loaded into every device's context (cudaLibraryLoadData
     * is context-independent): it runs where the cubin's architecture is
     * the device's. */
    const struct ghd_rmodule *m = c->f->module;
    if (m->rt != rt && strcmp(m->rt->dev.arch, rt->dev.arch) != 0)
        return ghd_err_set(err, GHD_EUNPROC,
                           "module %s was compiled for %s, and device %u is %s: a raw module "
                           "runs on devices of the architecture it was compiled for",
                           m->id, m->rt->dev.arch, rt->index, rt->dev.arch);
    /* The first failure's detail wins: the sync after it must not overwrite it. */
    struct ghd_err e = {0}, sync_err = {0};
    int rc = 0;
    if (start && end)
        rc = ops->event_record(&rt->dev, start, stream, &e);
    if (!rc)
        rc = ghd_rcuda_launch(c->f, &c->shape, &c->pack, rt, stream, &e);
    if (!rc && start && end)
        rc = ops->event_record(&rt->dev, end, stream, &e);
    int sync_rc = ops->stream_sync(&rt->dev, stream, &sync_err);
    if (!rc) {
        rc = sync_rc;
        e = sync_err;
    }
    if (rc == GHD_EDEVICE)
        return ghd_err_set(err, rc, "%s: %s", c->f->name, ghd_err_text(&e, rc));
    if (rc)
        return ghd_err_set(err, rc, "%s failed: %s", c->f->name, ghd_strerror(rc));
    if (result) {
        json_object_set_new(result, "module", json_string(c->f->module->id));
        json_object_set_new(result, "function", json_string(c->f->name));
    }
    return 0;
}

void ghd_rcall_rebind(struct ghd_rcall *c, const void *owner, void *d_ptr)
{
    for (unsigned i = 0; i < c->pack.nargs; i++)
        if (owner && c->arg_owner[i] == owner)
            ghd_raw_pack_pointer(&c->pack, i,
                                 (uint64_t)(uintptr_t)d_ptr + c->pack.a[i].byte_offset);
}

int ghd_rcall_writes(const struct ghd_rcall *c, const void *owner)
{
    for (size_t i = 0; i < c->nbuf; i++)
        if (owner && c->owner[i] == owner)
            return (c->access[i] & GHD_RAW_OUT) != 0;
    return 0;
}

void ghd_rcall_free(struct ghd_rcall *c)
{
    free(c);
}
