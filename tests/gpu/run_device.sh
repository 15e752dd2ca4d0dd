#!/usr/bin/env bash
# One call on the GPU machine: the `gpu` tests, the same tests under
# compute-sanitizer memcheck, the kernel benchmark and the transfer benchmark.
# Long logs go to OUT_DIR; a short table is printed last.
#
# usage: tests/gpu/run_device.sh BUILD_DIR OUT_DIR [parts]
#   parts: any of "tests sanitizer reliability memsoak kernels ukernels modules devices transfer transfer_b profile regions gap proxy fairness trace"
#   (default: "tests sanitizer kernels transfer")
# Build BUILD_DIR here with -DCMAKE_CUDA_ARCHITECTURES=90 and pack its libraries
# with tests/gpu/pack_libs.sh BUILD_DIR/devlibs <binaries> first (or use
# tests/gpu/slim_build.sh, which packs them).
set -uo pipefail

build=$1
out=$2
parts=${3:-"tests sanitizer kernels transfer"}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$build/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A slim build (tests/gpu/slim_build.sh) carries its binaries as one archive.
[[ -f $build/bins.tar.xz ]] && tar -C "$build" -xJf "$build/bins.tar.xz"
# Tools that machine lacks (perf, haproxy), packed by tests/gpu/pack_tool.sh
# into BUILD_DIR/tools.
if [[ -d $build/tools ]]; then
  tools_bin=$(bash tests/gpu/unpack_tools.sh "$build/tools")
  [[ -n $tools_bin ]] && export PATH=$tools_bin:$PATH
fi
summary=$out/summary.md
: >"$summary"
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3" >>"$summary"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
# slim_build.sh records the commit the binaries came from.
commit=$(cat "$build/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
row "device" "$(head -1 "$out/gpu.txt")" "commit $commit"
# The host behind the device tool differs between calls (runs 43 and 47: the same
# server cost 0.38 or 0.52 CPU s per GB uploaded): say which one this was.
cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
l3=$(lscpu 2>/dev/null | sed -n 's/^L3 cache: *//p' | head -1)
row "host" "${cpu_model:-unknown CPU}, $(nproc) CPUs, L3 ${l3:-?}" "kernel $(uname -r)"

has() { [[ " $parts " == *" $1 "* ]]; }

if has tests; then
  ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300 >"$out/gpu-tests.log" 2>&1
  rc=$?
  line=$(grep -E "tests passed|tests failed" "$out/gpu-tests.log" | tail -1)
  skipped=$(grep -c "Skipped" "$out/gpu-tests.log")
  row "ctest -L gpu" "rc=$rc" "${line:-no summary}; skipped lines: $skipped"
fi

if has sanitizer; then
  # Every gpu test executable, run directly under memcheck. After the
  # command: NAME=VALUE words for its environment, --words for memcheck.
  while read -r name cmd rest; do
    [[ -z $name ]] && continue
    log=$out/sanitizer-$name.log
    envs=() opts=()
    for w in $rest; do
      if [[ $w == --* ]]; then opts+=("${w%%=*}" "${w#*=}"); else envs+=("$w"); fi
    done
    env "${envs[@]}" compute-sanitizer --tool memcheck --error-exitcode 99 --target-processes all \
      "${opts[@]}" "$build/$cmd" >"$log" 2>&1
    rc=$?
    verdict=$(grep -E "ERROR SUMMARY" "$log" | tail -1)
    row "memcheck $name" "rc=$rc" "${verdict:-no summary}"
  done <<LIST
test_kernels_gpu tests/gpu/test_kernels_gpu GHD_GPU_TEST_N=20011
test_buffers_http tests/http/test_buffers_http GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all
test_buffers_http_socket tests/http/test_buffers_http GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all GHD_TEST_SOCKET_BODY_MIN=1 GHD_TEST_SOCKET_RECV_MAX=4097 GHD_TEST_DOWNLOAD_BLOCK=65536 GHD_TEST_DOWNLOAD_OVERLAP=1
test_buffers_http_socket_bounce tests/http/test_buffers_http GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all GHD_TEST_SOCKET_BODY_MIN=1 GHD_TEST_SOCKET_RECV_MAX=4097 GHD_TEST_DOWNLOAD_BLOCK=65536 GHD_TEST_DOWNLOAD_OVERLAP=1 GHD_TEST_SOCKET_BOUNCE=262144 GHD_TEST_SOCKET_BOUNCE_UPLOADS=1
test_runs_http tests/http/test_runs_http GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all
test_ukernels_gpu tests/gpu/test_ukernels_gpu GHD_GPU_TEST_N=20011
test_ustop_gpu tests/gpu/test_ustop_gpu
test_ukernels_http tests/http/test_ukernels_http GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all
test_arrays_http tests/http/test_arrays_http GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all
test_modules_gpu tests/gpu/test_modules_gpu GHD_MODULES_SKIP_LOSS=1 GHD_TEST_DEVICES=all --report-api-errors=no
test_regions_gpu tests/gpu/test_regions_gpu GHD_BIN=$PWD/$build/gpuhttpd GHD_REGIONS_GPU_MEMCHECK=1 GHD_TEST_DEVICES=all
test_devices_gpu tests/gpu/test_devices_gpu GHD_TEST_DEVICES=all
test_inline_http tests/http/test_inline_http GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all --report-api-errors=no
test_tiers_http tests/http/test_tiers_http GHD_TEST_BACKEND=cuda
test_graphs_gpu tests/gpu/test_graphs_gpu GHD_TEST_BACKEND=cuda
test_runs_http_workers tests/http/test_runs_http GHD_TEST_BACKEND=cuda GHD_TEST_RUN_INLINE=0
LIST
  # test_modules_gpu (and test_inline_http, which runs a raw module sent by
  # value): a module's parameter layout is read by asking
  # cudaFuncGetParamInfo for indices until it answers cudaErrorInvalidValue
  # (CUDA 13.0 has no cudaFuncGetParamCount); memcheck counts each of those
  # answers, and the cudaGetLastError that clears it, as an API error (8 in
  # the 2026-12-01 run, nothing else). Memory errors are still reported.
  # test_regions_gpu: the server it starts is a child of the test, checked
  # too (--target-processes all); GHD_REGIONS_GPU_MEMCHECK leaves out the
  # handles cudaIpcOpenMemHandle refuses on purpose.
fi

# The reliability and security tests with the CUDA backend (test_auth parses
# tokens only and is not carried), then the soak under memcheck.
if has reliability; then
  GHD_TEST_BACKEND=cuda GHD_TEST_DEVICES=all ctest --test-dir "$build" -L "reliability|security" -E "test_auth|soak_valgrind" \
    --output-on-failure --timeout 300 >"$out/reliability.log" 2>&1
  rc=$?
  line=$(grep -E "tests passed|tests failed" "$out/reliability.log" | tail -1)
  row "ctest -L reliability|security (cuda)" "rc=$rc" "${line:-no summary}"
fi

if has memsoak; then
  GHD_BIN=$PWD/$build/gpuhttpd GHD_TEST_BACKEND=cuda SOAK_SECONDS=${MEMSOAK_SECONDS:-20} SOAK_THREADS=4 \
    GHD_TEST_WRAPPER="compute-sanitizer --tool memcheck --error-exitcode 99" \
    "$build/tests/reliability/soak" >"$out/memsoak.log" 2>&1
  rc=$?
  verdict=$(grep -E "ERROR SUMMARY" "$out/memsoak.log" | tail -1)
  ops=$(grep -Eo "[0-9,]+ operations" "$out/memsoak.log" | tail -1)
  row "soak under memcheck (cuda)" "rc=$rc" "${verdict:-no summary}; ${ops:-?}"
fi

if has kernels; then
  "$build/tests/bench/bench_kernels" >"$out/bench-kernels.log" 2>&1
  row "bench_kernels" "rc=$?" "see bench-kernels.log"
fi

if has modules; then
  GHD_BIN=$PWD/$build/gpuhttpd "$build/tests/gpu/test_modules_gpu" >"$out/test-modules-gpu.log" 2>&1
  row "test_modules_gpu" "rc=$?" "$(tail -1 "$out/test-modules-gpu.log")"
  "$build/tests/bench/bench_modules" >"$out/bench-modules.log" 2>&1
  row "bench_modules" "rc=$?" "see bench-modules.log"
fi

# Devices (--devices all): the list, placement, copies and runs on each GPU
# (tests/gpu/test_devices_gpu.c), then a 1 GiB copy_of within device 0 against
# cudaMemcpyAsync D2D measured in the same run (tests/bench/bench_copies.c).
if has devices; then
  GHD_TEST_DEVICES=all "$build/tests/gpu/test_devices_gpu" >"$out/test-devices-gpu.log" 2>&1
  row "test_devices_gpu" "rc=$?" "$(grep -E "PASSED|FAILED" "$out/test-devices-gpu.log" | tail -1)"
  # 1 GiB, where a request's fixed cost still shows, and 8 GiB.
  for mib in ${COPY_SIZES_MIB:-1024 8192}; do
    BENCH_COPY_MIB=$mib "$build/tests/bench/bench_copies" >"$out/bench-copies-$mib.log" 2>&1
    row "bench_copies ($mib MiB within device 0)" "rc=$?" \
      "$(grep -E "^copy ratio" "$out/bench-copies-$mib.log" | tail -1)"
  done
fi

if has ukernels; then
  "$build/tests/bench/bench_ukernels" >"$out/bench-ukernels.log" 2>&1
  row "bench_ukernels" "rc=$?" "see bench-ukernels.log"
fi

if has transfer; then
  bash tests/bench/run_transfer_bench.sh --backend cuda "$build" "$out/transfer" \
    >"$out/bench-transfer.log" 2>&1
  row "transfer bench" "rc=$?" "see transfer/report.md"
fi

# Where the server's CPU goes during an 8-connection upload and download
# (perf record -g on the server; tests/bench/run_upload_profile.sh).
if has profile; then
  bash tests/bench/run_upload_profile.sh "$build" "$out/profile" >"$out/profile.log" 2>&1
  row "profile (perf, ${PROFILE_CONNS:-8} conns)" "rc=$?" "see profile/profile.md"
fi

# Where the 8-16 connection gap goes (tests/bench/run_gap_probe.sh, about 90 s):
# loopback TCP with the server's sizes, beside a full-speed DMA loop and with the
# transfer's own DMA, pinned to the server/client split, the machine's CPU use, and
# server options A/B beside the defaults. GAP_* variables pass through.
if has gap; then
  bash tests/bench/run_gap_probe.sh --backend cuda "$build" "$out/gap" >"$out/gap.log" 2>&1
  row "gap probe" "rc=$?" "see gap/report.md"
fi

# Tracing on the GPU: the spans of an upload, a run and a download exported to a
# loopback collector, the kernel's span against the run's device_ms, copies timed
# by CUDA events (tests/ops/test_tracing.py, which needs opentelemetry-proto and
# protobuf importable), then what sampling every request costs against tracing
# off (tests/bench/run_trace_bench.sh, about 2 minutes; TRACE_* pass through).
if has trace; then
  if python3 -c "import opentelemetry.proto, google.protobuf" 2>/dev/null; then
    GHD_TEST_BACKEND=cuda python3 tests/ops/test_tracing.py "$build/gpuhttpd" >"$out/trace-test.log" 2>&1
    row "tracing test (cuda)" "rc=$?" "see trace-test.log"
  else
    row "tracing test (cuda)" "skipped" "opentelemetry-proto and protobuf not importable"
  fi
  bash tests/bench/run_trace_bench.sh --backend cuda "$build" "$out/trace" >"$out/trace.md" 2>&1
  row "tracing cost (${TRACE_CONNS:-64} conns)" "rc=$?" "see trace.md"
fi

# Same-host regions: region <-> buffer by DMA against pinned cudaMemcpy and
# the same bytes over HTTP, and CUDA IPC regions against the exporting
# process's own D2D copy (tests/bench/region_bench.py).
if has regions; then
  read -r -a region_sizes <<<"${REGION_SIZES_MIB:-}"
  python3 tests/bench/region_bench.py "$build" ${region_sizes[@]+"${region_sizes[@]}"} \
    >"$out/regions.md" 2>&1
  row "regions bench" "rc=$?" "see regions.md"
fi

# Four instances on the one GPU behind HAProxy against one instance direct
# (tests/bench/run_proxy_bench.sh; tests/gpu/slim_build.sh packs haproxy into
# BUILD_DIR/tools, on PATH from above).
if has proxy; then
  bash tests/bench/run_proxy_bench.sh --backend cuda "$build" "$out/proxy" \
    >"$out/bench-proxy.log" 2>&1
  row "proxy bench (${BENCH_INSTANCES:-4} instances)" "rc=$?" "see proxy/report.md"
fi

# A second transfer run with other server options, e.g. TRANSFER_B_ARGS="--socket-upload-min 0".
if has transfer_b; then
  BENCH_SERVER_ARGS=${TRANSFER_B_ARGS:-} bash tests/bench/run_transfer_bench.sh --backend cuda \
    "$build" "$out/transfer_b" >"$out/bench-transfer-b.log" 2>&1
  row "transfer bench B (${TRANSFER_B_ARGS:-})" "rc=$?" "see transfer_b/report.md"
fi

# A light tenant's small runs beside a heavy tenant's gemms, and two saturating
# tenants at 3:1 weights (tests/bench/fairness.py; FAIR_ARGS pass through,
# e.g. "--seconds 15").
if has fairness; then
  read -r -a fair_args <<<"${FAIR_ARGS:-}"
  PYTHONUNBUFFERED=1 python3 tests/bench/fairness.py "$build" ${fair_args[@]+"${fair_args[@]}"} \
    >"$out/fairness.md" 2>&1
  row "fairness bench" "rc=$?" "see fairness.md"
fi

echo "## summary"
cat "$summary"
[[ -f $out/bench-copies.log ]] && { echo; echo "## $out/bench-copies.log"; cat "$out/bench-copies.log"; }
[[ -f $out/fairness.md ]] && { echo; echo "## $out/fairness.md"; tail -30 "$out/fairness.md"; }
for f in "$out/bench-kernels.log" "$out/transfer/report.md" "$out/transfer_b/report.md" \
  "$out/proxy/report.md"; do
  [[ -f $f ]] && { echo; echo "## $f"; sed -n '/^| test/,/^| ceiling: pinned h2d/p;/^| kernel/,$p' "$f" | head -40; }
done
# The gap probe's findings (its table stays in the file: too wide for this summary).
f=$out/gap/report.md
[[ -f $f ]] && { echo; echo "## $f"; sed -n '/^## Findings/,/^## Table/p' "$f"; }
exit 0
