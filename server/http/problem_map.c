#include "problem_map.h"

#include <stddef.h>

#include "base/error.h"

struct problem_entry {
    int status;
    const char *slug;
};

/* Indexed by -code. A code of base/error.h without a row here, or a row
 * naming a code twice, fails to compile (the counts and -Woverride-init). */
static const struct problem_entry problems[] = {
#define GHD_PROBLEM_ROW(name, status, slug) [-GHD_##name] = {status, slug},
    GHD_FOR_EACH_PROBLEM(GHD_PROBLEM_ROW)
#undef GHD_PROBLEM_ROW
};

#define GHD_COUNT_ERROR(name, num, title) +1
#define GHD_COUNT_PROBLEM(name, status, slug) +1
_Static_assert(0 GHD_FOR_EACH_ERROR(GHD_COUNT_ERROR) == 0 GHD_FOR_EACH_PROBLEM(GHD_COUNT_PROBLEM),
               "every GHD_E* code needs exactly one row in GHD_FOR_EACH_PROBLEM");
#undef GHD_COUNT_ERROR
#undef GHD_COUNT_PROBLEM

static const struct problem_entry *problem_find(int code)
{
    if (code < 0 && -code < (int)(sizeof(problems) / sizeof(problems[0])) &&
        problems[-code].slug)
        return &problems[-code];
    return NULL;
}

int ghd_error_status(int code)
{
    const struct problem_entry *e = problem_find(code);
    return e ? e->status : 500;
}

const char *ghd_error_slug(int code)
{
    const struct problem_entry *e = problem_find(code);
    return e ? e->slug : "internal";
}
