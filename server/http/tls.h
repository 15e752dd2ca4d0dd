#ifndef GHD_HTTP_TLS_H
#define GHD_HTTP_TLS_H

#include <microhttpd.h>
#include <stddef.h>

#include "base/err.h"
#include "core/config/config.h"

struct ghd_tls {
    char *cert, *key; /* PEM text; NULL without TLS */
    size_t key_len;
};

#define GHD_TLS_OPTIONS 4

/* With cfg->tls_cert set: reads the certificate and key, adds MHD_USE_TLS to
 * `flags` and fills `opts` (an MHD_OPTION_ARRAY, ended) with them and the
 * protocol versions; without it `opts` is just the end. 0, or a GHD_E* code
 * with the reason in `err`. */
int ghd_tls_setup(struct ghd_tls *tls, const struct ghd_config *cfg, unsigned *flags,
                  struct MHD_OptionItem opts[GHD_TLS_OPTIONS], struct ghd_err *err);
/* Whether the server speaks TLS. */
int ghd_tls_on(const struct ghd_tls *tls);
/* Frees both, wiping the key first. */
void ghd_tls_free(struct ghd_tls *tls);

#endif
