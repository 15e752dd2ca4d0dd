#!/usr/bin/env bash
# Builds libmicrohttpd 1.0.1 with gpuhttpd's patch and installs it into its own
# prefix (GHD_MHD_PREFIX, default /opt/gpuhttpd-mhd), which CMake searches
# first. Does nothing when that build is already there. Called by
# server/install-deps.sh; safe to run again. The source comes from the Debian
# mirror this machine's apt sources name, else from GNU's server, checked
# against its SHA-256 either way.
#
# usage: install-mhd.sh           fetch (unless cached), build and install
#        install-mhd.sh --urls    print the URLs it would try, in order, and exit
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
tarball_path=pool/main/libm/libmicrohttpd/libmicrohttpd_${version}.orig.tar.gz
gnu_url=https://ftp.gnu.org/gnu/libmicrohttpd/libmicrohttpd-${version}.tar.gz

# The archive roots (one a line) of this machine's own apt sources that carry
# its release: suites named by VERSION_CODENAME of os-release (or a Debian
# alias such as stable), with -updates, -backports or -proposed, and
# component main; not -security archives, whose pool holds only updates. In
# apt's order: sources.list, then sources.list.d/ (*.list one-line entries,
# *.sources deb822 stanzas) by name. A mirror+file: URI stands for the http(s)
# mirrors its file lists. GHD_APT_ETC and GHD_OS_RELEASE name other files
# (tests).
apt_archives() {
  local etc=${GHD_APT_ETC:-/etc/apt} os_release=${GHD_OS_RELEASE:-/etc/os-release}
  local codename='' files=() f
  [ -r "$os_release" ] &&
    codename=$(sed -n 's/^VERSION_CODENAME=//p' "$os_release" | tr -d "\"'" | head -1)
  [ -f "$etc/sources.list" ] && files+=("$etc/sources.list")
  for f in "$etc"/sources.list.d/*; do
    case $f in *.list | *.sources) [ -f "$f" ] && files+=("$f") ;; esac
  done
  [ "${#files[@]}" -gt 0 ] || return 0
  awk -v codename="$codename" '
    function consider(uri, suite, comps,   base, path, line, m) {
      if ((" " comps " ") !~ / main / || suite ~ /-security$/) return
      base = suite
      sub(/-(updates|backports|proposed)$/, "", base)
      if (codename != "" && base != codename &&
          base !~ /^(stable|oldstable|oldoldstable|testing|unstable|sid)$/) return
      if (uri ~ /^mirror\+file:/) {
        path = uri
        sub(/^mirror\+file:(\/\/)?/, "", path)
        while ((getline line < path) > 0) {
          split(line, m, /[ \t]+/)
          if (m[1] ~ /^https?:\/\//) print_uri(m[1])
        }
        close(path)
      } else if (uri ~ /^https?:\/\//) {
        print_uri(uri)
      }
    }
    function print_uri(uri) {
      sub(/\/+$/, "", uri)
      if (!(uri in seen)) { seen[uri] = 1; print uri }
    }
    # deb822: stanzas of "Name: value" fields, continued on indented lines.
    function stanza(   i, j, nt, nu, ns, t, u, s, ok) {
      if (tolower(field["enabled"]) == "no") return
      nt = split(field["types"], t, /[ \t]+/)
      for (i = 1; i <= nt; i++) if (t[i] == "deb" || t[i] == "deb-src") ok = 1
      if (!ok) return
      nu = split(field["uris"], u, /[ \t]+/)
      ns = split(field["suites"], s, /[ \t]+/)
      for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
        if (u[i] != "" && s[j] != "") consider(u[i], s[j], field["components"])
    }
    FNR == 1 { if (in_stanza) stanza(); delete field; in_stanza = 0; name = "" }
    FILENAME ~ /\.sources$/ {
      if ($0 ~ /^#/) next
      if ($0 ~ /^[ \t]*$/) { if (in_stanza) stanza(); delete field; in_stanza = 0; name = ""; next }
      if ($0 ~ /^[ \t]/) { if (name != "") field[name] = field[name] " " $0; next }
      in_stanza = 1
      name = tolower($0)
      sub(/:.*/, "", name)
      value = $0
      sub(/^[^:]*:[ \t]*/, "", value)
      sub(/[ \t]+$/, "", value)
      field[name] = value
      next
    }
    {
      sub(/#.*/, "")
      if ($1 != "deb" && $1 != "deb-src") next
      i = 2
      if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      comps = ""
      for (j = i + 2; j <= NF; j++) comps = comps " " $j
      consider($i, $(i + 1), comps)
    }
    END { if (in_stanza) stanza() }
  ' "${files[@]}"
}

# This machine's Debian (or Ubuntu) mirrors, then GNU's release of the same
# tarball; the checksum decides whether a download is the one.
urls=()
while read -r archive; do
  urls+=("$archive/$tarball_path")
done < <(apt_archives)
urls+=("$gnu_url")
if [ "${1:-}" = "--urls" ]; then
  printf '%s\n' "${urls[@]}"
  exit 0
fi
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
