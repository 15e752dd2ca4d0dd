/* mhd_static: libmicrohttpd alone, as a ceiling for gpuhttpd's HTTP layer.
 *
 * Every request is answered with an empty 204 once its body (if any) has been read and
 * dropped, so small-request rates and upload rates measure libmicrohttpd with the same
 * daemon flags as the service and nothing behind it. GET /bytes?n=N answers with N
 * bytes sent again and again from one block (an iovec response, no copy), a download
 * ceiling for the HTTP layer. libmicrohttpd copies the vector into the connection's
 * memory, so its entries are 1 MiB long while a quarter of that memory holds them and
 * longer for larger bodies (1 GiB per connection: 1 MiB entries; 4 GiB: 4 MiB).
 *
 * Binds 127.0.0.1 only. Runs until SIGINT or SIGTERM.
 */
#define _GNU_SOURCE
#include "tool_util.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <microhttpd.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_ENTRY (1u << 20)
/* gpuhttpd's defaults (server/http/http.c, server/core/config/config.c), so that a plain run compares
 * like with like: thread per connection with poll(), a 64 KiB connection memory and
 * 4 MiB socket buffers. */
#define GHD_SERVER_CONNECTION_MEMORY (64ULL << 10)
#define GHD_SERVER_SOCKET_BUFFER (4ULL << 20)
#define MAX_BYTES (64ULL << 30)

struct options {
    unsigned int flags;
    unsigned thread_pool;
    uint64_t memory_limit;
    uint64_t socket_buffer; /* SO_SNDBUF and SO_RCVBUF of each connection; 0 = autotuning */
    unsigned connection_limit;
    int port;
    const char *port_file;
};

static unsigned char *block; /* block_size bytes of 0x5A */
static size_t block_size;
static uint64_t max_entries;  /* vector entries that fit in a quarter of the connection memory */
static struct MHD_Response *empty_response;
static int request_marker;

/* The length of each vector entry for an n-byte body: MIN_ENTRY, or longer when
 * max_entries of those would not cover it. */
static size_t entry_size(uint64_t n)
{
    uint64_t per_entry = (n + max_entries - 1) / max_entries;
    return per_entry < MIN_ENTRY ? MIN_ENTRY : (size_t)per_entry;
}

static struct MHD_Response *bytes_response(uint64_t n)
{
    size_t entry = entry_size(n);
    size_t count = (size_t)((n + entry - 1) / entry);
    struct MHD_IoVec *iov = calloc(count ? count : 1, sizeof *iov);
    if (!iov)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        iov[i].iov_base = block;
        iov[i].iov_len = i + 1 < count ? entry : (size_t)(n - (uint64_t)i * entry);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_iovec(iov, (unsigned int)count, NULL, NULL);
    free(iov); /* the response keeps its own copy of the vector */
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    return resp;
}

static enum MHD_Result answer_bytes(struct MHD_Connection *conn)
{
    const char *arg = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "n");
    uint64_t n;
    if (!arg || lg_parse_size(arg, &n) != 0 || n > MAX_BYTES)
        return MHD_queue_response(conn, MHD_HTTP_BAD_REQUEST, empty_response);
    struct MHD_Response *resp = bytes_response(n);
    if (!resp)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)cls;
    (void)version;
    (void)upload_data;
    if (*req_cls == NULL) { /* headers only so far */
        *req_cls = &request_marker;
        return MHD_YES;
    }
    if (*upload_data_size > 0) { /* drop the body piece */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") == 0 && strcmp(url, "/bytes") == 0)
        return answer_bytes(conn);
    return MHD_queue_response(conn, MHD_HTTP_NO_CONTENT, empty_response);
}

static int parse_flags(const char *name, unsigned int *flags)
{
    if (strcmp(name, "thread-per-connection") == 0)
        *flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    else if (strcmp(name, "epoll") == 0)
        *flags |= MHD_USE_EPOLL_INTERNAL_THREAD;
    else if (strcmp(name, "poll") == 0)
        *flags |= MHD_USE_POLL_INTERNAL_THREAD;
    else if (strcmp(name, "select") == 0)
        *flags |= MHD_USE_INTERNAL_POLLING_THREAD;
    else if (strcmp(name, "itc") == 0)
        *flags |= MHD_USE_ITC;
    else if (strcmp(name, "suspend") == 0)
        *flags |= MHD_ALLOW_SUSPEND_RESUME;
    else {
        char *end;
        unsigned long v = strtoul(name, &end, 0);
        if (end == name || *end != '\0')
            return -1;
        *flags |= (unsigned int)v;
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: mhd_static [--port N] [--port-file PATH] [--flags NAME|NUMBER]...\n"
            "                  [--threads N] [--memory-limit BYTES] [--connection-limit N]\n"
            "                  [--socket-buffer BYTES]\n"
            "  --flags: thread-per-connection, epoll, poll, select, itc, suspend, or a\n"
            "  number of MHD_FLAG bits; repeat to combine. --threads N adds a thread pool\n"
            "  (not with thread-per-connection). Defaults as gpuhttpd's: thread per\n"
            "  connection with poll() and ITC, --memory-limit 64K, --socket-buffer 4M.\n");
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {{"port", 1, 0, 'p'},
                                             {"port-file", 1, 0, 'f'},
                                             {"flags", 1, 0, 'F'},
                                             {"threads", 1, 0, 't'},
                                             {"memory-limit", 1, 0, 'm'},
                                             {"connection-limit", 1, 0, 'c'},
                                             {"socket-buffer", 1, 0, 's'},
                                             {0, 0, 0, 0}};
    *opt = (struct options){.port = 8081,
                            .memory_limit = GHD_SERVER_CONNECTION_MEMORY,
                            .socket_buffer = GHD_SERVER_SOCKET_BUFFER};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': opt->port = atoi(optarg); break;
        case 'f': opt->port_file = optarg; break;
        case 'F':
            if (parse_flags(optarg, &opt->flags))
                return -1;
            break;
        case 't': opt->thread_pool = (unsigned)atoi(optarg); break;
        case 'm':
            if (lg_parse_size(optarg, &opt->memory_limit))
                return -1;
            break;
        case 'c': opt->connection_limit = (unsigned)atoi(optarg); break;
        case 's':
            if (lg_parse_size(optarg, &opt->socket_buffer) || opt->socket_buffer > (1u << 30))
                return -1;
            break;
        default: return -1;
        }
    }
    if (!(opt->flags & (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION)))
        opt->flags |=
            MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ITC;
    return optind == argc && opt->port >= 0 && opt->port < 65536 ? 0 : -1;
}

/* As gpuhttpd does (server/http/socket_io.c), when the connection starts. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    const struct options *opt = cls;
    (void)socket_context;
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (code == MHD_CONNECTION_NOTIFY_STARTED && fd)
        lg_set_sockbuf(fd->connect_fd, (int)opt->socket_buffer);
}

static struct MHD_Daemon *start_daemon(const struct options *opt)
{
    static struct sockaddr_in addr;
    addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)opt->port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_OptionItem items[6];
    int n = 0;
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &addr};
    if (opt->thread_pool > 1)
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, opt->thread_pool, NULL};
    if (opt->memory_limit)
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                             (intptr_t)opt->memory_limit, NULL};
    if (opt->connection_limit)
        items[n++] =
            (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, opt->connection_limit, NULL};
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection,
                                         (void *)opt};
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(opt->flags | MHD_USE_ERROR_LOG, (uint16_t)opt->port, NULL, NULL,
                            on_request, NULL, MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

static int announce_port(const struct options *opt, struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : (unsigned)opt->port;
    fprintf(stderr, "mhd_static: listening on 127.0.0.1:%u (flags 0x%x)\n", port, opt->flags);
    if (!opt->port_file)
        return 0;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", opt->port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 || rename(tmp, opt->port_file) != 0) {
        perror("mhd_static: port file");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt;
    if (parse_options(argc, argv, &opt) != 0) {
        usage();
        return 2;
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* the daemon's threads inherit the mask */
    signal(SIGPIPE, SIG_IGN);
    uint64_t memory = opt.memory_limit ? opt.memory_limit : 32 << 10; /* libmicrohttpd's default */
    max_entries = memory / 4 / sizeof(struct MHD_IoVec);
    block_size = entry_size(MAX_BYTES);
    block = malloc(block_size);
    if (!max_entries || !block) {
        fprintf(stderr, "mhd_static: no room for a %llu-byte body's vector\n",
                (unsigned long long)MAX_BYTES);
        return 1;
    }
    memset(block, 0x5A, block_size);
    empty_response = MHD_create_response_from_buffer_static(0, NULL);
    struct MHD_Daemon *daemon = start_daemon(&opt);
    if (!empty_response || !daemon) {
        fprintf(stderr, "mhd_static: could not start the daemon (flags 0x%x)\n", opt.flags);
        return 1;
    }
    int rc = announce_port(&opt, daemon) == 0 ? 0 : 1;
    int sig;
    if (rc == 0)
        sigwait(&stop, &sig);
    MHD_stop_daemon(daemon);
    MHD_destroy_response(empty_response);
    free(block);
    return rc;
}
