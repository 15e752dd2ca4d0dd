#!/usr/bin/env bash
# Builds gpuhttpd (installing missing packages) and starts it in the
# foreground with its defaults: the GPU when one is usable, otherwise the host
# backend, on 127.0.0.1:8080. Extra arguments go to gpuhttpd (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
server/install-deps.sh
# The tests' libraries (cmocka, libcurl) are not installed here, so the test
# tree stays out of this build: tests/run.sh builds and runs it.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGHD_CUDA=AUTO -DBUILD_TESTING=OFF >/dev/null
cmake --build build -j "$(nproc)" --target gpuhttpd ghd_swagger_ui
exec build/gpuhttpd "$@"
