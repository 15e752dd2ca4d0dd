#!/usr/bin/env python3
"""No circle between files in the include graph of the product's C sources
(server/, kernels/, handlers/).

A node is a module: a .c file and the header of the same name (x.c and x.h,
as each .c includes its own header first), with its private header
x_internal.h if it has one; there is an edge from module A to
module B when a.c or a.h includes b.h. A circle (A reaches B and B reaches A)
is one concept split wrongly, or a part that both need and that has no home
below them: give it one. Headers are found as the compiler finds them: beside
the includer, then in server/ and the repository root (the layers' include
path).

usage: test_include_cycles.py SOURCE_ROOT"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check  # noqa: E402

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TOPS = ("server", "kernels", "handlers")
SOURCE = re.compile(r"\.(c|h|cu|cuh)$")


def sources(root):
    for top in TOPS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if SOURCE.search(f):
                    yield os.path.join(d, f)


def module(root, path):
    """x.c, x.h and x's private header x_internal.h are module x."""
    stem = os.path.splitext(os.path.relpath(path, root))[0]
    return stem[:-len("_internal")] if stem.endswith("_internal") else stem


def resolve(root, includer, name):
    for base in (os.path.dirname(includer), os.path.join(root, "server"), root):
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None  # a system or generated header


def graph(root):
    edges = {}
    for path in sources(root):
        a = module(root, path)
        with open(path, encoding="utf-8") as fh:
            for name in INCLUDE.findall(fh.read()):
                target = resolve(root, path, name)
                b = module(root, target) if target else None
                if b and b != a:
                    edges.setdefault(a, set()).add(b)
        edges.setdefault(a, set())
    return edges


def circles(edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def path_in(edges, comp):
    """One circle through the component's first module, for the message."""
    start, members = comp[0], set(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & members):
                if w == start:
                    walk = [v]
                    while prev[walk[-1]] is not None:
                        walk.append(prev[walk[-1]])
                    return " -> ".join(reversed(walk)) + " -> " + start
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return ", ".join(comp)


def main():
    root = sys.argv[1]
    edges = graph(root)
    found = circles(edges)
    check(not found, "include circles between modules (x.c + x.h):\n  " +
          "\n  ".join(path_in(edges, c) for c in found))
    print(f"ok: {len(edges)} modules, no include circle")


if __name__ == "__main__":
    main()
