/* The NVRTC options a module may ask for. An allow-list, not a deny-list:
 * NVRTC keeps growing options, and the ones that read files (include paths,
 * pre-includes) or write them must never reach it from a client. */
#include "raw.h"

#include <string.h>

#include "base/err.h"
#include "base/error.h"

/* Exact options, and prefixes whose rest is a value. */
static const char *const exact[] = {
    "--use_fast_math", "-use_fast_math", "-lineinfo", "--generate-line-info",
    "-G", "--device-debug", "-dopt=on", "-dopt=off", "--extra-device-vectorization",
    "-extra-device-vectorization", "-ftz=true", "-ftz=false", "-prec-div=true",
    "-prec-div=false", "-prec-sqrt=true", "-prec-sqrt=false", "-fmad=true", "-fmad=false",
    "--ftz=true", "--ftz=false", "--prec-div=true", "--prec-div=false", "--prec-sqrt=true",
    "--prec-sqrt=false", "--fmad=true", "--fmad=false", "-restrict", "--restrict",
    "-w", "--disable-warnings", "-default-device", "--device-as-default-execution-space",
    "-dw", "--device-w", NULL,
};
static const char *const prefixes[] = {
    "-std=", "--std=", "-D", "--define-macro=", "-U", "--undefine-macro=",
    "-maxrregcount=", "--maxrregcount=", NULL,
};

/* Values of the prefixed options: a macro name and value, a number, a
 * standard: letters, digits and a few punctuation marks, no path
 * separators or quotes (nothing that could be a file name). */
static int value_ok(const char *v)
{
    if (!*v)
        return 0;
    for (; *v; v++) {
        char c = *v;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              strchr("_=+-.()<>,*", c)))
            return 0;
    }
    return 1;
}

static int allowed(const char *o)
{
    for (const char *const *e = exact; *e; e++)
        if (strcmp(o, *e) == 0)
            return 1;
    for (const char *const *p = prefixes; *p; p++) {
        size_t n = strlen(*p);
        if (strncmp(o, *p, n) == 0)
            return value_ok(o + n);
    }
    return 0;
}

int ghd_raw_strings(json_t *v, const char *field, unsigned max, ghd_raw_string_fn each,
                    void *ctx, struct ghd_err *err)
{
    if (!v)
        return 0;
    if (!json_is_array(v))
        return ghd_err_set(err, GHD_EINVAL, "'%s' must be an array of strings", field);
    if (json_array_size(v) > max)
        return ghd_err_set(err, GHD_EUNPROC, "'%s' has more than %u entries", field, max);
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s) {
        if (!json_is_string(s))
            return ghd_err_set(err, GHD_EINVAL, "%s[%zu] must be a string", field, i);
        int rc = each(ctx, field, i, json_string_value(s), json_string_length(s), err);
        if (rc)
            return rc;
    }
    return 0;
}

struct options {
    const char **out;
    unsigned *n;
};

static int add_option(void *ctx, const char *field, size_t i, const char *o, size_t len,
                      struct ghd_err *err)
{
    struct options *opts = ctx;
    (void)len; /* NVRTC reads an option up to its first NUL: that is what is judged */
    if (strlen(o) > GHD_RAW_MAX_OPTION_LEN || !allowed(o))
        return ghd_err_set(err, GHD_EUNPROC,
                           "%s[%zu]: '%.64s' is not an allowed option (allowed: -std=, "
                           "-D, -U, --use_fast_math, -lineinfo, -G, -maxrregcount=, -ftz=, "
                           "-prec-div=, -prec-sqrt=, -fmad=, -restrict, -w; nothing that "
                           "reads or writes files, such as -I or -include)",
                           field, i, o);
    opts->out[(*opts->n)++] = o;
    opts->out[*opts->n] = NULL;
    return 0;
}

int ghd_raw_options_check(json_t *options, const char **out, unsigned *n, struct ghd_err *err)
{
    *n = 0;
    out[0] = NULL;
    struct options opts = {.out = out, .n = n};
    return ghd_raw_strings(options, "options", GHD_RAW_MAX_OPTIONS, add_option, &opts, err);
}
