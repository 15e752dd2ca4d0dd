#!/usr/bin/env bash
# Packs a tool of this machine that the GPU machine's image lacks (perf,
# haproxy) with every shared library it needs except glibc's own, into one
# xz archive: DIR/tools.tar.xz holds bin/NAME and lib/. Carry DIR to the GPU
# machine; there `tests/gpu/unpack_tools.sh DIR` unpacks it and prints the
# bin folder to put first on PATH (lib/ is found through the wrapper it writes).
# usage: tests/gpu/pack_tool.sh DIR BINARY...
set -euo pipefail
dir=$1
shift
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$dir" "$stage/bin" "$stage/lib"
for bin in "$@"; do
  cp -L "$bin" "$stage/bin/$(basename "$bin").real"
  # A wrapper so the tool finds its libraries without LD_LIBRARY_PATH
  # reaching the programs it starts (perf record starts none; haproxy none).
  cat >"$stage/bin/$(basename "$bin")" <<'WRAP'
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH=$here/../lib exec "$here/$(basename "$0").real" "$@"
WRAP
  chmod +x "$stage/bin/$(basename "$bin")"
  ldd "$bin" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    case "$name" in
      libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
      *) cp -L "$path" "$stage/lib/$name" ;;
    esac
  done
done
tar -C "$stage" -cJf "$dir/tools.tar.xz" bin lib
ls -la "$dir/tools.tar.xz"
