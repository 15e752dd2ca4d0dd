#ifndef GHD_BASE_JSON_CACHE_H
#define GHD_BASE_JSON_CACHE_H

/* Parsed JSON bodies kept by their bytes. A client that runs the same small
 * request again and again (a pipeline in a loop) sends the same body each
 * time, and Jansson's parser costs about 3 us per pipeline step (the lexer
 * reads a byte at a time); a copy of the document parsed before costs a
 * fraction of that. A body is looked up by its exact bytes, the flags and a
 * scope (the caller's tenant: one tenant cannot time whether another sent
 * a body); a hit returns a deep copy of the kept document, the caller's to
 * change, so it reads as ghd_json_loadb_u64 would have parsed it. Only
 * documents that parsed are kept: a body that fails is parsed each time and
 * fails with that parse's error. Bounded: GHD_JSON_CACHE_ENTRIES bodies of at
 * most GHD_JSON_CACHE_MAX_BODY bytes, the least recently used replaced. */
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define GHD_JSON_CACHE_ENTRIES 16
#define GHD_JSON_CACHE_MAX_BODY 16384

struct ghd_json_cache_entry {
    char *key; /* scope, '\0', the body's bytes */
    size_t key_len;
    size_t flags;
    json_t *doc; /* the cache's reference; never handed out */
    uint64_t used;
};

struct ghd_json_cache {
    pthread_mutex_t lock;
    uint64_t clock;
    uint64_t hits, misses;
    struct ghd_json_cache_entry e[GHD_JSON_CACHE_ENTRIES];
};

#define GHD_JSON_CACHE_INIT {.lock = PTHREAD_MUTEX_INITIALIZER}

/* As ghd_json_loadb_u64(buf, len, flags, err) (a new reference, or NULL
 * with *err), through cache c; scope NULL reads as "". */
json_t *ghd_json_cache_loadb(struct ghd_json_cache *c, const char *scope, const char *buf,
                             size_t len, size_t flags, json_error_t *err);
/* Lets every kept document go (the cache stays usable). */
void ghd_json_cache_clear(struct ghd_json_cache *c);

#endif
