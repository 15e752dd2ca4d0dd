#ifndef GHD_CORE_METRICS_PROM_TEXT_H
#define GHD_CORE_METRICS_PROM_TEXT_H

#include "base/strbuf.h"

/* The pieces of Prometheus' text exposition (format 0.0.4) that the
 * metrics' families are written with, into a base/strbuf.h string (plain
 * text goes through ghd_strbuf_put). */

/* A label value with \, " and newline escaped, as the format requires; NULL
 * writes nothing. */
void ghd_prom_label(struct ghd_strbuf *t, const char *v);
/* The shortest decimal form that reads back as the same double, as
 * Prometheus' own clients write floats. */
void ghd_prom_number(struct ghd_strbuf *t, double v);
/* The HELP and TYPE lines that open a family. */
void ghd_prom_family(struct ghd_strbuf *t, const char *name, const char *type, const char *help);

#endif
