#!/usr/bin/env bash
# Builds gpuhttpd (installing missing packages) and starts it in the
# foreground with its defaults: the GPU when one is usable, otherwise the host
# backend, on 127.0.0.1:8080.
#
# usage: server/serve.sh [-DNAME=VALUE ...] [--] [gpuhttpd options]
#
# Leading -D arguments go to CMake, for instance -DGHD_CUDA=OFF (no CUDA
# kernels: seconds to build instead of minutes, for a machine without a GPU)
# or -DCMAKE_C_COMPILER_LAUNCHER=ccache; CMake keeps them in the build
# folder's cache until they are given again. `--` ends them; what follows
# goes to gpuhttpd (see build/gpuhttpd --help). GHD_BUILD_DIR picks the build
# folder (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake_args=()
while [ $# -gt 0 ]; do
  case $1 in
    -D?*) cmake_args+=("$1") ;;
    --)
      shift
      break
      ;;
    *) break ;;
  esac
  shift
done
build=${GHD_BUILD_DIR:-build}

server/install-deps.sh
# The tests' libraries (cmocka, libcurl) are not installed here, so the test
# tree stays out of this build: tests/run.sh builds and runs it.
mkdir -p "$build"
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF "${cmake_args[@]}" \
  >"$build/configure.log" 2>&1; then
  tail -30 "$build/configure.log" >&2
  echo "serve: CMake could not configure $build (its whole output: $build/configure.log)" >&2
  exit 1
fi
# CMakeLists.txt says what it chose in lines of its own.
sed -n 's/^-- gpuhttpd: /serve: /p' "$build/configure.log"
if grep -q '^-- gpuhttpd: CUDA backend ON' "$build/configure.log" &&
  ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "serve: no NVIDIA driver here (no libcuda.so.1): gpuhttpd will use the host backend;" \
    "the CUDA kernels are compiled all the same (minutes), since GHD_CUDA=ON was asked for;" \
    "server/serve.sh -DGHD_CUDA=AUTO leaves them out where no driver is"
fi
cmake --build "$build" -j "$(nproc)" --target gpuhttpd ghd_swagger_ui
exec "$build/gpuhttpd" "$@"
