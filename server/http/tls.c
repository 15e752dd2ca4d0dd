/* HTTPS: the certificate and key read from their PEM files, handed to
 * libmicrohttpd's GnuTLS, and the key wiped when the server stops. */
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* Reads a PEM file into a NUL-terminated string. */
static int read_pem(const char *flag, const char *path, char **out, size_t *len,
                    struct ghd_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ghd_err_set(err, GHD_EINVAL, "%s %s: cannot open it", flag, path);
    size_t cap = (size_t)1 << 20;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
    int bad = !buf || ferror(f) || n == 0 || n > cap;
    fclose(f);
    if (bad) {
        free(buf);
        return ghd_err_set(err, GHD_EINVAL, "%s %s: empty, unreadable or larger than 1 MiB",
                           flag, path);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

void ghd_tls_free(struct ghd_tls *tls)
{
    free(tls->cert);
    if (tls->key)
        memset(tls->key, 0, tls->key_len);
    free(tls->key);
    *tls = (struct ghd_tls){0};
}

int ghd_tls_on(const struct ghd_tls *tls)
{
    return tls->cert != NULL;
}

/* HTTPS through libmicrohttpd's GnuTLS: TLS 1.2 and 1.3 only. */
int ghd_tls_setup(struct ghd_tls *tls, const struct ghd_config *cfg, unsigned *flags,
                  struct MHD_OptionItem opts[GHD_TLS_OPTIONS], struct ghd_err *err)
{
    opts[0] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    if (!cfg->tls_cert[0])
        return 0;
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return ghd_err_set(err, GHD_ENOTSUP, "--tls-cert: this libmicrohttpd was built without "
                                             "TLS");
    size_t cert_len;
    int rc = read_pem("--tls-cert", cfg->tls_cert, &tls->cert, &cert_len, err);
    if (rc == 0)
        rc = read_pem("--tls-key", cfg->tls_key, &tls->key, &tls->key_len, err);
    if (rc)
        return rc;
    *flags |= MHD_USE_TLS;
    opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, tls->cert};
    opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, tls->key};
    opts[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                      (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"};
    opts[3] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return 0;
}
