/* NVRTC: CUDA C++ to a cubin for one exact architecture (no PTX, no driver
 * JIT at load). The only file that includes nvrtc.h.
 *
 * libnvrtc is opened at run time (dlopen), not linked: it is 100 MiB, and a
 * server on a machine without it must still start and serve everything
 * else (user kernels on CUDA then answer 501). It is looked for by soname,
 * then in the toolkit's usual folder. */
#include "compile.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"

/* Every client's module is compiled with no include path at all: without
 * this NVRTC searches the working directory for a quoted name. (It opens an
 * absolute path whatever the options say: the raw source check refuses
 * those.) */
static const char *const module_options[] = {"--no-source-include", NULL};

const char *const *ghd_ucompile_fixed_options(const struct ghd_ucompile_job *job)
{
    return job->user ? module_options : ghd_ucompile_options;
}

/* The length of the file name that starts a diagnostic's first line,
 * "FILE(LINE): ...", or 0 when the line is not one. */
static size_t diagnostic_file(const char *line, size_t len)
{
    if (len == 0 || line[0] == ' ' || line[0] == '\t')
        return 0;
    for (size_t i = 1; i < len; i++) {
        if (line[i] != '(')
            continue;
        size_t j = i + 1;
        while (j < len && line[j] >= '0' && line[j] <= '9')
            j++;
        if (j > i + 1 && j + 2 < len && line[j] == ')' && line[j + 1] == ':' && line[j + 2] == ' ')
            return i;
    }
    return 0;
}

static int names(const char *line, size_t file, const char *name)
{
    return file == strlen(name) && strncmp(line, name, file) == 0;
}

void ghd_unvrtc_log_filter(char *log, size_t cap, const char *program)
{
    char *w = log;
    unsigned removed = 0;
    int keep = 1;
    for (const char *r = log; *r;) {
        const char *nl = strchr(r, '\n');
        size_t len = nl ? (size_t)(nl - r) + 1 : strlen(r);
        size_t file = diagnostic_file(r, len);
        if (file) {
            keep = names(r, file, program) || names(r, file, "__nv_nvrtc_builtin_header.h");
            removed += !keep;
        }
        int blank = r[0] == '\n' || (r[0] == '\r' && r[1] == '\n');
        if (keep) {
            memmove(w, r, len);
            w += len;
        }
        if (blank)
            keep = 1; /* a blank line ends a diagnostic */
        r += len;
    }
    *w = '\0';
    if (removed && (size_t)(w - log) + 1 < cap)
        snprintf(w, cap - (size_t)(w - log),
                 "(gpuhttpd removed %u diagnostic%s located in files other than %s: a "
                 "reply never quotes a file the client did not send)\n",
                 removed, removed == 1 ? "" : "s", program);
}

#ifdef GHD_HAVE_NVRTC
#include <nvrtc.h>

const char *const ghd_ucompile_options[] = {"--fmad=false", "--std=c++17", "-default-device",
                                            NULL};

static struct {
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*AddNameExpression)(nvrtcProgram, const char *);
    nvrtcResult (*GetLoweredName)(nvrtcProgram, const char *, const char **);
    const char *(*GetErrorString)(nvrtcResult);
    int ok;
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void nv_open(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so",
                                        "/usr/local/cuda/lib64/libnvrtc.so.13",
                                        "/usr/local/cuda/lib64/libnvrtc.so", NULL};
    void *h = NULL;
    for (const char *const *n = names; *n && !h; n++)
        h = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
#define NV_SYM(f) (*(void **)&nv.f = dlsym(h, "nvrtc" #f))
    if (!NV_SYM(Version) || !NV_SYM(CreateProgram) || !NV_SYM(CompileProgram) ||
        !NV_SYM(GetProgramLogSize) || !NV_SYM(GetProgramLog) || !NV_SYM(GetCUBINSize) ||
        !NV_SYM(GetCUBIN) || !NV_SYM(DestroyProgram) || !NV_SYM(GetErrorString) ||
        !NV_SYM(AddNameExpression) || !NV_SYM(GetLoweredName))
        return;
#undef NV_SYM
    nv.ok = 1; /* the handle stays open for the process's life */
}

int ghd_unvrtc_version(char *buf, size_t len)
{
    int major = 0, minor = 0;
    pthread_once(&nv_once, nv_open);
    if (!nv.ok)
        return GHD_ENOTSUP;
    if (nv.Version(&major, &minor) != NVRTC_SUCCESS)
        return GHD_EINTERNAL;
    snprintf(buf, len, "%d.%d", major, minor);
    return 0;
}

/* Each name expression's lowered name, '\n'-terminated, in job order. */
static int lowered_names(nvrtcProgram prog, const struct ghd_ucompile_job *job,
                         struct ghd_ucompiled *out, struct ghd_err *e)
{
    size_t len = 1;
    const char *names[64];
    for (unsigned i = 0; i < job->nnames && i < 64; i++) {
        if (nv.GetLoweredName(prog, job->names[i], &names[i]) != NVRTC_SUCCESS)
            return ghd_err_set(e, GHD_EUNPROC, "name_expressions[%u]: '%.64s' names no "
                                "__global__ function of the source", i, job->names[i]);
        len += strlen(names[i]) + 1;
    }
    if (!(out->lowered = malloc(len)))
        return ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
    size_t used = 0;
    for (unsigned i = 0; i < job->nnames && i < 64; i++)
        used += (size_t)snprintf(out->lowered + used, len - used, "%s\n", names[i]);
    out->lowered[used] = '\0';
    return 0;
}

int ghd_unvrtc_compile(const struct ghd_ucompile_job *job, struct ghd_ucompiled *out,
                       struct ghd_err *e)
{
    nvrtcProgram prog;
    double t0;
    char archopt[48];
    const char *opts[80];
    int nopts = 0, rc = 0;
    snprintf(archopt, sizeof(archopt), "--gpu-architecture=%s", job->arch);
    opts[nopts++] = archopt;
    /* The generator's own options are not a client's: a raw module gets
     * NVRTC's defaults and its own options only. */
    for (const char *const *o = ghd_ucompile_fixed_options(job); *o; o++)
        opts[nopts++] = *o;
    for (const char *const *o = job->options; o && *o && nopts < 79; o++)
        opts[nopts++] = *o;
    pthread_once(&nv_once, nv_open);
    if (!nv.ok)
        return ghd_err_set(e, GHD_ENOTSUP, "libnvrtc is not installed");
    t0 = ghd_clock_s();
    const char *program = job->user ? "module.cu" : "user_kernel.cu";
    if (nv.CreateProgram(&prog, job->src, program, 0, NULL, NULL) != NVRTC_SUCCESS)
        return ghd_err_set(e, GHD_ENOHOSTMEM, "nvrtcCreateProgram failed");
    for (unsigned i = 0; i < job->nnames; i++)
        if (nv.AddNameExpression(prog, job->names[i]) != NVRTC_SUCCESS) {
            rc = ghd_err_set(e, GHD_EUNPROC, "name_expressions[%u] is not accepted", i);
            goto out;
        }
    nvrtcResult cr = nv.CompileProgram(prog, nopts, opts);
    size_t log_size = 0;
    out->log[0] = '\0';
    if (nv.GetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        char *log = malloc(log_size);
        if (log && nv.GetProgramLog(prog, log) == NVRTC_SUCCESS) {
            ghd_unvrtc_log_filter(log, log_size, program);
            snprintf(out->log, sizeof(out->log), "%s", log);
        }
        free(log);
    }
    if (cr != NVRTC_SUCCESS && job->user) {
        rc = ghd_err_set(e, GHD_EUNPROC, "the source does not compile (%s); the log says: %.300s",
                          nv.GetErrorString(cr), out->log);
        goto out;
    }
    if (cr != NVRTC_SUCCESS) {
        rc = ghd_err_set(e, GHD_EINTERNAL, "NVRTC could not compile the generated code (%s): %.200s",
                          nv.GetErrorString(cr), out->log);
        goto out;
    }
    if (nv.GetCUBINSize(prog, &out->size) != NVRTC_SUCCESS || out->size == 0 ||
        !(out->cubin = malloc(out->size)) || nv.GetCUBIN(prog, (char *)out->cubin) != NVRTC_SUCCESS) {
        free(out->cubin);
        out->cubin = NULL;
        rc = ghd_err_set(e, GHD_EINTERNAL, "NVRTC produced no cubin for %s", job->arch);
        goto out;
    }
    if (job->nnames && (rc = lowered_names(prog, job, out, e)) != 0) {
        free(out->cubin);
        out->cubin = NULL;
        goto out;
    }
    out->seconds = ghd_clock_s() - t0;
out:
    nv.DestroyProgram(&prog);
    return rc;
}
#else
const char *const ghd_ucompile_options[] = {NULL};

int ghd_unvrtc_version(char *buf, size_t len)
{
    (void)buf;
    (void)len;
    return GHD_ENOTSUP;
}

int ghd_unvrtc_compile(const struct ghd_ucompile_job *job, struct ghd_ucompiled *out,
                       struct ghd_err *e)
{
    (void)job;
    (void)out;
    return ghd_err_set(e, GHD_ENOTSUP, "this build has no NVRTC");
}
#endif
