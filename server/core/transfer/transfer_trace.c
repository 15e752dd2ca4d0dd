/* Copies as spans of a sampled request (transfer_trace.h). */
#include "transfer_internal.h"

#include "base/clock.h"
#include "base/trace_span.h"

static const char *copy_name(const struct ghd_transfer *t)
{
    return t->dir == GHD_TRANSFER_UPLOAD ? "copy h2d" : "copy d2h";
}

static int copy_parent(const struct ghd_transfer *t)
{
    return t->dir == GHD_TRANSFER_UPLOAD ? GHD_SPAN_BODY : GHD_SPAN_REPLY;
}

static void record(struct ghd_transfer *t, uint64_t start, uint64_t end, uint64_t bytes)
{
    int slot = ghd_trace_span(t->trace, copy_name(t), copy_parent(t), start, end);
    ghd_trace_attr_num(t->trace, slot, "gpuhttpd.bytes", (int64_t)bytes);
    ghd_trace_attr_num(t->trace, slot, "gpuhttpd.device", (int64_t)t->rt->index);
}

void ghd_transfer_trace_begin(struct ghd_transfer *t, int i, struct ghd_event *done,
                              uint64_t bytes)
{
    struct ghd_copy_span *s = &t->copy_span[i];
    struct ghd_device *dev = &t->rt->dev;
    s->open = 0;
    if (!s->begin && dev->ops->event_new(dev, &s->begin, NULL) != 0)
        return; /* no event: this copy goes untraced */
    if (dev->ops->event_record(dev, s->begin, t->stream, NULL) != 0)
        return;
    s->done = done;
    s->queued_ns = ghd_clock_ns();
    s->bytes = bytes;
    s->open = 1;
}

void ghd_transfer_trace_end(struct ghd_transfer *t, int i)
{
    struct ghd_copy_span *s = &t->copy_span[i];
    struct ghd_device *dev = &t->rt->dev;
    float ms = 0;
    if (!s->open)
        return;
    s->open = 0;
    if (dev->ops->event_elapsed(dev, s->begin, s->done, &ms, NULL) != 0 || ms < 0)
        return;
    record(t, s->queued_ns, s->queued_ns + (uint64_t)((double)ms * 1e6), s->bytes);
}

void ghd_transfer_trace_now(struct ghd_transfer *t, uint64_t start_ns, uint64_t bytes)
{
    record(t, start_ns, ghd_clock_ns(), bytes);
}

void ghd_transfer_trace_free(struct ghd_transfer *t)
{
    struct ghd_device *dev = &t->rt->dev;
    for (int i = 0; i < 2; i++) {
        ghd_transfer_trace_end(t, i); /* the stream is idle: every copy has completed */
        if (t->copy_span[i].begin)
            dev->ops->event_free(dev, t->copy_span[i].begin);
    }
    ghd_trace_unref(t->trace);
    t->trace = NULL;
}
