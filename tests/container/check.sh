#!/usr/bin/env bash
# docker/Dockerfile built and run for real with Debian's podman: the fresh
# Debian root of tests/fresh (with this machine's apt, CA and pip settings)
# imported as the local base image of both stages, CUDA off (the NVIDIA base
# images cannot be pulled here). The build context is a clean copy of the
# commit plus the build folders a user's start command leaves (.dockerignore
# must keep them out). Then the image must: refuse to start without tokens,
# serve with them, run as uid and gid 10001 (both named), pass its own
# HEALTHCHECK, and stop on SIGTERM with status 0; with TLS on, serve HTTPS on
# its port and still pass the HEALTHCHECK (through the plain-HTTP probe port).
# Then the Kubernetes manifests of docker/k8s on that image, played with
# `podman kube play` (kube_play.sh).
#
# usage: tests/container/check.sh [COMMIT]   (default HEAD; run as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ref=${1:-HEAD}

fail() { echo "container: FAIL: $*" >&2; exit 1; }
say() { echo "container: $*" >&2; }
[ "$(id -u)" = 0 ] || fail "needs root"
for t in podman runc debootstrap curl openssl kubectl; do
  command -v "$t" >/dev/null || fail "no $t: run server/install-deps.sh --test"
done

# shellcheck source-path=SCRIPTDIR source=../fresh/lib.sh
. "$repo/tests/fresh/lib.sh"
# shellcheck source-path=SCRIPTDIR source=kube_play.sh
. "$here/kube_play.sh"
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}")
t_start=$SECONDS
base=$(fresh_base_root)

work=$(mktemp -d /var/tmp/gpuhttpd-container.XXXXXX)
# Storage and network configuration of our own, so nothing here touches
# other podman users' images or networks.
pm=(podman --root "$work/storage" --runroot "$work/run" --storage-driver
  "${GHD_CONTAINER_STORAGE:-overlay}" --cgroup-manager cgroupfs --events-backend file
  --runtime runc --network-config-dir "$work/cni")
ctr=gpuhttpd-ci-$$
cleanup() {
  local rc=$?
  "${pm[@]}" rm -f -t 0 "$ctr" "$ctr-tls" >/dev/null 2>&1 || true
  kube_cleanup
  fresh_remove "$work" || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The base image: the fresh root as this machine's kind would be configured.
fresh_copy_root "$base" "$work/base"
fresh_configure "$work/base"
tar -C "$work/base" -c . | "${pm[@]}" import -q - localhost/gpuhttpd-ci-base:latest >/dev/null
fresh_remove "$work/base"
t_import=$((SECONDS - t_start))

# The context: the commit as a clone has it, plus what `server/serve.sh` and
# `tests/run.sh` leave behind (a CMake cache of another source folder).
mkdir -p "$work/ctx"
git -C "$repo" archive --format=tar "$commit" | tar -x -C "$work/ctx"
for b in build build-tests; do
  mkdir -p "$work/ctx/$b"
  printf 'CMAKE_HOME_DIRECTORY:INTERNAL=/home/someone/gpuhttpd\n' >"$work/ctx/$b/CMakeCache.txt"
done

say "building docker/Dockerfile on the fresh Debian base (commit ${commit:0:12})"
t0=$SECONDS
limits=(--ulimit nofile=20000:20000 --ulimit nproc=1000:1000)
if ! "${pm[@]}" build --format docker --isolation chroot --network host "${limits[@]}" \
  --build-arg BUILD_IMAGE=localhost/gpuhttpd-ci-base:latest \
  --build-arg RUNTIME_IMAGE=localhost/gpuhttpd-ci-base:latest \
  --build-arg GHD_CUDA=OFF \
  -f docker/Dockerfile -t localhost/gpuhttpd:ci "$work/ctx" >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log" >&2
  fail "the image did not build (log above)"
fi
t_build=$((SECONDS - t0))
grep 'runtime-deps:' "$work/build.log" >&2 || true

# Two free ports (host network: the image's 8080 and 8081 may be taken here).
free_ports() {
  python3 -c 'import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])'
}
read -r port probe_port < <(free_ports)
run=("${pm[@]}" run "${limits[@]}" --network host -e GHD_PORT="$port"
  -e GHD_PROBE_PORT="$probe_port")

# 1. Without tokens it must refuse to start (it listens on 0.0.0.0).
rc=0
out=$("${run[@]}" --rm localhost/gpuhttpd:ci 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "started without tokens: $out"
grep -qi 'token' <<<"$out" || fail "refused without saying why (status $rc): $out"
say "without tokens: refused, status $rc: $(grep -i -m1 token <<<"$out")"

# 2. With a token it serves, and /v1 wants that token. (Podman's complaint that
# it has no systemd to time the health check is kept out of the way: step 4
# runs the check itself.)
token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
"${run[@]}" -d --name "$ctr" -e GHD_TOKENS="$token:ci" localhost/gpuhttpd:ci >/dev/null \
  2>"$work/run.err" || { cat "$work/run.err" >&2; fail "podman run failed"; }
base_url=http://127.0.0.1:$port
for _ in $(seq 120); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base_url/readyz")" = 200 ] && break
  [ "$("${pm[@]}" inspect -f '{{.State.Running}}' "$ctr")" = true ] ||
    { "${pm[@]}" logs "$ctr" >&2; fail "the container exited"; }
  sleep 0.5
done
code=$(curl -s -o /dev/null -w '%{http_code}' "$base_url/readyz")
[ "$code" = 200 ] || { "${pm[@]}" logs "$ctr" >&2; fail "/readyz answers $code"; }
code=$(curl -s -o "$work/created.json" -w '%{http_code}' -X POST "$base_url/v1/buffers" \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{"size": 4096}')
[ "$code" = 201 ] || fail "POST /v1/buffers with the token: $code $(cat "$work/created.json")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$base_url/v1/buffers")
[ "$code" = 401 ] || fail "GET /v1/buffers without a token: $code, not 401"
say "with a token: serves (201 with it, 401 without)"
probe_url=http://127.0.0.1:$probe_port
code=$(curl -s -o /dev/null -w '%{http_code}' "$probe_url/readyz")
[ "$code" = 200 ] || fail "/readyz on the probe port answers $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
  "$probe_url/v1/buffers")
[ "$code" = 404 ] || fail "GET /v1/buffers on the probe port: $code, not 404"
say "the probe port serves /readyz and not /v1"

# 3. uid and gid 10001, both with names (the group exists).
pid=$("${pm[@]}" inspect -f '{{.State.Pid}}' "$ctr")
ids=$(awk '/^Uid:/ { u = $2 } /^Gid:/ { g = $2 } END { print u ":" g }' "/proc/$pid/status")
[ "$ids" = 10001:10001 ] || fail "the server runs as $ids, not 10001:10001"
who=$("${pm[@]}" exec "$ctr" id)
grep -q '^uid=10001(gpuhttpd) gid=10001(gpuhttpd)' <<<"$who" || fail "id in the container: $who"
say "runs as $who"

# 4. The image's own HEALTHCHECK (kept only in the docker format).
hc=$("${pm[@]}" image inspect -f '{{.HealthCheck}}' localhost/gpuhttpd:ci)
grep -q healthz <<<"$hc" || fail "the image has no HEALTHCHECK: $hc"
"${pm[@]}" healthcheck run "$ctr" >/dev/null || fail "its HEALTHCHECK fails"
say "HEALTHCHECK passes"

# 5. SIGTERM (the image's STOPSIGNAL) stops it cleanly, well before the kill.
t0=$SECONDS
"${pm[@]}" stop -t 30 "$ctr" >/dev/null 2>"$work/stop.err" ||
  { cat "$work/stop.err" >&2; fail "podman stop failed"; }
status=$("${pm[@]}" inspect -f '{{.State.ExitCode}}' "$ctr")
[ "$status" = 0 ] ||
  { "${pm[@]}" logs "$ctr" | tail -20 >&2; fail "exit status $status after SIGTERM"; }
[ $((SECONDS - t0)) -lt 30 ] || fail "SIGTERM did not stop it (killed after 30 s)"
say "SIGTERM: stopped with status 0 in $((SECONDS - t0)) s"

# 6. With TLS on GHD_PORT: HTTPS there, and the HEALTHCHECK still passes.
mkdir -p "$work/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$work/tls/key.pem" -out "$work/tls/cert.pem" -days 2 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 || fail "openssl made no certificate"
chmod 644 "$work/tls/key.pem" # read by uid 10001 in the container
"${run[@]}" -d --name "$ctr-tls" -e GHD_TOKENS="$token:ci" -v "$work/tls:/tls:ro" \
  -e GHD_TLS_CERT=/tls/cert.pem -e GHD_TLS_KEY=/tls/key.pem localhost/gpuhttpd:ci >/dev/null \
  2>"$work/run.err" || { cat "$work/run.err" >&2; fail "podman run with TLS failed"; }
for _ in $(seq 120); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$probe_url/readyz")" = 200 ] && break
  [ "$("${pm[@]}" inspect -f '{{.State.Running}}' "$ctr-tls")" = true ] ||
    { "${pm[@]}" logs "$ctr-tls" >&2; fail "the TLS container exited"; }
  sleep 0.5
done
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/tls/cert.pem" \
  "https://127.0.0.1:$port/healthz")
[ "$code" = 200 ] || { "${pm[@]}" logs "$ctr-tls" >&2; fail "HTTPS /healthz answers $code"; }
"${pm[@]}" healthcheck run "$ctr-tls" >/dev/null || fail "its HEALTHCHECK fails with TLS on"
"${pm[@]}" stop -t 30 "$ctr-tls" >/dev/null 2>"$work/stop.err" ||
  { cat "$work/stop.err" >&2; fail "podman stop (TLS) failed"; }
say "with TLS: HTTPS on its port, HEALTHCHECK passes through the probe port"

# 7. docker/k8s with podman kube play, on this image.
t0=$SECONDS
kube_play_check
t_kube=$((SECONDS - t0))
say "ok: base image $t_import s, build $t_build s, kube play $t_kube s, total $((SECONDS - t_start)) s"
