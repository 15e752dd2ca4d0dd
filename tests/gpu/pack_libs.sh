#!/usr/bin/env bash
# Copies into DIR the shared libraries that the given binaries need and that
# the GPU test machine's image lacks (it has glibc, libjansson, libgnutls and
# libcurl, but not libmicrohttpd or libcmocka). Run it on the build machine
# after building; carry DIR with the build and set LD_LIBRARY_PATH=DIR there
# (tests/gpu/run_device.sh does).
# usage: tests/gpu/pack_libs.sh DIR BINARY...
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"
for bin in "$@"; do
  ldd "$bin" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    case "$name" in
      libmicrohttpd.so* | libcmocka.so*) cp -L "$path" "$dir/$name" ;;
    esac
  done
done
ls "$dir"
