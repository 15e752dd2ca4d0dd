#ifndef GHD_BASE_SUGGEST_H
#define GHD_BASE_SUGGEST_H

#include <stddef.h>

/* "Did you mean": the name a client most likely meant when it wrote one the
 * service does not know (a kernel parameter, an element type), and the
 * list of the names it knows, for the same detail. Pure functions over
 * caller memory. */

/* The entry of names[0..n) that `word` is closest to, or NULL when none is
 * close. Close: an edit distance (an insertion, a deletion, a replacement
 * or a swap of two neighbours, ASCII case ignored) below a third of the
 * longer of the two lengths, so "dtyp" and "dtpye" find "dtype" and "F32"
 * finds "f32", while "x" finds nothing among {"n"}. The nearest wins; on a
 * tie, the earlier name. pre: word and every name are not NULL. */
const char *ghd_suggest(const char *word, const char *const *names, size_t n);

/* What a detail says for a suggestion: ": did you mean 'dtype'?" into buf,
 * or "" when s is NULL. Returns buf. */
const char *ghd_suggest_clause(char *buf, size_t len, const char *s);

/* Appends names[0..n), `sep` before the first and ", " between, to the
 * string of `used` bytes in buf[len]. Returns the new length; when they do
 * not all fit, the string ends in ", ..." and the return is len (full:
 * later calls add nothing). pre: len > 8, used <= len. */
size_t ghd_join_names(char *buf, size_t used, size_t len, const char *sep,
                      const char *const *names, size_t n);

#endif
