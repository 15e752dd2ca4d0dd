#include "prom_text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void ghd_prom_label(struct ghd_strbuf *t, const char *v)
{
    for (; v && *v; v++) {
        if (*v == '\\')
            ghd_strbuf_put(t, "\\\\");
        else if (*v == '"')
            ghd_strbuf_put(t, "\\\"");
        else if (*v == '\n')
            ghd_strbuf_put(t, "\\n");
        else
            ghd_strbuf_put(t, "%c", *v);
    }
}

void ghd_prom_family(struct ghd_strbuf *t, const char *name, const char *type, const char *help)
{
    ghd_strbuf_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void ghd_prom_number(struct ghd_strbuf *t, double v)
{
    if (v < 9e15 && v > -9e15 && v == (double)(int64_t)v) {
        ghd_strbuf_put(t, "%lld", (long long)v);
        return;
    }
    char s[32];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    ghd_strbuf_put(t, "%s", s);
}
