/* Packing a raw launch's arguments as the kernel's C parameters: each at
 * the next offset aligned to its own size (the C ABI of the CUDA parameter
 * space for scalars and pointers), scalars range checked for their type.
 * The result is then compared with the function's real layout
 * (cudaFuncGetParamInfo), so a wrong count or type is a 422, never a
 * kernel that reads a misplaced value. */
#include "raw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "base/err.h"
#include "base/error.h"
#include "base/json_u64.h"

static const struct {
    const char *name;
    size_t size;
    int is_float, is_signed;
} kinds[GHD_RAW_KIND_COUNT] = {
    [GHD_RAW_BUFFER] = {"buffer", 8, 0, 0}, [GHD_RAW_I8] = {"i8", 1, 0, 1},
    [GHD_RAW_U8] = {"u8", 1, 0, 0},         [GHD_RAW_I16] = {"i16", 2, 0, 1},
    [GHD_RAW_U16] = {"u16", 2, 0, 0},       [GHD_RAW_I32] = {"i32", 4, 0, 1},
    [GHD_RAW_U32] = {"u32", 4, 0, 0},       [GHD_RAW_I64] = {"i64", 8, 0, 1},
    [GHD_RAW_U64] = {"u64", 8, 0, 0},       [GHD_RAW_F32] = {"f32", 4, 1, 1},
    [GHD_RAW_F64] = {"f64", 8, 1, 1},
};

const char *ghd_raw_kind_name(enum ghd_raw_kind k)
{
    return (unsigned)k < GHD_RAW_KIND_COUNT ? kinds[k].name : "?";
}

static int parse_buffer(json_t *o, unsigned i, struct ghd_raw_arg *a, struct ghd_err *err)
{
    json_t *id = json_object_get(o, "buffer"), *off = json_object_get(o, "offset"),
           *acc = json_object_get(o, "access");
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (strcmp(key, "buffer") && strcmp(key, "offset") && strcmp(key, "access"))
            return ghd_err_set(err, GHD_EINVAL,
                               "args[%u]: unknown field '%.32s' (a "
                               "buffer takes buffer, offset and access)",
                               i, key);
    }
    if (!json_is_string(id) || json_string_length(id) >= sizeof(a->buffer))
        return ghd_err_set(err, GHD_EINVAL, "args[%u].buffer must be a buffer id", i);
    snprintf(a->buffer, sizeof(a->buffer), "%s", json_string_value(id));
    a->byte_offset = 0;
    if (off) {
        if (!json_is_integer(off) || json_integer_value(off) < 0)
            return ghd_err_set(err, GHD_EUNPROC, "args[%u].offset must be a byte offset >= 0", i);
        a->byte_offset = (uint64_t)json_integer_value(off);
    }
    a->access = GHD_RAW_INOUT;
    if (acc) {
        const char *s = json_is_string(acc) ? json_string_value(acc) : "";
        if (strcmp(s, "in") == 0)
            a->access = GHD_RAW_IN;
        else if (strcmp(s, "out") == 0)
            a->access = GHD_RAW_OUT;
        else if (strcmp(s, "inout") != 0)
            return ghd_err_set(err, GHD_EUNPROC, "args[%u].access must be in, out or inout", i);
    }
    a->kind = GHD_RAW_BUFFER;
    return 0;
}

/* Writes the scalar `v` as kind k at dst, refusing what k cannot hold. */
static int put_scalar(enum ghd_raw_kind k, json_t *v, unsigned i, unsigned char *dst,
                      struct ghd_err *err)
{
    const char *name = kinds[k].name;
    uint64_t big; /* 2^63 .. 2^64 - 1 (base/json_u64.h) */
    int is_big = ghd_json_u64_big(v, &big);
    if (kinds[k].is_float) {
        if (!json_is_number(v) && !is_big)
            return ghd_err_set(err, GHD_EUNPROC, "args[%u]: %s takes a number", i, name);
        double d = is_big ? (double)big : json_number_value(v);
        if (k == GHD_RAW_F32) {
            float f = (float)d;
            if (isinf(f) && !isinf(d))
                return ghd_err_set(err, GHD_EUNPROC, "args[%u]: %g is out of f32's range", i, d);
            memcpy(dst, &f, 4);
        } else {
            memcpy(dst, &d, 8);
        }
        return 0;
    }
    if (is_big) {
        if (kinds[k].size != 8 || kinds[k].is_signed)
            return ghd_err_set(err, GHD_EUNPROC, "args[%u]: %" PRIu64 " is out of %s's range", i,
                               big, name);
        memcpy(dst, &big, 8);
        return 0;
    }
    if (!json_is_integer(v))
        return ghd_err_set(err, GHD_EUNPROC, "args[%u]: %s takes an integer", i, name);
    json_int_t x = json_integer_value(v);
    int64_t lo, hi;
    switch (kinds[k].size) {
    case 1: lo = kinds[k].is_signed ? INT8_MIN : 0; hi = kinds[k].is_signed ? INT8_MAX : UINT8_MAX; break;
    case 2: lo = kinds[k].is_signed ? INT16_MIN : 0; hi = kinds[k].is_signed ? INT16_MAX : UINT16_MAX; break;
    case 4: lo = kinds[k].is_signed ? INT32_MIN : 0; hi = kinds[k].is_signed ? INT32_MAX : UINT32_MAX; break;
    default: lo = kinds[k].is_signed ? INT64_MIN : 0; hi = INT64_MAX; break;
    }
    if (x < lo || x > hi)
        return ghd_err_set(err, GHD_EUNPROC, "args[%u]: %lld is out of %s's range", i, (long long)x,
                           name);
    /* Little-endian, as the device is: the low bytes of the value. */
    int64_t w = x;
    memcpy(dst, &w, kinds[k].size);
    return 0;
}

int ghd_raw_args_parse(json_t *args, struct ghd_raw_pack *p, struct ghd_err *err)
{
    memset(p, 0, sizeof(*p));
    if (!args)
        return 0;
    if (!json_is_array(args))
        return ghd_err_set(err, GHD_EINVAL, "'args' must be an array");
    if (json_array_size(args) > GHD_RAW_MAX_ARGS)
        return ghd_err_set(err, GHD_EUNPROC, "'args' has more than %d arguments", GHD_RAW_MAX_ARGS);
    size_t i;
    json_t *o;
    json_array_foreach(args, i, o) {
        struct ghd_raw_arg *a = &p->a[i];
        unsigned idx = (unsigned)i;
        if (!json_is_object(o))
            return ghd_err_set(err, GHD_EINVAL, "args[%u] must be an object", idx);
        int rc;
        json_t *val = NULL;
        if (json_object_get(o, "buffer")) {
            rc = parse_buffer(o, idx, a, err);
        } else {
            const char *key = NULL;
            json_t *v;
            int k = -1;
            json_object_foreach(o, key, v) {
                val = v;
                break;
            }
            for (int t = GHD_RAW_I8; key && t < GHD_RAW_KIND_COUNT; t++)
                if (strcmp(key, kinds[t].name) == 0)
                    k = t;
            if (json_object_size(o) != 1 || k < 0)
                return ghd_err_set(err, GHD_EUNPROC,
                                   "args[%u] must be {\"buffer\": id, ...} or one {\"<type>\": "
                                   "value} with type i8, u8, i16, u16, i32, u32, i64, u64, f32 "
                                   "or f64",
                                   idx);
            a->kind = (enum ghd_raw_kind)k;
            rc = 0;
        }
        if (rc)
            return rc;
        a->size = a->align = kinds[a->kind].size;
        a->offset = (p->size + a->align - 1) & ~(a->align - 1);
        if (a->offset + a->size > sizeof(p->bytes))
            return ghd_err_set(err, GHD_EUNPROC, "args: more than %d bytes of parameters",
                               GHD_RAW_ARG_BYTES);
        if (a->kind != GHD_RAW_BUFFER &&
            (rc = put_scalar(a->kind, val, idx, p->bytes + a->offset, err)) != 0)
            return rc;
        p->size = a->offset + a->size;
        p->nargs = idx + 1;
    }
    return 0;
}

void ghd_raw_pack_pointer(struct ghd_raw_pack *p, unsigned i, uint64_t address)
{
    memcpy(p->bytes + p->a[i].offset, &address, 8);
}

int ghd_raw_args_match(const struct ghd_raw_pack *p, const struct ghd_raw_params *k,
                       const char *function, struct ghd_err *err)
{
    if (p->nargs != k->n)
        return ghd_err_set(err, GHD_EUNPROC, "args: %s takes %u parameters; %u were given",
                           function, k->n, p->nargs);
    for (unsigned i = 0; i < k->n; i++) {
        const struct ghd_raw_arg *a = &p->a[i];
        if (a->size != k->size[i])
            return ghd_err_set(err, GHD_EUNPROC,
                               "args[%u]: parameter %u of %s is %u bytes; %s is %zu", i, i,
                               function, k->size[i], ghd_raw_kind_name(a->kind), a->size);
        if (a->offset != k->offset[i])
            return ghd_err_set(err, GHD_EUNPROC,
                               "args[%u]: parameter %u of %s is at byte %u of its parameters, "
                               "not %zu (a parameter type this API cannot express, such as a "
                               "struct?)",
                               i, i, function, k->offset[i], a->offset);
    }
    return 0;
}
