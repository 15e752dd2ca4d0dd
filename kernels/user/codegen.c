/* Code generation: the program around the expressions (codegen_expr.c).
 * uops.h and a prelude of helpers, then for an elementwise kernel a
 * per-element function and a grid-stride loop, for a reduction the map,
 * reduce and post functions and a one-pass kernel: a block reduction in
 * shared memory, then the last block to finish combines the partials. */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "codegen_expr.h"

#define GHD_UCG_STR_(x) #x
#define GHD_UCG_STR(x) GHD_UCG_STR_(x)

static const char prelude[] =
    "typedef unsigned long long ghd_u64_t;\n"
    "struct GhdArgs { unsigned long long w[" GHD_UCG_STR(GHD_UCG_WORDS) "]; };\n"
    "template <typename S, int W> struct alignas(16) GhdVec { S e[W]; };\n"
    "static __device__ __forceinline__ bool ghd_isnan(double v) { return v != v; }\n"
    "static __device__ __forceinline__ bool ghd_isinf(double v) { return v == v && v - v != 0; }\n"
    "static __device__ __forceinline__ bool ghd_isfinite(double v) { return v - v == 0; }\n"
    "static __device__ __forceinline__ long long ghd_abs_s(long long a) { return a < 0 ? (long long)(0ull - (unsigned long long)a) : a; }\n"
    "static __device__ __forceinline__ long long ghd_min_s(long long a, long long b) { return a < b ? a : b; }\n"
    "static __device__ __forceinline__ long long ghd_max_s(long long a, long long b) { return a < b ? b : a; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_min_u(unsigned long long a, unsigned long long b) { return a < b ? a : b; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_max_u(unsigned long long a, unsigned long long b) { return a < b ? b : a; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(float v) { return __float_as_uint(v); }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(double v) { return (unsigned long long)__double_as_longlong(v); }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(bool v) { return v ? 1ull : 0ull; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(long long v) { return (unsigned long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned long long v) { return v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(int v) { return (unsigned long long)(long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned v) { return v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(short v) { return (unsigned long long)(long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned short v) { return v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(signed char v) { return (unsigned long long)(long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned char v) { return v; }\n"
    /* The stop word (codegen.h): 1 asks to stop; the thread that sees it
     * writes 2, which tells the host the outputs are partly written. */
    "static __device__ __forceinline__ bool ghd_stopped(const GhdArgs &A, long long &next)\n{\n"
    "    const long long now = clock64();\n"
    "    if (now < next)\n        return false;\n"
    "    next = now + " GHD_UCG_STR(GHD_UCG_STOP_CYCLES) "ll;\n"
    "    volatile int *f = (volatile int *)A.w[" GHD_UCG_STR(GHD_UCG_W_STOP) "];\n"
    "    if (!f || *f == 0)\n        return false;\n"
    "    *f = 2;\n    return true;\n}\n";

static int is_buffer_param(const struct ghd_uprog *p, int k)
{
    const struct ghd_uparam *q = &p->def->params[k];
    return !q->is_raw && (q->is_out || !(p->bind.scalar_mask & (1u << k)));
}

/* A scalar input's value, from its word. */
static void scalar_read(struct ghd_strbuf *o, int t, int k)
{
    if (t == GHD_UT_BOOL)
        ghd_strbuf_put(o, "(A.w[%d] != 0)", k);
    else if (t == GHD_UT_F64)
        ghd_strbuf_put(o, "__longlong_as_double((long long)A.w[%d])", k);
    else if (ghd_utype_is_float(t))
        ghd_strbuf_put(o, "__uint_as_float((unsigned)A.w[%d])", k);
    else
        ghd_strbuf_put(o, "((%s)A.w[%d])", ghd_ucg_ctype(t), k);
}

static void raw_readers(struct ghd_strbuf *o, const struct ghd_uprog *p)
{
    const struct ghd_udef *d = p->def;
    for (int k = 0; k < d->nin; k++) {
        const struct ghd_uparam *q = &d->params[k];
        if (!q->is_raw)
            continue;
        int t = p->param_type[k];
        union ghd_uval v;
        if (q->def_is_float)
            v.d = q->def_f;
        else
            v.u = q->def_i;
        v = ghd_uval_convert(v, q->def_is_float ? GHD_UT_F64 : GHD_UT_I64, t);
        ghd_strbuf_put(o, "static __device__ __forceinline__ %s ghd_rd%d(const GhdArgs &A, long long j)\n{\n"
               "    const %s *s = (const %s *)A.w[%d];\n"
               "    if (j >= 0 && (unsigned long long)j < A.w[%d])\n        return ",
            ghd_ucg_ctype(t), k, ghd_ucg_stype(t), ghd_ucg_stype(t), GHD_UCG_W_PARAM(k), GHD_UCG_W_LEN(k));
        ghd_ucg_load(o, t, "s[j]");
        ghd_strbuf_put(o, ";\n    return ");
        ghd_ucg_literal(o, t, v);
        ghd_strbuf_put(o, ";\n}\n");
    }
}

/* Whether the program reads parameter k (an output's old value). */
static int reads_param(const struct ghd_uprog *p, int k)
{
    for (int i = 0; i < p->nnodes; i++)
        if (p->nodes[i].op == GHD_UN_NAME && p->nodes[i].sym == k)
            return 1;
    return 0;
}

static void statements(struct ghd_strbuf *o, const struct ghd_uprog *p)
{
    const struct ghd_udef *d = p->def;
    for (int l = 0; l < d->nlocals; l++)
        ghd_strbuf_put(o, "    %s l%d;\n", ghd_ucg_ctype(p->local_type[l]), l);
    for (int s = 0; s < d->nstmts; s++) {
        int target = d->stmts[s].target;
        if (target < GHD_U_MAX_PARAMS)
            ghd_strbuf_put(o, "    p%d = ", target);
        else
            ghd_strbuf_put(o, "    l%d = ", target - GHD_USYM_LOCAL0);
        ghd_ucg_expr(o, p, p->stmt_expr[s]);
        ghd_strbuf_put(o, ";\n");
    }
}

/* The per-element function's parameter list: i, n, each non-raw input by
 * value, each output by reference (elementwise only). */
static void elem_params(struct ghd_strbuf *o, const struct ghd_uprog *p, int outputs)
{
    const struct ghd_udef *d = p->def;
    ghd_strbuf_put(o, "const GhdArgs &A, long long i, long long n");
    for (int k = 0; k < (outputs ? d->nparams : d->nin); k++)
        if (!d->params[k].is_raw)
            ghd_strbuf_put(o, ", %s %sp%d", ghd_ucg_ctype(p->param_type[k]), d->params[k].is_out ? "&" : "", k);
}

/* The call of the element function for element `idx`, its inputs taken
 * from `src(k)` (a vector lane or the buffer). */
static void elem_call(struct ghd_strbuf *o, const struct ghd_uprog *p, const char *fn, const char *idx,
                      int vec, int outputs)
{
    const struct ghd_udef *d = p->def;
    ghd_strbuf_put(o, "%s(A, (long long)(%s), (long long)n", fn, idx);
    for (int k = 0; k < (outputs ? d->nparams : d->nin); k++) {
        const struct ghd_uparam *q = &d->params[k];
        if (q->is_raw)
            continue;
        if (q->is_out) {
            ghd_strbuf_put(o, ", o%d", k);
            continue;
        }
        ghd_strbuf_put(o, ", ");
        if (!is_buffer_param(p, k)) {
            scalar_read(o, p->param_type[k], k);
            continue;
        }
        char src[48];
        if (vec)
            snprintf(src, sizeof(src), "v%d.e[j]", k);
        else
            snprintf(src, sizeof(src), "b%d[e]", k);
        ghd_ucg_load(o, p->param_type[k], src);
    }
    ghd_strbuf_put(o, ")");
}

static void buffer_pointers(struct ghd_strbuf *o, const struct ghd_uprog *p, int outputs)
{
    const struct ghd_udef *d = p->def;
    for (int k = 0; k < (outputs ? d->nparams : d->nin); k++)
        if (is_buffer_param(p, k))
            ghd_strbuf_put(o, "    %s%s *b%d = (%s%s *)A.w[%d];\n", d->params[k].is_out ? "" : "const ",
                ghd_ucg_stype(p->param_type[k]), k, d->params[k].is_out ? "" : "const ",
                ghd_ucg_stype(p->param_type[k]), GHD_UCG_W_PARAM(k));
}

static void ewise_kernel(struct ghd_strbuf *o, const struct ghd_uprog *p, unsigned vec_elem)
{
    const struct ghd_udef *d = p->def;
    ghd_strbuf_put(o, "extern \"C\" __global__ void __launch_bounds__(%d) " GHD_UCG_KERNEL "(const GhdArgs A)\n{\n",
        GHD_UCG_THREADS);
    ghd_strbuf_put(o, "    const unsigned long long n = A.w[%d];\n", GHD_UCG_W_N);
    ghd_strbuf_put(o, "    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n");
    buffer_pointers(o, p, 1);
    ghd_strbuf_put(o, "    unsigned long long start = 0;\n"
                      "    long long ghd_next = clock64() + " GHD_UCG_STR(GHD_UCG_STOP_CYCLES) "ll;\n");
    for (int pass = vec_elem ? 0 : 1; pass < 2; pass++) {
        int vec = pass == 0;
        unsigned w = vec ? 16 / vec_elem : 1;
        if (vec) {
            ghd_strbuf_put(o, "    if (A.w[%d]) {\n        const unsigned long long nv = n / %u;\n"
                   "        for (unsigned long long v = tid; v < nv; v += stride) {\n"
                   "            if (ghd_stopped(A, ghd_next))\n                goto ghd_end;\n"
                   "            const unsigned long long e0 = v * %u;\n",
                GHD_UCG_W_VEC, w, w);
            for (int k = 0; k < d->nparams; k++) {
                if (!is_buffer_param(p, k))
                    continue;
                if (d->params[k].is_out && !reads_param(p, k)) /* written only: not loaded */
                    ghd_strbuf_put(o, "            GhdVec<%s, %u> v%d;\n", ghd_ucg_stype(p->param_type[k]), w, k);
                else
                    ghd_strbuf_put(o, "            GhdVec<%s, %u> v%d = ((const GhdVec<%s, %u> *)b%d)[v];\n",
                        ghd_ucg_stype(p->param_type[k]), w, k, ghd_ucg_stype(p->param_type[k]), w, k);
            }
            ghd_strbuf_put(o, "#pragma unroll\n            for (int j = 0; j < %u; j++) {\n", w);
        } else {
            ghd_strbuf_put(o, "    for (unsigned long long e = start + tid; e < n; e += stride) {\n"
                   "        if (ghd_stopped(A, ghd_next))\n            goto ghd_end;\n"
                   "        {\n");
        }
        /* declare outputs, call, store */
        for (int k = d->nin; k < d->nparams; k++) {
            int t = p->param_type[k];
            char src[48];
            snprintf(src, sizeof(src), vec ? "v%d.e[j]" : "b%d[e]", k);
            ghd_strbuf_put(o, "                %s o%d = ", ghd_ucg_ctype(t), k);
            if (reads_param(p, k))
                ghd_ucg_load(o, t, src);
            else
                ghd_strbuf_put(o, "0");
            ghd_strbuf_put(o, ";\n");
        }
        ghd_strbuf_put(o, "                ");
        elem_call(o, p, "ghd_elem", vec ? "e0 + j" : "e", vec, 1);
        ghd_strbuf_put(o, ";\n");
        for (int k = d->nin; k < d->nparams; k++) {
            char val[16], dst[48];
            snprintf(val, sizeof(val), "o%d", k);
            snprintf(dst, sizeof(dst), vec ? "v%d.e[j]" : "b%d[e]", k);
            ghd_strbuf_put(o, "                %s = ", dst);
            ghd_ucg_store(o, p->param_type[k], val);
            ghd_strbuf_put(o, ";\n");
        }
        if (vec) {
            ghd_strbuf_put(o, "            }\n");
            for (int k = d->nin; k < d->nparams; k++)
                ghd_strbuf_put(o, "            ((GhdVec<%s, %u> *)b%d)[v] = v%d;\n", ghd_ucg_stype(p->param_type[k]),
                    w, k, k);
            ghd_strbuf_put(o, "        }\n        start = nv * %u;\n    }\n", w);
        } else {
            ghd_strbuf_put(o, "        }\n    }\n");
        }
    }
    ghd_strbuf_put(o, "ghd_end:;\n}\n");
}

/* A reduction's device functions: ghd_map (an element's value), ghd_red
 * (two values into one) and ghd_post (the output from the reduced value). */
static void reduce_functions(struct ghd_strbuf *o, const struct ghd_uprog *p)
{
    const char *acc = ghd_ucg_ctype(p->acc_type);
    int out = p->def->nin, tout = p->param_type[out];
    ghd_strbuf_put(o, "static __device__ __forceinline__ %s ghd_map(", acc);
    elem_params(o, p, 0);
    ghd_strbuf_put(o, ")\n{\n    return ");
    ghd_ucg_expr(o, p, p->map);
    ghd_strbuf_put(o, ";\n}\n");
    ghd_strbuf_put(o, "static __device__ __forceinline__ %s ghd_red(%s a, %s b)\n{\n    return ", acc, acc, acc);
    ghd_ucg_expr(o, p, p->reduce);
    ghd_strbuf_put(o, ";\n}\n");
    ghd_strbuf_put(o, "static __device__ __forceinline__ %s ghd_post(%s a, long long n)\n{\n", ghd_ucg_ctype(tout), acc);
    ghd_strbuf_put(o, "    %s p%d = ", ghd_ucg_ctype(tout), out);
    /* the output starts as the reduced value in its type (as interp.c) */
    {
        struct ghd_unode tmp[2];
        memset(tmp, 0, sizeof(tmp));
        tmp[0].op = GHD_UN_NAME;
        tmp[0].sym = GHD_USYM_A;
        tmp[0].type = p->acc_type;
        tmp[1].op = GHD_UN_CAST;
        tmp[1].type = tout;
        tmp[1].sub = tout;
        tmp[1].kid[0] = 0;
        tmp[1].nkid = 1;
        struct ghd_uprog one = *p;
        one.nodes = tmp;
        one.nnodes = 2;
        ghd_ucg_expr(o, &one, 1);
    }
    ghd_strbuf_put(o, ";\n");
    statements(o, p);
    ghd_strbuf_put(o, "    return p%d;\n}\n", out);
}

static void reduce_kernel(struct ghd_strbuf *o, const struct ghd_uprog *p, unsigned vec_elem)
{
    const struct ghd_udef *d = p->def;
    const char *acc = ghd_ucg_ctype(p->acc_type);
    int out = d->nin, tout = p->param_type[out];
    reduce_functions(o, p);
    ghd_strbuf_put(o, "extern \"C\" __global__ void __launch_bounds__(%d) " GHD_UCG_KERNEL "(const GhdArgs A)\n{\n",
        GHD_UCG_THREADS);
    ghd_strbuf_put(o, "    const unsigned long long n = A.w[%d];\n", GHD_UCG_W_N);
    ghd_strbuf_put(o, "    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n");
    buffer_pointers(o, p, 0);
    ghd_strbuf_put(o, "    %s acc = ", acc);
    ghd_ucg_expr(o, p, p->identity);
    ghd_strbuf_put(o, ";\n    unsigned long long start = 0;\n"
                      "    long long ghd_next = clock64() + " GHD_UCG_STR(GHD_UCG_STOP_CYCLES) "ll;\n");
    if (vec_elem) {
        unsigned w = 16 / vec_elem;
        ghd_strbuf_put(o, "    if (A.w[%d]) {\n        const unsigned long long nv = n / %u;\n"
               "        for (unsigned long long v = tid; v < nv; v += stride) {\n"
               "            if (ghd_stopped(A, ghd_next))\n                goto ghd_end;\n"
               "            const unsigned long long e0 = v * %u;\n",
            GHD_UCG_W_VEC, w, w);
        for (int k = 0; k < d->nin; k++)
            if (is_buffer_param(p, k))
                ghd_strbuf_put(o, "            GhdVec<%s, %u> v%d = ((const GhdVec<%s, %u> *)b%d)[v];\n",
                    ghd_ucg_stype(p->param_type[k]), w, k, ghd_ucg_stype(p->param_type[k]), w, k);
        ghd_strbuf_put(o, "#pragma unroll\n            for (int j = 0; j < %u; j++)\n                acc = ghd_red(acc, ", w);
        elem_call(o, p, "ghd_map", "e0 + j", 1, 0);
        ghd_strbuf_put(o, ");\n        }\n        start = nv * %u;\n    }\n", w);
    }
    ghd_strbuf_put(o, "    for (unsigned long long e = start + tid; e < n; e += stride) {\n"
                      "        if (ghd_stopped(A, ghd_next))\n            goto ghd_end;\n"
                      "        acc = ghd_red(acc, ");
    elem_call(o, p, "ghd_map", "e", 0, 0);
    ghd_strbuf_put(o, ");\n    }\nghd_end:;\n");
    /* the block's partial, then the last block combines them all */
    ghd_strbuf_put(o, "    __shared__ %s sh[%d];\n    __shared__ bool last;\n"
           "    sh[threadIdx.x] = acc;\n    __syncthreads();\n"
           "    for (unsigned s = %d; s > 0; s >>= 1) {\n"
           "        if (threadIdx.x < s)\n            sh[threadIdx.x] = ghd_red(sh[threadIdx.x], sh[threadIdx.x + s]);\n"
           "        __syncthreads();\n    }\n"
           "    %s *partials = (%s *)A.w[%d];\n"
           "    if (threadIdx.x == 0) {\n        partials[blockIdx.x] = sh[0];\n        __threadfence();\n"
           "        unsigned done = atomicAdd((unsigned *)A.w[%d], 1u);\n"
           "        last = done == gridDim.x - 1;\n    }\n    __syncthreads();\n"
           "    if (!last)\n        return;\n"
           "    __threadfence();\n",
        acc, GHD_UCG_THREADS, GHD_UCG_THREADS / 2, acc, acc, GHD_UCG_W_PARTIALS, GHD_UCG_W_COUNTER);
    ghd_strbuf_put(o, "    acc = ");
    ghd_ucg_expr(o, p, p->identity);
    ghd_strbuf_put(o, ";\n    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)\n"
           "        acc = ghd_red(acc, ((volatile %s *)partials)[b]);\n"
           "    sh[threadIdx.x] = acc;\n    __syncthreads();\n"
           "    for (unsigned s = %d; s > 0; s >>= 1) {\n"
           "        if (threadIdx.x < s)\n            sh[threadIdx.x] = ghd_red(sh[threadIdx.x], sh[threadIdx.x + s]);\n"
           "        __syncthreads();\n    }\n"
           "    if (threadIdx.x == 0) {\n        %s r = ghd_post(sh[0], (long long)n);\n"
           "        *(unsigned long long *)A.w[%d] = ghd_word(r);\n",
        acc, GHD_UCG_THREADS / 2, ghd_ucg_ctype(tout), GHD_UCG_W_RESULT);
    ghd_strbuf_put(o, "        if (A.w[%d])\n            *(%s *)A.w[%d] = ", GHD_UCG_W_PARAM(out), ghd_ucg_stype(tout),
        GHD_UCG_W_PARAM(out));
    ghd_ucg_store(o, tout, "r");
    ghd_strbuf_put(o, ";\n    }\n}\n");
}

/* The vector path's element size: every buffer the loop reads or writes
 * has it (0 when they differ, or there is none, or one is i8). i8 goes
 * element by element: NVRTC 13 drops the sign extension of lanes 0, 4, 8
 * and 12 of a 16-byte vector of i8 after arithmetic (the PTX adds to the
 * 16-bit register that holds two lanes and compares it unextended), so
 * max(57 + y, y) came out wrong on the GPU. */
static unsigned common_elem_size(const struct ghd_uprog *p)
{
    const struct ghd_udef *d = p->def;
    unsigned size = 0;
    int last = d->kind == GHD_UK_REDUCTION ? d->nin : d->nparams;
    for (int k = 0; k < last; k++) {
        if (!is_buffer_param(p, k))
            continue;
        unsigned s = (unsigned)ghd_utype_size(p->param_type[k]);
        if (p->param_type[k] == GHD_UT_I8 || (size && s != size))
            return 0;
        size = s;
    }
    return size;
}

int ghd_ucodegen(const struct ghd_uprog *p, char **outp, unsigned *vec_elem, struct ghd_err *e)
{
    const struct ghd_udef *d = p->def;
    struct ghd_strbuf o = {0};
    *outp = NULL;
    *vec_elem = common_elem_size(p);
    ghd_strbuf_put(&o, "// gpuhttpd user kernel '%s' (generated; do not edit)\n", d->name);
    ghd_strbuf_put(&o, "%s", (const char *)ghd_uops_source);
    ghd_strbuf_put(&o, "%s", prelude);
    raw_readers(&o, p);
    if (d->kind == GHD_UK_ELEMENTWISE) {
        ghd_strbuf_put(&o, "static __device__ __forceinline__ void ghd_elem(");
        elem_params(&o, p, 1);
        ghd_strbuf_put(&o, ")\n{\n");
        statements(&o, p);
        ghd_strbuf_put(&o, "}\n");
        ewise_kernel(&o, p, *vec_elem);
    } else {
        reduce_kernel(&o, p, *vec_elem);
    }
    if (o.failed) {
        free(o.buf);
        return ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
    }
    *outp = o.buf;
    return 0;
}
