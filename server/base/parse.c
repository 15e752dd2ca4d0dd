#include "parse.h"

#include <stddef.h>

const char *ghd_parse_u64_prefix(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return NULL;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return NULL;
        v = v * 10 + d;
    }
    *out = v;
    return s;
}

int ghd_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v;
    const char *end = ghd_parse_u64_prefix(s, &v);
    if (!end || *end)
        return -1;
    *out = v;
    return 0;
}
