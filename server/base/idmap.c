#include "idmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static uint64_t hash_id(const char *id)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, 64-bit */
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 1099511628211ULL;
    return h;
}

int ghd_idmap_init(struct ghd_idmap *m, size_t min_slots)
{
    size_t slots = 16;
    while (slots < min_slots && slots < ((size_t)1 << 30))
        slots *= 2;
    m->slots = calloc(slots, sizeof(*m->slots));
    if (!m->slots)
        return GHD_ENOHOSTMEM;
    m->mask = slots - 1;
    m->count = 0;
    return 0;
}

void ghd_idmap_destroy(struct ghd_idmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->mask = 0;
    m->count = 0;
}

static void grow(struct ghd_idmap *m)
{
    size_t slots = (m->mask + 1) * 2;
    struct ghd_idmap_node **grown = calloc(slots, sizeof(*grown));
    if (!grown)
        return; /* chains just get longer */
    for (size_t i = 0; i <= m->mask; i++) {
        for (struct ghd_idmap_node *n = m->slots[i], *next; n; n = next) {
            next = n->next;
            struct ghd_idmap_node **slot = &grown[hash_id(n->id) & (slots - 1)];
            n->next = *slot;
            *slot = n;
        }
    }
    free(m->slots);
    m->slots = grown;
    m->mask = slots - 1;
}

void ghd_idmap_insert(struct ghd_idmap *m, struct ghd_idmap_node *n, const char *id)
{
    if (m->count >= m->mask + 1)
        grow(m);
    n->id = id;
    struct ghd_idmap_node **slot = &m->slots[hash_id(id) & m->mask];
    n->next = *slot;
    *slot = n;
    m->count++;
}

void ghd_idmap_remove(struct ghd_idmap *m, struct ghd_idmap_node *n)
{
    struct ghd_idmap_node **link = &m->slots[hash_id(n->id) & m->mask];
    while (*link != n)
        link = &(*link)->next;
    *link = n->next;
    n->next = NULL;
    m->count--;
}

static struct ghd_idmap_node *match(struct ghd_idmap_node *n, const char *id)
{
    while (n && strcmp(n->id, id) != 0)
        n = n->next;
    return n;
}

struct ghd_idmap_node *ghd_idmap_find(const struct ghd_idmap *m, const char *id)
{
    return match(m->slots[hash_id(id) & m->mask], id);
}

struct ghd_idmap_node *ghd_idmap_find_next(const struct ghd_idmap_node *n)
{
    return match(n->next, n->id);
}
