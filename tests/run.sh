#!/usr/bin/env bash
# Builds gpuhttpd and runs the whole test suite (installing missing packages).
# GPU tests report "skipped" where there is no GPU. Safe to run again.
# GHD_TEST_BUILD picks the build folder (default build-tests).
set -euo pipefail
cd "$(dirname "$0")/.."
server/install-deps.sh --test
build=${GHD_TEST_BUILD:-build-tests}
# Wherever nvcc is, the CUDA backend and the GPU tests are compiled (with
# -Werror), a driver or not: GHD_CUDA=AUTO would leave them out on a machine
# without one, and CI's has none. The GPU tests then report skipped.
cuda=AUTO
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then cuda=ON; fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGHD_WERROR=ON -DGHD_CUDA="$cuda" >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600
