#!/usr/bin/env python3
"""Short files that read top to bottom: no product source file (.c, .h, .cu,
.cuh under server/, handlers/ and kernels/) is longer than 600 lines, and no
function in one is longer than 80.

A function is found from its definition: a line at column 0 that names it
(an identifier followed by "("), then, before any ";", a line that is "{" at
column 0; it runs to the brace that closes that one, comments, strings and
character constants aside. Its length counts both ends. A file or function
past its limit is split by what it does (the limit is where the next reader
loses the thread), not cut at the line count.

usage: test_sizes.py SOURCE_DIR"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import fail  # noqa: E402

FILE_LIMIT = 600
FUNCTION_LIMIT = 80
TOPS = ("server", "handlers", "kernels")
SOURCE = re.compile(r"\.(c|h|cu|cuh)$")
DEFINITION = re.compile(r"^[A-Za-z_].*?\b([A-Za-z_]\w*)\s*\(")
# Comments, string literals and character constants: their braces are text.
TEXT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank_text(source):
    """The source with every comment, string and character constant turned
    into spaces, newlines kept, so that lines and columns stay where they were."""
    return TEXT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)


def functions(source):
    """(name, first line, length) of each function defined in `source`."""
    lines = blank_text(source).split("\n")
    found = []
    i = 0
    while i < len(lines):
        m = DEFINITION.match(lines[i])
        if not m or lines[i].startswith(("#", "}")):
            i += 1
            continue
        # The signature may run over several lines; a ";" first means a
        # declaration (or a statement), not a definition.
        j = i
        while j < len(lines) and lines[j] != "{" and ";" not in lines[j]:
            j += 1
        if j >= len(lines) or lines[j] != "{":
            i += 1
            continue
        depth, k = 0, j
        while k < len(lines):
            depth += lines[k].count("{") - lines[k].count("}")
            if depth <= 0:
                break
            k += 1
        found.append((m.group(1), i + 1, k - i + 1))
        i = k + 1
    return found


def sources(root):
    for top in TOPS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if SOURCE.search(f):
                    yield os.path.join(d, f)


def main():
    if len(sys.argv) != 2:
        fail(__doc__)
    root = sys.argv[1]
    long_files, long_functions = [], []
    count = 0
    for path in sources(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        count += 1
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > FILE_LIMIT:
            long_files.append(f"{rel}: {n} lines")
        for name, line, length in functions(text):
            if length > FUNCTION_LIMIT:
                long_functions.append(f"{rel}:{line}: {name}, {length} lines")
    if count == 0:
        fail(f"no sources found under {', '.join(TOPS)} of {root}")
    report = []
    if long_files:
        report.append(f"files over {FILE_LIMIT} lines:\n  " + "\n  ".join(long_files))
    if long_functions:
        report.append(f"functions over {FUNCTION_LIMIT} lines:\n  " +
                      "\n  ".join(long_functions))
    if report:
        fail("\n".join(report))
    print(f"ok: sizes ({count} files, none over {FILE_LIMIT} lines, "
          f"no function over {FUNCTION_LIMIT})")


if __name__ == "__main__":
    main()
