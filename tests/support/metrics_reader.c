/* Reading a series out of a /metrics text (metrics_reader.h). */
#include "metrics_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int support_metric_find(const char *text, const char *series, double *out)
{
    char key[256];
    snprintf(key, sizeof(key), "\n%s ", series);
    const char *at = text ? strstr(text, key) : NULL;
    if (!at)
        return -1;
    *out = strtod(at + strlen(key), NULL);
    return 0;
}
