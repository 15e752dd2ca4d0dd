#!/usr/bin/env bash
# Copies what the GPU machine needs from a build folder into a slim one (the
# device tool carries at most 64 MiB): the server, the gpu-labelled test and
# bench binaries, the reliability tests, their CTest files (paths rewritten),
# the packed libraries and the tools that machine lacks (haproxy).
# Every binary embeds the same CUDA fatbin (~8 MiB),
# so the slim folder holds them as one xz archive, which keeps one copy;
# run_device.sh unpacks it there, as would
# `tar -C SLIM -xJf SLIM/bins.tar.xz`. GHD_SLIM_XZ sets xz's options (-9 by
# default; -1 packs in seconds where the binaries are small enough).
# usage: tests/gpu/slim_build.sh BUILD SLIM
set -euo pipefail
build=$(cd "$1" && pwd)
slim=$2
rm -rf "$slim"
mkdir -p "$slim"
slim=$(cd "$slim" && pwd)
# The commit the binaries were built from (the device machine's checkout may
# be another): the build folder's source tree, "-dirty" with local changes.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ $commit != unknown ]] && ! git -C "$src" diff --quiet HEAD 2>/dev/null; then
  commit+=-dirty
fi
echo "$commit" >"$slim/COMMIT"
# A build without the CUDA backend (GHD_CUDA=AUTO on a machine without a
# driver builds none) would only skip every gpu test there: refuse it.
if ! grep -q "cudaStreamCreateWithPriority" "$build/gpuhttpd"; then
  echo "slim_build.sh: $build/gpuhttpd has no CUDA backend (configure with -DGHD_CUDA=ON)" >&2
  exit 1
fi
bins=(gpuhttpd tests/http/test_buffers_http tests/http/test_http_large
  tests/http/test_http_contention tests/http/test_runs_http tests/gpu/test_kernels_gpu
  tests/bench/loadgen tests/bench/tcp_ceiling
  tests/bench/mhd_static tests/bench/pinned_ceiling tests/reliability/soak
  tests/reliability/libghd_early_thread.so tests/bench/bench_kernels
  tests/gpu/test_ukernels_gpu tests/gpu/test_ustop_gpu tests/http/test_ukernels_http tests/bench/bench_ukernels
  tests/http/test_arrays_http tests/gpu/test_modules_gpu tests/http/test_inline_http
  tests/bench/bench_modules tests/gpu/test_regions_gpu tests/bench/ipc_peer
  tests/gpu/test_devices_gpu tests/bench/bench_copies
  tests/unit/test_raw)
# test_raw is labelled security as well as unit: run_device.sh's reliability
# part runs it on CUDA (its real-NVRTC case compiles there, as it does here).
# Every reliability/security test binary, found rather than listed: a new one
# listed by hand was twice missed and then showed as "Not Run" on the H200.
while read -r f; do bins+=("${f#"$build"/}"); done < <(
  find "$build/tests/reliability" -maxdepth 1 -type f -executable -name 'test_*' | sort)
# And every gpu-labelled test's executable, found the same way (a gpu test
# added without a line here showed as "Not Run").
while read -r f; do
  [[ $f == "$build"/* && -x $f ]] && bins+=("${f#"$build"/}")
done < <(ctest --test-dir "$build" -L gpu --show-only=json-v1 2>/dev/null |
  python3 -c 'import json,sys; [print(t["command"][0]) for t in json.load(sys.stdin)["tests"] if t.get("command")]' |
  sort -u)
mapfile -t bins < <(printf '%s\n' "${bins[@]}" | sort -u)
for f in "${bins[@]}"; do
  mkdir -p "$slim/$(dirname "$f")"
  cp "$build/$f" "$slim/$f"
done
(cd "$build" && find . -name CTestTestfile.cmake -o -name DartConfiguration.tcl) |
  while read -r f; do
    mkdir -p "$slim/$(dirname "$f")"
    sed "s|$build|$slim|g" "$build/$f" >"$slim/$f"
  done
"$(dirname "$0")/pack_libs.sh" "$slim/devlibs" "$slim/gpuhttpd" \
  "$slim/tests/http/test_buffers_http" >/dev/null
# Tools that machine lacks, where this one has them (GHD_SLIM_TOOLS: haproxy by
# default, 4.9 MB, for run_device.sh's part "proxy"; "haproxy perf" for the part
# "profile" too, 7.2 MB more), packed in one archive by pack_tool.sh (a second
# pack_tool.sh into SLIM/tools would replace it); run_device.sh puts them first on PATH.
tools=()
for t in ${GHD_SLIM_TOOLS-haproxy}; do
  p=$(command -v "$t" || true)
  if [[ -n $p ]]; then tools+=("$p"); fi
done
if [[ ${#tools[@]} -gt 0 ]]; then
  "$(dirname "$0")/pack_tool.sh" "$slim/tools" "${tools[@]}" >/dev/null
fi
(cd "$slim" && XZ_OPT=${GHD_SLIM_XZ:--9} tar -cJf bins.tar.xz "${bins[@]}" && rm -f "${bins[@]}")
du -sh "$slim"
