/* libFuzzer: Range and Content-Range parsing (server/http/range.c). The first 8
 * bytes pick the resource size, the rest is the header. Checks the results'
 * invariants and that a parsed range, printed back, parses the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "http/range.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t resource;
    memcpy(&resource, data, 8);
    /* Mostly small sizes, where the edge cases are; sometimes huge ones. */
    if (!(resource & 1))
        resource = (resource >> 1) % 100000;
    char *h = malloc(size - 8 + 1);
    memcpy(h, data + 8, size - 8);
    h[size - 8] = '\0';

    uint64_t first = 7, last = 7;
    int rc = ghd_range_parse(h, resource, &first, &last);
    CHECK(rc == 0 || rc == GHD_EINVAL || rc == GHD_ERANGE);
    if (rc == 0) {
        CHECK(first <= last);
        CHECK(last < resource);
        char again[64];
        uint64_t f2, l2;
        snprintf(again, sizeof(again), "bytes=%llu-%llu", (unsigned long long)first,
                 (unsigned long long)last);
        CHECK(ghd_range_parse(again, resource, &f2, &l2) == 0);
        CHECK(f2 == first && l2 == last);
    }

    uint64_t total = 7;
    int known;
    rc = ghd_content_range_parse(h, &first, &last, &total, &known);
    CHECK(rc == 0 || rc == GHD_EINVAL || rc == GHD_ERANGE);
    if (rc == 0) {
        CHECK(first <= last);
        CHECK(!known || last < total);
        char again[96];
        uint64_t f2, l2, t2;
        int k2;
        if (!known)
            snprintf(again, sizeof(again), "bytes %llu-%llu/*", (unsigned long long)first,
                     (unsigned long long)last);
        else
            snprintf(again, sizeof(again), "bytes %llu-%llu/%llu", (unsigned long long)first,
                     (unsigned long long)last, (unsigned long long)total);
        CHECK(ghd_content_range_parse(again, &f2, &l2, &t2, &k2) == 0);
        CHECK(f2 == first && l2 == last && t2 == total && k2 == known);
    }
    free(h);
    return 0;
}
