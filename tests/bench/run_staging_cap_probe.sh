#!/usr/bin/env bash
# Does the per-address staging share (--staging-address-share, default 75%)
# bind, and what does it cost? One gpuhttpd per share (75, then 0 = no cap),
# loadgen uploads and downloads of 1 GiB per connection at 8, 16 and 32
# connections from 127.0.0.1, and after each the address counters of
# gpuhttpd_staging_capped_total (429s) and gpuhttpd_staging_overlap_capped_total
# (second chunks the cap stopped; cumulative per server). Rounds alternate
# the shares. Single runs, no ceiling: compare with run_transfer_bench.sh's
# spread before reading a difference into the GB/s.
#
# usage: tests/bench/run_staging_cap_probe.sh [--backend cuda|host] BUILD_DIR
# Environment: PROBE_ROUNDS [2], PROBE_BYTES [1G], PROBE_CONNS ["8 16 32"],
#              PROBE_SERVER_BIN [BUILD_DIR/gpuhttpd]
set -euo pipefail
backend=cuda
if [[ ${1:-} == --backend ]]; then
    backend=$2
    shift 2
fi
[[ $# -eq 1 ]] || { echo "usage: $0 [--backend cuda|host] BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
server_bin=${PROBE_SERVER_BIN:-$build/gpuhttpd}
loadgen=$build/tests/bench/loadgen
if [[ -d $build/devlibs ]]; then
    export LD_LIBRARY_PATH=$build/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
out=$(mktemp -d /tmp/ghd-capprobe-XXXXXX)
# shellcheck source-path=SCRIPTDIR source=bench_server.sh
. "$(dirname "$0")/bench_server.sh"
trap 'stop_server; rm -rf "$out"' EXIT

counters() {
    curl -s "127.0.0.1:$port/metrics" |
        awk '/^gpuhttpd_staging_(overlap_)?capped_total\{cap="address"\}/ {printf "%s=%s ", $1, $2}'
}

echo "| round | share | mode | conns | GB/s | counters after it |"
echo "|---|---|---|---|---|---|"
for round in $(seq "${PROBE_ROUNDS:-2}"); do
    for share in 75 0; do
        start_server gpuhttpd "$server_bin" --backend "$backend" --bind 127.0.0.1 \
            --staging-address-share "$share" --log-level warn
        for mode in upload download; do
            for c in ${PROBE_CONNS:-8 16 32}; do
                gbps=$("$loadgen" --mode "$mode" --conns "$c" --bytes "${PROBE_BYTES:-1G}" \
                    --verify none --port "$port" --json | tail -1 |
                    python3 -c 'import json, sys; print("%.2f" % json.load(sys.stdin)["gbps"])')
                echo "| $round | $share | $mode | $c | $gbps | $(counters)|"
            done
        done
        stop_server
    done
done
