/* User kernels' CUDA path without a GPU: the code generator's output for
 * every valid definition of kdefs/ (under several bindings) compiles with
 * NVRTC for sm_90, and the compile cache behaves as compile.h says (memory,
 * disk across a restart, a corrupt entry compiled again, the size bound,
 * the queue bound). Skipped (77) in a build without NVRTC. */
#include <dirent.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/user/codegen.h"
#include "kernels/user/compile.h"
#include "kernels/user/define.h"
#include "base/error.h"

static const struct ghd_ulimits limits = {.max_definition = 16384, .max_depth = 64};
static struct ghd_ucompiler *C;
static char dir[] = "/tmp/ghd-ucache-XXXXXX";

static char *source_of(const struct ghd_udef *d, int ph, uint32_t scalars)
{
    struct ghd_ubind b = {.scalar_mask = scalars};
    struct ghd_uprog p;
    struct ghd_err e = {0};
    char *src = NULL;
    unsigned vec;
    for (int k = 0; k < 26; k++)
        b.ph_type[k] = ph;
    if (ghd_ucheck(d, &b, &p, &e) != 0)
        return NULL; /* not every placeholder type fits every definition */
    assert_int_equal(ghd_ucodegen(&p, &src, &vec, &e), 0);
    ghd_uprog_clear(&p);
    return src;
}

static int define_file(const char *path, struct ghd_udef *d)
{
    json_t *def = json_load_file(path, 0, NULL);
    assert_non_null(def);
    struct ghd_err e = {0};
    int rc = ghd_udef_from_json(def, &limits, d, &e);
    json_decref(def);
    return rc;
}

static void test_every_valid_definition_compiles(void **state)
{
    (void)state;
    char root[512];
    snprintf(root, sizeof(root), "%s/valid", GHD_KDEFS_DIR);
    DIR *dh = opendir(root);
    assert_non_null(dh);
    struct dirent *de;
    int compiled = 0;
    while ((de = readdir(dh)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[800];
        snprintf(path, sizeof(path), "%s/%s/input.json", root, de->d_name);
        struct ghd_udef d;
        assert_int_equal(define_file(path, &d), 0);
        /* buffers everywhere; then every input that may be a scalar is one */
        uint32_t scalars = 0;
        for (int k = 0; k < d.nin; k++)
            if (!d.params[k].is_raw)
                scalars |= 1u << k;
        const int phs[] = {GHD_UT_F32, GHD_UT_I32, GHD_UT_F16};
        for (int v = 0; v < (d.placeholders[0] ? 3 : 1); v++) {
            for (int s = 0; s < 2; s++) {
                char *src = source_of(&d, d.placeholders[0] ? phs[v] : GHD_UT_NONE, s ? scalars : 0);
                if (!src)
                    continue;
                struct ghd_ucompiled r;
                struct ghd_err e = {0};
                int rc = ghd_ucompiler_compile(C, src, "sm_90", &r, &e);
                if (rc)
                    fail_msg("%s (binding %d/%d): %s\n%s", de->d_name, v, s, e.detail, src);
                assert_true(r.size > 0);
                ghd_ucompiled_clear(&r);
                free(src);
                compiled++;
            }
        }
        ghd_udef_clear(&d);
    }
    closedir(dh);
    assert_true(compiled >= 20);
}

static const char *compile_src(struct ghd_ucompiler *c, const char *src, size_t *size)
{
    struct ghd_ucompiled r;
    struct ghd_err e = {0};
    if (ghd_ucompiler_compile(c, src, "sm_90", &r, &e) != 0)
        fail_msg("compile: %s", e.detail);
    if (size)
        *size = r.size;
    ghd_ucompiled_clear(&r);
    return r.cache;
}

static struct ghd_ucompiler *compiler_new(size_t max_bytes, unsigned queue)
{
    struct ghd_ucompiler_config cfg = {.cache_dir = dir, .cache_max_bytes = max_bytes,
                                       .workers = 1, .queue = queue};
    struct ghd_ucompiler *c;
    struct ghd_err cerr = {0};
    assert_int_equal(ghd_ucompiler_new(&cfg, &c, &cerr), 0);
    return c;
}

static size_t dir_entries(char *first, size_t len)
{
    DIR *dh = opendir(dir);
    struct dirent *de;
    size_t n = 0;
    while ((de = readdir(dh)) != NULL)
        if (strstr(de->d_name, ".cubin")) {
            if (first && n == 0)
                snprintf(first, len, "%s/%s", dir, de->d_name);
            n++;
        }
    closedir(dh);
    return n;
}

static void test_cache(void **state)
{
    (void)state;
    const char *a = "extern \"C\" __global__ void ghd_ukernel(float *p) { p[threadIdx.x] *= 2.0f; }\n";
    const char *b = "extern \"C\" __global__ void ghd_ukernel(float *p) { p[threadIdx.x] += 1.0f; }\n";
    struct ghd_ucompiler *c = compiler_new(1 << 30, 4);
    size_t size;
    assert_string_equal(compile_src(c, a, &size), "miss");
    assert_string_equal(compile_src(c, a, NULL), "memory");
    ghd_ucompiler_free(c);
    /* a restart with the same folder compiles nothing */
    c = compiler_new(1 << 30, 4);
    assert_string_equal(compile_src(c, a, NULL), "disk");
    assert_string_equal(compile_src(c, a, NULL), "memory");
    ghd_ucompiler_free(c);
    /* a corrupt entry: compiled again, and rewritten good */
    char path[600];
    assert_int_equal(dir_entries(path, sizeof(path)), 1);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 200, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    c = compiler_new(1 << 30, 4);
    assert_string_equal(compile_src(c, a, NULL), "miss");
    ghd_ucompiler_free(c);
    c = compiler_new(1 << 30, 4);
    assert_string_equal(compile_src(c, a, NULL), "disk");
    ghd_ucompiler_free(c);
    /* the size bound: room for one entry and a half, so b's write removes a's */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    size = (size_t)st.st_size * 3 / 2;
    sleep(1); /* the entries' ages (mtime, seconds) must differ */
    c = compiler_new(size, 4);
    assert_string_equal(compile_src(c, b, NULL), "miss");
    assert_int_equal(dir_entries(NULL, 0), 1);
    ghd_ucompiler_free(c);
    c = compiler_new(size, 4);
    assert_string_equal(compile_src(c, b, NULL), "disk");
    assert_string_equal(compile_src(c, a, NULL), "miss");
    ghd_ucompiler_free(c);
    /* the queue bound: with room for none, a compile is refused (429) */
    c = compiler_new(1 << 30, 0);
    struct ghd_ucompiled r;
    struct ghd_err e = {0};
    const char *fresh = "extern \"C\" __global__ void ghd_ukernel(int *p) { p[0] = 7; }\n";
    assert_int_equal(ghd_ucompiler_compile(c, fresh, "sm_90", &r, &e), GHD_ELIMIT);
    assert_non_null(strstr(e.detail, "--compile-queue"));
    ghd_ucompiler_free(c);
}

/* i8 buffers are read and written element by element, never as 16-byte
 * vectors: NVRTC 13 lost the sign extension of lanes 0, 4, 8 and 12 of a
 * vector of i8 after arithmetic (max(57 + y, y) at y = -110 gave -110 on
 * the H200). Other element types keep the vector path. */
static void test_i8_not_vectorised(void **state)
{
    (void)state;
    static const char *defs[] = {
        "{\"name\": \"m\", \"in\": \"T x, T y\", \"out\": \"T r\", \"body\": \"r = max(57 + y, y)\"}",
        "{\"name\": \"s\", \"kind\": \"reduction\", \"in\": \"T x\", \"out\": \"i64 r\","
        " \"map\": \"i64(max(x + 57, x))\", \"reduce\": \"a + b\", \"identity\": \"0\"}"};
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
        json_t *def = json_loads(defs[i], 0, NULL);
        struct ghd_udef d;
        struct ghd_err e = {0};
        assert_int_equal(ghd_udef_from_json(def, &limits, &d, &e), 0);
        json_decref(def);
        static const int types[] = {GHD_UT_I8, GHD_UT_U8, GHD_UT_I16, GHD_UT_F32};
        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
            struct ghd_ubind b = {.scalar_mask = 0};
            struct ghd_uprog p;
            char *src = NULL;
            unsigned vec = 99;
            for (int k = 0; k < 26; k++)
                b.ph_type[k] = types[t];
            assert_int_equal(ghd_ucheck(&d, &b, &p, &e), 0);
            assert_int_equal(ghd_ucodegen(&p, &src, &vec, &e), 0);
            if (types[t] == GHD_UT_I8) {
                assert_int_equal(vec, 0);
                assert_null(strstr(src, "GhdVec<signed char"));
            } else {
                assert_int_equal(vec, ghd_utype_size(types[t]));
            }
            free(src);
            ghd_uprog_clear(&p);
        }
        ghd_udef_clear(&d);
    }
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    struct ghd_ucompiler_config cfg = {.workers = 2, .queue = 64};
    struct ghd_err cerr = {0};
    assert_int_equal(ghd_ucompiler_new(&cfg, &C, &cerr), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ghd_ucompiler_free(C);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest text[] = {
        cmocka_unit_test(test_i8_not_vectorised),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_valid_definition_compiles),
        cmocka_unit_test(test_cache),
    };
    int failed = cmocka_run_group_tests_name("generated text", text, NULL, NULL);
    char v[16];
    if (ghd_unvrtc_version(v, sizeof(v)) != 0) {
        printf("skipped: this build has no NVRTC (the generated text was checked)\n");
        return failed;
    }
    return failed + cmocka_run_group_tests(tests, setup, teardown);
}
