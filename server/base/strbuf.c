#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ghd_strbuf_put(struct ghd_strbuf *sb, const char *fmt, ...)
{
    if (sb->failed)
        return;
    for (;;) {
        size_t room = sb->cap - sb->len;
        va_list ap;
        va_start(ap, fmt);
        int n = sb->buf ? vsnprintf(sb->buf + sb->len, room, fmt, ap) : 0;
        va_end(ap);
        if (n < 0) {
            sb->failed = 1;
            return;
        }
        if (sb->buf && (size_t)n < room) {
            sb->len += (size_t)n;
            return;
        }
        /* Too small (or nothing yet): grow to hold it, doubling so that a
         * text of many pieces is copied a few times only. */
        size_t cap = sb->cap ? sb->cap * 2 : 4096;
        while (cap - sb->len <= (size_t)n)
            cap *= 2;
        char *grown = realloc(sb->buf, cap);
        if (!grown) {
            sb->failed = 1;
            return;
        }
        sb->buf = grown;
        sb->cap = cap;
    }
}
