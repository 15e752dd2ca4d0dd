#ifndef GHD_BASE_TENANT_H
#define GHD_BASE_TENANT_H

/* The longest tenant name, in bytes without the NUL. Every layer that
 * stores one (user kernels, buffers, runs, tokens, requests) uses this
 * bound, so a name that one accepts every other can hold. */
#define GHD_TENANT_MAX 64

#endif
