#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

int ghd_err_set(struct ghd_err *e, int code, const char *fmt, ...)
{
    if (!e)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
    va_end(ap);
    return code;
}

void ghd_err_prefix(struct ghd_err *e, int code, const char *fmt, ...)
{
    if (!e)
        return;
    char prefix[GHD_ERR_DETAIL];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    char was[GHD_ERR_DETAIL];
    snprintf(was, sizeof(was), "%s", e->detail[0] ? e->detail : ghd_strerror(code));
    /* "<prefix>: <was>", cut to the detail's bound. */
    size_t cap = sizeof(e->detail) - 1;
    size_t n = strlen(prefix);
    if (n > cap)
        n = cap;
    memcpy(e->detail, prefix, n);
    for (const char *s = ": "; *s && n < cap; s++)
        e->detail[n++] = *s;
    size_t w = strlen(was);
    if (w > cap - n)
        w = cap - n;
    memcpy(e->detail + n, was, w);
    e->detail[n + w] = '\0';
}

const char *ghd_err_text(const struct ghd_err *e, int code)
{
    return e && e->detail[0] ? e->detail : ghd_strerror(code);
}
