/* Raw modules: the body checked, the source compiled through the user
 * kernel compiler (its pool and cache) and loaded; and the store of every
 * tenant's modules, where another tenant's module is never found (404). */
#include "module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/error.h"
#include "base/hash.h"
#include "kernels/user/compile.h"

struct body {
    const char *source;
    size_t source_len;
    json_t *options, *names;
    const char *opts[GHD_RAW_MAX_OPTIONS + 1];
    unsigned nopts;
    const char *name_v[GHD_RAW_MAX_NAMES];
    unsigned nnames;
};

static int add_name(void *ctx, const char *field, size_t i, const char *s, size_t len,
                    struct ghd_err *err)
{
    struct body *b = ctx;
    if (len == 0 || len >= GHD_RAW_NAME_MAX || strlen(s) != len)
        return ghd_err_set(err, GHD_EUNPROC, "%s[%zu] must be 1 to %d characters", field, i,
                           GHD_RAW_NAME_MAX - 1);
    b->name_v[b->nnames++] = s;
    return 0;
}

static int parse_body(json_t *body, size_t max_source, struct body *b, struct ghd_err *err)
{
    memset(b, 0, sizeof(*b));
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        if (strcmp(key, "source") && strcmp(key, "options") && strcmp(key, "name_expressions"))
            return ghd_err_set(err, GHD_EINVAL,
                               "unknown field '%.64s' (a module takes "
                               "source, options and name_expressions)",
                               key);
    }
    json_t *src = json_object_get(body, "source");
    if (!json_is_string(src))
        return ghd_err_set(err, GHD_EINVAL, "'source' (CUDA C++ text) is required");
    b->source = json_string_value(src);
    b->source_len = json_string_length(src);
    if (b->source_len > max_source)
        return ghd_err_set(err, GHD_ETOOBIG,
                           "'source' is %zu bytes; at most %zu (--module-max-source)",
                           b->source_len, max_source);
    b->options = json_object_get(body, "options");
    int rc = ghd_raw_options_check(b->options, b->opts, &b->nopts, err);
    if (rc)
        return rc;
    if ((rc = ghd_raw_source_check(b->source, b->source_len, b->opts, err)) != 0)
        return rc;
    b->names = json_object_get(body, "name_expressions");
    return ghd_raw_strings(b->names, "name_expressions", GHD_RAW_MAX_NAMES, add_name, b, err);
}

/* "source\x1e option\x1f ...\x1e name\x1f ...": what the id hashes. */
static char *body_key(const struct body *b)
{
    size_t len = b->source_len + 4;
    for (unsigned i = 0; i < b->nopts; i++)
        len += strlen(b->opts[i]) + 1;
    for (unsigned i = 0; i < b->nnames; i++)
        len += strlen(b->name_v[i]) + 1;
    char *key = malloc(len);
    if (!key)
        return NULL;
    size_t n = 0;
    memcpy(key, b->source, b->source_len);
    n = b->source_len;
    key[n++] = '\x1e';
    for (unsigned i = 0; i < b->nopts; i++)
        n += (size_t)snprintf(key + n, len - n, "%s\x1f", b->opts[i]);
    key[n++] = '\x1e';
    for (unsigned i = 0; i < b->nnames; i++)
        n += (size_t)snprintf(key + n, len - n, "%s\x1f", b->name_v[i]);
    key[n] = '\0';
    return key;
}

static void key_id(const char *prefix, const char *key, char id[GHD_RMODULE_ID_LEN + 1])
{
    uint64_t h = ghd_fnv1a(GHD_FNV_INIT, key, strlen(key));
    snprintf(id, GHD_RMODULE_ID_LEN + 1, "%.*s%016llx", GHD_OWNER_PREFIX_LEN, prefix,
             (unsigned long long)h);
}

int ghd_rmodule_id(json_t *body, const char *id_prefix, char id[GHD_RMODULE_ID_LEN + 1],
                   struct ghd_err *err)
{
    struct body b;
    int rc = parse_body(body, (size_t)-1, &b, err);
    if (rc)
        return rc;
    char *key = body_key(&b);
    if (!key)
        return GHD_ENOHOSTMEM;
    key_id(id_prefix, key, id);
    free(key);
    return 0;
}

int ghd_rmodule_new(json_t *body, size_t max_source, const char *id_prefix, const char *tenant,
                    struct ghd_ucompiler *compiler, struct ghd_runtime *rt,
                    struct ghd_rmodule **out, struct ghd_err *err)
{
    struct body b;
    struct ghd_ucompiled built = {0};
    int rc = parse_body(body, max_source, &b, err);
    if (rc)
        return rc;
    if (rt->dev.kind != GHD_BACKEND_CUDA)
        return ghd_err_set(err, GHD_ENOTSUP,
                           "raw CUDA modules need the CUDA "
                           "backend; this server runs the %s backend",
                           ghd_backend_name(rt->dev.kind));
    if (!compiler)
        return ghd_err_set(err, GHD_ENOTSUP,
                           "raw CUDA modules need NVRTC, which this server could not load");
    struct ghd_rmodule *m = calloc(1, sizeof(*m));
    if (!m || !(m->key = body_key(&b))) {
        free(m);
        return GHD_ENOHOSTMEM;
    }
    atomic_init(&m->refs, 1);
    key_id(id_prefix, m->key, m->id);
    snprintf(m->tenant, sizeof(m->tenant), "%s", tenant ? tenant : "");
    m->options = b.options ? json_incref(b.options) : json_array();
    m->names = b.names ? json_incref(b.names) : json_array();
    m->source_bytes = b.source_len;
    m->rt = rt;
    int major = 0, minor = 0;
    /* The exact architecture: the cubin is loaded without JIT. */
    struct ghd_err e = {0};
    if ((rc = ghd_rcuda_arch(rt, &major, &minor, &e)) != 0) {
        ghd_err_set(err, rc, "the device's architecture: %s", ghd_err_text(&e, rc));
        goto fail;
    }
    snprintf(m->arch, sizeof(m->arch), "sm_%d%d", major, minor);
    struct ghd_ucompile_job job = {.src = b.source, .arch = m->arch, .options = b.opts,
                                   .names = b.name_v, .nnames = b.nnames, .user = 1};
    rc = ghd_ucompiler_compile_job(compiler, &job, &built, &e);
    snprintf(m->log, sizeof(m->log), "%s", built.log);
    if (rc) {
        ghd_err_set(err, rc, "%s", e.detail);
        goto fail;
    }
    snprintf(m->nvrtc, sizeof(m->nvrtc), "%s", built.nvrtc_version);
    snprintf(m->cache, sizeof(m->cache), "%s", built.cache ? built.cache : "");
    m->compile_seconds = built.seconds;
    if ((rc = ghd_rcuda_load(m, built.cubin, built.lowered, m->names, err)) != 0)
        goto fail;
    ghd_ucompiled_clear(&built);
    *out = m;
    return 0;
fail:
    ghd_ucompiled_clear(&built);
    ghd_rmodule_unref(m);
    return rc;
}

void ghd_rmodule_ref(struct ghd_rmodule *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void ghd_rmodule_unref(struct ghd_rmodule *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    ghd_rcuda_unload(m);
    json_decref(m->options);
    json_decref(m->names);
    free(m->key);
    free(m);
}

struct ghd_rfunc *ghd_rmodule_function(struct ghd_rmodule *m, const char *name)
{
    for (unsigned i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, name) == 0 || strcmp(m->funcs[i].symbol, name) == 0)
            return &m->funcs[i];
    return NULL;
}

json_t *ghd_rmodule_describe_new(const struct ghd_rmodule *m)
{
    json_t *funcs = json_array();
    for (unsigned i = 0; i < m->nfuncs; i++) {
        const struct ghd_rfunc *f = &m->funcs[i];
        json_array_append_new(
            funcs, json_pack("{s:s, s:s, s:i, s:I, s:I, s:i, s:I, s:i}", "name", f->name,
                             "symbol", f->symbol, "registers", f->registers,
                             "shared_bytes_static", (json_int_t)f->static_shared,
                             "local_bytes_per_thread", (json_int_t)f->local_bytes,
                             "max_threads_per_block", (int)f->max_threads,
                             "max_dynamic_shared_bytes", (json_int_t)f->max_dyn_shared,
                             "parameters", (int)f->params.n));
    }
    json_t *build = json_pack("{s:s, s:s, s:s, s:b, s:f, s:s}", "arch", m->arch, "nvrtc",
                              m->nvrtc, "cache", m->cache, "cache_hit",
                              strcmp(m->cache, "miss") != 0, "compile_seconds",
                              m->compile_seconds, "log", m->log);
    return json_pack("{s:s, s:O, s:O, s:I, s:o, s:o}", "id", m->id, "options", m->options,
                     "name_expressions", m->names, "source_bytes", (json_int_t)m->source_bytes,
                     "functions", funcs, "build", build);
}

/* ---- the store ------------------------------------------------------------- */

static struct ghd_rmodule *module_of(struct ghd_tstore_entry *e)
{
    return ghd_container_of(e, struct ghd_rmodule, entry);
}

static void entry_ref(struct ghd_tstore_entry *e)
{
    ghd_rmodule_ref(module_of(e));
}

static void entry_unref(struct ghd_tstore_entry *e)
{
    ghd_rmodule_unref(module_of(e)); /* a run holding it keeps it loaded until it ends */
}

static json_t *entry_describe_new(struct ghd_tstore_entry *e)
{
    return ghd_rmodule_describe_new(module_of(e));
}

static const struct ghd_tstore_type modules = {
    .ref = entry_ref, .unref = entry_unref, .describe_new = entry_describe_new};

void ghd_rmodule_store_init(struct ghd_rmodule_store *s, unsigned tenant_max)
{
    ghd_tstore_init(&s->s, &modules, tenant_max);
}

void ghd_rmodule_store_destroy(struct ghd_rmodule_store *s)
{
    ghd_tstore_destroy(&s->s);
}

int ghd_rmodule_store_add(struct ghd_rmodule_store *s, struct ghd_rmodule *m,
                          struct ghd_rmodule **have)
{
    struct ghd_tstore_entry *e = NULL;
    int rc = ghd_tstore_add(&s->s, &m->entry, m->tenant, m->id, &e);
    *have = e ? module_of(e) : NULL;
    return rc;
}

int ghd_rmodule_store_find_new(struct ghd_rmodule_store *s, const char *tenant, const char *id,
                               struct ghd_rmodule **out)
{
    struct ghd_tstore_entry *e;
    int rc = ghd_tstore_find_new(&s->s, tenant, id, &e);
    if (rc == 0)
        *out = module_of(e);
    return rc;
}

int ghd_rmodule_store_remove(struct ghd_rmodule_store *s, const char *tenant, const char *id)
{
    return ghd_tstore_remove(&s->s, tenant, id);
}

int ghd_rmodule_store_describe(struct ghd_rmodule_store *s, const char *tenant, json_t *list)
{
    return ghd_tstore_describe(&s->s, tenant, list);
}

unsigned ghd_rmodule_store_count(struct ghd_rmodule_store *s, const char *tenant)
{
    return ghd_tstore_count(&s->s, tenant);
}

int ghd_rmodule_store_room(struct ghd_rmodule_store *s, const char *tenant)
{
    return ghd_tstore_room(&s->s, tenant);
}
