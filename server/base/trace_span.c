/* A sampled request's spans. Allocated only for sampled requests; the
 * slots are initialised as they are claimed, so a trace costs what it
 * records. */
#include "trace_span.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

static int64_t wall_offset(void)
{
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t mono = ghd_clock_ns();
    return (int64_t)((uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec) - (int64_t)mono;
}

struct ghd_trace *ghd_trace_new(void (*sink)(void *sink_ctx, struct ghd_trace *tr), void *sink_ctx,
                               const struct ghd_trace_ctx *ctx)
{
    struct ghd_trace *tr = malloc(sizeof(*tr));
    if (!tr)
        return NULL;
    atomic_init(&tr->refs, 1);
    tr->sink = sink;
    tr->sink_ctx = sink_ctx;
    tr->ctx = *ctx;
    tr->wall_offset_ns = wall_offset();
    tr->phase_end_ns = ghd_clock_ns();
    atomic_init(&tr->next, GHD_SPAN_FIXED);
    atomic_init(&tr->dropped, 0);
    atomic_init(&tr->more, NULL);
    for (int i = 0; i < GHD_SPAN_FIXED; i++) {
        tr->spans[i].name = NULL;
        tr->spans[i].nattr = 0;
        tr->spans[i].parent = i == GHD_SPAN_REQUEST ? -1 : GHD_SPAN_REQUEST;
        if (i != GHD_SPAN_REQUEST)
            ghd_trace_random(tr->spans[i].id, 8);
    }
    memcpy(tr->spans[GHD_SPAN_REQUEST].id, ctx->span_id, 8);
    tr->spans[GHD_SPAN_REQUEST].start_ns = tr->phase_end_ns;
    return tr;
}

void ghd_trace_ref(struct ghd_trace *tr)
{
    atomic_fetch_add(&tr->refs, 1);
}

void ghd_trace_unref(struct ghd_trace *tr)
{
    if (!tr || atomic_fetch_sub(&tr->refs, 1) != 1)
        return;
    if (tr->sink)
        tr->sink(tr->sink_ctx, tr); /* steals it */
    else
        ghd_trace_free(tr);
}

void ghd_trace_free(struct ghd_trace *tr)
{
    if (!tr)
        return;
    free(atomic_load(&tr->more));
    free(tr);
}

/* Slot i, allocating the overflow slots when i is the first to need them
 * (two threads may race: one allocation wins, the other is freed). */
static struct ghd_span *slot_at(struct ghd_trace *tr, unsigned i)
{
    if (i < GHD_TRACE_INLINE_SPANS)
        return &tr->spans[i];
    struct ghd_span *more = atomic_load(&tr->more);
    if (!more) {
        struct ghd_span *mine = malloc(sizeof(*mine) *
                                       (GHD_TRACE_MAX_SPANS - GHD_TRACE_INLINE_SPANS));
        if (!mine)
            return NULL;
        if (atomic_compare_exchange_strong(&tr->more, &more, mine))
            more = mine;
        else
            free(mine); /* `more` is the winner's */
    }
    return &more[i - GHD_TRACE_INLINE_SPANS];
}

const struct ghd_span *ghd_trace_slot_const(const struct ghd_trace *tr, int slot)
{
    if (slot < 0 || slot >= GHD_TRACE_MAX_SPANS)
        return NULL;
    if (slot < GHD_TRACE_INLINE_SPANS)
        return &tr->spans[slot];
    struct ghd_span *more = atomic_load(&((struct ghd_trace *)tr)->more);
    return more ? &more[slot - GHD_TRACE_INLINE_SPANS] : NULL;
}

unsigned ghd_trace_used(const struct ghd_trace *tr)
{
    unsigned used = atomic_load(&((struct ghd_trace *)tr)->next);
    return used < GHD_TRACE_MAX_SPANS ? used : GHD_TRACE_MAX_SPANS;
}

void ghd_trace_phase(struct ghd_trace *tr, enum ghd_span_slot slot, const char *name)
{
    struct ghd_span *s = &tr->spans[slot];
    uint64_t now = ghd_clock_ns();
    s->name = name;
    s->start_ns = slot == GHD_SPAN_REQUEST ? s->start_ns : tr->phase_end_ns;
    s->end_ns = now;
    if (slot != GHD_SPAN_REQUEST)
        tr->phase_end_ns = now;
}

int ghd_trace_span(struct ghd_trace *tr, const char *name, int parent, uint64_t start_ns,
                   uint64_t end_ns)
{
    unsigned i = atomic_fetch_add(&tr->next, 1);
    struct ghd_span *s = i < GHD_TRACE_MAX_SPANS ? slot_at(tr, i) : NULL;
    if (!s) {
        atomic_fetch_add(&tr->dropped, 1);
        return -1;
    }
    s->name = name;
    s->parent = parent;
    s->start_ns = start_ns;
    s->end_ns = end_ns < start_ns ? start_ns : end_ns;
    s->nattr = 0;
    ghd_trace_random(s->id, 8);
    return (int)i;
}

static struct ghd_span_attr *attr_slot(struct ghd_trace *tr, int slot, const char *key)
{
    struct ghd_span *s = (struct ghd_span *)ghd_trace_slot_const(tr, slot);
    if (!s || s->nattr >= GHD_SPAN_MAX_ATTRS)
        return NULL;
    struct ghd_span_attr *a = &s->attr[s->nattr++];
    a->key = key;
    return a;
}

void ghd_trace_attr_str(struct ghd_trace *tr, int slot, const char *key, const char *value)
{
    struct ghd_span_attr *a = attr_slot(tr, slot, key);
    if (a) {
        a->is_num = 0;
        snprintf(a->str, sizeof(a->str), "%s", value ? value : "");
    }
}

void ghd_trace_attr_num(struct ghd_trace *tr, int slot, const char *key, int64_t value)
{
    struct ghd_span_attr *a = attr_slot(tr, slot, key);
    if (a) {
        a->is_num = 1;
        a->num = value;
    }
}
