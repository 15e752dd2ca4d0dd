#include "error.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const titles[] = {
#define GHD_ERROR_TITLE(name, num, title) [num] = title,
    GHD_FOR_EACH_ERROR(GHD_ERROR_TITLE)
#undef GHD_ERROR_TITLE
};

const char *ghd_strerror(int code)
{
    if (code < 0 && -code < (int)(sizeof(titles) / sizeof(titles[0])) && titles[-code])
        return titles[-code];
    return "Unknown error";
}

void ghd_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "gpuhttpd: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
