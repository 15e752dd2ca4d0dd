/* Run arguments from buffers' array descriptions (see run_arrays.h). */
#include "run_arrays.h"
#include "run_arrays_rules.h"
#include "run_arrays_user.h"

#include <stdio.h>
#include <string.h>

#include "core/buffers/write_conds.h"
#include "kernels/registry.h"
#include "core/buffers/buffer.h"
#include "base/error.h"

/* The buffers the step names, with their descriptions; each typed by a
 * dtype parameter ("dtype", "dtype_out", "value_dtype") says which. */
static void collect(const struct ghd_ra_ctx *cx, const struct ghd_kernel *k, json_t *args,
                    struct ghd_described *out, size_t cap, size_t *count)
{
    *count = 0;
    for (size_t i = 0; i < k->nparams && *count < cap; i++) {
        const struct ghd_param *p = &k->params[i];
        size_t before = *count;
        if (p->kind != GHD_PK_BUFFER)
            continue;
        ghd_ra_describe(cx, args, p->name, (int)i, out, count);
        if (*count == before)
            continue;
        struct ghd_described *x = &out[before];
        const struct ghd_param *tp = ghd_kernel_type_param(k, p);
        if (tp)
            snprintf(x->type_key, sizeof(x->type_key), "%s", tp->name);
        x->counts_n = p->count == GHD_COUNT_N;
    }
}

/* A kernel that orders one flat range (sort) given a buffer described
 * with several rows: 422, since NumPy orders each row (its last axis) and
 * a flat result in that shape would pass for it; "reinterpret" means the
 * flat order. */
static int check_rows(const struct ghd_ra_ctx *cx, const struct ghd_kernel *k,
                      const struct ghd_described *xs, size_t nx, int reinterpret,
                      const char *where)
{
    for (size_t i = 0; i < nx && (k->flags & GHD_KF_FLAT_ORDER) && !reinterpret; i++) {
        const struct ghd_array_desc *d = &xs[i].d;
        uint64_t rows = 1;
        for (unsigned j = 0; j + 1 < d->ndim; j++)
            rows *= d->shape[j];
        if (d->ndim < 2 || rows < 2 || d->shape[d->ndim - 1] == 0)
            continue;
        char s[256];
        ghd_ra_shape_str(d, s, sizeof(s));
        return ghd_err_set(cx->err, GHD_EUNPROC,
                           "%s%s orders one flat range: buffer argument %s (%s) holds "
                           "%llu rows, which NumPy would order one by one; sort each row "
                           "in a step of its own (%s_offset, n), describe the buffer as "
                           "1-D, or say \"reinterpret\": true to order all its elements "
                           "as one",
                           where, k->name, xs[i].name, s, (unsigned long long)rows,
                           xs[i].name);
    }
    return 0;
}

/* A described buffer typed by a dtype parameter whose element type the
 * kernel does not take there: 422 naming it, unless the step gives that
 * parameter and says "reinterpret". */
static int check_takes(const struct ghd_ra_ctx *cx, const struct ghd_kernel *k,
                       json_t *args, const struct ghd_described *xs, size_t nx, int reinterpret,
                       const char *where)
{
    for (size_t i = 0; i < nx; i++) {
        const struct ghd_param *p = ghd_kernel_type_param(k, &k->params[xs[i].index]);
        enum ghd_dtype t;
        if (!p || (reinterpret && json_object_get(args, p->name)) ||
            (ghd_dtype_parse(xs[i].d.dtype, &t) == 0 && (p->dtypes & GHD_DT(t))))
            continue;
        char s[256], list[128];
        ghd_ra_shape_str(&xs[i].d, s, sizeof(s));
        ghd_dtype_list(p->dtypes, list, sizeof(list));
        return ghd_err_set(cx->err, GHD_EUNPROC,
                           "%sbuffer argument %s (%s) holds an element type kernel %s does "
                           "not take (%s: %s); give a %s with \"reinterpret\": true "
                           "to read its bytes as one of them",
                           where, xs[i].name, s, k->name, p->name, list, p->name);
    }
    return 0;
}

/* A described buffer that no dtype parameter types (a reduction's out)
 * holds the element type the call gives it, the result type of its dtype,
 * unless "reinterpret"; ghd_ra_fill_type checked the others. */
static int check_types(const struct ghd_ra_ctx *cx, const struct ghd_kernel *k,
                       json_t *args, const struct ghd_described *xs, size_t nx, int reinterpret,
                       const char *where)
{
    for (size_t i = 0; i < nx && !reinterpret; i++) {
        const struct ghd_param *p = &k->params[xs[i].index];
        enum ghd_dtype want;
        if (xs[i].type_key[0] || ghd_kernel_buffer_dtype(k, p, args, &want) != 0 ||
            strcmp(xs[i].d.dtype, ghd_dtype_name(want)) == 0)
            continue;
        char s[256];
        ghd_ra_shape_str(&xs[i].d, s, sizeof(s));
        return ghd_err_set(cx->err, GHD_EUNPROC,
                           "%sbuffer argument %s (%s) is not %s, the element type %s "
                           "writes there for dtype %s; describe it as %s, or say "
                           "\"reinterpret\": true to mean it",
                           where, xs[i].name, s, ghd_dtype_name(want), k->name,
                           json_string_value(json_object_get(args, "dtype")),
                           ghd_dtype_name(want));
    }
    return 0;
}

/* gemm: op(A) is m x k, op(B) k x n, C m x n. */
static int gemm_dims(const struct ghd_ra_ctx *cx, json_t *args,
                     const struct ghd_described *xs, size_t nx, int reinterpret, const char *where)
{
    static const char *const dims[3] = {"m", "n", "k"};
    int ta = json_is_true(json_object_get(args, "trans_a"));
    int tb = json_is_true(json_object_get(args, "trans_b"));
    for (int d = 0; d < 3; d++) {
        json_t *given = json_object_get(args, dims[d]);
        const struct ghd_described *from = NULL;
        uint64_t value = 0;
        for (size_t i = 0; i < nx; i++) {
            const struct ghd_described *x = &xs[i];
            if (x->d.ndim != 2)
                continue;
            uint64_t r = x->d.shape[0], c = x->d.shape[1], v;
            char which = x->name[0];
            if (which == 'a' && d != 1)
                v = (d == 0) == !ta ? r : c; /* m: rows of op(A); k: its columns */
            else if (which == 'b' && d != 0)
                v = (d == 2) == !tb ? r : c; /* k: rows of op(B); n: its columns */
            else if (which == 'c' && d != 2)
                v = d == 0 ? r : c;
            else
                continue;
            char implies[64];
            snprintf(implies, sizeof(implies), "%s = %llu", dims[d], (unsigned long long)v);
            if (given && !reinterpret && json_is_integer(given) &&
                (uint64_t)json_integer_value(given) != v) {
                char g[32];
                snprintf(g, sizeof(g), "%lld", (long long)json_integer_value(given));
                return ghd_ra_contradiction(cx, where, dims[d], g, x, implies);
            }
            if (from && value != v && !given) {
                char fv[32], xv[32];
                snprintf(fv, sizeof(fv), "%llu", (unsigned long long)value);
                snprintf(xv, sizeof(xv), "%llu", (unsigned long long)v);
                return ghd_ra_disagree(cx, where, dims[d], from, fv, x, xv,
                                       "make the shapes agree");
            }
            if (!from) {
                from = x;
                value = v;
            }
        }
        if (from && !given)
            json_object_set_new(args, dims[d], json_integer((json_int_t)value));
    }
    return 0;
}

/* What a step's arguments are filled from, per kind of kernel. */
struct fill {
    const struct ghd_ra_ctx *cx;
    json_t *args;
    int reinterpret;
    const char *where;
};

static int fill_user(void *ctx, const struct ghd_ukernel *u)
{
    const struct fill *f = ctx;
    return ghd_ra_user(f->cx, u, f->args, f->reinterpret, f->where);
}

/* A built-in's: by its parameter table. */
static int fill_builtin(void *ctx, const struct ghd_kernel *k)
{
    const struct fill *f = ctx;
    const struct ghd_ra_ctx *cx = f->cx;
    json_t *args = f->args;
    int reinterpret = f->reinterpret;
    const char *where = f->where;
    struct ghd_described xs[GHD_KARG_BUFFERS];
    size_t nx = 0;
    collect(cx, k, args, xs, GHD_KARG_BUFFERS, &nx);
    if (nx == 0)
        return 0;
    int rc;
    /* Each dtype parameter: one the kernel takes, and every described
     * buffer typed by it must agree with it. */
    if ((rc = check_rows(cx, k, xs, nx, reinterpret, where)) != 0 ||
        (rc = check_takes(cx, k, args, xs, nx, reinterpret, where)) != 0)
        return rc;
    for (size_t i = 0; i < k->nparams; i++)
        if (k->params[i].kind == GHD_PK_DTYPE &&
            (rc = ghd_ra_fill_type(cx, where, args, k->params[i].name, xs, nx,
                                   reinterpret)) != 0)
            return rc;
    if ((rc = check_types(cx, k, args, xs, nx, reinterpret, where)) != 0)
        return rc;
    if (strcmp(k->name, "gemm") == 0)
        return gemm_dims(cx, args, xs, nx, reinterpret, where);
    /* n: the elements the n-counted buffers hold. */
    if (!ghd_kernel_param_bit(k, "n"))
        return 0;
    return ghd_ra_fill_n(cx, where, args, xs, nx, reinterpret);
}

int ghd_run_args_from_arrays(const struct ghd_ra_ctx *cx, const struct ghd_kernel *k,
                             json_t *step, json_t *args, const char *where)
{
    json_t *reinterpret_v = json_object_get(step, "reinterpret");
    if (reinterpret_v && !json_is_boolean(reinterpret_v))
        return ghd_err_set(cx->err, GHD_EINVAL, "%s'reinterpret' must be true or false",
                           where);
    ghd_dtype_args_canonical(args);
    static const struct ghd_kernel_visitor by_kind = {.builtin = fill_builtin,
                                                      .user = fill_user};
    struct fill f = {.cx = cx, .args = args, .reinterpret = json_is_true(reinterpret_v),
                     .where = where};
    return ghd_kernel_visit(k, &by_kind, &f);
}

/* One if_match entry: `key` must be an argument of the step that names one
 * of the buffers its call holds. */
static int if_match_entry(const struct ghd_ra_ctx *cx, json_t *args,
                          const char *key, json_t *tag, struct ghd_run_step *out,
                          const char *where)
{
    json_t *id = json_object_get(args, key);
    struct ghd_buffer *b = NULL;
    for (unsigned i = 0; i < out->nheld && json_is_string(id); i++)
        if (strcmp(out->held[i]->id, json_string_value(id)) == 0)
            b = out->held[i];
    if (!b || out->ncond == GHD_KERNEL_CALL_MAX_BUFFERS)
        return ghd_err_set(cx->err, GHD_EUNPROC,
                           "%sif_match names '%.64s', which is not a buffer argument of "
                           "this step (give the argument that names the buffer, as in "
                           "{\"y\": \"\\\"v7\\\"\"})",
                           where, key);
    struct ghd_run_cond *c = &out->cond[out->ncond];
    if (!json_is_string(tag) || ghd_etag_list_parse(json_string_value(tag), &c->want) != 0)
        return ghd_err_set(cx->err, GHD_EINVAL,
                           "%sif_match.%.64s must be an entity tag like \"\\\"v3\\\"\"",
                           where, key);
    out->ncond++;
    c->b = b;
    snprintf(c->arg, sizeof(c->arg), "%s", key);
    return 0;
}

int ghd_run_if_match(const struct ghd_ra_ctx *cx, json_t *step,
                     json_t *args, struct ghd_run_step *out, const char *where)
{
    json_t *if_match = json_object_get(step, "if_match");
    if (!if_match)
        return 0;
    if (!json_is_object(if_match))
        return ghd_err_set(cx->err, GHD_EINVAL,
                           "%s'if_match' must map buffer arguments to entity tags", where);
    const char *key;
    json_t *tag;
    json_object_foreach(if_match, key, tag) {
        int rc = if_match_entry(cx, args, key, tag, out, where);
        if (rc)
            return rc;
    }
    return 0;
}
