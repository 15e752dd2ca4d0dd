#ifndef GHD_TESTS_FUZZ_SERVICE_H
#define GHD_TESTS_FUZZ_SERVICE_H

/* The in-process service of the harnesses that drive the handlers
 * (fuzz_json, fuzz_http): host backend, a small pool, 1 MiB buffers at most
 * (runs on fuzzed sizes stay quick), error-level logs, and three real
 * buffers whose ids an input names as "@0".."@2". Each harness is one
 * translation unit (CMakeLists.txt), hence static functions in a header. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/buffers/buffer.h"
#include "core/service.h"
#include "core/service_internal.h"

typedef char fuzz_ids[3][GHD_BUFFER_ID_LEN + 1];

/* The settings both harnesses share; each adds its own. */
static void fuzz_config(struct ghd_config *cfg)
{
    ghd_config_defaults(cfg);
    cfg->backend = GHD_CHOICE_HOST;
    cfg->port = 0;
    cfg->pool_initial = 0;
    cfg->pool_slab = 4 << 20;
    cfg->pool_limit = 128 << 20;
    cfg->pool_limit_percent = 0;
    cfg->staging_chunk = 64 << 10;
    cfg->max_buffer_size = 1 << 20;
    cfg->runs_kept = 16;
}

/* Starts the service (aborts when it cannot) and makes the three 4 KiB
 * buffers, their ids in `ids`. */
static void fuzz_service_start(struct ghd_service *svc, const struct ghd_config *cfg,
                               fuzz_ids ids)
{
    ghd_log_setup(GHD_LOG_ERROR, GHD_LOG_TEXT);
    struct ghd_err err = {0};
    if (ghd_service_init(svc, cfg, &err) != 0) {
        fprintf(stderr, "service: %s\n", err.detail);
        abort();
    }
    for (int i = 0; i < 3; i++) {
        struct ghd_buffer *b;
        struct ghd_buffer_spec spec = {.size = 4096};
        if (ghd_buffer_create_new(&svc->buffers, ghd_service_runtime(svc, 0), &spec, &b) != 0)
            abort();
        memcpy(ids[i], b->id, GHD_BUFFER_ID_LEN + 1);
        ghd_buffer_unref(b);
    }
}

/* Copies the input, putting the buffer ids where "@0".."@2" stand; the copy
 * (NUL-terminated, *out_len bytes before the NUL) is the caller's to free. */
static char *fuzz_expand_ids(const uint8_t *data, size_t size, fuzz_ids ids, size_t *out_len)
{
    /* Two input bytes ("@N") become one id: half an id per byte, rounded up
     * (ids are 47 characters, an odd length). */
    char *s = malloc(size * ((GHD_BUFFER_ID_LEN + 1) / 2) + 1), *o = s;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '@' && i + 1 < size && data[i + 1] >= '0' && data[i + 1] <= '2') {
            memcpy(o, ids[data[i + 1] - '0'], GHD_BUFFER_ID_LEN);
            o += GHD_BUFFER_ID_LEN;
            i++;
        } else {
            *o++ = (char)data[i];
        }
    }
    *o = '\0';
    *out_len = (size_t)(o - s);
    return s;
}

#endif
