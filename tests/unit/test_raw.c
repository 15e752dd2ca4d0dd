/* Raw modules' host-side parts (kernels/raw/): argument packing with C
 * types and alignment, matching against a function's parameter layout,
 * launch-shape checks, the option allow-list and the include refusal; and,
 * where this build has NVRTC (no GPU needed), a module's compile through
 * the compiler with options and name expressions (lowered names, cache,
 * compile errors as 422 with the log). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/json_u64.h"

#include "base/error.h"
#include "kernels/raw/module.h"
#include "kernels/raw/raw.h"
#include "kernels/user/compile.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad test JSON: %s", e.text);
    return j;
}

static void test_packing_offsets(void **state)
{
    (void)state;
    struct ghd_raw_pack p;
    struct ghd_err d = {0};
    /* i8 at 0; f64 aligned to 8; i32 at 16; a pointer at 24; i16 at 32;
     * u8 at 34; f32 at 36; u64 at 40. */
    json_t *a = parse("[{\"i8\": -5}, {\"f64\": 0.5}, {\"i32\": -7}, {\"buffer\": \"b1\", "
                      "\"offset\": 16, \"access\": \"in\"}, {\"i16\": 300}, {\"u8\": 255}, "
                      "{\"f32\": 2.5}, {\"u64\": 9007199254740993}]");
    assert_int_equal(ghd_raw_args_parse(a, &p, &d), 0);
    const size_t want[] = {0, 8, 16, 24, 32, 34, 36, 40};
    assert_int_equal(p.nargs, 8);
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(p.a[i].offset, want[i]);
    assert_int_equal(p.size, 48);
    int8_t i8;
    double f64;
    int32_t i32;
    int16_t i16;
    float f32;
    uint64_t u64;
    memcpy(&i8, p.bytes, 1);
    memcpy(&f64, p.bytes + 8, 8);
    memcpy(&i32, p.bytes + 16, 4);
    memcpy(&i16, p.bytes + 32, 2);
    memcpy(&f32, p.bytes + 36, 4);
    memcpy(&u64, p.bytes + 40, 8);
    assert_int_equal(i8, -5);
    assert_true(f64 == 0.5);
    assert_int_equal(i32, -7);
    assert_int_equal(i16, 300);
    assert_int_equal(p.bytes[34], 255);
    assert_true(f32 == 2.5f);
    assert_true(u64 == 9007199254740993ULL);
    assert_string_equal(p.a[3].buffer, "b1");
    assert_int_equal(p.a[3].byte_offset, 16);
    assert_int_equal(p.a[3].access, GHD_RAW_IN);
    ghd_raw_pack_pointer(&p, 3, 0x7f0000001000ULL);
    uint64_t ptr;
    memcpy(&ptr, p.bytes + 24, 8);
    assert_true(ptr == 0x7f0000001000ULL);
    json_decref(a);
    /* Default access is inout. */
    a = parse("[{\"buffer\": \"b\"}]");
    assert_int_equal(ghd_raw_args_parse(a, &p, &d), 0);
    assert_int_equal(p.a[0].access, GHD_RAW_INOUT);
    json_decref(a);
}

static void test_packing_errors(void **state)
{
    (void)state;
    struct ghd_raw_pack p;
    struct ghd_err d = {0};
    const char *bad[][3] = {
        {"{\"f32\": 1}", "400", "array"},
        {"[1]", "400", "args[0]"},
        {"[{\"i32\": 2147483648}]", "422", "i32"},
        {"[{\"u8\": -1}]", "422", "u8"},
        {"[{\"i16\": 1.5}]", "422", "integer"},
        {"[{\"f32\": 1e39}]", "422", "f32"},
        {"[{\"f32\": 1, \"i32\": 2}]", "422", "args[0]"},
        {"[{\"bf16\": 1}]", "422", "args[0]"},
        {"[{\"buffer\": 7}]", "400", "args[0].buffer"},
        {"[{\"buffer\": \"b\", \"offset\": -1}]", "422", "offset"},
        {"[{\"buffer\": \"b\", \"access\": \"rw\"}]", "422", "access"},
        {"[{\"buffer\": \"b\", \"size\": 4}]", "400", "size"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *a = parse(bad[i][0]);
        int rc = ghd_raw_args_parse(a, &p, &d);
        int want = atoi(bad[i][1]) == 400 ? GHD_EINVAL : GHD_EUNPROC;
        if (rc != want || !strstr(d.detail, bad[i][2]))
            fail_msg("%s: got %d '%s'", bad[i][0], rc, d.detail);
        json_decref(a);
    }
}

/* A u64 argument past 2^63 is taken exactly, as the request body parser
 * hands it over (base/json_u64.h); other integer kinds
 * refuse it with a 422, f64 takes it rounded. */
static void test_packing_u64(void **state)
{
    (void)state;
    struct ghd_raw_pack p;
    struct ghd_err d = {0};
    static const char body[] = "{\"args\": [{\"u64\": 18446744073709551615}, {\"f64\": 9223372036854775808}]}";
    json_error_t je;
    json_t *doc = ghd_json_loadb_u64(body, sizeof(body) - 1, 0, &je);
    if (!doc)
        fail_msg("body: %s", je.text);
    assert_int_equal(ghd_raw_args_parse(json_object_get(doc, "args"), &p, &d), 0);
    uint64_t u;
    double f;
    memcpy(&u, p.bytes, 8);
    memcpy(&f, p.bytes + 8, 8);
    assert_true(u == UINT64_MAX);
    assert_true(f == 0x1p63);
    json_decref(doc);
    static const char bad[] = "{\"args\": [{\"i64\": 9223372036854775808}]}";
    doc = ghd_json_loadb_u64(bad, sizeof(bad) - 1, 0, &je);
    assert_non_null(doc);
    assert_int_equal(ghd_raw_args_parse(json_object_get(doc, "args"), &p, &d), GHD_EUNPROC);
    assert_non_null(strstr(d.detail, "9223372036854775808 is out of i64's range"));
    json_decref(doc);
}

static void test_layout_match(void **state)
{
    (void)state;
    struct ghd_raw_pack p;
    struct ghd_err d = {0};
    json_t *a = parse("[{\"f32\": 2}, {\"buffer\": \"x\"}, {\"buffer\": \"y\"}, {\"i64\": 10}]");
    assert_int_equal(ghd_raw_args_parse(a, &p, &d), 0);
    /* saxpy(float a, const float *x, float *y, long long n) */
    struct ghd_raw_params k = {4, {0, 8, 16, 24}, {4, 8, 8, 8}};
    assert_int_equal(ghd_raw_args_match(&p, &k, "saxpy", &d), 0);
    k.size[3] = 4; /* int n: an i64 given */
    assert_int_equal(ghd_raw_args_match(&p, &k, "saxpy", &d), GHD_EUNPROC);
    assert_non_null(strstr(d.detail, "args[3]"));
    k.size[3] = 8;
    k.n = 3;
    assert_int_equal(ghd_raw_args_match(&p, &k, "saxpy", &d), GHD_EUNPROC);
    assert_non_null(strstr(d.detail, "takes 3 parameters"));
    json_decref(a);
}

static void test_shape(void **state)
{
    (void)state;
    struct ghd_raw_limits lim = {.max_threads = 512, .static_shared = 1024,
                                 .max_dyn_shared = 47 << 10, .max_block = {1024, 1024, 64},
                                 .max_grid = {2147483647u, 65535, 65535}};
    struct ghd_raw_shape sh;
    struct ghd_err d = {0};
    json_t *l = parse("{\"grid\": [100, 2], \"block\": [32, 8], \"shared_mem\": 4096}");
    assert_int_equal(ghd_raw_shape_parse(l, &lim, &sh, &d), 0);
    assert_int_equal(sh.grid[0], 100);
    assert_int_equal(sh.grid[1], 2);
    assert_int_equal(sh.grid[2], 1);
    assert_int_equal(sh.block[0] * sh.block[1] * sh.block[2], 256);
    assert_int_equal(sh.shared_mem, 4096);
    json_decref(l);
    const char *bad[][3] = {
        {"{\"block\": [1]}", "400", "grid"},
        {"{\"grid\": [1], \"block\": []}", "400", "block"},
        {"{\"grid\": [0], \"block\": [1]}", "422", "grid[0]"},
        {"{\"grid\": [1, 65536], \"block\": [1]}", "422", "grid[1]"},
        {"{\"grid\": [1], \"block\": [1, 1, 65]}", "422", "block[2]"},
        {"{\"grid\": [1], \"block\": [32, 32]}", "422", "at most 512"},
        {"{\"grid\": [1], \"block\": [1], \"shared_mem\": 49152}", "422", "shared_mem"},
        {"{\"grid\": [1], \"block\": [1], \"shared_mem\": \"x\"}", "400", "shared_mem"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        l = parse(bad[i][0]);
        int rc = ghd_raw_shape_parse(l, &lim, &sh, &d);
        int want = atoi(bad[i][1]) == 400 ? GHD_EINVAL : GHD_EUNPROC;
        if (rc != want || !strstr(d.detail, bad[i][2]))
            fail_msg("%s: got %d '%s'", bad[i][0], rc, d.detail);
        json_decref(l);
    }
}

static void test_options_and_source(void **state)
{
    (void)state;
    const char *out[GHD_RAW_MAX_OPTIONS + 1];
    unsigned n;
    struct ghd_err d = {0};
    json_t *o = parse("[\"-std=c++17\", \"-DTILE=32\", \"--use_fast_math\", \"-lineinfo\", "
                      "\"-maxrregcount=64\", \"-ftz=true\"]");
    assert_int_equal(ghd_raw_options_check(o, out, &n, &d), 0);
    assert_int_equal(n, 6);
    assert_string_equal(out[1], "-DTILE=32");
    assert_null(out[6]);
    json_decref(o);
    const char *refused[] = {"-I/etc", "--include-path=/", "-include", "--pre-include=x.h",
                             "-DX=\"/etc/passwd\"", "-D/etc", "--output=x", "-dlto",
                             "--gpu-architecture=sm_80", "-maxrregcount=", "-Xptxas"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        json_t *one = json_pack("[s]", refused[i]);
        if (ghd_raw_options_check(one, out, &n, &d) != GHD_EUNPROC ||
            !strstr(d.detail, "options[0]"))
            fail_msg("option %s was not refused (%s)", refused[i], d.detail);
        json_decref(one);
    }
    const char *ok = "extern \"C\" __global__ void k(int *x) { x[0] = 1; } // #define Y";
    assert_int_equal(ghd_raw_source_check(ok, strlen(ok), NULL, &d), 0);
    const char *includes[] = {"#include <stdio.h>\n", "  #  include \"/etc/passwd\"\n",
                              "#/* c */include <x>\n", "%:include <x>\n", "?" "?=include <x>\n",
                              "#inc\\\nlude <x>\n", "#include_next <x>\n", "#embed \"f\"\n",
                              "int a;\n#import <x>\n"};
    for (size_t i = 0; i < sizeof(includes) / sizeof(includes[0]); i++)
        if (ghd_raw_source_check(includes[i], strlen(includes[i]), NULL, &d) != GHD_EUNPROC)
            fail_msg("source '%s' was not refused", includes[i]);
    assert_int_equal(ghd_raw_source_check(includes[8], strlen(includes[8]), NULL, &d),
                     GHD_EUNPROC);
    assert_non_null(strstr(d.detail, "line 2"));
    /* An identifier that merely starts with a refused word is fine. */
    const char *fine = "#define included 1\n#if included\n#endif\n";
    assert_int_equal(ghd_raw_source_check(fine, strlen(fine), NULL, &d), 0);
}

/* What got past the include refusal, and what else reads or probes a
 * server's file through NVRTC: each refused, naming its line and what it
 * was; and sources near them that are fine. */
static void test_source_bypasses(void **state)
{
    (void)state;
    static const struct {
        const char *src, *line, *what;
    } bad[] = {
        /* A digraph split by a line splice: NVRTC includes the file. */
        {"%\\\n:include \"/etc/passwd\"\n", "line 1", "%:"},
        /* A trigraph backslash as the splice (trigraphs are on with -std=c++11). */
        {"int a;\n#?" "?/\ninclude \"/etc/passwd\"\n", "line 2", "#include"},
        {"#?" "?/\r\ninclude \"/etc/passwd\"\n", "line 1", "#include"},
        /* A carriage return is a blank to NVRTC. */
        {"#\rinclude \"/etc/passwd\"\n", "line 1", "#include"},
        /* Digraphs of # and ## in any use. */
        {"%:define X 1\n", "line 1", "%:"},
        {"#define CAT(a, b) a %:%: b\n", "line 1", "%:"},
        /* File-existence probes, however spelled. */
        {"#if __has_include(\"/etc/shadow\")\n#endif\n", "line 1", "__has_include"},
        {"\n#if __has_include_next(<shadow>)\n#endif\n", "line 2", "__has_include_next"},
        {"#if __has_\\\ninclude(\"/etc/shadow\")\n#endif\n", "line 1", "__has_include"},
        {"#if __has_?" "?/\ninclude(\"/etc/shadow\")\n#endif\n", "line 1", "__has_include"},
        {"__device__ int e = __has_embed(\"/etc/shadow\");\n", "line 1", "__has_embed"},
        {"__device__ int h = __has_include(\"/etc/shadow\");\n", "line 1", "__has_include"},
        /* Pasted from pieces: NVRTC evaluates it, in #if and outside. */
        {"#define CAT(a, b) a##b\n__device__ int h = CAT(__has_, include)(\"/etc/shadow\");\n",
         "line 1", "'__has_include'"},
        {"#define C(a, b, c) a ## b ## c\n#if C(_, _has_incl, ude)(\"/etc/shadow\")\n#endif\n",
         "line 1", "'__has_include'"},
    };
    struct ghd_err d = {0};
    unsigned missed = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&d, 0, sizeof(d));
        int rc = ghd_raw_source_check(bad[i].src, strlen(bad[i].src), NULL, &d);
        if (rc != GHD_EUNPROC || !strstr(d.detail, bad[i].line) || !strstr(d.detail, bad[i].what)) {
            print_message("not refused as '%s' at %s: source %u (rc %d, '%s')\n", bad[i].what,
                          bad[i].line, (unsigned)i, rc, d.detail);
            missed++;
        }
    }
    static const char *const fine[] = {
        /* '<:' is a digraph too, but C++11 reads '<::' as '<' '::'. */
        "__global__ void k(unsigned long *x) { x[0] = static_cast<::size_t>(1); }\n",
        /* Pasting whose pieces spell nothing refused. */
        "#define NAME(a, b) a ## _ ## b\n__global__ void NAME(k, f)(float *has) {}\n",
        "__device__ const char *q = \"what?" "?!\";\n",
        "__global__ void k(int *x) {\n#pragma unroll 4\n  for (int i = 0; i < 8; i++) x[i] = i; }\n",
        "__device__ int has = 1, include = 2; // has include\n",
        "#define STR(x) #x\n#define INC include\n",
    };
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        memset(&d, 0, sizeof(d));
        if (ghd_raw_source_check(fine[i], strlen(fine[i]), NULL, &d) != 0) {
            print_message("refused: '%s' (%s)\n", fine[i], d.detail);
            missed++;
        }
    }
    assert_int_equal(missed, 0);
}

/* Seconds the check takes on `unit` repeated to `size` bytes (the best of
 * three runs). */
static double check_seconds(char *src, size_t size, const char *unit)
{
    size_t k = strlen(unit), n = 0;
    while (n + k <= size) {
        memcpy(src + n, unit, k);
        n += k;
    }
    src[n] = '\0';
    double best = 1e9;
    for (int run = 0; run < 3; run++) {
        struct timespec t0, t1;
        struct ghd_err d = {0};
        clock_gettime(CLOCK_MONOTONIC, &t0);
        (void)ghd_raw_source_check(src, n, NULL, &d);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        best = s < best ? s : best;
    }
    return best;
}

/* The check reads a source in linear time: four times the bytes take about
 * four times as long (sixteen if quadratic), for a megabyte (the default
 * --module-max-source) of comment openers after '#' (each one a search for
 * the comment's end, which from every '#' used to run to the end of the
 * source), of splices, of trigraphs and of pieces of __has_include. */
static void test_source_check_linear(void **state)
{
    (void)state;
    static const char *const unit[] = {"#/*", "#\\\n", "#?" "?/\n", "#__has_", "##/**/"};
    char *src = malloc((1 << 20) + 1);
    assert_non_null(src);
    for (size_t u = 0; u < sizeof(unit) / sizeof(unit[0]); u++) {
        double small = check_seconds(src, 1 << 18, unit[u]);
        double big = check_seconds(src, 1 << 20, unit[u]);
        print_message("'%s': %.3f s for 256 KiB, %.3f s for 1 MiB\n", unit[u], small, big);
        assert_true(big < 10 * small + 0.1); /* quadratic is 16 times; slack for noise */
    }
    free(src);
}

/* Skips the calling test where this build or machine has no NVRTC. */
static void skip_without_nvrtc(void)
{
    char version[16];
    if (ghd_unvrtc_version(version, sizeof(version)) != 0) {
        print_message("no NVRTC in this build or machine: compile checks not run\n");
        skip();
    }
}

static const char *const module_src =
    "template <typename T> __global__ void scale(T *x, T a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }\n"
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i]; }\n";

static void test_nvrtc_module(void **state)
{
    (void)state;
    skip_without_nvrtc();
    struct ghd_ucompiler_config cfg = {.cache_max_bytes = 1 << 20, .workers = 1, .queue = 4};
    struct ghd_ucompiler *c;
    struct ghd_err cerr = {0};
    assert_int_equal(ghd_ucompiler_new(&cfg, &c, &cerr), 0);
    const char *opts[] = {"--use_fast_math", "-DUNUSED=1", NULL};
    const char *names[] = {"scale<float>", "scale<double>"};
    struct ghd_ucompile_job job = {.src = module_src, .arch = "sm_90", .options = opts,
                                   .names = names, .nnames = 2, .user = 1};
    struct ghd_ucompiled r;
    struct ghd_err e = {0};
    assert_int_equal(ghd_ucompiler_compile_job(c, &job, &r, &e), 0);
    assert_true(r.size > 0);
    assert_string_equal(r.cache, "miss");
    assert_non_null(r.lowered);
    /* Two lowered names, in order, each a mangled scale. */
    char *nl = strchr(r.lowered, '\n');
    assert_non_null(nl);
    assert_non_null(strstr(r.lowered, "scale"));
    assert_true(strncmp(r.lowered, "_Z", 2) == 0);
    assert_non_null(strchr(nl + 1, '\n'));
    char first[256];
    snprintf(first, sizeof(first), "%.*s", (int)(nl - r.lowered), r.lowered);
    ghd_ucompiled_clear(&r);
    /* Cached: the same names come back. */
    assert_int_equal(ghd_ucompiler_compile_job(c, &job, &r, &e), 0);
    assert_string_equal(r.cache, "memory");
    assert_true(strncmp(r.lowered, first, strlen(first)) == 0);
    ghd_ucompiled_clear(&r);
    /* Other options: another key, compiled again. */
    const char *opts2[] = {"-DUNUSED=2", NULL};
    job.options = opts2;
    assert_int_equal(ghd_ucompiler_compile_job(c, &job, &r, &e), 0);
    assert_string_equal(r.cache, "miss");
    ghd_ucompiled_clear(&r);
    /* A compile error: 422 with the log naming the line. */
    struct ghd_ucompile_job broken = {.src = "__global__ void k() { undefined_thing(); }\n",
                                      .arch = "sm_90", .user = 1};
    assert_int_equal(ghd_ucompiler_compile_job(c, &broken, &r, &e), GHD_EUNPROC);
    assert_non_null(strstr(r.log, "undefined_thing"));
    assert_non_null(strstr(e.detail, "does not compile"));
    ghd_ucompiled_clear(&r);
    /* A name expression naming nothing. */
    const char *nothing[] = {"scale<no_such_type>"};
    struct ghd_ucompile_job bad_name = {.src = module_src, .arch = "sm_90", .names = nothing,
                                        .nnames = 1, .user = 1};
    assert_int_equal(ghd_ucompiler_compile_job(c, &bad_name, &r, &e), GHD_EUNPROC);
    ghd_ucompiled_clear(&r);
    ghd_ucompiler_free(c);
}

/* NVRTC's log as it came when a module included /etc/passwd (its lines
 * quoted under "/etc/passwd(N):") beside the module's own diagnostics and a
 * note in NVRTC's built-in header: only the file's diagnostics go. */
static void test_log_filter(void **state)
{
    (void)state;
    char log[2048];
    snprintf(log, sizeof(log), "%s",
             "/etc/passwd(1): error: this declaration has no storage class or type specifier\n"
             "  root:x:0:0:root:/root:/bin/bash\n"
             "  ^\n"
             "\n"
             "module.cu(3): error: no instance of overloaded function \"__shfl_sync\" matches "
             "the argument list\n"
             "            argument types are: (int)\n"
             "  __global__ void k(float *x) { x[0] = __shfl_sync(1); }\n"
             "                                      ^\n"
             "__nv_nvrtc_builtin_header.h(4429): note #3322-D: number of parameters of "
             "function \"__shfl_sync\" does not match the call\n"
             "  __SM_30_INTRINSICS_DECL__ unsigned long __shfl_sync(unsigned mask, ...)\n"
             "                                          ^\n"
             "/etc/passwd(2): error: identifier \"daemon\" is undefined\n"
             "  daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
             "  ^\n"
             "          detected during instantiation of \"f<int>\" at line 3 of module.cu\n"
             "\n"
             "module.cu(4): warning #177-D: variable \"s\" was declared but never referenced\n"
             "  int s;\n"
             "      ^\n"
             "\n"
             "3 errors detected in the compilation of \"module.cu\".\n");
    ghd_unvrtc_log_filter(log, sizeof(log), "module.cu");
    assert_null(strstr(log, "root"));
    assert_null(strstr(log, "daemon"));
    assert_null(strstr(log, "/etc/passwd"));
    assert_non_null(strstr(log, "module.cu(3): error: no instance"));
    assert_non_null(strstr(log, "  __global__ void k(float *x)"));
    assert_non_null(strstr(log, "__nv_nvrtc_builtin_header.h(4429): note"));
    assert_non_null(strstr(log, "module.cu(4): warning #177-D"));
    assert_non_null(strstr(log, "3 errors detected"));
    assert_non_null(strstr(log, "removed 2 diagnostics located in files other than module.cu"));
    assert_true(strncmp(log, "module.cu(3)", 12) == 0); /* the blank after a removed one went too */
    /* A log of the module's own: unchanged. */
    const char *own = "module.cu(1): error: identifier \"x\" is undefined\n  x;\n  ^\n\n"
                      "1 error detected in the compilation of \"module.cu\".\n";
    snprintf(log, sizeof(log), "%s", own);
    ghd_unvrtc_log_filter(log, sizeof(log), "module.cu");
    assert_string_equal(log, own);
}

/* Whatever the source check lets through, the log a reply carries quotes
 * no file of the server: sources that include a file holding a marker (by
 * absolute path, through the digraph and trigraph splices that once passed
 * the check, and by a name relative to the working directory) compiled by
 * NVRTC directly, as if the check had missed them. */
static void test_nvrtc_log_quotes_no_file(void **state)
{
    (void)state;
    skip_without_nvrtc();
    char dir[] = "/tmp/ghd-raw-XXXXXX", path[64], cwd[4096];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/secret.h", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("ghd_secret_marker_7f3a x;\n", f);
    fclose(f);
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(dir), 0);
    char src[4][256];
    snprintf(src[0], sizeof(src[0]), "#include \"%s\"\nextern \"C\" __global__ void k() { nope(); }\n",
             path);
    snprintf(src[1], sizeof(src[1]), "%%\\\n:include \"%s\"\n", path);
    snprintf(src[2], sizeof(src[2]), "#?" "?/\ninclude \"%s\"\n", path);
    snprintf(src[3], sizeof(src[3]), "#include \"secret.h\"\n");
    const char *cxx11[] = {"-std=c++11", NULL};
    struct ghd_ucompiler_config cfg = {.cache_max_bytes = 1 << 20, .workers = 1, .queue = 4};
    struct ghd_ucompiler *c;
    struct ghd_err cerr = {0};
    assert_int_equal(ghd_ucompiler_new(&cfg, &c, &cerr), 0);
    unsigned leaked = 0;
    for (int i = 0; i < 4; i++) {
        struct ghd_ucompile_job job = {.src = src[i], .arch = "sm_90", .user = 1,
                                       .options = i == 2 ? cxx11 : NULL};
        struct ghd_ucompiled r;
        struct ghd_err e = {0};
        int rc = ghd_ucompiler_compile_job(c, &job, &r, &e);
        if (rc != GHD_EUNPROC || strstr(r.log, "ghd_secret_marker") ||
            strstr(e.detail, "ghd_secret_marker")) {
            print_message("source %d: rc %d, the log quotes the file:\n%s\n", i, rc, r.log);
            leaked++;
        }
        if (i == 0 && !strstr(r.log, "nope")) {
            print_message("source 0: the module's own diagnostic is gone:\n%s\n", r.log);
            leaked++;
        }
        ghd_ucompiled_clear(&r);
    }
    ghd_ucompiler_free(c);
    assert_int_equal(chdir(cwd), 0);
    unlink(path);
    rmdir(dir);
    assert_int_equal(leaked, 0);
}

/* A store entry as the store sees it: no library loaded (lib NULL), so the
 * last unref frees without touching a device. */
static struct ghd_rmodule *fake_module(const char *id, const char *tenant)
{
    struct ghd_rmodule *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    atomic_init(&m->refs, 1);
    snprintf(m->id, sizeof(m->id), "%s", id);
    snprintf(m->tenant, sizeof(m->tenant), "%s", tenant);
    m->key = strdup(id);
    return m;
}

static void test_module_store(void **state)
{
    (void)state;
    struct ghd_rmodule_store s;
    ghd_rmodule_store_init(&s, 3);
    struct ghd_rmodule *m[4], *have, *got;
    const char *ids[] = {"m1", "m2", "m3", "m4"};
    for (int i = 0; i < 3; i++) {
        m[i] = fake_module(ids[i], "a");
        assert_int_equal(ghd_rmodule_store_add(&s, m[i], &have), 0);
        assert_null(have);
    }
    m[3] = fake_module("m4", "a");
    assert_int_equal(ghd_rmodule_store_add(&s, m[3], &have), GHD_ELIMIT); /* the tenant's max */
    struct ghd_rmodule *again = fake_module("m2", "a");
    assert_int_equal(ghd_rmodule_store_add(&s, again, &have), GHD_EBUSY); /* same id and key */
    assert_ptr_equal(have, m[1]);
    ghd_rmodule_unref(have);
    ghd_rmodule_unref(again);
    assert_int_equal(ghd_rmodule_store_count(&s, "a"), 3);
    assert_int_equal(ghd_rmodule_store_count(&s, "b"), 0);
    assert_int_equal(ghd_rmodule_store_find_new(&s, "b", "m2", &got), GHD_ENOENT);
    assert_int_equal(ghd_rmodule_store_remove(&s, "b", "m2"), GHD_ENOENT);
    assert_int_equal(ghd_rmodule_store_remove(&s, "a", "m2"), 0); /* the middle one */
    assert_int_equal(ghd_rmodule_store_find_new(&s, "a", "m2", &got), GHD_ENOENT);
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(ghd_rmodule_store_find_new(&s, "a", ids[i], &got), 0);
        assert_ptr_equal(got, m[i]);
        ghd_rmodule_unref(got);
    }
    assert_int_equal(ghd_rmodule_store_count(&s, "a"), 2);
    assert_int_equal(ghd_rmodule_store_add(&s, m[3], &have), 0); /* room again */
    assert_int_equal(ghd_rmodule_store_remove(&s, "a", "m4"), 0); /* the last one */
    assert_int_equal(ghd_rmodule_store_remove(&s, "a", "m1"), 0); /* the first one */
    assert_int_equal(ghd_rmodule_store_count(&s, "a"), 1);
    for (int i = 0; i < 4; i++)
        ghd_rmodule_unref(m[i]); /* the callers' references */
    ghd_rmodule_store_destroy(&s); /* m3's last reference */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packing_offsets),  cmocka_unit_test(test_packing_errors),
        cmocka_unit_test(test_packing_u64),
        cmocka_unit_test(test_layout_match),     cmocka_unit_test(test_shape),
        cmocka_unit_test(test_options_and_source), cmocka_unit_test(test_source_bypasses),
        cmocka_unit_test(test_source_check_linear),
        cmocka_unit_test(test_nvrtc_module), cmocka_unit_test(test_log_filter),
        cmocka_unit_test(test_nvrtc_log_quotes_no_file),
        cmocka_unit_test(test_module_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
