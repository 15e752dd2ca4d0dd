#ifndef GHD_HTTP_PROBLEM_MAP_H
#define GHD_HTTP_PROBLEM_MAP_H

/* How an error code reads on the wire: the HTTP status and the problem
 * `type` slug (appended to GHD_PROBLEM_BASE) of every GHD_E* code of
 * base/error.h. The base is a relative reference: it resolves to this
 * server, which describes each type at GET /problems/{slug}
 * (handlers/problems.c). The codes and their titles stay in base/error.h;
 * problem_map.c fails to compile when a code has no row here. */
#define GHD_PROBLEM_BASE "/problems/"

#define GHD_FOR_EACH_PROBLEM(X)               \
    X(EINVAL, 400, "bad-request")             \
    X(EJSON, 400, "malformed-json")           \
    X(EUNAUTH, 401, "unauthorized")           \
    X(ENOENT, 404, "not-found")               \
    X(EMETHOD, 405, "method-not-allowed")     \
    X(EBUSY, 409, "conflict")                 \
    X(ELENGTH, 411, "length-required")        \
    X(ETOOBIG, 413, "content-too-large")      \
    X(EMEDIA, 415, "unsupported-media-type")  \
    X(ERANGE, 416, "range-not-satisfiable")   \
    X(EUNPROC, 422, "invalid-argument")       \
    X(ELIMIT, 429, "too-many-requests")       \
    X(EINTERNAL, 500, "internal")             \
    X(EDEVICE, 500, "device-error")           \
    X(EUNAVAIL, 503, "unavailable")           \
    X(ETIMEDOUT, 503, "staging-timeout")      \
    X(ENOMEM, 507, "insufficient-storage")    \
    X(ENOHOSTMEM, 500, "host-out-of-memory")  \
    X(ECANCELED, 409, "canceled")             \
    X(ENOTSUP, 501, "not-implemented")        \
    X(EQUOTA, 507, "tenant-quota")            \
    X(EPRECOND, 412, "precondition-failed")   \
    X(ENOTACCEPT, 406, "not-acceptable")                 \
    X(EFORBIDDEN, 403, "forbidden")                   \
    X(EDEVLOST, 503, "device-lost")           \
    X(EEXPECT, 417, "expectation-failed")     \
    X(EVERSION, 505, "http-version-not-supported") \
    X(EGONE, 410, "gone")                     \
    X(EMISDIRECTED, 421, "misdirected-request") \
    X(ENOKERNEL, 422, "unknown-kernel")       \
    X(EUNREADABLE, 500, "buffer-unreadable")

/* HTTP status for an error code (500 for unknown codes). */
int ghd_error_status(int code);
/* Problem type slug for an error code, e.g. "not-found" ("internal" for
 * unknown codes). */
const char *ghd_error_slug(int code);

#endif
