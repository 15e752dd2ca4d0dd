#include "json_u64.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *ghd_json_u64(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)v);
    char buf[GHD_JSON_U64_TAG_LEN + 24];
    memcpy(buf, GHD_JSON_U64_TAG, GHD_JSON_U64_TAG_LEN);
    int n = snprintf(buf + GHD_JSON_U64_TAG_LEN, 24, "%" PRIu64, v);
    return json_stringn(buf, GHD_JSON_U64_TAG_LEN + (size_t)n);
}

/* Whether digits [s, s + n) are an integer from 2^63 to 2^64 - 1 (no sign,
 * no leading zero). */
static int big_digits(const char *s, size_t n)
{
    if (n < 19 || n > 20 || s[0] == '0')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    if (n == 19)
        return memcmp(s, "9223372036854775808", 19) >= 0;
    return memcmp(s, "18446744073709551615", 20) <= 0;
}

int ghd_json_u64_big(const json_t *v, uint64_t *out)
{
    if (!json_is_string(v))
        return 0;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (len <= GHD_JSON_U64_TAG_LEN || memcmp(s, GHD_JSON_U64_TAG, GHD_JSON_U64_TAG_LEN) != 0 ||
        !big_digits(s + GHD_JSON_U64_TAG_LEN, len - GHD_JSON_U64_TAG_LEN))
        return 0;
    *out = strtoull(s + GHD_JSON_U64_TAG_LEN, NULL, 10);
    return 1;
}

#define DUMPED_OPEN "\"\\u0000u64:"

size_t ghd_json_u64_dumped(const char *s, const char **digits, size_t *ndigits)
{
    size_t open = sizeof(DUMPED_OPEN) - 1;
    if (strncmp(s, DUMPED_OPEN, open) != 0)
        return 0;
    size_t n = strspn(s + open, "0123456789");
    if (s[open + n] != '"' || !big_digits(s + open, n))
        return 0;
    *digits = s + open;
    *ndigits = n;
    return open + n + 1;
}

/* buf with each big integer token replaced by its tagged string; NULL when
 * there is none, when buf holds a "\u0000" of its own, or out of memory. */
static char *retag(const char *buf, size_t len, size_t *out_len)
{
    char *out = malloc(len * 2 + 16); /* a 19-digit token grows by 11 bytes */
    size_t o = 0;
    int in_string = 0, found = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        char c = buf[i];
        if (in_string) {
            if (c == '\\' && i + 1 < len) {
                if (len - i >= 6 && memcmp(buf + i, "\\u0000", 6) == 0)
                    goto none;
                out[o++] = buf[i++];
            } else if (c == '"') {
                in_string = 0;
            }
            out[o++] = buf[i++];
        } else if (c == '"') {
            in_string = 1;
            out[o++] = buf[i++];
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t n = 0;
            while (i + n < len && strchr("-+0123456789.eE", buf[i + n]) && buf[i + n])
                n++;
            if (big_digits(buf + i, n)) {
                memcpy(out + o, DUMPED_OPEN, sizeof(DUMPED_OPEN) - 1);
                o += sizeof(DUMPED_OPEN) - 1;
                memcpy(out + o, buf + i, n);
                o += n;
                out[o++] = '"';
                found = 1;
            } else {
                memcpy(out + o, buf + i, n);
                o += n;
            }
            i += n;
        } else {
            out[o++] = buf[i++];
        }
    }
    if (found) {
        *out_len = o;
        return out;
    }
none:
    free(out);
    return NULL;
}

json_t *ghd_json_loadb_u64(const char *buf, size_t len, size_t flags, json_error_t *err)
{
    json_t *doc = json_loadb(buf, len, flags, err);
    if (doc || json_error_code(err) != json_error_numeric_overflow)
        return doc;
    size_t tlen;
    char *tagged = retag(buf, len, &tlen);
    if (!tagged)
        return NULL;
    json_error_t terr;
    doc = json_loadb(tagged, tlen, flags | JSON_ALLOW_NUL, &terr);
    free(tagged);
    return doc; /* when NULL, *err still says why the body itself failed */
}
