#ifndef GHD_TESTS_SUPPORT_SMALL_CONFIG_H
#define GHD_TESTS_SUPPORT_SMALL_CONFIG_H

/* The small server the in-process suites start (support_start and support_config):
 * loopback, port 0, test-sized memory, and what the environment asks for.
 * One set of variables for every suite:
 *   GHD_TEST_BACKEND      host (the default), cuda, or auto
 *   GHD_TEST_DEVICES      --devices (all, or a list)
 *   GHD_TEST_LOG          the server's log level (debug, info, warn...)
 *   GHD_TEST_DIRECT_COPY  0 turns --direct-copy off (every byte through the ring)
 *   GHD_TEST_SOCKET_BODY_MIN, GHD_TEST_SOCKET_RECV_MAX, GHD_TEST_SOCKET_BOUNCE,
 *   GHD_TEST_SOCKET_BOUNCE_UPLOADS, GHD_TEST_DOWNLOAD_BLOCK,
 *   GHD_TEST_DOWNLOAD_OVERLAP: --socket-upload-min, --socket-recv-max,
 *   --socket-bounce, --socket-bounce-uploads, --download-block and
 *   --download-overlap. */
#include <stddef.h>

#include "core/config/config.h"

/* A suite's memory: the pool's limit, slab and first slab, and the
 * staging ring's chunks and how long a transfer waits for one. */
struct support_sizes {
    size_t pool_limit; /* 0: no limit */
    size_t pool_slab, pool_initial;
    size_t staging_chunk;
    unsigned staging_chunks, staging_timeout_ms;
};

/* tests/http's: a limit the 507 tests reach (96 MiB in 8 MiB slabs), and a
 * ring small enough that transfers cross many chunk boundaries (40 x 256
 * KiB, 5 s). */
extern const struct support_sizes support_sizes_http;
/* tests/reliability's: 64 MiB in 4 MiB slabs, none at start, 8 x 64 KiB
 * chunks, 0.5 s (the limits are met quickly). */
extern const struct support_sizes support_sizes_rel;

/* GHD_TEST_BACKEND as given, "host" when it is not set. */
const char *support_backend_name(void);
/* Sets, over whatever *cfg holds: port 0 on 127.0.0.1, the backend and
 * devices the environment names, the sizes z, and the environment's
 * socket and copy settings. */
void support_config_small(struct ghd_config *cfg, const struct support_sizes *z);

#endif
