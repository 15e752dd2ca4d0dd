"""The command line: ``python -m gpuhttpd ls | put | get | rm | run | runs``.

The server is ``--url`` or ``$GPUHTTPD_URL`` (default http://127.0.0.1:8080),
the bearer token ``$GPUHTTPD_TOKEN`` (never an argument: it would show in
``ps``). Transfers draw a progress bar on a terminal (tqdm) when they are
long (``--progress`` always, ``--no-progress`` never)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .client import Client
from .errors import GpuhttpdError

# Transfers of this many bytes or more draw a bar on a terminal.
_LONG = 16 << 20


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gpuhttpd", description=__doc__.split("\n")[0])
    p.add_argument("--url", default=os.environ.get("GPUHTTPD_URL", "http://127.0.0.1:8080"),
                   help="the server (default $GPUHTTPD_URL, else http://127.0.0.1:8080); "
                        "the token is $GPUHTTPD_TOKEN")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bars (default: for long transfers on a terminal)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("ls", help="list this tenant's buffers")
    put = sub.add_parser("put", help="upload a file (a .npy keeps its dtype and shape)")
    put.add_argument("file")
    put.add_argument("--label", default="")
    put.add_argument("--ttl", type=int, help="seconds until the buffer expires")
    get = sub.add_parser("get", help="download a buffer into FILE (.npy), or print it")
    get.add_argument("id")
    get.add_argument("file", nargs="?")
    rm = sub.add_parser("rm", help="delete buffers")
    rm.add_argument("ids", nargs="+")
    run = sub.add_parser("run", help="run a kernel: run axpy a=2 x=ID y=ID")
    run.add_argument("kernel")
    run.add_argument("args", nargs="*", metavar="name=value",
                     help="JSON values (2, true, [1,2]); anything else is a string (ids, "
                          "dtype names)")
    sub.add_parser("runs", help="list this tenant's runs (queued, running, kept), oldest first")
    return p


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _progress(flag: bool | None, nbytes: int) -> bool:
    return flag if flag is not None else nbytes >= _LONG and sys.stderr.isatty()


def _ls(c: Client) -> None:
    for x in c.list():
        shape = "x".join(map(str, x.shape)) if x.shape else "()"
        print(f"{x.id}  {x.dtype_name or 'bytes':5} {shape:>14} {x.nbytes:>12}  "
              f"{x.label or '-'}  {x.expires or ''}".rstrip())


def _runs(c: Client) -> None:
    for f in c.runs():
        r = f.run
        what = r.get("kernel") or "+".join(str(s.get("kernel")) for s in r.get("steps", []))
        print(f"{f.id}  {r['status']:9} {what}")


def _get(c: Client, bid: str, path: str | None, progress: bool | None) -> None:
    x = c.buffer(bid)
    if path is not None:
        x.download_to(path, progress=_progress(progress, x.nbytes))
        return
    with np.printoptions(threshold=64):
        print(x.get(progress=_progress(progress, x.nbytes)))


def _run(c: Client, kernel: str, pairs: Sequence[str]) -> None:
    args: dict[str, Any] = {}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        if not eq or not name:
            raise SystemExit(f"gpuhttpd: run takes name=value arguments, not {pair!r}")
        args[name] = _value(text)
    print(json.dumps(c.run(kernel, args=args)))


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; the exit status (1 when the server refused)."""
    a = _parser().parse_args(argv)
    try:
        with Client(a.url, os.environ.get("GPUHTTPD_TOKEN") or None) as c:
            if a.command == "ls":
                _ls(c)
            elif a.command == "put":
                size = os.path.getsize(a.file)
                x = c.upload_file(a.file, label=a.label, ttl=a.ttl,
                                  progress=_progress(a.progress, size))
                print(x.id)
            elif a.command == "get":
                _get(c, a.id, a.file, a.progress)
            elif a.command == "rm":
                for bid in a.ids:
                    c.buffer(bid).delete()
            elif a.command == "runs":
                _runs(c)
            else:
                _run(c, a.kernel, a.args)
    except (GpuhttpdError, OSError, ValueError) as e:
        print(f"gpuhttpd: {e}", file=sys.stderr)
        return 1
    return 0
