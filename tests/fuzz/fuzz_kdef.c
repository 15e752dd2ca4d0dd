/* libFuzzer: user kernel definitions (kernels/user/) from arbitrary JSON
 * text, through the parser and type checker; what defines is then bound
 * (placeholders f32, then i8; the first input a scalar) and run by the host
 * interpreter on four elements of every buffer. Invariants: a refusal is
 * 400, 413 or 422 with a detail; nothing crashes, leaks or trips a
 * sanitizer (the interpreter's integer and conversion corner cases are
 * UBSan's to find). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/user/define.h"
#include "base/error.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run_binding(const struct ghd_udef *d, int ph, uint32_t scalars)
{
    struct ghd_ubind b = {.scalar_mask = scalars};
    struct ghd_uprog p;
    struct ghd_err e = {0};
    for (int k = 0; k < 26; k++)
        b.ph_type[k] = ph;
    int rc = ghd_ucheck(d, &b, &p, &e);
    if (rc != 0) {
        CHECK(rc == GHD_EUNPROC && e.detail[0]);
        return;
    }
    static uint64_t mem[GHD_U_MAX_PARAMS][4]; /* 4 elements of up to 8 bytes */
    struct ghd_uarg args[GHD_U_MAX_PARAMS];
    memset(args, 0, sizeof(args));
    for (int k = 0; k < d->nparams; k++) {
        for (int j = 0; j < 4; j++)
            mem[k][j] = 0x9e3779b97f4a7c15ULL * (uint64_t)(k * 4 + j + 1);
        if (scalars & (1u << k)) {
            args[k].v.u = 0;
            continue;
        }
        args[k].ptr = mem[k];
        args[k].len = 4;
    }
    union ghd_uval acc;
    CHECK(ghd_uinterp_run(&p, args, 4, NULL, &acc, &e) == 0);
    ghd_uprog_clear(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    json_t *def = json_loadb((const char *)data, size, JSON_ALLOW_NUL, NULL);
    if (!def)
        return 0;
    struct ghd_ulimits lim = {.max_definition = 4096, .max_depth = 64};
    struct ghd_udef d;
    struct ghd_err e = {0};
    int rc = ghd_udef_from_json(def, &lim, &d, &e);
    if (rc) {
        CHECK(rc == GHD_EINVAL || rc == GHD_EUNPROC || rc == GHD_ETOOBIG);
        CHECK(e.detail[0] != '\0');
    } else {
        run_binding(&d, GHD_UT_F32, 0);
        run_binding(&d, GHD_UT_I8, d.nin && !d.params[0].is_raw ? 1u : 0u);
    }
    ghd_udef_clear(&d);
    json_decref(def);
    return 0;
}
