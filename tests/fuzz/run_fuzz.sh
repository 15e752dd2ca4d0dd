#!/usr/bin/env bash
# Runs one libFuzzer harness for GHD_FUZZ_SECONDS (default 20) from the
# committed seed corpus; new inputs go to a work folder, never into the seeds.
# A crash, leak, sanitizer report or broken invariant fails the test and
# leaves the input as crash-* in the work folder.
#   run_fuzz.sh BINARY SEED_DIR WORK_DIR
set -u
bin=$1 seeds=$2 work=$3
secs=${GHD_FUZZ_SECONDS:-20}
mkdir -p "$work/corpus"
cd "$work" || exit 1
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
  -print_final_stats=1 -artifact_prefix="$work/" corpus "$seeds" >"$work/log" 2>&1
rc=$?
name=$(basename "$bin")
runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$work/log" | grep -Eo '[0-9]+$')
cov=$(grep -Eo 'cov: [0-9]+' "$work/log" | tail -1)
echo "$name: ${runs:-?} inputs in ${secs}s, ${cov:-cov: ?}, corpus $(find corpus -type f | wc -l) + $(find "$seeds" -type f | wc -l) seeds"
if [ "$rc" -ne 0 ]; then
  tail -60 "$work/log"
  echo "$name: 0 passed, 1 failed"
  exit 1
fi
echo "$name: 1 passed, 0 failed"
