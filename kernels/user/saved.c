/* A checked definition as the cache folder keeps it: struct ghd_udef's own
 * bytes (its node pointer cleared) and its nodes. What is read back is
 * checked again for what the interpreter and the code generator rely on
 * (every index in range, every tree finite), so an entry that is not one
 * this build wrote is refused rather than walked. */
#include "define.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

void ghd_udef_save(const struct ghd_udef *d, struct ghd_udef *head)
{
    memcpy(head, d, sizeof(*head)); /* padding too: the bytes are hashed */
    head->nodes = NULL;
    head->cap = 0;
}

static int text_ok(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

static int type_ok(int t, char ph)
{
    return (t == GHD_UT_NONE && (ph == 0 || (ph >= 'A' && ph <= 'Z'))) ||
           (t >= 0 && t < GHD_UT_COUNT && ph == 0);
}

/* A symbol that a NAME, INDEX or LEN node or a statement may name. */
static int sym_ok(const struct ghd_udef *d, int sym)
{
    return (sym >= 0 && sym < d->nparams) || (sym >= GHD_USYM_I && sym <= GHD_USYM_B) ||
           (sym >= GHD_USYM_LOCAL0 && sym < GHD_USYM_LOCAL0 + d->nlocals);
}

/* The kids an operation takes. */
static int arity(const struct ghd_unode *n)
{
    switch (n->op) {
    case GHD_UN_INDEX: case GHD_UN_CAST: case GHD_UN_UNARY:
        return 1;
    case GHD_UN_BINARY:
        return 2;
    case GHD_UN_COND:
        return 3;
    case GHD_UN_CALL:
        return ghd_ufn_table[n->sub].arity;
    default:
        return 0;
    }
}

/* Each kid in range and shallower than its parent: no node is its own
 * ancestor, so every walk ends. */
static int node_ok(const struct ghd_udef *d, const struct ghd_unode *n)
{
    if (n->op < GHD_UN_INT || n->op > GHD_UN_COND || n->depth < 1 ||
        (unsigned)n->depth > d->max_depth ||
        (n->op == GHD_UN_CALL && (n->sub < 0 || n->sub >= GHD_UFN_COUNT)) ||
        n->nkid != arity(n))
        return 0;
    for (int k = 0; k < n->nkid; k++)
        if (n->kid[k] < 0 || n->kid[k] >= d->nnodes || d->nodes[n->kid[k]].depth >= n->depth)
            return 0;
    switch (n->op) {
    case GHD_UN_NAME:
        return sym_ok(d, n->sym);
    case GHD_UN_INDEX: case GHD_UN_LEN:
        return n->sym >= 0 && n->sym < d->nparams;
    case GHD_UN_CAST:
        return type_ok(n->sub, n->ph);
    default:
        return 1;
    }
}

/* A statement assigns an output or a local. */
static int target_ok(const struct ghd_udef *d, int t)
{
    return (t >= d->nin && t < d->nparams) ||
           (t >= GHD_USYM_LOCAL0 && t < GHD_USYM_LOCAL0 + d->nlocals);
}

static int letters_ok(const char *s)
{
    for (; *s; s++)
        if (*s < 'A' || *s > 'Z')
            return 0;
    return 1;
}

static int root_ok(const struct ghd_udef *d, int node)
{
    return node >= 0 && node < d->nnodes;
}

static int tree_ok(const struct ghd_udef *d)
{
    if (!text_ok(d->name, sizeof(d->name)) || !text_ok(d->placeholders, sizeof(d->placeholders)) ||
        !letters_ok(d->placeholders) ||
        (d->kind != GHD_UK_ELEMENTWISE && d->kind != GHD_UK_REDUCTION) || d->nparams < 1 ||
        d->nparams > GHD_U_MAX_PARAMS || d->nin < 0 || d->nin > d->nparams || d->nstmts < 0 ||
        d->nstmts > GHD_U_MAX_STMTS || d->nlocals < 0 || d->nlocals > GHD_U_MAX_LOCALS)
        return 0;
    for (int i = 0; i < d->nparams; i++)
        if (!text_ok(d->params[i].name, sizeof(d->params[i].name)) ||
            !type_ok(d->params[i].type, d->params[i].ph))
            return 0;
    for (int i = 0; i < d->nlocals; i++)
        if (!text_ok(d->locals[i], sizeof(d->locals[i])))
            return 0;
    for (int i = 0; i < d->nnodes; i++)
        if (!node_ok(d, &d->nodes[i]))
            return 0;
    for (int i = 0; i < d->nstmts; i++)
        if (!target_ok(d, d->stmts[i].target) || !root_ok(d, d->stmts[i].expr) ||
            !type_ok(d->stmts[i].decl_type, d->stmts[i].decl_ph))
            return 0;
    if (d->kind == GHD_UK_REDUCTION)
        return root_ok(d, d->map) && root_ok(d, d->reduce) && root_ok(d, d->identity) &&
               type_ok(d->acc_type, d->acc_ph);
    return 1;
}

int ghd_udef_load(const void *head, size_t head_len, const void *nodes, size_t nodes_len,
                  struct ghd_udef *d)
{
    memset(d, 0, sizeof(*d));
    if (head_len != sizeof(*d) || nodes_len % sizeof(struct ghd_unode) != 0)
        return GHD_EINVAL;
    memcpy(d, head, sizeof(*d));
    d->nodes = NULL;
    d->cap = 0;
    if (d->nnodes < 0 || d->nnodes > GHD_U_MAX_NODES ||
        (size_t)d->nnodes != nodes_len / sizeof(struct ghd_unode)) {
        d->nnodes = 0;
        return GHD_EINVAL;
    }
    if (d->nnodes) {
        if (!(d->nodes = malloc(nodes_len))) {
            d->nnodes = 0;
            return GHD_ENOHOSTMEM;
        }
        memcpy(d->nodes, nodes, nodes_len);
        d->cap = d->nnodes;
    }
    if (!tree_ok(d)) {
        ghd_udef_clear(d);
        return GHD_EINVAL;
    }
    return 0;
}
