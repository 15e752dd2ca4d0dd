#ifndef GHD_TESTS_SUPPORT_REL_H
#define GHD_TESTS_SUPPORT_REL_H

/* Shared by the security and reliability tests: an in-process server on
 * 127.0.0.1 port 0 (host backend, small pool and staging ring), a libcurl
 * request helper, raw-socket helpers for clients that misbehave, and the
 * resting-state checks (pool bytes in use, staging chunks busy, requests in
 * flight). */

#include <stddef.h>
#include <stdint.h>

#include "server.h"

/* GHD_TEST_BACKEND as given, "host" when it is not set. */
const char *rel_backend_name(void);
/* Defaults for tests: host backend (GHD_TEST_BACKEND=cuda or auto to change it),
 * port 0, 64 KiB staging chunks x 8, warn-level logs. */
void rel_config(struct ghd_config *cfg);
/* Starts service and HTTP server; aborts the test on failure. */
void rel_start(struct support_server *s, const struct ghd_config *cfg);
/* The same, but returns the error and its reason in `err` instead of failing. */
int rel_try_start(struct support_server *s, const struct ghd_config *cfg, struct ghd_err *err);
/* rel_try_start serving `routes` instead of the service's own table. */
int rel_try_start_routes(struct support_server *s, const struct ghd_config *cfg,
                         const struct ghd_routes *routes, struct ghd_err *err);
/* Starts the probe listener (--probe-port) of a started server on a free
 * port of 127.0.0.1; rel_stop stops it. Aborts the test on failure. */
void rel_start_probe(struct support_server *s);
void rel_stop(struct support_server *s);
/* cmocka group fixtures: a server of its own, started with `cfg`, becomes
 * *state; rel_teardown stops and frees it. */
int rel_setup_with(void **state, const struct ghd_config *cfg);
int rel_teardown(void **state);

struct rel_resp {
    long status; /* 0 when the transfer failed */
    char *body;  /* NUL-terminated, owned */
    size_t len;
    char headers[4096];
    int curl_error; /* CURLcode */
};

struct rel_req {
    const char *method;
    const char *path; /* appended to the base URL */
    const char *token;  /* Bearer token, or NULL */
    const char *ctype;  /* Content-Type, or NULL */
    const void *body;
    size_t len;
    const char *extra_header; /* one more "Name: value", or NULL */
    long timeout_ms;          /* 0 = 10 s */
    const char *base;         /* NULL = the server's */
    const char *cainfo;       /* HTTPS: CA file */
    long sslversion;          /* CURLOPT_SSLVERSION, 0 = curl's default */
};

/* Fails the test unless the reply has `status` and, where needle is not
 * NULL, its body contains needle; the message shows the whole body. */
void rel_expect(const struct rel_resp *r, long status, const char *needle);
/* Performs one request; *out must be released with rel_resp_free. */
void rel_do(const struct support_server *s, const struct rel_req *rq, struct rel_resp *out);
void rel_resp_free(struct rel_resp *r);
/* Shorthand: method + path + token + optional JSON body. Returns the status. */
long rel_json(const struct support_server *s, const char *method, const char *path, const char *token,
              const char *json, struct rel_resp *out);
/* The value of a header in a response (case-insensitive name), copied; "" if absent. */
void rel_header(const struct rel_resp *r, const char *name, char *out, size_t cap);
/* A string member of a JSON body, copied; "" if absent. */
void rel_json_str(const struct rel_resp *r, const char *key, char *out, size_t cap);
/* `n` bytes as standard base64 with padding (what "cuda_ipc" takes) into
 * out, which holds 4 * ((n + 2) / 3) + 1 bytes. */
void rel_base64(const void *data, size_t n, char *out);
/* A buffer's version (GET /v1/buffers/<id>/meta as `token`). */
uint64_t rel_buffer_version(const struct support_server *s, const char *token, const char *id);
/* The value of a line of GET /metrics ("\n<name> <value>"; the name with its labels, as
 * written: name{device="0"}), or -1. */
long rel_metric(const struct support_server *s, const char *name);
/* Creates a buffer of `size` bytes (JSON) and copies its id; returns the status. */
long rel_create(const struct support_server *s, const char *token, size_t size, char *id, size_t cap);

/* Raw sockets. */
int rel_connect(unsigned port);
/* A TCP port of 127.0.0.1 free a moment ago (bound to port 0, then closed),
 * for a child's option that cannot take 0. */
unsigned rel_free_port(void);
/* A connection to the server from source address `src` (127.x.y.z: Linux
 * routes all of 127.0.0.0/8 to lo); fails the test when it cannot be made. */
int rel_connect_from(unsigned port, const char *src);
/* 0 when every byte went out, -1 otherwise. */
int rel_send(int fd, const void *buf, size_t len);
/* Reads until the peer closes or timeout_ms pass; returns the bytes read
 * (NUL-terminated in buf), -1 on a socket error. *closed says whether EOF or
 * a reset was seen. */
long rel_recv(int fd, char *buf, size_t cap, long timeout_ms, int *closed);
/* Connects, sends the head of an octet-stream upload (`method` `path` with
 * Content-Length `total`) and then `first` zero bytes of its body; returns the
 * socket. Fails the test when the server cannot be reached. */
int rel_begin_upload(unsigned port, const char *method, const char *path, size_t total,
                     size_t first);
/* PUTs `len` bytes of octet-stream to buffer `id` (token may be NULL);
 * returns the status. */
long rel_put(const struct support_server *s, const char *token, const char *id, const void *data,
             size_t len);
/* On a connection of its own: sends `len` raw bytes of `msg`, reads the
 * answer into buf as rel_recv does (up to timeout_ms, *closed when the server
 * closed), and closes. */
void rel_exchange(unsigned port, const char *msg, size_t len, char *buf, size_t cap,
                  long timeout_ms, int *closed);
/* rel_begin_upload of a PUT to buffer `id`. */
int rel_begin_put(unsigned port, const char *id, size_t total, size_t first);
/* Waits up to timeout_ms for EOF or reset; 1 if the server closed it. */
int rel_wait_closed(int fd, long timeout_ms);
/* The status code of the first response in buf, or 0. */
int rel_status_of(const char *buf);

/* Resting state: no pool bytes in use beyond `baseline`, no staging chunk
 * busy, no request in flight. Waits up to timeout_ms for it; returns 1 when
 * reached. Prints what differs otherwise. */
int rel_wait_rest(struct support_server *s, size_t pool_baseline, long timeout_ms);
size_t rel_pool_in_use(struct support_server *s);
unsigned rel_staging_busy(struct support_server *s);

/* The gpuhttpd binary as a child process: GHD_BIN names it (ctest sets it).
 * `args` (NULL-terminated) follow --port 0 --port-file and --backend host;
 * `env` ("NAME=value", NULL-terminated, may be NULL) is added to the
 * environment. If GHD_TEST_WRAPPER is set (e.g. "valgrind --error-exitcode=9"),
 * the binary runs under it. stdout and stderr go to `log_path`. Waits up to
 * timeout_ms for the port. Returns the pid, or -1 (reason printed). */
struct rel_proc {
    int pid;
    unsigned port;
    char base[64];
    char log_path[256];
};
int rel_spawn(struct rel_proc *p, const char *const *args, const char *const *env,
              long timeout_ms);
/* Waits up to timeout_ms for the child to exit; returns its exit code, 128 +
 * signal, or -1 when it is still running. */
int rel_wait_exit(struct rel_proc *p, long timeout_ms);
/* The same, and a server still running at the end is killed (-1 returned):
 * a failed stop never leaves a process behind. */
int rel_wait_exit_or_kill(struct rel_proc *p, long timeout_ms);
/* Kills (SIGKILL) and reaps a child still running. */
void rel_kill(struct rel_proc *p);
/* Sends `sig` to the server: to the wrapper's children when GHD_TEST_WRAPPER runs
 * it as a child (compute-sanitizer does, and does not forward signals), else
 * to the process itself (valgrind runs it in-process). */
void rel_signal(struct rel_proc *p, int sig);
/* Whether the child's log contains `text`. */
int rel_log_contains(const struct rel_proc *p, const char *text);
/* A server struct that only names a child's base URL, for rel_do against it. */
void rel_server_for(struct support_server *s, const struct rel_proc *p);

/* Raises RLIMIT_NOFILE to 4096 where the hard limit allows; whether `need`
 * descriptors are then allowed (if not, says so: the caller skips). */
int rel_enough_files(unsigned long need);

long rel_now_ms(void);
void rel_sleep_ms(long ms);

#endif
