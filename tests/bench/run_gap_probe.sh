#!/bin/bash
# Where the 8-16 connection gap goes: what keeps gpuhttpd's uploads and downloads at
# 8 and 16 connections under loopback TCP, each hypothesis tested by a measurement in
# the same run, every figure against the plain TCP ceiling measured in that run.
#
# usage: run_gap_probe.sh [--backend cuda|host] BUILD_DIR OUT_DIR
#
# In order:
#   pinned_ceiling          the DMA alone (cuda only)
#   tcp_ceiling cases       in rounds, at each connection count:
#     tcp                   the ceiling as run_transfer_bench.sh measures it
#     (c) io64k io8m        read()/send() of 64 KiB / 8 MiB instead of 1 MiB
#     (c) sockbuf0 sockbuf16m   kernel autotuning / 16 MiB socket buffers instead of 4 MiB
#     (c) nonblock          non-blocking sockets and poll() when one would block, as the
#                           server's threads do (tcp_ceiling blocks in read()/send())
#     (c) span_up           readers fill two 8 MiB chunks in turn (an upload's staging
#                           chunks: cold memory), reads of up to 8 MiB as the server's
#     (c) span_up_1m        the same with reads of at most 1 MiB
#     (c) span_up_2m        two 1 MiB chunks in turn, 1 MiB reads: a span small enough
#                           to stay in the CPU's caches (16 connections: 32 MiB)
#     (c) span_down         writers send from a 4 MiB block in 4 MiB sends (a download's
#                           response buffer and block)
#     (c) span_down_1m      the same in 1 MiB sends
#     (b) split             writers pinned to the lower half of the cores, readers to the
#                           upper half
#     (a) bg_h2d bg_d2h     a pinned 64 MiB copy loop at full speed beside the transfer
#     (d) dma_up            span_up, each full chunk copied to the device (the DMA an
#                           upload adds: the fair upload ceiling)
#     (d) dma_up_2m         span_up_2m, each full 1 MiB chunk copied to the device
#     (d) dma_up_wc dma_up_2m_wc   dma_up, dma_up_2m with write-combined chunks (the CPU's
#                           writes bypass its caches; the device's reads are not snooped)
#     (d) dma_up_spare dma_up_2m_spare   dma_up, dma_up_2m with each copy reading a spare
#                           span no thread writes (the same calls, waits and device
#                           traffic; the device never reads what the reader just wrote)
#     (d) dma_up_2m_bounce dma_up_2m_nt   dma_up_2m with each read() into one hot 1 MiB
#                           buffer, then copied into the chunk by memcpy / by non-temporal
#                           stores (no read for ownership, nothing cached to snoop)
#     (d) dma_up_1m dma_up_1m_nt dma_up_256k_nt   two 8 MiB chunks filled by 1 MiB reads
#                           (span_up_1m's shape with the DMA), the same through a hot 1 MiB
#                           buffer and non-temporal stores, and through a 256 KiB one
#     (d) dma_up_256k_bounce dma_up_64k_nt   dma_up through a hot 256 KiB buffer by memcpy;
#                           through a 64 KiB one by non-temporal stores
#     (d) dma_down          writers copy each 4 MiB chunk from the device before sending
#                           it, the next fetched meanwhile (the fair download ceiling)
#     (e) tcp_huge          tcp with both sides' buffers in transparent huge pages
#     (e) span_up_huge dma_up_huge   span_up, dma_up with the readers' chunks in huge pages
#                           (the kernel's copy takes a TLB miss per 2 MiB, not per 4 KiB)
#     (e) span_down_huge dma_down_huge   span_down, dma_down with the writers' chunks in
#                           huge pages
#   gpuhttpd A (defaults)   in rounds: tcp again (tcp_ref, the drift), upload, download,
#                           and the download again with loadgen checking every byte as it
#                           arrives (what the transfer bench's client pays)
#   (b) gpuhttpd split      a second server pinned to the upper half, loadgen to the lower
#   (c) variants            one server per option set beside A, runs alternating A, B, A, B
#                           so that both see the same machine (GAP_VARIANTS)
# Every tcp_ceiling and loadgen line carries the CPU time of each side and what the whole
# machine did over the timed part (busy and stolen share of all cores, mean runnable
# threads). Uploads and downloads here check no bytes (run_transfer_bench.sh does); the
# downloads all read one buffer filled once. The DMA cases are skipped, and say so, on
# the host backend or without a device. Raw lines: OUT_DIR/results.jsonl; the report
# (findings, then the table last): OUT_DIR/report.md and stdout. Exits 1 when a run
# failed. About 90 s on the H200 with the defaults.
#
# Environment (defaults in brackets):
#   GAP_BYTES        bytes per connection [1G]
#   GAP_CONNS        connection counts ["8 16"]
#   GAP_ROUNDS       rounds of the tcp cases and of A's runs [2]
#   GAP_AB_ROUNDS    A/B alternations per variant, mode and connection count [2]
#   GAP_TCP_CASES    which tcp cases, by name [all of the above]
#   GAP_VARIANTS     gpuhttpd option sets separated by ';', "|upload" after one limits
#                    it to uploads ("|download" to downloads) ["--staging-chunk 2M;
#                    --sync-spin-us 0; --socket-buffer 16M"], "" for none; a set
#                    starting with bin=PATH runs that gpuhttpd binary (e.g. an earlier
#                    commit's build) with the options that follow, so that two builds
#                    are compared on the same machine in alternation; env=NAME=VALUE
#                    words before it (or before the options) set its environment
#                    (e.g. env=GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
#   GAP_PINNED_MIB   pinned_ceiling bytes in MiB, 0 to skip it [1024]
#   GAP_TIMEOUT      seconds before any one tool run is aborted [120]
#   GAP_SERVER_ARGS  options for every gpuhttpd of the run [none]
#   GAP_SERVER_BIN   the gpuhttpd binary [BUILD_DIR/gpuhttpd]
#   GAP_PERF         1: the first round's tcp cases run under `perf record -g` (cpu-clock,
#                    the whole tcp_ceiling process: writers, readers and their CUDA calls),
#                    and OUT_DIR/profile.md gets each one's flat profile by symbol and by
#                    shared object (needs perf: tests/gpu/pack_tool.sh; the data files
#                    stay in a temporary directory) [0]
# If BUILD_DIR/devlibs exists (see tests/gpu/pack_libs.sh) it joins LD_LIBRARY_PATH.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=bench_common.sh
. "$(dirname "$0")/bench_common.sh" "$@"
here=$(cd "$(dirname "$0")" && pwd)

bytes=${GAP_BYTES:-1G}
read -r -a conns_list <<<"${GAP_CONNS-8 16}"
rounds=${GAP_ROUNDS:-2}
ab_rounds=${GAP_AB_ROUNDS:-2}
all_cases="tcp io64k io8m sockbuf0 sockbuf16m nonblock span_up span_up_1m span_up_2m span_down"
all_cases+=" span_down_1m split bg_h2d bg_d2h dma_up dma_up_2m dma_up_wc dma_up_2m_wc"
all_cases+=" dma_up_spare dma_up_2m_spare dma_up_2m_bounce dma_up_2m_nt dma_up_1m dma_up_1m_nt"
all_cases+=" dma_up_256k_nt dma_up_256k_bounce dma_up_64k_nt dma_down tcp_huge span_up_huge"
all_cases+=" dma_up_huge span_down_huge dma_down_huge"
read -r -a tcp_cases <<<"${GAP_TCP_CASES-$all_cases}"
variants_text=${GAP_VARIANTS---staging-chunk 2M; --sync-spin-us 0; --socket-buffer 16M}
pinned_mib=${GAP_PINNED_MIB:-1024}
timeout_s=${GAP_TIMEOUT:-120}
perf_on=${GAP_PERF:-0}
if [[ $perf_on == 1 ]] && ! command -v perf >/dev/null; then
    echo "GAP_PERF=1 but no perf here (tests/gpu/pack_tool.sh packs one)" >&2
    exit 2
fi
perf_dir=
read -r -a common_args <<<"${GAP_SERVER_ARGS:-}"

tools=$build/tests/bench
server_bin=${GAP_SERVER_BIN:-$build/gpuhttpd}
for bin in "$server_bin" "$tools/loadgen" "$tools/tcp_ceiling" "$tools/pinned_ceiling"; do
    [[ -x $bin ]] || { echo "missing $bin: build first" >&2; exit 2; }
done

# The servers of the run by name (A, S, V1...): pid and port.
declare -A pids ports
stop_named() {
    local name=$1
    [[ -n ${pids[$name]:-} ]] || return 0
    server_pid=${pids[$name]}
    stop_server
    unset "pids[$name]" "ports[$name]"
}
stop_all() {
    local name
    for name in "${!pids[@]}"; do
        stop_named "$name"
    done
}
trap stop_all EXIT

cores=$(nproc)
half=$((cores / 2))
low_cpus=0-$((half - 1))
high_cpus=$half-$((cores - 1))

meta() {
    echo "{\"tool\":\"meta\",$1}" >>"$results"
}

tcp_args() {
    case $1 in
    tcp) ;;
    io64k) echo --io-size 64K ;;
    io8m) echo --io-size 8M ;;
    sockbuf0) echo --sockbuf 0 ;;
    sockbuf16m) echo --sockbuf 16M ;;
    nonblock) echo --poll ;;
    span_up) echo --recv-span 16M --io-size 8M ;;
    span_up_1m) echo --recv-span 16M --io-size 1M ;;
    span_up_2m) echo --recv-span 2M --io-size 1M ;;
    span_down) echo --send-span 4M --io-size 4M ;;
    span_down_1m) echo --send-span 4M --io-size 1M ;;
    split) echo --writer-cpus "$low_cpus" --reader-cpus "$high_cpus" ;;
    bg_h2d) echo --background-dma h2d ;;
    bg_d2h) echo --background-dma d2h ;;
    dma_up) echo --dma h2d --recv-span 16M --io-size 8M ;;
    dma_up_2m) echo --dma h2d --recv-span 2M --io-size 1M ;;
    dma_up_wc) echo --dma h2d --recv-span 16M --io-size 8M --write-combined ;;
    dma_up_2m_wc) echo --dma h2d --recv-span 2M --io-size 1M --write-combined ;;
    dma_up_spare) echo --dma h2d --recv-span 16M --io-size 8M --dma-from-spare ;;
    dma_up_2m_spare) echo --dma h2d --recv-span 2M --io-size 1M --dma-from-spare ;;
    dma_up_2m_bounce) echo --dma h2d --recv-span 2M --io-size 1M --bounce memcpy ;;
    dma_up_2m_nt) echo --dma h2d --recv-span 2M --io-size 1M --bounce nt ;;
    dma_up_1m) echo --dma h2d --recv-span 16M --io-size 1M ;;
    dma_up_1m_nt) echo --dma h2d --recv-span 16M --io-size 1M --bounce nt ;;
    dma_up_256k_nt) echo --dma h2d --recv-span 16M --io-size 256K --bounce nt ;;
    dma_up_256k_bounce) echo --dma h2d --recv-span 16M --io-size 256K --bounce memcpy ;;
    dma_up_64k_nt) echo --dma h2d --recv-span 16M --io-size 64K --bounce nt ;;
    dma_down) echo --dma d2h --send-span 8M --io-size 4M ;;
    tcp_huge) echo --huge-pages both ;;
    span_up_huge) echo --recv-span 16M --io-size 8M --huge-pages recv ;;
    dma_up_huge) echo --dma h2d --recv-span 16M --io-size 8M --huge-pages recv ;;
    span_down_huge) echo --send-span 4M --io-size 4M --huge-pages send ;;
    dma_down_huge) echo --dma d2h --send-span 8M --io-size 4M --huge-pages send ;;
    *) echo "unknown tcp case $1" >&2; return 1 ;;
    esac
}

# tcp_run CASE CONNS [LABEL]: one tcp_ceiling run of that case, labelled CASE or LABEL.
tcp_run() {
    local name=$1 c=$2 label=${3:-$1} args
    args=$(tcp_args "$name")
    if [[ $backend == host && ( $name == bg_* || $name == dma_* ) ]]; then
        echo "{\"tool\":\"tcp_ceiling\",\"label\":\"$name\",\"conns\":$c,\"status\":\"skipped\",\"reason\":\"host backend: no DMA\"}" |
            tee -a "$results" >&2
        return 0
    fi
    if [[ $name == split && $cores -lt 2 ]]; then
        echo "{\"tool\":\"tcp_ceiling\",\"label\":\"$name\",\"conns\":$c,\"status\":\"skipped\",\"reason\":\"one core\"}" |
            tee -a "$results" >&2
        return 0
    fi
    local -a under=()
    if [[ -n $perf_dir && $label == "$name" ]]; then
        under=(perf record -e cpu-clock -g -F 999 -q -o "$perf_dir/$name-$c.data" --)
    fi
    # shellcheck disable=SC2086 # the case's options are words
    record ${under[@]+"${under[@]}"} "$tools/tcp_ceiling" --conns "$c" --bytes "$bytes" \
        --timeout "$timeout_s" --label "$label" $args
}

# tcp_summary LABEL CONNS: that tcp case's first result, in words.
tcp_summary() {
    python3 - "$results" "$1" "$2" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("tool") == "tcp_ceiling" and r.get("label") == sys.argv[2] \
            and r.get("conns") == int(sys.argv[3]):
        print(f"{r.get('gbps')} GB/s, reader CPU {r.get('recv_cpu_s')} s, "
              f"writer CPU {r.get('send_cpu_s')} s, machine busy {r.get('machine_busy')}")
        break
EOF
}

# profile_tcp: each profiled tcp case's flat profile, by symbol and by thread (writers,
# readers, the driver's own threads) and shared object.
profile_tcp() {
    local data name
    {
        echo "# tcp_ceiling cases under perf (cpu-clock, 999 Hz, the whole process)"
        for data in "$perf_dir"/*.data; do
            [[ -e $data ]] || continue
            name=$(basename "$data" .data)
            echo
            echo "## $name: $(tcp_summary "${name%-*}" "${name##*-}")"
            echo
            echo '```'
            perf report -i "$data" --stdio --no-children -g none --sort dso,symbol \
                --percent-limit 0.7 2>/dev/null | grep -E '^ +[0-9]' | head -30
            echo
            perf report -i "$data" --stdio --no-children -g none --sort comm,dso \
                --percent-limit 1 2>/dev/null | grep -E '^ +[0-9]' | head -12
            echo '```'
        done
    } >"$out/profile.md"
}

# start_named NAME CPUS -- OPTIONS...: a gpuhttpd with these options (on those CPUs
# unless CPUS is empty); the binary is $named_bin when set, else $server_bin, run with
# the NAME=VALUE settings of $named_env added to its environment.
start_named() {
    local name=$1 cpus=$2 bin=${named_bin:-$server_bin}
    shift 3
    local -a envs=(env ${named_env[@]+"${named_env[@]}"})
    if [[ -n $cpus ]]; then
        start_server "$name" pinned "$cpus" "${envs[@]}" "$bin" --backend "$backend" \
            --bind 127.0.0.1 --log-level warn ${common_args[@]+"${common_args[@]}"} "$@"
    else
        start_server "$name" "${envs[@]}" "$bin" --backend "$backend" --bind 127.0.0.1 \
            --log-level warn ${common_args[@]+"${common_args[@]}"} "$@"
    fi
    pids[$name]=$server_pid
    ports[$name]=$port
}

# to_bytes SIZE: 64K, 1M, 1G or a plain count, in bytes.
to_bytes() {
    local n=${1%[KMG]}
    case $1 in
    *K) echo $((n << 10)) ;;
    *M) echo $((n << 20)) ;;
    *G) echo $((n << 30)) ;;
    *) echo "$1" ;;
    esac
}

# download_buffer NAME: a buffer of GAP_BYTES on that server, filled once, which its
# unchecked downloads all read (so that no download run pays an upload first).
declare -A dl_ids
download_buffer() {
    local name=$1 body reply id
    body="{\"size\":$(to_bytes "$bytes")}"
    exec 3<>"/dev/tcp/127.0.0.1/${ports[$name]}"
    printf 'POST /v1/buffers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
        "${#body}" "$body" >&3
    reply=$(timeout "$timeout_s" cat <&3)
    exec 3<&-
    id=$(sed -n 's/.*"id" *: *"\([^"]*\)".*/\1/p' <<<"$reply" | head -n 1)
    [[ -n $id ]] || { echo "no buffer from $name: $reply" >&2; return 1; }
    "$tools/loadgen" --port "${ports[$name]}" --mode upload --put-path "/v1/buffers/$id" \
        --conns 1 --bytes "$bytes" --timeout "$timeout_s" >/dev/null
    dl_ids[$name]=$id
}

# gpuhttpd_run NAME LABEL MODE CONNS [CPUS [compare]]: one loadgen run against that
# server (on those CPUs); uploads to a buffer per connection, unchecked; downloads of
# the shared buffer, unchecked, or with "compare" of buffers loadgen fills and checks.
gpuhttpd_run() {
    local name=$1 label=$2 mode=$3 c=$4 cpus=${5:-} check=${6:-none}
    local cmd=("$tools/loadgen" --port "${ports[$name]}" --mode "$mode" --conns "$c"
        --bytes "$bytes" --timeout "$timeout_s" --server-pid "${pids[$name]}" --label "$label"
        --verify "$check")
    if [[ $mode == download && $check == none ]]; then
        cmd+=(--get-path "/v1/buffers/${dl_ids[$name]}")
    fi
    if [[ -n $cpus ]]; then
        record pinned "$cpus" "${cmd[@]}"
    else
        record "${cmd[@]}"
    fi
}

measure_pinned() {
    if [[ $backend != cuda || $pinned_mib -eq 0 ]]; then
        meta '"pinned":"skipped"'
        return 0
    fi
    log "pinned_ceiling (the DMA alone)"
    record "$tools/pinned_ceiling" --bytes-mib "$pinned_mib" --repeat 2
}

measure_tcp() {
    local r c name
    [[ $perf_on == 1 ]] && perf_dir=$(mktemp -d)
    for r in $(seq "$rounds"); do
        for c in "${conns_list[@]}"; do
            log "tcp round $r, $c connections: ${tcp_cases[*]}"
            for name in "${tcp_cases[@]}"; do
                tcp_run "$name" "$c"
            done
        done
        if [[ -n $perf_dir ]]; then # the first round only
            profile_tcp
            rm -rf "$perf_dir"
            perf_dir=
        fi
    done
}

# A, the defaults, in rounds: TCP right before (the drift), upload, download, and the
# download with loadgen checking every byte on arrival.
measure_defaults() {
    local r c
    for r in $(seq "$rounds"); do
        for c in "${conns_list[@]}"; do
            log "gpuhttpd A round $r, $c connections"
            tcp_run tcp "$c" tcp_ref
            gpuhttpd_run A A upload "$c"
            gpuhttpd_run A A download "$c"
            gpuhttpd_run A A_check download "$c" "" compare
        done
    done
}

# The server on the upper half of the cores, loadgen on the lower half, as tcp's split.
measure_split() {
    local c
    if [[ $cores -lt 2 ]]; then
        meta '"split":"skipped: one core"'
        return 0
    fi
    start_named S "$high_cpus" --
    download_buffer S
    for c in "${conns_list[@]}"; do
        log "gpuhttpd split ($high_cpus; loadgen on $low_cpus), $c connections"
        gpuhttpd_run S split upload "$c" "$low_cpus"
        gpuhttpd_run S split download "$c" "$low_cpus"
    done
    stop_named S
}

# Each variant beside A, alternating A and B at every connection count and mode.
measure_variants() {
    local i=0 spec args modes r c mode
    local -a list
    IFS=';' read -r -a list <<<"$variants_text"
    for spec in "${list[@]}"; do
        args=${spec%%|*}
        args=$(echo "$args" | xargs)
        [[ -n $args ]] || continue
        modes="upload download"
        [[ $spec == *"|upload"* ]] && modes=upload
        [[ $spec == *"|download"* ]] && modes=download
        i=$((i + 1))
        meta "\"variant\":\"V$i\",\"args\":\"$args\",\"modes\":\"$modes\""
        read -r -a variant_args <<<"$args"
        local named_bin=
        local -a named_env=()
        while [[ ${variant_args[0]:-} == env=* ]]; do
            named_env+=("${variant_args[0]#env=}")
            variant_args=("${variant_args[@]:1}")
        done
        if [[ ${variant_args[0]:-} == bin=* ]]; then
            named_bin=${variant_args[0]#bin=}
            [[ -x $named_bin ]] || { echo "variant V$i: no binary $named_bin" >&2; exit 2; }
            variant_args=("${variant_args[@]:1}")
        fi
        start_named "V$i" "" -- ${variant_args[@]+"${variant_args[@]}"}
        [[ $modes == *download* ]] && download_buffer "V$i"
        for c in "${conns_list[@]}"; do
            for r in $(seq "$ab_rounds"); do
                for mode in $modes; do
                    log "A/B V$i ($args), $mode, $c connections"
                    gpuhttpd_run A "A~V$i" "$mode" "$c"
                    gpuhttpd_run "V$i" "V$i" "$mode" "$c"
                done
            done
        done
        stop_named "V$i"
    done
}

meta "\"backend\":\"$backend\",\"bytes\":\"$bytes\",\"conns\":\"${conns_list[*]}\",\"rounds\":$rounds,\"ab_rounds\":$ab_rounds,\"cores\":$cores,\"low_cpus\":\"$low_cpus\",\"high_cpus\":\"$high_cpus\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"gpu\":\"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || true)\",\"commit\":\"$(cat "$build/COMMIT" 2>/dev/null || git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)\""
started=$(date +%s)
measure_pinned
measure_tcp
start_named A "" --
download_buffer A
measure_defaults
measure_split
measure_variants
stop_all
meta "\"elapsed_s\":$(($(date +%s) - started))"
python3 "$here/gap_report.py" "$results" | tee "$out/report.md"
if [[ $failures -gt 0 ]]; then
    echo "$failures run(s) FAILED; see $results" >&2
    exit 1
fi
