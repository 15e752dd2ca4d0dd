"""Instances that know who they are: --instance and a boot per start, in
/readyz, in Gpuhttpd-Instance on every answer and in the prefix of every
buffer and run id. Two servers (instances 1 and 2) over real HTTP: each
answers an id of the other 421 naming the owner, an id of an earlier start
of itself (after a restart) 410, and an id that never existed 404, each as
problem+json; ids in a request body (a run's buffers, a copy's source)
and in ?near= get the same answers, and a run over buffers of both
instances is 422."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check  # noqa: E402

ID = re.compile(r"^i(\d{4})-([0-9a-f]{8})-[0-9a-f]{32}$")
OCTETS = {"Content-Type": "application/octet-stream"}


def problem(srv, path, status, *words):
    st, hdrs, body = srv.request("GET", path)
    check(st == status, f"GET {path}: {st}, not {status}: {body[:300]!r}")
    check(hdrs.get("content-type") == "application/problem+json", f"{path}: {hdrs}")
    text = body.decode()
    for w in words:
        check(w in text, f"GET {path}: {w!r} not in {text}")
    return text


def buffer(srv, data):
    st, _, raw = srv.request("POST", "/v1/buffers", data, OCTETS)
    check(st == 201, f"create: {st} {raw[:200]!r}")
    return json.loads(raw)["id"]


def main():
    binary = sys.argv[1]
    one = Server(binary, "--instance", "1")
    two = Server(binary, env={"GHD_INSTANCE": "2"})
    try:
        boots = {}
        for srv, n in ((one, 1), (two, 2)):
            st, hdrs, ready = srv.json("GET", "/readyz")
            check(st == 200 and ready["instance"] == n and re.match(r"^[0-9a-f]{8}$", ready["boot"]),
                  f"readyz: {st} {ready}")
            check(hdrs.get("gpuhttpd-instance") == str(n), f"readyz headers: {hdrs}")
            boots[n] = ready["boot"]
            # Every answer carries it, problems and unmatched paths too.
            st, hdrs, _ = srv.request("GET", "/no/such/path")
            check(st == 404 and hdrs.get("gpuhttpd-instance") == str(n), f"404: {hdrs}")
        check(boots[1] != boots[2], f"two starts drew one boot: {boots}")

        a = buffer(one, b"instance one")
        b = buffer(two, b"instance two")
        for bid, n in ((a, 1), (b, 2)):
            m = ID.match(bid)
            check(m and int(m.group(1)) == n and m.group(2) == boots[n], f"id {bid} of {n}")
        st, hdrs, body = one.json("POST", "/v1/runs", {"kernel": "fill", "args": {
            "x": a, "n": 3, "dtype": "u8", "value": 7}})
        check(st == 200, f"run: {st} {body}")
        rid = body["id"]
        check(ID.match(rid) and rid.startswith(f"i0001-{boots[1]}-"), f"run id {rid}")

        # The owner serves; the other instance names the owner.
        st, _, data = one.request("GET", f"/v1/buffers/{a}")
        check(st == 200 and data == b"\x07\x07\x07" + b"tance one", f"owner: {st} {data!r}")
        for path in (f"/v1/buffers/{a}", f"/v1/buffers/{a}/meta", f"/v1/runs/{rid}"):
            problem(two, path, 421, "instance 1", "misdirected-request")
        st, _, _ = two.request("DELETE", f"/v1/buffers/{a}")
        check(st == 421, f"DELETE elsewhere: {st}")
        st, _, _ = two.request("PUT", f"/v1/buffers/{a}", b"x" * 12, OCTETS)
        check(st == 421, f"PUT elsewhere: {st}")
        problem(one, f"/v1/buffers/{b}", 421, "instance 2")
        # Never existed: 404, with or without a prefix of this boot.
        problem(one, "/v1/buffers/nope", 404, "not-found")
        problem(one, f"/v1/buffers/i0001-{boots[1]}-{'0' * 32}", 404, "not-found")

        # Ids in a body and in ?near= are checked as the path's are: a run
        # on another instance's buffer is 421 naming it, one over buffers of
        # two instances 422, a copy of another's buffer 421; near= another
        # instance's buffer 421, a never-made one 404.
        fill = {"kernel": "fill", "args": {"x": a, "n": 3, "dtype": "u8", "value": 1}}
        st, hdrs, body = two.json("POST", "/v1/runs", fill)
        check(st == 421 and "owned by instance 1" in body["detail"], f"run elsewhere: {st} {body}")
        mixed = {"steps": [fill, {"kernel": "fill", "args": {"x": b, "n": 3, "dtype": "u8",
                                                            "value": 2}}]}
        for srv in (one, two):
            st, _, body = srv.json("POST", "/v1/runs", mixed)
            check(st == 422 and "instances 1 and 2" in body["detail"], f"mixed: {st} {body}")
        st, _, body = two.json("POST", "/v1/buffers", {"copy_of": a})
        check(st == 421 and "owned by instance 1" in body["detail"], f"copy_of: {st} {body}")
        st, _, body = two.json("POST", f"/v1/buffers?near={a}", {"size": 8})
        check(st == 421 and "near" in body["detail"], f"near elsewhere: {st} {body}")
        st, _, body = one.json("POST", f"/v1/buffers?near=i0001-{boots[1]}-{'0' * 32}", {"size": 8})
        check(st == 404 and "near" in body["detail"], f"near never made: {st} {body}")
        st, _, body = one.json("POST", f"/v1/buffers?near={a}", {"size": 8})
        check(st == 201 and body["id"].startswith(f"i0001-{boots[1]}-"), f"near: {st} {body}")
        st, _, raw = one.request("POST", f"/v1/buffers?near={a}", b"beside", OCTETS)
        check(st == 201, f"near, octet-stream: {st} {raw[:200]!r}")

        # A restart of instance 1: a new boot, its old ids 410.
        one.stop()
        one.dir.cleanup()
        one = Server(binary, "--instance", "1")
        st, _, ready = one.json("GET", "/readyz")
        check(ready["instance"] == 1 and ready["boot"] != boots[1], f"restart: {ready}")
        for path in (f"/v1/buffers/{a}", f"/v1/runs/{rid}"):
            problem(one, path, 410, "earlier start of instance 1", "does not survive a restart")
        st, _, body = one.json("POST", "/v1/runs", fill)
        check(st == 410 and "earlier start" in body["detail"], f"run, old id: {st} {body}")
        st, _, body = one.json("POST", f"/v1/buffers?near={a}", {"size": 8})
        check(st == 410, f"near, old id: {st} {body}")
        problem(two, f"/v1/buffers/{a}", 421, "instance 1")
        st, _, data = two.request("GET", f"/v1/buffers/{b}")
        check(st == 200 and data == b"instance two", f"instance 2 serves on: {st} {data!r}")
    finally:
        for srv in (one, two):
            if srv.proc.poll() is None:
                srv.stop()
    print("ok")


if __name__ == "__main__":
    main()
