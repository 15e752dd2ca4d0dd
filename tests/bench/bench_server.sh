# shellcheck shell=bash
# Sourced by the bench drivers (bench_common.sh for run_transfer_bench.sh and
# run_gap_probe.sh; run_staging_cap_probe.sh, run_upload_profile.sh): one server at
# a time, on an ephemeral port it writes to a file. The caller
# sets $out, the folder for NAME.port and NAME.log, and traps stop_server on
# exit.
: "${out:?the sourcing script sets out}"
server_pid=
port=

log() { echo "== $*" >&2; }

# start_server NAME CMD...: starts a server that writes its port to $out/NAME.port,
# sets server_pid and port.
start_server() {
    local name=$1 port_file=$out/$1.port
    shift
    rm -f "$port_file"
    "$@" --port 0 --port-file "$port_file" 2>"$out/$name.log" &
    server_pid=$!
    for _ in $(seq 300); do
        [[ -s $port_file ]] && break
        kill -0 "$server_pid" 2>/dev/null || {
            cat "$out/$name.log" >&2
            echo "$name exited before listening" >&2
            server_pid=
            return 1
        }
        sleep 0.1
    done
    [[ -s $port_file ]] || { echo "$name did not write $port_file" >&2; return 1; }
    port=$(<"$port_file")
    log "$name (pid $server_pid) listening on 127.0.0.1:$port"
}

# stop_server: stops the running server, if any.
stop_server() {
    [[ -n $server_pid ]] || return 0
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}
