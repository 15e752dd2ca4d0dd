#ifndef GHD_TESTS_SUPPORT_REL_H
#define GHD_TESTS_SUPPORT_REL_H

/* The support_* helpers the security and reliability tests use most, over
 * the same server and requests as harness.h: the server started from a
 * whole configuration (host backend, small pool and staging ring), JSON
 * shorthands on support_do_call, raw-socket helpers (support_raw_*) for
 * clients that misbehave, the resting-state checks (pool bytes in use,
 * staging chunks busy, requests in flight) and the server as a child
 * process (support_child_*). */

#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "server.h"

/* Defaults for tests: host backend (GHD_TEST_BACKEND=cuda or auto to change it),
 * port 0, 64 KiB staging chunks x 8, warn-level logs. */
void support_config(struct ghd_config *cfg);
/* Starts service and HTTP server; aborts the test on failure. */
void support_start_config(struct support_server *s, const struct ghd_config *cfg);
/* The same, but returns the error and its reason in `err` instead of failing. */
int support_try_start(struct support_server *s, const struct ghd_config *cfg, struct ghd_err *err);
/* support_try_start serving `routes` instead of the service's own table. */
int support_try_start_routes(struct support_server *s, const struct ghd_config *cfg,
                             const struct ghd_routes *routes, struct ghd_err *err);
/* Starts the probe listener (--probe-port) of a started server on a free
 * port of 127.0.0.1; support_stop stops it. Aborts the test on failure. */
void support_start_probe(struct support_server *s);
/* cmocka group fixtures: a server of its own, started with `cfg`, becomes
 * *state; support_teardown stops and frees it. */
int support_setup_with(void **state, const struct ghd_config *cfg);
int support_teardown(void **state);

/* Fails the test unless the reply has `status` and, where needle is not
 * NULL, its body contains needle; the message shows the whole body. */
void support_expect_reply(const struct support_resp *r, long status, const char *needle);
/* A string member of a JSON body, copied; "" if absent. */
void support_json_str(const struct support_resp *r, const char *key, char *out, size_t cap);
/* `n` bytes as standard base64 with padding (what "cuda_ipc" takes) into
 * out, which holds 4 * ((n + 2) / 3) + 1 bytes. */
void support_base64(const void *data, size_t n, char *out);
/* A buffer's version (GET /v1/buffers/<id>/meta as `token`). */
uint64_t support_buffer_version(const struct support_server *s, const char *token, const char *id);
/* Creates a buffer of `size` bytes (JSON) and copies its id; returns the status. */
long support_buffer_try_create(const struct support_server *s, const char *token, size_t size, char *id, size_t cap);

/* Raw sockets. */
int support_raw_connect(unsigned port);
/* A TCP port of 127.0.0.1 free a moment ago (bound to port 0, then closed),
 * for a child's option that cannot take 0. */
unsigned support_free_port(void);
/* A connection to the server from source address `src` (127.x.y.z: Linux
 * routes all of 127.0.0.0/8 to lo); fails the test when it cannot be made. */
int support_raw_connect_from(unsigned port, const char *src);
/* 0 when every byte went out, -1 otherwise. */
int support_raw_send(int fd, const void *buf, size_t len);
/* Reads until the peer closes or timeout_ms pass; returns the bytes read
 * (NUL-terminated in buf), -1 on a socket error. *closed says whether EOF or
 * a reset was seen. */
long support_raw_recv(int fd, char *buf, size_t cap, long timeout_ms, int *closed);
/* Connects, sends the head of an octet-stream upload (`method` `path` with
 * Content-Length `total`) and then `first` zero bytes of its body; returns the
 * socket. Fails the test when the server cannot be reached. */
int support_raw_begin_upload(unsigned port, const char *method, const char *path, size_t total,
                             size_t first);
/* PUTs `len` bytes of octet-stream to buffer `id` (token may be NULL);
 * returns the status. */
long support_buffer_try_put(const struct support_server *s, const char *token, const char *id, const void *data,
             size_t len);
/* On a connection of its own: sends `len` raw bytes of `msg`, reads the
 * answer into buf as support_raw_recv does (up to timeout_ms, *closed when the server
 * closed), and closes. */
void support_raw_exchange(unsigned port, const char *msg, size_t len, char *buf, size_t cap,
                          long timeout_ms, int *closed);
/* support_raw_begin_upload of a PUT to buffer `id`. */
int support_raw_begin_put(unsigned port, const char *id, size_t total, size_t first);
/* Waits up to timeout_ms for EOF or reset; 1 if the server closed it. */
int support_raw_wait_closed(int fd, long timeout_ms);
/* The status code of the first response in buf, or 0. */
int support_raw_status_of(const char *buf);

/* Resting state: no pool bytes in use beyond `baseline`, no staging chunk
 * busy, no request in flight. Waits up to timeout_ms for it; returns 1 when
 * reached. Prints what differs otherwise. */
int support_wait_rest(struct support_server *s, size_t pool_baseline, long timeout_ms);
size_t support_pool_in_use(struct support_server *s);
unsigned support_staging_busy(struct support_server *s);

/* The gpuhttpd binary as a child process: GHD_BIN names it (ctest sets it).
 * `args` (NULL-terminated) follow --port 0 --port-file and --backend host;
 * `env` ("NAME=value", NULL-terminated, may be NULL) is added to the
 * environment. If GHD_TEST_WRAPPER is set (e.g. "valgrind --error-exitcode=9"),
 * the binary runs under it. stdout and stderr go to `log_path`. Waits up to
 * timeout_ms for the port. Returns the pid, or -1 (reason printed). */
struct support_child {
    int pid;
    unsigned port;
    char base[64];
    char log_path[256];
};
int support_child_spawn(struct support_child *p, const char *const *args, const char *const *env,
              long timeout_ms);
/* Waits up to timeout_ms for the child to exit; returns its exit code, 128 +
 * signal, or -1 when it is still running. */
int support_child_wait_exit(struct support_child *p, long timeout_ms);
/* The same, and a server still running at the end is killed (-1 returned):
 * a failed stop never leaves a process behind. */
int support_child_wait_exit_or_kill(struct support_child *p, long timeout_ms);
/* Kills (SIGKILL) and reaps a child still running. */
void support_child_kill(struct support_child *p);
/* Sends `sig` to the server: to the wrapper's children when GHD_TEST_WRAPPER runs
 * it as a child (compute-sanitizer does, and does not forward signals), else
 * to the process itself (valgrind runs it in-process). */
void support_child_signal(struct support_child *p, int sig);
/* Whether the child's log contains `text`. */
int support_child_log_contains(const struct support_child *p, const char *text);
/* A server struct that only names a child's base URL, for support_do_call against it. */
void support_server_for(struct support_server *s, const struct support_child *p);

/* Raises RLIMIT_NOFILE to 4096 where the hard limit allows; whether `need`
 * descriptors are then allowed (if not, says so: the caller skips). */
int support_enough_files(unsigned long need);

long support_now_ms(void);
void support_sleep_ms(long ms);

#endif
