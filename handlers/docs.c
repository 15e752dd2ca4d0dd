#define _GNU_SOURCE /* asprintf */
/* The API contract, embedded at build time, and the Swagger UI page whose
 * assets gpuhttpd serves itself from --docs-dir (no CDN). */
#include "handlers.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "core/service.h"

extern const unsigned char ghd_openapi_yaml[];
extern const size_t ghd_openapi_yaml_len;
extern const unsigned char ghd_openapi_json[];
extern const size_t ghd_openapi_json_len;

/* The files the page needs; the rest (favicons, source maps) are optional. */
#define DOCS_BUNDLE "swagger-ui-bundle.js"
#define DOCS_CSS "swagger-ui.css"
#define DOCS_ASSET_MAX ((off_t)32 << 20)

/* application/yaml unless the client asks for text/plain and not for YAML:
 * browsers save application/yaml rather than show it. */
int ghd_handle_openapi_yaml(struct ghd_request *req, struct ghd_reply *rep)
{
    const char *accept = ghd_request_header(req, "Accept");
    int plain = accept && strstr(accept, "text/plain") && !strstr(accept, "application/yaml");
    int rc = ghd_reply_text(rep, 200,
                            plain ? "text/plain; charset=utf-8" : "application/yaml; charset=utf-8",
                            (const char *)ghd_openapi_yaml, ghd_openapi_yaml_len);
    if (rc)
        return rc;
    ghd_reply_header(rep, "Vary", "Accept"); /* the Content-Type follows Accept */
    return 0;
}

/* `/` and `/docs/` lead to /docs. /docs/ cannot serve the page itself: its
 * relative links (docs/..., openapi.json) would resolve under /docs/. */
static int redirect_to_docs(struct ghd_request *req, struct ghd_reply *rep, int status)
{
    static const char body[] = "<!doctype html>\n<title>gpuhttpd</title>\n"
                               "<p>The API documentation is at <a href=\"/docs\">/docs</a>; the "
                               "contract at <a href=\"/openapi.json\">/openapi.json</a>.</p>\n";
    int rc = ghd_reply_text(rep, status, "text/html; charset=utf-8", body, sizeof(body) - 1);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "out of host memory");
    ghd_reply_header(rep, "Location", "/docs");
    return 0;
}

int ghd_handle_root(struct ghd_request *req, struct ghd_reply *rep)
{
    return redirect_to_docs(req, rep, 302); /* `/` may serve something else one day */
}

int ghd_handle_docs_slash(struct ghd_request *req, struct ghd_reply *rep)
{
    return redirect_to_docs(req, rep, 301);
}

int ghd_handle_openapi_json(struct ghd_request *req, struct ghd_reply *rep)
{
    (void)req;
    return ghd_reply_text(rep, 200, "application/json", (const char *)ghd_openapi_json,
                          ghd_openapi_json_len);
}

/* ---- where the assets are ---------------------------------------------------- */

static int has_assets(const char *dir)
{
    static const char *const needed[] = {DOCS_BUNDLE, DOCS_CSS};
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        char path[PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, needed[i]) >= sizeof(path) ||
            stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            return 0;
    }
    return 1;
}

/* Without --docs-dir the assets are looked for beside the binary, so that
 * both trees work without a path baked in: the build tree puts them in
 * <build>/swagger-ui next to <build>/gpuhttpd, an install in
 * <prefix>/share/gpuhttpd/swagger-ui for <prefix>/bin/gpuhttpd. */
static char default_dirs[2][PATH_MAX];
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void find_default_dirs(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(default_dirs[0], sizeof(default_dirs[0]), "%.*s/../share/gpuhttpd/swagger-ui",
             PATH_MAX - 40, exe);
    snprintf(default_dirs[1], sizeof(default_dirs[1]), "%.*s/swagger-ui", PATH_MAX - 40, exe);
}

/* The folder assets are served from, and whether the page's files are
 * there. With --docs-dir that folder, whatever it holds; without it, NULL
 * when neither default folder holds them. */
static const char *docs_dir(const struct ghd_service *svc, int *ready)
{
    if (ghd_service_config(svc)->docs_dir[0]) {
        *ready = has_assets(ghd_service_config(svc)->docs_dir);
        return ghd_service_config(svc)->docs_dir;
    }
    pthread_once(&default_once, find_default_dirs);
    for (int i = 0; i < 2; i++) {
        if (default_dirs[i][0] && has_assets(default_dirs[i])) {
            *ready = 1;
            return default_dirs[i];
        }
    }
    *ready = 0;
    return NULL;
}

/* ---- the page ------------------------------------------------------------------ */

/* Relative URLs, so that the page also works behind a path prefix. */
static const char page[] =
    "<!doctype html>\n"
    "<html lang=\"en\">\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>gpuhttpd API</title>\n"
    "<link rel=\"stylesheet\" href=\"docs/" DOCS_CSS "\">\n"
    "<link rel=\"icon\" type=\"image/png\" href=\"docs/favicon-32x32.png\" sizes=\"32x32\">\n"
    "</head>\n"
    "<body>\n"
    "<div id=\"swagger-ui\"></div>\n"
    "<script src=\"docs/" DOCS_BUNDLE "\"></script>\n"
    "<script>\n"
    "window.ui = SwaggerUIBundle({url: \"openapi.json\", dom_id: \"#swagger-ui\",\n"
    "  deepLinking: true, docExpansion: \"list\", tryItOutEnabled: false});\n"
    "</script>\n"
    "</body>\n"
    "</html>\n";

static void html_escape(const char *in, char *out, size_t len)
{
    size_t used = 0;
    for (; *in && used + 7 < len; in++) {
        const char *rep = *in == '&'   ? "&amp;"
                          : *in == '<' ? "&lt;"
                          : *in == '>' ? "&gt;"
                          : *in == '"' ? "&quot;"
                                       : NULL;
        if (rep) {
            memcpy(out + used, rep, strlen(rep));
            used += strlen(rep);
        } else {
            out[used++] = *in;
        }
    }
    out[used] = '\0';
}

static int reply_missing(struct ghd_request *req, struct ghd_reply *rep, const char *dir)
{
    char where[2 * PATH_MAX + 16], safe[sizeof(where) * 6];
    if (dir)
        snprintf(where, sizeof(where), "%s", dir);
    else if (default_dirs[0][0])
        snprintf(where, sizeof(where), "%s or %s", default_dirs[1], default_dirs[0]);
    else
        snprintf(where, sizeof(where), "(no folder: the binary's location is unknown)");
    html_escape(where, safe, sizeof(safe));
    char *body = NULL;
    int n = asprintf(
        &body,
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
        "<title>gpuhttpd API: docs assets missing</title></head>\n<body>\n"
        "<h1>gpuhttpd API documentation</h1>\n"
        "<p>The interactive page needs the Swagger UI 5 files <code>" DOCS_BUNDLE
        "</code> and <code>" DOCS_CSS "</code>, which gpuhttpd serves itself, and they are "
        "not in <code>%s</code>.</p>\n"
        "<p>To get them:</p>\n<ol>\n"
        "<li><code>python3 -m pip install --no-deps flask-swagger-ui</code> (it ships the "
        "Swagger UI files; <code>--no-deps</code> leaves Flask out), then rebuild: the build "
        "copies them into <code>&lt;build&gt;/swagger-ui</code>, and "
        "<code>cmake --install</code> into <code>&lt;prefix&gt;/share/gpuhttpd/swagger-ui"
        "</code>;</li>\n"
        "<li>or point <code>--docs-dir</code> (environment <code>GHD_DOCS_DIR</code>) at a "
        "folder that holds them, e.g. the <code>dist</code> folder of the "
        "<code>swagger-ui-dist</code> release.</li>\n</ol>\n"
        "<p>The contract itself is always served: <a href=\"openapi.yaml\">/openapi.yaml</a> "
        "and <a href=\"openapi.json\">/openapi.json</a>.</p>\n</body>\n</html>\n",
        safe);
    int rc = ghd_reply_html(rep, req, 503, body, n);
    if (rc == 0)
        ghd_reply_header(rep, "Cache-Control", "no-store");
    return rc;
}

int ghd_handle_docs(struct ghd_request *req, struct ghd_reply *rep)
{
    int ready;
    const char *dir = docs_dir(req->svc, &ready);
    if (!ready)
        return reply_missing(req, rep, dir);
    int rc = ghd_reply_text(rep, 200, "text/html; charset=utf-8", page, sizeof(page) - 1);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "out of host memory");
    ghd_reply_header(rep, "Cache-Control", "no-cache");
    return 0;
}

/* ---- the assets ---------------------------------------------------------------- */

/* One path segment of safe characters: no dot first, hence no "." or "..",
 * and no slash, since the router hands over a single segment. */
static int asset_name_ok(const char *name)
{
    if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') ||
          (name[0] >= '0' && name[0] <= '9')))
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-'))
            return 0;
    return strstr(name, "..") == NULL;
}

static const char *asset_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".png", "image/png"},
        {".html", "text/html; charset=utf-8"},
        {".map", "application/json"},
        {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return NULL;
}

/* Reads a whole regular file; 0, GHD_ENOENT or GHD_ENOHOSTMEM. */
static int read_file(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return GHD_ENOENT;
    int rc = GHD_ENOENT;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > DOCS_ASSET_MAX)
        goto out;
    rc = GHD_ENOHOSTMEM;
    buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        goto out;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = GHD_EINTERNAL;
            goto out;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

int ghd_handle_docs_asset(struct ghd_request *req, struct ghd_reply *rep)
{
    const char *name = req->params[0];
    const char *type = asset_type(name);
    if (!asset_name_ok(name) || !type)
        return ghd_reply_problem(rep, req, GHD_ENOENT, "no docs asset named '%.64s'", name);
    int ready;
    const char *dir = docs_dir(req->svc, &ready);
    char path[PATH_MAX];
    if (!dir)
        return ghd_reply_problem(rep, req, GHD_ENOENT,
                                 "no docs asset named '%.64s' (the Swagger UI assets are not "
                                 "installed; see /docs)",
                                 name);
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
        return ghd_reply_problem(rep, req, GHD_ENOENT, "no docs asset named '%.64s'", name);
    char *body;
    size_t len;
    int rc = read_file(path, &body, &len);
    if (rc == GHD_ENOENT)
        return ghd_reply_problem(rep, req, rc, "no docs asset named '%.64s'%s", name,
                                 ready ? "" : " (the Swagger UI assets are not installed; see /docs)");
    if (rc)
        return ghd_reply_problem(rep, req, rc, "cannot read the docs asset '%.64s'", name);
    /* The body is handed over as is; http.c frees it. */
    rep->body = body;
    rep->body_len = len;
    rep->status = 200;
    rep->content_type = type;
    ghd_reply_header(rep, "Cache-Control", "public, max-age=3600");
    ghd_reply_header(rep, "X-Content-Type-Options", "nosniff");
    return 0;
}
