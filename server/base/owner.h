#ifndef GHD_BASE_OWNER_H
#define GHD_BASE_OWNER_H

#include <stddef.h>

#include <jansson.h>

#include "err.h"

/* Who made an id. Several instances serve one API behind a proxy; each
 * buffer, run and module lives in the memory of the one that created it, so
 * its id starts with that instance's number and the boot (a random value
 * drawn at each start) in a fixed-width prefix a proxy can match:
 *
 *     i0003-5f2c9a1e-<the rest>
 *
 * 'i', the instance as 4 decimal digits (0..9999), '-', the boot as 8
 * lower-case hex digits, '-'. What follows is the id proper (128 random bits
 * for buffers and runs), so ids stay as unguessable as before; clients treat
 * the whole id as opaque. */

#define GHD_OWNER_INSTANCE_MAX 9999
#define GHD_OWNER_BOOT_LEN 8
#define GHD_OWNER_PREFIX_LEN 15 /* "i0003-5f2c9a1e-" */

struct ghd_owner {
    unsigned instance;
    char boot[GHD_OWNER_BOOT_LEN + 1];
    char prefix[GHD_OWNER_PREFIX_LEN + 1];
};

/* Draws a boot from the kernel's CSPRNG and forms the prefix.
 * pre: instance <= GHD_OWNER_INSTANCE_MAX. 0, or GHD_EINTERNAL when no
 * random bytes could be read. */
int ghd_owner_init(struct ghd_owner *o, unsigned instance);

/* The instance named by the trailing decimal digits of `hostname`, as a
 * StatefulSet names its pods (gpuhttpd-3 -> 3); 0 when there are none or the
 * number is over GHD_OWNER_INSTANCE_MAX. */
unsigned ghd_owner_from_hostname(const char *hostname);

/* The instance `id`'s owner prefix names, or -1 when it has none. */
int ghd_owner_instance_of(const char *id);

/* Whether `id` may be this instance's: 0 when its prefix is this instance's
 * and boot (or it has no prefix at all, which never exists: the caller then
 * answers 404). GHD_EGONE when it names this instance and another boot,
 * GHD_EMISDIRECTED when it names another instance, each with a detail that
 * says so in `err`. */
int ghd_owner_check(const struct ghd_owner *o, const char *id, struct ghd_err *err);

/* ghd_owner_check over a request body that names ids anywhere in it (a
 * run's arguments, a copy's source): every string of the id form (an owner
 * prefix, then lower-case hex digits) counts, but for the values of
 * "label" members (a client's own text). GHD_EUNPROC when they name
 * more than one instance (a run over buffers of two instances cannot run on
 * either), else the first refusal of ghd_owner_check (421 naming the owner,
 * 410), else 0. */
int ghd_owner_check_json(const struct ghd_owner *o, const json_t *body, struct ghd_err *err);

#endif
