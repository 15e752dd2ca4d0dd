/* The built-in kind (kind.h): binding a call of a defs_*.c kernel and
 * launching it. Binding does everything a client can get wrong before any
 * device work is queued: parameter names and JSON types, value ranges,
 * buffer lookup, sizes (with overflow checks) and aliasing. The launch then
 * only meets device errors. */
#include "kind.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "call_args.h"
#include "registry.h"
#include "scalar.h"
#include "base/error.h"
#include "base/json_u64.h"
#include "base/suggest.h"

/* A built-in's call. */
struct builtin_call {
    const struct ghd_kernel *k;
    struct ghd_kargs args;
    struct ghd_buffer_view buf[GHD_KARG_BUFFERS]; /* by slot; owner NULL: not given */
    uint64_t start[GHD_KARG_BUFFERS];             /* byte range used, per slot */
    uint64_t len[GHD_KARG_BUFFERS];
};

_Static_assert(GHD_KARG_BUFFERS <= GHD_KERNEL_CALL_MAX_BUFFERS, "kernel.h bounds a call's buffers");

#define OFFSET_SUFFIX "_offset"

/* The parameter a JSON member names: a signature entry, or the offset of a
 * buffer entry ("x_offset"). */
static const struct ghd_param *param_of(const struct ghd_kernel *k, const char *key,
                                        int *is_offset)
{
    size_t klen = strlen(key), slen = strlen(OFFSET_SUFFIX);
    *is_offset = 0;
    for (size_t i = 0; i < k->nparams; i++) {
        const struct ghd_param *p = &k->params[i];
        if (strcmp(p->name, key) == 0)
            return p;
        if (p->kind == GHD_PK_BUFFER && klen == strlen(p->name) + slen &&
            strncmp(key, p->name, strlen(p->name)) == 0 &&
            strcmp(key + strlen(p->name), OFFSET_SUFFIX) == 0) {
            *is_offset = 1;
            return p;
        }
    }
    return NULL;
}

static int check_unknown(const struct ghd_kernel *k, json_t *args, struct ghd_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        int is_offset;
        if (param_of(k, key, &is_offset))
            continue;
        const char *names[2 * GHD_KERNEL_CALL_MAX_BUFFERS], *buffers[GHD_KERNEL_CALL_MAX_BUFFERS];
        size_t n = 0, nbuf = 0;
        for (size_t i = 0; i < k->nparams && n < GHD_COUNT_OF(names); i++) {
            names[n++] = k->params[i].name;
            if (k->params[i].kind == GHD_PK_BUFFER && nbuf < GHD_COUNT_OF(buffers))
                buffers[nbuf++] = k->params[i].name;
        }
        return ghd_kernel_call_unknown(k->name, key, names, n, buffers, nbuf, err);
    }
    return 0;
}

static int parse_scalar(const struct ghd_param *p, json_t *v, struct ghd_kargs *a,
                        const char *kname, struct ghd_err *err)
{
    char *field = (char *)a + p->field;
    switch (p->kind) {
    case GHD_PK_COUNT: {
        uint64_t c = 0;
        int rc = ghd_kernel_call_count(v, p->name, &c, err);
        if (rc)
            return rc;
        memcpy(field, &c, sizeof(c));
        return 0;
    }
    case GHD_PK_NUMBER: {
        uint64_t big; /* 2^63 and above (base/json_u64.h): no built-in type holds it */
        if (ghd_json_u64_big(v, &big))
            return ghd_err_set(err, GHD_EUNPROC, "%s %" PRIu64 " is out of range for every type a "
                               "built-in kernel takes (i64 at most)", p->name, big);
        if (!json_is_number(v))
            return ghd_err_set(err, GHD_EINVAL, "%s must be a number", p->name);
        double d = json_number_value(v);
        memcpy(field, &d, sizeof(d));
        return 0;
    }
    case GHD_PK_BOOL: {
        if (!json_is_boolean(v))
            return ghd_err_set(err, GHD_EINVAL, "%s must be true or false", p->name);
        int b = json_is_true(v);
        memcpy(field, &b, sizeof(b));
        return 0;
    }
    case GHD_PK_DTYPE: {
        char list[128], hint[96];
        const char *names[GHD_DTYPE_COUNT];
        enum ghd_dtype t;
        size_t n = ghd_dtype_names(p->dtypes, names);
        ghd_dtype_list(p->dtypes, list, sizeof(list));
        if (!json_is_string(v))
            return ghd_err_set(err, GHD_EINVAL, "%s must be an element type name (one of: %s)",
                               p->name, list);
        const char *name = json_string_value(v);
        if (ghd_dtype_parse(name, &t) == 0 && (p->dtypes & GHD_DT(t))) {
            memcpy(field, &t, sizeof(t));
            return 0;
        }
        /* One message whether the name is no element type at all or one
         * this kernel does not take: the list says what it takes. */
        ghd_suggest_clause(hint, sizeof(hint), ghd_dtype_suggest(name, names, n));
        return ghd_err_set(err, GHD_EUNPROC, "%s '%.32s' is not an element type kernel %s takes%s "
                           "(it takes %s)", p->name, name, kname, hint, list);
    }
    case GHD_PK_BUFFER:
        break;
    }
    return GHD_EINTERNAL;
}

static void set_default(const struct ghd_param *p, struct ghd_kargs *a)
{
    char *field = (char *)a + p->field;
    if (p->kind == GHD_PK_NUMBER) {
        memcpy(field, &p->def, sizeof(p->def));
    } else if (p->kind == GHD_PK_COUNT) {
        uint64_t c = (uint64_t)p->def;
        memcpy(field, &c, sizeof(c));
    } else if (p->kind == GHD_PK_BOOL) {
        int b = p->def != 0;
        memcpy(field, &b, sizeof(b));
    }
}

static int parse_params(struct builtin_call *call, struct ghd_kcheck *c,
                        ghd_buffer_resolver resolve, void *ctx)
{
    const struct ghd_kernel *k = call->k;
    struct ghd_err *err = c->err;
    for (size_t i = 0; i < k->nparams; i++) {
        const struct ghd_param *p = &k->params[i];
        json_t *v = json_object_get(c->args, p->name);
        if (p->kind != GHD_PK_BUFFER) {
            int rc;
            if (!v) {
                if (p->required) {
                    char list[128] = "";
                    if (p->kind == GHD_PK_DTYPE)
                        ghd_dtype_list(p->dtypes, list, sizeof(list));
                    return ghd_err_set(err, GHD_EINVAL,
                                       "missing required parameter '%s' for kernel %s%s%s%s",
                                       p->name, k->name, list[0] ? " (an element type: " : "",
                                       list, list[0] ? ")" : "");
                }
                if (p->has_default)
                    set_default(p, &call->args);
                continue;
            }
            rc = parse_scalar(p, v, &call->args, k->name, err);
            if (rc)
                return rc;
            call->args.given |= (uint64_t)1 << i;
            continue;
        }

        char offname[96];
        snprintf(offname, sizeof(offname), "%s" OFFSET_SUFFIX, p->name);
        json_t *off = json_object_get(c->args, offname);
        if (!v) {
            if (p->required)
                return ghd_err_set(err, GHD_EINVAL,
                                   "missing required buffer parameter '%s' for kernel %s", p->name,
                                   k->name);
            if (off)
                return ghd_err_set(err, GHD_EINVAL, "%s given without %s", offname, p->name);
            continue;
        }
        if (!json_is_string(v))
            return ghd_err_set(err, GHD_EINVAL, "%s must be a buffer id (a string)", p->name);
        uint64_t offset = 0;
        if (off) {
            int rc = ghd_kernel_call_count(off, offname, &offset, err);
            if (rc)
                return rc;
        }
        struct ghd_buffer_view b = {0};
        int rc = ghd_kernel_call_resolve(resolve, ctx, p->name, json_string_value(v), &b, err);
        if (rc)
            return rc;
        call->buf[p->slot] = b;
        call->start[p->slot] = offset; /* in elements until check_extents */
        c->present[p->slot] = 1;
        call->args.given |= (uint64_t)1 << i;
    }
    return 0;
}

static enum ghd_dtype elem_type(const struct ghd_param *p, const struct ghd_kargs *a)
{
    switch (p->elem) {
    case GHD_ELEM_DTYPE2:
        return a->dtype2;
    case GHD_ELEM_RESULT:
        return ghd_reduce_out_dtype(a->op, a->dtype);
    case GHD_ELEM_DTYPE:
        break;
    }
    return a->dtype;
}

/* (offset + count) * size <= buffer size, without overflowing. */
static int check_extents(struct builtin_call *call, struct ghd_kcheck *c)
{
    const struct ghd_kernel *k = call->k;
    for (size_t i = 0; i < k->nparams; i++) {
        const struct ghd_param *p = &k->params[i];
        if (p->kind != GHD_PK_BUFFER || !c->present[p->slot])
            continue;
        int s = p->slot;
        enum ghd_dtype t = elem_type(p, &call->args);
        uint64_t es = ghd_dtype_size(t);
        uint64_t count = p->count == GHD_COUNT_N     ? call->args.n
                         : p->count == GHD_COUNT_ONE ? 1
                                                     : c->count[s];
        uint64_t offset = call->start[s], end, start_b, need;
        if (__builtin_add_overflow(offset, count, &end) ||
            __builtin_mul_overflow(end, es, &need) ||
            __builtin_mul_overflow(offset, es, &start_b))
            return ghd_err_set(c->err, GHD_EUNPROC,
                               "%s: offset %" PRIu64 " + %" PRIu64 " elements of %s overflows",
                               p->name, offset, count, ghd_dtype_name(t));
        if (need > call->buf[s].size)
            return ghd_err_set(c->err, GHD_EUNPROC,
                               "%s: buffer holds %zu bytes, but offset %" PRIu64 " + %" PRIu64
                               " elements of %s need %" PRIu64 " bytes",
                               p->name, call->buf[s].size, offset, count, ghd_dtype_name(t), need);
        call->start[s] = start_b;
        call->len[s] = need - start_b;
    }
    return 0;
}

static int written(const struct ghd_param *p)
{
    return p->role == GHD_ROLE_OUT || p->role == GHD_ROLE_INOUT;
}

/* A written range may not overlap another range of the call, except as an
 * exact alias the signature allows (in place), or anywhere for kernels with
 * memmove semantics. */
static int check_aliasing(struct builtin_call *call, struct ghd_kcheck *c)
{
    const struct ghd_kernel *k = call->k;
    if (k->flags & GHD_KF_OVERLAP_OK)
        return 0;
    for (size_t i = 0; i < k->nparams; i++) {
        const struct ghd_param *p = &k->params[i];
        if (p->kind != GHD_PK_BUFFER || !c->present[p->slot])
            continue;
        for (size_t j = i + 1; j < k->nparams; j++) {
            const struct ghd_param *q = &k->params[j];
            if (q->kind != GHD_PK_BUFFER || !c->present[q->slot])
                continue;
            if (!written(p) && !written(q))
                continue;
            int s = p->slot, t = q->slot;
            /* Two buffers are two blocks, never one memory; and a spilled
             * buffer has no device address to compare (core/tier.h). */
            if (call->buf[s].owner != call->buf[t].owner)
                continue;
            uintptr_t a0 = (uintptr_t)call->buf[s].d_ptr + call->start[s];
            uintptr_t b0 = (uintptr_t)call->buf[t].d_ptr + call->start[t];
            uint64_t alen = call->len[s], blen = call->len[t];
            if (alen == 0 || blen == 0 || a0 + alen <= b0 || b0 + blen <= a0)
                continue;
            int exact = a0 == b0 && alen == blen;
            if (exact && ((p->alias_ok & GHD_SLOT(t)) || (q->alias_ok & GHD_SLOT(s))))
                continue;
            return ghd_err_set(c->err, GHD_EUNPROC, "%s overlaps %s%s", q->name, p->name,
                               (p->alias_ok & GHD_SLOT(t)) || (q->alias_ok & GHD_SLOT(s))
                                   ? " (in place is allowed only as the exact same range)"
                                   : " (they must not share memory)");
        }
    }
    return 0;
}

static void builtin_free(void *c)
{
    free(c);
}

static int builtin_bind(const struct ghd_kernel *k, json_t *args, ghd_buffer_resolver resolve,
                        void *resolve_ctx, void **out, struct ghd_err *err)
{
    int rc;
    struct builtin_call *call = calloc(1, sizeof(*call));
    if (!call)
        return GHD_ENOHOSTMEM;
    call->k = k;
    call->args.op = k->op;
    struct ghd_kcheck c = {.k = k, .args = args, .a = &call->args, .err = err};

    rc = check_unknown(k, args, err);
    if (rc)
        goto out;
    rc = parse_params(call, &c, resolve, resolve_ctx);
    if (rc)
        goto out;
    if (k->check) {
        rc = k->check(&c);
        if (rc)
            goto out;
    }
    rc = check_extents(call, &c);
    if (rc)
        goto out;
    rc = check_aliasing(call, &c);
    if (rc)
        goto out;
    for (int s = 0; s < GHD_KARG_BUFFERS; s++)
        if (call->buf[s].owner)
            call->args.p[s] = (char *)call->buf[s].d_ptr + call->start[s];
out:
    if (rc)
        builtin_free(call);
    else
        *out = call;
    return rc;
}

static json_t *real_or_null(double d, json_t *result)
{
    if (isfinite(d))
        return json_real(d);
    json_object_set_new(result, "nonfinite",
                        json_string(isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"));
    return json_null();
}

/* The reduction's "value", from the accumulator (scalar.h): float sums are
 * reported from the f64 accumulator, so "value" can be more precise than
 * what the "out" buffer holds for f32. */
static json_t *reduce_value(const struct ghd_kargs *a, uint64_t acc, json_t *result)
{
    enum ghd_dtype t = a->dtype;
    int is_float = t == GHD_DTYPE_F32 || t == GHD_DTYPE_F64;
    if (ghd_reduce_is_sum(a->op)) {
        if (a->op == GHD_KOP_MEAN)
            return real_or_null(ghd_f64_from_bits(acc) / (double)a->n, result);
        if (is_float)
            return real_or_null(ghd_f64_from_bits(acc), result);
        return json_integer((json_int_t)ghd_i64_wrap(acc));
    }
    switch (t) {
    case GHD_DTYPE_F32:
        return real_or_null(ghd_f32_from_bits((uint32_t)acc), result);
    case GHD_DTYPE_F64:
        return real_or_null(ghd_f64_from_bits(acc), result);
    case GHD_DTYPE_I32:
        return json_integer(ghd_i32_wrap((uint32_t)acc));
    case GHD_DTYPE_I64:
        return json_integer(ghd_i64_wrap(acc));
    case GHD_DTYPE_U32:
        return json_integer((json_int_t)(uint32_t)acc);
    case GHD_DTYPE_U8:
        return json_integer((json_int_t)(uint8_t)acc);
    default:
        return json_null();
    }
}

static void add_result(const struct builtin_call *call, const struct ghd_kexec *x,
                       json_t *result)
{
    const struct ghd_kargs *a = &call->args;
    if (!result)
        return;
    if (ghd_kernel_param_bit(call->k, "n"))
        json_object_set_new(result, "n", json_integer((json_int_t)a->n));
    if (ghd_kernel_param_bit(call->k, "m"))
        json_object_set_new(result, "m", json_integer((json_int_t)a->m));
    if (ghd_kernel_param_bit(call->k, "k"))
        json_object_set_new(result, "k", json_integer((json_int_t)a->k));
    if (x->has_acc) {
        json_object_set_new(result, "value", reduce_value(a, x->acc, result));
        json_object_set_new(result, "value_dtype",
                            json_string(ghd_dtype_name(ghd_reduce_out_dtype(a->op, a->dtype))));
    }
}

/* A built-in runs to its end once started: `stop` is not looked at. */
static int builtin_launch(void *c, struct ghd_runtime *rt, struct ghd_stream *stream,
                          struct ghd_event *start, struct ghd_event *end, const atomic_int *stop,
                          json_t *result, struct ghd_err *err)
{
    (void)stop;
    const struct builtin_call *call = c;
    const struct ghd_kernel *k = call->k;
    ghd_kernel_fn fn = (unsigned)rt->dev.kind < GHD_BACKEND_COUNT ? k->impl[rt->dev.kind] : NULL;
    if (!fn)
        return ghd_err_set(err, GHD_ENOTSUP, "kernel %s has no %s implementation in this build",
                           k->name, ghd_backend_name(rt->dev.kind));
    struct ghd_err derr = {0};
    struct ghd_kexec x = {
        .rt = rt, .dev = &rt->dev, .stream = stream, .error = &derr, .args = &call->args};
    const struct ghd_device_ops *ops = rt->dev.ops;
    int rc = 0;
    if (start && end)
        rc = ops->event_record(&rt->dev, start, stream, &derr);
    if (!rc)
        rc = fn(&x);
    if (!rc && start && end)
        rc = ops->event_record(&rt->dev, end, stream, &derr);
    if (!rc && x.acc_dev) /* a synchronous copy for CUDA: after the end event */
        rc = ops->copy_d2h(&rt->dev, &x.acc, x.acc_dev, sizeof(x.acc), stream, &derr);
    /* Always wait: work queued before a failure may still use the scratch.
     * The first failure's detail is the one reported. */
    int sync_rc = ops->stream_sync(&rt->dev, stream, rc ? NULL : &derr);
    for (unsigned i = 0; i < x.nscratch; i++)
        ghd_pool_free(&rt->pool, x.scratch[i]);
    if (!rc)
        rc = sync_rc;
    if (rc == GHD_EDEVICE)
        return ghd_err_set(err, rc, "kernel %s: %s", k->name, ghd_err_text(&derr, rc));
    if (rc == GHD_ENOMEM)
        return ghd_err_set(err, rc, "kernel %s: no device memory for its scratch space", k->name);
    if (rc)
        return ghd_err_set(err, rc, "kernel %s failed: %s", k->name, ghd_strerror(rc));
    add_result(call, &x, result);
    return 0;
}

static int in_table(const struct ghd_kernel *k, const struct ghd_kernel *table, size_t n)
{
    return k >= table && k < table + n;
}

static int builtin_graphable(const void *c)
{
    const struct builtin_call *call = c;
    const struct ghd_kernel *k = call->k;
    if (strcmp(k->name, "copy") == 0)
        return 0;
    return in_table(k, ghd_kdefs_blas1, ghd_kdefs_blas1_count) ||
           in_table(k, ghd_kdefs_ewise, ghd_kdefs_ewise_count);
}

_Static_assert(16 + GHD_KARG_BUFFERS <= GHD_KERNEL_CALL_KEY_WORDS, "the key holds the args");

static void builtin_key(const void *c, uint64_t out[GHD_KERNEL_CALL_KEY_WORDS])
{
    const struct builtin_call *call = c;
    const struct ghd_kargs *a = &call->args;
    uint64_t ab, bb;
    memcpy(&ab, &a->a, sizeof(ab));
    memcpy(&bb, &a->b, sizeof(bb));
    unsigned i = 0;
    memset(out, 0, GHD_KERNEL_CALL_KEY_WORDS * sizeof(out[0]));
    out[i++] = (uint64_t)(uintptr_t)call->k;
    out[i++] = (uint64_t)a->op;
    out[i++] = (uint64_t)a->dtype;
    out[i++] = (uint64_t)a->dtype2;
    out[i++] = a->n;
    out[i++] = a->m;
    out[i++] = a->k;
    out[i++] = a->lda;
    out[i++] = a->ldb;
    out[i++] = a->ldc;
    out[i++] = ab;
    out[i++] = bb;
    out[i++] = (uint64_t)a->flag_a;
    out[i++] = (uint64_t)a->flag_b;
    out[i++] = a->bits;
    out[i++] = a->given;
    for (unsigned j = 0; j < GHD_KARG_BUFFERS; j++)
        out[i++] = (uint64_t)(uintptr_t)a->p[j];
}

static int builtin_queue(void *c, struct ghd_runtime *rt, struct ghd_stream *stream,
                         json_t *result, struct ghd_err *err)
{
    struct builtin_call *call = c;
    const struct ghd_kernel *k = call->k;
    ghd_kernel_fn fn = (unsigned)rt->dev.kind < GHD_BACKEND_COUNT ? k->impl[rt->dev.kind] : NULL;
    if (!fn)
        return ghd_err_set(err, GHD_ENOTSUP, "kernel %s cannot be queued without a wait",
                           k->name);
    struct ghd_err derr = {0};
    struct ghd_kexec x = {
        .rt = rt, .dev = &rt->dev, .stream = stream, .error = &derr, .args = &call->args};
    int rc = fn(&x);
    /* Scratch and values for the host want a wait: on a captured stream the
     * work never ran, so the scratch goes back at once. */
    for (unsigned i = 0; i < x.nscratch; i++)
        ghd_pool_free(&rt->pool, x.scratch[i]);
    if (!rc && (x.nscratch || x.has_acc))
        return ghd_err_set(err, GHD_ENOTSUP, "kernel %s needs a wait for its work", k->name);
    if (rc)
        return ghd_err_set(err, rc, "kernel %s: %s", k->name, ghd_err_text(&derr, rc));
    add_result(call, &x, result);
    return 0;
}

static int builtin_stoppable(enum ghd_backend_kind kind)
{
    (void)kind; /* either backend, cuBLAS's gemm included */
    return 0;
}

static int builtin_writes(const void *c, const void *owner)
{
    const struct builtin_call *call = c;
    for (size_t i = 0; i < call->k->nparams; i++) {
        const struct ghd_param *p = &call->k->params[i];
        if (p->kind == GHD_PK_BUFFER && written(p) && owner && call->buf[p->slot].owner == owner)
            return 1;
    }
    return 0;
}

static void builtin_rebind(void *c, const void *owner, void *d_ptr)
{
    struct builtin_call *call = c;
    for (int s = 0; s < GHD_KARG_BUFFERS; s++)
        if (call->buf[s].owner == owner) {
            call->buf[s].d_ptr = d_ptr;
            call->args.p[s] = (char *)d_ptr + call->start[s];
        }
}

static int builtin_visit(const struct ghd_kernel *k, const struct ghd_kernel_visitor *v,
                         void *ctx)
{
    return v->builtin ? v->builtin(ctx, k) : 0;
}

const struct ghd_kernel_kind ghd_kernel_kind_builtin = {
    .describe_new = ghd_kernel_builtin_describe_new,
    .bind = builtin_bind,
    .launch = builtin_launch,
    .stoppable = builtin_stoppable,
    .writes = builtin_writes,
    .rebind = builtin_rebind,
    .graphable = builtin_graphable,
    .key = builtin_key,
    .queue = builtin_queue,
    .call_free = builtin_free,
    .visit = builtin_visit,
};

int ghd_kexec_scratch(struct ghd_kexec *x, size_t size, void **d_ptr)
{
    struct ghd_pool_block *b;
    if (x->nscratch >= GHD_KEXEC_SCRATCH)
        return GHD_EINTERNAL;
    int rc = ghd_pool_alloc(&x->rt->pool, size ? size : 1, 0, &b);
    if (rc)
        return rc;
    x->scratch[x->nscratch++] = b;
    *d_ptr = ghd_pool_block_ptr(b);
    return 0;
}
