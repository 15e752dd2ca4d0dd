#include "json_text.h"

#include "json_u64.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v written as whole thousandths, the commonest real of a reply (durations
 * rounded to the microsecond: ghd_round_ms), without printf: "1.5", "60.0".
 * Returns its length, or 0 where v is no such value or the text would not
 * read back as v. Where it answers, the text is what "%.15g" writes (at most
 * 15 significant digits, no exponent from 0.001 to 1e12) with ".0" added to
 * a whole number. */
static size_t thousandths(double v, char *out)
{
    double k = v * 1000.0;
    if (!(fabs(k) < 1e15) || k != floor(k) || (k == 0 && signbit(v)))
        return 0;
    unsigned long long a = (unsigned long long)fabs(k);
    char digits[24];
    size_t n = 0, o = 0;
    do {
        digits[n++] = (char)('0' + a % 10);
        a /= 10;
    } while (a || n < 4); /* at least one digit before the point */
    if (k < 0)
        out[o++] = '-';
    while (n > 3)
        out[o++] = digits[--n];
    out[o++] = '.';
    size_t keep = 3;
    while (keep > 1 && digits[3 - keep] == '0') /* trailing zeros go, one digit stays */
        keep--;
    for (size_t i = 0; i < keep; i++)
        out[o++] = digits[2 - i];
    out[o] = '\0';
    return strtod(out, NULL) == v ? o : 0;
}

/* Writes the number token [s, s + len) of Jansson's output shortened into
 * out (room for 32 bytes); integers and anything unexpected are copied. */
static size_t shorten(const char *s, size_t len, char *out)
{
    char tok[40];
    int real = 0;
    for (size_t i = 0; i < len; i++)
        real |= s[i] == '.' || s[i] == 'e' || s[i] == 'E';
    if (!real || len >= sizeof(tok)) {
        memcpy(out, s, len);
        return len;
    }
    memcpy(tok, s, len);
    tok[len] = '\0';
    double v = strtod(tok, NULL);
    size_t fast = thousandths(v, out);
    if (fast)
        return fast;
    for (int digits = 15; digits <= 17; digits++) {
        int n = snprintf(out, 32, "%.*g", digits, v);
        if (n > 0 && n < 32 && strtod(out, NULL) == v) {
            /* JSON needs a '.' or an exponent for the value to stay a real. */
            if (!strpbrk(out, ".eE") && n + 2 < 32) {
                memcpy(out + n, ".0", 3);
                n += 2;
            }
            return (size_t)n;
        }
    }
    memcpy(out, s, len);
    return len;
}

char *ghd_json_dumps(const json_t *obj, size_t flags)
{
    char *text = json_dumps(obj, flags);
    if (!text)
        return NULL;
    /* The shortened text is never longer than Jansson's. */
    char *out = malloc(strlen(text) + 1);
    if (!out) {
        free(text);
        return NULL;
    }
    size_t o = 0;
    int in_string = 0;
    for (const char *p = text; *p;) {
        if (in_string) {
            if (*p == '\\' && p[1]) {
                out[o++] = *p++;
            } else if (*p == '"') {
                in_string = 0;
            }
            out[o++] = *p++;
        } else if (*p == '"') {
            const char *digits;
            size_t nd, tagged = ghd_json_u64_dumped(p, &digits, &nd);
            if (tagged) { /* a u64 past INT64_MAX: the bare integer (shorter) */
                memcpy(out + o, digits, nd);
                o += nd;
                p += tagged;
                continue;
            }
            in_string = 1;
            out[o++] = *p++;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            size_t len = strspn(p, "-+0123456789.eE");
            char buf[40];
            size_t n = shorten(p, len, buf);
            if (n > len) { /* cannot happen for Jansson's 17 digits; keep its text */
                memcpy(buf, p, len);
                n = len;
            }
            memcpy(out + o, buf, n);
            o += n;
            p += len;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    free(text);
    return out;
}

double ghd_round_ms(double ms)
{
    return round(ms * 1000.0) / 1000.0;
}

size_t ghd_utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] > 0x8f))
        return 0;
    return n;
}

const char *ghd_json_unknown_key(json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(key, *a) == 0;
        if (!ok)
            return key;
    }
    return NULL;
}
