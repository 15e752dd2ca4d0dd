#!/usr/bin/env python3
"""The Python client's static checks: `mypy --strict` (the package and
tests/typecheck_usage.py, the README's calls) and `ruff check` (the package
and its tests), both configured in pyproject.toml. Exit 1 on any finding,
77 (skipped) when mypy or ruff is not installed (pip install
'gpuhttpd[lint]'; server/install-deps.sh --test installs them)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # clients/python

CHECKS = [
    ("mypy", [sys.executable, "-m", "mypy", "--strict"]),  # files and paths: pyproject.toml
    ("ruff", [sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests"]),
]


def main() -> int:
    missing = [name for name, _ in CHECKS if importlib.util.find_spec(name) is None]
    if missing:
        print(f"check_lint: skipped, not installed: {', '.join(missing)} "
              "(pip install 'gpuhttpd[lint]')")
        return 77
    failed = []
    for name, cmd in CHECKS:
        out = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, check=False)
        print(f"$ {' '.join(cmd[2:])}\n{out.stdout}{out.stderr}".rstrip())
        if out.returncode:
            failed.append(name)
    print(f"check_lint: {'findings from ' + ', '.join(failed) if failed else 'clean'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
