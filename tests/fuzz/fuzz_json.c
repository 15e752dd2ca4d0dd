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
#include "core/runs/run_queue.h"
#include "core/service.h"

#include "fuzz_check.h"
#include "fuzz_service.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ghd_service svc;
static fuzz_ids ids;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct ghd_config cfg;
    fuzz_config(&cfg);
    cfg.staging_chunks = 2;
    cfg.run_queue_limit = 64;
    fuzz_service_start(&svc, &cfg, ids);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    int runs = data[0] & 1;
    size_t len;
    char *body = fuzz_expand_ids(data + 1, size - 1, ids, &len);
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
