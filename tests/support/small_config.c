/* The suites' small server configuration (small_config.h). */
#include "small_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

const struct support_sizes support_sizes_http = {
    .pool_limit = 96 * MIB, .pool_slab = 8 * MIB, .pool_initial = 8 * MIB,
    .staging_chunk = 256 << 10, .staging_chunks = 40, .staging_timeout_ms = 5000};
const struct support_sizes support_sizes_rel = {
    .pool_limit = 64 * MIB, .pool_slab = 4 * MIB, .pool_initial = 0,
    .staging_chunk = 64 << 10, .staging_chunks = 8, .staging_timeout_ms = 500};

const char *support_backend_name(void)
{
    const char *be = getenv("GHD_TEST_BACKEND");
    return be && *be ? be : "host";
}

/* The variable as a number, when it is set. */
static int env_number(const char *name, unsigned long long *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    *out = strtoull(v, NULL, 10);
    return 1;
}

static void socket_settings(struct ghd_config *cfg)
{
    unsigned long long v;
    if (env_number("GHD_TEST_DIRECT_COPY", &v))
        cfg->direct_copy = v != 0;
    if (env_number("GHD_TEST_SOCKET_BODY_MIN", &v))
        cfg->socket_upload_min = v;
    if (env_number("GHD_TEST_SOCKET_RECV_MAX", &v))
        cfg->socket_recv_max = v;
    if (env_number("GHD_TEST_SOCKET_BOUNCE", &v))
        cfg->socket_bounce = v;
    if (env_number("GHD_TEST_SOCKET_BOUNCE_UPLOADS", &v))
        cfg->socket_bounce_uploads = (unsigned)v;
    if (env_number("GHD_TEST_DOWNLOAD_BLOCK", &v))
        cfg->download_block = v;
    if (env_number("GHD_TEST_DOWNLOAD_OVERLAP", &v))
        cfg->download_overlap = (unsigned)v;
    /* GHD_TEST_RUN_INLINE=0: --run-inline 0 (every run to a worker; 1 is the default). */
    if (env_number("GHD_TEST_RUN_INLINE", &v))
        cfg->run_inline = (unsigned)v;
}

void support_config_small(struct ghd_config *cfg, const struct support_sizes *z)
{
    cfg->port = 0;
    snprintf(cfg->bind, sizeof(cfg->bind), "127.0.0.1");
    const char *be = support_backend_name();
    cfg->backend = strcmp(be, "cuda") == 0   ? GHD_CHOICE_CUDA
                   : strcmp(be, "auto") == 0 ? GHD_CHOICE_AUTO
                                             : GHD_CHOICE_HOST;
    const char *devices = getenv("GHD_TEST_DEVICES");
    if (devices && *devices)
        snprintf(cfg->devices, sizeof(cfg->devices), "%s", devices);
    cfg->pool_limit_percent = 0;
    cfg->pool_limit = z->pool_limit;
    cfg->pool_slab = z->pool_slab;
    cfg->pool_initial = z->pool_initial;
    cfg->staging_chunk = z->staging_chunk;
    cfg->staging_chunks = z->staging_chunks;
    cfg->staging_timeout_ms = z->staging_timeout_ms;
    socket_settings(cfg);
}
