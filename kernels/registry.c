/* The registry: every kernel family's table, looked up by name. The tables
 * live with their check hooks in defs_*.c; this file only gathers them. */
#include "kernel.h"

#include <string.h>

#include "registry.h"
#include "scalar.h"
#include "base/error.h"

static const struct {
    const struct ghd_kernel *defs;
    const size_t *count;
} families[] = {
    {ghd_kdefs_blas1, &ghd_kdefs_blas1_count},   {ghd_kdefs_ewise, &ghd_kdefs_ewise_count},
    {ghd_kdefs_reduce, &ghd_kdefs_reduce_count}, {ghd_kdefs_order, &ghd_kdefs_order_count},
    {ghd_kdefs_gemm, &ghd_kdefs_gemm_count},
};

size_t ghd_kernel_count(void)
{
    size_t n = 0;
    for (size_t f = 0; f < GHD_COUNT_OF(families); f++)
        n += *families[f].count;
    return n;
}

const struct ghd_kernel *ghd_kernel_at(size_t i)
{
    for (size_t f = 0; f < GHD_COUNT_OF(families); f++) {
        if (i < *families[f].count)
            return &families[f].defs[i];
        i -= *families[f].count;
    }
    return NULL;
}

const struct ghd_kernel *ghd_kernel_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t f = 0; f < GHD_COUNT_OF(families); f++)
        for (size_t i = 0; i < *families[f].count; i++)
            if (strcmp(families[f].defs[i].name, name) == 0)
                return &families[f].defs[i];
    return NULL;
}

const char *ghd_kernel_name(const struct ghd_kernel *k)
{
    return k->name;
}

uint64_t ghd_kernel_param_bit(const struct ghd_kernel *k, const char *name)
{
    for (size_t i = 0; i < k->nparams; i++)
        if (strcmp(k->params[i].name, name) == 0)
            return (uint64_t)1 << i;
    return 0;
}

/* The dtype parameter of k that buffer parameter p's element type follows
 * (a reduction's result follows dtype). */
static const struct ghd_param *followed(const struct ghd_kernel *k, const struct ghd_param *p)
{
    size_t field = p->elem == GHD_ELEM_DTYPE2 ? offsetof(struct ghd_kargs, dtype2)
                                              : offsetof(struct ghd_kargs, dtype);
    for (size_t i = 0; i < k->nparams; i++)
        if (k->params[i].kind == GHD_PK_DTYPE && k->params[i].field == field)
            return &k->params[i];
    return NULL;
}

const struct ghd_param *ghd_kernel_type_param(const struct ghd_kernel *k,
                                              const struct ghd_param *p)
{
    return p->elem == GHD_ELEM_RESULT ? NULL : followed(k, p);
}

int ghd_kernel_buffer_dtype(const struct ghd_kernel *k, const struct ghd_param *p, json_t *args,
                            enum ghd_dtype *out)
{
    const struct ghd_param *q = followed(k, p);
    json_t *v = q ? json_object_get(args, q->name) : NULL;
    enum ghd_dtype t;
    if (!json_is_string(v) || ghd_dtype_parse(json_string_value(v), &t) != 0 ||
        !(q->dtypes & GHD_DT(t)))
        return GHD_ENOENT;
    *out = p->elem == GHD_ELEM_RESULT ? ghd_reduce_out_dtype(k->op, t) : t;
    return 0;
}
