/* The cache folder; see diskcache.h. An entry's file: "GHDC1\n", the
 * checksum (8 bytes), the part count (8), the key's length (8), each part's
 * length (8 each), the key, the parts; the checksum (FNV-1a) covers
 * everything after it. */
#include "diskcache.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/hash.h"

#define MAGIC "GHDC1\n"
#define PART_MAX ((uint64_t)256 << 20)

int ghd_diskcache_open(struct ghd_diskcache *c, const char *dir, size_t max_bytes,
                       struct ghd_err *err)
{
    memset(c, 0, sizeof(*c));
    c->max_bytes = max_bytes;
    if (!dir || !dir[0])
        return 0;
    snprintf(c->dir, sizeof(c->dir), "%s", dir);
    if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
        int rc = ghd_err_set(err, GHD_EINVAL, "--kernel-cache-dir %s: %s", c->dir,
                             strerror(errno));
        c->dir[0] = '\0';
        return rc;
    }
    return 0;
}

static void entry_path(const struct ghd_diskcache *c, const char *kind, const char *key,
                       char *buf, size_t len)
{
    uint64_t h = ghd_fnv1a(GHD_FNV_INIT, key, strlen(key));
    snprintf(buf, len, "%s/%016llx.%s", c->dir, (unsigned long long)h, kind);
}

static uint64_t checksum(uint64_t n, uint64_t klen, const uint64_t *lens, const char *key,
                         const void *const *parts)
{
    uint64_t sum = ghd_fnv1a(GHD_FNV_INIT, &n, 8);
    sum = ghd_fnv1a(sum, &klen, 8);
    sum = ghd_fnv1a(sum, lens, 8 * n);
    sum = ghd_fnv1a(sum, key, klen);
    for (uint64_t i = 0; i < n; i++)
        sum = ghd_fnv1a(sum, parts[i], lens[i]);
    return sum;
}

/* The entry's header and parts, or 0 when it is not whole and ours. */
static int read_entry(FILE *f, const char *key, void **parts, size_t *parts_len, unsigned n)
{
    char magic[6];
    uint64_t sum, count, klen, lens[GHD_DISKCACHE_PARTS];
    if (fread(magic, 1, 6, f) != 6 || memcmp(magic, MAGIC, 6) != 0 || fread(&sum, 8, 1, f) != 1 ||
        fread(&count, 8, 1, f) != 1 || count != n || fread(&klen, 8, 1, f) != 1 ||
        klen != strlen(key) || fread(lens, 8, n, f) != n)
        return 0;
    for (unsigned i = 0; i < n; i++)
        if (lens[i] > PART_MAX)
            return 0;
    char *k = malloc(klen + 1);
    int ok = k && fread(k, 1, klen, f) == klen && memcmp(k, key, klen) == 0;
    for (unsigned i = 0; ok && i < n; i++) {
        parts[i] = malloc(lens[i] + 1);
        ok = parts[i] && fread(parts[i], 1, lens[i], f) == lens[i];
        if (ok) {
            ((char *)parts[i])[lens[i]] = '\0';
            parts_len[i] = lens[i];
        }
    }
    /* corrupt, or another key with this file name: as if absent */
    ok = ok && fgetc(f) == EOF && checksum(n, klen, lens, k, (const void *const *)parts) == sum;
    free(k);
    return ok;
}

int ghd_diskcache_get(const struct ghd_diskcache *c, const char *kind, const char *key,
                      void **parts, size_t *parts_len, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        parts[i] = NULL;
    if (!c->dir[0] || n > GHD_DISKCACHE_PARTS)
        return 0;
    char path[320];
    entry_path(c, kind, key, path, sizeof(path));
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int found = read_entry(f, key, parts, parts_len, n);
    fclose(f);
    for (unsigned i = 0; !found && i < n; i++) {
        free(parts[i]);
        parts[i] = NULL;
    }
    return found;
}

struct dir_file {
    char name[64];
    time_t mtime;
    off_t size;
};

static int by_age(const void *a, const void *b)
{
    const struct dir_file *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* "<16 hex digits>.<kind>": an entry (temporary files start with a dot). */
static int is_entry(const char *name)
{
    size_t len = strlen(name);
    if (len < 18 || len > 40 || name[16] != '.')
        return 0;
    for (int i = 0; i < 16; i++)
        if (!strchr("0123456789abcdef", name[i]))
            return 0;
    return 1;
}

/* Removes the oldest entries until the folder holds at most max_bytes. */
static void trim(const struct ghd_diskcache *c)
{
    DIR *d = opendir(c->dir);
    if (!d)
        return;
    struct dir_file *files = NULL;
    size_t n = 0, cap = 0;
    off_t total = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_entry(de->d_name))
            continue;
        char path[340];
        struct stat st;
        int plen = snprintf(path, sizeof(path), "%s/%s", c->dir, de->d_name);
        if (plen < 0 || (size_t)plen >= sizeof(path) || stat(path, &st) != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            struct dir_file *nf = realloc(files, cap * sizeof(*nf));
            if (!nf)
                break;
            files = nf;
        }
        int nlen = snprintf(files[n].name, sizeof(files[n].name), "%s", de->d_name);
        if (nlen < 0 || (size_t)nlen >= sizeof(files[n].name))
            continue;
        files[n].mtime = st.st_mtime;
        files[n].size = st.st_size;
        total += st.st_size;
        n++;
    }
    closedir(d);
    if (n)
        qsort(files, n, sizeof(*files), by_age);
    for (size_t i = 0; i < n && (size_t)total > c->max_bytes; i++) {
        char path[340];
        snprintf(path, sizeof(path), "%s/%s", c->dir, files[i].name);
        if (unlink(path) == 0)
            total -= files[i].size;
    }
    free(files);
}

void ghd_diskcache_put(const struct ghd_diskcache *c, const char *kind, const char *key,
                       const void *const *parts, const size_t *parts_len, unsigned n)
{
    if (!c->dir[0] || n > GHD_DISKCACHE_PARTS)
        return;
    char path[320], tmp[340];
    entry_path(c, kind, key, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s/.tmp-XXXXXX", c->dir);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return;
    uint64_t count = n, klen = strlen(key), lens[GHD_DISKCACHE_PARTS];
    for (unsigned i = 0; i < n; i++)
        lens[i] = parts_len[i];
    uint64_t sum = checksum(count, klen, lens, key, parts);
    FILE *f = fdopen(fd, "wb");
    int ok = f && fwrite(MAGIC, 1, 6, f) == 6 && fwrite(&sum, 8, 1, f) == 1 &&
             fwrite(&count, 8, 1, f) == 1 && fwrite(&klen, 8, 1, f) == 1 &&
             fwrite(lens, 8, n, f) == n && fwrite(key, 1, klen, f) == klen;
    for (unsigned i = 0; ok && i < n; i++)
        ok = lens[i] == 0 || fwrite(parts[i], 1, lens[i], f) == lens[i];
    ok = ok && fflush(f) == 0 && fsync(fd) == 0;
    if (f)
        ok &= fclose(f) == 0;
    else
        close(fd);
    if (ok && rename(tmp, path) == 0)
        trim(c);
    else
        unlink(tmp);
}
