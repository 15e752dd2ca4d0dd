#ifndef GHD_BASE_JSON_U64_H
#define GHD_BASE_JSON_U64_H

/* Integers past INT64_MAX in JSON, exactly. Jansson keeps integers in
 * json_int_t (64-bit signed): it refuses 2^63 and above when parsing ("too
 * big integer") and cannot hold them to write. Here such an integer up to
 * 2^64 - 1 lives in a json_t as a tagged string: a NUL, "u64:", then its
 * decimal digits. No client string can look so: request bodies are parsed
 * without JSON_ALLOW_NUL, so a string never holds a NUL, except this tag.
 * ghd_json_dumps (json_text.h) writes a tagged string as the bare integer. */
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The tag's bytes, and how many there are (its NUL included). */
#define GHD_JSON_U64_TAG "\0u64:"
#define GHD_JSON_U64_TAG_LEN 5

/* A new reference: a JSON integer for v <= INT64_MAX, the tagged string
 * above. NULL when out of memory. */
json_t *ghd_json_u64(uint64_t v);

/* Whether v is a tagged integer (2^63 .. 2^64 - 1); its value in *out. */
int ghd_json_u64_big(const json_t *v, uint64_t *out);

/* json_loadb, except that integer tokens from 2^63 to 2^64 - 1 become tagged
 * strings. A body with none parses as json_loadb does; one that holds a
 * "\u0000" escape of its own is refused as json_loadb refuses it (the tag
 * could not be told apart). flags as json_loadb's (JSON_ALLOW_NUL not). */
json_t *ghd_json_loadb_u64(const char *buf, size_t len, size_t flags, json_error_t *err);

/* The length of the tagged string that Jansson wrote at s ("\"\\u0000u64:"
 * digits "\""), or 0 when s starts something else. *digits and *ndigits
 * say where the integer's digits are. */
size_t ghd_json_u64_dumped(const char *s, const char **digits, size_t *ndigits);

#endif
