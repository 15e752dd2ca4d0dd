/* Parsed JSON bodies kept by their bytes (json_cache.h). The lookup compares
 * lengths, then bytes, of at most GHD_JSON_CACHE_ENTRIES keys: no hash to
 * compute over the body, and memcmp of a few KiB costs far less than a
 * parse. A hit copies the document outside the lock, holding a reference
 * (Jansson counts references atomically), so threads copy at once. */
#include "json_cache.h"

#include <stdlib.h>
#include <string.h>

#include "json_u64.h"

/* pre: lock held. The entry holding this key, or NULL. */
static struct ghd_json_cache_entry *find_locked(struct ghd_json_cache *c, const char *key,
                                                size_t key_len, size_t flags)
{
    for (unsigned i = 0; i < GHD_JSON_CACHE_ENTRIES; i++) {
        struct ghd_json_cache_entry *e = &c->e[i];
        if (e->doc && e->key_len == key_len && e->flags == flags &&
            memcmp(e->key, key, key_len) == 0)
            return e;
    }
    return NULL;
}

/* pre: lock held. An empty entry, else the least recently used, emptied;
 * its document is handed back in *old to be let go outside the lock. */
static struct ghd_json_cache_entry *room_locked(struct ghd_json_cache *c, json_t **old)
{
    struct ghd_json_cache_entry *lru = &c->e[0];
    for (unsigned i = 0; i < GHD_JSON_CACHE_ENTRIES; i++) {
        if (!c->e[i].doc)
            return &c->e[i];
        if (c->e[i].used < lru->used)
            lru = &c->e[i];
    }
    *old = lru->doc;
    lru->doc = NULL;
    return lru;
}

/* Keeps a copy of doc under key (which the cache takes); frees key when it
 * cannot. */
static void keep(struct ghd_json_cache *c, char *key, size_t key_len, size_t flags,
                 const json_t *doc)
{
    json_t *copy = json_deep_copy(doc), *old = NULL;
    if (!copy) {
        free(key);
        return;
    }
    pthread_mutex_lock(&c->lock);
    if (find_locked(c, key, key_len, flags)) { /* another thread kept it first */
        pthread_mutex_unlock(&c->lock);
        json_decref(copy);
        free(key);
        return;
    }
    struct ghd_json_cache_entry *e = room_locked(c, &old);
    char *old_key = e->key;
    *e = (struct ghd_json_cache_entry){key, key_len, flags, copy, ++c->clock};
    pthread_mutex_unlock(&c->lock);
    free(old_key);
    json_decref(old);
}

json_t *ghd_json_cache_loadb(struct ghd_json_cache *c, const char *scope, const char *buf,
                             size_t len, size_t flags, json_error_t *err)
{
    if (len > GHD_JSON_CACHE_MAX_BODY)
        return ghd_json_loadb_u64(buf, len, flags, err);
    size_t slen = strlen(scope ? scope : "") + 1, key_len = slen + len;
    char *key = malloc(key_len ? key_len : 1);
    if (!key)
        return ghd_json_loadb_u64(buf, len, flags, err);
    memcpy(key, scope ? scope : "", slen);
    if (len)
        memcpy(key + slen, buf, len);
    pthread_mutex_lock(&c->lock);
    struct ghd_json_cache_entry *e = find_locked(c, key, key_len, flags);
    json_t *kept = e ? json_incref(e->doc) : NULL;
    if (e) {
        e->used = ++c->clock;
        c->hits++;
    } else {
        c->misses++;
    }
    pthread_mutex_unlock(&c->lock);
    if (kept) {
        free(key);
        json_t *doc = json_deep_copy(kept);
        json_decref(kept);
        if (doc)
            return doc;
        return ghd_json_loadb_u64(buf, len, flags, err); /* no memory for the copy */
    }
    json_t *doc = ghd_json_loadb_u64(buf, len, flags, err);
    if (doc)
        keep(c, key, key_len, flags, doc);
    else
        free(key);
    return doc;
}

void ghd_json_cache_clear(struct ghd_json_cache *c)
{
    for (unsigned i = 0; i < GHD_JSON_CACHE_ENTRIES; i++) {
        pthread_mutex_lock(&c->lock);
        struct ghd_json_cache_entry e = c->e[i];
        c->e[i] = (struct ghd_json_cache_entry){0};
        pthread_mutex_unlock(&c->lock);
        free(e.key);
        json_decref(e.doc);
    }
}
