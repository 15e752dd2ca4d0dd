#!/bin/bash
# Where a multi-connection transfer spends the server's CPU: gpuhttpd on the
# CUDA backend under `perf record -g` while loadgen uploads, then downloads,
# over C connections; a flat profile by shared object and symbol, and one by
# shared object alone, for each direction, with loopback TCP measured alone in the
# same run so the throughput under perf can be read as a ratio.
#
# usage: run_upload_profile.sh BUILD_DIR OUT_DIR
# Environment: PROFILE_CONNS [8], PROFILE_BYTES per connection [1G],
#   PROFILE_SERVER_ARGS extra gpuhttpd options [none], PROFILE_BACKEND [cuda].
# Needs perf (exit 77 without it; the GPU machine has none: tests/gpu/pack_tool.sh
# carries this machine's). Samples cpu-clock: that machine has no hardware events. Writes OUT_DIR/profile.md.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v perf >/dev/null || { echo "no perf here" >&2; exit 77; }
conns=${PROFILE_CONNS:-8}
bytes=${PROFILE_BYTES:-1G}
backend=${PROFILE_BACKEND:-cuda}
read -r -a server_args <<<"${PROFILE_SERVER_ARGS:-}"
tools=$build/tests/bench
if [[ -d $build/devlibs ]]; then
    export LD_LIBRARY_PATH=$build/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# shellcheck source-path=SCRIPTDIR source=bench_server.sh
. "$(dirname "$0")/bench_server.sh"
trap stop_server EXIT
report=$out/profile.md
{
    echo "# Server CPU profile, $conns connections x $bytes"
    echo
    echo "loopback TCP alone: $("$tools/tcp_ceiling" --conns "$conns" --bytes "$bytes" 2>&1 | tail -1)"
} >"$report"
start_server server "$build/gpuhttpd" --backend "$backend" ${server_args[@]+"${server_args[@]}"}
for mode in upload download; do
    perf record -e cpu-clock -g -F 999 -p "$server_pid" -o "$out/perf-$mode.data" 2>"$out/perf-$mode.log" &
    perf_pid=$!
    sleep 0.5
    line=$("$tools/loadgen" --mode "$mode" --port "$port" --conns "$conns" --bytes "$bytes" \
        --timeout 120 2>&1 | grep -E "^(upload|download):" | tail -1)
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    {
        echo
        echo "## $mode under perf: $line"
        echo
        echo '```'
        perf report -i "$out/perf-$mode.data" --stdio --no-children -g none \
            --sort dso,symbol --percent-limit 0.7 2>/dev/null | grep -E '^ +[0-9]' | head -40
        echo
        perf report -i "$out/perf-$mode.data" --stdio --no-children -g none --sort dso \
            --percent-limit 1 2>/dev/null | grep -E '^ +[0-9]' | head -12
        echo
        perf report -i "$out/perf-$mode.data" --stdio --no-children -g none --sort comm \
            --percent-limit 1 2>/dev/null | grep -E '^ +[0-9]' | head -12
        echo '```'
    } >>"$report"
done
cat "$report"
