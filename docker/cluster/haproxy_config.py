#!/usr/bin/env python3
"""The one source of the proxy's routing rules: writes the HAProxy
configuration (and its problem+json error files) for the local cluster
(docker/cluster/local.sh: static 127.0.0.1 ports) and for Kubernetes
(docker/k8s/proxy/: per-pod DNS names of the StatefulSet, resolved at run
time), from the same rules.

The rules. Every buffer, run, module and region id starts with its owner's
prefix i<NNNN>-<boot>- (the instance as 4 digits), so a request goes to the
instance that holds what it names:
  1. a path /v1/{buffers,runs,modules,regions}/<id>...: the id's owner;
  2. else ?near=<id> (POST /v1/buffers next to a buffer): that id's owner;
  3. else a Gpuhttpd-Route header (POST /v1/runs, a copy_of, a transfer,
     or "i0003" to pick an instance for a listing): its owner;
  4. else (a new buffer, anything that names no id): any instance that is
     up, in proportion to its weight, which each instance's agent check sets
     from its free device memory ("up 73%"; "drain" takes it out of the
     balance while it stops, "down" when its device is lost).
An owner that is down (no 200 from GET /healthz within a second: dead,
hung or still starting; or its agent says "down") gets a 503 problem+json
from the proxy naming it, never another instance: its buffers live nowhere
else. The proxy's own errors (400, 408, 500, 502, 503, 504) are
problem+json too (errorfile).

Slots: one server line per instance number, 0..N-1, so that slot k is
instance k (HAProxy's server-template would fill its slots from one DNS
name's records in no fixed order, and the owner of an id would then not be
found by its number). Kubernetes: `kubectl scale` up to the configured slots
works without a new configuration; the missing pods are servers in
maintenance (no DNS record) until they exist.

usage:
  haproxy_config.py local --instances N --port P --dir DIR [--bind-port Q] [TUNING]
      writes DIR/haproxy.cfg and DIR/errors/*.http: the proxy on 127.0.0.1:P
      (or Q), instance k at 127.0.0.1:P+1+k with its agent check at P+1+N+k
  haproxy_config.py k8s [--slots S] [--check] [TUNING]
      writes docker/k8s/proxy/ (haproxy.cfg and the error files beside it,
      the ConfigMap's keys; S slots, default 16); --check only compares and
      exits 1 when what is there differs from what it would write

TUNING (how the proxy moves bodies; the defaults are what the files hold,
and tests/bench/run_proxy_bench.sh's PROXY_VARIANTS measures others):
  --splice auto|forced|off  kernel splicing of bodies: HAProxy's heuristic
                            (option splice-auto), always (option
                            splice-request and splice-response), or never
  --bufsize SIZE            tune.bufsize, bytes per buffer (K/M suffixes)
  --pipesize SIZE           tune.pipesize, each splice pipe (0: the kernel's)
  --maxpipes N              maxpipes (0: HAProxy's default, maxconn / 4)
  --nbthread N              nbthread (0: HAProxy's default, one per CPU)
  --http-reuse MODE         http-reuse never|safe|aggressive|always (the
                            default: HAProxy's, safe)
  --sockbuf SIZE            tune.rcvbuf/sndbuf .client and .server: every
                            socket's kernel buffers (0: the kernel's autotuning)
"""
import argparse
import json
import os
import sys

ID_ROUTES = ("buffers", "runs", "modules", "regions")
# Seconds the proxy waits on a silent server: a run with "wait": true
# answers when the run ends.
SERVER_TIMEOUT_S = 600
K8S_SLOTS = 16
K8S_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "k8s", "proxy")
K8S_ETC = "/usr/local/etc/haproxy"  # the official image's configuration folder
MAXCONN = 4096
# The tuning the generated files have; 0 or None: HAProxy's own default. Measured with
# tests/bench/run_proxy_bench.sh (HAProxy 2.6, loopback): with splice-auto no body is
# ever spliced (HAProxy's heuristic waits for reads that fill the buffer; the H1 mux
# hands over half of one at a time), so every byte is copied in and out of user space
# in 32 KiB calls; forced splicing through 1 MiB pipes moves ~500 KiB a call in the
# kernel and halves HAProxy's CPU per GB (64 KiB pipes, the kernel's default, save
# nothing). 1 MiB is the largest pipe an unprivileged process may ask for
# (fs.pipe-max-size).
TUNING = {"splice": "forced", "bufsize": 65536, "pipesize": 1 << 20, "maxpipes": MAXCONN,
          "nbthread": 0, "http_reuse": None, "sockbuf": 0}
# The generated files' comments on the default tuning's lines.
TUNING_NOTES = {
    "bufsize": ["# Headers and what is not spliced: 64 KiB per read and write (the default",
                "# 16 KiB costs four times the system calls)."],
    "pipesize": ["# Bodies go socket -> pipe -> socket in the kernel (splice, below),",
                 "# 1 MiB a pipe: 16 times fewer calls than the kernel's 64 KiB."],
    "maxpipes": ["# A pipe per connection: HAProxy 2.6 stalls a spliced transfer that finds",
                 "# no free pipe (the default, maxconn / 4, runs out under load)."],
    "splice": ["# Splice every body: splice-auto's heuristic never starts here."],
}
# The server checks: the agent check (on the server lines) weighs an instance
# and says "drain" or "down", but HAProxy counts none of its timeouts as a
# failure; this HTTP check (on the balanced backend) fails one that does not
# answer in time.
HEALTH_CHECK = (
    "# Up while GET /healthz answers 200 within a second on the port requests go",
    "# to. A TCP check would not do: a process that hangs (SIGSTOP, wedged) or is",
    "# still starting has its connections accepted by the kernel all the same, and",
    f"# its requests would wait out the {SERVER_TIMEOUT_S} s server timeout. /healthz, not",
    "# /readyz: readiness is the agent check's (\"down\" without a usable device,",
    "# and then the instance is down here too: its ids get the 503 naming it), so",
    "# this one asks only whether the process answers. A public route: no token.",
    "option httpchk",
    "http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host gpuhttpd",
    "http-check expect status 200",
    "timeout check 1s",
)
SPLICE = {"auto": ("option splice-auto",),
          "forced": ("option splice-request", "option splice-response"),
          "off": ()}

# The proxy's own answers, as the server writes its problems (RFC 9457): the
# type names the server's problem pages where one fits.
ERRORS = {
    400: ("Bad Request", "bad-request", "Bad request",
          "the proxy could not read the request (malformed HTTP, or headers too large)"),
    408: ("Request Timeout", "bad-request", "Request timeout",
          "the request did not arrive in time at the proxy"),
    500: ("Internal Server Error", "internal", "Internal server error",
          "the proxy failed while handling the request"),
    502: ("Bad Gateway", "unavailable", "Bad gateway",
          "the gpuhttpd instance closed the connection without a whole answer (it may have "
          "stopped or crashed; if it restarts, its buffers are gone and its ids answer 410)"),
    503: ("Service Unavailable", "unavailable", "Service unavailable",
          "no gpuhttpd instance can take this request now (the one it needs is down or "
          "starting, or none is up); retry later"),
    504: ("Gateway Timeout", "unavailable", "Gateway timeout",
          f"the gpuhttpd instance sent nothing for {SERVER_TIMEOUT_S} s (the proxy's server "
          "timeout)"),
}


def problem(status, slug, title, detail):
    return json.dumps({"type": f"/problems/{slug}", "title": title, "status": status,
                       "detail": detail}, separators=(",", ":"))


def errorfile(status):
    reason, slug, title, detail = ERRORS[status]
    body = problem(status, slug, title, detail) + "\n"
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/problem+json\r\n"
            f"Content-Length: {len(body.encode())}\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n")
    return head + body


def slot_name(k):
    return f"i{k:04d}"


def noted(tune, key, lines):
    """lines, after the default tuning's note on them where tune[key] is the default."""
    if not lines:
        return []
    return (TUNING_NOTES.get(key, []) if tune[key] == TUNING[key] else []) + lines


def tuning_lines(tune):
    """The global lines of the tuning: buffers, pipes, threads."""
    out = noted(tune, "bufsize", [f"tune.bufsize {tune['bufsize']}"])
    for key, line in (("pipesize", "tune.pipesize"), ("maxpipes", "maxpipes"),
                      ("nbthread", "nbthread")):
        out += noted(tune, key, [f"{line} {tune[key]}"] if tune[key] else [])
    if tune["sockbuf"]:
        out += [f"tune.{way}.{side} {tune['sockbuf']}" for way in ("rcvbuf", "sndbuf")
                for side in ("client", "server")]
    return out


def config(slots, bind, servers, errors_dir, tune, urls, extra_global=(), resolvers=None):
    """haproxy.cfg text. servers: (k, address, how it resolves, its checks) per slot;
    tune: TUNING's keys; urls: each slot's advertised URL (--advertise-url)."""
    out = ["# Generated by docker/cluster/haproxy_config.py: edit that, not this.",
           "global", "    log stdout format raw local0", f"    maxconn {MAXCONN}",
           *(f"    {g}" for g in (*tuning_lines(tune), *extra_global)), ""]
    if resolvers:
        out += [*resolvers, ""]
    out += ["defaults", "    mode http", "    log global", "    option httplog",
            *(f"    {o}" for o in noted(tune, "splice", list(SPLICE[tune["splice"]]))),
            *([f"    http-reuse {tune['http_reuse']}"] if tune["http_reuse"] else []),
            "    # Instances are one hop away: a connect that takes 2 s is to a stopped pod",
            "    # (no answer on the pod network), and with the two retries its request",
            "    # waits 6 s for the proxy's 503, not 15 s; the checks (inter 2s, fall 2)",
            "    # mark the owner down and later requests get the 503 naming it at once.",
            "    timeout connect 2s", "    timeout client 600s",
            f"    timeout server {SERVER_TIMEOUT_S}s", "    timeout http-request 30s",
            "    timeout http-keep-alive 60s", "    retries 2",
            "    # A kept connection the server closed before answering: again, once.",
            "    retry-on conn-failure empty-response",
            *(f"    errorfile {s} {errors_dir}/{s}.http" for s in sorted(ERRORS)), ""]
    ids = "|".join(ID_ROUTES)
    out += ["frontend api", f"    bind {bind}",
            "    # The owner of what the request names, as i<NNNN>: the route header, then",
            "    # ?near=, then an id in the path (the later rule wins).",
            "    http-request set-var(txn.owner) req.hdr(gpuhttpd-route),field(1,-) "
            "if { req.hdr(gpuhttpd-route) -m found }",
            "    http-request set-var(txn.owner) url_param(near),field(1,-) "
            "if { url_param(near) -m found }",
            "    # A listing's cursor names the instance the walk is at (--peers).",
            "    http-request set-var(txn.owner) url_param(cursor),field(1,-) "
            "if { url_param(cursor) -m reg ^i[0-9]{4}- }",
            f"    http-request set-var(txn.owner) path,field(4,/),field(1,-) "
            f"if {{ path_reg ^/v1/({ids})/i[0-9]{{4}}- }}",
            "    use_backend owned if { var(txn.owner) -m reg '^i[0-9]{4}$' }",
            "    default_backend balanced", ""]
    # Balanced: weighted round robin over the agents' weights; a request
    # whose server fails to connect may go to another one (it names no id).
    # Its checks are the owned backend's too (its servers track these).
    out += ["backend balanced", "    balance roundrobin", "    option redispatch",
            *(f"    {line}" for line in HEALTH_CHECK)]
    for k, addr, resolve, checks in servers:
        out.append(f"    server {slot_name(k)} {addr} weight 100{resolve} {checks}")
    out.append("")
    # Owned: the owner or a 503 naming it; never another instance.
    out += ["backend owned", "    balance roundrobin"]
    for k, *_ in servers:
        n = slot_name(k)
        detail = (f"instance {k}, which owns what this request names, is not answering (it "
                  f"is stopped, restarting or lost its device); its buffers live nowhere else: "
                  f"retry later, and expect 410 for ids of its earlier start once it is back")
        body = problem(503, "unavailable", "Service unavailable", detail)
        out.append(f"    http-request return status 503 content-type application/problem+json "
                   f"string '{body}' if {{ var(txn.owner) -m str {n} }} "
                   f"!{{ srv_is_up(balanced/{n}) }}")
    # Prefer: redirect (a client that reaches the instances itself, curl -L):
    # a 307 to the owner's advertised URL instead of the bytes through here.
    for k, *_ in servers:
        n = slot_name(k)
        out.append(f"    http-request return status 307 hdr Location \"{urls[k]}%[url]\" "
                   f"hdr Preference-Applied redirect if {{ var(txn.owner) -m str {n} }} "
                   f"{{ req.hdr(prefer) -m reg -i ^redirect($|[;[:space:]]) }}")
    for k, *_ in servers:
        n = slot_name(k)
        out.append(f"    use-server {n} if {{ var(txn.owner) -m str {n} }}")
    for k, addr, resolve, _ in servers:
        # An owner number with no slot falls through to any server, which
        # answers 421 naming the owner.
        out.append(f"    server {slot_name(k)} {addr}{resolve} track balanced/{slot_name(k)}")
    return "\n".join(out) + "\n"


def local_url(port, k):
    """Instance k's URL in the local cluster (local.sh gives it --advertise-url)."""
    return f"http://127.0.0.1:{port + 1 + k}"


def k8s_url(k):
    """Pod k's stable name behind the headless Service (the StatefulSet's
    GHD_ADVERTISE_URL), as HAProxy expands it from its environment."""
    return f"http://gpuhttpd-{k}.gpuhttpd-pods.${{NAMESPACE}}.svc.${{CLUSTER_DOMAIN}}:8080"


def local(args):
    n, p = args.instances, args.port
    errors = os.path.join(args.dir, "errors")
    servers = [(k, f"127.0.0.1:{p + 1 + k}", "",
                f"check inter 1s fall 1 rise 1 agent-check agent-port {p + 1 + n + k} "
                "agent-inter 1s") for k in range(n)]
    text = config(n, f"127.0.0.1:{args.bind_port or p}", servers, errors, tuning(args),
                  [local_url(p, k) for k in range(n)],
                  extra_global=(f"stats socket {args.dir}/haproxy.sock mode 600 level admin",))
    write_tree(args.dir, text, "errors")


def k8s_text(slots, tune):
    # Per-pod names of the StatefulSet gpuhttpd behind the headless Service
    # gpuhttpd-pods; HAProxy reads ${NAMESPACE} and ${CLUSTER_DOMAIN} from
    # its environment (the proxy Deployment sets them).
    resolvers = ["resolvers k8s", "    parse-resolv-conf", "    hold valid 5s",
                 "    hold nx 5s", "    hold obsolete 5s", "    timeout resolve 1s",
                 "    timeout retry 1s"]
    servers = [(k, f'"gpuhttpd-{k}.gpuhttpd-pods.${{NAMESPACE}}.svc.${{CLUSTER_DOMAIN}}:8080"',
                " resolvers k8s init-addr none",
                "check inter 2s fall 2 rise 1 agent-check agent-port 8082 agent-inter 2s")
               for k in range(slots)]
    # The ConfigMap's keys are flat: the error files lie beside haproxy.cfg.
    return config(slots, ":8080", servers, K8S_ETC, tune, [k8s_url(k) for k in range(slots)],
                  extra_global=("# Prometheus metrics of the proxy at :8404/metrics.",),
                  resolvers=resolvers) + (
        "\nfrontend stats\n    bind :8404\n"
        "    http-request use-service prometheus-exporter if { path /metrics }\n"
        "    http-request return status 200 content-type text/plain string ok "
        "if { path /healthz }\n")


def files(text, errors_sub):
    yield "haproxy.cfg", text
    for s in sorted(ERRORS):
        yield os.path.join(errors_sub, f"{s}.http"), errorfile(s)


def write_tree(folder, text, errors_sub):
    os.makedirs(os.path.join(folder, errors_sub), exist_ok=True)
    for rel, content in files(text, errors_sub):
        with open(os.path.join(folder, rel), "w", encoding="utf-8", newline="") as f:
            f.write(content)


def k8s(args):
    text = k8s_text(args.slots, tuning(args))
    if not args.check:
        write_tree(K8S_DIR, text, "")
        return 0
    stale = []
    for rel, content in files(text, ""):
        path = os.path.join(K8S_DIR, rel)
        try:
            with open(path, encoding="utf-8", newline="") as f:
                if f.read() == content:
                    continue
        except FileNotFoundError:
            pass
        stale.append(rel)
    if stale:
        print(f"docker/k8s/proxy is not what docker/cluster/haproxy_config.py writes: "
              f"{', '.join(stale)} (run: docker/cluster/haproxy_config.py k8s)")
        return 1
    return 0


def size(text):
    """A byte count: digits with an optional K or M (1024-based)."""
    scale = {"k": 1 << 10, "m": 1 << 20}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) * scale >= 1 << 31:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (bytes, K or M)")
    return int(digits) * scale


def count(text):
    if not text.isdigit() or int(text) > 1 << 20:
        raise argparse.ArgumentTypeError(f"'{text}' is not a count 0..{1 << 20}")
    return int(text)


def tuning_parser():
    tp = argparse.ArgumentParser(add_help=False)
    g = tp.add_argument_group("tuning")
    g.add_argument("--splice", choices=sorted(SPLICE), default=TUNING["splice"])
    g.add_argument("--bufsize", type=size, default=TUNING["bufsize"])
    g.add_argument("--pipesize", type=size, default=TUNING["pipesize"])
    g.add_argument("--maxpipes", type=count, default=TUNING["maxpipes"])
    g.add_argument("--nbthread", type=count, default=TUNING["nbthread"])
    g.add_argument("--http-reuse", choices=("never", "safe", "aggressive", "always"),
                   default=TUNING["http_reuse"])
    g.add_argument("--sockbuf", type=size, default=TUNING["sockbuf"])
    return tp


def tuning(args):
    return {key: getattr(args, key) for key in TUNING}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    lo = sub.add_parser("local", parents=[tuning_parser()])
    lo.add_argument("--instances", type=int, required=True)
    lo.add_argument("--port", type=int, required=True)
    lo.add_argument("--bind-port", type=int, default=0)
    lo.add_argument("--dir", required=True)
    ku = sub.add_parser("k8s", parents=[tuning_parser()])
    ku.add_argument("--slots", type=int, default=K8S_SLOTS)
    ku.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.bufsize < 1024:
        ap.error("--bufsize is at least 1K")
    if args.what == "local":
        if not 1 <= args.instances <= 100 or not 1 <= args.port <= 65535 - 2 * args.instances:
            ap.error("--instances 1..100 and a --port with room for 2 ports per instance above it")
        if not 0 <= args.bind_port <= 65535:
            ap.error("--bind-port is a port (0: --port)")
        local(args)
        return 0
    return k8s(args)


if __name__ == "__main__":
    sys.exit(main())
