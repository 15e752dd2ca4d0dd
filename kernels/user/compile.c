/* The compile cache (memory and disk) and the bounded compile pool; see
 * compile.h for the contract. */
#include "compile.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/hash.h"
#include "base/list.h"
#include "diskcache.h"

struct mem_entry {
    uint64_t hash;
    char *key; /* the whole key: source, options, arch, version */
    unsigned char *cubin;
    size_t size;
    char *lowered; /* NULL without name expressions */
    struct ghd_list_node link; /* the memory cache, most recent first */
};

struct job {
    const struct ghd_ucompile_job *job;
    struct ghd_ucompiled *out;
    struct ghd_err err;
    int rc, done;
    struct ghd_list_node link; /* the queue */
};

struct ghd_ucompiler {
    pthread_mutex_t lock;
    pthread_cond_t work;  /* a job was queued, or stopping */
    pthread_cond_t done;  /* a job finished */
    struct ghd_list jobs; /* queued, oldest first */
    unsigned queued, queue_max;
    int stopping;
    pthread_t *threads;
    unsigned nthreads;
    struct ghd_list mem;
    unsigned nmem;
    struct ghd_diskcache disk;
    char version[16];
};

/* ---- keys ---------------------------------------------------------------- */

/* Everything the cubin depends on: NVRTC's version, the architecture, the
 * options (fixed and the job's), the name expressions and the source. */
static char *make_key(const struct ghd_ucompiler *c, const struct ghd_ucompile_job *job)
{
    size_t len = strlen(job->src) + strlen(job->arch) + strlen(c->version) + 64;
    for (const char *const *o = ghd_ucompile_fixed_options(job); *o; o++)
        len += strlen(*o) + 1;
    for (const char *const *o = job->options; o && *o; o++)
        len += strlen(*o) + 1;
    for (unsigned i = 0; i < job->nnames; i++)
        len += strlen(job->names[i]) + 1;
    char *key = malloc(len);
    if (!key)
        return NULL;
    int n = snprintf(key, len, "nvrtc %s\narch %s\noptions", c->version, job->arch);
    for (const char *const *o = ghd_ucompile_fixed_options(job); *o; o++)
        n += snprintf(key + n, len - (size_t)n, " %s", *o);
    for (const char *const *o = job->options; o && *o; o++)
        n += snprintf(key + n, len - (size_t)n, "\x1f%s", *o); /* options may hold blanks */
    n += snprintf(key + n, len - (size_t)n, "\nnames");
    for (unsigned i = 0; i < job->nnames; i++)
        n += snprintf(key + n, len - (size_t)n, "\x1f%s", job->names[i]);
    snprintf(key + n, len - (size_t)n, "\n%s", job->src);
    return key;
}

/* ---- memory ------------------------------------------------------------- */

static struct mem_entry *mem_of(struct ghd_list_node *n)
{
    return ghd_list_entry(n, struct mem_entry, link);
}

static void mem_free(struct mem_entry *m)
{
    free(m->key);
    free(m->cubin);
    free(m->lowered);
    free(m);
}

/* pre: lock held. Copies a matching entry's cubin; moves it to the front. */
static int mem_find_locked(struct ghd_ucompiler *c, uint64_t h, const char *key,
                           struct ghd_ucompiled *out)
{
    for (struct mem_entry *m = mem_of(c->mem.first); m; m = mem_of(m->link.next)) {
        if (m->hash != h || strcmp(m->key, key) != 0)
            continue;
        out->cubin = malloc(m->size);
        out->lowered = m->lowered ? strdup(m->lowered) : NULL;
        if (!out->cubin || (m->lowered && !out->lowered)) {
            ghd_ucompiled_clear(out);
            return GHD_ENOHOSTMEM;
        }
        memcpy(out->cubin, m->cubin, m->size);
        out->size = m->size;
        ghd_list_remove(&c->mem, &m->link);
        ghd_list_push_front(&c->mem, &m->link);
        return 1;
    }
    return 0;
}

/* pre: lock held. */
static void mem_add_locked(struct ghd_ucompiler *c, uint64_t h, const char *key,
                           const struct ghd_ucompiled *r)
{
    struct mem_entry *m = calloc(1, sizeof(*m));
    if (!m)
        return;
    m->key = strdup(key);
    m->cubin = malloc(r->size);
    m->lowered = r->lowered ? strdup(r->lowered) : NULL;
    if (!m->key || !m->cubin || (r->lowered && !m->lowered)) {
        mem_free(m);
        return;
    }
    memcpy(m->cubin, r->cubin, r->size);
    m->size = r->size;
    m->hash = h;
    ghd_list_push_front(&c->mem, &m->link);
    if (++c->nmem > GHD_UCACHE_MEMORY) { /* drop the least recent */
        struct mem_entry *last = mem_of(c->mem.last);
        ghd_list_remove(&c->mem, &last->link);
        mem_free(last);
        c->nmem--;
    }
}

/* ---- disk: the cubin and the lowered names under the whole key ----------- */

static int disk_find(struct ghd_ucompiler *c, const char *key, struct ghd_ucompiled *out)
{
    void *parts[2];
    size_t lens[2];
    if (!ghd_diskcache_get(&c->disk, "cubin", key, parts, lens, 2))
        return 0;
    if (lens[0] == 0) { /* no cubin is no entry */
        free(parts[0]);
        free(parts[1]);
        return 0;
    }
    out->cubin = parts[0];
    out->size = lens[0];
    out->lowered = lens[1] ? parts[1] : NULL;
    if (!lens[1])
        free(parts[1]);
    return 1;
}

static void disk_store(struct ghd_ucompiler *c, const char *key, const struct ghd_ucompiled *r)
{
    const void *parts[2] = {r->cubin, r->lowered ? r->lowered : ""};
    size_t lens[2] = {r->size, r->lowered ? strlen(r->lowered) : 0};
    ghd_diskcache_put(&c->disk, "cubin", key, parts, lens, 2);
}

/* ---- the pool ------------------------------------------------------------ */

static void *worker(void *arg)
{
    struct ghd_ucompiler *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (ghd_list_empty(&c->jobs) && !c->stopping)
            pthread_cond_wait(&c->work, &c->lock);
        if (ghd_list_empty(&c->jobs))
            break;
        struct job *j = ghd_container_of(ghd_list_pop_front(&c->jobs), struct job, link);
        c->queued--;
        pthread_mutex_unlock(&c->lock);
        j->rc = ghd_unvrtc_compile(j->job, j->out, &j->err);
        pthread_mutex_lock(&c->lock);
        j->done = 1;
        pthread_cond_broadcast(&c->done);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

int ghd_ucompiler_new(const struct ghd_ucompiler_config *cfg, struct ghd_ucompiler **out,
                      struct ghd_err *err)
{
    *out = NULL;
    struct ghd_ucompiler *c = calloc(1, sizeof(*c));
    if (!c)
        return GHD_ENOHOSTMEM;
    int rc = ghd_unvrtc_version(c->version, sizeof(c->version));
    if (rc) {
        ghd_err_set(err, rc, "no NVRTC in this build");
        free(c);
        return rc;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->done, NULL);
    c->queue_max = cfg->queue;
    if ((rc = ghd_diskcache_open(&c->disk, cfg->cache_dir, cfg->cache_max_bytes, err)) != 0) {
        ghd_ucompiler_free(c);
        return rc;
    }
    c->threads = calloc(cfg->workers ? cfg->workers : 1, sizeof(*c->threads));
    for (unsigned i = 0; c->threads && i < (cfg->workers ? cfg->workers : 1); i++) {
        if (pthread_create(&c->threads[i], NULL, worker, c) != 0)
            break;
        c->nthreads++;
    }
    if (!c->nthreads) {
        ghd_err_set(err, GHD_EINTERNAL, "compile workers: cannot start a thread");
        ghd_ucompiler_free(c);
        return GHD_EINTERNAL;
    }
    *out = c;
    return 0;
}

void ghd_ucompiler_free(struct ghd_ucompiler *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_broadcast(&c->work);
    pthread_mutex_unlock(&c->lock);
    for (unsigned i = 0; i < c->nthreads; i++)
        pthread_join(c->threads[i], NULL);
    free(c->threads);
    while (!ghd_list_empty(&c->mem))
        mem_free(mem_of(ghd_list_pop_front(&c->mem)));
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int ghd_ucompiler_compile(struct ghd_ucompiler *c, const char *src, const char *arch,
                          struct ghd_ucompiled *out, struct ghd_err *e)
{
    struct ghd_ucompile_job job = {.src = src, .arch = arch};
    return ghd_ucompiler_compile_job(c, &job, out, e);
}

int ghd_ucompiler_compile_job(struct ghd_ucompiler *c, const struct ghd_ucompile_job *job,
                              struct ghd_ucompiled *out, struct ghd_err *e)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->nvrtc_version, sizeof(out->nvrtc_version), "%s", c->version);
    char *key = make_key(c, job);
    if (!key)
        return ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
    uint64_t h = ghd_fnv1a(GHD_FNV_INIT, key, strlen(key));
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    int hit = mem_find_locked(c, h, key, out);
    pthread_mutex_unlock(&c->lock);
    if (hit < 0) {
        rc = ghd_err_set(e, hit, "out of host memory");
        goto out;
    }
    if (hit) {
        out->cache = "memory";
        goto out;
    }
    if (disk_find(c, key, out)) {
        out->cache = "disk";
        pthread_mutex_lock(&c->lock);
        mem_add_locked(c, h, key, out);
        pthread_mutex_unlock(&c->lock);
        goto out;
    }
    struct job j = {.job = job, .out = out};
    pthread_mutex_lock(&c->lock);
    if (c->queued >= c->queue_max) {
        pthread_mutex_unlock(&c->lock);
        rc = ghd_err_set(e, GHD_ELIMIT, "%u compiles are waiting already (--compile-queue)",
                          c->queued);
        goto out;
    }
    ghd_list_push_back(&c->jobs, &j.link);
    c->queued++;
    pthread_cond_signal(&c->work);
    while (!j.done)
        pthread_cond_wait(&c->done, &c->lock);
    if (j.rc == 0)
        mem_add_locked(c, h, key, out);
    pthread_mutex_unlock(&c->lock);
    if (j.rc) {
        *e = j.err;
        rc = j.rc;
        goto out;
    }
    out->cache = "miss";
    disk_store(c, key, out);
out:
    free(key);
    return rc;
}

void ghd_ucompiled_clear(struct ghd_ucompiled *r)
{
    free(r->cubin);
    r->cubin = NULL;
    free(r->lowered);
    r->lowered = NULL;
    r->size = 0;
}
