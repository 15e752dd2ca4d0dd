#ifndef GHD_BASE_HASH_H
#define GHD_BASE_HASH_H

/* Two hashes: FNV-1a (64 bits), cheap, for table and file keys that are
 * compared whole on a match; and SHA-256 (FIPS 180-4), for content
 * addresses: a definition sent by value is named by the hash of its
 * canonical text, so that two instances, or two starts of one, give the same
 * definition the same name. */
#include <stddef.h>
#include <stdint.h>

#define GHD_FNV_INIT 1469598103934665603ULL

/* FNV-1a over data[0..len), continuing from h (GHD_FNV_INIT to start). */
uint64_t ghd_fnv1a(uint64_t h, const void *data, size_t len);

#define GHD_SHA256_LEN 32
/* "sha256:" and 64 lower-case hex digits. */
#define GHD_SHA256_NAME_LEN (7 + 2 * GHD_SHA256_LEN)

struct ghd_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
};

void ghd_sha256_init(struct ghd_sha256 *s);
void ghd_sha256_update(struct ghd_sha256 *s, const void *data, size_t len);
void ghd_sha256_final(struct ghd_sha256 *s, unsigned char out[GHD_SHA256_LEN]);
/* The hash of data[0..len) as "sha256:<hex>" into name. */
void ghd_sha256_name(const void *data, size_t len, char name[GHD_SHA256_NAME_LEN + 1]);

#endif
