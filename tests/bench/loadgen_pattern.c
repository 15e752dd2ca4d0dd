#include "loadgen_pattern.h"

#include <stdlib.h>
#include <string.h>

static const uint64_t PRIME1 = 0x9E3779B185EBCA87ULL;
static const uint64_t PRIME2 = 0xC2B2AE3D27D4EB4FULL;
static const uint64_t PRIME3 = 0x165667B19E3779F9ULL;
static const uint64_t PRIME4 = 0x85EBCA77C2B2AE63ULL;
static const uint64_t PRIME5 = 0x27D4EB2F165667C5ULL;

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v); /* little-endian hosts only; both benchmark machines are */
    return v;
}

static uint64_t xorshift64star(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

int lg_pattern_init(struct lg_pattern *pattern, size_t len, uint64_t seed)
{
    pattern->len = len;
    pattern->block = malloc(len + sizeof(uint64_t));
    if (!pattern->block)
        return -1;
    uint64_t state = seed ? seed : 0x853C49E6748FEA9BULL;
    for (size_t i = 0; i < len; i += sizeof(uint64_t)) {
        uint64_t v = xorshift64star(&state);
        memcpy(pattern->block + i, &v, sizeof v); /* the spare word absorbs the overrun */
    }
    return 0;
}

void lg_pattern_destroy(struct lg_pattern *pattern)
{
    free(pattern->block);
    pattern->block = NULL;
    pattern->len = 0;
}

size_t lg_pattern_start(const struct lg_pattern *pattern, unsigned conn_index)
{
    /* A large odd stride spreads the connections over the whole block. */
    return (size_t)(((uint64_t)conn_index * 0x9E3779B1ULL + 12345) % pattern->len);
}

void lg_stream_init(struct lg_stream *stream, const struct lg_pattern *pattern, unsigned conn_index,
                    uint64_t length)
{
    stream->pattern = pattern;
    stream->pos = lg_pattern_start(pattern, conn_index);
    stream->remaining = length;
}

const unsigned char *lg_stream_next(struct lg_stream *stream, size_t max, size_t *len)
{
    size_t n = stream->pattern->len - stream->pos;
    if (n > max)
        n = max;
    if (n > stream->remaining)
        n = (size_t)stream->remaining;
    *len = n;
    if (n == 0)
        return NULL;
    const unsigned char *piece = stream->pattern->block + stream->pos;
    stream->pos += n;
    if (stream->pos == stream->pattern->len)
        stream->pos = 0;
    stream->remaining -= n;
    return piece;
}

void lg_hash_init(struct lg_hash *hash)
{
    for (int k = 0; k < LG_HASH_LANES; k++)
        hash->lane[k] = PRIME3 * (uint64_t)(k + 1) + PRIME5;
    hash->total = 0;
    hash->tail_len = 0;
}

/* One multiply per word keeps the checksum cheap enough to run on every received byte;
 * the rotate after it carries high bits down, so order and position both matter. */
static uint64_t hash_round(uint64_t acc, uint64_t input)
{
    return rotl64((acc ^ input) * PRIME1, 31);
}

static void hash_stripes(struct lg_hash *hash, const unsigned char *p, size_t stripes)
{
    uint64_t l[LG_HASH_LANES];
    memcpy(l, hash->lane, sizeof l);
    for (size_t i = 0; i < stripes; i++, p += LG_HASH_STRIPE)
        for (int k = 0; k < LG_HASH_LANES; k++)
            l[k] = hash_round(l[k], load64(p + 8 * k));
    memcpy(hash->lane, l, sizeof l);
}

void lg_hash_update(struct lg_hash *hash, const void *data, size_t len)
{
    const unsigned char *p = data;
    hash->total += len;
    if (hash->tail_len > 0) {
        size_t take = LG_HASH_STRIPE - hash->tail_len;
        if (take > len)
            take = len;
        memcpy(hash->tail + hash->tail_len, p, take);
        hash->tail_len += take;
        p += take;
        len -= take;
        if (hash->tail_len < LG_HASH_STRIPE)
            return;
        hash_stripes(hash, hash->tail, 1);
        hash->tail_len = 0;
    }
    hash_stripes(hash, p, len / LG_HASH_STRIPE);
    p += len / LG_HASH_STRIPE * LG_HASH_STRIPE;
    len %= LG_HASH_STRIPE;
    memcpy(hash->tail, p, len);
    hash->tail_len = len;
}

uint64_t lg_hash_final(const struct lg_hash *hash)
{
    uint64_t h = hash->total * PRIME5;
    for (int k = 0; k < LG_HASH_LANES; k++)
        h = rotl64(h ^ (hash->lane[k] * PRIME2), 27) * PRIME1 + PRIME4;
    for (size_t i = 0; i < hash->tail_len; i++)
        h = rotl64(h ^ (hash->tail[i] * PRIME5), 11) * PRIME1;
    h ^= h >> 33;
    h *= PRIME2;
    h ^= h >> 29;
    h *= PRIME3;
    h ^= h >> 32;
    return h;
}

uint64_t lg_pattern_checksum(const struct lg_pattern *pattern, unsigned conn_index, uint64_t length)
{
    struct lg_stream stream;
    struct lg_hash hash;
    lg_stream_init(&stream, pattern, conn_index, length);
    lg_hash_init(&hash);
    size_t n;
    const unsigned char *piece;
    while ((piece = lg_stream_next(&stream, SIZE_MAX, &n)) != NULL)
        lg_hash_update(&hash, piece, n);
    return lg_hash_final(&hash);
}

void lg_verify_init(struct lg_verify *verify, const struct lg_pattern *pattern, unsigned conn_index,
                    uint64_t length, bool compare, bool hash)
{
    lg_stream_init(&verify->expect, pattern, conn_index, length);
    verify->seen = 0;
    verify->first_bad = 0;
    verify->bad = false;
    verify->do_compare = compare;
    verify->do_hash = hash;
    lg_hash_init(&verify->hash);
}

static size_t first_difference(const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

static void verify_compare(struct lg_verify *verify, const unsigned char *data, size_t len)
{
    uint64_t at = verify->seen;
    while (len > 0) {
        size_t n;
        const unsigned char *want = lg_stream_next(&verify->expect, len, &n);
        if (!want) { /* more bytes than expected */
            if (!verify->bad) {
                verify->bad = true;
                verify->first_bad = at;
            }
            return;
        }
        if (!verify->bad && memcmp(data, want, n) != 0) {
            verify->bad = true;
            verify->first_bad = at + first_difference(data, want, n);
        }
        data += n;
        len -= n;
        at += n;
    }
}

void lg_verify_feed(struct lg_verify *verify, const unsigned char *data, size_t len)
{
    if (verify->do_compare)
        verify_compare(verify, data, len);
    if (verify->do_hash)
        lg_hash_update(&verify->hash, data, len);
    verify->seen += len;
}

bool lg_verify_complete(const struct lg_verify *verify, uint64_t length)
{
    return verify->seen == length && !verify->bad;
}
