#include "owner.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "error.h"

int ghd_owner_init(struct ghd_owner *o, unsigned instance)
{
    GHD_ASSERT(instance <= GHD_OWNER_INSTANCE_MAX);
    unsigned char raw[GHD_OWNER_BOOT_LEN / 2];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return GHD_EINTERNAL;
    o->instance = instance;
    snprintf(o->boot, sizeof(o->boot), "%02x%02x%02x%02x", raw[0], raw[1], raw[2], raw[3]);
    snprintf(o->prefix, sizeof(o->prefix), "i%04u-%s-", instance, o->boot);
    return 0;
}

unsigned ghd_owner_from_hostname(const char *hostname)
{
    size_t n = strlen(hostname), start = n;
    while (start > 0 && hostname[start - 1] >= '0' && hostname[start - 1] <= '9')
        start--;
    if (start == n || n - start > 4)
        return 0;
    unsigned v = 0;
    for (size_t i = start; i < n; i++)
        v = v * 10 + (unsigned)(hostname[i] - '0');
    return v;
}

static int is_digits(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return 0;
    return 1;
}

int ghd_owner_instance_of(const char *id)
{
    if (strlen(id) <= GHD_OWNER_PREFIX_LEN || id[0] != 'i' || id[5] != '-' || id[14] != '-' ||
        !is_digits(id + 1, 4, "0123456789") ||
        !is_digits(id + 6, GHD_OWNER_BOOT_LEN, "0123456789abcdef"))
        return -1;
    return (id[1] - '0') * 1000 + (id[2] - '0') * 100 + (id[3] - '0') * 10 + (id[4] - '0');
}

int ghd_owner_check(const struct ghd_owner *o, const char *id, struct ghd_err *err)
{
    int named = ghd_owner_instance_of(id);
    /* Not of the prefix's form: an id no instance made. */
    if (named < 0 || memcmp(id, o->prefix, GHD_OWNER_PREFIX_LEN) == 0)
        return 0;
    unsigned instance = (unsigned)named;
    if (instance == o->instance)
        return ghd_err_set(err, GHD_EGONE,
                           "created by an earlier start of instance %u (boot %.8s; this is boot "
                           "%s); what an instance holds (buffers, regions, runs, kernels) does "
                           "not survive a restart",
                           instance, id + 6, o->boot);
    return ghd_err_set(err, GHD_EMISDIRECTED,
                       "owned by instance %u, and this is instance %u: send it to instance %u "
                       "(a proxy routes on the id's prefix i%04u- in the path, in ?near= or "
                       "in the Gpuhttpd-Route header)",
                       instance, o->instance, instance, instance);
}

/* The ids of one request body: every string of the id form (an owner
 * prefix, then hex digits), the first two instances they name, and the
 * first that ghd_owner_check refuses, named by where it is in the body
 * (to.buffer, steps[1].args.x). Where the walk is, is kept as the keys and
 * indices down to it and written out only for a refused id: most bodies
 * have none, and writing each node's path cost about a microsecond per
 * step of a pipeline. */
#define OWNER_WALK_DEPTH 64 /* deeper than any request the server takes */
struct owner_walk {
    const struct ghd_owner *o;
    int instances[2];
    unsigned ninstances; /* 0, 1 or 2 */
    int refused;
    struct ghd_err *err;
    struct {
        const char *key; /* NULL: an array's item, at `index` */
        size_t index;
    } at[OWNER_WALK_DEPTH + 1]; /* at[1..depth]: the way down to the node */
};

/* The path of the node at `depth` (".key" or "[i]" per level, cut, not
 * overflowed, past the room). */
static void walk_path(const struct owner_walk *w, unsigned depth, char *path, size_t room)
{
    path[0] = '\0';
    for (unsigned d = 1; d <= depth; d++) {
        size_t len = strlen(path);
        if (w->at[d].key)
            snprintf(path + len, room - len, "%s%s", len ? "." : "", w->at[d].key);
        else
            snprintf(path + len, room - len, "[%zu]", w->at[d].index);
    }
}

static void walk_id(struct owner_walk *w, const char *s, unsigned depth)
{
    int named = ghd_owner_instance_of(s);
    if (named < 0 ||
        !is_digits(s + GHD_OWNER_PREFIX_LEN, strlen(s + GHD_OWNER_PREFIX_LEN), "0123456789abcdef"))
        return;
    if (w->ninstances == 0 || (w->ninstances == 1 && w->instances[0] != named))
        w->instances[w->ninstances++] = named;
    int rc;
    if (!w->refused && (rc = ghd_owner_check(w->o, s, w->err)) != 0) {
        char path[128];
        walk_path(w, depth, path, sizeof(path));
        ghd_err_prefix(w->err, rc, "'%s' %.64s", path, s);
        w->refused = rc;
    }
}

static void walk_ids(struct owner_walk *w, const json_t *v, unsigned depth)
{
    if (depth > OWNER_WALK_DEPTH)
        return;
    if (json_is_string(v)) {
        walk_id(w, json_string_value(v), depth);
        return;
    }
    size_t i;
    const char *key;
    json_t *item;
    if (json_is_array(v))
        json_array_foreach((json_t *)v, i, item) {
            if (depth < OWNER_WALK_DEPTH) {
                w->at[depth + 1].key = NULL;
                w->at[depth + 1].index = i;
            }
            walk_ids(w, item, depth + 1);
        }
    else if (json_is_object(v))
        json_object_foreach((json_t *)v, key, item) {
            if (strcmp(key, "label") == 0) /* a client's own text, whatever it says */
                continue;
            if (depth < OWNER_WALK_DEPTH)
                w->at[depth + 1].key = key;
            walk_ids(w, item, depth + 1);
        }
}

int ghd_owner_check_json(const struct ghd_owner *o, const json_t *body, struct ghd_err *err)
{
    struct owner_walk w = {.o = o, .err = err};
    walk_ids(&w, body, 0);
    if (w.ninstances > 1)
        return ghd_err_set(err, GHD_EUNPROC,
                           "the request names ids of instances %d and %d: what one request "
                           "works on must live on one instance; copy the data to one instance "
                           "first (download it and upload it there)",
                           w.instances[0], w.instances[1]);
    return w.refused;
}
