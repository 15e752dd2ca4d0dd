#!/usr/bin/env python3
"""The server keeps the contract it serves: for a walk through every operation
(successes and the errors a client can cause), each reply's status is one the
spec lists for that operation, its required headers are present, its
Content-Type is a documented media type, and JSON bodies validate against the
documented schema (so a problem's `type` must be the slug documented for that
status). Run against the document from GET /openapi.json.

usage: test_contract.py GPUHTTPD_BINARY"""
import http.client
import json
import os
import socket
import sys
from multiprocessing import shared_memory

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, need_module  # noqa: E402

need_module("openapi_schema_validator", "openapi-schema-validator")
from openapi_schema_validator import OAS31Validator  # noqa: E402
from referencing import Registry, Resource  # noqa: E402
from referencing.jsonschema import DRAFT202012  # noqa: E402


class Contract:
    def __init__(self, spec):
        self.spec = spec
        self.registry = Registry().with_resource("urn:spec", Resource.from_contents(
            spec, default_specification=DRAFT202012))
        self.checked = 0
        self.seen = set()

    def deref(self, node):
        ptr = ""
        while isinstance(node, dict) and "$ref" in node:
            ptr = node["$ref"][1:]
            node = self.spec
            for part in ptr[1:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node, ptr

    def conform(self, method, template, reply, what=""):
        status, headers, body = reply
        where = f"{method} {template} -> {status} {what}".strip()
        item = self.spec["paths"].get(template)
        check(item, f"{where}: the path is not in the spec")
        m = method.lower()
        if m == "head" and "head" not in item:
            m = "get"
        op = item.get(m)
        check(op, f"{where}: the method is not in the spec")
        resp_ref = op["responses"].get(str(status))
        check(resp_ref is not None, f"{where}: status {status} is not documented "
                                    f"(documented: {sorted(op['responses'])}); body {body[:300]!r}")
        resp, ptr = self.deref(resp_ref)
        if not ptr:
            esc = template.replace("~", "~0").replace("/", "~1")
            ptr = f"/paths/{esc}/{m}/responses/{status}"
        for name, h in resp.get("headers", {}).items():
            h, _ = self.deref(h)
            if h.get("required"):
                check(name.lower() in headers, f"{where}: required header {name} is missing")
        content = resp.get("content", {})
        if method == "HEAD" or status == 204:
            check(not body, f"{where}: a body where none belongs")
        elif content:
            ctype = headers.get("content-type", "").split(";")[0].strip()
            check(ctype in content, f"{where}: Content-Type {ctype} is not one of {sorted(content)}")
            if ctype.endswith("json"):
                esc = ctype.replace("~", "~0").replace("/", "~1")
                validator = OAS31Validator({"$ref": f"urn:spec#{ptr}/content/{esc}/schema"},
                                           registry=self.registry)
                errors = list(validator.iter_errors(json.loads(body)))
                check(not errors, f"{where}: the body does not fit the schema: "
                                  f"{errors[0].message if errors else ''}\n{body[:500]!r}")
        self.checked += 1
        self.seen.add((m, template))
        return reply


    def request_errors(self, method, template, payload):
        """What the operation's JSON request schema says of payload: [] when it fits."""
        esc = template.replace("~", "~0").replace("/", "~1")
        ptr = f"/paths/{esc}/{method.lower()}/requestBody/content/application~1json/schema"
        validator = OAS31Validator({"$ref": f"urn:spec#{ptr}"}, registry=self.registry)
        return [e.message for e in validator.iter_errors(payload)]


def main():
    binary = sys.argv[1]
    with Server(binary, "--max-buffer-size", "1M") as srv:
        status, _, body = srv.request("GET", "/openapi.json")
        check(status == 200, "no /openapi.json")
        c = Contract(json.loads(body))
        R = srv.request
        J = {"Content-Type": "application/json"}
        O = {"Content-Type": "application/octet-stream"}

        for path in ["/healthz", "/readyz", "/openapi.yaml", "/openapi.json", "/docs",
                     "/docs/guide", "/docs/swagger-ui.css", "/docs/nope.js", "/metrics", "/",
                     "/docs/"]:
            c.conform("GET", path if "swagger" not in path and "nope" not in path
                      else "/docs/{asset}", R("GET", path))
        st, hdrs, _ = c.conform("GET", "/openapi.yaml", R("GET", "/openapi.yaml", headers={
            "Accept": "text/plain"}))
        check(hdrs["content-type"].startswith("text/plain"), "/openapi.yaml as text/plain")
        for path in ["/", "/docs/"]:
            st, hdrs, _ = R("GET", path)
            check(st in (301, 302) and hdrs.get("location") == "/docs", f"{path}: {st} {hdrs}")
        # Every problem type is dereferenceable on the server.
        for slug in ["not-found", "invalid-argument", "bad-request", "tenant-quota"]:
            st, _, page = c.conform("GET", "/problems/{slug}", R("GET", f"/problems/{slug}"))
            check(st == 200 and f"/problems/{slug}".encode() in page, f"/problems/{slug}: {st}")
        st, _, _ = c.conform("GET", "/problems/{slug}", R("GET", "/problems/no-such-type"))
        check(st == 404, f"an unknown problem type: {st}")

        # Buffers: create (both forms), list, meta, upload, download.
        st, hdrs, body = c.conform("POST", "/v1/buffers", R(
            "POST", "/v1/buffers", json.dumps({"size": 4096, "label": "contract"}).encode(), J))
        check(st == 201, f"create: {st}")
        bid = json.loads(body)["id"]
        check(hdrs["location"] == f"/v1/buffers/{bid}", "Location of the new buffer")
        st, _, body = c.conform("POST", "/v1/buffers", R("POST", "/v1/buffers?label=o&ttl_s=60",
                                                           b"\x01" * 1024, O))
        check(st == 201 and "expires" in json.loads(body), f"create with octets: {st} {body!r}")
        bid2 = json.loads(body)["id"]
        # Raw bytes described in the query: created described, or refused whole.
        st, _, body = c.conform("POST", "/v1/buffers", R(
            "POST", "/v1/buffers?dtype=float32&shape=4,2", b"\0" * 32, O))
        check(st == 201 and json.loads(body)["shape"] == [4, 2], f"described octets: {st}")
        check(c.conform("DELETE", "/v1/buffers/{id}", R(
            "DELETE", f"/v1/buffers/{json.loads(body)['id']}"))[0] == 204, "delete it")
        for query, want in (("dtype=f32&shape=3", 422), ("shape=8", 400)):
            st, _, _ = c.conform("POST", "/v1/buffers", R("POST", f"/v1/buffers?{query}",
                                                          b"\0" * 32, O))
            check(st == want, f"octets with ?{query}: {st}, not {want}")
        # Devices: the list, a buffer on a named device, a copy, what is refused.
        st, _, body = c.conform("GET", "/v1/devices", R("GET", "/v1/devices"))
        devices = json.loads(body)["devices"]
        check(st == 200 and devices and devices[0]["index"] == 0, f"devices: {st} {body!r}")
        # Usage: the two buffers just made, on the caller's first device.
        st, _, body = c.conform("GET", "/v1/usage", R("GET", "/v1/usage"))
        usage = json.loads(body)
        check(st == 200 and usage["buffers"]["count"] >= 2 and
              usage["devices"][0]["device"] == 0, f"usage: {st} {body!r}")
        # The cluster: this one alone (no --peers), without an advertised URL.
        st, _, body = c.conform("GET", "/v1/cluster", R("GET", "/v1/cluster"))
        check(st == 200 and [i["self"] for i in json.loads(body)["instances"]] == [True],
              f"cluster: {st} {body!r}")
        st, _, body = c.conform("POST", "/v1/buffers", R(
            "POST", "/v1/buffers", json.dumps({"copy_of": bid2, "device": 0}).encode(), J))
        copy = json.loads(body)
        check(st == 201 and copy["device"] == 0 and copy["source_version"] >= 1 and
              copy["size"] == 1024, f"copy: {st} {body!r}")
        check(c.conform("DELETE", "/v1/buffers/{id}", R("DELETE", f"/v1/buffers/{copy['id']}"))[0]
              == 204, "delete the copy")
        for payload, want in [({"size": 16, "device": len(devices)}, 422),
                              ({"size": 16, "device": "0"}, 400),
                              ({"copy_of": bid2, "size": 16}, 400),
                              ({"copy_of": "nope"}, 404)]:
            st, _, body = c.conform("POST", "/v1/buffers", R(
                "POST", "/v1/buffers", json.dumps(payload).encode(), J), repr(payload))
            check(st == want, f"create {payload!r}: {st}, not {want}: {body[:200]!r}")
        for payload, headers, want in [
                (b"{}", J, 400), (b'{"size": 0}', J, 400), (b'{"size": 2097152}', J, 413),
                (b'{"size": 1', J, 400), (b'{"size": 16, "bogus": 1}', J, 400),
                (b'{"size": 16, "alignment": 3}', J, 422), (b"abc", {"Content-Type": "text/plain"},
                                                             415), (b"", J, 400)]:
            st, _, body = c.conform("POST", "/v1/buffers", R("POST", "/v1/buffers", payload,
                                                               headers), repr(payload))
            check(st == want, f"create {payload!r}: {st}, not {want}: {body[:200]!r}")
        # Octets without Content-Length (chunked): 411. The server may answer
        # and close before reading the body, so the whole request goes in one
        # write and a failed send is no failure.
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
        try:
            sock.sendall(b"POST /v1/buffers HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/octet-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        except OSError:
            pass
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        reply = (resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        sock.close()
        check(c.conform("POST", "/v1/buffers", reply)[0] == 411, f"chunked create: {reply[0]}")

        st, _, body = c.conform("GET", "/v1/buffers", R("GET", "/v1/buffers?limit=1"))
        check(st == 200 and "next_cursor" in json.loads(body), f"list page: {body!r}")
        cursor = json.loads(body)["next_cursor"]
        c.conform("GET", "/v1/buffers", R("GET", f"/v1/buffers?limit=1&cursor={cursor}"))
        check(c.conform("GET", "/v1/buffers", R("GET", "/v1/buffers?limit=0"))[0] == 400, "limit=0")
        c.conform("GET", "/v1/buffers/{id}/meta", R("GET", f"/v1/buffers/{bid}/meta"))
        c.conform("GET", "/v1/buffers/{id}/meta", R("GET", "/v1/buffers/nope/meta"))

        T = "/v1/buffers/{id}"

        def put(path, payload, headers):
            """Uploads back to back: each gives up its writer claim before its
            reply, so none of these may see 409."""
            return R("PUT", path, payload, headers)

        for path, payload, headers, want in [
                (f"/v1/buffers/{bid}", b"\x00" * 4096, O, 200),
                (f"/v1/buffers/{bid}", b"0123456789", dict(O, **{"Content-Range": "bytes 0-9/4096"}),
                 200),
                (f"/v1/buffers/{bid}?offset=10", b"abc", {}, 200),
                (f"/v1/buffers/{bid}", b"0123456789", dict(O, **{"Content-Range": "bytes 0-9/8192"}),
                 416),
                (f"/v1/buffers/{bid}", b"0123", dict(O, **{"Content-Range": "bytes nonsense"}), 400),
                (f"/v1/buffers/{bid}?offset=5000", b"x", O, 416),
                (f"/v1/buffers/{bid}", b"x" * 5000, O, 413),
                (f"/v1/buffers/{bid}", b"x", {"Content-Type": "text/plain"}, 415),
                ("/v1/buffers/0123456789abcdef0123456789abcdef", b"x", O, 404)]:
            st, _, body = c.conform("PUT", T, put(path, payload, headers), path)
            check(st == want, f"PUT {path} {headers}: {st}, not {want}: {body[:200]!r}")

        st, hdrs, body = c.conform("GET", T, R("GET", f"/v1/buffers/{bid}"))
        check(st == 200 and len(body) == 4096 and body[:10] == b"0123456789", "download")
        st, hdrs, body = c.conform("GET", T, R("GET", f"/v1/buffers/{bid}",
                                                headers={"Range": "bytes=2-5"}))
        check(st == 206 and body == b"2345" and hdrs["content-range"] == "bytes 2-5/4096",
              f"range: {st} {hdrs.get('content-range')}")
        st, hdrs, _ = c.conform("GET", T, R("GET", f"/v1/buffers/{bid}",
                                             headers={"Range": "bytes=9999-"}))
        check(st == 416 and hdrs["content-range"] == "bytes */4096", f"416: {hdrs}")
        st, hdrs, _ = c.conform("HEAD", T, R("HEAD", f"/v1/buffers/{bid}"))
        check(st == 200 and hdrs["content-length"] == "4096", f"HEAD: {st} {hdrs}")
        c.conform("HEAD", T, R("HEAD", f"/v1/buffers/{bid}", headers={"Range": "bytes=0-0"}))
        c.conform("GET", T, R("GET", "/v1/buffers/nope"))

        # Arrays (.npy both ways, PATCH of the description) and versions.
        def npy(descr, shape, data):
            d = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape))
            d = d.ljust(64 * ((10 + len(d) + 1 + 63) // 64) - 11) + "\n"
            return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode() + data
        N = {"Content-Type": "application/x-npy"}
        st, hdrs, body = c.conform("POST", "/v1/buffers", R(
            "POST", "/v1/buffers", npy("<f4", "(4, 2)", b"\x00" * 32), N))
        arr = json.loads(body)
        check(st == 201 and arr["dtype"] == "f32" and arr["shape"] == [4, 2], f"npy: {body!r}")
        aid = arr["id"]
        for payload, want in [(npy(">f4", "(2,)", b"\x00" * 8), 422),
                              (npy("<f4", "(3,)", b"\x00" * 8), 400), (b"not npy", 400)]:
            st, _, body = c.conform("POST", "/v1/buffers", R("POST", "/v1/buffers", payload, N))
            check(st == want, f"npy create {payload[:60]!r}: {st}, not {want}: {body[:200]!r}")
        st, _, body = c.conform("POST", "/v1/buffers", R("POST", "/v1/buffers", json.dumps(
            {"dtype": "i32", "shape": [2, 3]}).encode(), J))
        check(st == 201 and json.loads(body)["size"] == 24, f"dtype+shape: {body!r}")
        c.conform("DELETE", T, R("DELETE", "/v1/buffers/" + json.loads(body)["id"]))
        st, hdrs, body = c.conform("GET", T, R("GET", f"/v1/buffers/{aid}",
                                                headers={"Accept": "application/x-npy"}))
        check(st == 200 and body == npy("<f4", "(4, 2)", b"\x00" * 32), f"npy GET: {body!r}")
        etag = hdrs["etag"]
        st, _, _ = c.conform("GET", T, R("GET", f"/v1/buffers/{aid}", headers={
            "Accept": "application/x-npy", "If-None-Match": etag}))
        check(st == 304, f"If-None-Match: {st}")
        c.conform("HEAD", T, R("HEAD", f"/v1/buffers/{aid}", headers={"If-None-Match": etag[:-5] + '"'}))
        c.conform("GET", "/v1/buffers/{id}/meta", R("GET", f"/v1/buffers/{aid}/meta",
                                                    headers={"If-None-Match": etag[:-5] + '"'}))
        st, _, _ = c.conform("GET", T, R("GET", f"/v1/buffers/{bid2}",
                                          headers={"Accept": "application/x-npy"}))
        check(st == 406, f"npy of raw bytes: {st}")
        c.conform("HEAD", T, R("HEAD", f"/v1/buffers/{bid2}", headers={"Accept": "application/x-npy"}))
        M = "/v1/buffers/{id}/meta"
        for patch, headers, want in [({"shape": [8]}, J, 200), ({"dtype": "u8"}, J, 200),
                                     ({"dtype": "f32", "shape": [3]}, J, 422),
                                     ({"dtype": "f32"}, dict(J, **{"If-Match": '"v1"'}), 412),
                                     ({"nope": 1}, J, 400), ({"dtype": None}, J, 200)]:
            st, _, body = c.conform("PATCH", M, R("PATCH", f"/v1/buffers/{aid}/meta",
                                                  json.dumps(patch).encode(), headers), str(patch))
            check(st == want, f"PATCH {patch}: {st}, not {want}: {body[:200]!r}")
        c.conform("PATCH", M, R("PATCH", "/v1/buffers/nope/meta", b'{"dtype": "u8"}', J))
        # Residency with tiers off: on the device already, nowhere else to go.
        P = "/v1/buffers/{id}/residency"
        for req, want in [({"tier": "device"}, 200), ({"tier": "host"}, 422),
                          ({"tier": "gpu"}, 400), ({"nope": 1}, 400)]:
            st, _, body = c.conform("POST", P, R("POST", f"/v1/buffers/{aid}/residency",
                                                 json.dumps(req).encode(), J), str(req))
            check(st == want, f"residency {req}: {st}, not {want}: {body[:200]!r}")
        c.conform("POST", P, R("POST", "/v1/buffers/nope/residency", b'{"tier": "device"}', J))
        st, _, _ = c.conform("PUT", T, R("PUT", f"/v1/buffers/{aid}", npy("<i4", "(8,)", b"\x01" * 32), N))
        check(st == 200, f"npy PUT: {st}")
        st, _, _ = c.conform("PUT", T, R("PUT", f"/v1/buffers/{aid}", b"\x00" * 32,
                                          dict(O, **{"If-Match": '"v1"'})))
        check(st == 412, f"stale PUT: {st}")
        st, _, _ = c.conform("DELETE", T, R("DELETE", f"/v1/buffers/{aid}", headers={"If-Match": '"v1"'}))
        check(st == 412, f"stale DELETE: {st}")
        check(c.conform("DELETE", T, R("DELETE", f"/v1/buffers/{aid}"))[0] == 204, "delete array")

        # Kernels and runs.
        st, _, body = c.conform("GET", "/v1/kernels", R("GET", "/v1/kernels"))
        names = [k["name"] for k in json.loads(body)["kernels"]]
        check("fill" in names and "sum" in names, f"kernels: {names}")
        c.conform("GET", "/v1/kernels/{name}", R("GET", "/v1/kernels/fill"))
        c.conform("GET", "/v1/kernels/{name}", R("GET", "/v1/kernels/no-such-kernel"))
        # User kernels: define (and what is refused), describe, run, delete.
        sq = {"name": "contract_sq", "in": "f32 x", "out": "f32 y", "body": "y = x * x"}
        # The same definition again is that kernel (200), another is a 409.
        for d, want in [(sq, 201), (sq, 200), (dict(sq, body="y = x"), 409),
                        (dict(sq, name="axpy"), 409),
                        (dict(sq, name="bad", body="y = x +"), 422), ({"name": "q"}, 400),
                        (dict(sq, name="big", body="y = x" + " " * 20000), 413)]:
            st, hdrs, body = c.conform("POST", "/v1/kernels", R("POST", "/v1/kernels",
                                                                 json.dumps(d).encode(), J))
            check(st == want, f"define {d['name']}: {st}, not {want}: {body[:200]!r}")
        # A definition missing what its kind needs is a 400 that the schema
        # predicts: a client validating against the spec never sends it.
        red = {"name": "contract_red", "kind": "reduction", "in": "f32 x", "out": "f32 s",
               "map": "x", "reduce": "a + b", "identity": "0"}
        check(not c.request_errors("POST", "/v1/kernels", sq), "the spec refuses a valid kernel")
        check(not c.request_errors("POST", "/v1/kernels", red),
              "the spec refuses a valid reduction")
        for d in [{k: v for k, v in sq.items() if k != "body"},
                  {k: v for k, v in red.items() if k != "identity"},
                  {k: v for k, v in red.items() if k != "map"}]:
            st, _, body = c.conform("POST", "/v1/kernels", R("POST", "/v1/kernels",
                                                             json.dumps(d).encode(), J))
            check(st == 400, f"define without a field: {st}, not 400: {body[:200]!r}")
            check(c.request_errors("POST", "/v1/kernels", d),
                  f"the spec accepts a definition the server refuses (400 {body[:120]!r}): {d}")
        c.conform("GET", "/v1/kernels/{name}", R("GET", "/v1/kernels/contract_sq"))
        user_run = {"kernel": "contract_sq", "args": {"x": bid, "y": bid, "n": 8}}
        st, _, body = c.conform("POST", "/v1/runs", R("POST", "/v1/runs",
                                                       json.dumps(user_run).encode(), J))
        check(st == 200, f"user kernel run: {st} {body[:200]!r}")
        for path, want in [("/v1/kernels/contract_sq", 204), ("/v1/kernels/contract_sq", 404),
                           ("/v1/kernels/axpy", 409)]:
            st, _, _ = c.conform("DELETE", "/v1/kernels/{name}", R("DELETE", path))
            check(st == want, f"DELETE {path}: {st}, not {want}")

        fill = {"kernel": "fill", "args": {"x": bid, "n": 1024, "dtype": "f32", "value": 2}}
        st, hdrs, body = c.conform("POST", "/v1/runs", R("POST", "/v1/runs",
                                                           json.dumps(fill).encode(), J))
        check(st == 200 and hdrs.get("server-timing", "").startswith("device;dur="),
              f"run: {st} {hdrs}")
        rid = json.loads(body)["id"]
        pipeline = {"steps": [fill, {"kernel": "sum", "args": {"x": bid, "n": 1024,
                                                               "dtype": "f32"}}]}
        st, _, body = c.conform("POST", "/v1/runs", R("POST", "/v1/runs",
                                                       json.dumps(pipeline).encode(), J))
        check(st == 200 and json.loads(body)["result"]["value"] == 2048, f"pipeline: {body!r}")
        st, hdrs, body = c.conform("POST", "/v1/runs", R("POST", "/v1/runs", json.dumps(
            dict(fill, wait=False)).encode(), J))
        check(st == 202 and hdrs["location"] == "/v1/runs/" + json.loads(body)["id"], "202")
        queued = json.loads(body)["id"]
        for bad, want in [({"kernel": 1}, 400), ({"kernel": "fill", "wait": "yes"}, 400),
                          ({"kernel": "no-such"}, 422), ({"steps": []}, 400),
                          ({"kernel": "fill", "steps": [fill]}, 400),
                          ({"kernel": "fill", "args": {"x": "0" * 32, "n": 1, "dtype": "f32",
                                                       "value": 0}}, 404),
                          ({"kernel": "fill", "args": {"x": bid, "n": 99999, "dtype": "f32",
                                                       "value": 0}}, 422),
                          ({"kernel": "fill", "args": {"x": bid, "n": 1, "dtype": "f32",
                                                       "value": 0, "zzz": 1}}, 422)]:
            st, _, body = c.conform("POST", "/v1/runs", R("POST", "/v1/runs",
                                                           json.dumps(bad).encode(), J), str(bad))
            check(st == want, f"run {bad}: {st}, not {want}: {body[:200]!r}")
        c.conform("POST", "/v1/runs", R("POST", "/v1/runs", b"kernel=fill",
                                         {"Content-Type": "application/x-www-form-urlencoded"}))
        c.conform("GET", "/v1/runs/{id}", R("GET", f"/v1/runs/{rid}"))
        c.conform("GET", "/v1/runs/{id}", R("GET", f"/v1/runs/{queued}"))
        c.conform("GET", "/v1/runs/{id}", R("GET", "/v1/runs/nope"))
        c.conform("GET", "/v1/runs/{id}", R("GET", f"/v1/runs/{rid}?wait=1"))
        c.conform("GET", "/v1/runs/{id}", R("GET", f"/v1/runs/{rid}?wait=soon"))
        st, _, body = c.conform("GET", "/v1/runs", R("GET", "/v1/runs?limit=1"))
        check(st == 200 and len(json.loads(body)["runs"]) == 1, "GET /v1/runs?limit=1")
        c.conform("GET", "/v1/runs", R("GET", "/v1/runs?cursor=nope"))
        check(c.conform("DELETE", "/v1/runs/{id}", R("DELETE", f"/v1/runs/{rid}"))[0] == 204,
              "forget a run")
        check(c.conform("DELETE", "/v1/runs/{id}", R("DELETE", f"/v1/runs/{rid}"))[0] == 404,
              "forget it again")

        for b in (bid, bid2):
            check(c.conform("DELETE", T, R("DELETE", f"/v1/buffers/{b}"))[0] == 204, "delete")
        check(c.conform("DELETE", T, R("DELETE", f"/v1/buffers/{bid}"))[0] == 404, "delete again")

        # Any path: 404 for unknown paths, 405 with Allow for unknown methods.
        st, hdrs, body = R("DELETE", "/healthz")
        check(st == 405 and "GET" in hdrs.get("allow", ""), f"405: {st} {hdrs}")
        problem = json.loads(body)
        check(problem["type"].endswith("/method-not-allowed") and problem["status"] == 405,
              f"405 body: {problem}")
        st, _, body = R("GET", "/v2/nothing")
        check(st == 404 and json.loads(body)["type"].endswith("/not-found"), "unknown path")

    # With tokens: 401 with WWW-Authenticate where the spec says so.
    with Server(binary, "--tokens", "contract-token:team-a", "--metrics-token", "m-token") as srv:
        for method, path, template in [("GET", "/v1/buffers", "/v1/buffers"),
                                       ("GET", "/v1/kernels", "/v1/kernels"),
                                       ("GET", "/metrics", "/metrics")]:
            st, hdrs, _ = c.conform(method, template, srv.request(method, path))
            check(st == 401 and hdrs.get("www-authenticate", "").startswith("Bearer"),
                  f"{path} without a token: {st}")
        st, _, _ = c.conform("GET", "/v1/kernels", srv.request(
            "GET", "/v1/kernels", headers={"Authorization": "Bearer contract-token"}))
        check(st == 200, f"with the token: {st}")
        check(c.conform("GET", "/healthz", srv.request("GET", "/healthz"))[0] == 200, "public")

    # Tiers on: a buffer spilled to the host tier and back, pinned; a buffer
    # in use cannot move (409 is documented, not provoked here).
    J = {"Content-Type": "application/json"}
    with Server(binary, "--host-tier", "16M") as srv:
        st, _, body = srv.request("POST", "/v1/buffers", json.dumps({"size": 4096}).encode(), J)
        check(st == 201, f"tiers on, create: {st}")
        bid = json.loads(body)["id"]
        P = "/v1/buffers/{id}/residency"
        for req, tier in [({"tier": "host"}, "host"), ({"tier": "device", "pin": True}, "device"),
                          ({"tier": "disk"}, None)]:
            st, _, body = c.conform("POST", P, srv.request(
                "POST", f"/v1/buffers/{bid}/residency", json.dumps(req).encode(), J), str(req))
            check(st == (200 if tier else 422), f"tiers on, residency {req}: {st}")
            check(not tier or json.loads(body)["tier"] == tier, f"residency {req}: {body!r}")

    # Raw modules: 403 without --allow-raw-kernels; with it, the host backend
    # answers 501 for a module, and what the body gets wrong comes first.
    J = {"Content-Type": "application/json"}
    saxpy = {"source": 'extern "C" __global__ void k(float *x) { x[0] = 1; }'}
    raw_run = {"module": "0123456789abcdef", "function": "k", "grid": [1], "block": [1],
               "args": [{"buffer": "0" * 32}]}
    with Server(binary) as srv:
        for method, path, template, body in [
                ("POST", "/v1/modules", "/v1/modules", saxpy),
                ("GET", "/v1/modules", "/v1/modules", None),
                ("POST", "/v1/runs", "/v1/runs", raw_run)]:
            st, _, _ = c.conform(method, template, srv.request(
                method, path, json.dumps(body).encode() if body else None, J if body else None))
            check(st == 403, f"{method} {path} without --allow-raw-kernels: {st}")
    with Server(binary, "--allow-raw-kernels") as srv:
        for body, want in [(saxpy, 501), ({"source": 1}, 400), ({"nope": 1}, 400),
                           (dict(saxpy, options=["-I/etc"]), 422),
                           ({"source": "#include <x.h>"}, 422)]:
            st, _, rb = c.conform("POST", "/v1/modules", srv.request(
                "POST", "/v1/modules", json.dumps(body).encode(), J), str(body))
            check(st == want, f"module {body}: {st}, not {want}: {rb[:200]!r}")
        st, _, body = c.conform("GET", "/v1/modules", srv.request("GET", "/v1/modules"))
        check(st == 200 and json.loads(body)["modules"] == [], f"list modules: {st}")
        for method in ["GET", "DELETE"]:
            st, _, _ = c.conform(method, "/v1/modules/{id}", srv.request(
                method, "/v1/modules/0123456789abcdef"))
            check(st == 404, f"{method} unknown module: {st}")
        st, _, _ = c.conform("POST", "/v1/runs", srv.request(
            "POST", "/v1/runs", json.dumps(raw_run).encode(), J))
        check(st == 404, f"raw run of an unknown module: {st}")

    # Regions: 403 without --allow-shm; with it, a segment made here is
    # registered, moved into a buffer, described and unregistered.
    seg = shared_memory.SharedMemory(create=True, size=4096)
    try:
        reg = {"shm": "/" + seg.name, "size": 4096}
        with Server(binary) as srv:
            st, _, _ = c.conform("POST", "/v1/regions", srv.request(
                "POST", "/v1/regions", json.dumps(reg).encode(), J))
            check(st == 403, f"a region without --allow-shm: {st}")
            st, _, rb = c.conform("GET", "/v1/regions", srv.request("GET", "/v1/regions"))
            check(st == 200 and json.loads(rb)["shm"] == {"enabled": False},
                  f"region summary without --allow-shm: {st} {rb[:200]!r}")
        with Server(binary, "--allow-shm") as srv:
            for body, want in [(reg, 201), ({"size": 1}, 400), (dict(reg, size=8192), 422),
                               ({"cuda_ipc": "A" * 86 + "==", "size": 1}, 501)]:
                st, _, rb = c.conform("POST", "/v1/regions", srv.request(
                    "POST", "/v1/regions", json.dumps(body).encode(), J), str(body))
                check(st == want, f"region {body}: {st}, not {want}: {rb[:200]!r}")
                if st == 201:
                    rid = json.loads(rb)["id"]
            st, _, rb = c.conform("GET", "/v1/regions", srv.request("GET", "/v1/regions"))
            with open("/proc/sys/kernel/random/boot_id") as f:
                host = f.read().strip()
            summary = json.loads(rb)
            check(st == 200 and summary["shm"] == {"enabled": True, "host": host}
                  and summary["usage"] == {"regions": 1, "pinned": 4096}
                  and [r["id"] for r in summary["regions"]] == [rid],
                  f"region summary: {st} {rb[:200]!r}, this host {host}")
            st, _, rb = srv.request("POST", "/v1/buffers", b'{"size": 4096}', J)
            bid = json.loads(rb)["id"]
            for body, want in [({"from": {"region": rid}, "to": {"buffer": bid}, "bytes": 4096},
                                200),
                               ({"from": {"buffer": bid, "offset": 1}, "to": {"region": rid},
                                 "bytes": 4096}, 416),
                               ({"from": {"region": rid}, "to": {"buffer": bid}}, 400),
                               ({"from": {"region": "0" * 32}, "to": {"buffer": bid},
                                 "bytes": 1}, 404)]:
                st, _, rb = c.conform("POST", "/v1/transfers", srv.request(
                    "POST", "/v1/transfers", json.dumps(body).encode(), J), str(body))
                check(st == want, f"transfer {body}: {st}, not {want}: {rb[:200]!r}")
            for method, want in [("GET", 200), ("DELETE", 204), ("GET", 404), ("DELETE", 404)]:
                st, _, _ = c.conform(method, "/v1/regions/{id}", srv.request(
                    method, f"/v1/regions/{rid}"))
                check(st == want, f"{method} region: {st}, not {want}")
    finally:
        seg.close()
        seg.unlink()

    every = {(m, p) for p, item in c.spec["paths"].items() for m in item if m != "parameters"}
    check(every <= c.seen, f"operations never exercised: {sorted(every - c.seen)}")
    print(f"test_contract: ok ({c.checked} replies checked against the spec)")


if __name__ == "__main__":
    main()
