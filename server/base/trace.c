/* W3C Trace Context: parsing what a caller sends, making ids, writing what
 * we answer. The specification's rule for anything invalid is to start a
 * new trace, so nothing here refuses a request. */
#include "trace.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* uppercase is not valid in traceparent */
}

/* `n` bytes from 2n lowercase hex digits; -1 on any other character. */
static int unhex(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

int ghd_traceparent_parse(const char *s, uint8_t trace_id[16], uint8_t parent_id[8],
                          uint8_t *flags)
{
    uint8_t version;
    size_t len = s ? strlen(s) : 0;
    if (len < GHD_TRACEPARENT_LEN || unhex(s, &version, 1) || version == 0xff)
        return -1;
    /* Version 00 is exactly 55 characters; a later one may add fields
     * after a '-', which this reader skips. */
    if (version == 0 ? len != GHD_TRACEPARENT_LEN
                     : len > GHD_TRACEPARENT_LEN && s[GHD_TRACEPARENT_LEN] != '-')
        return -1;
    if (s[2] != '-' || s[35] != '-' || s[52] != '-')
        return -1;
    if (unhex(s + 3, trace_id, 16) || unhex(s + 36, parent_id, 8) || unhex(s + 53, flags, 1))
        return -1;
    return all_zero(trace_id, 16) || all_zero(parent_id, 8) ? -1 : 0;
}

static int is_lcalpha(char c)
{
    return c >= 'a' && c <= 'z';
}

static int is_key_char(char c)
{
    return is_lcalpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
           c == '/';
}

/* A key: simple-key (lcalpha, then up to 255 key characters), or
 * multi-tenant "tenant@system" (tenant: lcalpha or digit then up to 240,
 * system: lcalpha then up to 13). */
static int key_valid(const char *k, size_t n)
{
    const char *at = memchr(k, '@', n);
    if (!at)
        return n >= 1 && n <= 256 && is_lcalpha(k[0]) &&
               strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_-*/") >= n;
    size_t tn = (size_t)(at - k), sn = n - tn - 1;
    if (tn < 1 || tn > 241 || sn < 1 || sn > 14 || !is_lcalpha(at[1]))
        return 0;
    if (!is_lcalpha(k[0]) && !(k[0] >= '0' && k[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (i != tn && !is_key_char(k[i]))
            return 0;
    return 1;
}

/* A value: up to 256 printable characters but ',' and '=', not ending in a
 * space. */
static int value_valid(const char *v, size_t n)
{
    if (n < 1 || n > 256 || v[n - 1] == ' ')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] < 0x20 || v[i] > 0x7e || v[i] == ',' || v[i] == '=')
            return 0;
    return 1;
}

struct member {
    const char *key;
    size_t len;
};

int ghd_tracestate_check(const char *s)
{
    struct member seen[32];
    unsigned count = 0;
    if (strlen(s) > GHD_TRACESTATE_MAX)
        return -1;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        while (n && (*s == ' ' || *s == '\t')) /* optional white space around members */
            s++, n--;
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        if (n) { /* an empty member is allowed and ignored */
            const char *eq = memchr(s, '=', n);
            if (!eq || count == 32 || !key_valid(s, (size_t)(eq - s)) ||
                !value_valid(eq + 1, n - (size_t)(eq - s) - 1))
                return -1;
            for (unsigned i = 0; i < count; i++)
                if (seen[i].len == (size_t)(eq - s) && memcmp(seen[i].key, s, seen[i].len) == 0)
                    return -1;
            seen[count++] = (struct member){s, (size_t)(eq - s)};
        }
        if (!end)
            break;
        s = end + 1;
    }
    return 0;
}

void ghd_trace_ctx_start(struct ghd_trace_ctx *c, const char *traceparent,
                         const char *tracestate)
{
    uint8_t flags = 0;
    c->remote = traceparent && ghd_traceparent_parse(traceparent, c->trace_id, c->parent_id,
                                                     &flags) == 0;
    c->parent_sampled = c->remote && (flags & 1);
    c->sampled = 0;
    c->tracestate[0] = '\0';
    if (!c->remote) {
        ghd_trace_random(c->trace_id, sizeof(c->trace_id));
        memset(c->parent_id, 0, sizeof(c->parent_id));
    } else if (tracestate && ghd_tracestate_check(tracestate) == 0) {
        snprintf(c->tracestate, sizeof(c->tracestate), "%s", tracestate);
    }
    ghd_trace_random(c->span_id, sizeof(c->span_id));
}

int ghd_trace_ratio_keeps(const uint8_t trace_id[16], double ratio)
{
    if (ratio >= 1.0)
        return 1;
    if (ratio <= 0.0)
        return 0;
    uint64_t low = 0;
    for (int i = 8; i < 16; i++)
        low = low << 8 | trace_id[i];
    return (double)low < ratio * 18446744073709551616.0;
}

/* splitmix64, seeded once per thread from getrandom(). */
static uint64_t next_random(void)
{
    static __thread uint64_t state;
    static __thread int seeded;
    if (!seeded) {
        if (getrandom(&state, sizeof(state), 0) != (ssize_t)sizeof(state))
            state ^= (uint64_t)(uintptr_t)&state; /* still distinct per thread */
        seeded = 1;
    }
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void ghd_trace_random(uint8_t *out, size_t n)
{
    do {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t r = next_random();
            memcpy(out + i, &r, n - i < 8 ? n - i : 8);
        }
    } while (all_zero(out, n));
}

void ghd_trace_hex(const uint8_t *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void ghd_traceparent_format(const struct ghd_trace_ctx *c, char out[GHD_TRACEPARENT_LEN + 1])
{
    char trace[33], span[17];
    ghd_trace_hex(c->trace_id, 16, trace);
    ghd_trace_hex(c->span_id, 8, span);
    snprintf(out, GHD_TRACEPARENT_LEN + 1, "00-%s-%s-%s", trace, span, c->sampled ? "01" : "00");
}
