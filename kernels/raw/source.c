/* What a module's source may not do: make NVRTC read a file of the server,
 * or ask whether one exists. NVRTC has no hook for includes: with no
 * include path it still opens an absolute path, and its log, which a 422
 * returns, quotes the file's lines. So the source is judged the way NVRTC's
 * preprocessor will read it, and refused before it gets there:
 *
 * - translation phases 1 and 2 come first: trigraphs (NVRTC reads them
 *   under -std=c++03, c++11 and c++14, not c++17 or c++20: both readings
 *   are judged) and line splices (a backslash, or its trigraph, before a
 *   newline), which may split any word;
 * - the digraph '%:' (and so '%:%:') is refused wherever it is: it spells
 *   '#', and '#' is plain to write;
 * - a '#' followed by blanks, comments and "include", "include_next",
 *   "import" or "embed" is refused anywhere, in a string or a comment too
 *   (conservative: no need to know where a directive may start);
 * - the identifiers __has_include, __has_include_next and __has_embed are
 *   refused anywhere, and so is token pasting ('##') when the module's
 *   identifiers, its -D options' included, could be pasted into one of
 *   them (NVRTC answers those probes in #if and in expressions alike).
 *
 * #pragma and _Pragma stay: no pragma NVRTC knows reads a file (the ones
 * that do elsewhere, GCC's dependency and system_header, MSVC's
 * include_alias, EDG's hdrstop, are "unrecognized" warnings). */
#include "raw.h"

#include <string.h>

#include "base/err.h"
#include "base/error.h"

/* The source as phases 1 and 2 leave it, read one character at a time. */
struct text {
    const char *s;
    size_t n;
    int trigraphs;
    /* The last search for the end of a comment: from `from`, it found the
     * first star-slash's star at `star` (n when there is none), the end at `end`. */
    size_t from, star, end;
    int searched;
};

/* The character at s[i] (a trigraph's meaning when they are read) and its
 * width in the source. */
static int raw_char(const struct text *t, size_t i, size_t *width)
{
    static const char from[] = "=/'()!<>-", to[] = "#\\^[]|{}~";
    *width = 1;
    if (t->trigraphs && i + 2 < t->n && t->s[i] == '?' && t->s[i + 1] == '?') {
        const char *f = t->s[i + 2] ? strchr(from, t->s[i + 2]) : NULL;
        if (f) {
            *width = 3;
            return to[f - from];
        }
    }
    return (unsigned char)t->s[i];
}

/* Index of the first source byte of the character at or after i, past any
 * line splices (backslash, then LF or CR LF). */
static size_t skip_splices(const struct text *t, size_t i)
{
    for (;;) {
        size_t w;
        if (i >= t->n || raw_char(t, i, &w) != '\\')
            return i;
        size_t j = i + w;
        if (j < t->n && t->s[j] == '\r')
            j++;
        if (j >= t->n || t->s[j] != '\n')
            return i;
        i = j + 1;
    }
}

/* The character at *i, or -1 at the end; *i moves past it. */
static int next(const struct text *t, size_t *i)
{
    size_t w;
    *i = skip_splices(t, *i);
    if (*i >= t->n)
        return -1;
    int c = raw_char(t, *i, &w);
    *i += w;
    return c;
}

static int peek(const struct text *t, size_t i)
{
    return next(t, &i);
}

static int ident_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The index after the first star-slash at or after i (n when there is none).
 * A search that starts where the last one already looked reuses its answer,
 * so a source of many '#' plus comment openers stays linear. */
static size_t comment_end(struct text *t, size_t i)
{
    if (t->searched && i >= t->from && i <= t->star)
        return t->end;
    t->searched = 1;
    t->from = i;
    size_t star = 0;
    for (int prev = 0, c;;) {
        size_t at = skip_splices(t, i);
        if ((c = next(t, &i)) < 0) {
            t->star = t->end = t->n;
            return t->end;
        }
        if (prev == '*' && c == '/') {
            t->star = star;
            t->end = i;
            return t->end;
        }
        if (c == '*')
            star = at;
        prev = c;
    }
}

/* Skips blanks (a carriage return is one to NVRTC) and block comments. */
static size_t skip_blank(struct text *t, size_t i)
{
    for (;;) {
        size_t j = i;
        int c = next(t, &j);
        if (c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r') {
            i = j;
        } else if (c == '/' && peek(t, j) == '*') {
            next(t, &j);
            i = comment_end(t, j);
        } else {
            return i;
        }
    }
}

/* Reads the identifier-character run at *i into word (NUL-terminated, cut
 * at `cap` - 1 characters: longer runs are none of the words looked for). */
static void read_word(const struct text *t, size_t *i, char *word, size_t cap)
{
    size_t len = 0;
    for (;;) {
        size_t j = *i;
        int c = next(t, &j);
        if (!ident_char(c))
            break;
        if (len + 1 < cap)
            word[len] = (char)c;
        len++;
        *i = j;
    }
    word[len < cap ? len : cap - 1] = '\0';
    if (len >= cap)
        word[0] = '\0';
}

/* The identifiers that ask about a file. */
static const char *const probes[] = {"__has_include", "__has_include_next", "__has_embed"};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))
#define PROBE_MAX 18 /* the longest, "__has_include_next" */

/* Which pieces of each probe some identifier of the module spells:
 * piece[k][a][b] when probes[k][a..b) is one. */
struct pieces {
    unsigned char piece[NPROBES][PROBE_MAX + 1][PROBE_MAX + 1];
};

static void pieces_add(struct pieces *p, const char *word)
{
    size_t len = strlen(word);
    if (!len || len > PROBE_MAX)
        return;
    for (size_t k = 0; k < NPROBES; k++)
        for (const char *at = probes[k]; (at = strstr(at, word)) != NULL; at++)
            p->piece[k][at - probes[k]][at - probes[k] + len] = 1;
}

/* The probe that pieces can be pasted into (one after another, each as
 * often as wanted: macros repeat them), or NULL. */
static const char *pieces_spell(const struct pieces *p)
{
    for (size_t k = 0; k < NPROBES; k++) {
        size_t len = strlen(probes[k]);
        unsigned char reach[PROBE_MAX + 1] = {1};
        for (size_t a = 0; a < len; a++)
            for (size_t b = a + 1; reach[a] && b <= len; b++)
                reach[b] |= p->piece[k][a][b];
        if (reach[len])
            return probes[k];
    }
    return NULL;
}

static unsigned line_of(const char *s, size_t at)
{
    unsigned line = 1;
    for (size_t i = 0; i < at; i++)
        line += s[i] == '\n';
    return line;
}

/* One reading of the source (trigraphs read or not). */
static int scan(struct text *t, struct pieces *p, size_t *paste_at, struct ghd_err *err)
{
    static const char *const directives[] = {"include", "include_next", "import", "embed", NULL};
    int prev = 0;
    size_t i = 0;
    for (;;) {
        size_t at = skip_splices(t, i);
        int c = next(t, &i);
        if (c < 0)
            return 0;
        if (c == '%' && peek(t, i) == ':')
            return ghd_err_set(err, GHD_EUNPROC,
                               "source, line %u: the digraph '%%:' is not allowed (it "
                               "spells '#'; write '#')",
                               line_of(t->s, at));
        if (c == '#') {
            char word[16];
            size_t j = skip_blank(t, i);
            if (peek(t, j) == '#' && *paste_at == (size_t)-1)
                *paste_at = at;
            read_word(t, &j, word, sizeof(word));
            for (const char *const *d = directives; *d; d++)
                if (strcmp(word, *d) == 0)
                    return ghd_err_set(err, GHD_EUNPROC,
                                       "source, line %u: '#%s' is not allowed (a module is one "
                                       "self-contained source: nothing is read from the "
                                       "server's files)",
                                       line_of(t->s, at), *d);
        }
        if (ident_char(c) && !ident_char(prev) && !(c >= '0' && c <= '9')) {
            char word[PROBE_MAX + 2];
            size_t j = at;
            read_word(t, &j, word, sizeof(word));
            for (size_t k = 0; k < NPROBES; k++)
                if (strcmp(word, probes[k]) == 0)
                    return ghd_err_set(err, GHD_EUNPROC,
                                       "source, line %u: '%s' is not allowed (it asks "
                                       "whether a file of the server exists)",
                                       line_of(t->s, at), probes[k]);
            pieces_add(p, word);
            i = j;
            prev = 'a';
            continue;
        }
        prev = c;
    }
}

int ghd_raw_source_check(const char *src, size_t len, const char *const *options,
                         struct ghd_err *err)
{
    if (memchr(src, '\0', len))
        return ghd_err_set(err, GHD_EUNPROC, "source has a NUL character");
    /* Identifiers that -D options bring; the first two characters are the
     * option's own ("-D", "--"). */
    struct pieces from_options = {0};
    for (unsigned o = 0; options && options[o]; o++) {
        const char *v = options[o];
        struct text t = {.s = v, .n = strlen(v)};
        for (size_t i = t.n < 2 ? t.n : 2; i < t.n;) {
            char word[PROBE_MAX + 2];
            size_t at = i;
            read_word(&t, &i, word, sizeof(word));
            for (size_t k = 0; k < NPROBES; k++)
                if (strcmp(word, probes[k]) == 0)
                    return ghd_err_set(err, GHD_EUNPROC,
                                       "options[%u]: '%.64s' is not allowed: '%s' asks "
                                       "whether a file of the server exists",
                                       o, v, probes[k]);
            pieces_add(&from_options, word);
            if (i == at)
                i++;
        }
    }
    for (int trigraphs = 0; trigraphs < 2; trigraphs++) {
        struct text t = {.s = src, .n = len, .trigraphs = trigraphs};
        struct pieces p = from_options;
        size_t paste_at = (size_t)-1;
        int rc = scan(&t, &p, &paste_at, err);
        if (rc)
            return rc;
        const char *spelled = paste_at != (size_t)-1 ? pieces_spell(&p) : NULL;
        if (spelled)
            return ghd_err_set(err, GHD_EUNPROC,
                               "source, line %u: token pasting ('##') is not allowed here: "
                               "the module's identifiers could be pasted into '%s', which "
                               "asks whether a file of the server exists (rename them, or "
                               "do without '##')",
                               line_of(src, paste_at), spelled);
    }
    return 0;
}
