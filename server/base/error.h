#ifndef GHD_SERVER_ERROR_H
#define GHD_SERVER_ERROR_H

/* One error model for the whole service (STYLE.md): functions return 0 or a
 * negative GHD_E* code. This table maps each code to the HTTP status, the
 * problem `type` slug (appended to GHD_PROBLEM_BASE) and a short title.
 * The base is a relative reference: it resolves to this server, which
 * describes each type at GET /problems/{slug} (handlers/problems.c). */
#define GHD_PROBLEM_BASE "/problems/"

#define GHD_FOR_EACH_ERROR(X)                                                   \
    X(EINVAL, 1, 400, "bad-request", "Bad request")                             \
    X(EJSON, 2, 400, "malformed-json", "Malformed JSON")                        \
    X(EUNAUTH, 3, 401, "unauthorized", "Unauthorized")                          \
    X(ENOENT, 4, 404, "not-found", "Not found")                                 \
    X(EMETHOD, 5, 405, "method-not-allowed", "Method not allowed")              \
    X(EBUSY, 6, 409, "conflict", "Conflict")                                    \
    X(ELENGTH, 7, 411, "length-required", "Length required")                    \
    X(ETOOBIG, 8, 413, "content-too-large", "Content too large")                \
    X(EMEDIA, 9, 415, "unsupported-media-type", "Unsupported media type")       \
    X(ERANGE, 10, 416, "range-not-satisfiable", "Range not satisfiable")        \
    X(EUNPROC, 11, 422, "invalid-argument", "Unprocessable content")            \
    X(ELIMIT, 12, 429, "too-many-requests", "Too many requests")                \
    X(EINTERNAL, 13, 500, "internal", "Internal server error")                  \
    X(EDEVICE, 14, 500, "device-error", "Device error")                         \
    X(EUNAVAIL, 15, 503, "unavailable", "Service unavailable")                  \
    X(ETIMEDOUT, 16, 503, "staging-timeout", "Staging memory busy")             \
    X(ENOMEM, 17, 507, "insufficient-storage", "Insufficient device memory")    \
    X(ENOHOSTMEM, 18, 500, "host-out-of-memory", "Host out of memory")          \
    X(ECANCELED, 19, 409, "canceled", "Canceled")                               \
    X(ENOTSUP, 20, 501, "not-implemented", "Not implemented")                   \
    X(EQUOTA, 21, 507, "tenant-quota", "Tenant storage quota exceeded")        \
    X(EPRECOND, 22, 412, "precondition-failed", "Precondition failed")         \
    X(ENOTACCEPT, 23, 406, "not-acceptable", "Not acceptable")

enum ghd_error {
#define GHD_ERROR_ENUM(name, num, status, slug, title) GHD_##name = -(num),
    GHD_FOR_EACH_ERROR(GHD_ERROR_ENUM)
#undef GHD_ERROR_ENUM
};

/* Human-readable title of an error code ("Unknown error" for anything else). */
const char *ghd_strerror(int code);
/* HTTP status for an error code (500 for unknown codes). */
int ghd_error_status(int code);
/* Problem type slug for an error code, e.g. "not-found". */
const char *ghd_error_slug(int code);

/* Programmer invariants only; always on. Client-caused conditions are errors. */
#define GHD_ASSERT(cond)                                                        \
    do {                                                                        \
        if (!(cond))                                                            \
            ghd_assert_fail(#cond, __FILE__, __LINE__);                         \
    } while (0)

_Noreturn void ghd_assert_fail(const char *expr, const char *file, int line);

#endif
