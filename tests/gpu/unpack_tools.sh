#!/usr/bin/env bash
# Unpacks DIR/tools.tar.xz (tests/gpu/pack_tool.sh) in DIR and prints its bin
# folder; nothing when DIR has no tools archive.
# usage: PATH=$(tests/gpu/unpack_tools.sh DIR):$PATH
set -euo pipefail
dir=$(cd "$1" && pwd)
[[ -f $dir/tools.tar.xz ]] || exit 0
[[ -d $dir/bin ]] || tar -C "$dir" -xJf "$dir/tools.tar.xz"
echo "$dir/bin"
