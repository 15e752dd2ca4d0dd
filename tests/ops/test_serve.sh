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
echo "test_serve: ok"
