#!/usr/bin/env bash
# Runs ShellCheck on every shell script of the tree: docker/, server/ (the
# README's install and start scripts), tests/ and .ci/run
# Skipped (77) where shellcheck is not installed.
# usage: test_shellcheck.sh REPO_ROOT
set -euo pipefail
root=$1
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "SKIPPED: shellcheck is not installed (Debian: apt-get install shellcheck)"
  exit 77
fi
mapfile -t scripts < <(find "$root/docker" "$root/server" "$root/tests" -type f \
  -name '*.sh' | sort)
scripts+=("$root/.ci/run")
if [ "${#scripts[@]}" -eq 0 ]; then
  echo "FAILED: no scripts found"
  exit 1
fi
shellcheck --severity=style "${scripts[@]}"
echo "test_shellcheck: ok (${#scripts[@]} scripts)"
