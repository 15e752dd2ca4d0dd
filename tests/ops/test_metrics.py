#!/usr/bin/env python3
"""GET /metrics parses with Prometheus' own text parser, and its values move
exactly as requests, transfers and runs happen.

usage: test_metrics.py GPUHTTPD_BINARY"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import BACKEND, Server, check, fail, need_module  # noqa: E402

parser = need_module("prometheus_client.parser", "prometheus_client")
# The body of GET /healthz: compact JSON and a newline.
HEALTHZ = b'{"status":"ok"}\n'


def scrape(srv):
    status, headers, body = srv.request("GET", "/metrics")
    check(status == 200, f"/metrics answered {status}")
    ctype = headers.get("content-type", "")
    check(ctype.startswith("text/plain; version=0.0.4"),
          f"/metrics Content-Type is '{ctype}', not text/plain; version=0.0.4")
    text = body.decode("utf-8")
    families = {}
    samples = {}
    try:
        for fam in parser.text_string_to_metric_families(text):
            families[fam.name] = fam
            for s in fam.samples:
                samples[(s.name, frozenset(s.labels.items()))] = s.value
    except Exception as e:  # the parser raises ValueError and friends
        fail(f"the Prometheus parser rejects /metrics: {e}\n{text[:2000]}")
    return text, families, samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def wait_for(srv, pred, what, timeout=5.0):
    """Request metrics are recorded when a request completes, which can be a
    moment after its client has the reply: poll briefly."""
    deadline = time.monotonic() + timeout
    while True:
        _, fams, samples = scrape(srv)
        if pred(samples):
            return fams, samples
        if time.monotonic() > deadline:
            fail(f"{what} (waited {timeout} s)")
        time.sleep(0.05)


def check_histogram(samples, name, **labels):
    """Buckets are cumulative, end in +Inf, and +Inf equals _count."""
    buckets = sorted(((float(dict(lbl)["le"]), v) for (n, lbl), v in samples.items()
                      if n == name + "_bucket" and
                      {k: v2 for k, v2 in dict(lbl).items() if k != "le"} == labels),
                     key=lambda b: b[0])
    check(buckets, f"{name}{labels} has no buckets")
    check(buckets[-1][0] == float("inf"), f"{name}{labels} has no +Inf bucket")
    counts = [c for _, c in buckets]
    check(counts == sorted(counts), f"{name}{labels} buckets are not cumulative: {counts}")
    count = value(samples, name + "_count", **labels)
    check(counts[-1] == count, f"{name}{labels}: +Inf bucket {counts[-1]} != _count {count}")
    return count


def main():
    binary = sys.argv[1]
    started = time.time()
    with Server(binary) as srv:
        text, fams, s0 = scrape(srv)

        # Every family has HELP and TYPE; counters are *_total; base units.
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                check(f"# HELP {name} " in text, f"{name} has TYPE but no HELP")
                if kind == "counter":
                    check(name.endswith("_total"), f"counter {name} does not end in _total")
        for fam in fams.values():
            check(fam.documentation, f"{fam.name} has no HELP text")
        for want, kind in [("gpuhttpd_http_requests", "counter"),
                           ("gpuhttpd_http_request_duration_seconds", "histogram"),
                           ("gpuhttpd_transfer_bytes", "counter"),
                           ("gpuhttpd_transfer_throughput_bytes_per_second", "histogram"),
                           ("gpuhttpd_runs", "counter"),
                           ("gpuhttpd_run_device_seconds", "histogram"),
                           ("gpuhttpd_run_queue_seconds", "histogram"),
                           ("gpuhttpd_run_phase_seconds", "histogram"),
                           ("gpuhttpd_run_workers", "gauge"),
                           ("gpuhttpd_pool_reserved_bytes", "gauge"),
                           ("gpuhttpd_pool_in_use_bytes", "gauge"),
                           ("gpuhttpd_pool_peak_in_use_bytes", "gauge"),
                           ("gpuhttpd_pool_allocation_failures", "counter"),
                           ("gpuhttpd_staging_chunks_busy", "gauge"),
                           ("gpuhttpd_staging_waits", "counter"),
                           ("gpuhttpd_buffers", "gauge"),
                           ("gpuhttpd_buffer_bytes", "gauge"),
                           ("process_start_time_seconds", "gauge"),
                           ("process_cpu_seconds", "counter"),
                           ("process_resident_memory_bytes", "gauge"),
                           ("process_virtual_memory_bytes", "gauge"),
                           ("process_open_fds", "gauge"),
                           ("process_max_fds", "gauge"),
                           ("gpuhttpd_device_memory_total_bytes", "gauge"),
                           ("gpuhttpd_device_memory_free_bytes", "gauge"),
                           ("gpuhttpd_device_utilization_ratio", "gauge"),
                           ("gpuhttpd_build_info", "gauge")]:
            check(want in fams, f"family {want} is missing")
            check(fams[want].type == kind, f"{want} is a {fams[want].type}, not a {kind}")

        info = [sm for sm in fams["gpuhttpd_build_info"].samples]
        check(len(info) == 1 and info[0].value == 1, f"build_info: {info}")
        lbl = info[0].labels
        check(set(lbl) == {"version", "cuda_runtime", "backend", "device"}, f"build_info labels {lbl}")
        check(lbl["backend"] == BACKEND and re.match(r"^\d+\.\d+\.\d+", lbl["version"]),
              f"build_info labels {lbl}")
        if BACKEND == "cuda":
            check(re.match(r"^\d+\.\d+", lbl["cuda_runtime"]) and lbl["device"] != "none",
                  f"build_info on CUDA: {lbl}")
        start = value(s0, "process_start_time_seconds")
        check(started - 5 <= start <= time.time() + 1,
              f"process_start_time_seconds {start} is not the start time (~{started:.0f})")
        check(value(s0, "gpuhttpd_staging_chunks", device="0") == 4, "staging_chunks != 4")

        # Regression: the process_* families and the device's memory and
        # utilisation. The process's own numbers are checked against /proc.
        pid = srv.proc.pid
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        got = value(s0, "process_resident_memory_bytes")
        check(0.5 * rss <= got <= 2 * rss + (64 << 20), f"process_resident_memory_bytes {got} "
                                                        f"vs /proc {rss}")
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        check(abs(value(s0, "process_open_fds") - fds) <= 4,
              f"process_open_fds {value(s0, 'process_open_fds')} vs /proc {fds}")
        check(0 < value(s0, "process_cpu_seconds_total") < 600, "process_cpu_seconds_total")
        check(value(s0, "process_max_fds") >= fds, "process_max_fds")
        total = value(s0, "gpuhttpd_device_memory_total_bytes", device="0")
        free = value(s0, "gpuhttpd_device_memory_free_bytes", device="0")
        check(total > 0 and 0 < free <= total, f"device memory total {total}, free {free}")
        util = [sm for sm in fams["gpuhttpd_device_utilization_ratio"].samples]
        if BACKEND == "cuda":  # NVML comes with the driver
            check(len(util) == 1 and util[0].labels == {"device": "0"} and
                  0 <= util[0].value <= 1, f"device utilisation on CUDA: {util}")
        else:
            check(not util, f"a utilisation on the host backend: {util}")

        # N requests to /healthz: requests_total moves by exactly N.
        n = 7
        key = dict(route="/healthz", method="GET", code="200")
        base = value(s0, "gpuhttpd_http_requests_total", **key)
        base_count = value(s0, "gpuhttpd_http_request_duration_seconds_count", **key)
        for _ in range(n):
            status, _, _ = srv.request("GET", "/healthz")
            check(status == 200, "/healthz failed")
        _, s1 = wait_for(srv, lambda s: value(s, "gpuhttpd_http_requests_total", **key) >= base + n
                         and value(s, "gpuhttpd_http_response_body_bytes_total",
                                   route="/healthz") >= (base + n) * len(HEALTHZ),
                         f"requests_total{key} did not reach {base + n}")
        got = value(s1, "gpuhttpd_http_requests_total", **key)
        check(got == base + n, f"requests_total{key} moved by {got - base}, not {n}")
        count = check_histogram(s1, "gpuhttpd_http_request_duration_seconds", **key)
        check(count == base_count + n, f"duration count for /healthz moved by {count - base_count}")
        check(value(s1, "gpuhttpd_http_request_duration_seconds_sum", **key) > 0,
              "duration sum for /healthz is 0")
        out = value(s1, "gpuhttpd_http_response_body_bytes_total", route="/healthz")
        check(out == (base + n) * len(HEALTHZ),
              f"response bytes for /healthz: {out}, not {(base + n) * len(HEALTHZ)}")

        # Unmatched paths share one label; the raw path never shows.
        srv.request("GET", "/no/such/thing-0123456789abcdef")
        srv.request("HEAD", "/healthz")
        _, s2 = wait_for(srv, lambda s: value(s, "gpuhttpd_http_requests_total", route="(unmatched)",
                                              method="GET", code="404") >= 1
                         and value(s, "gpuhttpd_http_requests_total", route="/healthz",
                                   method="HEAD", code="200") >= 1,
                         "the unmatched 404 or the HEAD was not counted")

        # Uploads and downloads count their bytes exactly.
        up0 = value(s2, "gpuhttpd_transfer_bytes_total", direction="upload", device="0")
        down0 = value(s2, "gpuhttpd_transfer_bytes_total", direction="download", device="0")
        tput_up0 = value(s2, "gpuhttpd_transfer_throughput_bytes_per_second_count",
                         direction="upload", device="0")
        bufs0 = value(s2, "gpuhttpd_buffers")
        payload = os.urandom(300000)
        status, hdrs, body = srv.request("POST", "/v1/buffers", payload,
                                         {"Content-Type": "application/octet-stream"})
        check(status == 201, f"POST /v1/buffers (octets) answered {status}: {body[:300]}")
        bid = hdrs["location"].rsplit("/", 1)[1]
        # Right behind the creating upload: its writer claim is gone already.
        status, _, body = srv.request("PUT", f"/v1/buffers/{bid}?offset=1000", b"x" * 1000,
                                      {"Content-Type": "application/octet-stream"})
        check(status == 200, f"PUT answered {status}: {body[:300]}")
        status, _, body = srv.request("GET", f"/v1/buffers/{bid}")
        check(status == 200 and len(body) == 300000, f"download answered {status}, {len(body)} B")
        status, _, body = srv.request("GET", f"/v1/buffers/{bid}", headers={"Range": "bytes=0-99"})
        check(status == 206 and len(body) == 100, f"range download answered {status}")
        _, s3 = wait_for(srv, lambda s: value(s, "gpuhttpd_transfer_bytes_total",
                                              direction="download", device="0") >= down0 + 300100,
                         "download bytes did not reach +300100")
        up = value(s3, "gpuhttpd_transfer_bytes_total", direction="upload", device="0") - up0
        down = value(s3, "gpuhttpd_transfer_bytes_total", direction="download", device="0") - down0
        check(up == 301000, f"upload bytes moved by {up}, not 301000")
        check(down == 300100, f"download bytes moved by {down}, not 300100")
        tput = check_histogram(s3, "gpuhttpd_transfer_throughput_bytes_per_second",
                               direction="upload", device="0")
        check(tput == tput_up0 + 2, f"upload throughput observations moved by {tput - tput_up0}")
        check(value(s3, "gpuhttpd_buffers") == bufs0 + 1, "buffers gauge did not grow by 1")
        check(value(s3, "gpuhttpd_buffer_bytes") >= 300000, "buffer_bytes below 300000")
        check(value(s3, "gpuhttpd_pool_in_use_bytes", device="0") >= 300000,
              "pool in_use below the buffer's size")
        check(value(s3, "gpuhttpd_pool_peak_in_use_bytes", device="0") >=
              value(s3, "gpuhttpd_pool_in_use_bytes", device="0"), "pool peak < in_use")
        inb = value(s3, "gpuhttpd_http_request_body_bytes_total", route="/v1/buffers/{id}")
        check(inb >= 1000, f"request body bytes for /v1/buffers/{{id}} = {inb}")

        # Runs: by kernel and outcome, with device time.
        runs0 = value(s3, "gpuhttpd_runs_total", kernel="fill", outcome="succeeded", device="0")
        dev0 = value(s3, "gpuhttpd_run_device_seconds_count", kernel="fill", device="0")
        pipe0 = value(s3, "gpuhttpd_runs_total", kernel="pipeline", outcome="succeeded", device="0")
        queued0 = check_histogram(s3, "gpuhttpd_run_queue_seconds", device="0")
        phases0 = {p: check_histogram(s3, "gpuhttpd_run_phase_seconds", phase=p)
                   for p in ("parse", "prepare", "queue", "launch", "complete", "wake", "reply")}
        check(value(s3, "gpuhttpd_run_workers") == 4, "run_workers is not the default 4")
        args = {"x": bid, "n": 1000, "dtype": "f32", "value": 1.5}
        status, _, run = srv.json("POST", "/v1/runs", {"kernel": "fill", "args": args})
        check(status == 200 and run["status"] == "succeeded", f"fill run: {status} {run}")
        status, _, run = srv.json("POST", "/v1/runs", {"steps": [
            {"kernel": "fill", "args": args}, {"kernel": "sum", "args": {"x": bid, "n": 1000,
                                                                        "dtype": "f32"}}]})
        check(status == 200 and run["status"] == "succeeded", f"pipeline run: {status} {run}")
        _, s4 = wait_for(srv, lambda s: value(s, "gpuhttpd_runs_total", kernel="pipeline",
                                              outcome="succeeded", device="0") >= pipe0 + 1,
                         "the pipeline run was not counted")
        check(value(s4, "gpuhttpd_runs_total", kernel="fill", outcome="succeeded",
                    device="0") == runs0 + 1, "runs_total{fill,succeeded} did not move by 1")
        check(check_histogram(s4, "gpuhttpd_run_device_seconds", kernel="fill",
                              device="0") == dev0 + 1, "run_device_seconds{fill} did not move by 1")
        check(check_histogram(s4, "gpuhttpd_run_queue_seconds", device="0") == queued0 + 2,
              "run_queue_seconds did not move by 2 (one fill, one pipeline)")
        # Both were waited for: each phase of each observed once.
        for p, n0 in phases0.items():
            check(check_histogram(s4, "gpuhttpd_run_phase_seconds", phase=p) == n0 + 2,
                  f"run_phase_seconds{{phase={p}}} did not move by 2")

        # User kernels are counted under one label: a tenant's kernel name
        # never shows in /metrics, and a new kernel adds no series.
        def run_series(samples):
            return {k for k in samples if k[0].startswith(("gpuhttpd_runs_total",
                                                            "gpuhttpd_run_device_seconds"))}

        user0 = value(s4, "gpuhttpd_runs_total", kernel="user", outcome="succeeded", device="0")
        udev0 = value(s4, "gpuhttpd_run_device_seconds_count", kernel="user", device="0")
        uargs = {"x": bid, "y": bid, "y_offset": 1000, "n": 100}
        secrets = ["tenant_secret_kernel_q7z", "another_tenants_kernel_w3"]
        series = None
        for k, secret in enumerate(secrets):
            kdef = {"name": secret, "in": "f32 x", "out": "f32 y", "body": "y = x * 2"}
            status, _, doc = srv.json("POST", "/v1/kernels", kdef)
            check(status == 201, f"define {secret}: {status} {doc}")
            status, _, run = srv.json("POST", "/v1/runs", {"kernel": secret, "args": uargs})
            check(status == 200 and run["status"] == "succeeded", f"{secret} run: {status} {run}")
            wait_for(srv, lambda s, want=user0 + k + 1: value(
                         s, "gpuhttpd_runs_total", kernel="user", outcome="succeeded",
                         device="0") >= want,
                     f"the run of {secret} was not counted under kernel=\"user\"")
            text, _, s4 = scrape(srv)
            check(secret not in text, f"the user kernel's name {secret} appears in /metrics")
            if series is not None:
                check(run_series(s4) == series, "a second user kernel added run series: "
                      f"{sorted(run_series(s4) - series)}")
            series = run_series(s4)
            status, _, _ = srv.request("DELETE", f"/v1/kernels/{secret}")
            check(status == 204, f"DELETE /v1/kernels/{secret}: {status}")
        check(check_histogram(s4, "gpuhttpd_run_device_seconds", kernel="user", device="0") == udev0 + 2,
              "run_device_seconds{user} did not move by 2")
        kernels = {dict(lbl).get("kernel") for _, lbl in s4} - {None}
        check("other" not in kernels, f"kernel label values {sorted(kernels)}")

        # Delete: the gauges come back.
        status, _, _ = srv.request("DELETE", f"/v1/buffers/{bid}")
        check(status == 204, f"DELETE answered {status}")
        text, _, s5 = scrape(srv)
        check(value(s5, "gpuhttpd_buffers") == bufs0, "buffers gauge did not come back")

        # No ids in labels: neither the buffer's nor the run's nor a request id.
        for (name, lbl), _ in s5.items():
            for k, v in lbl:
                check(not re.search(r"[0-9a-f]{16}", v), f"{name} has an id-like label {k}={v}")
        check(bid not in text and run["id"] not in text, "an id appears in /metrics")
    print("test_metrics: ok")


if __name__ == "__main__":
    main()
