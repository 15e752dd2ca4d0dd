#!/usr/bin/env bash
# The start command as a user runs it, into a build folder of its own
# (GHD_BUILD_DIR): leading -D arguments reach CMake and stay in its cache,
# `--` ends them and what follows reaches gpuhttpd (here --version, so
# nothing listens), and it prints the configure summary first.
#
# usage: test_serve.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
fail() {
  echo "FAILED: $*"
  exit 1
}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)

# $1: what was run; the rest: the output's lines that must be there.
expect() {
  local what=$1 line
  shift
  for line in "$@"; do
    grep -qx -- "$line" <<<"$out" || fail "$what printed no line matching '$line':"$'\n'"$out"
  done
}

out=$(GHD_BUILD_DIR=$build "$src/server/serve.sh" -DGHD_CUDA=OFF "${launcher[@]}" -- --version 2>&1) ||
  fail "server/serve.sh -DGHD_CUDA=OFF -- --version:"$'\n'"$out"
expect "serve.sh -DGHD_CUDA=OFF -- --version" \
  'serve: CUDA backend OFF (GHD_CUDA=OFF): the host backend only' \
  "serve: build type Release, build folder $build" 'serve: libmicrohttpd 1\..* from .*' \
  'gpuhttpd [0-9][0-9.]*'
grep -qx 'GHD_CUDA:STRING=OFF' "$build/CMakeCache.txt" || fail "GHD_CUDA=OFF is not in the cache"
[ -x "$build/gpuhttpd" ] || fail "no $build/gpuhttpd"

# No -D: the arguments go to gpuhttpd as they are, and the cache keeps OFF.
out=$(GHD_BUILD_DIR=$build "$src/server/serve.sh" --version 2>&1) ||
  fail "server/serve.sh --version:"$'\n'"$out"
expect "serve.sh --version (the second time)" \
  'serve: CUDA backend OFF (GHD_CUDA=OFF): the host backend only' 'gpuhttpd [0-9][0-9.]*'

# GHD_CUDA=AUTO (the default) with nvcc but no NVIDIA driver: the host backend
# alone, saying how to force the CUDA one; configured only, nothing built.
if { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; } &&
  [ ! -e /proc/driver/nvidia/version ] && ! /sbin/ldconfig -p | grep -q 'libcuda\.so\.1 '; then
  auto=$(mktemp -d)
  out=$(cmake -S "$src" -B "$auto" -DBUILD_TESTING=OFF "${launcher[@]}" 2>&1) ||
    fail "cmake with GHD_CUDA=AUTO:"$'\n'"$out"
  rm -rf "$auto"
  grep -q '^-- gpuhttpd: CUDA backend OFF (GHD_CUDA=AUTO, no NVIDIA driver here: .*-DGHD_CUDA=ON builds' \
    <<<"$out" || fail "GHD_CUDA=AUTO with nvcc and no driver did not leave CUDA out:"$'\n'"$out"
else
  echo "test_serve: nvcc missing or a driver present: the AUTO without a driver case not run"
fi
echo "test_serve: ok"
