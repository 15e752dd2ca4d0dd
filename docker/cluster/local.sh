#!/usr/bin/env bash
# The cluster model on one machine: N gpuhttpd instances and a real HAProxy
# on loopback, routed by owner with the same rules as the Kubernetes
# ConfigMap (both written by haproxy_config.py). Runs in the foreground; an
# instance that exits is started again (a new boot: its old ids answer 410),
# as the StatefulSet would; SIGTERM or SIGINT stops them all (exit 0).
#
# usage: docker/cluster/local.sh --instances N --port P [options] [-- GPUHTTPD ARGS]
#   --instances N      gpuhttpd instances 0..N-1 (default 3)
#   --port P           the proxy's port on 127.0.0.1; instance k listens on
#                      P+1+k and answers the agent check on P+1+N+k
#   --gpuhttpd PATH    the server (default: $GPUHTTPD, gpuhttpd on PATH, or
#                      build/gpuhttpd of this checkout)
#   --haproxy PATH     HAProxy 2.6 or later (default: $HAPROXY, haproxy on
#                      PATH, or /usr/sbin/haproxy)
#   --dir DIR          configuration and logs (default: a new folder in /tmp;
#                      it is kept, and its path printed)
#   --restart-after S  seconds before an instance that exited starts again
#                      (default 1)
# Everything after -- goes to every instance (e.g. -- --backend host).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
instances=3
port=
gpuhttpd=${GPUHTTPD:-}
haproxy=${HAPROXY:-}
dir=
restart_after=1
extra=()

usage() {
  sed -n '/^# usage:/,/^# Everything/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case $1 in
    --instances) instances=${2:-}; shift 2 ;;
    --port) port=${2:-}; shift 2 ;;
    --gpuhttpd) gpuhttpd=${2:-}; shift 2 ;;
    --haproxy) haproxy=${2:-}; shift 2 ;;
    --dir) dir=${2:-}; shift 2 ;;
    --restart-after) restart_after=${2:-}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "local.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
if ! [[ $instances =~ ^[0-9]+$ ]] || [ "$instances" -lt 1 ] || [ "$instances" -gt 100 ]; then
  echo "local.sh: --instances must be 1..100" >&2
  exit 2
fi
if ! [[ $port =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ $((port + 2 * instances)) -gt 65535 ]; then
  echo "local.sh: --port P is required, with room for 2 ports per instance above it" >&2
  exit 2
fi
[[ $restart_after =~ ^[0-9]+$ ]] || { echo "local.sh: --restart-after takes seconds" >&2; exit 2; }

if [ -z "$gpuhttpd" ]; then
  gpuhttpd=$(command -v gpuhttpd || echo "$here/../../build/gpuhttpd")
fi
if [ -z "$haproxy" ]; then
  haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)
fi
[ -x "$gpuhttpd" ] || { echo "local.sh: no gpuhttpd at '$gpuhttpd' (give --gpuhttpd PATH)" >&2; exit 2; }
[ -x "$haproxy" ] || {
  echo "local.sh: no haproxy at '$haproxy' (Debian: apt-get install haproxy; or --haproxy PATH)" >&2
  exit 2
}
[ -n "$dir" ] || dir=$(mktemp -d /tmp/gpuhttpd-cluster.XXXXXX)
mkdir -p "$dir"

python3 "$here/haproxy_config.py" local --instances "$instances" --port "$port" --dir "$dir" ||
  exit 2
"$haproxy" -c -q -f "$dir/haproxy.cfg" || { echo "local.sh: haproxy refuses $dir/haproxy.cfg" >&2; exit 2; }

declare -a pids started quick
stopping=0
trap 'stopping=1' TERM INT

# Every instance's URL, for clients that skip the proxy: each advertises its
# own and reads the others' /readyz (--peers; it drops its own from the list).
peers=
for ((k = 0; k < instances; k++)); do
  peers+="${peers:+,}http://127.0.0.1:$((port + 1 + k))"
done

start_instance() {
  local k=$1
  # Behind the proxy every client has the proxy's address: no per-address
  # caps (the per-tenant ones stay).
  "$gpuhttpd" --bind 127.0.0.1 --instance "$k" --port $((port + 1 + k)) \
    --agent-port $((port + 1 + instances + k)) --per-ip-connection-limit 0 \
    --staging-address-share 0 --advertise-url "http://127.0.0.1:$((port + 1 + k))" \
    --peers "$peers" "${extra[@]}" >>"$dir/instance-$k.log" 2>&1 &
  pids[k]=$!
  started[k]=$SECONDS
  echo "local.sh: instance $k: pid ${pids[k]}, http://127.0.0.1:$((port + 1 + k)), log $dir/instance-$k.log"
}

# Whether 127.0.0.1:$1 accepts a connection.
listening() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

for ((k = 0; k < instances; k++)); do
  quick[k]=0
  start_instance "$k"
done
"$haproxy" -db -f "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1 &
hpid=$!
echo "local.sh: haproxy: pid $hpid, log $dir/haproxy.log"

# Ready once the proxy and every instance listen (30 s at most).
deadline=$((SECONDS + 30))
for p in "$port" $(seq $((port + 1)) $((port + instances))); do
  while [ "$stopping" = 0 ] && ! listening "$p" && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.1
  done
done
if [ "$stopping" = 0 ]; then
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "local.sh: not all of them listen after 30 s; see the logs in $dir" >&2
  else
    echo "local.sh: ready: http://127.0.0.1:$port ($instances instances; SIGTERM or Ctrl-C stops all)"
  fi
fi

status=0
while [ "$stopping" = 0 ]; do
  done_pid=
  wait -n -p done_pid
  rc=$?
  [ "$stopping" = 1 ] && break
  [ -n "$done_pid" ] || continue
  if [ "$done_pid" = "$hpid" ]; then
    echo "local.sh: haproxy exited with status $rc; stopping (see $dir/haproxy.log)" >&2
    hpid=
    status=1
    break
  fi
  for ((k = 0; k < instances; k++)); do
    [ "${pids[k]:-}" = "$done_pid" ] || continue
    pids[k]=
    if [ $((SECONDS - started[k])) -lt 5 ]; then quick[k]=$((quick[k] + 1)); else quick[k]=0; fi
    if [ "${quick[k]}" -ge 3 ]; then
      echo "local.sh: instance $k exited with status $rc three times within 5 s of its start;" \
        "stopping (see $dir/instance-$k.log)" >&2
      status=1
      break 2
    fi
    echo "local.sh: instance $k exited with status $rc; starting it again in $restart_after s"
    sleep "$restart_after" &
    wait $! # a signal cuts the wait short
    [ "$stopping" = 1 ] && break 2
    start_instance "$k"
  done
done

# Stop everything still running: SIGTERM, then wait out the instances'
# drain (--shutdown-grace, 30 s by default) with a margin.
live=()
for p in "${pids[@]}" "$hpid"; do
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null && live+=("$p")
done
[ "${#live[@]}" -gt 0 ] && kill -TERM "${live[@]}" 2>/dev/null
deadline=$((SECONDS + 45))
for p in "${live[@]}"; do
  while kill -0 "$p" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.1
  done
  if kill -0 "$p" 2>/dev/null; then
    echo "local.sh: pid $p did not stop within 45 s of SIGTERM; killing it" >&2
    kill -KILL "$p" 2>/dev/null
    status=1
  fi
done
wait 2>/dev/null
echo "local.sh: stopped (logs in $dir)"
exit "$status"
