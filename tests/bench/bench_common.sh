# shellcheck shell=bash
# Sourced, with the script's own arguments, by the bench drivers that take
# [--backend cuda|host] BUILD_DIR OUT_DIR (run_transfer_bench.sh, run_gap_probe.sh):
# sets backend, build and out (both absolute, out made), puts BUILD_DIR/devlibs (see
# tests/gpu/pack_libs.sh) on LD_LIBRARY_PATH, empties $out/results.jsonl and defines
# record, pinned and cpus_other_than; then brings in bench_server.sh (one server at a
# time, log and stop_server).

usage() {
    echo "usage: $0 [--backend cuda|host] BUILD_DIR OUT_DIR" >&2
    exit 2
}

backend=cuda
if [[ ${1:-} == --backend ]]; then
    [[ $# -ge 2 ]] || usage
    backend=$2
    shift 2
fi
[[ $# -eq 2 ]] || usage
[[ $backend == cuda || $backend == host ]] || usage
build=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -d $build/devlibs ]]; then
    export LD_LIBRARY_PATH=$build/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

results=$out/results.jsonl
: >"$results"
failures=0

# record TOOL ARGS...: runs a tool that prints JSON lines, appends them to the results
# and counts failures (a line whose status is not ok, or a non-zero exit other than 77).
record() {
    local rc=0 lines
    lines=$("$@" --json) || rc=$?
    if [[ -n $lines ]]; then
        echo "$lines" | tee -a "$results" >&2
    fi
    if [[ $rc -ne 0 && $rc -ne 77 ]] || grep -q '"status":"FAILED"' <<<"$lines"; then
        echo "FAILED (exit $rc): $*" >&2
        failures=$((failures + 1))
    fi
}

# cpu_set(text), in Python: the CPUs of a list such as "0-7" or "0,2,4-6".
cpu_set_py='
def cpu_set(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus
'

# pinned CPUS CMD...: runs CMD on those CPUs (taskset, else Python's sched_setaffinity;
# either way CMD keeps the pid); CPUS "" runs CMD as it is.
pinned() {
    local cpus=$1
    shift
    [[ -n $cpus ]] || exec "$@"
    if command -v taskset >/dev/null; then
        exec taskset -c "$cpus" "$@"
    fi
    exec python3 -c "$cpu_set_py"'
import os, sys
os.sched_setaffinity(0, cpu_set(sys.argv[1]))
os.execvp(sys.argv[2], sys.argv[2:])' "$cpus" "$@"
}

# cpus_other_than LIST: this machine's CPUs not in LIST, as a list for pinned.
cpus_other_than() {
    python3 -c "$cpu_set_py"'
import os, sys
rest = sorted(set(range(os.cpu_count())) - cpu_set(sys.argv[1]))
print(",".join(map(str, rest)))' "$1"
}

# shellcheck source-path=SCRIPTDIR source=bench_server.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench_server.sh"
