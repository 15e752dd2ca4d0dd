#ifndef GHD_CORE_CONFIG_CONFIG_SPEC_H
#define GHD_CORE_CONFIG_CONFIG_SPEC_H

#include <stddef.h>
#include <stdio.h>

/* The option table, private to the configuration: config.c holds it and
 * parses with it; config_usage.c, below config.c, writes --help from the
 * table it is handed and names each option's environment variable and
 * placeholder for both. */

enum opt_type { OPT_UINT, OPT_SIZE, OPT_SIZE_OR_PERCENT, OPT_STRING, OPT_BACKEND, OPT_FLAG };

struct option_spec {
    const char *flag; /* long flag without dashes; env is GHD_ + upper-cased flag */
    enum opt_type type;
    size_t offset;
    size_t aux_offset; /* OPT_SIZE_OR_PERCENT: where the percent goes */
    unsigned long long min, max;
    const char *def;
    const char *help;
};

/* --help: every option of specs[0..n) with its placeholder, help, default
 * and environment variable, wrapped to 100 columns, then --help and
 * --version. */
void ghd_config_usage_write(FILE *out, const struct option_spec *specs, size_t n);
/* The environment variable of `flag`: GHD_ and the flag upper-cased, '-'
 * as '_'. */
void ghd_config_env_name(const char *flag, char *buf, size_t len);
/* --help's placeholder for an option's value ("N", "BYTES", "FILE"...),
 * NULL for a flag that takes none. */
const char *ghd_config_placeholder(const struct option_spec *sp);

#endif
