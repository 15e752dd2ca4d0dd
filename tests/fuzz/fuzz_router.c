/* libFuzzer: path matching (ghd_router_match). The first byte picks the
 * method, the rest is the path. A match must rebuild the path exactly from
 * its pattern and captured parameters. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "handlers/handlers.h"
#include "http/router.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
                                          "OPTIONS", "get", ""};
    if (size < 1)
        return 0;
    const char *method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
    char *path = malloc(size);
    memcpy(path, data + 1, size - 1);
    path[size - 1] = '\0';
    struct ghd_request req;
    memset(&req, 0, sizeof(req));
    const struct ghd_route *route = NULL;
    char allow[128];
    int rc = ghd_router_match(&ghd_routes, method, path, &req, &route, allow, sizeof(allow));
    CHECK(rc == 0 || rc == GHD_ENOENT || rc == GHD_EMETHOD);
    if (rc == GHD_EMETHOD) /* the path's route, whose access then applies */
        CHECK(allow[0] != '\0' && route && strstr(allow, route->method));
    if (rc == GHD_ENOENT)
        CHECK(route == NULL);
    if (rc == 0) {
        CHECK(route && req.route == route->pattern);
        CHECK(req.param_count <= GHD_MAX_PATH_PARAMS);
        /* Rebuild the path from the pattern and the parameters. */
        char rebuilt[4096] = "";
        size_t used = 0;
        unsigned k = 0;
        for (const char *p = route->pattern; *p;) {
            if (*p == '{') {
                const char *end = strchr(p, '}');
                CHECK(end && k < req.param_count);
                CHECK(req.params[k][0] != '\0' && !strchr(req.params[k], '/'));
                used += (size_t)snprintf(rebuilt + used, sizeof(rebuilt) - used, "%s",
                                         req.params[k++]);
                p = end + 1;
            } else {
                if (used + 1 < sizeof(rebuilt))
                    rebuilt[used++] = *p;
                rebuilt[used] = '\0';
                p++;
            }
        }
        CHECK(k == req.param_count);
        CHECK(strcmp(rebuilt, path) == 0);
    }
    free(path);
    return 0;
}
