#include "owner.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "error.h"

int ghd_owner_init(struct ghd_owner *o, unsigned instance)
{
    GHD_ASSERT(instance <= GHD_OWNER_INSTANCE_MAX);
    unsigned char raw[GHD_OWNER_BOOT_LEN / 2];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return GHD_EINTERNAL;
    o->instance = instance;
    snprintf(o->boot, sizeof(o->boot), "%02x%02x%02x%02x", raw[0], raw[1], raw[2], raw[3]);
    snprintf(o->prefix, sizeof(o->prefix), "i%04u-%s-", instance, o->boot);
    return 0;
}

unsigned ghd_owner_from_hostname(const char *hostname)
{
    size_t n = strlen(hostname), start = n;
    while (start > 0 && hostname[start - 1] >= '0' && hostname[start - 1] <= '9')
        start--;
    if (start == n || n - start > 4)
        return 0;
    unsigned v = 0;
    for (size_t i = start; i < n; i++)
        v = v * 10 + (unsigned)(hostname[i] - '0');
    return v;
}

static int is_digits(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return 0;
    return 1;
}

int ghd_owner_check(const struct ghd_owner *o, const char *id, struct ghd_err *err)
{
    /* Not of the prefix's form: an id no instance made. */
    if (strlen(id) <= GHD_OWNER_PREFIX_LEN || id[0] != 'i' || id[5] != '-' || id[14] != '-' ||
        !is_digits(id + 1, 4, "0123456789") ||
        !is_digits(id + 6, GHD_OWNER_BOOT_LEN, "0123456789abcdef"))
        return 0;
    if (memcmp(id, o->prefix, GHD_OWNER_PREFIX_LEN) == 0)
        return 0;
    unsigned instance = (unsigned)((id[1] - '0') * 1000 + (id[2] - '0') * 100 +
                                   (id[3] - '0') * 10 + (id[4] - '0'));
    if (instance == o->instance)
        return ghd_err_set(err, GHD_EGONE,
                           "created by an earlier start of instance %u (boot %.8s; this is boot "
                           "%s); buffers do not survive a restart",
                           instance, id + 6, o->boot);
    return ghd_err_set(err, GHD_EMISDIRECTED,
                       "owned by instance %u, and this is instance %u: send it to instance %u "
                       "(a proxy routes on the id's prefix i%04u-)",
                       instance, o->instance, instance, instance);
}
