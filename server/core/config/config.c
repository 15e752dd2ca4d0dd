#include "config.h"
#include "config_spec.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/http_post.h"
#include "base/log.h"
#include "base/owner.h"
#include "base/parse.h"

#define OFF(f) offsetof(struct ghd_config, f)
#define STR_MAX(f) (sizeof(((struct ghd_config *)0)->f))

static const struct option_spec specs[] = {
    {"port", OPT_UINT, OFF(port), 0, 0, 65535, "8080", "TCP port to listen on (0 picks a free one)"},
    {"probe-port", OPT_UINT, OFF(probe_port), 0, 0, 65535, "0",
     "plain-HTTP port on --bind serving only /healthz, /readyz and /metrics (its token as on "
     "--port), without TLS: for health checks and probes when --tls-cert is set (0 = none)"},
    {"agent-port", OPT_UINT, OFF(agent_port), 0, 0, 65535, "0",
     "TCP port on --bind answering HAProxy's agent check with one line: 'up N%' (N: the "
     "device pool's free share, the proxy's weight for new buffers), 'drain' while stopping, "
     "'down' without a usable device (0 = none)"},
    {"instance", OPT_STRING, OFF(instance_text), STR_MAX(instance_text), 0, 0, "auto",
     "this instance's number, 0..9999, which every id it makes starts with so that a proxy "
     "can route by owner (auto: the hostname's trailing number, gpuhttpd-3 -> 3, else 0)"},
    {"advertise-url", OPT_STRING, OFF(advertise_url), STR_MAX(advertise_url), 0, 0, "",
     "the URL clients reach this instance at without the proxy (http://gpuhttpd-2.gpuhttpd-pods:"
     "8080): on /readyz, GET /v1/cluster and the Gpuhttpd-Owner-Url header (empty: none)"},
    {"peers", OPT_STRING, OFF(peers), STR_MAX(peers), 0, 0, "",
     "the other instances' advertised URLs, separated by commas (this one's own is ignored): "
     "their /readyz is read every second for GET /v1/cluster, redirects and listings"},
    {"bind", OPT_STRING, OFF(bind), STR_MAX(bind), 0, 0, "127.0.0.1", "IPv4 address to listen on"},
    {"backend", OPT_BACKEND, OFF(backend), 0, 0, 0, "auto", "auto, cuda or host"},
    {"devices", OPT_STRING, OFF(devices), STR_MAX(devices), 0, 0, "all",
     "the devices to serve: all (every visible one), or CUDA ordinals and GPU UUIDs separated "
     "by commas (0,1,3 or GPU-...); on the host backend 0 to N-1 or host-N of --host-devices"},
    {"device", OPT_STRING, OFF(device), STR_MAX(device), 0, 0, "",
     "one CUDA device ordinal: the same as --devices N"},
    {"host-devices", OPT_UINT, OFF(host_devices), 0, 1, 16, "1",
     "devices the host backend simulates, each with a pool and limit of its own"},
    {"placement", OPT_STRING, OFF(placement), STR_MAX(placement), 0, 0, "most-free",
     "where a buffer or run goes when the request names no device: most-free (the device "
     "with the most free pool, the lowest index on a tie) or round-robin"},
    {"ready-needs", OPT_STRING, OFF(ready_needs), STR_MAX(ready_needs), 0, 0, "any",
     "the devices /readyz needs ready to answer 200: any (at least one) or all"},
    {"pool-limit", OPT_SIZE_OR_PERCENT, OFF(pool_limit), OFF(pool_limit_percent), 0, 0, "90%",
     "most memory each device's pool may reserve: bytes (K/M/G/T) or N% of each device"},
    {"pool-alignment", OPT_SIZE, OFF(pool_alignment), 0, 256, 1 << 20, "256",
     "alignment of every buffer, a power of two >= 256"},
    {"pool-slab", OPT_SIZE, OFF(pool_slab), 0, 2 << 20, 1ULL << 40, "256M",
     "bytes the pool reserves from the device at a time"},
    {"pool-initial", OPT_SIZE, OFF(pool_initial), 0, 0, 1ULL << 40, "256M",
     "bytes the pool reserves at start"},
    {"staging-chunk", OPT_SIZE, OFF(staging_chunk), 0, 64 << 10, 1 << 30, "8M",
     "size of one pinned staging chunk"},
    {"staging-chunks", OPT_UINT, OFF(staging_chunks), 0, 2, 4096, "32",
     "number of pinned staging chunks of each device (allocated once at start)"},
    {"staging-small-chunk", OPT_SIZE, OFF(staging_small_chunk), 0, 4 << 10, 16 << 20, "64K",
     "size of one small pinned staging chunk, for transfers that fit in one"},
    {"staging-small-chunks", OPT_UINT, OFF(staging_small_chunks), 0, 0, 65536, "256",
     "number of small pinned staging chunks of each device (0 = small transfers use the main "
     "ring)"},
    {"staging-timeout-ms", OPT_UINT, OFF(staging_timeout_ms), 0, 1, 600000, "10000",
     "how long a transfer waits for a free staging chunk before 503"},
    {"staging-hold", OPT_UINT, OFF(staging_hold_s), 0, 0, 3600, "10",
     "seconds an upload may hold staging chunks; a slower one goes on without (0 = no bound)"},
    {"staging-address-share", OPT_UINT, OFF(staging_address_share), 0, 0, 100, "75",
     "percent of a staging ring's chunks one client address may hold at once; more waits, "
     "then 429 (0 = no cap)"},
    {"staging-tenant-share", OPT_UINT, OFF(staging_tenant_share), 0, 0, 100, "75",
     "percent of a staging ring's chunks one tenant may hold at once; more waits, then 429 "
     "(0 = no cap)"},
    {"sync-spin-us", OPT_UINT, OFF(sync_spin_us), 0, 0, 100000, "50",
     "microseconds a request polls (yielding the CPU) for a short device copy before it "
     "sleeps until the GPU signals (0 = sleep at once)"},
    {"max-buffer-size", OPT_SIZE, OFF(max_buffer_size), 0, 1, 1ULL << 46, "64G",
     "largest buffer a client may allocate"},
    {"max-json-body", OPT_SIZE, OFF(max_json_body), 0, 256, 64 << 20, "1M",
     "largest JSON request body"},
    {"connection-limit", OPT_UINT, OFF(connection_limit), 0, 1, 100000, "1000",
     "most concurrent connections"},
    {"connection-timeout", OPT_UINT, OFF(connection_timeout_s), 0, 0, 86400, "60",
     "seconds an idle connection is kept (0 = forever)"},
    {"connection-memory", OPT_SIZE, OFF(connection_memory), 0, 32 << 10, 64 << 20, "64K",
     "per-connection read buffer (bounds the size of body pieces)"},
    {"direct-copy", OPT_UINT, OFF(direct_copy), 0, 0, 1, "1",
     "1: copy large upload pieces to the device straight from the page-locked read buffer; "
     "0: always through the staging ring"},
    {"socket-upload-min", OPT_SIZE, OFF(socket_upload_min), 0, 0, 1ULL << 46, "16M",
     "plain-HTTP upload bodies this large are received from the socket straight into pinned "
     "chunks, past libmicrohttpd; their reply closes the connection (0 = never)"},
    {"socket-recv-max", OPT_SIZE, OFF(socket_recv_max), 0, 0, 1 << 30, "8M",
     "most bytes one recv() of such an upload asks for, into its pinned chunk (0 = the chunk's "
     "free space)"},
    {"socket-bounce", OPT_SIZE, OFF(socket_bounce), 0, 0, 64 << 20, "0",
     "such an upload's recv()s go into a buffer of this size, which stays in the CPU's caches, "
     "and are copied into the pinned chunk by streaming stores (0 = recv() straight into the "
     "chunk); --socket-recv-max still bounds each recv(). 256K read 1.01-1.07x at 8 "
     "connections on the H200 machine; at 16 on its 16 cores, where the copy's CPU is missed, "
     "0.74-0.90x unbounded and 1.05x past --socket-bounce-uploads"},
    {"socket-bounce-uploads", OPT_UINT, OFF(socket_bounce_uploads), 0, 0, 100000, "0",
     "with --socket-bounce: the buffer is used only while at most this many socket uploads "
     "are receiving; past that their pieces go straight into the chunks, sparing the copy's "
     "CPU for the kernel's (0 = half the CPUs the server may run on)"},
    {"download-block", OPT_SIZE, OFF(download_block), 0, 64 << 10, 64 << 20, "4M",
     "most bytes of a download's window (copied by DMA into its chunk, sent from there)"},
    {"download-overlap", OPT_UINT, OFF(download_overlap), 0, 0, 1, "0",
     "0: a download window is sent right after its DMA, still in the CPU's cache; 1: the next "
     "window's DMA overlaps the send (half a chunk each; 1.13x slower at 16 conns, run 48)"},
    {"socket-buffer", OPT_SIZE, OFF(socket_buffer), 0, 0, 1 << 30, "4M",
     "kernel send and receive buffer of each connection's socket (0 = the kernel's "
     "autotuning)"},
    {"runs-kept", OPT_UINT, OFF(runs_kept), 0, 1, 1000000, "1024",
     "finished runs kept for GET; when full, the tenant keeping the most forgets its oldest"},
    {"run-keep-s", OPT_UINT, OFF(run_keep_s), 0, 1, 86400 * 7, "600",
     "seconds a finished run is kept"},
    {"run-wait-max", OPT_UINT, OFF(run_wait_max_s), 0, 0, 3600, "60",
     "most seconds GET /v1/runs/{id}?wait= holds its request until the run ends (a longer "
     "wait is cut to this; 0 = answer at once)"},
    {"run-queue-limit", OPT_UINT, OFF(run_queue_limit), 0, 1, 1000000, "1024",
     "most runs queued or running at once"},
    {"run-workers", OPT_UINT, OFF(run_workers), 0, 1, 64, "4",
     "runs executed at once on each device, each on a stream of its own; runs that share a "
     "buffer one of them writes still run in the order they were submitted"},
    {"run-priority", OPT_UINT, OFF(run_priority), 0, 0, 1, "1",
     "with tenant tokens, 1 runs a run of a tenant below another's share of the device on a "
     "high-priority stream, ahead of the blocks of that tenant's running kernels; 0 does not"},
    {"run-inline", OPT_UINT, OFF(run_inline), 0, 0, 1, "1",
     "1 executes a run its request waits for on the request's own thread when a worker of "
     "its device is idle and nothing is queued there (the scheduler decides; elementwise and "
     "BLAS-1 built-ins only): no hand-off; a kernel not done within 200 us is left to that "
     "worker, so the client still hears of a stop or a lost device; 0: always a worker"},
    {"run-graphs", OPT_UINT, OFF(run_graphs), 0, 0, 4096, "64",
     "pipelines kept captured as device graphs, replayed when run again over the same "
     "buffers (0 = none)"},
    {"run-batch-max", OPT_UINT, OFF(run_batch_max), 0, 1, 1024, "64",
     "most runs in one POST /v1/runs list"},
    {"default-ttl", OPT_UINT, OFF(default_ttl_s), 0, 0, 86400 * 365, "0",
     "default buffer time to live in seconds (0 = none)"},
    {"log-level", OPT_STRING, OFF(log_level), STR_MAX(log_level), 0, 0, "info",
     "debug, info, warn or error"},
    {"log-format", OPT_STRING, OFF(log_format), STR_MAX(log_format), 0, 0, "text", "text or json"},
    {"port-file", OPT_STRING, OFF(port_file), STR_MAX(port_file), 0, 0, "",
     "write the bound port to this file once listening"},
    {"docs-dir", OPT_STRING, OFF(docs_dir), STR_MAX(docs_dir), 0, 0, "",
     "folder with the Swagger UI assets for /docs"},
    {"tokens-file", OPT_STRING, OFF(tokens_file), STR_MAX(tokens_file), 0, 0, "",
     "file of 'token tenant' lines (# comments); /v1 then needs a bearer token; "
     "re-read on SIGHUP and when it changes"},
    {"tokens", OPT_STRING, OFF(tokens), STR_MAX(tokens), 0, 0, "",
     "bearer tokens as token:tenant,token:tenant (set it in the environment: flags show in ps)"},
    {"metrics-token", OPT_STRING, OFF(metrics_token), STR_MAX(metrics_token), 0, 0, "",
     "bearer token that /metrics then requires (with tokens configured and neither this nor "
     "--metrics-public, /metrics answers 401 to everyone)"},
    {"metrics-token-file", OPT_STRING, OFF(metrics_token_file), STR_MAX(metrics_token_file), 0, 0,
     "", "file holding the --metrics-token (a mounted Secret's key), re-read on SIGHUP and "
     "when it changes"},
    {"metrics-public", OPT_FLAG, OFF(metrics_public), 0, 0, 1, "0",
     "serve /metrics and /readyz's figures without a token while tenant tokens are "
     "configured: every tenant then sees the pool's use and the inline-definition cache's "
     "hits, which tell of the others' work (no argument; env: 1 or 0)"},
    {"metrics-tenant-label", OPT_FLAG, OFF(metrics_tenant_label), 0, 0, 1, "0",
     "show each tenant's runs, device time and transfer bytes on /metrics with a `tenant` "
     "label (tenant names then reach whoever reads /metrics) (no argument; env: 1 or 0)"},
    {"allow-unauthenticated", OPT_FLAG, OFF(allow_unauthenticated), 0, 0, 1, "0",
     "serve a non-loopback --bind without tokens (no argument; env: 1 or 0)"},
    {"per-ip-connection-limit", OPT_UINT, OFF(per_ip_connection_limit), 0, 0, 100000, "128",
     "most concurrent connections from one IP address; more are closed as they arrive, "
     "counted and logged (0 = no limit; behind a proxy every client has its address)"},
    {"tenant-share", OPT_UINT, OFF(tenant_share), 0, 0, 100, "50",
     "with tokens configured: percent of each device's pool (over it: 507), of --max-buffers "
     "and of --run-queue-limit (over them: 429) one tenant may take, where --tenant-max-bytes, "
     "--tenant-max-buffers and --tenant-max-runs are 0 (0 = no share; without tokens there "
     "is one tenant, unlimited)"},
    {"tenant-max-bytes", OPT_SIZE, OFF(tenant_max_bytes), 0, 0, 1ULL << 46, "0",
     "most buffer bytes one tenant may hold on all devices, in place of --tenant-share of each "
     "pool (0 = the share; over it: 507)"},
    {"tenant-max-buffers", OPT_UINT, OFF(tenant_max_buffers), 0, 0, 100000000, "0",
     "most buffers one tenant may hold, in place of --tenant-share of --max-buffers (0 = the "
     "share; over it: 429)"},
    {"tenant-max-runs", OPT_UINT, OFF(tenant_max_runs), 0, 0, 1000000, "0",
     "most runs one tenant may have queued or running, in place of --tenant-share of "
     "--run-queue-limit (0 = the share; over it: 429)"},
    {"max-buffers", OPT_UINT, OFF(max_buffers), 0, 1, 100000000, "1048576",
     "most buffers held at once, every tenant's (over it: 429)"},
    {"tenant-max-kernels", OPT_UINT, OFF(tenant_max_kernels), 0, 1, 256, "64",
     "most user kernels one tenant may define (POST /v1/kernels; over it: 429)"},
    {"kernel-max-definition", OPT_SIZE, OFF(kernel_max_definition), 0, 256, 1 << 20, "16K",
     "most bytes of text in one user kernel definition (over it: 413)"},
    {"kernel-max-depth", OPT_UINT, OFF(kernel_max_depth), 0, 4, 256, "64",
     "deepest expression nesting in a user kernel definition (over it: 422)"},
    {"max-elements", OPT_UINT, OFF(max_elements), 0, 1, 4294967295ULL, "268435456",
     "largest n of a user kernel run where no buffer argument holds the n elements (a "
     "reduction of numbers or raw buffers with its output left out; over it: 422)"},
    {"kernel-cache-dir", OPT_STRING, OFF(kernel_cache_dir), STR_MAX(kernel_cache_dir), 0, 0, "",
     "folder for compiled user kernels and raw modules and for the checked definitions runs "
     "send by value (kept across restarts; none = memory only)"},
    {"kernel-cache-max", OPT_SIZE, OFF(kernel_cache_max), 0, 1 << 20, 1ULL << 40, "256M",
     "most bytes --kernel-cache-dir may hold (the oldest entries go first)"},
    {"compile-workers", OPT_UINT, OFF(compile_workers), 0, 1, 64, "2",
     "threads compiling user kernels with NVRTC"},
    {"compile-queue", OPT_UINT, OFF(compile_queue), 0, 1, 10000, "16",
     "user kernel compiles that may wait for a compile thread (over it: 429)"},
    {"inline-cache", OPT_UINT, OFF(inline_cache), 0, 1, 65536, "256",
     "user kernels and raw modules sent by value in runs that are kept built in memory, "
     "shared by content (the least recently used go first; a tenant's share is "
     "--tenant-max-kernels and --tenant-max-modules)"},
    {"allow-raw-kernels", OPT_FLAG, OFF(allow_raw_kernels), 0, 0, 1, "0",
     "accept raw CUDA modules (POST /v1/modules) from tenants whose token has the 'raw' "
     "permission (every client without tokens); their code can read and write all device "
     "memory of the process (no argument; env: 1 or 0)"},
    {"tenant-max-modules", OPT_UINT, OFF(tenant_max_modules), 0, 1, 1024, "32",
     "most raw CUDA modules one tenant may hold (over it: 429)"},
    {"module-max-source", OPT_SIZE, OFF(module_max_source), 0, 256, 16 << 20, "1M",
     "most bytes of CUDA source in one module (over it: 413)"},
    {"allow-shm", OPT_FLAG, OFF(allow_shm), 0, 0, 1, "0",
     "accept regions (POST /v1/regions): shared-memory segments and CUDA IPC memory of clients "
     "on this host, opened by name with the server's own permissions; any tenant may then "
     "register a segment the server's user can open (no argument; env: 1 or 0)"},
    {"shm-allow-shared", OPT_FLAG, OFF(shm_allow_shared), 0, 0, 1, "0",
     "accept segments another user owns or whose mode grants group or other access (by "
     "default only the server's user's segments of mode 0600 or narrower; no argument; "
     "env: 1 or 0)"},
    {"tenant-max-regions", OPT_UINT, OFF(tenant_max_regions), 0, 0, 100000, "16",
     "most regions one tenant may register (0 = no limit; over it: 429)"},
    {"tenant-max-pinned", OPT_SIZE, OFF(tenant_max_pinned), 0, 0, 1ULL << 46, "32G",
     "most bytes of shared-memory regions one tenant may have page-locked (0 = no limit; "
     "over it: 507)"},
    {"run-timeout", OPT_UINT, OFF(run_timeout_s), 0, 0, 86400 * 7, "60",
     "seconds a run may execute, and the most a run's timeout_s may ask; past its timeout a "
     "run is stopped at its next stop point (the next step; within a user kernel) and fails "
     "alone (422); a step that cannot be stopped (a built-in, cuBLAS, a raw module) still "
     "running this long after the timeout loses the device (0 = no limit: runs end only "
     "when they finish, unless they ask for a timeout_s)"},
    {"on-device-loss", OPT_STRING, OFF(on_device_loss), STR_MAX(on_device_loss), 0, 0, "stay",
     "what a lost device (a faulting kernel, a run past --run-timeout) does: exit (after the "
     "replies in flight, with status 3, for a supervisor to restart) or stay (its buffers, runs "
     "and modules answer 503, the other devices serve)"},
    {"shutdown-grace", OPT_UINT, OFF(shutdown_grace_s), 0, 0, 3600, "30",
     "seconds SIGTERM waits for transfers and runs in flight before closing"},
    {"header-timeout", OPT_UINT, OFF(header_timeout_s), 0, 0, 86400, "30",
     "seconds a client has to send a whole request head (0 = no limit; slowloris guard)"},
    {"min-transfer-rate", OPT_SIZE, OFF(min_transfer_rate), 0, 0, 1ULL << 40, "1K",
     "bytes/s a body upload or a response must keep up, or the connection is dropped "
     "(0 = no limit)"},
    {"transfer-rate-window", OPT_UINT, OFF(transfer_rate_window_s), 0, 1, 3600, "10",
     "seconds over which --min-transfer-rate is measured"},
    {"tls-cert", OPT_STRING, OFF(tls_cert), STR_MAX(tls_cert), 0, 0, "",
     "PEM certificate (chain) file: serve HTTPS (needs --tls-key)"},
    {"tls-key", OPT_STRING, OFF(tls_key), STR_MAX(tls_key), 0, 0, "",
     "PEM private key file for --tls-cert"},
    {"otlp-endpoint", OPT_STRING, OFF(otlp_endpoint), STR_MAX(otlp_endpoint), 0, 0, "",
     "send the spans of sampled requests to this OTLP/HTTP collector (JSON; http:// only; "
     "no path: /v1/traces), in batches from a thread of its own ('' = tracing off)"},
    {"trace-sample", OPT_STRING, OFF(trace_sample), STR_MAX(trace_sample), 0, 0, "1",
     "with --otlp-endpoint: ratio 0..1 of new traces sampled (a caller's traceparent decides)"},
    {"spill", OPT_FLAG, OFF(spill), 0, 0, 1, "0",
     "never answer 507 for a full pool while buffers can move out: spill idle buffers whole "
     "to the host tier (--host-tier, by default half the host's memory) and the disk tier "
     "(--disk-tier), paged back in before a run uses them (no argument; env: 1 or 0)"},
    {"host-tier", OPT_SIZE, OFF(host_tier), 0, 0, 1ULL << 50, "0",
     "bytes of host memory (page-locked on CUDA) that spills may fill (0: none, --spill: half)"},
    {"disk-tier", OPT_STRING, OFF(disk_tier), STR_MAX(disk_tier), 0, 0, "",
     "folder where buffers spill when the host tier is full (created if missing)"},
    {"disk-tier-size", OPT_SIZE, OFF(disk_tier_size), 0, 0, 1ULL << 56, "0",
     "most bytes the disk tier may hold (0 = the folder's free space at start)"},
};

#define SPEC_COUNT (sizeof(specs) / sizeof(specs[0]))

/* Values never echoed in error messages. */
static int is_secret(const struct option_spec *sp)
{
    return sp->offset == OFF(tokens) || sp->offset == OFF(metrics_token);
}

int ghd_parse_size(const char *s, size_t *out)
{
    uint64_t v;
    const char *end = s ? ghd_parse_u64_prefix(s, &v) : NULL;
    if (!end)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    case 'T': case 't': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' && shift) /* accept KiB-style "Ki", "Mi" */
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (shift && v > (SIZE_MAX >> shift)))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int apply(struct ghd_config *cfg, const struct option_spec *sp, const char *value)
{
    char *base = (char *)cfg;
    switch (sp->type) {
    case OPT_UINT: {
        uint64_t v;
        if (ghd_parse_u64(value, &v) || v < sp->min || v > sp->max)
            return -1;
        *(unsigned *)(base + sp->offset) = (unsigned)v;
        return 0;
    }
    case OPT_SIZE: {
        size_t v;
        if (ghd_parse_size(value, &v) || v < sp->min || v > sp->max)
            return -1;
        *(size_t *)(base + sp->offset) = v;
        return 0;
    }
    case OPT_SIZE_OR_PERCENT: {
        size_t len = strlen(value), v;
        if (len > 1 && value[len - 1] == '%') {
            char num[32];
            if (len > sizeof(num))
                return -1;
            memcpy(num, value, len - 1);
            num[len - 1] = '\0';
            if (ghd_parse_size(num, &v) || v == 0 || v > 100)
                return -1;
            *(unsigned *)(base + sp->aux_offset) = (unsigned)v;
            *(size_t *)(base + sp->offset) = 0;
            return 0;
        }
        if (ghd_parse_size(value, &v))
            return -1;
        *(unsigned *)(base + sp->aux_offset) = 0;
        *(size_t *)(base + sp->offset) = v;
        return 0;
    }
    case OPT_STRING:
        if (strlen(value) >= sp->aux_offset)
            return -1;
        strcpy(base + sp->offset, value);
        return 0;
    case OPT_FLAG:
        if (strcmp(value, "1") == 0 || strcasecmp(value, "true") == 0 ||
            strcasecmp(value, "yes") == 0)
            *(unsigned *)(base + sp->offset) = 1;
        else if (strcmp(value, "0") == 0 || strcasecmp(value, "false") == 0 ||
                 strcasecmp(value, "no") == 0)
            *(unsigned *)(base + sp->offset) = 0;
        else
            return -1;
        return 0;
    case OPT_BACKEND:
        if (strcmp(value, "auto") == 0)
            cfg->backend = GHD_CHOICE_AUTO;
        else if (strcmp(value, "cuda") == 0)
            cfg->backend = GHD_CHOICE_CUDA;
        else if (strcmp(value, "host") == 0)
            cfg->backend = GHD_CHOICE_HOST;
        else
            return -1;
        return 0;
    }
    return -1;
}

void ghd_config_defaults(struct ghd_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < SPEC_COUNT; i++)
        if (apply(cfg, &specs[i], specs[i].def) != 0)
            abort(); /* a default that does not parse is a programming error */
    cfg->trace_ratio = 1.0; /* --trace-sample's default, parsed */
}

/* --instance auto is the hostname's trailing number (a StatefulSet's pod
 * ordinal); anything else a number in range. */
static int resolve_instance(struct ghd_config *cfg, FILE *err)
{
    uint64_t v;
    if (strcmp(cfg->instance_text, "auto") == 0) {
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        cfg->instance = ghd_owner_from_hostname(host);
        return 0;
    }
    if (ghd_parse_u64(cfg->instance_text, &v) != 0 || v > GHD_OWNER_INSTANCE_MAX) {
        fprintf(err, "gpuhttpd: --instance must be auto or a number 0..%d\n",
                GHD_OWNER_INSTANCE_MAX);
        return -1;
    }
    cfg->instance = (unsigned)v;
    return 0;
}

/* --devices: "all", or at most 16 distinct ordinals (0..63) and UUIDs;
 * --device N is the one-device list it always was. Which of them exist is
 * the backend's to say (core/service.c). */
static int resolve_devices(struct ghd_config *cfg, FILE *err)
{
    if (cfg->device[0]) {
        uint64_t v;
        if (ghd_parse_u64(cfg->device, &v) != 0 || v > 63) {
            fprintf(err, "gpuhttpd: --device must be a CUDA ordinal 0..63\n");
            return -1;
        }
        if (strcmp(cfg->devices, "all") != 0 && strcmp(cfg->devices, cfg->device) != 0) {
            fprintf(err, "gpuhttpd: give --devices or --device, not both\n");
            return -1;
        }
        snprintf(cfg->devices, sizeof(cfg->devices), "%s", cfg->device);
    }
    if (strcmp(cfg->devices, "all") == 0)
        return 0;
    char items[16][64];
    unsigned n = 0;
    for (const char *p = cfg->devices;; p++) {
        size_t len = strcspn(p, ",");
        uint64_t v;
        char item[64];
        snprintf(item, sizeof(item), "%.*s", (int)(len < 63 ? len : 63), p);
        int number = ghd_parse_u64(item, &v) == 0 && v <= 63;
        int uuid = len > 4 && len < 48 && (strncmp(p, "GPU-", 4) == 0 ||
                                           strncmp(p, "MIG-", 4) == 0 ||
                                           strncmp(p, "host-", 5) == 0);
        if (!number && !uuid) {
            fprintf(err, "gpuhttpd: --devices: '%s' is neither an ordinal 0..63 nor a device "
                         "UUID (GPU-..., host-N); give all or a list like 0,1,3\n", item);
            return -1;
        }
        for (unsigned i = 0; i < n; i++)
            if (strcmp(items[i], item) == 0) {
                fprintf(err, "gpuhttpd: --devices names '%s' twice\n", item);
                return -1;
            }
        if (n == 16) {
            fprintf(err, "gpuhttpd: --devices names more than 16 devices\n");
            return -1;
        }
        snprintf(items[n++], sizeof(items[0]), "%s", item);
        if (!p[len])
            return 0;
        p += len;
    }
}

/* --otlp-endpoint is an http:// URL; --trace-sample a ratio 0..1, kept parsed. */
static int check_tracing(struct ghd_config *cfg, FILE *err)
{
    struct ghd_http_url url;
    struct ghd_err why = {0};
    if (cfg->otlp_endpoint[0] && ghd_http_url_parse(cfg->otlp_endpoint, &url, &why) != 0) {
        fprintf(err, "gpuhttpd: --otlp-endpoint: %s\n", why.detail);
        return -1;
    }
    char *end = NULL;
    errno = 0;
    cfg->trace_ratio = strtod(cfg->trace_sample, &end);
    if (errno || end == cfg->trace_sample || *end || !(cfg->trace_ratio >= 0.0) ||
        cfg->trace_ratio > 1.0) {
        fprintf(err, "gpuhttpd: --trace-sample must be a ratio from 0 to 1 (0.01 keeps one "
                     "new trace in a hundred)\n");
        return -1;
    }
    return 0;
}

/* Cross-option checks that a single value cannot express. */
static int validate(struct ghd_config *cfg, FILE *err)
{
    enum ghd_log_level lvl;
    enum ghd_log_format fmt;
    if (cfg->pool_alignment & (cfg->pool_alignment - 1)) {
        fprintf(err, "gpuhttpd: --pool-alignment must be a power of two >= 256\n");
        return -1;
    }
    if (ghd_log_level_parse(cfg->log_level, &lvl)) {
        fprintf(err, "gpuhttpd: --log-level must be debug, info, warn or error\n");
        return -1;
    }
    if (ghd_log_format_parse(cfg->log_format, &fmt)) {
        fprintf(err, "gpuhttpd: --log-format must be text or json\n");
        return -1;
    }
    if (strcmp(cfg->on_device_loss, "exit") != 0 && strcmp(cfg->on_device_loss, "stay") != 0) {
        fprintf(err, "gpuhttpd: --on-device-loss must be exit or stay\n");
        return -1;
    }
    if (strcmp(cfg->placement, "most-free") != 0 && strcmp(cfg->placement, "round-robin") != 0) {
        fprintf(err, "gpuhttpd: --placement must be most-free or round-robin\n");
        return -1;
    }
    if (strcmp(cfg->ready_needs, "any") != 0 && strcmp(cfg->ready_needs, "all") != 0) {
        fprintf(err, "gpuhttpd: --ready-needs must be any or all\n");
        return -1;
    }
    if (cfg->probe_port && cfg->probe_port == cfg->port) {
        fprintf(err, "gpuhttpd: --probe-port must differ from --port\n");
        return -1;
    }
    if (cfg->agent_port && (cfg->agent_port == cfg->port || cfg->agent_port == cfg->probe_port)) {
        fprintf(err, "gpuhttpd: --agent-port must differ from --port and --probe-port\n");
        return -1;
    }
    if (cfg->metrics_token[0] && cfg->metrics_token_file[0]) {
        fprintf(err, "gpuhttpd: give --metrics-token or --metrics-token-file, not both\n");
        return -1;
    }
    if (!cfg->tls_cert[0] != !cfg->tls_key[0]) {
        fprintf(err, "gpuhttpd: --tls-cert and --tls-key go together\n");
        return -1;
    }
    return check_tracing(cfg, err);
}

/* getopt takes the next argument as an option's value even when it is
 * another option ("--port --port-file x"); none of our values starts with
 * "--", so such a value means the option was given without one. */
static int value_missing(const struct option_spec *sp, const char *value, FILE *err)
{
    if (sp->type == OPT_FLAG || strncmp(value, "--", 2) != 0)
        return 0;
    fprintf(err, "gpuhttpd: --%s needs a value (%s) before '%s' (see --help)\n", sp->flag,
            ghd_config_placeholder(sp), value);
    return 1;
}

int ghd_config_parse(struct ghd_config *cfg, int argc, char **argv, FILE *out, FILE *err)
{
    ghd_config_defaults(cfg);
    for (size_t i = 0; i < SPEC_COUNT; i++) {
        char env[64];
        ghd_config_env_name(specs[i].flag, env, sizeof(env));
        const char *v = getenv(env);
        if (v && *v && apply(cfg, &specs[i], v) != 0) {
            fprintf(err, "gpuhttpd: invalid value '%s' for %s (--%s: %s)\n",
                    is_secret(&specs[i]) ? "(hidden)" : v, env, specs[i].flag, specs[i].help);
            return -1;
        }
    }
    struct option longopts[SPEC_COUNT + 3];
    for (size_t i = 0; i < SPEC_COUNT; i++)
        longopts[i] = (struct option){specs[i].flag,
                                      specs[i].type == OPT_FLAG ? no_argument : required_argument,
                                      NULL, (int)i + 1000};
    longopts[SPEC_COUNT] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[SPEC_COUNT + 1] = (struct option){"version", no_argument, NULL, 'V'};
    longopts[SPEC_COUNT + 2] = (struct option){NULL, 0, NULL, 0};
    /* 0, not 1: glibc then also drops the scan position inside a short-option
     * cluster ("-hV") that an earlier parse stopped in. */
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
        if (c == 'h') {
            ghd_config_usage_write(out, specs, SPEC_COUNT);
            return 1;
        }
        if (c == 'V') {
            fprintf(out, "gpuhttpd %s\n", GHD_VERSION);
            return 1;
        }
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            for (size_t i = 0; i < SPEC_COUNT; i++)
                if (strncmp(bad, "--", 2) == 0 && strcmp(bad + 2, specs[i].flag) == 0 &&
                    specs[i].type != OPT_FLAG) {
                    fprintf(err, "gpuhttpd: %s needs a value (%s) (see --help)\n", bad,
                            ghd_config_placeholder(&specs[i]));
                    return -1;
                }
            fprintf(err, "gpuhttpd: unknown option '%s' (see --help)\n", bad);
            return -1;
        }
        const struct option_spec *sp = &specs[c - 1000];
        if (value_missing(sp, optarg, err))
            return -1;
        if (apply(cfg, sp, sp->type == OPT_FLAG ? "1" : optarg) != 0) {
            fprintf(err, "gpuhttpd: invalid value '%s' for --%s (%s)\n",
                    is_secret(sp) ? "(hidden)" : optarg, sp->flag, sp->help);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(err, "gpuhttpd: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (resolve_instance(cfg, err) != 0 || resolve_devices(cfg, err) != 0)
        return -1;
    return validate(cfg, err);
}
