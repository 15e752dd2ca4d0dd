#!/bin/bash
# The array transfer benchmark: .npy beside raw bytes, and the
# Python client beside curl, in one run (see array_bench.py for the details).
#   usage: run_array_bench.sh [--backend cuda|host] BUILD_DIR OUT_DIR
#   BENCH_ARRAY_BYTES [4G]  BENCH_REPEAT [3]  BENCH_SERVER_ARGS  BENCH_TMP
set -euo pipefail
backend=cuda
if [[ ${1:-} == --backend ]]; then
    backend=$2
    shift 2
fi
[[ $# -eq 2 ]] || { echo "usage: $0 [--backend cuda|host] BUILD_DIR OUT_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
if [[ -d $build/devlibs ]]; then
    export LD_LIBRARY_PATH=$build/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export PYTHONPATH=$here/../../clients/python/src${PYTHONPATH:+:$PYTHONPATH}
exec python3 "$here/array_bench.py" "$build/gpuhttpd" "$2" --backend "$backend"
