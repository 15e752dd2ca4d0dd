#!/usr/bin/env python3
"""Converts openapi.yaml to JSON at build time: python3 to_json.py IN OUT.

The JSON is what /openapi.json serves and what Swagger UI loads. Values YAML
would read as dates or other non-JSON types are refused, so the two documents
never differ. A key given twice in one mapping is refused too: PyYAML would keep
the last one silently, while stricter loaders (ruamel.yaml, which
openapi-python-client uses) refuse the whole document."""
import json
import sys

try:
    import yaml
except ImportError:
    sys.exit("to_json.py: PyYAML is missing (Debian: apt-get install python3-yaml; "
             "or: python3 -m pip install pyyaml)")


class StrictLoader(yaml.SafeLoader):
    """A safe loader that keeps timestamps as strings, as JSON would, and
    refuses a mapping that names one key twice."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # the base constructor refuses it, naming it
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r} (first at line {seen[key] + 1})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


StrictLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load(stream):
    """The document of a YAML stream, read by StrictLoader."""
    return yaml.load(stream, Loader=StrictLoader)


def check_keys(node, where="#"):
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str):
                sys.exit(f"to_json.py: {where}: key {k!r} is not a string; quote it in the YAML")
            check_keys(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            check_keys(v, f"{where}/{i}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: to_json.py IN.yaml OUT.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        try:
            doc = load(f)
        except yaml.YAMLError as e:
            sys.exit(f"to_json.py: {sys.argv[1]}: {e}")
    check_keys(doc)
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    import os
    os.replace(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
