#!/usr/bin/env bash
# docker compose -f docker/compose.yaml config: the compose file is valid for
# the Compose client here (no engine is needed or contacted), with and without
# the variables it requires. Skipped (77) where no Compose client exists.
# usage: test_compose.sh REPO_ROOT
set -euo pipefail
root=$1
file="$root/docker/compose.yaml"

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
else
  echo "SKIPPED: no Compose client (Debian: apt-get install docker-compose)"
  exit 77
fi
echo "using: ${compose[*]} ($("${compose[@]}" version 2>/dev/null | head -n 1))"

out=$(GHD_TOKENS='t0ken:team-a' "${compose[@]}" -f "$file" config)
for want in 'capabilities:' '- gpu' 'driver: nvidia' 'GHD_TOKENS: t0ken:team-a' \
  'dockerfile: docker/Dockerfile' '127.0.0.1:8080:8080'; do
  if ! grep -qF -- "$want" <<<"$out"; then
    echo "FAILED: the resolved compose config lacks '$want':"
    echo "$out"
    exit 1
  fi
done

# Without tokens the file refuses to resolve rather than start an open server.
if env -u GHD_TOKENS "${compose[@]}" -f "$file" config >/dev/null 2>&1; then
  echo "FAILED: compose config resolves without GHD_TOKENS"
  exit 1
fi
echo "test_compose: ok"
