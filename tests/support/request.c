/* One request on a kept libcurl handle (request.h). */
#include "request.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t on_data(char *d, size_t sz, size_t n, void *ctx)
{
    struct support_body *k = ctx;
    size_t add = sz * n;
    if (k->len + add > k->cap) {
        size_t cap = (k->len + add) * 2;
        char *g = realloc(k->buf, cap + 1);
        if (!g)
            return 0;
        k->buf = g;
        k->cap = cap;
    }
    memcpy(k->buf + k->len, d, add);
    k->len += add;
    k->buf[k->len] = '\0';
    return add;
}

void *support_call_setopt(void *curl, const char *base, const struct support_call *rq)
{
    CURL *c = curl;
    char url[1024], auth[512], ct[256];
    snprintf(url, sizeof(url), "%s%s", rq->base ? rq->base : base, rq->path);
    struct curl_slist *h = NULL;
    if (rq->token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", rq->token);
        h = curl_slist_append(h, auth);
    }
    if (rq->ctype) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", rq->ctype);
        h = curl_slist_append(h, ct);
    }
    if (rq->extra_header)
        h = curl_slist_append(h, rq->extra_header);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url); /* libcurl keeps its own copy */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (rq->timeout_ms)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
    if (rq->cainfo)
        curl_easy_setopt(c, CURLOPT_CAINFO, rq->cainfo);
    if (rq->sslversion)
        curl_easy_setopt(c, CURLOPT_SSLVERSION, rq->sslversion);
    const char *method = rq->method ? rq->method : "GET";
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (rq->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->len);
    }
    return h;
}

long support_do_call_on(void *curl, const char *base, const struct support_call *rq,
                        struct support_body *out)
{
    CURL *c = curl;
    curl_easy_reset(c);
    out->len = 0;
    if (out->buf)
        out->buf[0] = '\0';
    struct curl_slist *h = support_call_setopt(c, base, rq);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    return status;
}

void support_body_free(struct support_body *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}
