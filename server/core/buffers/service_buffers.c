/* Buffers for tenants: what a new buffer may ask for and how a refusal
 * reads (the tenant's usage, the pool's), lookups and removal as the
 * tenant sees them, the public JSON of a buffer, and whom a transfer
 * serves. */
#include "service_buffers.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "core/service_cluster.h"
#include "core/service_internal.h"
#include "buffer_copy.h"
#include "cursor.h"
#include "core/runs/run_queue.h"
#include "core/service_devices.h"
#include "core/tiers/tier.h"
#include "write_conds.h"

static void iso_time(time_t t, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *ghd_buffer_json_new(const struct ghd_buffer *b)
{
    char created[32];
    iso_time(b->created, created, sizeof(created));
    json_t *obj = json_pack("{s:s, s:I, s:I, s:i, s:s, s:s}", "id", b->id, "size",
                            (json_int_t)b->size, "alignment", (json_int_t)b->alignment, "device",
                            (int)b->device, "created", created, "label", b->label);
    if (obj && b->expires) {
        char expires[32];
        iso_time(b->expires, expires, sizeof(expires));
        json_object_set_new(obj, "expires", json_string(expires));
    }
    if (obj) {
        enum ghd_tier tier;
        double used;
        int pinned;
        ghd_tier_state(b, &tier, &used, &pinned);
        json_object_set_new(obj, "tier", json_string(ghd_tier_name(tier)));
        if (b->tiers) { /* without tiers nothing keeps the time of a use */
            char last[32];
            iso_time((time_t)used, last, sizeof(last));
            json_object_set_new(obj, "last_used", json_string(last));
            json_object_set_new(obj, "pinned", json_boolean(pinned));
        }
        json_object_set_new(obj, "version", json_integer((json_int_t)ghd_buffer_version(b)));
        json_object_set_new(obj, "uploaded", json_integer((json_int_t)ghd_buffer_uploaded(b)));
        struct ghd_array_desc d;
        ghd_buffer_desc_get(b, &d);
        if (d.dtype[0]) {
            json_t *shape = json_array();
            for (unsigned i = 0; i < d.ndim; i++)
                json_array_append_new(shape, json_integer((json_int_t)d.shape[i]));
            json_object_set_new(obj, "dtype", json_string(d.dtype));
            json_object_set_new(obj, "shape", shape);
        }
    }
    return obj;
}

static int spec_check(const struct ghd_config *cfg, const struct ghd_buffer_spec *spec,
                      struct ghd_err *err)
{
    /* The status rule (openapi.yaml, "Bad input"): what the schemas bound
     * (BufferCreate's size >= 1, in json_spec; alignment <= 2 MiB and label
     * <= 128 characters, body or query alike) is 400; what they cannot state
     * is 422, such as the empty body of the octet-stream form. */
    if (spec->size == 0)
        return ghd_err_set(err, GHD_EUNPROC, "size must be at least 1 byte");
    if (spec->ttl_s < 0 || spec->ttl_s > GHD_BUFFER_TTL_MAX)
        return ghd_err_set(err, GHD_EUNPROC,
                           "ttl_s must be from 0 to %lld seconds (ten years)",
                           (long long)GHD_BUFFER_TTL_MAX);
    if (spec->alignment > ((size_t)1 << 21))
        return ghd_err_set(err, GHD_EINVAL, "alignment must be at most 2097152");
    if (spec->alignment & (spec->alignment - 1))
        return ghd_err_set(err, GHD_EUNPROC, "alignment must be a power of two");
    if (spec->label) {
        size_t chars = 0;
        for (const char *c = spec->label; *c; c++)
            chars += ((unsigned char)*c & 0xc0) != 0x80; /* UTF-8 lead bytes */
        if (chars > GHD_LABEL_MAX)
            return ghd_err_set(err, GHD_EINVAL,
                               "label is longer than %d characters", GHD_LABEL_MAX);
        if (strlen(spec->label) > GHD_LABEL_MAX)
            return ghd_err_set(err, GHD_EUNPROC, "label is longer than %d bytes",
                               GHD_LABEL_MAX);
        for (const char *c = spec->label; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return ghd_err_set(err, GHD_EUNPROC,
                                   "label must not contain control characters");
        /* The query form brings raw bytes; a label that is not UTF-8 could
         * never be written as JSON (the 201, meta and lists would fail). */
        json_t *probe = json_string(spec->label);
        if (!probe)
            return ghd_err_set(err, GHD_EUNPROC, "label must be valid UTF-8");
        json_decref(probe);
    }
    /* Last: a malformed request is a 422 whatever its size, not a 413. */
    if (spec->size > cfg->max_buffer_size)
        return ghd_err_set(err, GHD_ETOOBIG,
                           "size %zu exceeds the largest buffer allowed, %zu bytes "
                           "(--max-buffer-size)",
                           spec->size, cfg->max_buffer_size);
    return 0;
}

/* Why the buffer table refused a new buffer (GHD_EQUOTA or GHD_ELIMIT), in
 * the tenant's terms, naming the option: its bytes, its share of the
 * device's pool, the server's count, its own count or its share of that. */
static int refused(struct ghd_service *svc, const struct ghd_runtime *rt,
                   const struct ghd_buffer_spec *s, int rc, struct ghd_err *err)
{
    const struct ghd_tenant_limits *l = &svc->limits;
    size_t bytes, count;
    ghd_buffer_tenant_usage(&svc->buffers, s->tenant, &bytes, &count);
    const char *who = s->tenant && s->tenant[0] ? s->tenant : "(none)";
    if (rc == GHD_EQUOTA && l->max_bytes)
        return ghd_err_set(err, rc,
                           "tenant '%s' holds %zu bytes; %zu more would pass its "
                           "limit of %zu bytes (--tenant-max-bytes)",
                           who, bytes, s->size, l->max_bytes);
    if (rc == GHD_EQUOTA)
        return ghd_err_set(err, rc,
                           "tenant '%s' holds %zu bytes on device %u; %zu more would pass its "
                           "share of that device's pool, %zu bytes (--tenant-share %u%% of "
                           "%zu)",
                           who, ghd_buffer_tenant_bytes_on(&svc->buffers, s->tenant, rt->index),
                           rt->index, s->size, l->device_max_bytes[rt->index],
                           svc->cfg.tenant_share, rt->pool.cfg.limit);
    if (!l->max_buffers || count < l->max_buffers)
        return ghd_err_set(err, rc,
                           "the server holds %u buffers, its limit (--max-buffers); try again "
                           "once some are deleted",
                           svc->cfg.max_buffers);
    if (l->buffers_shared)
        return ghd_err_set(err, rc,
                           "tenant '%s' holds %zu buffers, its share of the server's "
                           "(--tenant-share %u%% of --max-buffers %u); delete some first",
                           who, count, svc->cfg.tenant_share, svc->cfg.max_buffers);
    return ghd_err_set(err, rc,
                       "tenant '%s' holds %zu buffers, its limit "
                       "(--tenant-max-buffers); delete some first",
                       who, count);
}

/* Creates the buffer on rt's device and says why not in the tenant's and
 * the pool's terms. */
static int create_on(struct ghd_service *svc, struct ghd_runtime *rt,
                     const struct ghd_buffer_spec *s, struct ghd_buffer **out,
                     struct ghd_err *err)
{
    int rc = ghd_buffer_create_new(&svc->buffers, rt, s, out);
    if (rc == GHD_EQUOTA || rc == GHD_ELIMIT)
        return refused(svc, rt, s, rc, err);
    if (rc == GHD_ENOMEM) {
        struct ghd_pool_stats st;
        ghd_pool_get_stats(&rt->pool, &st);
        return ghd_err_set(err, rc,
                           "cannot allocate %zu bytes on device %u: its pool holds %zu bytes "
                           "in use of a %zu-byte limit",
                           s->size, rt->index, st.in_use, st.limit);
    }
    if (rc)
        return ghd_err_set(err, rc, "cannot allocate the buffer");
    return 0;
}

/* The device a new buffer goes to: the one it names, else the source's
 * (a copy), else the placement's. */
static int device_for(struct ghd_service *svc, const struct ghd_buffer_spec *s,
                      struct ghd_runtime *source, struct ghd_runtime **rt, struct ghd_err *err)
{
    if (s->has_device)
        return ghd_service_device(svc, s->device, rt, err);
    if (source) {
        *rt = source;
        return 0;
    }
    return ghd_service_place(svc, rt, err);
}

/* ?near=<id>: next to that buffer. A proxy routes the request to its
 * owner; here it must exist for this tenant (421 or 410 for an id this
 * start did not make, 404 otherwise), and the new buffer is made on the
 * same device. */
static int near_device(struct ghd_service *svc, const struct ghd_caller *caller,
                       struct ghd_buffer_spec *s, struct ghd_err *err)
{
    struct ghd_buffer *beside;
    int rc = ghd_service_buffer_find(svc, caller, s->near, &beside, err);
    if (rc) {
        ghd_err_prefix(err, rc, "near");
        return rc;
    }
    unsigned dev = beside->device;
    ghd_buffer_unref(beside);
    if (s->has_device && s->device != (long long)dev)
        return ghd_err_set(err, GHD_EUNPROC,
                           "'device' %lld and near=%.64s (on device %u) disagree; give one of "
                           "them",
                           s->device, s->near, dev);
    s->has_device = 1;
    s->device = dev;
    return 0;
}

int ghd_service_buffer_create(struct ghd_service *svc, const struct ghd_caller *caller,
                              const struct ghd_buffer_spec *spec, struct ghd_buffer **out,
                              struct ghd_err *err)
{
    struct ghd_buffer_spec s = *spec;
    int rc = s.near ? near_device(svc, caller, &s, err) : 0;
    if (rc == 0)
        rc = spec_check(&svc->cfg, &s, err);
    if (rc)
        return rc;
    s.tenant = caller->tenant;
    if (!s.ttl_s)
        s.ttl_s = svc->cfg.default_ttl_s;
    struct ghd_runtime *rt = NULL;
    rc = device_for(svc, &s, NULL, &rt, err);
    return rc ? rc : create_on(svc, rt, &s, out, err);
}

int ghd_service_source_quiet(struct ghd_service *svc, const struct ghd_buffer *src,
                             const char *what, struct ghd_err *err)
{
    if (atomic_load(&src->writing))
        return ghd_err_set(err, GHD_EBUSY, "buffer %s is being written (an upload or a "
                           "transfer into it is in progress); %s it once that is done",
                           src->id, what);
    char run[GHD_BUFFER_ID_LEN + 1];
    if (svc->runs && ghd_run_queue_writer(svc->runs, src, run))
        return ghd_err_set(err, GHD_EBUSY, "buffer %s is written by run %s, queued or "
                           "running; %s it once that run has ended (GET /v1/runs/%s)",
                           src->id, run, what, run);
    return 0;
}

int ghd_service_source_moved(const struct ghd_buffer *src, uint64_t expected, const char *what,
                             struct ghd_err *err)
{
    uint64_t now = ghd_buffer_version(src);
    if (now == expected)
        return 0;
    return ghd_err_set(err, GHD_EBUSY, "buffer %s was written during the %s (version "
                       "\"v%llu\" became \"v%llu\"); %s it again", src->id, what,
                       (unsigned long long)expected, (unsigned long long)now, what);
}

/* The source is read as a download reads it: the bytes as they are when
 * the copy runs. A writer in flight (an upload, a run queued or running
 * that writes it) is refused before a byte moves, and a write that starts
 * meanwhile (an upload, a run taken, a PATCH) moves its version, so the
 * copy is refused rather than given a state that the source never had as
 * a whole. The version is read before the runs are looked at: a run taken
 * after that moved it, one taken before is found. */
int ghd_service_buffer_copy(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *source_id,
                            const struct ghd_buffer_spec *spec, struct ghd_buffer **out,
                            uint64_t *source_version, struct ghd_err *err)
{
    struct ghd_buffer *src = NULL, *dst = NULL;
    int rc = ghd_service_buffer_find(svc, caller, source_id, &src, err);
    if (rc)
        return rc;
    struct ghd_buffer_spec s = {.size = src->size,
                                .alignment = src->alignment,
                                .label = spec->label,
                                .tenant = caller->tenant,
                                .ttl_s = spec->ttl_s ? spec->ttl_s : svc->cfg.default_ttl_s,
                                .pending = 1, /* invisible until every byte is there */
                                .has_device = spec->has_device,
                                .device = spec->device};
    struct ghd_array_desc desc;
    ghd_buffer_desc_get(src, &desc);
    s.desc = desc.dtype[0] ? &desc : NULL;
    uint64_t v = ghd_buffer_version(src);
    struct ghd_runtime *rt = NULL;
    /* A busy source is the answer before the room for its copy is (409
     * naming the writer, not 507 while the writer holds the pool); checked
     * again once the copy is allocated, as a writer may start meanwhile. */
    if ((rc = ghd_service_source_quiet(svc, src, "copy", err)) != 0 ||
        (rc = spec_check(&svc->cfg, &s, err)) != 0 ||
        (rc = device_for(svc, &s, src->rt, &rt, err)) != 0 ||
        (rc = create_on(svc, rt, &s, &dst, err)) != 0)
        goto out;
    rc = ghd_service_source_quiet(svc, src, "copy", err);
    if (rc == 0)
        rc = ghd_buffer_copy_bytes(dst, src, err);
    if (rc == 0)
        rc = ghd_service_source_moved(src, v, "copy", err);
    if (rc) {
        ghd_buffer_discard(&svc->buffers, dst);
        ghd_buffer_unref(dst);
        goto out;
    }
    ghd_buffer_publish(dst);
    *out = dst;
    *source_version = v;
out:
    ghd_buffer_unref(src);
    return rc;
}

int ghd_service_buffer_find_host(struct ghd_service *svc, const struct ghd_caller *caller,
                                 const char *id,
                                 struct ghd_buffer **out, struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    int rc = ghd_owner_check(&svc->owner, id, err); /* 421 or 410 rather than 404 */
    if (rc)
        return rc;
    rc = ghd_buffer_find_new(&svc->buffers, id, tenant, out);
    return rc ? ghd_err_set(err, rc, "no buffer with id '%.64s'", id) : 0;
}

int ghd_service_buffer_find(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *id,
                            struct ghd_buffer **out, struct ghd_err *err)
{
    int rc = ghd_service_buffer_find_host(svc, caller, id, out, err);
    if (rc)
        return rc;
    char what[GHD_BUFFER_ID_LEN + 16];
    snprintf(what, sizeof(what), "buffer %s", id);
    rc = ghd_service_device_usable(svc, (*out)->rt, what, err);
    if (rc) {
        ghd_buffer_unref(*out);
        *out = NULL;
    }
    return rc;
}

static int conds_hold(const void *conds, uint64_t version)
{
    return ghd_write_conds_ok(conds, version);
}

int ghd_service_buffer_remove(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *id,
                              const char *if_match, const char *if_none_match,
                              uint64_t *current, struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    struct ghd_write_conds c;
    int rc = ghd_write_conds_parse(if_match, if_none_match, &c, err);
    if (rc)
        return rc;
    rc = ghd_buffer_remove_match(&svc->buffers, id, tenant, conds_hold, &c, current);
    if (rc == GHD_EPRECOND)
        return ghd_write_conds_refuse(&c, *current, err);
    if (rc)
        return ghd_err_set(err, rc, "no buffer with id '%.64s'", id);
    return 0;
}

struct list_page {
    json_t *items;
    uint64_t last_seq;
};

static void list_one(const struct ghd_buffer *b, void *ctx)
{
    struct list_page *page = ctx;
    json_array_append_new(page->items, ghd_buffer_json_new(b));
    page->last_seq = b->seq;
}

int ghd_service_buffer_list(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *cursor, size_t limit, json_t **body, struct ghd_err *err)
{
    uint64_t after = 0;
    *body = NULL;
    struct ghd_list_walk walk; /* with peers: one cursor through every instance */
    int rc = ghd_list_walk_begin(svc, cursor, &walk, err);
    if (rc)
        return rc;
    if (walk.local && ghd_cursor_decode(caller->tenant, walk.local, &after) != 0)
        return ghd_err_set(err, GHD_EINVAL, "cursor must be a value returned as next_cursor");
    struct list_page page = {json_array(), 0};
    int more = 0;
    ghd_buffer_list(&svc->buffers, caller->tenant, after, limit, list_one, &page, &more);
    *body = json_pack("{s:o}", "buffers", page.items);
    if (!*body)
        return ghd_err_set(err, GHD_ENOMEM, "the buffer listing");
    /* The creation sequence of the last buffer listed, made opaque. */
    char c[GHD_CURSOR_LEN + 1];
    ghd_cursor_encode(caller->tenant, page.last_seq, c);
    ghd_list_walk_end(svc, &walk, more, c, *body);
    return 0;
}

void ghd_service_transfer_client(struct ghd_service *svc, const char *request_id,
                                 const char *address, const struct ghd_caller *caller,
                                 struct ghd_transfer_client *out)
{
    *out = (struct ghd_transfer_client){
        .caps = &svc->staging_caps,
        .buffers = &svc->buffers,
        .metrics = svc->metrics,
        .request_id = request_id,
        .address = address,
        .tenant = caller->tenant,
    };
}
