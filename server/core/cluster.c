#include "cluster.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* One table under one lock: the prober writes a peer's record once a
 * second, requests read a few; nothing is held across I/O. */

struct peer {
    char url[GHD_CLUSTER_URL_MAX]; /* fixed at start */
    struct ghd_peer_seen seen;
};

struct ghd_cluster {
    char self_url[GHD_CLUSTER_URL_MAX];
    unsigned self_instance;
    unsigned count;
    struct peer peers[GHD_CLUSTER_PEERS_MAX];
    pthread_mutex_t lock;
};

/* http:// or https://, a host, then anything printable but the characters
 * that would break a header or a JSON string we write it into. */
static int url_ok(const char *u, size_t n)
{
    size_t skip = strncmp(u, "http://", 7) == 0 ? 7 : strncmp(u, "https://", 8) == 0 ? 8 : 0;
    if (!skip || n <= skip || u[skip] == '/' || n >= GHD_CLUSTER_URL_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (u[i] <= ' ' || u[i] >= 0x7f || u[i] == '"' || u[i] == '\\' || u[i] == ',')
            return 0;
    return 1;
}

/* Copies u[0..n) without its trailing '/'s into out. */
static int url_copy(const char *u, size_t n, char out[GHD_CLUSTER_URL_MAX], const char *option,
                    struct ghd_err *err)
{
    while (n > 0 && u[n - 1] == '/')
        n--;
    if (!url_ok(u, n))
        return ghd_err_set(err, GHD_EINVAL,
                           "%s: '%.*s' is not an http:// or https:// URL of a host (at most %d "
                           "characters, no spaces, quotes or commas)",
                           option, (int)(n < 200 ? n : 200), u, GHD_CLUSTER_URL_MAX - 1);
    memcpy(out, u, n);
    out[n] = '\0';
    return 0;
}

static int peers_parse(struct ghd_cluster *c, const char *peers, struct ghd_err *err)
{
    for (const char *p = peers; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 0) {
            char url[GHD_CLUSTER_URL_MAX];
            int rc = url_copy(p, n, url, "--peers", err);
            if (rc)
                return rc;
            if (strcmp(url, c->self_url) != 0) {
                if (c->count == GHD_CLUSTER_PEERS_MAX)
                    return ghd_err_set(err, GHD_EINVAL, "--peers: more than %d URLs",
                                       GHD_CLUSTER_PEERS_MAX);
                struct peer *pe = &c->peers[c->count++];
                memcpy(pe->url, url, sizeof(url));
                pe->seen = (struct ghd_peer_seen){.instance = -1, .state = GHD_PEER_UNKNOWN};
            }
        }
        p += n + (end ? 1 : 0);
    }
    return 0;
}

int ghd_cluster_new(const char *self_url, unsigned self_instance, const char *peers,
                    struct ghd_cluster **out, struct ghd_err *err)
{
    *out = NULL;
    struct ghd_cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return ghd_err_set(err, GHD_ENOMEM, "the cluster table");
    c->self_instance = self_instance;
    int rc = 0;
    if (self_url[0])
        rc = url_copy(self_url, strlen(self_url), c->self_url, "--advertise-url", err);
    if (rc == 0)
        rc = peers_parse(c, peers, err);
    if (rc) {
        free(c);
        return rc;
    }
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return 0;
}

void ghd_cluster_free(struct ghd_cluster *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const char *ghd_cluster_self_url(const struct ghd_cluster *c)
{
    return c->self_url;
}

unsigned ghd_cluster_peer_count(const struct ghd_cluster *c)
{
    return c->count;
}

const char *ghd_cluster_peer_url(const struct ghd_cluster *c, unsigned i)
{
    GHD_ASSERT(i < c->count);
    return c->peers[i].url;
}

void ghd_cluster_peer_set(struct ghd_cluster *c, unsigned i, const struct ghd_peer_seen *seen)
{
    GHD_ASSERT(i < c->count);
    pthread_mutex_lock(&c->lock);
    struct ghd_peer_seen *s = &c->peers[i].seen;
    /* What a peer that stopped answering was stays known: its number still
     * names its URL (a redirect to it fails visibly, never elsewhere). */
    if (seen->instance >= 0)
        s->instance = seen->instance;
    if (seen->boot[0] || seen->state == GHD_PEER_READY)
        memcpy(s->boot, seen->boot, sizeof(s->boot));
    s->state = seen->state;
    pthread_mutex_unlock(&c->lock);
}

void ghd_cluster_peer_get(struct ghd_cluster *c, unsigned i, struct ghd_peer_seen *out)
{
    GHD_ASSERT(i < c->count);
    pthread_mutex_lock(&c->lock);
    *out = c->peers[i].seen;
    pthread_mutex_unlock(&c->lock);
}

const char *ghd_cluster_owner_url(struct ghd_cluster *c, unsigned instance)
{
    if (instance == c->self_instance)
        return c->self_url[0] ? c->self_url : NULL;
    const char *url = NULL;
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->count && !url; i++)
        if (c->peers[i].seen.instance == (int)instance)
            url = c->peers[i].url;
    pthread_mutex_unlock(&c->lock);
    return url;
}

/* Distance from `from` to `to` going up and wrapping at 10000 (ids carry
 * four digits): the walk's order. */
static unsigned cyclic(unsigned from, unsigned to)
{
    return (to + 10000 - from) % 10000;
}

int ghd_cluster_walk_next(struct ghd_cluster *c, unsigned start, unsigned after,
                          unsigned *instance, char boot[GHD_CLUSTER_BOOT_LEN + 1],
                          json_t *skipped)
{
    unsigned from = cyclic(start, after), best = 10000;
    int found = -1;
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->count; i++) {
        const struct ghd_peer_seen *s = &c->peers[i].seen;
        if (s->instance < 0) { /* never answered: whatever it holds is not in the walk */
            json_array_append_new(skipped, json_pack("{s:n, s:s, s:s}", "instance", "url",
                                                     c->peers[i].url, "state",
                                                     ghd_peer_state_name(s->state)));
            continue;
        }
        unsigned d = cyclic(start, (unsigned)s->instance);
        if (d <= from || (unsigned)s->instance == c->self_instance)
            continue;
        if (s->state != GHD_PEER_READY || !s->boot[0]) {
            json_array_append_new(skipped,
                                  json_pack("{s:i, s:s, s:s}", "instance", s->instance, "url",
                                            c->peers[i].url, "state",
                                            ghd_peer_state_name(s->state)));
            continue;
        }
        if (d < best) {
            best = d;
            found = (int)i;
        }
    }
    if (found >= 0) {
        *instance = (unsigned)c->peers[found].seen.instance;
        memcpy(boot, c->peers[found].seen.boot, GHD_CLUSTER_BOOT_LEN + 1);
    }
    pthread_mutex_unlock(&c->lock);
    /* A peer skipped past the one chosen is the next page's to report. */
    for (size_t k = json_array_size(skipped); found >= 0 && k-- > 0;) {
        json_t *at = json_object_get(json_array_get(skipped, k), "instance");
        if (json_is_integer(at) && cyclic(start, (unsigned)json_integer_value(at)) > best)
            json_array_remove(skipped, k);
    }
    return found >= 0 ? 0 : GHD_ENOENT;
}

static int by_instance(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "instance"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "instance"));
    int ux = json_is_null(json_object_get(*(json_t *const *)a, "instance"));
    int uy = json_is_null(json_object_get(*(json_t *const *)b, "instance"));
    if (ux != uy)
        return ux - uy;
    return (x > y) - (x < y);
}

json_t *ghd_cluster_json(struct ghd_cluster *c, int self_ready, const char *self_boot)
{
    json_t *peers[GHD_CLUSTER_PEERS_MAX];
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->count; i++) {
        const struct ghd_peer_seen *s = &c->peers[i].seen;
        peers[i] = json_pack("{s:o, s:s, s:s}", "instance",
                             s->instance >= 0 ? json_integer(s->instance) : json_null(), "url",
                             c->peers[i].url, "state", ghd_peer_state_name(s->state));
        if (peers[i] && s->boot[0])
            json_object_set_new(peers[i], "boot", json_string(s->boot));
    }
    unsigned n = c->count;
    pthread_mutex_unlock(&c->lock);
    qsort(peers, n, sizeof(peers[0]), by_instance);
    json_t *list = json_array();
    json_array_append_new(list, json_pack("{s:i, s:o, s:s, s:s, s:b}", "instance",
                                          (int)c->self_instance, "url",
                                          c->self_url[0] ? json_string(c->self_url) : json_null(),
                                          "state", self_ready ? "ready" : "unready", "boot",
                                          self_boot, "self", 1));
    for (unsigned i = 0; i < n; i++)
        json_array_append_new(list, peers[i]);
    return list;
}

const char *ghd_peer_state_name(enum ghd_peer_state s)
{
    static const char *const names[] = {"unknown", "ready", "unready", "down"};
    return names[s];
}
