#ifndef GHD_BASE_IDMAP_H
#define GHD_BASE_IDMAP_H

#include <stddef.h>

/* One chained hash map from a string id to an intrusive node: the owner
 * embeds a struct ghd_idmap_node (found back with ghd_container_of from
 * base/list.h) and keeps the id string alive while the node is in the map.
 * FNV-1a over the whole id; power-of-two slots that double when the map
 * holds more nodes than slots (if that allocation fails, chains just get
 * longer). Several nodes may share an id (one per tenant, say): find
 * returns the first, find_next the others. No locking: the caller's. */

struct ghd_idmap_node {
    struct ghd_idmap_node *next; /* the slot's chain */
    const char *id;
};

struct ghd_idmap {
    struct ghd_idmap_node **slots;
    size_t mask; /* slot count - 1 */
    size_t count;
};

/* At least min_slots slots (rounded up to a power of two, at least 16).
 * 0, or GHD_ENOHOSTMEM. */
int ghd_idmap_init(struct ghd_idmap *m, size_t min_slots);

/* Frees the slots; the nodes are the owners'. */
void ghd_idmap_destroy(struct ghd_idmap *m);

/* Adds n under id (kept by pointer: it must outlive the entry). */
void ghd_idmap_insert(struct ghd_idmap *m, struct ghd_idmap_node *n, const char *id);

/* pre: n is in m. */
void ghd_idmap_remove(struct ghd_idmap *m, struct ghd_idmap_node *n);

/* The first node with this id, or NULL. */
struct ghd_idmap_node *ghd_idmap_find(const struct ghd_idmap *m, const char *id);

/* The next node after n with n's id, or NULL. */
struct ghd_idmap_node *ghd_idmap_find_next(const struct ghd_idmap_node *n);

#endif
