#!/usr/bin/env bash
# Builds libmicrohttpd 1.0.1 with gpuhttpd's patch and installs it into its own
# prefix (GHD_MHD_PREFIX, default /opt/gpuhttpd-mhd), which CMake searches
# first. Does nothing when that build is already there. Called by
# server/install-deps.sh; safe to run again.
#
# Why not Debian 12's libmicrohttpd 0.9.75: its parser drops a header it
# cannot parse (`Content-Length : 5`, an obs-folded value, an empty name)
# instead of refusing the request, so a body can be run as a second request
# (request smuggling). 1.0's parser follows RFC 9112 and refuses all
# of them. Why our own build and prefix: Debian 12 has no 1.0 package (trixie's
# binaries need a newer glibc), and the patch (gpuhttpd.patch) turns the
# error pages libmicrohttpd itself sends into application/problem+json
# (clients parse one error format), answers "gzip, chunked" (a coding we do not
# implement before the final chunked) 501 instead of 400 (RFC 9112 section
# 6.1), and fixes 1.0.1's chunk extension parsing (the LF ending a
# "5;ext" line was read as data, so every extension was a 400). The
# prefix keeps the system's libmicrohttpd12 (same soname) for everything else.
set -euo pipefail

prefix=${GHD_MHD_PREFIX:-/opt/gpuhttpd-mhd}
version=1.0.1
sha256=a89e09fc9b4de34dde19f4fcb4faaa1ce10299b9908db1132bbfa1de47882b94
# Debian's source package (the same tarball as GNU's release), then GNU's.
urls=("http://deb.debian.org/debian/pool/main/libm/libmicrohttpd/libmicrohttpd_${version}.orig.tar.gz"
  "https://ftp.gnu.org/gnu/libmicrohttpd/libmicrohttpd-${version}.tar.gz")
here=$(cd "$(dirname "$0")" && pwd)
patch_file=$here/gpuhttpd.patch
# The stamp names the version and the patch: a changed patch rebuilds.
stamp="$version $(sha256sum "$patch_file" | cut -d' ' -f1)"
stamp_file=$prefix/share/gpuhttpd-mhd.stamp

installed() {
  [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] &&
    [ -f "$prefix/lib/pkgconfig/libmicrohttpd.pc" ]
}
installed && exit 0

sudo_cmd=()
[ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpuhttpd
mkdir -p "$cache"
# Two builds at once (two checkouts' test runs) would install over each other.
exec 9>"$cache/install-mhd.lock"
flock 9
installed && exit 0
tarball=$cache/libmicrohttpd-$version.tar.gz
if ! echo "$sha256  $tarball" | sha256sum -c --status 2>/dev/null; then
  rm -f "$tarball"
  for url in "${urls[@]}"; do
    echo "install-mhd: fetching $url"
    if curl -fsSL --retry 2 -o "$tarball.part" "$url" &&
      echo "$sha256  $tarball.part" | sha256sum -c --status; then
      mv "$tarball.part" "$tarball"
      break
    fi
    echo "install-mhd: $url failed or its checksum is wrong" >&2
    rm -f "$tarball.part"
  done
  [ -f "$tarball" ] || { echo "install-mhd: cannot get libmicrohttpd $version" >&2; exit 1; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf "$tarball" -C "$work"
src=$work/libmicrohttpd-$version
patch -d "$src" -p1 -s <"$patch_file"
echo "install-mhd: building libmicrohttpd $version into $prefix"
(
  cd "$src"
  ./configure -q --prefix="$prefix" --enable-https --disable-static --disable-doc \
    --disable-examples --disable-curl --disable-tools >"$work/configure.log" 2>&1 ||
    { tail -30 "$work/configure.log" >&2; exit 1; }
  make -s -j"$(nproc)" -C src/microhttpd >"$work/make.log" 2>&1 ||
    { tail -30 "$work/make.log" >&2; exit 1; }
)
"${sudo_cmd[@]}" make -s -C "$src/src/microhttpd" install >/dev/null
"${sudo_cmd[@]}" make -s -C "$src/src/include" install >/dev/null
"${sudo_cmd[@]}" install -D -m 644 "$src/libmicrohttpd.pc" "$prefix/lib/pkgconfig/libmicrohttpd.pc"
"${sudo_cmd[@]}" mkdir -p "$(dirname "$stamp_file")"
echo "$stamp" | "${sudo_cmd[@]}" tee "$stamp_file" >/dev/null
