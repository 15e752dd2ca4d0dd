#!/usr/bin/env python3
"""The README runs as written: its shell blocks, in order, in one fresh shell
(`bash` with an empty environment but PATH, in an empty folder, `set -e`), then
its Python sessions (```python blocks of `>>>` lines) as doctests in that
folder, against a real gpuhttpd (host backend, 127.0.0.1, a free port; the
README's 127.0.0.1:8080 becomes that address). A block the README marks on
the line before it with `<!-- readme-test: skip: REASON -->` is not run (the
start and test commands, what needs a Docker engine or a fresh machine), and
one marked `<!-- readme-test: cuda -->` runs only on the CUDA backend
(GHD_TEST_BACKEND=cuda), the server then started with --allow-raw-kernels.
Every curl in a shell block passes -f, so that an error status fails the
command instead of writing a problem into a file.

A shell block is an indented code block (four spaces past the text around it)
or a ```sh / ```bash fence; a fence of another language (the layout diagram)
is not code to run.

usage: test_readme.py GPUHTTPD_BINARY README_MD"""
import doctest
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import BACKEND, Server, check, fail  # noqa: E402

README_ADDRESS = "127.0.0.1:8080"
MARKER = re.compile(r"^\s*<!--\s*readme-test:\s*(skip:\s*(?P<why>.+?)|(?P<cuda>cuda))\s*-->\s*$")
SHELL_FENCES = {"sh", "bash", "shell"}


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def blocks(path):
    """(kind, first line number, text, marker) of each code block: kind is
    "shell" or "python"; marker is None, "cuda" or ("skip", reason)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = []
    marker = None
    text_indent = 0  # where the text of the paragraph or list item starts
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^\s*```(\w*)\s*$", line)
        if fence:
            lang, start = fence.group(1), i + 1
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                i += 1
            body = "\n".join(lines[start:i])
            if lang in SHELL_FENCES:
                found.append(("shell", start + 1, body, marker))
            elif lang == "python":
                found.append(("python", start + 1, body, marker))
            marker = None
            i += 1
            continue
        blank_before = i == 0 or not lines[i - 1].strip()
        if line.strip() and blank_before and indent_of(line) >= text_indent + 4:
            start, ind = i, indent_of(line)
            while i < len(lines) and (not lines[i].strip() or indent_of(lines[i]) >= ind):
                i += 1
            body = [ln[ind:] for ln in lines[start:i]]
            while body and not body[-1].strip():
                body.pop()
            found.append(("shell", start + 1, "\n".join(body), marker))
            marker = None
            continue
        if line.strip():
            m = MARKER.match(line)
            if m:
                marker = "cuda" if m.group("cuda") else ("skip", m.group("why"))
            else:
                marker = None
            item = re.match(r"^(\s*)([-*+]|\d+\.)\s+", line)
            text_indent = len(item.group(0)) if item else indent_of(line)
        i += 1
    return found


def curl_without_fail(body):
    """(offset in the block, line) of each curl that does not pass -f (--fail)."""
    bad = []
    for offset, line in enumerate(body.split("\n")):
        if line.lstrip().startswith("#"):
            continue
        for m in re.finditer(r"(?:^|[\s;|&(])curl\s+(\S+)", line):
            flags = m.group(1)
            if not (flags in ("--fail", "--fail-with-body") or
                    (re.fullmatch(r"-[A-Za-z]+", flags) and "f" in flags)):
                bad.append((offset, line.strip()))
    return bad


def run_shell(shell_blocks, work, address):
    """All shell blocks in one bash, as one terminal would run them pasted in
    turn; the README line of the block that fails is in the output."""
    script = ["set -eEuo pipefail",
              "trap 'echo \"README.md:$ghd_line: exit status $? from: $BASH_COMMAND\" >&2' ERR"]
    for line_no, body in shell_blocks:
        script += [f"ghd_line={line_no}", body.replace(README_ADDRESS, address)]
    path = os.path.join(work, ".readme.sh")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(script) + "\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LANG": "C.UTF-8"}
    res = subprocess.run(["bash", "--noprofile", "--norc", path], cwd=work, env=env,
                         capture_output=True, timeout=240)
    out = (res.stdout + res.stderr).decode("utf-8", "replace")
    check(res.returncode == 0, f"the README's shell blocks failed ({res.returncode}):\n{out[-6000:]}")
    # `a && b && echo same` does not stop set -e when b fails: the word
    # echoed is the proof that it passed.
    printed = res.stdout.decode("utf-8", "replace").split("\n")
    for _, body in shell_blocks:
        for word in re.findall(r"&&\s*echo\s+(\w+)\s*(?:#.*)?$", body, re.M):
            check(word in printed, f"the README's `&& echo {word}` printed no {word!r}:\n"
                                   f"{out[-6000:]}")
    return out


def run_python(readme, line_no, body, work, address):
    """A `>>>` session as a doctest (ELLIPSIS: `...` in an output stands for
    anything); its failures are printed with their README line."""
    if re.search(r"^\s*>>>.*\bimport\b.*\bgpuhttpd\b", body, re.M):
        try:
            import gpuhttpd  # noqa: F401
        except ImportError:
            fail(f"the README's Python session (line {line_no}) needs the Python client: "
                 f"{sys.executable} -m pip install -e clients/python (tests/run.sh does it)")
    text = body.replace(README_ADDRESS, address)
    test = doctest.DocTestParser().get_doctest(text, {}, f"README.md line {line_no}", readme,
                                               line_no - 1)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        result = runner.run(test)
    finally:
        os.chdir(cwd)
    check(result.failed == 0, f"the README's Python session at line {line_no}: "
                              f"{result.failed} of {result.attempted} examples failed (above)")
    return result.attempted


def main():
    binary, readme = sys.argv[1], sys.argv[2]
    found = blocks(readme)
    check(any(k == "shell" and m is None for k, _, _, m in found), "no shell block found")
    bad = [(n + off, c) for k, n, body, _ in found if k == "shell"
           for off, c in curl_without_fail(body)]
    check(not bad, "curl without -f in the README (an error status would pass unnoticed): " +
          "; ".join(f"line {n}: {c}" for n, c in bad))
    cuda = BACKEND == "cuda"
    run = [(k, n, body) for k, n, body, m in found if m is None or (m == "cuda" and cuda)]
    skipped = [(n, m) for _, n, _, m in found if not (m is None or (m == "cuda" and cuda))]
    extra = ["--allow-raw-kernels"] if cuda else []
    with tempfile.TemporaryDirectory(prefix="ghd-readme-") as work, \
            Server(binary, *extra) as srv:
        address = f"127.0.0.1:{srv.port}"
        run_shell([(n, body) for k, n, body in run if k == "shell"], work, address)
        examples = sum(run_python(readme, n, body, work, address)
                       for k, n, body in run if k == "python")
    shells = sum(1 for k, _, _ in run if k == "shell")
    pythons = sum(1 for k, _, _ in run if k == "python")
    print(f"test_readme: ok ({shells} shell blocks, {pythons} Python sessions of {examples} "
          "examples; not run: " +
          "; ".join(f"line {n}: {'CUDA only' if m == 'cuda' else m[1]}" for n, m in skipped) + ")")


if __name__ == "__main__":
    main()
