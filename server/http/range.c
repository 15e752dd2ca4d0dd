#include "range.h"

#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/parse.h"

/* Reads decimal digits only (no sign, no space) into *out; returns the end. */
static const char *read_u64(const char *s, uint64_t *out, int *ok)
{
    const char *end = ghd_parse_u64_prefix(s, out);
    *ok = end != NULL;
    return end ? end : s;
}

/* As read_u64, but a number past 2^64 - 1 reads as UINT64_MAX: in a Range
 * it lies past any resource's end, which is what it means (RFC 9110 asks
 * recipients to expect large numerals), not a malformed header. */
static const char *read_u64_saturated(const char *s, uint64_t *out, int *ok)
{
    const char *end = read_u64(s, out, ok);
    if (*ok || *s < '0' || *s > '9')
        return end;
    while (*end >= '0' && *end <= '9')
        end++;
    *out = UINT64_MAX;
    *ok = 1;
    return end;
}

int ghd_range_parse(const char *h, uint64_t size, uint64_t *first, uint64_t *last)
{
    if (!h || strncasecmp(h, "bytes=", 6) != 0)
        return GHD_EINVAL;
    const char *s = h + 6;
    if (strchr(s, ','))
        return GHD_EINVAL;
    uint64_t a = 0, b = 0;
    int ok_a, ok_b;
    if (*s == '-') { /* suffix: the last n bytes */
        const char *end = read_u64_saturated(s + 1, &b, &ok_b);
        if (!ok_b || *end)
            return GHD_EINVAL;
        if (b == 0 || size == 0)
            return GHD_ERANGE;
        *first = b >= size ? 0 : size - b;
        *last = size - 1;
        return 0;
    }
    s = read_u64_saturated(s, &a, &ok_a);
    if (!ok_a || *s != '-')
        return GHD_EINVAL;
    s++;
    if (*s == '\0') {
        b = UINT64_MAX;
    } else {
        s = read_u64_saturated(s, &b, &ok_b);
        if (!ok_b || *s || b < a)
            return GHD_EINVAL;
    }
    if (a >= size)
        return GHD_ERANGE;
    *first = a;
    *last = b >= size ? size - 1 : b;
    return 0;
}

int ghd_content_range_parse(const char *h, uint64_t *first, uint64_t *last, uint64_t *total,
                            int *total_known)
{
    *total_known = 0;
    *total = 0;
    if (!h || strncasecmp(h, "bytes ", 6) != 0)
        return GHD_EINVAL;
    const char *s = h + 6;
    int ok;
    s = read_u64(s, first, &ok);
    if (!ok || *s != '-')
        return GHD_EINVAL;
    s = read_u64(s + 1, last, &ok);
    if (!ok || *s != '/' || *last < *first)
        return GHD_EINVAL;
    s++;
    if (strcmp(s, "*") == 0)
        return 0;
    s = read_u64(s, total, &ok);
    if (!ok || *s)
        return GHD_EINVAL;
    *total_known = 1;
    return *last < *total ? 0 : GHD_ERANGE;
}
