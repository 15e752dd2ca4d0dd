#include "suggest.h"

#include <stdio.h>
#include <string.h>

/* Names are short; a longer word is no near miss of any. */
#define WORD_MAX 64

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Optimal string alignment distance over ASCII-lowered bytes; SIZE_MAX
 * when either string is longer than WORD_MAX. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > WORD_MAX || lb > WORD_MAX)
        return (size_t)-1;
    size_t rows[3][WORD_MAX + 1]; /* row i of the table is rows[i % 3] */
    for (size_t j = 0; j <= lb; j++)
        rows[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *cur = rows[i % 3], *prev = rows[(i + 2) % 3], *prev2 = rows[(i + 1) % 3];
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = lower(a[i - 1]) != lower(b[j - 1]);
            size_t best = prev[j - 1] + cost;
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
    }
    return rows[la % 3][lb];
}

/* The distance when word is close to name, else SIZE_MAX. */
static size_t closeness(const char *word, const char *name)
{
    size_t d = distance(word, name);
    size_t lw = strlen(word), ln = strlen(name), longer = lw > ln ? lw : ln;
    return d != (size_t)-1 && 3 * d < longer ? d : (size_t)-1;
}

const char *ghd_suggest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = closeness(word, names[i]);
        if (d < best_d) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

const char *ghd_suggest_clause(char *buf, size_t len, const char *s)
{
    if (len)
        snprintf(buf, len, s ? ": did you mean '%s'?" : "%s", s ? s : "");
    return buf;
}

size_t ghd_join_names(char *buf, size_t used, size_t len, const char *sep,
                      const char *const *names, size_t n)
{
    for (size_t i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : sep, names[i]);
        if (w < 0 || (size_t)w >= len - used) {
            snprintf(buf + (used < len - 6 ? used : len - 6), 6, ", ...");
            return len;
        }
        used += (size_t)w;
    }
    return used;
}
