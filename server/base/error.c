#include "error.h"

#include <stdio.h>
#include <stdlib.h>

struct error_entry {
    int code;
    int status;
    const char *slug;
    const char *title;
};

static const struct error_entry errors[] = {
#define GHD_ERROR_ROW(name, num, status, slug, title) {-(num), status, slug, title},
    GHD_FOR_EACH_ERROR(GHD_ERROR_ROW)
#undef GHD_ERROR_ROW
};

static const struct error_entry *error_find(int code)
{
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

const char *ghd_strerror(int code)
{
    const struct error_entry *e = error_find(code);
    return e ? e->title : "Unknown error";
}

int ghd_error_status(int code)
{
    const struct error_entry *e = error_find(code);
    return e ? e->status : 500;
}

const char *ghd_error_slug(int code)
{
    const struct error_entry *e = error_find(code);
    return e ? e->slug : "internal";
}

void ghd_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "gpuhttpd: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
