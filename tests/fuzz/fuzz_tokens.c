/* libFuzzer: token lines, token lists and Authorization headers
 * (server/core/tenancy/auth.c). A parsed entry must use only the allowed alphabets and
 * lengths and must authenticate as itself, and only as itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tenancy/auth.h"
#include "base/error.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int token_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           strchr("-._~+/=", c) != NULL;
}

static int tenant_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           strchr("-._", c) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char tok[GHD_TOKEN_MAX + 1], ten[GHD_TENANT_MAX + 1];
    const char *why = NULL;
    unsigned perms = 0;
    int rc = ghd_auth_parse_line((const char *)data, size, tok, ten, &perms, &why);
    CHECK(rc == 0 || rc == 1 || rc == GHD_EINVAL);
    if (rc == GHD_EINVAL)
        CHECK(why != NULL);
    if (rc == 1) {
        size_t nt = strlen(tok), nn = strlen(ten);
        CHECK(nt >= 1 && nt <= GHD_TOKEN_MAX && nn >= 1 && nn <= GHD_TENANT_MAX);
        for (size_t i = 0; i < nt; i++)
            CHECK(token_char(tok[i]) && tok[i] != '\0');
        for (size_t i = 0; i < nn; i++)
            CHECK(tenant_char(ten[i]));
        /* Only the raw permission, and a weight in range (1 when none). */
        unsigned weight_bits = perms >> GHD_PERM_WEIGHT_SHIFT;
        CHECK((perms & ~(unsigned)GHD_PERM_RAW & ((1u << GHD_PERM_WEIGHT_SHIFT) - 1)) == 0);
        CHECK(weight_bits <= GHD_WEIGHT_MAX && ghd_perm_weight(perms) >= 1);
        /* The entry authenticates as itself, with its permissions... */
        char list[GHD_TOKEN_MAX + GHD_TENANT_MAX + 32], weight[24] = "";
        if (weight_bits)
            snprintf(weight, sizeof(weight), ":weight=%u", weight_bits);
        snprintf(list, sizeof(list), "%s:%s%s%s", tok, ten, perms & GHD_PERM_RAW ? ":raw" : "",
                 weight);
        struct ghd_auth *a;
        CHECK(ghd_auth_new(NULL, list, NULL, &a, NULL) == 0);
        char header[GHD_TOKEN_MAX + 16], got[GHD_TENANT_MAX + 1];
        snprintf(header, sizeof(header), "Bearer %s", tok);
        unsigned got_perms = ~0u;
        CHECK(ghd_auth_check(a, header, got, &got_perms) == 0);
        CHECK(strcmp(got, ten) == 0);
        CHECK(got_perms == perms);
        /* ...and a one-character change does not. */
        header[7] = header[7] == 'x' ? 'y' : 'x';
        CHECK(ghd_auth_check(a, header, got, NULL) == GHD_EUNAUTH || strcmp(header + 7, tok) == 0);
        ghd_auth_free(a);
    }

    /* The same bytes as a GHD_TOKENS list and as an Authorization header. */
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    struct ghd_auth *a = NULL;
    rc = ghd_auth_new(NULL, s, NULL, &a, NULL);
    CHECK(rc == 0 || rc == GHD_EINVAL || rc == GHD_ENOHOSTMEM);
    if (rc == 0) {
        char got[GHD_TENANT_MAX + 1];
        rc = ghd_auth_check(a, s, got, NULL);
        CHECK(rc == 0 || rc == GHD_EUNAUTH);
        ghd_auth_free(a);
    }
    const char *t;
    size_t n;
    if (ghd_auth_bearer(s, &t, &n) == 0) {
        CHECK(n >= 1 && n <= GHD_TOKEN_MAX && t >= s && t + n <= s + strlen(s));
        for (size_t i = 0; i < n; i++)
            CHECK(token_char(t[i]));
    }
    free(s);
    return 0;
}
