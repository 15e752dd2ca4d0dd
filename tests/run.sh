#!/usr/bin/env bash
# Builds gpuhttpd and runs the whole test suite (installing missing packages).
# GPU tests report "skipped" where there is no GPU. Safe to run again.
# GHD_TEST_BUILD picks the build folder (default build-tests).
set -euo pipefail
cd "$(dirname "$0")/.."
server/install-deps.sh --test
build=${GHD_TEST_BUILD:-build-tests}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGHD_WERROR=ON -DGHD_CUDA=AUTO >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600
