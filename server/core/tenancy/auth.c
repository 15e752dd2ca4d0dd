#include "auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "auth_internal.h"

#define TOKENS_FILE_MAX ((size_t)4 << 20)

/* Stored zero-padded to the full width, so a comparison touches the same
 * bytes whatever the token. */
struct entry {
    unsigned char token[GHD_TOKEN_MAX + 1];
    size_t len;
    char tenant[GHD_TENANT_MAX + 1];
    unsigned perms; /* GHD_PERM_* */
};

struct table {
    struct entry *e;
    size_t n, cap;
};

/* What tells a version of the tokens file from another, as stat() sees it
 * through symbolic links. Zeroed before it is filled, so that memcmp
 * compares it. */
struct stamp {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    int missing;
};

struct ghd_auth {
    pthread_rwlock_t lock;
    struct table tab;
    char *file; /* NULL when there is none */
    /* The file's version last read (or tried), and the one the watch saw
     * last (ghd_auth_file_changed); the main loop's alone. */
    struct stamp loaded, seen;
    char *list;
    int enabled;
    struct entry metrics; /* len 0 = /metrics is open; read under `lock` (its file may change) */
    char *metrics_file;   /* --metrics-token-file, NULL when none */
    struct stamp metrics_loaded, metrics_seen; /* as `loaded` and `seen`, for that file */
};

/* ---- tables ---------------------------------------------------------- */

static void entry_set(struct entry *e, const char *token, size_t len, const char *tenant,
                      unsigned perms)
{
    memset(e, 0, sizeof(*e));
    memcpy(e->token, token, len);
    e->len = len;
    snprintf(e->tenant, sizeof(e->tenant), "%s", tenant ? tenant : "");
    e->perms = perms;
}

/* Every byte of both padded tokens is looked at, match or not. */
static int ct_equal(const struct entry *a, const struct entry *b)
{
    unsigned diff = (unsigned)(a->len ^ b->len);
    for (size_t i = 0; i < sizeof(a->token); i++)
        diff |= (unsigned)(a->token[i] ^ b->token[i]);
    return diff == 0;
}

static void table_free(struct table *t)
{
    if (t->e)
        memset(t->e, 0, t->cap * sizeof(*t->e)); /* no tokens left in freed memory */
    free(t->e);
    memset(t, 0, sizeof(*t));
}

/* Adds token -> tenant; the same entry twice is fine, one token for two
 * tenants or with two sets of permissions is not. */
static int table_add(struct table *t, const char *token, const char *tenant, unsigned perms,
                     const char **why)
{
    struct entry e;
    entry_set(&e, token, strlen(token), tenant, perms);
    for (size_t i = 0; i < t->n; i++) {
        if (ct_equal(&t->e[i], &e)) {
            if (strcmp(t->e[i].tenant, tenant) == 0 && t->e[i].perms == perms)
                return 0;
            *why = strcmp(t->e[i].tenant, tenant) == 0
                       ? "the same token is given twice with different permissions"
                       : "the same token is given for two tenants";
            return GHD_EINVAL;
        }
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct entry *grown = calloc(cap, sizeof(*grown));
        if (!grown) {
            *why = "out of host memory";
            return GHD_ENOHOSTMEM;
        }
        if (t->n)
            memcpy(grown, t->e, t->n * sizeof(*grown));
        table_free(&(struct table){t->e, t->n, t->cap});
        t->e = grown;
        t->cap = cap;
    }
    t->e[t->n++] = e;
    memset(&e, 0, sizeof(e));
    return 0;
}

/* "token:tenant[:permission...],token:tenant"; blanks around items are
 * ignored. */
static int load_list(struct table *t, const char *list, struct ghd_err *err)
{
    size_t item = 0;
    for (const char *s = list; *s;) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        item++;
        const char *colon = memchr(s, ':', n);
        char line[GHD_TOKEN_MAX + GHD_TENANT_MAX + 8];
        char token[GHD_TOKEN_MAX + 1], tenant[GHD_TENANT_MAX + 1];
        const char *reason = "expected 'token:tenant'";
        unsigned perms = 0;
        int rc = GHD_EINVAL;
        if (colon && n < sizeof(line)) {
            /* Reuse the line parser: "token:tenant:raw" -> "token tenant raw"
             * (neither a token nor a tenant has a colon or a blank). */
            memcpy(line, s, n);
            for (size_t c = 0; c < n; c++)
                if (line[c] == ':')
                    line[c] = ' ';
                else if (line[c] == ' ' || line[c] == '\t')
                    line[c] = '\001'; /* a blank inside an item stays an error */
            size_t lead = 0, trail = n;
            while (lead < n && line[lead] == '\001')
                line[lead++] = ' ';
            while (trail > lead && line[trail - 1] == '\001')
                line[--trail] = ' ';
            rc = ghd_auth_parse_line(line, n, token, tenant, &perms, &reason);
            memset(line, 0, sizeof(line));
            if (rc == 0)
                reason = "an item is empty";
            if (rc == 1)
                rc = table_add(t, token, tenant, perms, &reason);
            memset(token, 0, sizeof(token));
        } else if (!colon) {
            int blank = 1;
            for (size_t i = 0; i < n; i++)
                blank &= ghd_auth_is_blank(s[i]);
            if (blank)
                rc = 0; /* tolerate "a:b," and "" */
        }
        if (rc < 0)
            return ghd_err_set(err, rc, "--tokens / GHD_TOKENS item %zu: %s", item, reason);
        s = end ? end + 1 : s + n;
    }
    return 0;
}

static int load_file(struct table *t, const char *path, struct ghd_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ghd_err_set(err, GHD_EINVAL, "--tokens-file %s: %s", path, strerror(errno));
    /* Group read is fine for the server's own group: a Kubernetes Secret
     * volume with fsGroup gives its files that group and its read bit. */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 &&
        ((st.st_mode & 007) || ((st.st_mode & 070) && st.st_gid != getegid())))
        ghd_log(GHD_LOG_WARN, "--tokens-file %s is readable by other users (chmod 600, or 640 "
                              "with the server's own group)", path);
    char *data = malloc(TOKENS_FILE_MAX);
    if (!data) {
        fclose(f);
        return ghd_err_set(err, GHD_ENOHOSTMEM, "--tokens-file %s: out of host memory", path);
    }
    size_t len = fread(data, 1, TOKENS_FILE_MAX, f);
    int rc = ferror(f) ? GHD_EINVAL : 0;
    if (rc == 0 && len == TOKENS_FILE_MAX)
        rc = GHD_ETOOBIG;
    fclose(f);
    if (rc) {
        free(data);
        return ghd_err_set(err, GHD_EINVAL, "--tokens-file %s: %s", path,
                           rc == GHD_ETOOBIG ? "larger than 4 MiB" : "read error");
    }
    size_t lineno = 0;
    for (size_t pos = 0; pos < len && rc == 0;) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (data + pos)) : len - pos;
        char token[GHD_TOKEN_MAX + 1], tenant[GHD_TENANT_MAX + 1];
        const char *reason = "";
        unsigned perms = 0;
        lineno++;
        rc = ghd_auth_parse_line(data + pos, n, token, tenant, &perms, &reason);
        if (rc == 1)
            rc = table_add(t, token, tenant, perms, &reason);
        memset(token, 0, sizeof(token));
        if (rc < 0)
            ghd_err_set(err, GHD_EINVAL, "--tokens-file %s line %zu: %s", path, lineno, reason);
        else
            rc = 0;
        pos += n + 1;
    }
    memset(data, 0, len);
    free(data);
    return rc < 0 ? GHD_EINVAL : 0;
}

static void stamp_of(const char *path, struct stamp *s)
{
    struct stat st;
    memset(s, 0, sizeof(*s));
    if (stat(path, &st) != 0) {
        s->missing = 1;
        return;
    }
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->size = st.st_size;
    s->mtime = st.st_mtim;
}

static int stamp_equal(const struct stamp *a, const struct stamp *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

static int build(const char *file, const char *list, struct table *out, struct ghd_err *err)
{
    struct table t = {0};
    int rc = 0;
    if (list && *list)
        rc = load_list(&t, list, err);
    if (rc == 0 && file)
        rc = load_file(&t, file, err);
    if (rc) {
        table_free(&t);
        return rc;
    }
    *out = t;
    return 0;
}

int ghd_auth_new(const char *tokens_file, const char *tokens_list, const char *metrics_token,
                 struct ghd_auth **out, struct ghd_err *err)
{
    struct ghd_auth *a = calloc(1, sizeof(*a));
    if (!a)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    pthread_rwlock_init(&a->lock, NULL);
    if (metrics_token && *metrics_token) {
        size_t n = strlen(metrics_token);
        if (!ghd_auth_valid_token(metrics_token, n)) {
            ghd_auth_free(a);
            return ghd_err_set(err, GHD_EINVAL,
                               "--metrics-token: not a bearer token (1 to 256 characters "
                               "of A-Z a-z 0-9 - . _ ~ + / and trailing =)");
        }
        entry_set(&a->metrics, metrics_token, n, NULL, 0);
    }
    int rc = GHD_ENOHOSTMEM;
    if (tokens_file && *tokens_file && !(a->file = strdup(tokens_file)))
        goto fail;
    if (tokens_list && *tokens_list && !(a->list = strdup(tokens_list)))
        goto fail;
    if (a->file)
        stamp_of(a->file, &a->loaded); /* before the read: a change meanwhile is seen later */
    a->seen = a->loaded;
    rc = build(a->file, a->list, &a->tab, err);
    if (rc)
        goto fail;
    a->enabled = a->file || a->list;
    *out = a;
    return 0;
fail:
    if (rc == GHD_ENOHOSTMEM)
        ghd_err_set(err, rc, "out of host memory");
    ghd_auth_free(a);
    return rc;
}

static void free_fields(struct ghd_auth *a)
{
    table_free(&a->tab);
    free(a->file);
    free(a->metrics_file);
    if (a->list)
        memset(a->list, 0, strlen(a->list));
    free(a->list);
    memset(&a->metrics, 0, sizeof(a->metrics));
}

void ghd_auth_free(struct ghd_auth *a)
{
    if (!a)
        return;
    pthread_rwlock_destroy(&a->lock);
    free_fields(a);
    free(a);
}

int ghd_auth_reload(struct ghd_auth *a, size_t *count, struct ghd_err *err)
{
    struct table t;
    if (a->file) /* tried, whatever comes of it: the watch waits for the next change */
        stamp_of(a->file, &a->loaded);
    int rc = build(a->file, a->list, &t, err);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&a->lock);
    struct table old = a->tab;
    a->tab = t;
    pthread_rwlock_unlock(&a->lock);
    table_free(&old);
    *count = t.n;
    return 0;
}

/* Whether `path` changed since `loaded` and stayed as the last look (`seen`) saw it. */
static int file_changed(const char *path, const struct stamp *loaded, struct stamp *seen)
{
    struct stamp now;
    stamp_of(path, &now);
    int settled = stamp_equal(&now, seen);
    *seen = now;
    return !stamp_equal(&now, loaded) && settled;
}

int ghd_auth_file_changed(struct ghd_auth *a)
{
    return a && a->file && file_changed(a->file, &a->loaded, &a->seen);
}

/* The token a --metrics-token-file holds: all of it, white space around it
 * dropped (a Secret's value, or a file an editor ended with a newline). */
static int read_metrics_token(const char *path, struct entry *out, struct ghd_err *err)
{
    char buf[GHD_TOKEN_MAX + 64];
    FILE *f = fopen(path, "rb");
    if (!f)
        return ghd_err_set(err, GHD_EINVAL, "--metrics-token-file %s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    size_t i = 0;
    while (i < n && ghd_auth_is_blank(buf[i]))
        i++;
    while (n > i && ghd_auth_is_blank(buf[n - 1]))
        n--;
    int ok = n < sizeof(buf) && ghd_auth_valid_token(buf + i, n - i);
    if (ok)
        entry_set(out, buf + i, n - i, NULL, 0);
    memset(buf, 0, sizeof(buf));
    if (!ok)
        return ghd_err_set(err, GHD_EINVAL, "--metrics-token-file %s: not one bearer token (1 to "
                           "256 characters of A-Z a-z 0-9 - . _ ~ + / and trailing =)", path);
    return 0;
}

int ghd_auth_metrics_reload(struct ghd_auth *a, struct ghd_err *err)
{
    struct entry e;
    stamp_of(a->metrics_file, &a->metrics_loaded); /* tried: the watch waits for a change */
    int rc = read_metrics_token(a->metrics_file, &e, err);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&a->lock);
    a->metrics = e;
    pthread_rwlock_unlock(&a->lock);
    memset(&e, 0, sizeof(e));
    return 0;
}

int ghd_auth_metrics_file(struct ghd_auth *a, const char *path, struct ghd_err *err)
{
    if (!(a->metrics_file = strdup(path)))
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    int rc = ghd_auth_metrics_reload(a, err);
    a->metrics_seen = a->metrics_loaded;
    return rc;
}

int ghd_auth_metrics_file_changed(struct ghd_auth *a)
{
    return a && a->metrics_file &&
           file_changed(a->metrics_file, &a->metrics_loaded, &a->metrics_seen);
}

int ghd_auth_enabled(const struct ghd_auth *a)
{
    return a && a->enabled;
}

int ghd_auth_metrics_guarded(const struct ghd_auth *a)
{
    if (!a)
        return 0;
    pthread_rwlock_rdlock((pthread_rwlock_t *)&a->lock);
    int guarded = a->metrics.len > 0;
    pthread_rwlock_unlock((pthread_rwlock_t *)&a->lock);
    return guarded;
}

size_t ghd_auth_count(struct ghd_auth *a)
{
    pthread_rwlock_rdlock(&a->lock);
    size_t n = a->tab.n;
    pthread_rwlock_unlock(&a->lock);
    return n;
}

int ghd_auth_check(struct ghd_auth *a, const char *authorization, char *tenant,
                   unsigned *perms)
{
    const char *tok;
    size_t len;
    if (ghd_auth_bearer(authorization, &tok, &len) != 0)
        return GHD_EUNAUTH;
    struct entry given;
    entry_set(&given, tok, len, NULL, 0);
    size_t found = SIZE_MAX;
    pthread_rwlock_rdlock(&a->lock);
    /* No early exit: every entry is compared whatever matches. */
    for (size_t i = 0; i < a->tab.n; i++) {
        size_t eq = (size_t)ct_equal(&a->tab.e[i], &given);
        found = (found & (eq - 1)) | (i & (0 - eq)); /* found = eq ? i : found */
    }
    if (found != SIZE_MAX) {
        memcpy(tenant, a->tab.e[found].tenant, GHD_TENANT_MAX + 1);
        if (perms)
            *perms = a->tab.e[found].perms;
    }
    pthread_rwlock_unlock(&a->lock);
    memset(&given, 0, sizeof(given));
    return found != SIZE_MAX ? 0 : GHD_EUNAUTH;
}

int ghd_auth_check_metrics(struct ghd_auth *a, const char *authorization)
{
    const char *tok;
    size_t len;
    if (ghd_auth_bearer(authorization, &tok, &len) != 0)
        return GHD_EUNAUTH;
    struct entry given;
    entry_set(&given, tok, len, NULL, 0);
    pthread_rwlock_rdlock(&a->lock);
    int eq = a->metrics.len && ct_equal(&a->metrics, &given);
    pthread_rwlock_unlock(&a->lock);
    memset(&given, 0, sizeof(given));
    return eq ? 0 : GHD_EUNAUTH;
}

int ghd_auth_raw_check(const struct ghd_auth *a, unsigned allowed, unsigned perms,
                       const char *tenant, struct ghd_err *err)
{
    if (!allowed)
        return ghd_err_set(err, GHD_EFORBIDDEN, "raw CUDA modules are off: this server was "
                                                "started without --allow-raw-kernels");
    if (ghd_auth_enabled(a) && !(perms & GHD_PERM_RAW))
        return ghd_err_set(err, GHD_EFORBIDDEN,
                           "the token of tenant '%s' lacks the permission 'raw' (a third field "
                           "in its tokens line: 'token tenant raw')",
                           tenant ? tenant : "");
    return 0;
}

int ghd_auth_is_loopback(const char *ipv4)
{
    struct in_addr in;
    if (inet_pton(AF_INET, ipv4, &in) != 1)
        return 0;
    return (ntohl(in.s_addr) >> 24) == 127;
}
