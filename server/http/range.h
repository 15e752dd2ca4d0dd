#ifndef GHD_HTTP_RANGE_H
#define GHD_HTTP_RANGE_H

#include <stdint.h>

/* Byte ranges (RFC 9110), single ranges only. */

/* Parses a Range header ("bytes=a-b", "bytes=a-", "bytes=-n") against a
 * resource of `size` bytes into the inclusive [*first, *last].
 * GHD_EINVAL: not a single byte range (the caller serves the whole resource);
 * GHD_ERANGE: well formed but unsatisfiable (416). */
int ghd_range_parse(const char *header, uint64_t size, uint64_t *first, uint64_t *last);

/* Parses a Content-Range header of a request ("bytes a-b/N", or with an
 * asterisk for an unknown total). *total_known is 0 for "*" (*total is then
 * 0), 1 with *total = N for any N, UINT64_MAX too: no value of N stands for
 * "unknown". GHD_EINVAL when malformed or b < a; GHD_ERANGE, with every
 * output set, when well formed but b >= N (the range ends past the length
 * it names itself). */
int ghd_content_range_parse(const char *header, uint64_t *first, uint64_t *last,
                            uint64_t *total, int *total_known);

#endif
