/* libFuzzer: the .npy header parser (server/core/buffers/npy.c) fed as the upload path
 * feeds it: the preamble grown piece by piece until the header is whole,
 * then parsed. Checks the results' invariants, and that an accepted header,
 * formatted again by ghd_npy_format, parses back to the same description. */
#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "core/buffers/npy.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ghd_err err = {0};
    size_t have = 0, need = 8;
    int rc = 0;
    while (rc == 0 && have < need && have < size) {
        size_t before = need;
        have = need < size ? need : size;
        rc = ghd_npy_header_need(data, have, &need, &err);
        CHECK(rc == 0 || rc == GHD_EINVAL || rc == GHD_EUNPROC || rc == GHD_ETOOBIG);
        if (rc == 0) {
            CHECK(need >= before); /* the header only grows as it is read */
            CHECK(need <= 12 + GHD_NPY_HEADER_MAX);
        }
    }
    if (rc != 0 || have < need)
        return 0;
    struct ghd_array_desc d;
    rc = ghd_npy_parse(data, need, &d, &err);
    CHECK(rc == 0 || rc == GHD_EINVAL || rc == GHD_EUNPROC);
    CHECK(memchr(err.detail, '\0', sizeof(err.detail)) != NULL);
    if (rc != 0)
        return 0;
    /* No control character but white space between the tokens: a header
     * accepted with one in a string (a NUL in the descr, read up to it) is
     * not what its bytes say. */
    size_t prefix = data[6] == 1 ? 10 : 12;
    for (size_t i = prefix; i < need; i++)
        CHECK(data[i] >= 0x20 ? data[i] != 0x7f : strchr("\t\n\r", data[i]) && data[i]);
    CHECK(ghd_array_itemsize(d.dtype) > 0);
    CHECK(d.ndim <= GHD_ARRAY_NDIM_MAX);
    uint64_t n, bytes;
    CHECK(ghd_array_nbytes(&d, &n, &bytes) == 0);
    char again[GHD_NPY_FORMAT_MAX];
    size_t len;
    CHECK(ghd_npy_format(&d, again, sizeof(again), &len) == 0);
    CHECK(len % 64 == 0);
    struct ghd_array_desc back;
    CHECK(ghd_npy_parse(again, len, &back, &err) == 0);
    CHECK(strcmp(back.dtype, d.dtype) == 0 && back.ndim == d.ndim);
    CHECK(memcmp(back.shape, d.shape, d.ndim * sizeof(d.shape[0])) == 0);
    return 0;
}
