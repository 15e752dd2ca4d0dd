"""A gpuhttpd in memory behind a MockTransport: buffers (create, meta,
ranged PUT and GET, delete, list, copies) on ``ndevices`` devices, runs, and
same-host regions (segments the client made, mapped here from /dev/shm) with
transfers, as the API describes them, with the faults the client must
survive (a connection cut inside a body, Ctrl-C inside an upload); kernels
and modules are taken as they come. No server binary, no socket."""

from __future__ import annotations

import json
import mmap
import os
import re
import secrets
from typing import Any, Callable
from urllib.parse import parse_qs

import numpy as np

from gpuhttpd import Request, Response

# Ids start with the owner prefix, as the server's do: instance 0, a boot.
OWNER = "i0000-5f2c9a1e-"

_ITEM = {"bool": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2, "i32": 4,
         "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


def problem(status: int, slug: str, detail: str, **headers: str) -> Response:
    """A problem+json answer as the server writes one."""
    body = {"type": f"/problems/{slug}", "title": slug, "status": status, "detail": detail,
            "request_id": "feedfacefeedface"}
    return Response(status, {"Content-Type": "application/problem+json", **headers},
                    content=json.dumps(body).encode())


class CutStream:
    """A body that gives `limit` bytes of `data`, then a reset connection."""

    def __init__(self, data: bytes, limit: int) -> None:
        self.data, self.limit, self.pos = data, limit, 0

    def readinto(self, b: memoryview, /) -> int:
        if self.pos >= self.limit:
            raise ConnectionResetError(104, "Connection reset by peer")
        n = min(len(b), self.limit - self.pos, len(self.data) - self.pos)
        b[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n

    def close(self) -> None:
        pass


class FakeServer:
    """The handler of a MockTransport. ``requests`` records what came;
    ``cut_put`` / ``cut_get`` map the number of a PUT / GET of bytes (from 1)
    to the body bytes after which its connection is cut; ``interrupt_put``
    the PUT during which Ctrl-C is pressed (after ``interrupt_after`` bytes);
    ``run`` answers POST /v1/runs."""

    def __init__(self) -> None:
        self.buffers: dict[str, dict[str, Any]] = {}
        self.data: dict[str, bytearray] = {}
        self.requests: list[Request] = []
        self.puts: list[tuple[int, int]] = []  # (first, last) of each completed PUT
        self.cut_put: dict[int, int] = {}
        self.cut_get: dict[int, int] = {}
        self.interrupt_put = 0
        self.interrupt_after = 0
        self.put_count = 0
        self.get_count = 0
        # Another client's doing, called as PUT / GET number n (from 1)
        # arrives, before it is answered: a write in between, say.
        self.before_put: dict[int, Callable[[], None]] = {}
        self.before_get: dict[int, Callable[[], None]] = {}
        self.before_transfer: dict[int, Callable[[], None]] = {}
        # Regions: what GET /v1/regions says ({"enabled": False}: off), the
        # mappings of the registered ones, the answer to give registrations
        # instead (a problem), and every transfer's body.
        self.shm: dict[str, Any] = {"enabled": False}
        self.regions: dict[str, mmap.mmap] = {}
        self.refuse_regions: Response | None = None
        self.transfers: list[dict[str, Any]] = []
        self.ndevices = 1
        self.owner = OWNER  # the prefix of the ids it makes
        self.run: Callable[[dict[str, Any]], Response] = \
            lambda body: Response(200, json={"id": "r" * 32, "status": "succeeded",
                                             "result": {"n": 1}, "timing": {}})

    def __call__(self, req: Request) -> Response:
        self.requests.append(req)
        path = req.path.split("?")[0]
        m = re.fullmatch(r"/v1/buffers/((?:i[0-9]{4}-[0-9a-f]{8}-)?[0-9a-f]{32})(/meta)?", path)
        if path == "/v1/buffers" and req.method == "POST":
            if req.headers.get("Content-Type") == "application/octet-stream":
                return self.create_raw(req)
            return self.create(req.json())
        if path == "/v1/devices" and req.method == "GET":
            return Response(200, json={"devices": [self.device(k) for k in range(self.ndevices)]})
        if path == "/v1/buffers" and req.method == "GET":
            return Response(200, json={"buffers": list(self.buffers.values())})
        if path == "/v1/runs" and req.method == "POST":
            return self.run(req.json())
        if path.startswith("/v1/regions") or path == "/v1/transfers":
            return self.region_request(req, path)
        if path.startswith(("/v1/kernels", "/v1/modules")):
            return self.definition_request(req, path)
        if m is None or m.group(1) not in self.buffers:
            return problem(404, "not-found", f"no buffer {path}")
        bid = m.group(1)
        meta = self.buffers[bid]
        if m.group(2):
            if req.method == "PATCH":
                meta.update(req.json())
                meta["version"] += 1
            return self.meta_answer(meta, 200)
        if req.method == "DELETE":
            del self.buffers[bid]
            return Response(204)
        if req.method == "PUT":
            return self.put(req, bid)
        if req.method == "GET":
            return self.get(req, bid)
        return problem(405, "method-not-allowed", req.method)

    def meta_answer(self, meta: dict[str, Any], status: int) -> Response:
        return Response(status, {"ETag": f'"v{meta["version"]}"'}, json=meta)

    def device(self, k: int) -> dict[str, Any]:
        used = sum(m["size"] for m in self.buffers.values() if m["device"] == k)
        return {"index": k, "ordinal": k, "name": f"host device {k}", "uuid": f"host-{k}",
                "architecture": "host", "memory": {"total": 1 << 30, "free": (1 << 30) - used},
                "pool": {"limit": 1 << 30, "used": used,
                         "buffers": sum(m["device"] == k for m in self.buffers.values())},
                "state": "ready", "peer_access": [i for i in range(self.ndevices) if i != k]}

    def create(self, body: dict[str, Any]) -> Response:
        device = body.get("device", 0)
        if not 0 <= device < self.ndevices:
            return problem(422, "invalid-argument", f"'device' {device}: this server has "
                           f"devices 0 to {self.ndevices - 1}")
        if "copy_of" in body:
            src = self.buffers.get(body["copy_of"])
            if src is None:
                return problem(404, "not-found", f"no buffer {body['copy_of']}")
            copied = {k: src[k] for k in ("dtype", "shape", "size") if k in src}
            made = self.create(dict(copied, device=body.get("device", src["device"]),
                                    **({"ttl_s": body["ttl_s"]} if "ttl_s" in body else {})))
            self.data[made.json()["id"]][:] = self.data[src["id"]]
            return made
        bid = self.owner + secrets.token_hex(16)
        size = body.get("size") or int(np.prod(body["shape"])) * _ITEM[body["dtype"]]
        meta = {"id": bid, "size": size, "alignment": 256, "device": device,
                "created": "2026-01-01T00:00:00Z", "label": body.get("label", ""),
                "version": 1, "uploaded": 0}
        if "dtype" in body:
            meta["dtype"], meta["shape"] = body["dtype"], body["shape"]
        if body.get("ttl_s"):
            meta["expires"] = "2026-01-01T01:00:00Z"
        self.buffers[bid] = meta
        self.data[bid] = bytearray(size)
        return self.meta_answer(meta, 201)

    def write(self, bid: str, data: bytes) -> None:
        """Another client's PUT of the whole buffer."""
        self.data[bid][:] = data
        self.buffers[bid]["version"] += 2

    def receive(self, req: Request, into: bytearray, first: int) -> int:
        """Takes a body of bytes (a PUT's, or a raw POST's, counted as PUTs)
        into ``into`` from byte ``first``, as the socket takes them (the
        client's bar follows), cut or interrupted where the test says."""
        cut = self.cut_put.get(self.put_count)
        interrupt = self.interrupt_put == self.put_count
        got = 0
        assert req.content is not None and not isinstance(req.content, bytes)
        for piece in req.content:
            n = len(piece)
            if cut is not None and got + n > cut:
                raise ConnectionResetError(104, "Connection reset by peer")
            if interrupt and got + n > self.interrupt_after:
                raise KeyboardInterrupt
            into[first + got:first + got + n] = piece
            got += n
        return got

    def create_raw(self, req: Request) -> Response:
        """POST of raw bytes, described by ?dtype=&shape=: the buffer exists
        only once the whole body has come."""
        self.put_count += 1
        self.before_put.pop(self.put_count, lambda: None)()
        q = {k: v[0] for k, v in parse_qs(req.path.partition("?")[2],
                                          keep_blank_values=True).items()}
        data = bytearray(len(req.content or b""))
        got = self.receive(req, data, 0)
        body: dict[str, Any] = {"size": got, "label": q.get("label", "")}
        for k in ("ttl_s", "device"):
            if k in q:
                body[k] = int(q[k])
        if "dtype" in q:
            shape = [int(d) for d in q.get("shape", str(got // _ITEM[q["dtype"]])).split(",") if d]
            if int(np.prod(shape)) * _ITEM[q["dtype"]] != got:
                return problem(422, "invalid-argument", "sizes disagree")
            body.update(dtype=q["dtype"], shape=shape)
        made = self.create(body)
        if made.status == 201:
            self.data[made.json()["id"]][:] = data
        return made

    def put(self, req: Request, bid: str) -> Response:
        self.put_count += 1
        self.before_put.pop(self.put_count, lambda: None)()
        first, last, _ = map(int, re.findall(r"\d+", req.headers["Content-Range"]))
        now = f'"v{self.buffers[bid]["version"]}"'
        if req.headers.get("If-Match") not in (None, now):  # before any byte is taken
            return problem(412, "precondition-failed", "another version", ETag=now)
        got = self.receive(req, self.data[bid], first)
        assert got == last - first + 1, (got, first, last)
        meta = self.buffers[bid]
        if first <= meta["uploaded"] < last + 1:
            meta["uploaded"] = last + 1
        meta["version"] += 2
        self.puts.append((first, last))
        return Response(200, {"ETag": f'"v{meta["version"]}"'},
                        json={"id": bid, "offset": first, "bytes_written": got})

    def get(self, req: Request, bid: str) -> Response:
        self.get_count += 1
        self.before_get.pop(self.get_count, lambda: None)()
        data = bytes(self.data[bid])
        etag = f'"v{self.buffers[bid]["version"]}"'
        start = int(re.findall(r"\d+", req.headers.get("Range", "bytes=0-"))[0])
        if req.headers.get("If-Range") not in (None, etag):  # RFC 9110 13.1.5: all of it
            start = 0
        headers = {"Content-Length": str(len(data) - start), "ETag": etag}
        if start:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        cut = self.cut_get.get(self.get_count)
        stream = CutStream(data[start:], cut if cut is not None else len(data))
        return Response(206 if start else 200, headers, stream=stream)

    def definition_request(self, req: Request, path: str) -> Response:
        """User kernels and raw modules, accepted as they come."""
        if req.method == "DELETE":
            return Response(204)
        body = req.json()
        if path == "/v1/kernels":
            return Response(201, json=body)
        functions = re.findall(r"__global__\s+void\s+(\w+)", body["source"])
        return Response(201, json={"id": secrets.token_hex(8), "build": {},
                                   "functions": [{"name": f} for f in functions]})

    def region_request(self, req: Request, path: str) -> Response:
        if path == "/v1/regions" and req.method == "GET":
            return Response(200, json={"shm": self.shm, "usage": {"regions": len(self.regions),
                                                                  "pinned": 0}})
        if not self.shm["enabled"]:
            return problem(403, "forbidden", "regions are off on this server")
        if path == "/v1/regions" and req.method == "POST":
            if self.refuse_regions is not None:
                return self.refuse_regions
            body = req.json()
            fd = os.open("/dev/shm" + body["shm"], os.O_RDWR)
            try:
                self.regions[rid := secrets.token_hex(16)] = mmap.mmap(fd, body["size"])
            finally:
                os.close(fd)
            return Response(201, json={"id": rid, "kind": "shm", "size": body["size"]})
        if path == "/v1/transfers":
            return self.transfer(req.json())
        rid = path.rsplit("/", 1)[-1]
        if rid not in self.regions:
            return problem(404, "not-found", f"no region with id '{rid}'")
        if req.method == "DELETE":
            self.regions.pop(rid).close()
            return Response(204)
        return Response(200, json={"id": rid, "size": len(self.regions[rid])})

    def transfer(self, body: dict[str, Any]) -> Response:
        self.transfers.append(body)
        self.before_transfer.pop(len(self.transfers), lambda: None)()
        n = body["bytes"]
        ends = []
        for side in ("from", "to"):
            end = body[side]
            kind = "region" if "region" in end else "buffer"
            mem = (self.regions if kind == "region" else self.data).get(end[kind])
            if mem is None:
                return problem(404, "not-found", f"'{side}.{kind}': no {kind} with id "
                                                 f"'{end[kind]}'")
            ends.append((mem, end.get("offset", 0)))
        (src, a), (dst, b) = ends
        headers = {}
        if "buffer" in body["to"]:
            meta = self.buffers[body["to"]["buffer"]]
            if body.get("if_match") not in (None, f'"v{meta["version"]}"'):
                return problem(412, "precondition-failed", "another version")
            meta["version"] += 2
            headers["ETag"] = f'"v{meta["version"]}"'
        dst[b:b + n] = src[a:a + n]
        return Response(200, headers, json={"bytes": n, "seconds": 0.0, "gb_per_s": 0.0})

    def creations(self) -> list[dict[str, Any]]:
        """What each POST /v1/buffers asked for: its query (numbers as
        numbers) and its JSON body, if it has one."""
        out: list[dict[str, Any]] = []
        for r in self.requests:
            path, _, query = r.path.partition("?")
            if r.method != "POST" or path != "/v1/buffers":
                continue
            q = {k: int(v[0]) if k in ("ttl_s", "device") else v[0]
                 for k, v in parse_qs(query, keep_blank_values=True).items()}
            raw = r.headers.get("Content-Type") == "application/octet-stream"
            out.append(q if raw else {**q, **r.json()})
        return out

    def request_paths(self, method: str) -> list[str]:
        return [r.path for r in self.requests if r.method == method]


class FakeTqdm:
    """Stands in for tqdm.tqdm: records every update."""

    made: list[FakeTqdm] = []  # noqa: RUF012 (every bar made, for the test to look at)

    def __init__(self, total: int, initial: int = 0, **kw: Any) -> None:
        self.total, self.n, self.updates, self.closed = total, initial, [], False
        FakeTqdm.made.append(self)

    def update(self, n: int) -> None:
        self.updates.append(n)
        self.n += n

    def close(self) -> None:
        self.closed = True
