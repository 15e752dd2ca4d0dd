/* libFuzzer: the JSON bodies of every JSON endpoint, through the handlers'
 * own validation, on an in-process service with the host backend. The first
 * byte picks the endpoint (POST /v1/buffers, POST /v1/runs); "@0", "@1" and
 * "@2" in the body stand for the ids of three real buffers, so kernel
 * arguments get past the buffer lookup. The body is parsed as http.c does
 * (an object, or a 400 before any handler). A reply must exist, be valid
 * JSON, never be a 500, and a problem's detail must have no CR or LF. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "base/error.h"
#include "base/log.h"
#include "core/run_queue.h"
#include "core/service.h"

#include "fuzz_check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ghd_service svc;
static char ids[3][GHD_BUFFER_ID_LEN + 1];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct ghd_config cfg;
    ghd_config_defaults(&cfg);
    cfg.backend = GHD_CHOICE_HOST;
    cfg.pool_initial = 0;
    cfg.pool_slab = 4 << 20;
    cfg.pool_limit = 128 << 20;
    cfg.pool_limit_percent = 0;
    cfg.staging_chunk = 64 << 10;
    cfg.staging_chunks = 2;
    cfg.max_buffer_size = 1 << 20; /* runs on fuzzed sizes stay quick */
    cfg.runs_kept = 16;
    cfg.run_queue_limit = 64;
    ghd_log_setup(GHD_LOG_ERROR, GHD_LOG_TEXT);
    struct ghd_err err = {0};
    if (ghd_service_init(&svc, &cfg, &err) != 0) {
        fprintf(stderr, "service: %s\n", err.detail);
        abort();
    }
    for (int i = 0; i < 3; i++) {
        struct ghd_buffer *b;
        struct ghd_buffer_spec spec = {.size = 4096};
        if (ghd_buffer_create_new(&svc.buffers, ghd_service_runtime(&svc, 0), &spec, &b) != 0)
            abort();
        memcpy(ids[i], b->id, sizeof(ids[i]));
        ghd_buffer_unref(b);
    }
    return 0;
}

/* Copies the body, putting the buffer ids where "@0".."@2" stand. */
static char *expand(const uint8_t *data, size_t size, size_t *out_len)
{
    char *s = malloc(size * (GHD_BUFFER_ID_LEN / 2) + 1), *o = s;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    int runs = data[0] & 1;
    size_t len;
    char *body = expand(data + 1, size - 1, &len);
    json_t *doc = json_loadb(body, len, 0, NULL);
    free(body);
    if (!json_is_object(doc)) { /* http.c answers 400 itself */
        json_decref(doc);
        return 0;
    }
    struct ghd_request req;
    struct ghd_reply rep;
    memset(&req, 0, sizeof(req));
    memset(&rep, 0, sizeof(rep));
    req.svc = &svc;
    req.method = "POST";
    req.path = runs ? "/v1/runs" : "/v1/buffers";
    req.route = req.path;
    snprintf(req.request_id, sizeof(req.request_id), "fuzz");
    req.json = doc;
    req.has_body = 1;
    int rc = runs ? ghd_handle_run_create(&req, &rep) : ghd_handle_buffer_create(&req, &rep);
    if (rc && !rep.status)
        ghd_reply_problem(&rep, &req, rc, NULL);
    CHECK(rep.status >= 200 && rep.status < 600);
    CHECK(rep.status != 500);
    CHECK(rep.body != NULL);
    json_t *out = json_loadb(rep.body, rep.body_len, 0, NULL);
    CHECK(out != NULL);
    if (rep.status >= 400) {
        const char *detail = json_string_value(json_object_get(out, "detail"));
        CHECK(detail && !strchr(detail, '\r') && !strchr(detail, '\n'));
        CHECK(json_integer_value(json_object_get(out, "status")) == rep.status);
    }
    if (!runs && rep.status == 201) { /* keep the pool from filling up */
        const char *id = json_string_value(json_object_get(out, "id"));
        CHECK(id && ghd_buffer_remove(&svc.buffers, id, NULL) == 0);
    }
    json_decref(out);
    json_decref(doc);
    ghd_reply_reset(&rep);
    return 0;
}
