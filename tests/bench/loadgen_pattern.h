/* Deterministic payloads for the transfer benchmark, and the check of what came back.
 *
 * Every connection sends the bytes of one shared pseudo-random block, starting at an
 * offset of its own and wrapping around. The block length is deliberately not a power of
 * two, so a piece the server places at a wrong power-of-two offset (a staging chunk, a
 * pool page) does not land on identical bytes and is caught. Distinct start offsets
 * make the connections' streams differ, so buffers swapped between connections are
 * caught as well.
 *
 * A verifier follows the same stream: it compares what arrived with what was sent,
 * byte for byte (memcmp, which also names the first wrong offset), and can in addition
 * fold the bytes into a 64-bit checksum that is order sensitive.
 */
#ifndef GHD_TESTS_BENCH_LOADGEN_PATTERN_H
#define GHD_TESTS_BENCH_LOADGEN_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The default block: 1 MiB plus an odd number of bytes. It stays in the cache as
 * tcp_ceiling's 1 MiB send buffer does, so the client costs what the ceiling's does; a
 * 64 MiB block made every send read cold memory and held one-connection uploads to about
 * 0.7 of the ceiling (tests/bench/RESULTS.md, run 12). */
#define LG_PATTERN_DEFAULT_LEN ((size_t)1024 * 1024 + 4099)

struct lg_pattern {
    unsigned char *block;
    size_t len;
};

/* Fills a new block of len bytes from xorshift64* seeded with seed.
 * pre: len > 0. Returns 0, or -1 when out of memory. */
int lg_pattern_init(struct lg_pattern *pattern, size_t len, uint64_t seed);
void lg_pattern_destroy(struct lg_pattern *pattern);

/* The offset in the block at which connection conn_index starts its stream. */
size_t lg_pattern_start(const struct lg_pattern *pattern, unsigned conn_index);

/* A read position in one connection's stream. The pattern is borrowed. */
struct lg_stream {
    const struct lg_pattern *pattern;
    size_t pos;         /* offset in the block */
    uint64_t remaining; /* bytes left in the stream */
};

void lg_stream_init(struct lg_stream *stream, const struct lg_pattern *pattern, unsigned conn_index,
                    uint64_t length);

/* The next contiguous piece of the stream, at most max bytes; advances the stream.
 * Returns NULL with *len = 0 at the end. */
const unsigned char *lg_stream_next(struct lg_stream *stream, size_t max, size_t *len);

/* Streaming 64-bit checksum over 64-byte stripes: eight independent lanes of one
 * multiply and one rotate per word, then an xxh64-style finish. The result does not
 * depend on how the bytes are split between calls. */
#define LG_HASH_LANES 8
#define LG_HASH_STRIPE (8 * LG_HASH_LANES)
struct lg_hash {
    uint64_t lane[LG_HASH_LANES];
    uint64_t total;
    unsigned char tail[LG_HASH_STRIPE];
    size_t tail_len;
};

void lg_hash_init(struct lg_hash *hash);
void lg_hash_update(struct lg_hash *hash, const void *data, size_t len);
uint64_t lg_hash_final(const struct lg_hash *hash);

/* The checksum of the whole stream of connection conn_index (length bytes). */
uint64_t lg_pattern_checksum(const struct lg_pattern *pattern, unsigned conn_index,
                             uint64_t length);

/* Checks arriving bytes against the expected stream. */
struct lg_verify {
    struct lg_stream expect;
    uint64_t seen;      /* bytes fed so far */
    uint64_t first_bad; /* offset of the first wrong byte, when bad */
    bool bad;
    bool do_compare;
    bool do_hash;
    struct lg_hash hash;
};

void lg_verify_init(struct lg_verify *verify, const struct lg_pattern *pattern, unsigned conn_index,
                    uint64_t length, bool compare, bool hash);
void lg_verify_feed(struct lg_verify *verify, const unsigned char *data, size_t len);

/* True when exactly the expected number of bytes arrived and (when compared) all of
 * them matched. The checksum, when hashed, is compared by the caller. */
bool lg_verify_complete(const struct lg_verify *verify, uint64_t length);

#endif
