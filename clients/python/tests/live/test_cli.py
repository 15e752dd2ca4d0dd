"""The command line against the real server: put a .npy, ls, run a kernel,
get it back (a file and printed), rm; the URL and token from the
environment; a refusal is exit status 1 with the server's detail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cli(server_url: str, *args: str, token: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GPUHTTPD_URL=server_url, PYTHONPATH=SRC)
    env.pop("GPUHTTPD_TOKEN", None)
    if token:
        env["GPUHTTPD_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "gpuhttpd", *args], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_put_ls_run_get_rm(server, tmp_path):
    a = np.arange(10, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    put = cli(server.url, "put", str(tmp_path / "a.npy"), "--label", "from-cli")
    assert put.returncode == 0, put.stderr
    bid = put.stdout.strip()
    ls = cli(server.url, "ls")
    line = next(row for row in ls.stdout.splitlines() if row.startswith(bid))
    assert "f32" in line and "10" in line and "from-cli" in line
    run = cli(server.url, "run", "scale", "a=3", f"x={bid}", "dtype=float32")
    assert run.returncode == 0 and '"n": 10' in run.stdout, run.stderr
    rid = next(line for line in cli(server.url, "runs").stdout.splitlines()[::-1]
               if line.endswith(" scale"))
    assert "succeeded" in rid
    assert cli(server.url, "get", bid, str(tmp_path / "b.npy")).returncode == 0
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), a * 3)
    assert "27." in cli(server.url, "get", bid).stdout
    assert cli(server.url, "rm", bid).returncode == 0
    gone = cli(server.url, "get", bid)
    assert gone.returncode == 1 and "404" in gone.stderr


def test_token_from_the_environment(make_server):
    s = make_server("--tokens", "sesame:alice")
    assert "401" in cli(s.url, "ls").stderr
    assert cli(s.url, "ls", token="sesame").returncode == 0
