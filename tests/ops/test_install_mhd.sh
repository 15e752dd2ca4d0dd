#!/usr/bin/env bash
# server/mhd/install-mhd.sh takes libmicrohttpd's source from the mirror the
# machine's apt sources name, never from a host of its own choosing: given a
# fake apt configuration (GHD_APT_ETC, GHD_OS_RELEASE) in both formats, with
# what apt skips or what holds no such file (comments, cdrom, a disabled
# stanza, another release, -security, a third-party repository, a deb822
# key block whose lines look like fields), `install-mhd.sh --urls` lists the
# archives of this release in apt's order, once each, then GNU's server.
# No network: --urls prints and exits.
#
# usage: test_install_mhd.sh SOURCE_DIR
set -euo pipefail
script=$(cd "$1" && pwd)/server/mhd/install-mhd.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAILED: $*"
  exit 1
}
pool=pool/main/libm/libmicrohttpd/libmicrohttpd_1.0.1.orig.tar.gz
gnu=https://ftp.gnu.org/gnu/libmicrohttpd/libmicrohttpd-1.0.1.tar.gz

mkdir -p "$tmp/apt/sources.list.d"
printf 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_CODENAME=bookworm\n' >"$tmp/os-release"
cat >"$tmp/apt/sources.list" <<'LIST'
# deb http://commented.example/debian bookworm main
deb cdrom:[Debian GNU/Linux 12.0.0 _Bookworm_]/ bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example.org/debian/ bookworm main contrib
deb http://security.example.org/debian-security bookworm-security main
deb [ arch=amd64 ] http://contrib-only.example/debian bookworm contrib
deb-src http://src.example.org/debian bookworm-updates main # the sources too
LIST
echo 'deb https://deb.nodesource.com/node_20.x nodistro main' >"$tmp/apt/sources.list.d/10-node.list"
printf '# the mirrors\nhttp://m1.example.com/debian\tpriority:1\nfile:/srv/local-mirror\n' \
  >"$tmp/mirrors.list"
cat >"$tmp/apt/sources.list.d/20-debian.sources" <<SOURCES
Types: deb
URIs: https://a.example.net/debian http://mirror.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 URIs: http://inside-a-key.example/debian
 -----END PGP PUBLIC KEY BLOCK-----

# disabled
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb deb-src
URIs: mirror+file:$tmp/mirrors.list
Suites: stable
Components: main non-free-firmware
SOURCES
cat >"$tmp/apt/sources.list.d/30-other.sources" <<'SOURCES'
Types: deb
URIs: http://trixie.example/debian
Suites: trixie
Components: main
SOURCES
# Not read by apt: neither .list nor .sources.
echo 'deb http://ignored.example/debian bookworm main' >"$tmp/apt/sources.list.d/40-x.list.disabled"

urls() { GHD_APT_ETC=$tmp/apt GHD_OS_RELEASE=$tmp/os-release bash "$script" --urls; }
got=$(urls) || fail "install-mhd.sh --urls failed: $got"
want="http://mirror.example.org/debian/$pool
http://src.example.org/debian/$pool
https://a.example.net/debian/$pool
http://m1.example.com/debian/$pool
$gnu"
[ "$got" = "$want" ] || fail "the URLs:"$'\n'"$got"$'\n'"wanted:"$'\n'"$want"

# Without any sources (a machine set up some other way): GNU's server only.
rm -rf "$tmp/apt"
mkdir -p "$tmp/apt"
got=$(urls) || fail "install-mhd.sh --urls without sources failed: $got"
[ "$got" = "$gnu" ] || fail "the URLs without sources: $got"
echo "test_install_mhd: ok"
