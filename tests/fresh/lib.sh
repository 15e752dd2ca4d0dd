# shellcheck shell=bash
# Sourced by tests/fresh/check.sh and tests/container/check.sh: a clean
# Debian root of this machine's release, made by debootstrap from the apt
# sources this machine uses and cached outside the checkout, and the few
# things a machine of this kind is given besides its packages (apt's sources
# and fetch settings, the trusted CA certificates, the pip configuration, DNS).
# Needs root and debootstrap (server/install-deps.sh --test installs it).

fresh_cache=${GHD_FRESH_CACHE:-/var/cache/gpuhttpd-fresh}

fresh_log() { echo "fresh: $*" >&2; }

fresh_codename() {
  sed -n 's/^VERSION_CODENAME=//p' /etc/os-release
}

# The first Debian archive apt here fetches the release itself from.
fresh_mirror() {
  local codename
  codename=$(fresh_codename)
  # shellcheck disable=SC2016 # apt expands these, not the shell
  apt-get indextargets --format '$(REPO_URI) $(RELEASE)' |
    awk -v c="$codename" '$2 == c { sub("/$", "", $1); print $1; exit }'
}

# Prints the folder of the pristine base root, making it first when the cache
# has none (or one from another release or mirror). Concurrent callers wait
# on a lock; a half-made root is never left where it would be used.
fresh_base_root() {
  local codename mirror key base stamp
  codename=$(fresh_codename)
  mirror=$(fresh_mirror)
  [ -n "$mirror" ] || { fresh_log "no apt source for $codename"; return 1; }
  key="$codename minbase $mirror"
  base="$fresh_cache/base-$codename"
  stamp="$base.key"
  mkdir -p "$fresh_cache"
  (
    flock 9
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] && [ -d "$base" ]; then
      exit 0
    fi
    fresh_log "debootstrap $key into $base (empty cache)"
    rm -f "$stamp"
    fresh_remove "$base" && fresh_remove "$base.tmp" || exit 1
    local t0=$SECONDS
    # In a mount namespace of its own: what debootstrap mounts in the root
    # (/proc, /sys) goes away with it, even when it fails half way.
    unshare --mount --propagation private -- \
      debootstrap --variant=minbase "$codename" "$base.tmp" "$mirror" \
      >"$fresh_cache/debootstrap.log" 2>&1 || {
      tail -20 "$fresh_cache/debootstrap.log" >&2
      fresh_remove "$base.tmp" || true
      exit 1
    }
    mv "$base.tmp" "$base"
    echo "$key" >"$stamp"
    fresh_log "base root made in $((SECONDS - t0)) s"
  ) 9>"$fresh_cache/lock" || return 1
  echo "$base"
}

# Unmounts whatever is mounted under DIR (deepest first), then removes DIR.
# Leaves DIR, saying so, if anything stays mounted there: rm must never reach
# a host folder bound into it.
fresh_remove() {
  local dir=$1 m
  for m in $(findmnt -rn -o TARGET | grep "^$dir/" | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  if grep -q "^$dir/" <<<"$(findmnt -rn -o TARGET)"; then
    fresh_log "$dir still has mounts; left in place"
    return 1
  fi
  rm -rf --one-file-system "$dir"
}

# Copies the base root to DEST (which must not exist).
fresh_copy_root() {
  local base=$1 dest=$2
  mkdir -p "$(dirname "$dest")"
  cp -a --reflink=auto "$base" "$dest"
}

# Gives ROOT this machine's apt sources and fetch settings, CA certificates,
# pip configuration and DNS, so the registries answer there as they do here.
fresh_configure() {
  local root=$1 f key value
  # apt: the sources apt reads here (and the keyrings they name), and the
  # Acquire settings (proxies, validity checks of a snapshot mirror).
  rm -f "$root/etc/apt/sources.list"
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/"
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    cp "$f" "$root/etc/apt/sources.list.d/"
    # shellcheck disable=SC2013 # keyring paths have no spaces
    for key in $(sed -n 's/.*[Ss]igned-[Bb]y[:=] *\([^] ]*\).*/\1/p' "$f"); do
      [ -f "$key" ] && [ ! -e "$root$key" ] && install -D -m 644 "$key" "$root$key"
    done
  done
  for f in /etc/apt/apt.conf.d/*; do
    [ -f "$f" ] && grep -Eq '^[[:space:]]*Acquire' "$f" && cp "$f" "$root/etc/apt/apt.conf.d/"
  done
  # CA certificates: the local ones (update-ca-certificates keeps them when
  # ca-certificates is installed there later) and the bundle as it is here.
  mkdir -p "$root/usr/local/share/ca-certificates" "$root/etc/ssl/certs"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  # pip: every setting in effect here (files and PIP_* variables) as one
  # global file, and the local files or folders it names.
  local -A seen=()
  {
    echo "[global]"
    # Variables come first in this list and win, as they do for pip.
    while IFS= read -r f; do
      key=${f%%=*}
      key=${key#*.}
      [ -z "${seen[$key]:-}" ] || continue
      seen[$key]=1
      value=${f#*=}
      value=${value#\'}
      value=${value%\'}
      echo "$key = $value"
      if [ "${value#/}" != "$value" ] && [ -e "$value" ] && [ ! -e "$root$value" ]; then
        mkdir -p "$root$(dirname "$value")"
        cp -a "$value" "$root$value"
      fi
    done < <(python3 -m pip config list 2>/dev/null)
  } >"$root/etc/pip.conf"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}
