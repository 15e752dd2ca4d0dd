#!/usr/bin/env bash
# The runtime stage's libraries, taken from the binary the build stage made
# rather than from a second package list: whatever server/install-deps.sh
# installed there (and whatever the base calls those packages: Ubuntu's
# libmicrohttpd12t64 is Debian 12's libmicrohttpd12) is what the runtime
# stage installs.
#
#   runtime-deps.sh collect BINARY DIR   (build stage) writes DIR/packages,
#       the packages owning the shared libraries BINARY loads, and copies
#       the ones no package owns (built from source, say) under DIR/root at
#       the path they have here (the binary's run path may name it).
#   runtime-deps.sh install DIR BINARY [PACKAGE...]   (runtime stage)
#       installs those packages and PACKAGEs where missing, puts DIR/root's
#       files in place, removes DIR, and fails unless BINARY loads all it needs.
set -euo pipefail

owner() { # the package that owns a file, trying both sides of the /usr merge
  local f out
  for f in "$1" "/usr${1#/usr}" "${1#/usr}"; do
    out=$(dpkg-query -S "$f" 2>/dev/null) && { echo "${out%%:*}"; return 0; }
  done
  return 1
}

collect() {
  local binary=$1 dir=$2 lib pkg
  mkdir -p "$dir/root"
  : >"$dir/packages"
  for lib in $(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'); do
    if pkg=$(owner "$lib") || pkg=$(owner "$(readlink -f "$lib")"); then
      echo "$pkg" >>"$dir/packages"
    else
      mkdir -p "$dir/root$(dirname "$lib")"
      cp -L "$lib" "$dir/root$lib"
    fi
  done
  sort -u -o "$dir/packages" "$dir/packages"
  echo "runtime-deps: $(tr '\n' ' ' <"$dir/packages")+" \
    "$(find "$dir/root" -type f | wc -l) unpackaged libraries"
}

install_deps() {
  local dir=$1 binary=$2 p missing=()
  shift 2
  for p in $(cat "$dir/packages") "$@"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
      missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    rm -rf /var/lib/apt/lists/*
  fi
  cp -a "$dir/root/." /
  ldconfig
  rm -rf "$dir"
  if ldd "$binary" | grep 'not found'; then
    echo "runtime-deps: $binary cannot load the libraries above" >&2
    exit 1
  fi
}

case "${1:-}" in
  collect) collect "$2" "$3" ;;
  install) shift; install_deps "$@" ;;
  *) echo "usage: $0 collect BINARY DIR | install DIR BINARY [PACKAGE...]" >&2; exit 2 ;;
esac
