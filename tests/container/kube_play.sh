# shellcheck shell=bash
# shellcheck disable=SC2154 # pm, work, here and limits are check.sh's
# Sourced by tests/container/check.sh once its image checks pass: the
# Kubernetes manifests of docker/k8s, as `kubectl kustomize` renders them,
# played with Debian 12's `podman kube play` (podman 4.3) on the images
# check.sh built, in its storage. What podman 4.3 plays of them: the proxy's
# Deployment and its ConfigMap (as a volume). It plays no StatefulSet and
# no Service ("Kube kind StatefulSet not supported", skipped): the
# StatefulSet's pod template is played as Pods gpuhttpd-0..N-1, made by
# kube_render.py as the StatefulSet controller makes them, and kube_dns.py
# answers the headless Service's names gpuhttpd-N.gpuhttpd-pods.default.svc.
# cluster.local for the proxy's resolvers. kube_render.py lists every change
# made to the rendered manifests, and why.
#
# Then, through the proxy on loopback: /readyz; buffers created there land
# on each instance, their ids name the instance that made them, and every id
# is answered by its owner (Gpuhttpd-Instance) with its bytes, exact; one pod
# stopped, its ids answer the proxy's problem+json 503 while the others still
# serve. And what podman makes of the template's probes and security context.
#
# Needs from check.sh: pm (podman with check.sh's storage), work, the
# commit's tree in $work/ctx, here, limits, the images
# localhost/gpuhttpd-ci-base:latest and localhost/gpuhttpd:ci, free_ports,
# say and fail. kube_cleanup undoes what it started.

kube_instances=3
kube_dns_pid=

kube_cleanup() {
  [ -n "$kube_dns_pid" ] && kill "$kube_dns_pid" 2>/dev/null
  "${pm[@]}" pod rm -f -t 0 -a >/dev/null 2>&1
  "${pm[@]}" network rm -f "gpuhttpd-kube-$$" >/dev/null 2>&1
  return 0
}

# HTTP status of a GET through the proxy, 000 when none came (in 20 s: a
# proxy that has not yet seen an instance stop tries it three times, 5 s each).
kube_get() {
  : >"$kdir/head"
  curl -s -m 20 -o "$kdir/body" -D "$kdir/head" -w '%{http_code}' \
    -H "Authorization: Bearer $ktoken" "$kurl$1" || true
}

# The Gpuhttpd-Instance header of the last kube_get.
kube_instance() {
  tr -d '\r' <"$kdir/head" | sed -n 's/^[Gg]puhttpd-[Ii]nstance: *//p'
}

# The instance an id names (i0002-... -> 2).
kube_owner() {
  local n=${1:1:4}
  echo $((10#$n))
}

kube_play_check() {
  local t_kube=$SECONDS kdir="$work/kube" kpm ktoken kurl net gw i ip up
  mkdir -p "$kdir"
  # The pods' infra image (see kube.Containerfile) and the limits check.sh's
  # containers run with, for every container of the pods podman makes.
  cat >"$kdir/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]
[engine]
infra_image = "localhost/gpuhttpd-pause:ci"
EOF
  kpm=(env CONTAINERS_CONF="$kdir/containers.conf" "${pm[@]}")

  local t0=$SECONDS img
  for img in haproxy pause; do
    "${pm[@]}" build --format docker --isolation chroot --network host "${limits[@]}" \
      --build-arg BASE_IMAGE=localhost/gpuhttpd-ci-base:latest --target "$img" \
      -f "$here/kube.Containerfile" -t "localhost/gpuhttpd-$img:ci" "$here" \
      >"$kdir/build-$img.log" 2>&1 ||
      { tail -20 "$kdir/build-$img.log" >&2; fail "kube: the $img image did not build"; }
  done
  local t_images=$((SECONDS - t0))

  kubectl kustomize "$work/ctx/docker/k8s" >"$kdir/rendered.yaml" ||
    fail "kube: kubectl kustomize docker/k8s failed"

  # The network of the pods: a bridge of its own (CNI, in check.sh's network
  # configuration folder), without DNS (Debian's podman has no DNS plugin).
  net=gpuhttpd-kube-$$
  "${kpm[@]}" network create --disable-dns "$net" >/dev/null || fail "kube: no network"
  gw=$("${kpm[@]}" network inspect -f '{{range .Subnets}}{{.Gateway}}{{end}}' "$net")

  # The token Secret the StatefulSet reads: its key tokens as a file in a
  # Secret volume (GHD_TOKENS_FILE), which kube_render.py makes a hostPath of
  # this folder, laid out as the kubelet lays a Secret volume out with
  # fsGroup (root:10001, group read), and its key metrics-token as a second
  # file (GHD_METRICS_TOKEN_FILE).
  ktoken=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  mkdir -p "$kdir/secret"
  echo "$ktoken ci" >"$kdir/secret/tokens"
  kmetrics=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  echo "$kmetrics" >"$kdir/secret/metrics-token"
  chown -R 0:10001 "$kdir/secret"
  chmod 0750 "$kdir/secret"
  chmod 0440 "$kdir/secret/tokens" "$kdir/secret/metrics-token"

  local proxy_port stats_port
  read -r proxy_port stats_port < <(free_ports)
  python3 "$here/kube_render.py" "$kdir" --instances "$kube_instances" \
    --gpuhttpd-image localhost/gpuhttpd:ci --haproxy-image localhost/gpuhttpd-haproxy:ci \
    --dns "$gw" --proxy-port "$proxy_port" --stats-port "$stats_port" \
    --tokens-dir "$kdir/secret" \
    <"$kdir/rendered.yaml" >&2 || fail "kube: kube_render.py failed"

  t0=$SECONDS
  "${kpm[@]}" kube play --network "$net" "$kdir/pods.yaml" >"$kdir/play.log" 2>&1 ||
    { cat "$kdir/play.log" >&2; fail "kube: podman kube play of the instance pods failed"; }
  : >"$kdir/hosts"
  for ((i = 0; i < kube_instances; i++)); do
    ip=$("${kpm[@]}" inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' \
      "$("${kpm[@]}" pod inspect -f '{{.InfraContainerID}}' "gpuhttpd-$i")")
    [ -n "$ip" ] || fail "kube: pod gpuhttpd-$i has no address"
    echo "$ip gpuhttpd-$i.gpuhttpd-pods.default.svc.cluster.local" >>"$kdir/hosts"
  done
  # The gateway's address exists once a pod is on the bridge.
  python3 "$here/kube_dns.py" "$gw" "$kdir/hosts" >"$kdir/dns.out" 2>&1 &
  kube_dns_pid=$!
  for _ in $(seq 50); do
    grep -q ready "$kdir/dns.out" && break
    kill -0 "$kube_dns_pid" 2>/dev/null || { cat "$kdir/dns.out" >&2; fail "kube: kube_dns.py exited"; }
    sleep 0.1
  done
  grep -q ready "$kdir/dns.out" || fail "kube: kube_dns.py did not start: $(cat "$kdir/dns.out")"
  "${kpm[@]}" kube play --network "$net" "$kdir/proxy.yaml" >>"$kdir/play.log" 2>&1 ||
    { cat "$kdir/play.log" >&2; fail "kube: podman kube play of the proxy failed"; }
  local proxy=gpuhttpd-proxy-pod-0-haproxy
  say "kube: played $kube_instances instance pods and the proxy (Deployment, ConfigMap)"

  # 1. Every instance up in the proxy (resolved, health and agent checks).
  kurl=http://127.0.0.1:$proxy_port
  for _ in $(seq 60); do
    up=$(curl -s -m 5 "http://127.0.0.1:$stats_port/metrics" |
      grep -c '^haproxy_server_status{proxy="balanced",server="i[0-9]*",state="UP"} 1') || true
    [ "$up" = "$kube_instances" ] && break
    sleep 0.5
  done
  [ "$up" = "$kube_instances" ] ||
    { "${kpm[@]}" logs "$proxy" 2>&1 | tail -20 >&2; fail "kube: $up of $kube_instances instances up in the proxy"; }
  local t_up=$((SECONDS - t0))
  [ "$(kube_get /readyz)" = 200 ] || fail "kube: /readyz through the proxy: $(cat "$kdir/body")"
  say "kube: all $kube_instances instances up in the proxy $t_up s after kube play; /readyz 200 through it"
  # The metrics token from its Secret file: /metrics answers it, not a tenant's.
  local code
  code=$(curl -s -m 20 -o "$kdir/body" -w '%{http_code}' -H "Authorization: Bearer $kmetrics" \
    "$kurl/metrics") || true
  if [ "$code" != 200 ] || ! grep -q '^gpuhttpd_' "$kdir/body"; then
    fail "kube: /metrics with the Secret file's metrics token: $code $(head -c 300 "$kdir/body")"
  fi
  [ "$(kube_get /metrics)" = 401 ] || fail "kube: /metrics with a tenant's token: $(cat "$kdir/body")"
  say "kube: /metrics answers the metrics token of the Secret's file (200), a tenant's 401"

  # 2. Buffers made through the proxy: each id names the instance that made
  # it, the proxy spreads them, and each id is answered by its owner, bytes
  # exact.
  local k id owners=() bufs=()
  for ((k = 0; k < 2 * kube_instances; k++)); do
    head -c $((65536 + k)) /dev/urandom >"$kdir/data-$k"
    code=$(curl -s -m 30 -o "$kdir/made" -D "$kdir/head" -w '%{http_code}' -X POST \
      -H "Authorization: Bearer $ktoken" -H 'Content-Type: application/octet-stream' \
      --data-binary "@$kdir/data-$k" "$kurl/v1/buffers")
    [ "$code" = 201 ] || fail "kube: POST /v1/buffers through the proxy: $code $(cat "$kdir/made")"
    id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$kdir/made")
    [ "$(kube_owner "$id")" = "$(kube_instance)" ] ||
      fail "kube: $id made by instance $(kube_instance)"
    bufs+=("$id")
    owners+=("$(kube_owner "$id")")
  done
  local distinct
  distinct=$(printf '%s\n' "${owners[@]}" | sort -u | wc -l)
  [ "$distinct" -ge 2 ] || fail "kube: $((2 * kube_instances)) new buffers all on instance ${owners[0]}"
  for ((k = 0; k < ${#bufs[@]}; k++)); do
    code=$(kube_get "/v1/buffers/${bufs[k]}")
    [ "$code" = 200 ] || fail "kube: GET ${bufs[k]} through the proxy: $code"
    [ "$(kube_instance)" = "${owners[k]}" ] ||
      fail "kube: GET ${bufs[k]} answered by instance $(kube_instance)"
    cmp -s "$kdir/body" "$kdir/data-$k" || fail "kube: GET ${bufs[k]}: other bytes"
  done
  say "kube: ${#bufs[@]} buffers made through the proxy on $distinct instances" \
    "(owners ${owners[*]}); each id answered by its owner, bytes exact"

  # 3. The owner of the first buffer stopped (its pod, with the template's
  # grace: podman's own stop timeout is 10 s): its ids answer the proxy's
  # problem+json 503 naming it; the other instances' ids still serve.
  local gone=${owners[0]} t_stop=$SECONDS stop_timeout
  stop_timeout=$("${kpm[@]}" inspect -f '{{.Config.StopTimeout}}' "gpuhttpd-$gone-gpuhttpd")
  "${kpm[@]}" pod stop -t 40 "gpuhttpd-$gone" >/dev/null 2>&1 || fail "kube: pod stop gpuhttpd-$gone"
  [ "$("${kpm[@]}" inspect -f '{{.State.ExitCode}}' "gpuhttpd-$gone-gpuhttpd")" = 0 ] ||
    fail "kube: gpuhttpd-$gone did not exit 0 on SIGTERM"
  say "kube: pod gpuhttpd-$gone stopped in $((SECONDS - t_stop)) s, status 0 (podman's stop" \
    "timeout for it: $stop_timeout s; terminationGracePeriodSeconds is not taken)"
  t_stop=$SECONDS
  # Until its checks fail, the proxy still tries it and answers its general
  # 503 (no instance could take the request); then the owner's own 503.
  local named='' seen=() t_req
  for _ in $(seq 60); do
    t_req=$SECONDS
    code=$(kube_get "/v1/buffers/${bufs[0]}")
    if [ "$code" = 503 ]; then
      grep -qi '^content-type: application/problem+json' "$kdir/head" ||
        fail "kube: the 503 is not problem+json: $(cat "$kdir/head")"
      grep -q "\"detail\":\"instance $gone, which owns" "$kdir/body" && { named=1; break; }
    fi
    seen+=("$code in $((SECONDS - t_req)) s")
    sleep 0.5
  done
  [ -n "$named" ] ||
    fail "kube: ${bufs[0]} of the stopped instance $gone: $code $(cat "$kdir/body")"
  [ "${#seen[@]}" = 0 ] || say "kube: before that: $(IFS=,; echo "${seen[*]}")"
  local served=0
  for ((k = 0; k < ${#bufs[@]}; k++)); do
    [ "${owners[k]}" != "$gone" ] || continue
    code=$(kube_get "/v1/buffers/${bufs[k]}")
    [ "$code" = 200 ] || fail "kube: ${bufs[k]} of instance ${owners[k]} after $gone stopped: $code"
    cmp -s "$kdir/body" "$kdir/data-$k" || fail "kube: ${bufs[k]} after $gone stopped: other bytes"
    served=$((served + 1))
  done
  say "kube: pod gpuhttpd-$gone stopped: its ids answer 503 problem+json naming it" \
    "($((SECONDS - t_stop)) s later); $served ids of the others still served, bytes exact"

  # 4. What podman made of the template's probes and security context, in a
  # running instance. It turns the livenessProbe into the container's health
  # check (run here once: podman times health checks with systemd, which CI
  # has not); startupProbe and readinessProbe it ignores.
  local ctr=gpuhttpd-$(((gone + 1) % kube_instances))-gpuhttpd hc pid status
  hc=$("${kpm[@]}" inspect -f '{{.Config.Healthcheck.Test}}' "$ctr")
  grep -q 'curl -f http://localhost:8081/healthz' <<<"$hc" ||
    fail "kube: the livenessProbe made the health check $hc"
  "${kpm[@]}" healthcheck run "$ctr" >/dev/null || fail "kube: the livenessProbe's check fails"
  "${kpm[@]}" healthcheck run "$proxy" >/dev/null || fail "kube: the proxy's livenessProbe fails"
  pid=$("${kpm[@]}" inspect -f '{{.State.Pid}}' "$ctr")
  status=$(awk '$1 == "Uid:" { u = $2 } $1 == "Gid:" { g = $2 } $1 == "CapEff:" { c = $2 }
    $1 == "NoNewPrivs:" { n = $2 } $1 == "Seccomp:" { s = $2 }
    END { print u, g, c, n, s }' "/proc/$pid/status")
  [ "$status" = "10001 10001 0000000000000000 1 2" ] ||
    fail "kube: uid gid CapEff NoNewPrivs Seccomp of the instance: $status"
  [ "$("${kpm[@]}" inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$ctr")" = true ] ||
    fail "kube: readOnlyRootFilesystem not honoured"
  "${kpm[@]}" exec "$ctr" sh -c 'touch /tmp/w && ! touch /w 2>/dev/null' ||
    fail "kube: /tmp (emptyDir) not writable, or / writable"
  # Another running instance (there are 3) has a /tmp of its own.
  ! "${kpm[@]}" exec "gpuhttpd-$(((gone + 2) % kube_instances))-gpuhttpd" test -e /tmp/w ||
    fail "kube: the instance pods share one /tmp (emptyDir)"
  [ "$("${kpm[@]}" inspect -f '{{.HostConfig.Memory}}' "$ctr")" = $((8 << 30)) ] ||
    fail "kube: the memory limit (8Gi) not honoured"
  pid=$("${kpm[@]}" inspect -f '{{.State.Pid}}' "$proxy")
  status=$(awk '$1 == "Uid:" { u = $2 } $1 == "CapEff:" { c = $2 } END { print u, c }' \
    "/proc/$pid/status")
  [ "$status" = "99 0000000000000000" ] || fail "kube: uid CapEff of the proxy: $status"
  say "kube: livenessProbe -> health check '$hc' passes (proxy's too); uid:gid 10001:10001," \
    "no capabilities, no_new_privs, seccomp filter, read-only root, /tmp writable, 8Gi limit;" \
    "the proxy runs as uid 99 without capabilities"
  say "kube: ok: images $t_images s, total $((SECONDS - t_kube)) s"
}
