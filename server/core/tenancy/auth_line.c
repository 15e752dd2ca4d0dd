/* The text of tokens: a token and a tenant as the tokens file, --tokens and
 * an Authorization header write them, and a line of the tokens file with its
 * permissions (auth.h: ghd_auth_parse_line, ghd_auth_bearer). The tables
 * they fill are auth.c's. */
#include "auth_internal.h"

#include <string.h>
#include <strings.h>

#include "base/error.h"

static int is_token_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

static int is_tenant_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_';
}

/* b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
int ghd_auth_valid_token(const char *s, size_t n)
{
    if (n == 0 || n > GHD_TOKEN_MAX)
        return 0;
    size_t i = 0;
    while (i < n && is_token_char((unsigned char)s[i]))
        i++;
    if (i == 0)
        return 0;
    while (i < n && s[i] == '=')
        i++;
    return i == n;
}

static int valid_tenant(const char *s, size_t n)
{
    if (n == 0 || n > GHD_TENANT_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_tenant_char((unsigned char)s[i]))
            return 0;
    return 1;
}

int ghd_auth_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static const struct {
    const char *name;
    unsigned bit;
} perm_names[] = {
    {"raw", GHD_PERM_RAW},
};

/* "N" of "weight=N" into the weight bits of *perms. */
static int parse_weight(const char *s, size_t len, unsigned *perms)
{
    unsigned w = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || (i == 0 && s[i] == '0') || i >= 4)
            return -1;
        w = w * 10 + (unsigned)(s[i] - '0');
    }
    if (w < 1 || w > GHD_WEIGHT_MAX)
        return -1;
    *perms = (*perms & ((1u << GHD_PERM_WEIGHT_SHIFT) - 1)) | w << GHD_PERM_WEIGHT_SHIFT;
    return 0;
}

/* The words after the tenant: each a known permission, or its weight. */
static int parse_perms(const char *s, size_t len, unsigned *perms, const char **why)
{
    *perms = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && ghd_auth_is_blank(s[i]))
            i++;
        size_t w0 = i;
        while (i < len && !ghd_auth_is_blank(s[i]))
            i++;
        if (w0 == i)
            break;
        if (i - w0 > 7 && memcmp(s + w0, "weight=", 7) == 0) {
            if (parse_weight(s + w0 + 7, i - w0 - 7, perms) != 0) {
                *why = "a weight is weight=N, N from 1 to 1000";
                return GHD_EINVAL;
            }
            continue;
        }
        size_t p = 0, n = sizeof(perm_names) / sizeof(perm_names[0]);
        while (p < n && !(strlen(perm_names[p].name) == i - w0 &&
                          memcmp(perm_names[p].name, s + w0, i - w0) == 0))
            p++;
        if (p == n) {
            *why = "expected 'token tenant [permission ...]'; the permissions are 'raw' and "
                   "'weight=N'";
            return GHD_EINVAL;
        }
        *perms |= perm_names[p].bit;
    }
    return 0;
}

int ghd_auth_parse_line(const char *line, size_t len, char *token, char *tenant,
                        unsigned *perms, const char **why)
{
    const char *hash = memchr(line, '#', len);
    if (hash)
        len = (size_t)(hash - line);
    size_t i = 0;
    while (i < len && ghd_auth_is_blank(line[i]))
        i++;
    while (len > i && ghd_auth_is_blank(line[len - 1]))
        len--;
    if (i == len)
        return 0;
    size_t t0 = i;
    while (i < len && !ghd_auth_is_blank(line[i]))
        i++;
    size_t t1 = i;
    while (i < len && ghd_auth_is_blank(line[i]))
        i++;
    size_t n0 = i;
    while (i < len && !ghd_auth_is_blank(line[i]))
        i++;
    size_t n1 = i;
    if (n0 == n1) {
        *why = "expected 'token tenant'; the tenant is missing";
        return GHD_EINVAL;
    }
    if (!ghd_auth_valid_token(line + t0, t1 - t0)) {
        *why = "the token is empty, longer than 256 characters, or has characters outside "
               "A-Z a-z 0-9 - . _ ~ + / (and trailing =)";
        return GHD_EINVAL;
    }
    if (!valid_tenant(line + n0, n1 - n0)) {
        *why = "the tenant must be 1 to 64 characters of A-Z a-z 0-9 . _ -";
        return GHD_EINVAL;
    }
    if (parse_perms(line + n1, len - n1, perms, why) != 0)
        return GHD_EINVAL;
    memcpy(token, line + t0, t1 - t0);
    token[t1 - t0] = '\0';
    memcpy(tenant, line + n0, n1 - n0);
    tenant[n1 - n0] = '\0';
    return 1;
}

int ghd_auth_bearer(const char *header, const char **token, size_t *len)
{
    if (!header || strncasecmp(header, "Bearer", 6) != 0 || (header[6] != ' ' && header[6] != '\t'))
        return GHD_EUNAUTH;
    const char *s = header + 7;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!ghd_auth_valid_token(s, n))
        return GHD_EUNAUTH;
    *token = s;
    *len = n;
    return 0;
}

