"""Instances that say where they live: --advertise-url and --peers over real
HTTP, three instances on loopback that know each other. /readyz carries
the URL; GET /v1/cluster lists the three with their states (and a stopped
one as down); every /v1 answer names the owner of what it is about in
Gpuhttpd-Owner-Url (another instance's id: that instance's URL); with
`Prefer: redirect` an id of another instance is a 307 to the same path and
query at its owner, which a client follows with its method and body; a
listing walks every instance with one cursor (each page's cursor is sent to
the instance it names, as the proxy routes it) and names an instance it
passed over, also a peer that never answered (instance null: no number
known); an advertised URL that is not one stops the start."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, free_ports  # noqa: E402

OCTETS = {"Content-Type": "application/octet-stream"}


def wait_states(srv, want, seconds=15):
    """GET /v1/cluster until each instance number in `want` has its state."""
    deadline = time.monotonic() + seconds
    while True:
        st, _, body = srv.json("GET", "/v1/cluster")
        check(st == 200, f"cluster: {st} {body}")
        states = {i["instance"]: i["state"] for i in body["instances"]}
        if all(states.get(k) == v for k, v in want.items()):
            return body
        check(time.monotonic() < deadline, f"cluster states {states}, not {want}")
        time.sleep(0.1)


def walk(servers, start, limit):
    """Every page of a listing begun at `start`, each cursor sent to the
    instance its prefix names."""
    by_number = {n: srv for n, srv in servers.items()}
    srv, cursor, pages = servers[start], None, []
    while True:
        q = f"?limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        st, hdrs, page = srv.json("GET", "/v1/buffers" + q)
        check(st == 200, f"list {q} at {srv.port}: {st} {page}")
        pages.append(page)
        cursor = page.get("next_cursor")
        if not cursor:
            return pages
        m = re.match(r"^i(\d{4})-[0-9a-f]{8}-s(\d{4})-([0-9a-f]{16}|begin)$", cursor)
        check(m and int(m.group(2)) == start, f"walk cursor {cursor}")
        srv = by_number[int(m.group(1))]
        check(len(pages) < 50, "the walk does not end")


def bad_url_stops_the_start(binary):
    p = subprocess.run([binary, "--port", "0", "--backend", "host", "--advertise-url",
                        "ftp://x"], capture_output=True, text=True, timeout=30)
    check(p.returncode != 0 and "--advertise-url" in p.stderr + p.stdout, f"{p}")
    p = subprocess.run([binary, "--port", "0", "--backend", "host", "--peers",
                        "http://a:1,http://b c"], capture_output=True, text=True, timeout=30)
    check(p.returncode != 0 and "--peers" in p.stderr + p.stdout, f"{p}")


def unanswered_peer_is_named(binary):
    """A peer that never answers (nothing listens at its URL) has no instance
    number: GET /v1/cluster shows it down with instance null, and a listing
    names it in `skipped` (instance null, its state) rather than passing over
    whatever it may hold in silence."""
    port, dead_port = free_ports(2)
    url, dead = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{dead_port}"
    with Server(binary, "--port", str(port), "--instance", "0", "--advertise-url", url,
                "--peers", f"{url},{dead}") as srv:
        deadline = time.monotonic() + 15
        while True:
            st, _, body = srv.json("GET", "/v1/cluster")
            check(st == 200, f"cluster: {st} {body}")
            seen = [i for i in body["instances"] if i["url"] == dead]
            check(len(seen) == 1 and seen[0]["instance"] is None, f"the dead peer: {body}")
            if seen[0]["state"] == "down":
                break
            check(time.monotonic() < deadline, f"the dead peer is not down: {body}")
            time.sleep(0.1)
        for k in range(2):
            st, _, _ = srv.request("POST", "/v1/buffers", f"d{k}".encode(), OCTETS)
            check(st == 201, f"create: {st}")
        for limit in (1, 100):
            pages = walk({0: srv}, 0, limit)
            check(sum(len(p["buffers"]) for p in pages) == 2, f"by {limit}: {pages}")
            skipped = [s for p in pages for s in p.get("skipped", [])]
            check(skipped == [{"instance": None, "url": dead, "state": "down"}],
                  f"the walk by {limit} names the dead peer once: {pages}")


def main():
    binary = sys.argv[1]
    bad_url_stops_the_start(binary)
    unanswered_peer_is_named(binary)
    ports = free_ports(3)
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    peers = ",".join(urls)  # each drops its own
    servers = {k: Server(binary, "--port", str(ports[k]), "--instance", str(k),
                         "--advertise-url", urls[k] + "/", "--peers", peers)
               for k in range(3)}
    try:
        for k, srv in servers.items():
            st, _, ready = srv.json("GET", "/readyz")
            check(st == 200 and ready["url"] == urls[k], f"readyz {k}: {ready}")
        body = wait_states(servers[1], {0: "ready", 1: "ready", 2: "ready"})
        check(body["instance"] == 1 and [i["instance"] for i in body["instances"]] == [1, 0, 2],
              f"order: {body}")
        check([i.get("self", False) for i in body["instances"]] == [True, False, False], f"{body}")
        for i in body["instances"]:
            check(i["url"] == urls[i["instance"]], f"url: {i}")
            st, _, ready = servers[i["instance"]].json("GET", "/readyz")
            check(i["boot"] == ready["boot"], f"boot {i} vs {ready}")

        # Owner URLs: a creation names its instance, an id names its owner.
        ids = {}
        for k, srv in servers.items():
            for j in range(3):
                st, hdrs, raw = srv.request("POST", "/v1/buffers", f"b{k}{j}".encode(), OCTETS)
                check(st == 201 and hdrs.get("gpuhttpd-owner-url") == urls[k], f"{st} {hdrs}")
                ids.setdefault(k, []).append(json.loads(raw)["id"])
        a = ids[2][0]
        st, hdrs, _ = servers[2].request("GET", f"/v1/buffers/{a}/meta")
        check(st == 200 and hdrs.get("gpuhttpd-owner-url") == urls[2], f"owner: {hdrs}")
        st, hdrs, raw = servers[0].request("GET", f"/v1/buffers/{a}")
        check(st == 421 and hdrs.get("gpuhttpd-owner-url") == urls[2] and urls[2] in raw.decode(),
              f"421: {st} {hdrs} {raw!r}")
        st, hdrs, _ = servers[0].request("GET", "/v1/buffers/i0007-0000abcd-" + "0" * 32)
        check(st == 421 and "gpuhttpd-owner-url" not in hdrs, f"unknown owner: {st} {hdrs}")
        st, hdrs, _ = servers[0].request("GET", "/healthz")
        check("gpuhttpd-owner-url" not in hdrs, f"healthz: {hdrs}")

        # Prefer: redirect: a 307 to the owner, which a client follows.
        pref = {"Prefer": "respond-async, redirect"}
        st, hdrs, raw = servers[0].request("GET", f"/v1/buffers/{a}", headers=pref)
        check(st == 307 and hdrs.get("location") == f"{urls[2]}/v1/buffers/{a}" and
              hdrs.get("preference-applied") == "redirect", f"307: {st} {hdrs} {raw!r}")
        check(json.loads(raw) == {"location": hdrs["location"], "instance": 2}, f"{raw!r}")
        st, hdrs, _ = servers[0].request("GET", f"/v1/buffers/{a}", headers={"Prefer": "redirection"})
        check(st == 421, f"another preference: {st}")
        req = urllib.request.Request(servers[0].url(f"/v1/buffers/{a}"), headers=pref)
        with urllib.request.urlopen(req, timeout=20) as r:
            check(r.status == 200 and r.read() == b"b20" and r.headers["Gpuhttpd-Instance"] == "2",
                  "urllib follows the 307 to the owner")
        st, hdrs, _ = servers[1].request("PUT", f"/v1/buffers/{a}?offset=1", b"yz",
                                         {**OCTETS, **pref})
        check(st == 307 and hdrs["location"] == f"{urls[2]}/v1/buffers/{a}?offset=1",
              f"PUT: {st} {hdrs}")
        st, _, data = servers[2].request("PUT", hdrs["location"].split(str(ports[2]), 1)[1],
                                         b"yz", OCTETS)
        check(st == 200, f"PUT at the owner: {st} {data!r}")
        st, _, data = servers[2].request("GET", f"/v1/buffers/{a}")
        check(data == b"byz", f"after the PUT: {data!r}")
        # ?near= names its owner as a path's id does; ids in a body are not looked up.
        st, hdrs, _ = servers[0].request("POST", f"/v1/buffers?near={a}", b"x", OCTETS)
        check(st == 421 and hdrs.get("gpuhttpd-owner-url") == urls[2], f"near: {st} {hdrs}")
        st, hdrs, _ = servers[0].request("POST", f"/v1/buffers?near={a}", b"x",
                                         {**OCTETS, **pref})
        check(st == 307 and hdrs["location"] == f"{urls[2]}/v1/buffers?near={a}", f"{st} {hdrs}")
        st, hdrs, _ = servers[0].json("POST", "/v1/runs", {"kernel": "fill", "args": {
            "x": a, "n": 1, "dtype": "u8", "value": 1}})
        check(st == 421 and "gpuhttpd-owner-url" not in hdrs, f"run elsewhere: {st} {hdrs}")
        # An earlier start's id (this instance's number) is 410 whatever the preference.
        st, _, _ = servers[2].request("GET", "/v1/buffers/i0002-0000abcd-" + "0" * 32, headers=pref)
        check(st == 410, f"gone: {st}")

        # One listing through every instance, begun anywhere, each id once.
        every = sorted(i for v in ids.values() for i in v)
        for start in range(3):
            for limit in (1, 2, 3, 100):
                pages = walk(servers, start, limit)
                got = sorted(b["id"] for p in pages for b in p["buffers"])
                check(got == every, f"walk from {start} by {limit}: {got} != {every}")
        # A cursor of another instance: 421 naming it, 307 with the preference.
        cursor = walk(servers, 0, 3)[0]["next_cursor"]
        st, hdrs, _ = servers[0].request("GET", f"/v1/buffers?cursor={cursor}")
        check(st == 421 and hdrs.get("gpuhttpd-owner-url") == urls[1], f"cursor 421: {st} {hdrs}")
        st, hdrs, _ = servers[0].request("GET", f"/v1/buffers?limit=5&cursor={cursor}",
                                         headers=pref)
        check(st == 307 and hdrs["location"] ==
              f"{urls[1]}/v1/buffers?limit=5&cursor={cursor}", f"cursor 307: {st} {hdrs}")
        st, _, _ = servers[1].request("GET", f"/v1/buffers?cursor={cursor[:-5]}nope!")
        check(st == 400, f"bad walk cursor: {st}")

        # A stopped peer is down, and the walk names it where it passes it.
        servers[2].proc.send_signal(signal.SIGSTOP)
        try:
            for k in (0, 1):  # each looks on its own
                wait_states(servers[k], {0: "ready", 1: "ready", 2: "down"})
            pages = walk(servers, 1, 100)
            got = sorted(b["id"] for p in pages for b in p["buffers"])
            check(got == sorted(ids[0] + ids[1]), f"walk without 2: {got}")
            skipped = [s for p in pages for s in p.get("skipped", [])]
            check(skipped == [{"instance": 2, "url": urls[2], "state": "down"}], f"{skipped}")
        finally:
            servers[2].proc.send_signal(signal.SIGCONT)
        wait_states(servers[0], {2: "ready"})
        print("ok: advertised URLs, /v1/cluster, owner URLs, redirects and listings")
    finally:
        for srv in servers.values():
            srv.stop()


if __name__ == "__main__":
    main()
