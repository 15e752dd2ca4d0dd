#include "cursor.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/error.h"

static uint64_t key[2];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void key_init(void)
{
    /* Without the CSPRNG the key stays 0: cursors are then only opaque in
     * form; getrandom does not fail for 16 bytes once the pool is ready. */
    if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
        memset(key, 0, sizeof(key));
}

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                                  \
    do {                                                                                          \
        v0 += v1;                                                                                 \
        v1 = rotl(v1, 13) ^ v0;                                                                   \
        v0 = rotl(v0, 32);                                                                        \
        v2 += v3;                                                                                 \
        v3 = rotl(v3, 16) ^ v2;                                                                   \
        v0 += v3;                                                                                 \
        v3 = rotl(v3, 21) ^ v0;                                                                   \
        v2 += v1;                                                                                 \
        v1 = rotl(v1, 17) ^ v2;                                                                   \
        v2 = rotl(v2, 32);                                                                        \
    } while (0)

/* SipHash-2-4 of the 64-bit words m[0..n-1] (the message is always whole
 * words here, its length folded into the last block as SipHash does). */
static uint64_t siphash(const uint64_t *m, size_t n)
{
    uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL, v1 = key[1] ^ 0x646f72616e646f6dULL;
    uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL, v3 = key[1] ^ 0x7465646279746573ULL;
    for (size_t i = 0; i < n; i++) {
        v3 ^= m[i];
        SIPROUND;
        SIPROUND;
        v0 ^= m[i];
    }
    uint64_t last = (uint64_t)(n * 8) << 56;
    v3 ^= last;
    SIPROUND;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* The tenant's name as one word, so that the round function takes it. */
static uint64_t tenant_word(const char *tenant)
{
    uint64_t words[9] = {0};
    size_t n = tenant ? strnlen(tenant, 64) : 0;
    memcpy(words, tenant ? tenant : "", n);
    words[8] = n;
    return siphash(words, 9);
}

static uint32_t round_fn(uint64_t tw, unsigned r, uint32_t half)
{
    uint64_t m[2] = {tw, ((uint64_t)r << 32) | half};
    return (uint32_t)siphash(m, 2);
}

static uint64_t feistel(uint64_t tw, uint64_t x, int inverse)
{
    uint32_t l = (uint32_t)(x >> 32), r = (uint32_t)x;
    for (unsigned i = 0; i < 4; i++) {
        unsigned round = inverse ? 3 - i : i;
        if (!inverse) {
            uint32_t t = r;
            r = l ^ round_fn(tw, round, r);
            l = t;
        } else {
            uint32_t t = l;
            l = r ^ round_fn(tw, round, l);
            r = t;
        }
    }
    return ((uint64_t)l << 32) | r;
}

void ghd_cursor_encode(const char *tenant, uint64_t seq, char out[GHD_CURSOR_LEN + 1])
{
    pthread_once(&key_once, key_init);
    snprintf(out, GHD_CURSOR_LEN + 1, "%016llx",
             (unsigned long long)feistel(tenant_word(tenant), seq, 0));
}

int ghd_cursor_decode(const char *tenant, const char *text, uint64_t *seq)
{
    pthread_once(&key_once, key_init);
    if (!text || strlen(text) != GHD_CURSOR_LEN)
        return GHD_EINVAL;
    uint64_t v = 0;
    for (const char *p = text; *p; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            return GHD_EINVAL;
        v = v << 4 | (uint64_t)d;
    }
    *seq = feistel(tenant_word(tenant), v, 1);
    return 0;
}
