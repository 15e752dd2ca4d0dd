#!/bin/bash
# The transfer benchmark: gpuhttpd's uploads, downloads and small requests, each set
# against a ceiling measured in the same run on the same machine.
#
# usage: run_transfer_bench.sh [--backend cuda|host] BUILD_DIR OUT_DIR
#
# In order: pinned_ceiling (PCIe and HBM copies); gpuhttpd, in rounds at each connection
# count of tcp_ceiling (loopback TCP) then loadgen upload and download (with the server's
# CPU time per GB and peak RSS over the timed part); then small requests;
# downloads are timed with a client that, like tcp_ceiling's readers, does nothing with
# the bytes (--verify none), and each connection count gets one more download that
# compares every byte as it arrives (label gpuhttpd_checked: its rate and its
# verdict are the table's "checked" and "checksum ok"; uploads are checked after
# their timed part in every run);
# and mhd_static (libmicrohttpd alone, same daemon flags: healthz, body-discarding
# uploads and static downloads; healthz again with libmicrohttpd's default 32 KiB
# connection memory). Raw results go to OUT_DIR/results.jsonl, the table
# to OUT_DIR/report.md and stdout. Exits 1 when any run failed or moved wrong bytes.
#
# Environment (defaults in brackets):
#   BENCH_BYTES           bytes per connection for bulk runs [1G]
#   BENCH_REPEAT          runs of each bulk measurement; the table shows the best [3]
#   BENCH_CONNS           connection counts for bulk runs, "" for none ["1 4 8 16"]
#   BENCH_SMALL_CONNS     connection counts for small requests, "" for none ["1 64"]
#   BENCH_SMALL_REQUESTS  requests per connection per small test [20000]
#   BENCH_SMALL_SECONDS   time bound per small test [5]
#   BENCH_PINNED_MIB      bytes per pinned_ceiling copy, in MiB [1024]
#   BENCH_TIMEOUT         seconds before any one tool run is aborted [300]
#   BENCH_SERVER_ARGS     extra gpuhttpd options, e.g. "--staging-chunk 8M" [none]
#   BENCH_SERVER_BIN      the gpuhttpd binary, e.g. an older build for an A/B [BUILD_DIR/gpuhttpd]
#   BENCH_MHD_ARGS        mhd_static options [its defaults, which mirror gpuhttpd's]
#   BENCH_LOADGEN_ARGS    extra loadgen options for bulk runs, gpuhttpd's and mhd_static's
#                         alike, e.g. "--pattern 1052675" [none]
#   GHD_BENCH_TOKEN       bearer token loadgen sends, for a server started with tokens
# If BUILD_DIR/devlibs exists (see tests/gpu/pack_libs.sh) it joins LD_LIBRARY_PATH.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=bench_common.sh
. "$(dirname "$0")/bench_common.sh" "$@"

bytes=${BENCH_BYTES:-1G}
read -r -a conns_list <<<"${BENCH_CONNS-1 4 8 16}"
read -r -a small_conns_list <<<"${BENCH_SMALL_CONNS-1 64}"
small_requests=${BENCH_SMALL_REQUESTS:-20000}
small_seconds=${BENCH_SMALL_SECONDS:-5}
repeat=${BENCH_REPEAT:-3}
pinned_mib=${BENCH_PINNED_MIB:-1024}
timeout_s=${BENCH_TIMEOUT:-300}
read -r -a server_args <<<"${BENCH_SERVER_ARGS:-}"
read -r -a mhd_args <<<"${BENCH_MHD_ARGS:-}"
read -r -a loadgen_args <<<"${BENCH_LOADGEN_ARGS:-}"

tools=$build/tests/bench
server_bin=${BENCH_SERVER_BIN:-$build/gpuhttpd}
for bin in "$server_bin" "$tools/loadgen" "$tools/tcp_ceiling" "$tools/mhd_static" \
    "$tools/pinned_ceiling"; do
    [[ -x $bin ]] || { echo "missing $bin: build first" >&2; exit 2; }
done
trap stop_server EXIT
# shellcheck source-path=SCRIPTDIR source=bench_results.sh
. "$(dirname "$0")/bench_results.sh"

loadgen() {
    record "$tools/loadgen" --port "$port" --timeout "$timeout_s" "$@"
}

measure_pinned() {
    log "pinned_ceiling"
    record "$tools/pinned_ceiling" --bytes-mib "$pinned_mib"
}

# Each round measures the TCP ceiling right before the service's upload and download
# at the same connection count, so a drift of the machine over the run moves both.
measure_service() {
    start_server gpuhttpd "$server_bin" --backend "$backend" --bind 127.0.0.1 \
        ${server_args[@]+"${server_args[@]}"}
    for c in "${conns_list[@]}"; do
        for round in $(seq "$repeat"); do
            log "round $round at $c connections: tcp_ceiling, gpuhttpd upload and download"
            record "$tools/tcp_ceiling" --conns "$c" --bytes "$bytes" --timeout "$timeout_s" \
                --label "tcp"
            loadgen --mode upload --conns "$c" --bytes "$bytes" \
                --server-pid "$server_pid" --label gpuhttpd \
                ${loadgen_args[@]+"${loadgen_args[@]}"}
            loadgen --mode download --verify none --conns "$c" --bytes "$bytes" \
                --server-pid "$server_pid" --label gpuhttpd \
                ${loadgen_args[@]+"${loadgen_args[@]}"}
        done
        log "gpuhttpd download at $c connections, every byte compared"
        loadgen --mode download --conns "$c" --bytes "$bytes" \
            --server-pid "$server_pid" --label gpuhttpd_checked \
            ${loadgen_args[@]+"${loadgen_args[@]}"}
    done
    for c in "${small_conns_list[@]}"; do
        log "gpuhttpd small requests, $c connections"
        loadgen --mode small --conns "$c" --requests "$small_requests" \
            --duration "$small_seconds" --label gpuhttpd
    done
    stop_server
}

measure_http_layer() {
    start_server mhd_static "$tools/mhd_static" ${mhd_args[@]+"${mhd_args[@]}"}
    for c in "${small_conns_list[@]}"; do
        log "mhd_static healthz, $c connections"
        loadgen --mode small --tests healthz --conns "$c" --requests "$small_requests" \
            --duration "$small_seconds" --label mhd_static
    done
    for c in "${conns_list[@]}"; do
        log "mhd_static upload and download, $c connections"
        for _ in $(seq "$repeat"); do
            loadgen --mode upload --put-path /discard --conns "$c" --bytes "$bytes" \
                --server-pid "$server_pid" --label mhd_static \
                ${loadgen_args[@]+"${loadgen_args[@]}"}
            loadgen --mode download --verify none --get-path "/bytes?n=$bytes" --conns "$c" \
                --bytes "$bytes" --server-pid "$server_pid" --label mhd_static \
                ${loadgen_args[@]+"${loadgen_args[@]}"}
        done
    done
    stop_server
    # libmicrohttpd's own default connection memory (32 KiB), for what a large
    # connection memory costs each small request.
    start_server mhd_static_32k "$tools/mhd_static" --memory-limit 32K \
        ${mhd_args[@]+"${mhd_args[@]}"}
    for c in "${small_conns_list[@]}"; do
        log "mhd_static --memory-limit 32K healthz, $c connections"
        loadgen --mode small --tests healthz --conns "$c" --requests "$small_requests" \
            --duration "$small_seconds" --label mhd_static_32k
    done
    stop_server
}


# failed_mark KEY=VALUE...: " FAILED" when any matching run failed.
failed_mark() {
    local line
    while IFS= read -r line; do
        if matches "$line" "$@" && [[ $line == *'"status":"FAILED"'* ]]; then
            echo " FAILED"
            return 0
        fi
    done <"$results"
}

# checksums_ok KEY=VALUE...: false if any matching run moved wrong bytes, else the
# best run's checksum_ok (true, or null when nothing was checked).
checksums_ok() {
    local line
    while IFS= read -r line; do
        if matches "$line" "$@" && [[ $line == *'"checksum_ok":false'* ]]; then
            echo false
            return 0
        fi
    done <"$results"
    json_get "$(find_line "$@")" checksum_ok
}

# The best pinned rate for a direction (h2d or d2h), or empty without a GPU.
pinned_best() {
    sed -n "/\"tool\":\"pinned_ceiling\",\"path\":\"$1\"/s/.*\"gbps\":\([0-9.]*\).*/\1/p" \
        "$results" | sort -g | tail -n 1
}

# round_ratio MODE CONNS: the median over rounds of gpuhttpd's rate divided by the TCP
# ceiling measured right before it in the same round, a figure steadier than best over
# best when the machine drifts between rounds.
round_ratio() {
    awk -v mode="$1" -v conns="$2" '
        function num(key,   m) {
            if (!match($0, "\"" key "\":[0-9.]+")) return ""
            m = substr($0, RSTART, RLENGTH); sub(/.*:/, "", m); return m
        }
        num("conns") != conns { next }
        /"tool":"tcp_ceiling"/ { tcp = num("gbps"); next }
        /"tool":"loadgen"/ && /"label":"gpuhttpd"/ && index($0, "\"mode\":\"" mode "\"") {
            if (tcp + 0 > 0 && /"status":"ok"/) printf "%.17g\n", num("gbps") / tcp
        }' "$results" | median
}

minimum() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "") print a; else print (a + 0 < b + 0 ? a : b) }'; }

table_bulk_row() {
    local mode=$1 c=$2 pinned=$3 line tcp http ceiling gbps checked=- verdict
    line=$(find_line tool=loadgen mode="$mode" label=gpuhttpd conns="$c")
    [[ -n $line ]] || return 0
    tcp=$(json_get "$(find_line tool=tcp_ceiling conns="$c")" gbps)
    http=$(json_get "$(find_line tool=loadgen mode="$mode" label=mhd_static conns="$c")" gbps)
    ceiling=$(minimum "$tcp" "$pinned")
    gbps=$(json_get "$line" gbps)
    verdict=$(checksums_ok tool=loadgen mode="$mode" label=gpuhttpd conns="$c")
    if [[ $mode == download ]]; then
        checked="$(fmt "$(json_get "$(find_line tool=loadgen mode=download \
            label=gpuhttpd_checked conns="$c")" gbps)" 2) GB/s"
        verdict=$(checksums_ok tool=loadgen mode=download label=gpuhttpd_checked conns="$c")
    fi
    printf '| %s | %s | %s GB/s%s | %s | %s GB/s | %s | %s | %s | %s | %s | %s |\n' "$mode" "$c" \
        "$(fmt "$gbps" 2)" "$(failed_mark tool=loadgen mode="$mode" label=gpuhttpd conns="$c")" \
        "$checked" "$(fmt "$ceiling" 2)" "$(ratio "$gbps" "$ceiling")" \
        "$(round_ratio "$mode" "$c")" "$(ratio "$gbps" "$http")" "${verdict:-false}" \
        "$(fmt "$(json_get "$line" server_cpu_s_per_gb)" 3)" \
        "$(fmt "$(json_get "$line" server_peak_rss_mib)" 0)"
}

table_small_row() {
    local test=$1 c=$2 line http="" ceiling=- rps
    line=$(find_line tool=loadgen mode=small label=gpuhttpd test="$test" conns="$c")
    [[ -n $line ]] || return 0
    if [[ $test == healthz ]]; then
        http=$(json_get "$(find_line mode=small label=mhd_static test=healthz conns="$c")" rps)
    fi
    if [[ -n $http ]]; then
        ceiling="$(fmt "$http" 0) req/s"
    fi
    rps=$(json_get "$line" rps)
    # The ceiling of a small request is libmicrohttpd alone: ratio and vs HTTP agree.
    printf '| %s (p50 %s us, p99 %s us) | %s | %s req/s%s | - | %s | %s | - | %s | - | - | - |\n' \
        "$test" "$(fmt "$(json_get "$line" p50_us)" 0)" "$(fmt "$(json_get "$line" p99_us)" 0)" \
        "$c" "$(fmt "$rps" 0)" \
        "$(failed_mark tool=loadgen mode=small label=gpuhttpd test="$test" conns="$c")" \
        "$ceiling" "$(ratio "$rps" "$http")" "$(ratio "$rps" "$http")"
}

# small_ceiling_rows: mhd_static's healthz rates, as configured and with 32 KiB.
small_ceiling_rows() {
    local c label line
    for label in mhd_static mhd_static_32k; do
        for c in "${small_conns_list[@]}"; do
            line=$(find_line mode=small label="$label" test=healthz conns="$c")
            if [[ -n $line ]]; then
                printf '| ceiling: %s healthz (p50 %s us, p99 %s us) | %s | %s req/s | | | | | | | - | |\n' \
                    "$label" "$(fmt "$(json_get "$line" p50_us)" 0)" \
                    "$(fmt "$(json_get "$line" p99_us)" 0)" "$c" "$(fmt "$(json_get "$line" rps)" 0)"
            fi
        done
    done
}

# ceiling_row NAME CONNS GBPS [CPU_S_PER_GB]
ceiling_row() {
    printf '| ceiling: %s | %s | %s GB/s | | | | | | | %s | |\n' "$1" "$2" "$(fmt "$3" 2)" \
        "$(fmt "${4:-}" 3)"
}

table_ceiling_rows() {
    local c line path best mode
    for path in h2d d2h; do
        best=$(pinned_best "$path")
        if [[ -n $best ]]; then
            ceiling_row "pinned $path (best chunk)" - "$best"
        fi
    done
    line=$(find_line tool=pinned_ceiling path=d2d chunk="$((pinned_mib << 20))")
    if [[ -n $line ]]; then
        ceiling_row "D2D copy" - "$(json_get "$line" gbps)"
    fi
    for c in "${conns_list[@]}"; do
        line=$(find_line tool=tcp_ceiling conns="$c")
        if [[ -n $line ]]; then
            ceiling_row "loopback TCP" "$c" "$(json_get "$line" gbps)"
        fi
        for mode in upload download; do
            line=$(find_line tool=loadgen mode="$mode" label=mhd_static conns="$c")
            if [[ -n $line ]]; then
                ceiling_row "mhd_static $mode" "$c" "$(json_get "$line" gbps)" \
                    "$(json_get "$line" server_cpu_s_per_gb)"
            fi
        done
    done
}

print_table() {
    local h2d="" d2h="" c test mode
    if [[ $backend == cuda ]]; then
        h2d=$(pinned_best h2d)
        d2h=$(pinned_best d2h)
    fi
    echo "# gpuhttpd transfer benchmark"
    echo
    echo "backend $backend, $bytes per connection, best of $repeat runs," \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)," \
        "$(nproc) cores, GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null |
            head -n 1 || true)"
    echo
    echo "ceiling = min(loopback TCP at the same connection count, best pinned copy in that" \
        "direction); ratio = best result over best ceiling; round ratio = median over rounds" \
        "of the result over the TCP ceiling measured just before it; vs HTTP = against mhd_static (libmicrohttpd alone, same flags);" \
        "CPU and RSS are the server's over the timed part. GB/s = 10^9 bytes/s. Downloads are" \
        "timed unchecked, as the ceilings' readers are; checked = one more download comparing every" \
        "byte on arrival (its verdict is the download's checksum ok)."
    echo
    echo "| test | conns | result | checked | ceiling | ratio | round ratio | vs HTTP | checksum ok | CPU s/GB | peak RSS MiB |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for c in "${conns_list[@]}"; do
        table_bulk_row upload "$c" "$h2d"
    done
    for c in "${conns_list[@]}"; do
        table_bulk_row download "$c" "$d2h"
    done
    for test in healthz alloc_delete_4k put_4k run_axpy_4k; do
        for c in "${small_conns_list[@]}"; do
            table_small_row "$test" "$c"
        done
    done
    table_ceiling_rows
    small_ceiling_rows
}

measure_pinned
measure_service
measure_http_layer
print_table | tee "$out/report.md"
if [[ $failures -gt 0 ]]; then
    echo "$failures run(s) FAILED; see $results" >&2
    exit 1
fi
