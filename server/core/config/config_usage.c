/* --help, and the names an option goes by besides its flag (config_spec.h):
 * what config.c asks of it, never the other way round. */
#include "config_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* See config_spec.h. */
void ghd_config_env_name(const char *flag, char *buf, size_t len)
{
    size_t i = 0;
    i += (size_t)snprintf(buf, len, "GHD_");
    for (; *flag && i + 1 < len; flag++)
        buf[i++] = *flag == '-' ? '_' : (char)toupper((unsigned char)*flag);
    buf[i] = '\0';
}

/* See config_spec.h. */
const char *ghd_config_placeholder(const struct option_spec *sp)
{
    static const struct {
        const char *flag, *arg;
    } strings[] = {
        {"bind", "ADDR"},  {"instance", "auto|N"},     {"log-level", "LEVEL"}, {"log-format", "text|json"},
        {"port-file", "FILE"},  {"docs-dir", "DIR"},    {"tokens-file", "FILE"},
        {"tokens", "LIST"},     {"metrics-token", "TOKEN"}, {"tls-cert", "FILE"},
        {"tls-key", "FILE"},    {"on-device-loss", "exit|stay"}, {"devices", "all|LIST"},
        {"device", "N"},        {"placement", "most-free|round-robin"}, {"ready-needs", "any|all"},
        {"disk-tier", "DIR"},
        {"metrics-token-file", "FILE"}, {"otlp-endpoint", "URL"}, {"trace-sample", "RATIO"},
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        if (strcmp(sp->flag, strings[i].flag) == 0)
            return strings[i].arg;
    switch (sp->type) {
    case OPT_UINT: return "N";
    case OPT_SIZE: return "BYTES";
    case OPT_SIZE_OR_PERCENT: return "BYTES|N%";
    case OPT_BACKEND: return "auto|cuda|host";
    case OPT_FLAG: return NULL;
    case OPT_STRING: break;
    }
    return "TEXT";
}

#define USAGE_WIDTH 100
#define USAGE_INDENT 30

/* Writes `text` from column USAGE_INDENT, wrapped at USAGE_WIDTH; `col` is
 * the column the line is at now. */
static void usage_wrapped(FILE *out, int col, const char *text)
{
    if (col > USAGE_INDENT - 1) {
        fputc('\n', out);
        col = 0;
    }
    fprintf(out, "%*s", USAGE_INDENT - col, "");
    col = USAGE_INDENT;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (col > USAGE_INDENT && col + 1 + (int)word > USAGE_WIDTH) {
            fprintf(out, "\n%*s", USAGE_INDENT, "");
            col = USAGE_INDENT;
        } else if (col > USAGE_INDENT) {
            fputc(' ', out);
            col++;
        }
        fwrite(text, 1, word, out);
        col += (int)word;
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', out);
}

void ghd_config_usage_write(FILE *out, const struct option_spec *specs, size_t n)
{
    fprintf(out, "usage: gpuhttpd [options]\n\nEvery option also reads the environment "
                 "variable shown; a flag wins.\n\n");
    for (size_t i = 0; i < n; i++) {
        const struct option_spec *sp = &specs[i];
        char env[64], text[512];
        ghd_config_env_name(sp->flag, env, sizeof(env));
        const char *arg = ghd_config_placeholder(sp);
        int col = fprintf(out, "  --%s%s%s", sp->flag, arg ? "=" : "", arg ? arg : "");
        snprintf(text, sizeof(text), "%s (default: %s; env: %s)", sp->help,
                 *sp->def ? sp->def : "none", env);
        usage_wrapped(out, col, text);
    }
    usage_wrapped(out, fprintf(out, "  --help"), "print this help and exit");
    usage_wrapped(out, fprintf(out, "  --version"), "print the version and exit");
}
