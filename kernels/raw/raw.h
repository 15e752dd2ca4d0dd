#ifndef GHD_KERNELS_RAW_RAW_H
#define GHD_KERNELS_RAW_RAW_H

/* Raw CUDA modules: a trusted tenant's own CUDA C++ source,
 * compiled by NVRTC for the device's exact architecture (through the user
 * kernel compiler's pool and cache) and launched with the tenant's own
 * grid, block, shared memory and arguments.
 *
 * Nothing here sandboxes the code: a module's kernels can read and write
 * any device memory of the process, other tenants' buffers included, and a
 * faulting kernel poisons the device's context. The service therefore
 * accepts modules only with --allow-raw-kernels and, with tokens, from
 * tokens with the "raw" permission (core/auth.h).
 *
 * The pure parts (option allow-list, source check, argument packing,
 * launch shape) need no device and are unit tested on the host
 * (tests/unit/test_raw.c; the source check is fuzzed by
 * tests/fuzz/fuzz_raw_source.c). */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define GHD_RAW_MAX_OPTIONS 32
#define GHD_RAW_MAX_OPTION_LEN 256
#define GHD_RAW_MAX_NAMES 64
#define GHD_RAW_MAX_FUNCS 64
#define GHD_RAW_MAX_ARGS 32
#define GHD_RAW_ARG_BYTES 4096 /* CUDA takes 4 KiB of parameters on every architecture */
#define GHD_RAW_NAME_MAX 256

/* ---- options.c --------------------------------------------------------- */

/* Called for entry i of a string array, in order; 0, or a code with a
 * detail naming <field>[i]. */
typedef int (*ghd_raw_string_fn)(void *ctx, const char *field, size_t i, const char *s,
                                 size_t len, struct ghd_err *err);
/* The module body's field `field`: NULL, or an array of at most `max`
 * strings, each passed to `each`. GHD_EINVAL for a wrong JSON type and
 * GHD_EUNPROC for too many entries, naming the field or the entry. */
int ghd_raw_strings(json_t *v, const char *field, unsigned max, ghd_raw_string_fn each,
                    void *ctx, struct ghd_err *err);

/* Checks `options` (a JSON array of strings, or NULL) against the allow-list:
 * language and code generation options only, nothing that reads a file or
 * writes one (-I, --include-path, -include, --pre-include, -dlto ... are
 * refused). Fills out[0..*n) with borrowed strings and a NULL after them.
 * GHD_EINVAL for a wrong JSON type, GHD_EUNPROC naming the option refused.
 * pre: out has GHD_RAW_MAX_OPTIONS + 1 slots. */
int ghd_raw_options_check(json_t *options, const char **out, unsigned *n, struct ghd_err *err);

/* ---- source.c ---------------------------------------------------------- */

/* Refuses a source that could make NVRTC read a file of the server or ask
 * whether one exists, judged after trigraphs and line splices (with and
 * without trigraphs): a '#' with "include", "include_next", "import" or
 * "embed" after it, the digraph '%:', the identifiers __has_include,
 * __has_include_next and __has_embed, token pasting when the module's
 * identifiers (its -D options' too) could be pasted into one of those; and
 * a NUL. `options` (NULL-terminated, or NULL) are the module's options,
 * already allowed. GHD_EUNPROC naming the line (or the option). */
int ghd_raw_source_check(const char *src, size_t len, const char *const *options,
                         struct ghd_err *err);

/* ---- args.c: arguments packed as the kernel's C parameters --------------- */

enum ghd_raw_kind {
    GHD_RAW_BUFFER, /* a device pointer: a buffer's address plus a byte offset */
    GHD_RAW_I8, GHD_RAW_U8, GHD_RAW_I16, GHD_RAW_U16, GHD_RAW_I32, GHD_RAW_U32,
    GHD_RAW_I64, GHD_RAW_U64, GHD_RAW_F32, GHD_RAW_F64,
    GHD_RAW_KIND_COUNT
};

enum ghd_raw_access { GHD_RAW_IN = 1, GHD_RAW_OUT = 2, GHD_RAW_INOUT = 3 };

struct ghd_raw_arg {
    enum ghd_raw_kind kind;
    size_t size, align, offset; /* in the packed parameter block */
    /* buffers */
    char buffer[64];            /* its id */
    uint64_t byte_offset;
    enum ghd_raw_access access;
};

struct ghd_raw_pack {
    unsigned nargs;
    struct ghd_raw_arg a[GHD_RAW_MAX_ARGS];
    size_t size;                                    /* bytes used */
    _Alignas(16) unsigned char bytes[GHD_RAW_ARG_BYTES]; /* scalars in place; pointers later */
};

/* "f32", "i64", ...; the element size of a kind. */
const char *ghd_raw_kind_name(enum ghd_raw_kind k);

/* Parses `args` (a JSON array of {"buffer": id, "offset": bytes, "access":
 * "in"|"out"|"inout"} and {"<type>": value} objects) into p: each argument at
 * the next offset aligned to its size, scalars written in place (range
 * checked for their type), buffers left for ghd_raw_pack_pointer. GHD_EINVAL
 * or GHD_EUNPROC with a detail naming args[i]. */
int ghd_raw_args_parse(json_t *args, struct ghd_raw_pack *p, struct ghd_err *err);
/* Writes a device address into buffer argument i. */
void ghd_raw_pack_pointer(struct ghd_raw_pack *p, unsigned i, uint64_t address);

/* The kernel's own parameter layout (cudaFuncGetParamInfo). */
struct ghd_raw_params {
    unsigned n;
    uint32_t offset[GHD_RAW_MAX_ARGS], size[GHD_RAW_MAX_ARGS];
};
/* 0 when the packed arguments match the function's parameters one by one
 * in count, size and offset; GHD_EUNPROC naming the first that does not. */
int ghd_raw_args_match(const struct ghd_raw_pack *p, const struct ghd_raw_params *k,
                       const char *function, struct ghd_err *err);

/* ---- shape.c: the launch shape ------------------------------------------- */

struct ghd_raw_limits {
    unsigned max_threads;   /* the function's maxThreadsPerBlock */
    size_t static_shared;   /* its static shared memory */
    size_t max_dyn_shared;  /* its maxDynamicSharedSizeBytes */
    unsigned max_block[3];  /* the device's */
    unsigned max_grid[3];
};

struct ghd_raw_shape {
    unsigned grid[3], block[3];
    size_t shared_mem;
};

/* Parses "grid" and "block" (arrays of 1 to 3 positive integers; missing
 * dimensions are 1) and "shared_mem" (bytes, default 0) from `launch` and
 * checks them against the limits. GHD_EINVAL for a wrong type, GHD_EUNPROC
 * naming the field past its limit. */
int ghd_raw_shape_parse(json_t *launch, const struct ghd_raw_limits *lim, struct ghd_raw_shape *out,
                        struct ghd_err *err);

#endif
