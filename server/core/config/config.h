#ifndef GHD_CORE_CONFIG_CONFIG_H
#define GHD_CORE_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdio.h>

/* Flags and environment folded into one validated, read-only configuration.
 * Every option has a long flag and an environment variable (GHD_<NAME>);
 * a flag wins over the environment, which wins over the default. */

enum ghd_backend_choice { GHD_CHOICE_AUTO, GHD_CHOICE_CUDA, GHD_CHOICE_HOST };

struct ghd_config {
    unsigned port;
    unsigned probe_port; /* plain-HTTP probe listener on `bind`; 0 = none */
    unsigned agent_port; /* HAProxy agent-check listener on `bind`; 0 = none */
    char instance_text[8]; /* --instance as given: "auto" or a number */
    unsigned instance;     /* resolved: the number every id this instance makes carries */
    char bind[64];
    char advertise_url[256]; /* this instance's URL for clients that skip the proxy; "" none */
    char peers[4096];        /* the other instances' advertised URLs, comma-separated */
    enum ghd_backend_choice backend;
    char device[8];     /* --device N as given ("": not given); folded into `devices` */
    char devices[1024]; /* "all", or ordinals and UUIDs separated by commas */
    unsigned host_devices; /* devices the host backend simulates */
    char placement[16];    /* "most-free" or "round-robin" */
    char ready_needs[8];   /* "any" or "all": the devices /readyz needs ready */
    size_t pool_limit;           /* bytes; 0 = none */
    unsigned pool_limit_percent; /* when the limit was given as N% */
    size_t pool_alignment;
    size_t pool_slab;
    size_t pool_initial;
    size_t staging_chunk;
    unsigned staging_chunks;
    size_t staging_small_chunk;
    unsigned staging_small_chunks;
    unsigned staging_timeout_ms;
    unsigned staging_hold_s; /* an upload may hold staging chunks this long; 0 = no bound */
    unsigned staging_address_share; /* percent of a ring one client address may hold; 0 = none */
    unsigned staging_tenant_share;  /* percent of a ring one tenant may hold; 0 = none */
    unsigned sync_spin_us;
    size_t max_buffer_size;
    size_t max_json_body;
    unsigned connection_limit;
    unsigned connection_timeout_s;
    size_t connection_memory;
    unsigned direct_copy; /* 1: DMA body pieces straight from the read buffer */
    size_t socket_upload_min;   /* upload bodies this large skip libmicrohttpd; 0 = never */
    size_t socket_recv_max;     /* most bytes one recv() of that path asks for; 0 = a chunk */
    size_t socket_bounce;       /* that path's recv()s go through a cached buffer this big; 0 = none */
    unsigned socket_bounce_uploads; /* ... while at most this many receive; 0 = half the CPUs */
    size_t download_block;      /* most bytes of a download's window */
    unsigned download_overlap;  /* 1: the next window's DMA runs while one is sent */
    size_t socket_buffer;       /* SO_SNDBUF and SO_RCVBUF of each connection; 0 = autotuning */
    unsigned runs_kept;
    unsigned run_keep_s;
    unsigned run_queue_limit;
    unsigned run_workers;     /* threads running kernels per device, a stream each */
    unsigned run_priority;    /* tenants below their share on a high-priority stream */
    unsigned run_inline;      /* a waited-for run may execute on its request's thread */
    unsigned run_graphs;      /* pipelines kept as device graphs; 0 = none */
    unsigned run_batch_max;   /* most runs in one POST /v1/runs list */
    unsigned default_ttl_s;
    char log_level[16];
    char log_format[16];
    char port_file[256];
    char docs_dir[256];
    /* Security and limits (server/core/tenancy/auth.c, docs in tests/RELIABILITY.md). */
    char tokens_file[256];
    char tokens[4096];        /* "token:tenant,..." (prefer GHD_TOKENS: flags show in ps) */
    char metrics_token[257];
    char metrics_token_file[256]; /* the metrics token from this file, re-read on change */
    unsigned metrics_public;          /* /metrics open to anyone with tokens on */
    unsigned metrics_tenant_label;    /* per-tenant families on /metrics */
    unsigned allow_unauthenticated;
    unsigned per_ip_connection_limit; /* 0 = none */
    size_t tenant_max_bytes;          /* 0 = none (or the share) */
    unsigned tenant_max_buffers;      /* 0 = none (or the share) */
    unsigned tenant_max_runs;         /* queued or running; 0 = none (or the share) */
    unsigned tenant_share;            /* percent of each shared capacity, with tokens; 0 = none */
    unsigned max_buffers;             /* buffers held at once, every tenant's */
    unsigned tenant_max_kernels;      /* user kernels per tenant */
    size_t kernel_max_definition;     /* bytes of text in one definition */
    unsigned kernel_max_depth;        /* expression nesting in a definition */
    unsigned max_elements;            /* n of a user kernel call that no buffer bounds */
    char kernel_cache_dir[256];       /* compiled user kernels on disk; "" = memory only */
    size_t kernel_cache_max;          /* bytes the folder may hold */
    unsigned compile_workers;         /* NVRTC threads */
    unsigned compile_queue;           /* compiles that may wait for one */
    unsigned inline_cache;            /* definitions by value kept built in memory */
    unsigned allow_raw_kernels;       /* raw CUDA modules (POST /v1/modules) at all */
    unsigned tenant_max_modules;      /* raw modules per tenant */
    size_t module_max_source;         /* bytes of CUDA source in one module */
    unsigned allow_shm;               /* regions (POST /v1/regions) at all */
    unsigned shm_allow_shared;        /* segments of other users or of mode & 077 */
    unsigned tenant_max_regions;      /* regions per tenant; 0 = none */
    size_t tenant_max_pinned;         /* bytes of regions per tenant; 0 = none */
    unsigned run_timeout_s;           /* a run's deadline and its bound; 0 = none (run.h) */
    unsigned run_wait_max_s;          /* GET /v1/runs/{id}?wait= at most; 0 = no waiting */
    char on_device_loss[8];           /* "exit" or "stay" */
    unsigned shutdown_grace_s;
    unsigned header_timeout_s;        /* 0 = none */
    size_t min_transfer_rate;         /* bytes/s; 0 = none */
    unsigned transfer_rate_window_s;
    char tls_cert[256];
    char tls_key[256];
    char otlp_endpoint[256];  /* OTLP/HTTP traces URL; "" = no export (base/trace_export.h) */
    char trace_sample[16];    /* ratio 0..1 of new traces sampled, as given */
    double trace_ratio;       /* trace_sample, parsed */
    /* Tiers beyond device memory (core/tier.h); all 0: off, a full pool refuses. */
    unsigned spill;           /* turn them on: the host tier sized by default */
    size_t host_tier;         /* bytes of (page-locked) host memory; 0 = none (--spill: half the RAM) */
    char disk_tier[256];      /* folder of the disk tier; "" = none */
    size_t disk_tier_size;    /* its bytes; 0 with a folder: the folder's free space at start */
};

/* Parses argv and the environment into *cfg. Returns 0 on success; 1 when
 * --help or --version was printed (the caller exits 0); -1 after printing a
 * one-line message that names the bad option to `err`. */
int ghd_config_parse(struct ghd_config *cfg, int argc, char **argv, FILE *out, FILE *err);
/* Defaults only, for tests. */
void ghd_config_defaults(struct ghd_config *cfg);
/* Parses "4096", "64K", "8M", "2G", "1T" (binary multiples). -1 if invalid. */
int ghd_parse_size(const char *s, size_t *out);

#endif
