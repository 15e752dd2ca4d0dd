/* The tiers' metric families (metrics_tiers.h). */
#include "metrics_tiers.h"

#include <stdio.h>

#include "prom_text.h"

/* One counter family by device and tier (host, disk) from a field of
 * struct ghd_tier_stats: `what` picks it. */
static void by_tier(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g, const char *name,
                    const char *help, int what)
{
    ghd_prom_family(t, name, "counter", help);
    for (unsigned i = 0; i < g->device_count && i < GHD_METRICS_DEVICES; i++) {
        const struct ghd_tier_stats *s = &g->devices[i].tiers;
        for (int k = GHD_TIER_HOST; k < GHD_TIER_COUNT; k++) {
            double v = what == 0   ? (double)s->evictions[k]
                       : what == 1 ? (double)s->evicted_bytes[k]
                       : what == 2 ? s->evict_s[k]
                       : what == 3 ? (double)s->page_ins[k]
                       : what == 4 ? (double)s->page_in_bytes[k]
                                   : s->page_in_s[k];
            ghd_strbuf_put(t, "%s{device=\"%u\",tier=\"%s\"} ", name, g->devices[i].index,
                           ghd_tier_name((enum ghd_tier)k));
            ghd_prom_number(t, v);
            ghd_strbuf_put(t, "\n");
        }
    }
}

void ghd_metrics_tiers_render(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g)
{
    by_tier(t, g, "gpuhttpd_tier_evictions_total",
            "Buffers moved out of the device (tier: where to; disk also counts moves from the "
            "host tier).", 0);
    by_tier(t, g, "gpuhttpd_tier_evicted_bytes_total", "Bytes of the buffers moved out.", 1);
    by_tier(t, g, "gpuhttpd_tier_evict_seconds_total", "Seconds spent moving buffers out.", 2);
    by_tier(t, g, "gpuhttpd_tier_page_ins_total",
            "Buffers brought back onto the device (tier: where from).", 3);
    by_tier(t, g, "gpuhttpd_tier_page_in_bytes_total", "Bytes of the buffers brought back.", 4);
    by_tier(t, g, "gpuhttpd_tier_page_in_seconds_total",
            "Seconds the copies back onto the device took (the room they needed is counted in "
            "the evictions' seconds).", 5);
    ghd_prom_family(t, "gpuhttpd_tier_failures_total", "counter",
                    "Moves between tiers that did not happen (a full tier, an I/O error).");
    for (unsigned i = 0; i < g->device_count && i < GHD_METRICS_DEVICES; i++)
        ghd_strbuf_put(t, "gpuhttpd_tier_failures_total{device=\"%u\"} %llu\n",
                       g->devices[i].index, (unsigned long long)g->devices[i].tiers.failures);
    ghd_prom_family(t, "gpuhttpd_tier_bytes", "gauge", "Bytes held in the host or disk tier.");
    ghd_strbuf_put(t, "gpuhttpd_tier_bytes{tier=\"host\"} %zu\n", g->host_tier_bytes);
    ghd_strbuf_put(t, "gpuhttpd_tier_bytes{tier=\"disk\"} %zu\n", g->disk_tier_bytes);
    ghd_prom_family(t, "gpuhttpd_tier_capacity_bytes", "gauge",
                    "Most bytes the host or disk tier may hold (0: no such tier).");
    ghd_strbuf_put(t, "gpuhttpd_tier_capacity_bytes{tier=\"host\"} %zu\n", g->host_tier_capacity);
    ghd_strbuf_put(t, "gpuhttpd_tier_capacity_bytes{tier=\"disk\"} %zu\n", g->disk_tier_capacity);
}
