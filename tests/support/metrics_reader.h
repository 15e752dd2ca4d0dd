#ifndef GHD_TESTS_SUPPORT_METRICS_READER_H
#define GHD_TESTS_SUPPORT_METRICS_READER_H

/* The metrics reader every suite uses: one series of a /metrics text
 * ("name{labels}", as the exposition writes it, at the start of a line).
 * support_metric and support_metric_has fetch the text and read it through this. */

/* 0 and *out set to the series' value, or -1 when the text has no such
 * series (or is NULL). */
int support_metric_find(const char *text, const char *series, double *out);

#endif
