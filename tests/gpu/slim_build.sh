#!/usr/bin/env bash
# Copies what the GPU machine needs from a build folder into a slim one (the
# device tool carries at most 64 MiB): the server, the gpu-labelled test and
# bench binaries, the soak, their CTest files (paths rewritten) and the packed
# libraries (bench_kernels stays behind: run it from a full build). usage: tests/gpu/slim_build.sh BUILD SLIM
set -euo pipefail
build=$(cd "$1" && pwd)
slim=$2
rm -rf "$slim"
mkdir -p "$slim"
slim=$(cd "$slim" && pwd)
bins=(gpuhttpd tests/http/test_buffers_http tests/http/test_http_large
  tests/http/test_http_contention tests/http/test_runs_http tests/gpu/test_kernels_gpu
  tests/bench/loadgen tests/bench/tcp_ceiling
  tests/bench/mhd_static tests/bench/pinned_ceiling tests/reliability/soak)
for f in "${bins[@]}"; do
  mkdir -p "$slim/$(dirname "$f")"
  cp "$build/$f" "$slim/$f"
done
(cd "$build" && find . -name CTestTestfile.cmake -o -name DartConfiguration.tcl) |
  while read -r f; do
    mkdir -p "$slim/$(dirname "$f")"
    sed "s|$build|$slim|g" "$build/$f" >"$slim/$f"
  done
"$(dirname "$0")/../../../shared/device/pack-libs.sh" "$slim/devlibs" "$slim/gpuhttpd" \
  "$slim/tests/http/test_buffers_http" >/dev/null
du -sh "$slim"
