#!/usr/bin/env bash
# What tracing costs: GET /healthz and a 4 KiB axpy run (loadgen --mode small,
# healthz and run_axpy_4k) at TRACE_CONNS connections against gpuhttpd with
# tracing off (no --otlp-endpoint) and on with every request sampled
# (--trace-sample 1, spans sent to otlp_sink, a C collector on loopback that
# counts them and keeps nothing). Rounds alternate off and on, each a server of its
# own; the table gives each mode's median req/s, p50, p99 and the server's CPU time
# per request (every thread's, the exporter's too: a figure that other load on the
# machine moves less than req/s) over the rounds, and on/off.
# After each "on" round the server's exporter counters (spans exported, traces
# dropped) say whether the exporter kept up: a dropped trace's request paid for
# recording its spans but not for sending them.
#
# usage: tests/bench/run_trace_bench.sh [--backend cuda|host] BUILD_DIR OUT_DIR
# Environment: TRACE_CONNS [64], TRACE_SECONDS [10], TRACE_ROUNDS [3],
#              TRACE_SERVER_ARGS [""] (added to both servers)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=bench_common.sh
. "$here/bench_common.sh"
conns=${TRACE_CONNS:-64}
seconds=${TRACE_SECONDS:-10}
rounds=${TRACE_ROUNDS:-3}
read -r -a extra <<<"${TRACE_SERVER_ARGS:-}"
loadgen=$build/tests/bench/loadgen

sink_pid=
stop_sink() {
    [[ -n $sink_pid ]] || return 0
    kill "$sink_pid" 2>/dev/null || true
    wait "$sink_pid" 2>/dev/null || true
    sink_pid=
}
trap 'stop_server; stop_sink' EXIT
rm -f "$out/sink.port"
"$build/tests/bench/otlp_sink" "$out/sink.port" "$out/sink.json" &
sink_pid=$!
for _ in $(seq 100); do [[ -s $out/sink.port ]] && break; sleep 0.1; done
sink_port=$(<"$out/sink.port")

# The server's CPU time so far (user + system, every thread's), in clock ticks.
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

counter() {
    curl -fs "127.0.0.1:$port/metrics" | awk -v n="$1" '$1 == n {print $2}'
}

for round in $(seq "$rounds"); do
    for mode in off on; do
        args=(--backend "$backend" --log-level warn "${extra[@]}")
        [[ $mode == on ]] && args+=(--otlp-endpoint "http://127.0.0.1:$sink_port" --trace-sample 1)
        start_server "gpuhttpd-$mode" "$build/gpuhttpd" "${args[@]}"
        log "round $round, tracing $mode"
        for test in healthz run; do
            cpu0=$(cpu_ticks "$server_pid")
            record "$loadgen" --mode small --port "$port" --conns "$conns" --duration "$seconds" \
                --requests 100000000 --tests "$test" --label "$mode"
            echo "{\"tool\":\"cpu\",\"label\":\"$mode\",\"test\":\"$test\",\"ticks\":$(($(cpu_ticks "$server_pid") - cpu0)),\"hz\":$(getconf CLK_TCK)}" >>"$results"
        done
        if [[ $mode == on ]]; then
            sleep 1 # the last batch
            echo "{\"tool\":\"exporter\",\"label\":\"on\",\"round\":$round,\"spans_exported\":$(counter gpuhttpd_trace_spans_exported_total),\"traces_dropped\":$(counter gpuhttpd_trace_dropped_total)}" >>"$results"
        fi
        stop_server
    done
done
stop_sink

python3 - "$results" "$backend" "$conns" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs = [r for r in rows if r.get("tool") == "loadgen"]
print(f"\n### Tracing cost ({sys.argv[2]} backend, {sys.argv[3]} connections)\n")
cpu = [r for r in rows if r.get("tool") == "cpu"]
print("| test | tracing | req/s | p50 us | p99 us | server CPU us/req | req/s on/off | CPU/req on/off |")
print("|---|---|---|---|---|---|---|---|")
for test, short in (("healthz", "healthz"), ("run_axpy_4k", "run")):
    med = {}
    for mode in ("off", "on"):
        rs = [r for r in runs if r["test"] == test and r["label"] == mode]
        cs = [c for c in cpu if c["test"] == short and c["label"] == mode]
        per_req = [c["ticks"] / c["hz"] * 1e6 / r["requests"] for c, r in zip(cs, rs)]
        med[mode] = [statistics.median(r[k] for r in rs) for k in ("rps", "p50_us", "p99_us")]
        med[mode].append(statistics.median(per_req))
    for mode in ("off", "on"):
        rps, p50, p99, us = med[mode]
        ratio = f"{med['on'][0] / med['off'][0]:.3f}" if mode == "on" else ""
        cratio = f"{med['on'][3] / med['off'][3]:.3f}" if mode == "on" else ""
        print(f"| {test} | {mode} | {rps:.0f} | {p50:.1f} | {p99:.1f} | {us:.1f} | {ratio} | {cratio} |")
exp = [r for r in rows if r.get("tool") == "exporter"]
print("\nexporter per 'on' round: " + ", ".join(
    f"{r['spans_exported']} spans exported, {r['traces_dropped']} traces dropped" for r in exp))
PY
if [[ $failures -ne 0 ]]; then
    echo "$failures run(s) FAILED" >&2
    exit 1
fi
