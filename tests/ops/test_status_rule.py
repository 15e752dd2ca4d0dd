#!/usr/bin/env python3
"""The status rule for bad input, as openapi.yaml's
description states it: 400 when the request does not match the document's
schema, 422 when it matches but its values cannot be carried out (kernel
`args` are open in the schema, so every mistake in them is 422).

Each case has the status written by hand, and the test also checks that
the hand-written status agrees with the schema (400 exactly when the
served document's schema rejects the body), so the rule, the document and
the server cannot drift apart.

usage: test_status_rule.py GPUHTTPD_BINARY"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, need_module  # noqa: E402

need_module("openapi_schema_validator", "openapi-schema-validator")
from openapi_schema_validator import OAS31Validator  # noqa: E402
from referencing import Registry, Resource  # noqa: E402
from referencing.jsonschema import DRAFT202012  # noqa: E402


def run_cases(x):
    """(what, body, status) for POST /v1/runs; x is a 64-byte buffer."""
    args = {"x": x, "n": 16, "dtype": "f32"}
    return [
        ("kernel missing", {"args": args}, 400),
        ("kernel not a string", {"kernel": 5, "args": args}, 400),
        ("unknown member", {"kernel": "sum", "args": args, "extra": 1}, 400),
        ("args not an object", {"kernel": "sum", "args": [1]}, 400),
        ("wait not a boolean", {"kernel": "sum", "args": args, "wait": 1}, 400),
        ("kernel and steps", {"kernel": "sum", "steps": [{"kernel": "sum"}]}, 400),
        ("no steps", {"steps": []}, 400),
        ("a step's unknown member", {"steps": [{"kernel": "sum", "args": args, "x": 1}]}, 400),
        ("unknown kernel", {"kernel": "no-such", "args": args}, 422),
        # A user kernel by value: its definition is KernelDefinition's to shape
        # (400 past it), the language's to judge (422).
        ("definition by value, its name missing",
         {"kernel": {"in": "f32 x", "out": "f32 z", "body": "z = x"}, "args": args}, 400),
        ("definition by value, a body not a string",
         {"kernel": {"name": "k", "in": "f32 x", "out": "f32 z", "body": 5}, "args": args}, 400),
        ("definition by value, an unknown field",
         {"kernel": {"name": "k", "in": "f32 x", "out": "f32 z", "bodi": "z = x"}}, 400),
        ("definition by value, an unknown name in its body",
         {"kernel": {"name": "k", "in": "f32 x", "out": "f32 z", "body": "z = q"},
          "args": args}, 422),
        ("n missing", {"kernel": "sum", "args": {"x": x, "dtype": "f32"}}, 422),
        ("unknown argument", {"kernel": "sum", "args": {**args, "bogus": 1}}, 422),
        ("n a string", {"kernel": "sum", "args": {**args, "n": "16"}}, 422),
        ("dtype flaot32", {"kernel": "sum", "args": {**args, "dtype": "flaot32"}}, 422),
        ("dtype not a string", {"kernel": "sum", "args": {**args, "dtype": 4}}, 422),
        ("x not an id string", {"kernel": "sum", "args": {**args, "x": 5}}, 422),
        ("n negative", {"kernel": "sum", "args": {**args, "n": -1}}, 422),
        ("buffer too small", {"kernel": "sum", "args": {**args, "n": 1000}}, 422),
        ("a step's n missing", {"steps": [{"kernel": "sum", "args": args},
                                          {"kernel": "sum", "args": {"x": x, "dtype": "f32"}}]},
         422),
    ]


BUFFER_CASES = [
    ("size missing", {"label": "x"}, 400),
    ("size a string", {"size": "16"}, 400),
    ("size 0", {"size": 0}, 400),
    ("size negative", {"size": -1}, 400),
    ("unknown member", {"size": 16, "colour": "red"}, 400),
    ("alignment over 2 MiB", {"size": 16, "alignment": 4194304}, 400),
    ("label over 128 characters", {"size": 16, "label": "x" * 129}, 400),
    ("label not a string", {"size": 16, "label": 5}, 400),
    ("alignment not a power of two", {"size": 16, "alignment": 300}, 422),
    ("label with a control character", {"size": 16, "label": "a\u001bb"}, 422),
    ("label over 128 bytes", {"size": 16, "label": "\u00e9" * 100}, 422),
    ("ttl over ten years", {"size": 16, "ttl_s": 315360001}, 422),
    # An element type name is the server's to know, as in a run's args.
    ("dtype not a string", {"dtype": 4, "shape": [4]}, 400),
    ("dtype flaot32", {"dtype": "flaot32", "shape": [4]}, 422),
    ("dtype f33", {"dtype": "f33", "shape": [4]}, 422),
    # Which devices exist is the server's to know; the schema says an index.
    ("device not an integer", {"size": 16, "device": "0"}, 400),
    ("device negative", {"size": 16, "device": -1}, 400),
    ("device past the last", {"size": 16, "device": 7}, 422),
    ("copy_of with a size", {"copy_of": "x", "size": 16}, 400),
]


def main():
    binary = sys.argv[1]
    with Server(binary) as srv:
        status, _, body = srv.request("GET", "/openapi.json")
        spec = json.loads(body)
        status, _, guide = srv.request("GET", "/docs/guide")
        check(status == 200 and guide.decode() == spec["x-guide"], "/docs/guide: not x-guide")
        check("**Bad input: 400 or 422.**" in spec["x-guide"],
              "the API's guide states no status rule")
        registry = Registry().with_resource("urn:spec", Resource.from_contents(
            spec, default_specification=DRAFT202012))

        def schema_ok(name, obj):
            v = OAS31Validator({"$ref": f"urn:spec#/components/schemas/{name}"},
                               registry=registry)
            return not list(v.iter_errors(obj))

        status, _, buf = srv.json("POST", "/v1/buffers", {"size": 64})
        check(status == 201, f"create: {status}")
        wrong = []
        for schema, path, cases in [("RunRequest", "/v1/runs", run_cases(buf["id"])),
                                    ("BufferCreateRequest", "/v1/buffers", BUFFER_CASES)]:
            for what, obj, want in cases:
                by_schema = 422 if schema_ok(schema, obj) else 400
                check(by_schema == want, f"{path} {what}: the schema says {by_schema}, the case "
                                         f"{want}: the rule and the document disagree")
                status, hdrs, problem = srv.json("POST", path, obj)
                if status != want or hdrs.get("content-type") != "application/problem+json":
                    wrong.append(f"{path} {what}: {status}, not {want}: {problem}")
                elif want == 422:
                    # a kernel name the server does not know has a type of its own
                    ptype = "unknown-kernel" if what == "unknown kernel" else "invalid-argument"
                    check(problem["type"] == f"/problems/{ptype}", f"{what}: {problem}")
        # A query parameter outside its schema's bounds: 400 as well.
        status, _, _ = srv.json("GET", "/v1/buffers?limit=0")
        if status != 400:
            wrong.append(f"GET /v1/buffers?limit=0: {status}, not 400")
        check(not wrong, "the status rule is broken:\n  " + "\n  ".join(wrong))
    print(f"test_status_rule: ok ({len(BUFFER_CASES) + len(run_cases('x'))} cases)")


if __name__ == "__main__":
    main()
