/* Array descriptions and NumPy's .npy header (see npy.h for the layout).
 * The header is a Python literal; we parse the small subset NumPy writes,
 * strictly (NumPy's own reader also demands exactly these three keys), and
 * say precisely why a header we refuse is refused. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/parse.h"
#include "kernels/kernel.h"

static const char magic[6] = "\x93NUMPY";

/* Our dtype names, NumPy's type character and element size. Names follow the
 * kernels' (f32, i32...) so that a described buffer feeds runs directly. */
static const struct {
    const char *name;
    char kind; /* 0: NumPy has no such type (bf16) */
    size_t size;
} dtypes[] = {
    {"bool", 'b', 1}, {"i8", 'i', 1},   {"u8", 'u', 1},  {"i16", 'i', 2},
    {"u16", 'u', 2},  {"i32", 'i', 4},  {"u32", 'u', 4}, {"i64", 'i', 8},
    {"u64", 'u', 8},  {"f16", 'f', 2},  {"f32", 'f', 4}, {"f64", 'f', 8},
    {"c64", 'c', 8},  {"c128", 'c', 16}, {"bf16", 0, 2},
};
#define DTYPE_COUNT (sizeof(dtypes) / sizeof(dtypes[0]))

static int dtype_index(const char *name)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (name && strcmp(name, dtypes[i].name) == 0)
            return (int)i;
    return -1;
}

size_t ghd_array_itemsize(const char *dtype)
{
    int i = dtype_index(dtype);
    return i < 0 ? 0 : dtypes[i].size;
}

const char *ghd_array_dtype_names(void)
{
    return "bool, i8, u8, i16, u16, i32, u32, i64, u64, f16, f32, f64, c64, c128, bf16";
}

const char *ghd_array_dtype_suggest(const char *name)
{
    const char *names[DTYPE_COUNT];
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        names[i] = dtypes[i].name;
    return ghd_dtype_suggest(name, names, DTYPE_COUNT);
}

int ghd_array_nbytes(const struct ghd_array_desc *d, uint64_t *elements, uint64_t *bytes)
{
    size_t item = ghd_array_itemsize(d->dtype);
    if (!item || d->ndim > GHD_ARRAY_NDIM_MAX)
        return GHD_EINVAL;
    uint64_t n = 1;
    for (unsigned i = 0; i < d->ndim; i++) {
        if (d->shape[i] && n > UINT64_MAX / d->shape[i])
            return GHD_ERANGE;
        n *= d->shape[i];
    }
    if (n > UINT64_MAX / item)
        return GHD_ERANGE;
    if (elements)
        *elements = n;
    if (bytes)
        *bytes = n * item;
    return 0;
}

int ghd_npy_header_need(const void *p, size_t len, size_t *need, struct ghd_err *err)
{
    const unsigned char *b = p;
    size_t check = len < sizeof(magic) ? len : sizeof(magic);
    if (memcmp(b, magic, check) != 0)
        return ghd_err_set(err, GHD_EINVAL,
                           "the body does not start with the .npy magic \\x93NUMPY");
    if (len < 8) {
        *need = 8;
        return 0;
    }
    unsigned major = b[6], minor = b[7];
    if (minor != 0 || major < 1 || major > 3)
        return ghd_err_set(err, GHD_EUNPROC,
                           ".npy format version %u.%u is not supported (1.0, 2.0 and 3.0 are)",
                           major, minor);
    size_t prefix = major == 1 ? 10 : 12;
    if (len < prefix) {
        *need = prefix;
        return 0;
    }
    uint32_t hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8;
    if (major > 1)
        hlen |= (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
    if (hlen > GHD_NPY_HEADER_MAX)
        return ghd_err_set(err, GHD_ETOOBIG,
                           "the .npy header is %u bytes; at most %d are allowed, as NumPy allows",
                           hlen, GHD_NPY_HEADER_MAX);
    *need = prefix + hlen;
    return 0;
}

/* A cursor over the header's dict literal. */
struct lit {
    const char *start, *p, *end;
    struct ghd_err *err;
};

static void skip_ws(struct lit *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
        l->p++;
}

static int eat(struct lit *l, char c)
{
    skip_ws(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return 1;
    }
    return 0;
}

static int syntax(struct lit *l, const char *what)
{
    return ghd_err_set(l->err, GHD_EINVAL,
                       "malformed .npy header: expected %s at byte %ld of the dict", what,
                       (long)(l->p - l->start));
}

/* A quoted string without escapes (NumPy's keys and simple descrs have none).
 * A control character is refused: a NUL would end the C string it is
 * compared as, so that '<f4\0' read as '<f4'. */
static int string_lit(struct lit *l, char *out, size_t cap)
{
    skip_ws(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"'))
        return syntax(l, "a quoted string");
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        unsigned char c = (unsigned char)*l->p;
        if (c < 0x20 || c == 0x7f)
            return ghd_err_set(l->err, GHD_EINVAL,
                               "malformed .npy header: a string holds the control character "
                               "0x%02x at byte %ld of the dict",
                               c, (long)(l->p - l->start));
        if (c == '\\' || n + 1 >= cap)
            return ghd_err_set(l->err, GHD_EUNPROC,
                               "unsupported .npy header: a string is too long or has escapes");
        out[n++] = *l->p++;
    }
    if (l->p >= l->end)
        return syntax(l, "a closing quote");
    l->p++;
    out[n] = '\0';
    return 0;
}

static int descr_lit(struct lit *l, struct ghd_array_desc *out)
{
    skip_ws(l);
    if (l->p < l->end && *l->p == '[')
        return ghd_err_set(l->err, GHD_EUNPROC,
                           "structured dtypes (a descr list of fields) are not supported; "
                           "store each field as its own array");
    char d[32];
    int rc = string_lit(l, d, sizeof(d));
    if (rc)
        return rc;
    char order = d[0];
    const char *t = d;
    if (order == '<' || order == '>' || order == '|' || order == '=')
        t++;
    else
        order = '=';
    if (t[0] == 'O')
        return ghd_err_set(l->err, GHD_EUNPROC,
                           "object arrays (descr '%s') are not supported: they hold Python "
                           "objects, not numbers",
                           d);
    uint64_t size = 0;
    if (!t[0] || ghd_parse_u64(t + 1, &size) || !size)
        return ghd_err_set(l->err, GHD_EUNPROC,
                           "unsupported dtype descr '%s' (supported: little-endian bool, integers, "
                           "floats and complex)",
                           d);
    int found = -1;
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtypes[i].kind == t[0] && dtypes[i].size == size)
            found = (int)i;
    if (found < 0)
        return ghd_err_set(l->err, GHD_EUNPROC,
                           "unsupported dtype descr '%s' (supported: little-endian bool, integers, "
                           "floats and complex)",
                           d);
    /* Byte order matters only for multi-byte types. '=' is native order,
     * which NumPy never writes into a file; a file must say which. */
    if (size > 1 && order == '>')
        return ghd_err_set(l->err, GHD_EUNPROC,
                           "big-endian dtype '%s' is not supported; convert it with "
                           "a.astype(a.dtype.newbyteorder('<'))",
                           d);
    if (size > 1 && order != '<')
        return ghd_err_set(l->err, GHD_EUNPROC,
                           "dtype '%s' does not say its byte order; only little-endian '<' is "
                           "supported",
                           d);
    snprintf(out->dtype, sizeof(out->dtype), "%s", dtypes[found].name);
    return 0;
}

static int bool_lit(struct lit *l, int *out)
{
    skip_ws(l);
    size_t left = (size_t)(l->end - l->p);
    if (left >= 4 && memcmp(l->p, "True", 4) == 0) {
        l->p += 4;
        *out = 1;
        return 0;
    }
    if (left >= 5 && memcmp(l->p, "False", 5) == 0) {
        l->p += 5;
        *out = 0;
        return 0;
    }
    return syntax(l, "True or False");
}

static int shape_lit(struct lit *l, struct ghd_array_desc *out)
{
    if (!eat(l, '('))
        return syntax(l, "a shape tuple");
    out->ndim = 0;
    for (;;) {
        if (eat(l, ')'))
            break;
        skip_ws(l);
        if (l->p >= l->end || *l->p < '0' || *l->p > '9')
            return syntax(l, "a non-negative integer in the shape");
        uint64_t v = 0;
        while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
            unsigned digit = (unsigned)(*l->p++ - '0');
            if (v > (UINT64_MAX - digit) / 10)
                return ghd_err_set(l->err, GHD_EUNPROC,
                                   "a dimension of the shape does not fit in 64 bits");
            v = v * 10 + digit;
        }
        if (l->p < l->end && *l->p == 'L') /* Python 2 longs, which NumPy still filters */
            l->p++;
        if (out->ndim == GHD_ARRAY_NDIM_MAX)
            return ghd_err_set(l->err, GHD_EUNPROC,
                               "the shape has more than %d dimensions", GHD_ARRAY_NDIM_MAX);
        out->shape[out->ndim++] = v;
        if (eat(l, ')'))
            break;
        if (!eat(l, ','))
            return syntax(l, "',' or ')' in the shape");
    }
    return 0;
}

int ghd_npy_parse(const void *p, size_t len, struct ghd_array_desc *out, struct ghd_err *err)
{
    size_t need;
    int rc = ghd_npy_header_need(p, len, &need, err);
    if (rc)
        return rc;
    if (len < 8 || len != need)
        return ghd_err_set(err, GHD_EINVAL, "the .npy header is incomplete: %zu of %zu bytes",
                           len, need);
    size_t prefix = ((const unsigned char *)p)[6] == 1 ? 10 : 12;
    const char *dict = (const char *)p + prefix;
    struct lit l = {dict, dict, (const char *)p + len, err};
    memset(out, 0, sizeof(*out));
    if (!eat(&l, '{'))
        return syntax(&l, "'{'");
    unsigned seen = 0; /* bits: descr, fortran_order, shape */
    int fortran = 0;
    for (;;) {
        if (eat(&l, '}'))
            break;
        char key[32];
        if ((rc = string_lit(&l, key, sizeof(key))) != 0)
            return rc;
        if (!eat(&l, ':'))
            return syntax(&l, "':'");
        unsigned bit;
        if (strcmp(key, "descr") == 0) {
            bit = 1;
            rc = descr_lit(&l, out);
        } else if (strcmp(key, "fortran_order") == 0) {
            bit = 2;
            rc = bool_lit(&l, &fortran);
        } else if (strcmp(key, "shape") == 0) {
            bit = 4;
            rc = shape_lit(&l, out);
        } else {
            return ghd_err_set(err, GHD_EINVAL,
                               "the .npy header has an unexpected key '%s' (NumPy writes exactly "
                               "descr, fortran_order and shape)",
                               key);
        }
        if (rc)
            return rc;
        if (seen & bit)
            return ghd_err_set(err, GHD_EINVAL, "the .npy header repeats '%s'", key);
        seen |= bit;
        if (eat(&l, '}'))
            break;
        if (!eat(&l, ','))
            return syntax(&l, "',' or '}'");
    }
    if (seen != 7)
        return ghd_err_set(err, GHD_EINVAL, "the .npy header lacks %s",
                           !(seen & 1)   ? "'descr'"
                           : !(seen & 2) ? "'fortran_order'"
                                         : "'shape'");
    skip_ws(&l);
    if (l.p != l.end)
        return ghd_err_set(err, GHD_EINVAL,
                           "the .npy header has bytes after its dict (only space padding may "
                           "follow)");
    if (fortran)
        return ghd_err_set(err, GHD_EUNPROC,
                           "Fortran-order (column-major) arrays are not supported; save "
                           "np.ascontiguousarray(a) instead");
    uint64_t bytes;
    if (ghd_array_nbytes(out, NULL, &bytes) != 0)
        return ghd_err_set(err, GHD_EUNPROC, "the shape's byte count does not fit in 64 bits");
    return 0;
}

int ghd_npy_format(const struct ghd_array_desc *d, char *buf, size_t cap, size_t *len)
{
    int i = dtype_index(d->dtype);
    if (i < 0 || !dtypes[i].kind || d->ndim > GHD_ARRAY_NDIM_MAX)
        return GHD_EINVAL;
    char dict[GHD_NPY_FORMAT_MAX];
    int n = snprintf(dict, sizeof(dict), "{'descr': '%c%c%zu', 'fortran_order': False, 'shape': (",
                     dtypes[i].size == 1 ? '|' : '<', dtypes[i].kind, dtypes[i].size);
    for (unsigned k = 0; k < d->ndim && n > 0 && (size_t)n < sizeof(dict); k++)
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%s%llu", k ? ", " : "",
                      (unsigned long long)d->shape[k]);
    if (n > 0 && (size_t)n < sizeof(dict))
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%s), }", d->ndim == 1 ? "," : "");
    if (n <= 0 || (size_t)n >= sizeof(dict))
        return GHD_EINVAL;
    /* The data starts at a multiple of 64 bytes (NumPy's ARRAY_ALIGN); the
     * padding is spaces and the header ends with '\n'. */
    size_t total = 10 + (size_t)n + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap)
        return GHD_ETOOBIG;
    size_t hlen = total - 10;
    memcpy(buf, magic, 6);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', hlen - (size_t)n - 1);
    buf[total - 1] = '\n';
    *len = total;
    return 0;
}
