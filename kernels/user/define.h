#ifndef GHD_KERNELS_USER_DEFINE_H
#define GHD_KERNELS_USER_DEFINE_H

/* A definition's JSON (POST /v1/kernels) into a parsed and checked
 * struct ghd_udef. */
#include <jansson.h>

#include "ulang.h"

struct ghd_ulimits {
    size_t max_definition; /* bytes of text over all fields */
    unsigned max_depth;    /* expression nesting */
    /* The largest n of a call that no buffer bounds (ucall.c); 0 = no cap. */
    uint64_t max_elements;
};

/* Reads `def` into *d (caller-owned, cleared with ghd_udef_clear also on
 * failure). Errors: GHD_EINVAL (a field missing, of the wrong JSON type, or
 * unknown), GHD_ETOOBIG (over max_definition), GHD_EUNPROC (the language:
 * the detail names field, line and column). A definition with placeholders
 * must type check with them all bound to f32 or all bound to i32; each
 * binding is checked again when a run uses it. */
int ghd_udef_from_json(json_t *def, const struct ghd_ulimits *lim, struct ghd_udef *d,
                       struct ghd_err *e);
/* Whether `name` may name a kernel: [A-Za-z_][A-Za-z0-9_]{0,63}. */
int ghd_ukernel_name_valid(const char *name);

#endif
