#ifndef GHD_BASE_ERROR_H
#define GHD_BASE_ERROR_H

/* One error model for the whole service (server/README.md, "Errors"): functions return 0 or a
 * negative GHD_E* code. This table names each code and gives it a short
 * title; it knows nothing of HTTP. The code -> HTTP status and problem type
 * mapping is the HTTP layer's (server/http/problem_map.h). */
#define GHD_FOR_EACH_ERROR(X)                       \
    X(EINVAL, 1, "Bad request")                     \
    X(EJSON, 2, "Malformed JSON")                   \
    X(EUNAUTH, 3, "Unauthorized")                   \
    X(ENOENT, 4, "Not found")                       \
    X(EMETHOD, 5, "Method not allowed")             \
    X(EBUSY, 6, "Conflict")                         \
    X(ELENGTH, 7, "Length required")                \
    X(ETOOBIG, 8, "Content too large")              \
    X(EMEDIA, 9, "Unsupported media type")          \
    X(ERANGE, 10, "Range not satisfiable")          \
    X(EUNPROC, 11, "Unprocessable content")         \
    X(ELIMIT, 12, "Too many requests")              \
    X(EINTERNAL, 13, "Internal server error")       \
    X(EDEVICE, 14, "Device error")                  \
    X(EUNAVAIL, 15, "Service unavailable")          \
    X(ETIMEDOUT, 16, "Staging memory busy")         \
    X(ENOMEM, 17, "Insufficient device memory")     \
    X(ENOHOSTMEM, 18, "Host out of memory")         \
    X(ECANCELED, 19, "Canceled")                    \
    X(ENOTSUP, 20, "Not implemented")               \
    X(EQUOTA, 21, "Tenant storage quota exceeded")  \
    X(EPRECOND, 22, "Precondition failed")          \
    X(ENOTACCEPT, 23, "Not acceptable")            \
    X(EFORBIDDEN, 24, "Forbidden")                  \
    X(EDEVLOST, 25, "Device lost")                  \
    X(EEXPECT, 26, "Expectation failed")            \
    X(EVERSION, 27, "HTTP version not supported")  \
    X(EGONE, 28, "Gone")                            \
    X(EMISDIRECTED, 29, "Misdirected request")    \
    X(ENOKERNEL, 30, "Unknown kernel")              \
    X(EUNREADABLE, 31, "Buffer cannot be read back")

enum ghd_error {
#define GHD_ERROR_ENUM(name, num, title) GHD_##name = -(num),
    GHD_FOR_EACH_ERROR(GHD_ERROR_ENUM)
#undef GHD_ERROR_ENUM
};

/* Human-readable title of an error code ("Unknown error" for anything else). */
const char *ghd_strerror(int code);

/* Programmer invariants only; always on. Client-caused conditions are errors. */
#define GHD_ASSERT(cond)                                                        \
    do {                                                                        \
        if (!(cond))                                                            \
            ghd_assert_fail(#cond, __FILE__, __LINE__);                         \
    } while (0)

_Noreturn void ghd_assert_fail(const char *expr, const char *file, int line);

#endif
