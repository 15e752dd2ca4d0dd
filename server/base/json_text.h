#ifndef GHD_BASE_JSON_TEXT_H
#define GHD_BASE_JSON_TEXT_H

#include <jansson.h>

/* json_dumps, but a tagged u64 (json_u64.h) is written as its integer, and
 * every real is written with the fewest significant digits
 * (15 to 17) that read back as the same double, as Python's repr does:
 * Jansson alone writes 2.195 as 2.1949999999999998. Nothing is lost, since
 * the shorter text parses to the same value. Returns a string to free(), or
 * NULL when out of memory (or when Jansson cannot dump `obj`). */
char *ghd_json_dumps(const json_t *obj, size_t flags);

/* Length of the valid UTF-8 sequence at `s`, or 0 (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF). pre: s[0] != 0. */
size_t ghd_utf8_len(const unsigned char *s);

/* A duration in milliseconds rounded to the microsecond, for replies and
 * logs: a timer's last digits are noise. */
double ghd_round_ms(double ms);

/* The first key of object `obj` not in the NULL-terminated `allowed`, or
 * NULL when every key is one of them. */
const char *ghd_json_unknown_key(json_t *obj, const char *const *allowed);

#endif
