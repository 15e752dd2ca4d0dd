#!/usr/bin/env bash
# Contract fuzzing: schemathesis against a live gpuhttpd (host backend) and
# openapi/openapi.yaml. Every check runs (see schemathesis.toml for the two
# exclusions and why), all four phases, the stateful one through the spec's
# links, with two tenants (wfc-auth.json) so that schemathesis also probes
# object-level authorization (one tenant reading another's buffers or runs)
# and ignored authentication. Bounded: CONTRACT_MAX_TIME seconds (default 60).
# Afterwards the server must still answer, hold no staging chunk, and stop
# with exit code 0 on SIGTERM.
#
#   GHD_BIN=build/gpuhttpd tests/contract/run_contract.sh
# Exit: 0 pass, 1 failures, 77 skipped (no schemathesis).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${GHD_BIN:-$root/build/gpuhttpd}
spec=${CONTRACT_SPEC:-$root/openapi/openapi.yaml}
max_time=${CONTRACT_MAX_TIME:-60}
max_examples=${CONTRACT_MAX_EXAMPLES:-15}
seed=${CONTRACT_SEED:-20261129}
# Two workers are two threads in one Python: CPython before 3.11.8 (Debian 12
# has 3.11.2) races on the ast module's recursion counter when two threads
# build ASTs at once (cpython#106905), and hypothesis does that while it
# generates; schemathesis then reports "AST constructor recursion depth
# mismatch" runtime errors that have nothing to do with the server. One
# worker there, two where the interpreter has the fix.
workers=${CONTRACT_WORKERS:-$(python3 -c 'import sys; print(2 if sys.version_info >= (3, 11, 8) else 1)' 2>/dev/null || echo 1)}
st=$(command -v schemathesis || command -v st || true)
if [ -z "$st" ]; then
  echo "SKIP: schemathesis is not installed (pip install schemathesis)"
  exit 77
fi
if [ ! -x "$bin" ]; then
  echo "SKIP: no gpuhttpd binary at $bin"
  exit 77
fi
work=$(mktemp -d /tmp/ghd-contract-XXXXXX)
pid=
# shellcheck disable=SC2317 # called through the trap
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The metrics token shows /readyz's figures (staging busy, checked below).
metrics_token=contract-metrics-5d2e8a61
GHD_TOKENS="contract-alice-4b1f9e0c7d:alice,contract-bob-93ac51e27f:bob" \
  GHD_METRICS_TOKEN="$metrics_token" "$bin" --backend host --port 0 --port-file "$work/port" --pool-initial 0 \
  --pool-limit 256M --max-buffer-size 16M --staging-chunk 64K --staging-chunks 16 \
  --log-level warn >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
if [ ! -s "$work/port" ]; then
  echo "FAILED: gpuhttpd did not start"; cat "$work/server.log"; exit 1
fi
port=$(cat "$work/port")
base="http://127.0.0.1:$port"

echo "contract: schemathesis $("$st" --version | awk '{print $NF}') against $base, up to ${max_time}s, seed $seed, $workers worker(s)"
"$st" --config-file "$here/schemathesis.toml" run "$spec" --url "$base" \
  --auth-wfc "$here/wfc-auth.json" --max-examples "$max_examples" --seed "$seed" \
  --workers "$workers" --max-time "$max_time" --request-timeout 10 --no-color \
  --report junit --report-junit-path "$work/junit.xml" >"$work/st.out" 2>&1
st_rc=$?
sed -n '/SUMMARY/,$p' "$work/st.out"
failed=0
if [ "$st_rc" -ne 0 ]; then
  echo "FAILED: schemathesis exit $st_rc"; cat "$work/st.out"; failed=1
fi
# The server survived it: still answers, no staging chunk left behind.
ready=$(curl -s --max-time 5 -H "Authorization: Bearer $metrics_token" "$base/readyz" || true)
busy=$(printf '%s' "$ready" | python3 -c 'import json,sys; print(json.load(sys.stdin)["staging"]["busy"])' 2>/dev/null || echo "?")
if [ "$busy" != "0" ]; then
  echo "FAILED: after the run /readyz says staging busy=$busy: $ready"; failed=1
fi
kill -TERM "$pid"
code=0
wait "$pid" || code=$?
pid=
if [ "$code" -ne 0 ]; then
  echo "FAILED: gpuhttpd exited $code after SIGTERM"; tail -20 "$work/server.log"; failed=1
fi
if grep -q "assertion failed\|AddressSanitizer\|runtime error" "$work/server.log"; then
  echo "FAILED: the server log shows a crash"; cat "$work/server.log"; failed=1
fi
generated=$(grep -Eo '[0-9]+ generated' "$work/st.out" | tail -1)
echo "contract: ${generated:-? generated} cases"
if [ "$failed" -eq 0 ]; then
  echo "contract: 1 passed, 0 failed"
else
  echo "contract: 0 passed, 1 failed"
fi
exit "$failed"
