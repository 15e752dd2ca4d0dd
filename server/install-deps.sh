#!/usr/bin/env bash
# Installs what gpuhttpd needs to build (and, with --test, to run its whole
# test suite) on Debian or Ubuntu, only where something is missing. Safe to
# run again. The CUDA toolkit is optional: without nvcc the build has only the
# host backend.
set -euo pipefail

want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1

# libmicrohttpd is built from source (server/mhd/install-mhd.sh): curl, patch and
# GnuTLS's headers are for that build.
build_pkgs=(build-essential cmake pkg-config libjansson-dev python3 python3-pip curl ca-certificates
  patch libgnutls28-dev)
test_pkgs=(libcmocka-dev libcurl4-openssl-dev curl python3 python3-pip python3-yaml
  shellcheck chromium docker-compose clang libclang-rt-14-dev gnutls-bin valgrind openssl)
# CI's fresh-machine check (tests/fresh) and container image check (tests/container).
test_pkgs+=(debootstrap podman runc)
# The cluster: HAProxy for ops_cluster (docker/cluster/local.sh), kubectl for ops_k8s
# (Debian's kubernetes-client, unless a kubectl is there already).
test_pkgs+=(haproxy)
command -v kubectl >/dev/null 2>&1 || test_pkgs+=(kubernetes-client)
# The README's Node and Go examples (examples_node, examples_go): Debian's nodejs
# and golang-go, unless a node or go is there already.
command -v node >/dev/null 2>&1 || test_pkgs+=(nodejs)
command -v go >/dev/null 2>&1 || test_pkgs+=(golang-go)

missing=()
pkgs=("${build_pkgs[@]}")
[ "$want_tests" = 1 ] && pkgs+=("${test_pkgs[@]}")
# python3-yaml is needed by the build itself (OpenAPI YAML -> JSON).
pkgs+=(python3-yaml)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

"$(dirname "$0")/mhd/install-mhd.sh"

pip_install() {
  python3 -m pip install -q "$@" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "$@"
}
# Swagger UI 5 (OpenAPI 3.1) assets for /docs; Flask itself is not needed.
python3 -m pip show -q flask-swagger-ui >/dev/null 2>&1 || pip_install --no-deps flask-swagger-ui

if [ "$want_tests" = 1 ]; then
  # opentelemetry-proto and protobuf: ops_tracing's collector parses the
  # exported spans with the OpenTelemetry protocol's own definitions.
  py_pkgs=(prometheus_client openapi-spec-validator schemathesis openapi-python-client websocket-client
    kubernetes-validate opentelemetry-proto protobuf)
  py_missing=()
  for p in "${py_pkgs[@]}"; do
    python3 -m pip show -q "$p" >/dev/null 2>&1 || py_missing+=("$p")
  done
  if [ "${#py_missing[@]}" -gt 0 ]; then
    echo "install-deps: pip installing ${py_missing[*]}"
    pip_install "${py_missing[@]}"
  fi
  # The Python client (clients/python) and what its tests and checks need:
  # installed editable from this checkout, with numpy, tqdm, pytest and
  # requests, and mypy, ruff, build and wheel for python_client_lint and
  # python_client_package.
  client_dir="$(cd "$(dirname "$0")/.." && pwd)/clients/python"
  if ! python3 -c "import gpuhttpd, numpy, requests, pytest, tqdm, mypy, ruff, build, wheel" \
       >/dev/null 2>&1 ||
     [ "$(python3 -c 'import gpuhttpd, os; print(os.path.realpath(gpuhttpd.__file__))' 2>/dev/null)" != \
       "$client_dir/src/gpuhttpd/__init__.py" ]; then
    echo "install-deps: pip installing the Python client from $client_dir"
    pip_install -e "${client_dir}[progress,test,lint]"
  fi
fi
