/* A call of a user kernel: the same argument conventions and checks as a
 * built-in (kernel.h): buffer ids with "<name>_offset", a required n, sizes
 * checked with overflow checks, outputs that may overlap an input only as
 * the exact same range (in place) and never a raw input or another output.
 * Inputs that are not raw may be numbers instead (scalars); placeholder
 * letters name their types ("T": "f32"). */
#include "ukernel.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ucuda.h"
#include "kernels/call_args.h"
#include "base/error.h"
#include "base/json_u64.h"
#include "base/suggest.h"

struct ghd_ucall {
    struct ghd_ukernel *k;
    struct ghd_ubinding *binding;
    uint64_t n;
    struct ghd_uarg args[GHD_U_MAX_PARAMS];
    struct ghd_buffer_view buf[GHD_U_MAX_PARAMS]; /* per parameter; owner NULL: none */
    uint64_t start[GHD_U_MAX_PARAMS], len[GHD_U_MAX_PARAMS]; /* byte range used */
    /* CUDA: the launch's stop word (ucuda.h), from before the launch until
     * the call is freed, so that a late ghd_ucall_signal_stop never writes
     * a word another launch has taken since. */
    _Atomic(volatile int *) stop_word;
};

_Static_assert(GHD_U_MAX_PARAMS <= GHD_KERNEL_CALL_MAX_BUFFERS, "kernel.h bounds a call's buffers");

#define OFFSET_SUFFIX "_offset"

/* Names an args member may have: a parameter, its offset, a placeholder, n. */
static int known_key(const struct ghd_udef *d, const char *key)
{
    size_t len = strlen(key);
    if (strcmp(key, "n") == 0)
        return 1;
    if (len == 1 && strchr(d->placeholders, key[0]) && key[0] >= 'A' && key[0] <= 'Z')
        return 1;
    if (ghd_udef_param(d, key, len) >= 0)
        return 1;
    size_t sl = strlen(OFFSET_SUFFIX);
    return len > sl && strcmp(key + len - sl, OFFSET_SUFFIX) == 0 &&
           ghd_udef_param(d, key, len - sl) >= 0;
}

/* The detail for an args member the kernel does not take: its parameters,
 * placeholders and n, the nearest first. */
static int unknown_key(const struct ghd_udef *d, const char *key, struct ghd_err *err)
{
    const char *names[GHD_U_MAX_PARAMS + 27], *buffers[GHD_U_MAX_PARAMS];
    char letters[26][2];
    size_t n = 0, nbuf = 0;
    for (int p = 0; p < d->nparams; p++) {
        names[n++] = d->params[p].name;
        buffers[nbuf++] = d->params[p].name;
    }
    for (size_t i = 0; d->placeholders[i] && i < 26; i++) {
        letters[i][0] = d->placeholders[i];
        letters[i][1] = '\0';
        names[n++] = letters[i];
    }
    names[n++] = "n";
    return ghd_kernel_call_unknown(d->name, key, names, n, buffers, nbuf, err);
}

/* A JSON scalar as a value of type t, refusing what t cannot hold. */
static int scalar_value(const char *name, json_t *v, int t, union ghd_uval *out,
                        struct ghd_err *err)
{
    union ghd_uval x;
    if (t == GHD_UT_BOOL) {
        if (!json_is_boolean(v))
            return ghd_err_set(err, GHD_EUNPROC, "%s is bool: give true or false", name);
        out->u = json_is_true(v);
        return 0;
    }
    if (json_is_boolean(v))
        return ghd_err_set(err, GHD_EUNPROC, "%s is %s: give a number, not a bool", name,
                           ghd_utype_name(t));
    uint64_t big; /* 2^63 .. 2^64 - 1 (base/json_u64.h) */
    int is_big = ghd_json_u64_big(v, &big);
    if (ghd_utype_is_float(t)) {
        x.d = is_big ? (double)big : json_number_value(v);
        *out = ghd_uval_convert(x, GHD_UT_F64, t);
        return 0;
    }
    if (is_big) {
        if (t != GHD_UT_U64)
            return ghd_err_set(err, GHD_EUNPROC, "%s: %" PRIu64 " does not fit %s", name, big,
                               ghd_utype_name(t));
        out->u = big;
        return 0;
    }
    if (!json_is_integer(v))
        return ghd_err_set(err, GHD_EUNPROC, "%s is %s: give an integer", name, ghd_utype_name(t));
    json_int_t i = json_integer_value(v);
    int bits = ghd_utype_bits(t);
    int ok = ghd_utype_is_signed(t)
                 ? bits == 64 || (i >= -((json_int_t)1 << (bits - 1)) &&
                                  i < ((json_int_t)1 << (bits - 1)))
                 : i >= 0 && (bits == 64 || (uint64_t)i < ((uint64_t)1 << bits));
    if (!ok)
        return ghd_err_set(err, GHD_EUNPROC, "%s: %lld does not fit %s", name, (long long)i,
                           ghd_utype_name(t));
    x.i = i;
    *out = ghd_uval_convert(x, GHD_UT_I64, t);
    return 0;
}

/* The detail for placeholder `key` given `v`, not a type name. */
static int type_refused(const char *key, json_t *v, struct ghd_err *err)
{
    const char *names[GHD_UT_COUNT];
    char hint[96];
    for (int t = 0; t < GHD_UT_COUNT; t++)
        names[t] = ghd_utype_name(t);
    ghd_suggest_clause(hint, sizeof(hint),
                       ghd_dtype_suggest(json_string_value(v), names, GHD_UT_COUNT));
    return ghd_err_set(err, GHD_EUNPROC, "%s must be a type name%s (f16 bf16 f32 f64 i8 i16 i32 "
                       "i64 u8 u16 u32 u64 bool)", key, hint);
}

/* The binding the args ask for: placeholder types and scalar inputs. */
static int read_binding(const struct ghd_udef *d, json_t *args, struct ghd_ubind *b,
                        struct ghd_err *err)
{
    memset(b, 0, sizeof(*b));
    for (int k = 0; k < 26; k++)
        b->ph_type[k] = GHD_UT_NONE;
    for (const char *ph = d->placeholders; *ph; ph++) {
        char key[2] = {*ph, 0};
        json_t *v = json_object_get(args, key);
        int t;
        if (!v)
            return ghd_err_set(err, GHD_EINVAL,
                               "missing required parameter '%s' (the type bound to placeholder %s; "
                               "a buffer argument of type %s with a dtype binds it)",
                               key, key, key);
        if (!json_is_string(v) ||
            (t = ghd_utype_parse(json_string_value(v), strlen(json_string_value(v)))) ==
                GHD_UT_NONE)
            return type_refused(key, v, err);
        b->ph_type[*ph - 'A'] = t;
    }
    for (int k = 0; k < d->nin; k++) {
        json_t *v = json_object_get(args, d->params[k].name);
        uint64_t big;
        if (v && (json_is_number(v) || json_is_boolean(v) || ghd_json_u64_big(v, &big))) {
            if (d->params[k].is_raw)
                return ghd_err_set(err, GHD_EUNPROC,
                                   "%s is raw: it must be a buffer id, not a number",
                                   d->params[k].name);
            b->scalar_mask |= 1u << k;
        }
    }
    return 0;
}

static int resolve_param(struct ghd_ucall *c, int k, json_t *v, json_t *off, int elem_count,
                         ghd_buffer_resolver resolve, void *ctx, struct ghd_err *err)
{
    const struct ghd_uparam *q = &c->k->def.params[k];
    int t = c->binding->prog.param_type[k];
    uint64_t offset = 0, es = ghd_utype_size(t), start, end, need;
    int rc;
    if (!json_is_string(v))
        return ghd_err_set(err, GHD_EINVAL, "%s must be a buffer id (a string)%s", q->name,
                           !q->is_out && !q->is_raw ? " or a number" : "");
    char offname[48];
    snprintf(offname, sizeof(offname), "%s" OFFSET_SUFFIX, q->name);
    if (off && (rc = ghd_kernel_call_count(off, offname, &offset, err)) != 0)
        return rc;
    struct ghd_buffer_view *b = &c->buf[k];
    if ((rc = ghd_kernel_call_resolve(resolve, ctx, q->name, json_string_value(v), b, err)) != 0)
        return rc;
    uint64_t count = q->is_raw ? 0 : elem_count ? 1 : c->n;
    if (__builtin_mul_overflow(offset, es, &start) || __builtin_add_overflow(offset, count, &end) ||
        __builtin_mul_overflow(end, es, &need))
        return ghd_err_set(err, GHD_EUNPROC, "%s: offset %" PRIu64 " overflows", q->name, offset);
    if (need > b->size)
        return ghd_err_set(err, GHD_EUNPROC,
                           "%s: buffer holds %zu bytes, but offset %" PRIu64 " + %" PRIu64
                           " elements of %s need %" PRIu64 " bytes",
                           q->name, b->size, offset, count, ghd_utype_name(t), need);
    if (q->is_raw)
        need = start + (b->size - start) / es * es; /* all the elements after the offset */
    c->start[k] = start;
    c->len[k] = need - start;
    c->args[k].ptr = (char *)b->d_ptr + start;
    c->args[k].len = c->len[k] / es;
    return 0;
}

/* n where no buffer argument holds n elements: the inputs are numbers or
 * raw buffers and a reduction's output is left out. Nothing else bounds the
 * elements such a call loops over, so n may be at most --max-elements, or
 * the element count of its largest raw input where that is more. */
static int check_unbounded_n(const struct ghd_ucall *c, struct ghd_err *err)
{
    const struct ghd_udef *d = &c->k->def;
    uint64_t cap = c->k->max_elements, raw_max = 0;
    for (int k = 0; k < d->nparams; k++) {
        if (!c->buf[k].owner)
            continue;
        if (!d->params[k].is_raw && !(d->params[k].is_out && d->kind == GHD_UK_REDUCTION))
            return 0; /* this buffer holds the n elements */
        if (d->params[k].is_raw && c->args[k].len > raw_max)
            raw_max = c->args[k].len;
    }
    if (cap == 0 || c->n <= cap || c->n <= raw_max)
        return 0;
    return ghd_err_set(err, GHD_EUNPROC,
                       "n = %" PRIu64 " is more than %" PRIu64 ", the most a call may ask for "
                       "when no buffer argument holds its n elements (its inputs are numbers%s "
                       "and its output left out): --max-elements%s",
                       c->n, cap > raw_max ? cap : raw_max, raw_max ? " or raw buffers" : "",
                       raw_max ? ", or the elements of its largest raw input" : "");
}

/* Outputs may share memory with an input only as the exact same range of a
 * non-raw input (in place); never with a raw input or another output. */
static int check_aliasing(const struct ghd_ucall *c, struct ghd_err *err)
{
    const struct ghd_udef *d = &c->k->def;
    for (int o = d->nin; o < d->nparams; o++) {
        if (!c->buf[o].owner)
            continue;
        uintptr_t a0 = (uintptr_t)c->buf[o].d_ptr + c->start[o];
        for (int k = 0; k < d->nparams; k++) {
            if (k == o || !c->buf[k].owner || c->len[k] == 0 || c->len[o] == 0)
                continue;
            if (c->buf[k].owner != c->buf[o].owner) /* two buffers never share memory */
                continue;
            uintptr_t b0 = (uintptr_t)c->buf[k].d_ptr + c->start[k];
            if (a0 + c->len[o] <= b0 || b0 + c->len[k] <= a0)
                continue;
            int exact = a0 == b0 && c->len[o] == c->len[k];
            if (exact && k < d->nin && !d->params[k].is_raw)
                continue;
            if (k > o || k < d->nin)
                return ghd_err_set(err, GHD_EUNPROC, "%s overlaps %s%s", d->params[o].name,
                                   d->params[k].name,
                                   k < d->nin && !d->params[k].is_raw
                                       ? " (in place is allowed only as the exact same range)"
                                       : " (they must not share memory)");
        }
    }
    return 0;
}

int ghd_ucall_prepare_new(struct ghd_ukernel *k, json_t *args, ghd_buffer_resolver resolve,
                          void *resolve_ctx, struct ghd_ucall **out, struct ghd_err *err)
{
    const struct ghd_udef *d = &k->def;
    struct ghd_ubind b;
    int rc;
    *out = NULL;
    struct ghd_ucall *c = calloc(1, sizeof(*c));
    if (!c)
        return GHD_ENOHOSTMEM;
    ghd_ukernel_ref(k);
    c->k = k;
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        if (!known_key(d, key)) {
            rc = unknown_key(d, key, err);
            goto out;
        }
    }
    json_t *nv = json_object_get(args, "n");
    if (!nv) {
        rc = ghd_err_set(err, GHD_EINVAL,
                         "missing required parameter 'n' for kernel %s (a buffer argument with a "
                         "dtype and shape gives it)",
                         d->name);
        goto out;
    }
    if ((rc = ghd_kernel_call_count(nv, "n", &c->n, err)) != 0 ||
        (rc = read_binding(d, args, &b, err)) != 0)
        goto out;
    struct ghd_err e = {0};
    if ((rc = ghd_ukernel_binding(k, &b, &c->binding, &e)) != 0) {
        ghd_err_set(err, rc, "%s", e.detail);
        goto out;
    }
    for (int p = 0; p < d->nparams; p++) {
        const struct ghd_uparam *q = &d->params[p];
        char offname[48];
        snprintf(offname, sizeof(offname), "%s" OFFSET_SUFFIX, q->name);
        json_t *pv = json_object_get(args, q->name), *off = json_object_get(args, offname);
        int optional = q->is_out && d->kind == GHD_UK_REDUCTION;
        if (!pv) {
            if (!optional) {
                rc =
                    ghd_err_set(err, GHD_EINVAL, "missing required %s parameter '%s' for kernel %s",
                                q->is_out ? "buffer" : "input", q->name, d->name);
                goto out;
            }
            if (off) {
                rc = ghd_err_set(err, GHD_EINVAL, "%s given without %s", offname, q->name);
                goto out;
            }
            continue;
        }
        if (b.scalar_mask & (1u << p)) {
            if (off) {
                rc = ghd_err_set(err, GHD_EINVAL, "%s given, but %s is a number", offname, q->name);
                goto out;
            }
            rc = scalar_value(q->name, pv, c->binding->prog.param_type[p], &c->args[p].v, err);
        } else {
            rc = resolve_param(c, p, pv, off, optional, resolve, resolve_ctx, err);
        }
        if (rc)
            goto out;
    }
    if ((rc = check_unbounded_n(c, err)) == 0)
        rc = check_aliasing(c, err);
out:
    if (rc)
        ghd_ucall_free(c);
    else
        *out = c;
    return rc;
}

static json_t *value_json(union ghd_uval v, int t, json_t *result)
{
    if (t == GHD_UT_BOOL)
        return json_boolean(v.u);
    if (!ghd_utype_is_float(t))
        return ghd_utype_is_signed(t) ? json_integer((json_int_t)v.i) : ghd_json_u64(v.u);
    double d = t == GHD_UT_F64 ? v.d : v.f;
    if (isfinite(d))
        return json_real(d);
    json_object_set_new(result, "nonfinite",
                        json_string(isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"));
    return json_null();
}

/* CUDA: the call's stop word, cleared, published, then set if the run was
 * asked to stop already: ghd_ucall_signal_stop stores the flag before it
 * reads the word, this publishes the word before it reads the flag, so one
 * of the two sees the other. */
static volatile int *cuda_stop_word(struct ghd_ucall *c, const atomic_int *stop)
{
    volatile int *w = stop ? ghd_ucuda_stop_word_acquire() : NULL;
    if (!w)
        return NULL;
    *w = 0;
    atomic_store(&c->stop_word, w);
    if (atomic_load(stop))
        *w = 1;
    return w;
}

static int launch(struct ghd_ucall *c, struct ghd_runtime *rt, struct ghd_stream *stream,
                  const atomic_int *stop, union ghd_uval *acc, struct ghd_ucuda_run *run,
                  struct ghd_err *e)
{
    if (rt->dev.kind == GHD_BACKEND_HOST) /* its copies are synchronous: the buffers are ready */
        return ghd_uinterp_run(&c->binding->prog, c->args, c->n, stop, acc, e);
    return ghd_ucuda_launch(c->binding, rt, stream, c->args, c->n, cuda_stop_word(c, stop), run,
                            e);
}

int ghd_ucall_execute(struct ghd_ucall *c, struct ghd_runtime *rt, struct ghd_stream *stream,
                      struct ghd_event *start, struct ghd_event *end, const atomic_int *stop,
                      json_t *result, struct ghd_err *err)
{
    const struct ghd_device_ops *ops = rt->dev.ops;
    const struct ghd_udef *d = &c->k->def;
    union ghd_uval acc = {0};
    struct ghd_err e = {0};
    struct ghd_ucuda_run run = {0};
    int rc = 0;
    if (rt->dev.kind != GHD_BACKEND_HOST)
        rc = ghd_ucuda_prepare(c->k, c->binding, rt, &e);
    if (!rc && start && end)
        rc = ops->event_record(&rt->dev, start, stream, &e);
    if (!rc)
        rc = launch(c, rt, stream, stop, &acc, &run, &e);
    if (!rc && start && end)
        rc = ops->event_record(&rt->dev, end, stream, &e);
    /* Always wait: a launch before a failure may still use the scratch. The
     * first failure's detail is the one reported. */
    int sync_rc = ops->stream_sync(&rt->dev, stream, rc ? NULL : &e);
    if (!rc)
        rc = sync_rc;
    volatile int *w = atomic_load(&c->stop_word);
    if (!rc && w && *w == 2) /* a thread saw the flag: its outputs are partly written */
        rc = ghd_err_set(&e, GHD_ECANCELED, "stopped on the device before its %llu elements "
                         "were done", (unsigned long long)c->n);
    if (!rc && run.d_result)
        rc = ghd_ucuda_result(&run, rt, &acc, &e);
    ghd_ucuda_done(&run, rt);
    if (rc)
        return ghd_err_set(err, rc, "kernel %s: %s", d->name,
                           e.detail[0] ? e.detail : ghd_strerror(rc));
    if (result) {
        json_object_set_new(result, "n", json_integer((json_int_t)c->n));
        if (d->kind == GHD_UK_REDUCTION) {
            int t = c->binding->prog.param_type[d->nin];
            json_object_set_new(result, "value", value_json(acc, t, result));
            json_object_set_new(result, "value_dtype", json_string(ghd_utype_name(t)));
        }
    }
    return 0;
}

void ghd_ucall_signal_stop(struct ghd_ucall *c)
{
    volatile int *w = atomic_load(&c->stop_word);
    if (w && *w == 0)
        *w = 1;
}

int ghd_ucall_stoppable(enum ghd_backend_kind kind)
{
#ifdef GHD_HAVE_NVRTC
    return kind == GHD_BACKEND_HOST || kind == GHD_BACKEND_CUDA;
#else
    return kind == GHD_BACKEND_HOST;
#endif
}

void ghd_ucall_rebind(struct ghd_ucall *c, const void *owner, void *d_ptr)
{
    for (int k = 0; k < GHD_U_MAX_PARAMS; k++)
        if (owner && c->buf[k].owner == owner) {
            c->buf[k].d_ptr = d_ptr;
            c->args[k].ptr = (char *)d_ptr + c->start[k];
        }
}

int ghd_ucall_writes(const struct ghd_ucall *c, const void *owner)
{
    for (int k = c->k->def.nin; k < c->k->def.nparams; k++)
        if (owner && c->buf[k].owner == owner)
            return 1;
    return 0;
}

void ghd_ucall_free(struct ghd_ucall *c)
{
    if (!c)
        return;
    ghd_ucuda_stop_word_release(atomic_load(&c->stop_word));
    ghd_ukernel_unref(c->k);
    free(c);
}
