#ifndef GHD_BASE_STRBUF_H
#define GHD_BASE_STRBUF_H

#include <stddef.h>

/* A growing NUL-terminated string written printf-style, for text built in
 * many small pieces (the metrics' exposition, generated CUDA programs). A
 * failed allocation marks it `failed` and turns every later write into a
 * no-op, so a writer checks once at the end. Zero-initialised it is empty;
 * `buf` (NULL until the first write) is the owner's to free. */
struct ghd_strbuf {
    char *buf;
    size_t len, cap;
    int failed;
};

/* Appends the formatted text. */
void ghd_strbuf_put(struct ghd_strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
