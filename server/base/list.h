#ifndef GHD_BASE_LIST_H
#define GHD_BASE_LIST_H

#include <stddef.h>

/* One intrusive doubly linked list: the owner embeds a struct ghd_list_node
 * and is found back from it with ghd_container_of. The head keeps both ends
 * (NULL-terminated, no sentinel) so a list is also a FIFO. Nothing here
 * allocates or locks: the owner of the list does its own locking.
 *
 *     struct job { struct ghd_list_node link; ... };
 *     for (struct ghd_list_node *n = l.first; n; n = n->next)
 *         use(ghd_container_of(n, struct job, link));
 */

struct ghd_list_node {
    struct ghd_list_node *prev, *next;
};

struct ghd_list {
    struct ghd_list_node *first, *last;
};

/* The struct of type `type` whose member `member` is at ptr. */
#define ghd_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* The owner of node n, or NULL when n is NULL (ends of a walk). */
#define ghd_list_entry(n, type, member) \
    ((n) ? ghd_container_of((n), type, member) : (type *)NULL)

static inline void ghd_list_init(struct ghd_list *l)
{
    l->first = l->last = NULL;
}

static inline int ghd_list_empty(const struct ghd_list *l)
{
    return l->first == NULL;
}

static inline void ghd_list_push_back(struct ghd_list *l, struct ghd_list_node *n)
{
    n->next = NULL;
    n->prev = l->last;
    if (l->last)
        l->last->next = n;
    else
        l->first = n;
    l->last = n;
}

static inline void ghd_list_push_front(struct ghd_list *l, struct ghd_list_node *n)
{
    n->prev = NULL;
    n->next = l->first;
    if (l->first)
        l->first->prev = n;
    else
        l->last = n;
    l->first = n;
}

/* pre: n is on l. Its links are cleared, so a removed node reads as off any
 * list (both NULL) unless it was l's only node; use ghd_list_empty for l. */
static inline void ghd_list_remove(struct ghd_list *l, struct ghd_list_node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        l->first = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->last = n->prev;
    n->prev = n->next = NULL;
}

/* The first node, taken off l; NULL when l is empty. */
static inline struct ghd_list_node *ghd_list_pop_front(struct ghd_list *l)
{
    struct ghd_list_node *n = l->first;
    if (n)
        ghd_list_remove(l, n);
    return n;
}

#endif
