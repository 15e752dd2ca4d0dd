/* Run arguments of a user kernel from the buffers' array descriptions (see
 * run_arrays.h): a placeholder type ("T") and n, omitted, are bound from the
 * described buffers, as a built-in's dtype and n are; an explicit one they
 * contradict is a 422 naming both. A parameter declared with a type ("f64
 * x") given a buffer described as another type is a 422 too (the bug of a
 * meaningless result), unless the step says "reinterpret": true. */
#include "run_arrays_user.h"

#include <stdio.h>
#include <string.h>

#include "run_arrays_rules.h"
#include "base/error.h"
#include "kernels/user/ukernel.h"

static int declared_type_differs(const struct ghd_ra_ctx *cx, const char *where, const struct ghd_ukernel *k,
                                 const struct ghd_described *x, int type)
{
    char s[256];
    ghd_ra_shape_str(&x->d, s, sizeof(s));
    return ghd_err_set(cx->err, GHD_EUNPROC,
                       "%sbuffer argument %s (%s) is not %s, the type kernel %s declares "
                       "for %s; convert it (kernel cast, dtype_out %s; astype in the "
                       "Python client), or say \"reinterpret\": true to read its bytes "
                       "as %s",
                       where, x->name, s, ghd_utype_name(type), k->def.name, x->name,
                       ghd_utype_name(type), ghd_utype_name(type));
}

int ghd_ra_user(const struct ghd_ra_ctx *cx, const struct ghd_ukernel *k,
                json_t *args, int reinterpret, const char *where)
{
    const struct ghd_udef *d = &k->def;
    struct ghd_described xs[GHD_U_MAX_PARAMS];
    size_t nx = 0;
    for (int p = 0; p < d->nparams; p++) {
        const struct ghd_uparam *q = &d->params[p];
        size_t before = nx;
        ghd_ra_describe(cx, args, q->name, p, xs, &nx);
        if (nx == before)
            continue;
        struct ghd_described *x = &xs[before];
        int t = ghd_utype_parse(x->d.dtype, strlen(x->d.dtype));
        if (q->ph && t != GHD_UT_NONE) /* c64, c128: no placeholder type holds them */
            snprintf(x->type_key, sizeof(x->type_key), "%c", q->ph);
        else if (!q->ph && !reinterpret && t != q->type)
            return declared_type_differs(cx, where, k, x, q->type);
        /* A reduction's output holds one element; a raw input any number. */
        x->counts_n = !q->is_raw && !(q->is_out && d->kind == GHD_UK_REDUCTION);
    }
    if (nx == 0)
        return 0;
    for (const char *ph = d->placeholders; *ph; ph++) {
        char key[2] = {*ph, 0};
        int rc = ghd_ra_fill_type(cx, where, args, key, xs, nx, reinterpret);
        if (rc)
            return rc;
    }
    return ghd_ra_fill_n(cx, where, args, xs, nx, reinterpret);
}
