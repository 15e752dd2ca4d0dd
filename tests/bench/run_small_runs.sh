#!/bin/bash
# Small runs against the HTTP floor: small_runs (healthz and a 4 KiB axpy run at each
# connection count, where a run's time goes, pipelines of k axpy steps, a list of
# runs in one request) on one gpuhttpd, then the pipelines again on a gpuhttpd
# started with BENCH_NOGRAPH_ARGS (pipelines not replayed as graphs), and
# libmicrohttpd alone (mhd_static) serving healthz, for the ratio the issue sets.
#
# usage: run_small_runs.sh [--backend cuda|host] BUILD_DIR OUT_DIR
#
# Environment (defaults in brackets):
#   BENCH_SMALL_CONNS     connection counts ["1 64"]
#   BENCH_SMALL_REQUESTS  requests per connection per test [20000]
#   BENCH_SMALL_SECONDS   time bound per test [5]
#   BENCH_STEPS           pipeline lengths ["1 4 16"]
#   BENCH_BATCH           runs in one request's list, 0 for none [16]
#   BENCH_SERVER_ARGS     gpuhttpd options ["--run-inline 1": runs on their request's thread, the default]
#   BENCH_NOGRAPH_ARGS    the options of the second server ["--run-graphs 0"]
#   BENCH_TIMEOUT         seconds before any one tool run is aborted [300]
# Raw results go to OUT_DIR/results.jsonl. Exits 1 when any run failed.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=bench_common.sh
. "$(dirname "$0")/bench_common.sh" "$@"

conns=${BENCH_SMALL_CONNS-1 64}
requests=${BENCH_SMALL_REQUESTS:-20000}
seconds=${BENCH_SMALL_SECONDS:-5}
steps=${BENCH_STEPS-1 4 16}
batch=${BENCH_BATCH:-16}
timeout_s=${BENCH_TIMEOUT:-300}
read -r -a server_args <<<"${BENCH_SERVER_ARGS---run-inline 1}"
read -r -a nograph_args <<<"${BENCH_NOGRAPH_ARGS---run-graphs 0}"
tools=$build/tests/bench
for bin in "$build/gpuhttpd" "$tools/small_runs" "$tools/loadgen" "$tools/mhd_static"; do
    [[ -x $bin ]] || { echo "missing $bin: build first" >&2; exit 2; }
done
trap stop_server EXIT

small_runs() {
    record timeout "$timeout_s" "$tools/small_runs" --port "$port" --requests "$requests" \
        --duration "$seconds" "$@"
}

start_server gpuhttpd "$build/gpuhttpd" --backend "$backend" \
    ${server_args[@]+"${server_args[@]}"}
log "gpuhttpd: healthz, runs, phases, pipelines, a list of runs"
small_runs --conns "${conns// /,}" --steps "${steps// /,}" --batch "$batch" --label gpuhttpd
stop_server

start_server gpuhttpd_nograph "$build/gpuhttpd" --backend "$backend" \
    ${server_args[@]+"${server_args[@]}"} ${nograph_args[@]+"${nograph_args[@]}"}
log "gpuhttpd ${nograph_args[*]}: pipelines"
small_runs --conns none --steps "${steps// /,}" --label gpuhttpd_nograph
stop_server

start_server mhd_static "$tools/mhd_static"
for c in $conns; do
    log "mhd_static healthz, $c connections"
    record timeout "$timeout_s" "$tools/loadgen" --port "$port" --mode small --tests healthz \
        --conns "$c" --requests "$requests" --duration "$seconds" --label mhd_static
done
stop_server

if [[ $failures -ne 0 ]]; then
    echo "$failures runs FAILED" >&2
    exit 1
fi
