#ifndef GHD_BASE_PARSE_H
#define GHD_BASE_PARSE_H

#include <stdint.h>

/* Unsigned decimals as the service reads them everywhere (headers, query
 * parameters, options, .npy headers): one or more ASCII digits, no sign, no
 * space, no base prefix, and a value that fits 64 bits. strtoull accepts a
 * sign, leading space and "0x", and saturates on overflow; these do not. */

/* Reads the digits at s into *out. Returns a pointer just past them, or NULL
 * (and *out untouched) when s does not start with a digit or the value does
 * not fit 64 bits. pre: s != NULL. */
const char *ghd_parse_u64_prefix(const char *s, uint64_t *out);

/* The whole of s is one unsigned decimal that fits 64 bits: 0 and *out set,
 * or -1 and *out untouched. pre: s != NULL. */
int ghd_parse_u64(const char *s, uint64_t *out);

#endif
