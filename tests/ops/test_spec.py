#!/usr/bin/env python3
"""The contract is a valid OpenAPI 3.1 document and says what the code says:
- openapi.yaml loads under a loader that refuses a key given twice in one
  mapping (openapi/to_json.py's, as strict as ruamel.yaml, which client
  generators use; PyYAML alone keeps the last and openapi-spec-validator
  never sees the first);
- openapi-spec-validator accepts openapi.yaml and the built openapi.json, and
  the two are the same document;
- every operation has a unique operationId and a tag, and every response
  declares X-Request-Id;
- every problem type the spec names is GHD_PROBLEM_BASE + a slug of
  server/http/problem_map.h with that slug's status, and the description lists every slug;
- every `links` target exists and names only parameters that the target has;
- every example validates against its schema.

usage: test_spec.py OPENAPI_YAML OPENAPI_JSON PROBLEM_MAP_H"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check, fail, need_module  # noqa: E402

yaml = need_module("yaml", "pyyaml")
osv = need_module("openapi_spec_validator", "openapi-spec-validator")
need_module("openapi_schema_validator", "openapi-schema-validator")
from openapi_schema_validator import OAS31Validator  # noqa: E402
from referencing import Registry, Resource  # noqa: E402
from referencing.jsonschema import DRAFT202012  # noqa: E402

METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]


def error_table(path):
    """(slug -> status) and the problem base from the X-macro table."""
    text = open(path, encoding="utf-8").read()
    base = re.search(r'#define GHD_PROBLEM_BASE "([^"]+)"', text).group(1)
    rows = re.findall(r'X\(E\w+,\s*(\d+),\s*"([a-z-]+)"\)', text)
    check(rows, f"no error rows found in {path}")
    return base, {slug: int(status) for status, slug in rows}


def deref(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        ptr = node["$ref"]
        check(ptr.startswith("#/"), f"external $ref {ptr}")
        node = spec
        for part in ptr[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def operations(spec):
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item, item[method]


def problem_types(resp, slugs):
    """The problem types a response says it sends: the slugs of server/http/problem_map.h
    that its description names in backticks. The schema is plain Problem, not
    narrowed with allOf + const, which client generators cannot merge."""
    return [s for s in re.findall(r"`([a-z-]+)`", resp.get("description", "")) if s in slugs]


def null_values(node, where="#"):
    """Paths of keys whose value is null: in this document always a slip, such
    as an unquoted comma in a flow mapping ({description: a, b}) that makes
    " b" a key of its own."""
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            if v is None:
                found.append(f"{where}/{k}")
            found += null_values(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += null_values(v, f"{where}/{i}")
    return found


def main():
    yaml_path, json_path, problem_map_h = sys.argv[1:4]
    sys.path.insert(0, os.path.dirname(os.path.abspath(yaml_path)))
    import to_json
    with open(yaml_path, encoding="utf-8") as f:
        try:
            spec = to_json.load(f)
        except yaml.YAMLError as e:
            fail(f"{yaml_path} does not load: {e}")
    with open(json_path, encoding="utf-8") as f:
        built = json.load(f)
    try:
        osv.validate(spec)
        osv.validate(built)
    except Exception as e:
        fail(f"openapi-spec-validator: {e}")
    check(spec == built, "the built openapi.json differs from openapi.yaml (rebuild: cmake --build)")
    check(spec["openapi"].startswith("3.1."), "not OpenAPI 3.1")

    nulls = null_values(spec)
    check(not nulls, f"keys without a value (an unquoted comma in a flow mapping?): {nulls}")
    base, slugs = error_table(problem_map_h)
    check(base == "/problems/", f"GHD_PROBLEM_BASE is {base!r}: problem types are relative "
                                "references served by GET /problems/{slug}")
    ptype = spec["components"]["schemas"]["Problem"]["properties"]["type"]
    check(re.fullmatch(ptype["pattern"], base + "not-found"), "Problem.type's pattern")
    guide = spec["x-guide"]  # the API's rules, served at /docs/guide
    for slug in slugs:
        check(f"`{slug}`" in guide, f"x-guide does not list the problem type {slug}")

    ids = set()
    registry = Registry().with_resource("urn:spec", Resource.from_contents(
        spec, default_specification=DRAFT202012))

    def validate_example(where, schema_ptr, instance):
        validator = OAS31Validator({"$ref": "urn:spec#" + schema_ptr}, registry=registry)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
        check(not errors, f"{where}: the example does not fit its schema: "
                          f"{errors[0].message if errors else ''}")

    def esc(s):
        return s.replace("~", "~0").replace("/", "~1")

    # Swagger UI 5 renders path-level parameters (a $ref above all) as a
    # nameless "any" field that Try it out cannot fill: parameters go on
    # the operations.
    for path, item in spec["paths"].items():
        check("parameters" not in item, f"{path} has path-level parameters; put them on each "
                                        "operation (Swagger UI cannot fill them)")

    seen_types = set()
    for path, method, item, op in operations(spec):
        where = f"{method.upper()} {path}"
        check(op.get("operationId"), f"{where} has no operationId")
        check(op["operationId"] not in ids, f"{where}: duplicate operationId {op['operationId']}")
        ids.add(op["operationId"])
        check(op.get("tags"), f"{where} has no tag")
        for code, resp_ref in op["responses"].items():
            resp = deref(spec, resp_ref)
            check("X-Request-Id" in resp.get("headers", {}), f"{where} {code} lacks X-Request-Id")
            for mtype, media in resp.get("content", {}).items():
                schema = deref(spec, media.get("schema", {}))
                if mtype == "application/problem+json":
                    check(schema is deref(spec, {"$ref": "#/components/schemas/Problem"}),
                          f"{where} {code}: a problem's schema is Problem itself")
                    types = problem_types(resp, slugs)
                    check(types, f"{where} {code}: the description names no problem type")
                    for t in types:
                        check(slugs[t] == int(code),
                              f"{where} {code}: {t} is sent with status {slugs[t]}")
                        seen_types.add(t)
        # Examples of request bodies and responses fit their schemas.
        op_ptr = f"/paths/{esc(path)}/{method}"
        body = op.get("requestBody", {}).get("content", {})
        for mtype, media in body.items():
            ptr = f"{op_ptr}/requestBody/content/{esc(mtype)}/schema"
            if "example" in media:
                validate_example(f"{where} request {mtype}", ptr, media["example"])
            for name, ex in media.get("examples", {}).items():
                validate_example(f"{where} request example {name}", ptr, ex["value"])
        for code, resp_ref in op["responses"].items():
            if "$ref" in resp_ref:
                resp_ptr = resp_ref["$ref"][1:]
            else:
                resp_ptr = f"{op_ptr}/responses/{code}"
            resp = deref(spec, resp_ref)
            for mtype, media in resp.get("content", {}).items():
                if not mtype.endswith("json"):
                    continue
                ptr = f"{resp_ptr}/content/{esc(mtype)}/schema"
                if "example" in media:
                    validate_example(f"{where} {code}", ptr, media["example"])
                for name, ex in media.get("examples", {}).items():
                    validate_example(f"{where} {code} example {name}", ptr, ex["value"])

    # Every id the server makes carries the owner prefix (server/base/owner.h:
    # i<instance>-<boot>-), so every `id` path parameter with a pattern
    # accepts one, and every `id` property pattern of a schema too.
    owner_id = "i0003-5f2c9a1e-"
    for path, method, item, op in operations(spec):
        for p in op.get("parameters", []):
            p = deref(spec, p)
            pattern = p.get("schema", {}).get("pattern")
            if p.get("in") == "path" and p["name"] == "id" and pattern:
                check(re.search(pattern, owner_id + "0" * 16) or
                      re.search(pattern, owner_id + "0" * 32),
                      f"{method.upper()} {path}: the id pattern {pattern} refuses owner-prefixed "
                      "ids")
    for name, schema in spec["components"]["schemas"].items():
        pattern = schema.get("properties", {}).get("id", {}).get("pattern")
        if pattern:
            check(re.search(pattern, owner_id + "0" * 16) or
                  re.search(pattern, owner_id + "0" * 32),
                  f"{name}.id's pattern {pattern} refuses owner-prefixed ids")

    # Every problem type of the error table is described by some operation,
    # but 405 (any path, described in info) and 501 (no route sends it).
    for slug in sorted(set(slugs) - {"method-not-allowed", "not-implemented"}):
        check(slug in seen_types, f"no response describes the problem type {slug} "
                                  f"(server/http/problem_map.h); add it to the responses that send it")

    # Links name real operations and real parameters.
    by_id = {op["operationId"]: (item, op) for _, _, item, op in operations(spec)}
    link_count = 0
    for path, method, item, op in operations(spec):
        for code, resp_ref in op["responses"].items():
            for name, link in deref(spec, resp_ref).get("links", {}).items():
                link_count += 1
                where = f"{method.upper()} {path} {code} link {name}"
                target = link.get("operationId")
                check(target in by_id, f"{where}: no operation {target}")
                titem, top = by_id[target]
                params = {deref(spec, p)["name"] for p in titem.get("parameters", []) +
                          top.get("parameters", [])}
                for pname, expr in link.get("parameters", {}).items():
                    check(pname in params, f"{where}: {target} has no parameter {pname}")
                    check(str(expr).startswith("$"), f"{where}: {pname} is not an expression")
                if "requestBody" in link:
                    check("requestBody" in top, f"{where}: {target} takes no body")
    check(link_count >= 8, f"only {link_count} links")
    print(f"test_spec: ok ({len(ids)} operations, {link_count} links, {len(slugs)} problem types)")


if __name__ == "__main__":
    main()
