#ifndef GHD_CORE_TENANCY_AUTH_INTERNAL_H
#define GHD_CORE_TENANCY_AUTH_INTERNAL_H

#include <stddef.h>
#include "auth.h"

/* What auth.c and auth_line.c share of reading tokens. */

/* Whether s[0..n) is a b64token of at most GHD_TOKEN_MAX characters:
 * 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". */
int ghd_auth_valid_token(const char *s, size_t n);
/* Whether c is white space (space, tab, CR, LF, VT, FF). */
int ghd_auth_is_blank(char c);

#endif
