/* libFuzzer: a raw module's source and options (kernels/raw/source.c) from
 * arbitrary bytes: the source, then, after each 0x01 byte, one option
 * (kept only if the option allow-list takes them all). Invariants: the
 * verdict is 0 or 422 with a detail naming the source's line or the option;
 * a source taken holds none of the refused spellings as plain text; and a
 * line splice (backslash-newline) put anywhere it cannot join with the
 * characters around it (a backslash, a trigraph's '?' or '/', a CR) does
 * not change the verdict: translation phase 2 removes it before anything
 * else looks. */
#define _GNU_SOURCE /* memmem */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "kernels/raw/raw.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether s[0..n) holds `word` with a blank, a parenthesis or an end on
 * either side (nothing a splice or a longer identifier could hide in). */
static int has_word(const char *s, size_t n, const char *word)
{
    size_t k = strlen(word);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, word, k) == 0 && (i == 0 || strchr(" \t(;,=!{", s[i - 1])) &&
            (i + k == n || (s[i + k] && strchr(" \t\"<();,", s[i + k]))))
            return 1;
    return 0;
}

static int check(const char *src, size_t n, const char *const *opts, struct ghd_err *e)
{
    memset(e, 0, sizeof(*e));
    int rc = ghd_raw_source_check(src, n, opts, e);
    CHECK(rc == 0 || rc == GHD_EUNPROC);
    if (rc)
        CHECK(strncmp(e->detail, "source", 6) == 0 || strncmp(e->detail, "options[", 8) == 0);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    const char *text = (const char *)data;
    const char *cut = memchr(text, 1, size);
    size_t n = cut ? (size_t)(cut - text) : size;
    /* The options: each one NUL-terminated, through the allow-list. */
    const char *opts[GHD_RAW_MAX_OPTIONS + 1] = {NULL};
    char *owned = NULL;
    json_t *list = json_array();
    if (cut) {
        size_t rest = size - n - 1;
        owned = malloc(rest + 1);
        CHECK(owned != NULL);
        memcpy(owned, cut + 1, rest);
        owned[rest] = '\0';
        for (char *o = owned, *end; o; o = end ? end + 1 : NULL) {
            end = strchr(o, 1);
            if (end)
                *end = '\0';
            json_array_append_new(list, json_string(o)); /* NULL (not UTF-8) is skipped */
        }
    }
    unsigned nopts = 0;
    struct ghd_err e;
    if (ghd_raw_options_check(list, opts, &nopts, &e) != 0)
        opts[0] = NULL;
    int rc = check(text, n, opts, &e);
    if (rc == 0) {
        static const char *const refused[] = {"__has_include", "__has_include_next",
                                              "__has_embed", "#include", "#import", "#embed",
                                              NULL};
        for (const char *const *r = refused; *r; r++)
            CHECK(!has_word(text, n, *r));
        CHECK(!memmem(text, n, "%:", 2));
        CHECK(!memchr(text, '\0', n));
    }
    /* A splice at a position chosen by the input's bytes. */
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    size_t p = n ? (size_t)(h % (n + 1)) : 0;
    if ((p == 0 || !strchr("\\/?\r", text[p - 1])) && (p == n || text[p] != '?')) {
        char *spliced = malloc(n + 2);
        CHECK(spliced != NULL);
        memcpy(spliced, text, p);
        memcpy(spliced + p, "\\\n", 2);
        memcpy(spliced + p + 2, text + p, n - p);
        struct ghd_err e2;
        int rc2 = check(spliced, n + 2, opts, &e2);
        if (rc2 != rc)
            fprintf(stderr, "splice at %zu: %d '%s' became %d '%s'\n", p, rc, e.detail, rc2,
                    e2.detail);
        CHECK(rc2 == rc);
        free(spliced);
    }
    json_decref(list);
    free(owned);
    return 0;
}
