#!/usr/bin/env bash
# The README's start command on a fresh machine: a clean Debian root (made by
# debootstrap, cached in $GHD_FRESH_CACHE, default /var/cache/gpuhttpd-fresh)
# given only what a machine of the CI kind has besides its packages (apt
# sources, CA certificates, pip configuration, and the CUDA toolkit read-only
# with its loader configuration), a clean copy of the commit (git archive, no
# build folders), and `server/serve.sh` run in it by chroot until /readyz
# answers; then the README's install of the Python client runs there (its
# "the Python client on a fresh machine" block, line by line as written) and
# the installed client makes a round trip and a run against that server;
# then SIGTERM must stop it with status 0. It also proves that a binary which
# builds but cannot load its libraries there fails this check.
#
# usage: tests/fresh/check.sh [COMMIT]   (default HEAD; run as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ref=${1:-HEAD}
timeout_s=${GHD_FRESH_TIMEOUT:-1500}

fail() { echo "fresh: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || fail "no debootstrap: run server/install-deps.sh --test"

# Everything mounted below lives in a mount namespace of this check's own, so
# nothing can stay mounted on the host whatever ends it; the trap still
# unmounts before the root is removed.
if [ -z "${GHD_FRESH_NS:-}" ]; then
  exec env GHD_FRESH_NS=1 unshare --mount --propagation private -- "$0" "$@"
fi

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}")
t_start=$SECONDS
base=$(fresh_base_root)
t_base=$((SECONDS - t_start))

work=$(mktemp -d "$fresh_cache/run.XXXXXX")
root=$work/root
pid=
cleanup() {
  local rc=$?
  if [ -n "$pid" ]; then
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  fresh_remove "$work" || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fresh_copy_root "$base" "$root"
fresh_configure "$root"

# The CUDA toolkit as the machine kind guarantees it: /usr/local/cuda* (the
# folders read-only, the links as links) and the loader entries naming it.
cuda=0
for p in /usr/local/cuda*; do
  [ -e "$p" ] || continue
  if [ -L "$p" ]; then
    cp -P "$p" "$root$p"
  elif [ -d "$p" ]; then
    mkdir -p "$root$p"
    mount --bind "$p" "$root$p"
    mount -o remount,bind,ro "$root$p"
    cuda=1
  fi
done
for f in /etc/ld.so.conf.d/*.conf; do
  [ -f "$f" ] && grep -q '^/usr/local/cuda' "$f" && cp "$f" "$root/etc/ld.so.conf.d/"
done
[ "$cuda" = 1 ] || fresh_log "no CUDA toolkit here: the build will have the host backend only"
# With the toolkit, the start command's GHD_CUDA=AUTO still builds the host
# backend alone where no NVIDIA driver is (checked below).

mkdir -p "$root/root/gpuhttpd"
git -C "$repo" archive --format=tar "$commit" | tar -x -C "$root/root/gpuhttpd"

mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
chroot "$root" ldconfig

# What a login on the fresh machine has in its environment, nothing of ours.
root_env=(/usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)

# Runs the start command in the root; returns 0 once /readyz answers 200 (pid
# is then the server's), 1 if it exits first, and fails the check on timeout.
start_and_wait() {
  local log=$1 port deadline=$((SECONDS + timeout_s))
  rm -f "$root/tmp/gpuhttpd.port"
  setsid chroot "$root" "${root_env[@]}" /bin/bash -c \
    'cd /root/gpuhttpd && exec server/serve.sh --port 0 --port-file /tmp/gpuhttpd.port' \
    >"$log" 2>&1 </dev/null &
  pid=$!
  while [ "$SECONDS" -lt "$deadline" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" || true
      pid=
      return 1
    fi
    port=$(cat "$root/tmp/gpuhttpd.port" 2>/dev/null || true)
    if [ -n "$port" ] &&
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; then
      return 0
    fi
    sleep 1
  done
  tail -30 "$log" >&2
  fail "no answer from /readyz within $timeout_s s"
}

stop_server() {
  local rc=0 deadline=$((SECONDS + 60))
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
  wait "$pid" || rc=$?
  pid=
  return "$rc"
}

# The README's Python client install, run in the root as written, then the
# installed package (not the checkout's source) against the running server.
python_client_check() {
  local port cmds
  port=$(cat "$root/tmp/gpuhttpd.port")
  cmds=$(sed -n '/^    # the Python client on a fresh machine$/,/^$/{s/^    //;/^#/d;/^$/d;p}' \
    "$root/root/gpuhttpd/README.md")
  [ -n "$cmds" ] || fail "README.md has no 'the Python client on a fresh machine' block"
  if ! chroot "$root" "${root_env[@]}" DEBIAN_FRONTEND=noninteractive /bin/bash -euxo pipefail \
    -c "cd /root/gpuhttpd && $cmds" >"$work/pyclient.log" 2>&1; then
    tail -30 "$work/pyclient.log" >&2
    fail "the README's Python client install failed on the fresh root (log above)"
  fi
  # shellcheck disable=SC2016 # Python source, not shell
  chroot "$root" "${root_env[@]}" /bin/bash -c 'cd / && exec ~/gpuhttpd-venv/bin/python - "$0"' \
    "$port" <<'PY' >>"$work/pyclient.log" 2>&1 || { tail -20 "$work/pyclient.log" >&2; fail "the installed Python client's round trip failed (log above)"; }
import sys
import numpy as np
import gpuhttpd
c = gpuhttpd.Client("http://127.0.0.1:" + sys.argv[1])
a = np.arange(1000, dtype=np.float32)
with c.asarray(a) as x:
    assert np.array_equal(x.get(), a), "the downloaded array differs"
    value = c.run("sum", x=x)["value"]
    assert value == float(a.sum()), value
print("python client from", gpuhttpd.__file__, "round trip and sum ok")
PY
  grep -q "^python client from /root/gpuhttpd-venv/" "$work/pyclient.log" ||
    { tail -5 "$work/pyclient.log" >&2; fail "the client did not come from the venv's install"; }
}

fresh_log "start command on a fresh root: commit ${commit:0:12}"
t0=$SECONDS
if ! start_and_wait "$work/serve.log"; then
  tail -40 "$work/serve.log" >&2
  fail "server/serve.sh exited before /readyz answered (log above)"
fi
t_ready=$((SECONDS - t0))
grep -m 6 -i 'backend\|listening' "$work/serve.log" >&2 || true
# The toolkit without a driver (CI's machine): GHD_CUDA=AUTO builds the host
# backend alone, and says how to force the CUDA one. (The test command,
# tests/run.sh, compiles the CUDA code with -DGHD_CUDA=ON.)
if [ "$cuda" = 1 ] && [ ! -e /proc/driver/nvidia/version ] &&
  ! chroot "$root" ldconfig -p | grep -q 'libcuda\.so\.1 '; then
  grep -q '^serve: CUDA backend OFF (GHD_CUDA=AUTO, no NVIDIA driver here.*-DGHD_CUDA=ON' \
    "$work/serve.log" || fail "nvcc without a driver: the start command did not build the host" \
    "backend alone, saying how to force CUDA (log: $work/serve.log)"
fi
t0=$SECONDS
python_client_check
t_python=$((SECONDS - t0))
fresh_log "the README's Python client install and a round trip through it: $t_python s"
rc=0
stop_server || rc=$?
[ "$rc" = 0 ] || { tail -20 "$work/serve.log" >&2; fail "SIGTERM: exit status $rc, not 0"; }
fresh_log "ready after $t_ready s (packages, build, start); stopped by SIGTERM with status 0"

binary=/root/gpuhttpd/build/gpuhttpd
libs=$(chroot "$root" "${root_env[@]}" ldd "$binary") || fail "ldd $binary failed: $libs"
missing=$(grep 'not found' <<<"$libs" || true)
[ -z "$missing" ] || fail "the binary cannot load: $missing"

# The same start must fail where the binary cannot load a library it was
# built against: take the loader's CUDA entries away (as on a machine that
# has the toolkit's files but not its loader configuration).
if grep -q '=> /usr/local/cuda' <<<"$libs"; then
  mkdir -p "$work/ldconf"
  for f in "$root"/etc/ld.so.conf.d/*.conf; do
    grep -q '^/usr/local/cuda' "$f" && mv "$f" "$work/ldconf/"
  done
  chroot "$root" ldconfig
  if start_and_wait "$work/noload.log"; then
    stop_server || true
    fail "the server started although its CUDA libraries are not on the loader path"
  fi
  grep -q 'error while loading shared libraries' "$work/noload.log" ||
    { tail -20 "$work/noload.log" >&2; fail "the failed start did not say why"; }
  fresh_log "a binary that cannot load its libraries fails the start (as it must):" \
    "$(grep -m1 'error while loading' "$work/noload.log")"
else
  fresh_log "the binary loads nothing from the CUDA toolkit: the unloadable-library case not run"
fi
fresh_log "ok: base root $t_base s, start command $t_ready s, Python client $t_python s," \
  "total $((SECONDS - t_start)) s"
