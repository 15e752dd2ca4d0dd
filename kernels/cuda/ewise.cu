/* CUDA: elementwise binary and unary operations, by the rules of
 * kernels/scalar.h (integers wrap; x / 0 is 0; floats min/max as fmin/fmax). */
#include "map.cuh"

namespace ghd {

template <typename T, int OP>
struct BinOp {
    __device__ __forceinline__ T operator()(T x, T y) const
    {
        if constexpr (std::is_floating_point<T>::value) {
            if constexpr (OP == GHD_KOP_ADD)
                return x + y;
            else if constexpr (OP == GHD_KOP_SUB)
                return x - y;
            else if constexpr (OP == GHD_KOP_MUL)
                return x * y;
            else if constexpr (OP == GHD_KOP_DIV)
                return x / y;
            else if constexpr (OP == GHD_KOP_MIN)
                return fmin(x, y);
            else
                return fmax(x, y);
        } else {
            using U = typename std::make_unsigned<T>::type;
            if constexpr (OP == GHD_KOP_ADD)
                return wrap_to<T>((U)((U)x + (U)y));
            else if constexpr (OP == GHD_KOP_SUB)
                return wrap_to<T>((U)((U)x - (U)y));
            else if constexpr (OP == GHD_KOP_MUL)
                return wrap_to<T>((U)((U)x * (U)y));
            else if constexpr (OP == GHD_KOP_DIV) {
                if constexpr (std::is_same<T, int32_t>::value)
                    return ghd_div_i32(x, y);
                else if constexpr (std::is_same<T, int64_t>::value)
                    return ghd_div_i64(x, y);
                else
                    return y ? (T)(x / y) : (T)0;
            } else if constexpr (OP == GHD_KOP_MIN)
                return x < y ? x : y;
            else
                return x > y ? x : y;
        }
    }
};

template <typename T, int OP>
struct UnOp {
    __device__ __forceinline__ T operator()(T x) const
    {
        if constexpr (std::is_floating_point<T>::value) {
            if constexpr (OP == GHD_KOP_ABS)
                return fabs(x);
            else if constexpr (OP == GHD_KOP_NEG)
                return -x;
            else if constexpr (OP == GHD_KOP_SQRT)
                return sqrt(x);
            else if constexpr (OP == GHD_KOP_EXP)
                return exp(x);
            else
                return log(x);
        } else {
            using U = typename std::make_unsigned<T>::type;
            if (OP == GHD_KOP_ABS && x >= 0)
                return x;
            return wrap_to<T>((U)(U(0) - (U)x));
        }
    }
};

template <typename T>
static int binary_typed(ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    const T *xs = static_cast<const T *>(a->p[GHD_S_X]);
    const T *ys = static_cast<const T *>(a->p[GHD_S_Y]);
    T *zs = static_cast<T *>(a->p[GHD_S_Z]);
    switch (a->op) {
    case GHD_KOP_ADD:
        return launch_map2(x, xs, ys, zs, a->n, BinOp<T, GHD_KOP_ADD>{});
    case GHD_KOP_SUB:
        return launch_map2(x, xs, ys, zs, a->n, BinOp<T, GHD_KOP_SUB>{});
    case GHD_KOP_MUL:
        return launch_map2(x, xs, ys, zs, a->n, BinOp<T, GHD_KOP_MUL>{});
    case GHD_KOP_DIV:
        return launch_map2(x, xs, ys, zs, a->n, BinOp<T, GHD_KOP_DIV>{});
    case GHD_KOP_MIN:
        return launch_map2(x, xs, ys, zs, a->n, BinOp<T, GHD_KOP_MIN>{});
    case GHD_KOP_MAX:
        return launch_map2(x, xs, ys, zs, a->n, BinOp<T, GHD_KOP_MAX>{});
    default:
        return GHD_EINTERNAL;
    }
}

template <typename T>
static int unary_typed(ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    const T *xs = static_cast<const T *>(a->p[GHD_S_X]);
    T *ys = static_cast<T *>(a->p[GHD_S_Y]);
    switch (a->op) {
    case GHD_KOP_ABS:
        return launch_map1(x, xs, ys, a->n, UnOp<T, GHD_KOP_ABS>{});
    case GHD_KOP_NEG:
        return launch_map1(x, xs, ys, a->n, UnOp<T, GHD_KOP_NEG>{});
    }
    if constexpr (std::is_floating_point<T>::value) {
        switch (a->op) {
        case GHD_KOP_SQRT:
            return launch_map1(x, xs, ys, a->n, UnOp<T, GHD_KOP_SQRT>{});
        case GHD_KOP_EXP:
            return launch_map1(x, xs, ys, a->n, UnOp<T, GHD_KOP_EXP>{});
        case GHD_KOP_LOG:
            return launch_map1(x, xs, ys, a->n, UnOp<T, GHD_KOP_LOG>{});
        }
    }
    return GHD_EINTERNAL;
}

} // namespace ghd

using namespace ghd;

extern "C" int ghd_cuda_binary(struct ghd_kexec *x)
{
    int rc = enter(x);
    if (rc)
        return rc;
    return dispatch_numeric(x->args->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return binary_typed<T>(x);
    });
}

extern "C" int ghd_cuda_unary(struct ghd_kexec *x)
{
    int rc = enter(x);
    if (rc)
        return rc;
    switch (x->args->dtype) {
    case GHD_DTYPE_F32:
        return unary_typed<float>(x);
    case GHD_DTYPE_F64:
        return unary_typed<double>(x);
    case GHD_DTYPE_I32:
        return unary_typed<int32_t>(x);
    case GHD_DTYPE_I64:
        return unary_typed<int64_t>(x);
    default:
        return GHD_EINTERNAL;
    }
}
