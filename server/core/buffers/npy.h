#ifndef GHD_CORE_BUFFERS_NPY_H
#define GHD_CORE_BUFFERS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "kernels/array_desc.h" /* struct ghd_array_desc */

/* Array descriptions (element type and shape) and NumPy's .npy header, both
 * ways. Pure functions over caller memory: no I/O, no allocation, no HTTP.
 *
 * The .npy layout (numpy/lib/format.py): the magic "\x93NUMPY", a major and a
 * minor version byte, the header length (2 bytes little-endian in 1.0, 4 in
 * 2.0 and 3.0), then that many bytes of a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with
 * spaces and ending in '\n' so that the data starts at a multiple of 64. 3.0
 * only allows UTF-8 in the header, which changes nothing for the dtypes we
 * accept. */

/* NumPy's own bound on the header it reads (_MAX_HEADER_SIZE). */
#define GHD_NPY_HEADER_MAX 10000
/* Room for any header ghd_npy_format writes (32 dimensions of 20 digits). */
#define GHD_NPY_FORMAT_MAX 1024

/* Bytes of one element of `dtype` ("f32", "bool", "c64"...); 0 for a name
 * that is not an array dtype. */
size_t ghd_array_itemsize(const char *dtype);
/* The comma-separated dtype names, for error details and documentation. */
const char *ghd_array_dtype_names(void);
/* The dtype name that `name` (no dtype) was probably meant to be ("f32"
 * for "float32" or "F32"), or NULL. */
const char *ghd_array_dtype_suggest(const char *name);
/* Elements and bytes the description covers; GHD_ERANGE when the product
 * overflows 64 bits, GHD_EINVAL for an unknown dtype. */
int ghd_array_nbytes(const struct ghd_array_desc *d, uint64_t *elements, uint64_t *bytes);

/* How many bytes of the body the header takes, as far as `len` bytes of it
 * tell: 8 until the version is known, then 10 or 12 until the length is
 * known, then the whole header. Sets *need; the header is complete when
 * len >= *need. GHD_EINVAL (err says why) when the bytes are not a .npy
 * preamble, GHD_ENOTSUP for an unknown version, GHD_ETOOBIG for a header
 * longer than GHD_NPY_HEADER_MAX. */
int ghd_npy_header_need(const void *p, size_t len, size_t *need, struct ghd_err *err);
/* Parses a complete header (the `need` bytes above) into *out. GHD_EINVAL
 * for a malformed dict; GHD_EUNPROC, saying which, for what we refuse:
 * big-endian, object, structured or other unsupported dtypes, and Fortran
 * order. */
int ghd_npy_parse(const void *p, size_t len, struct ghd_array_desc *out, struct ghd_err *err);
/* Writes the header for `d` (version 1.0, padded to 64 bytes) into buf.
 * GHD_EINVAL for a dtype NumPy has no name for (bf16) or an unknown one. */
int ghd_npy_format(const struct ghd_array_desc *d, char *buf, size_t cap, size_t *len);

#endif
