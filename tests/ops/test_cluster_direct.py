#!/usr/bin/env python3
"""Clients that skip the proxy, on the local cluster: docker/cluster/local.sh
with three host-backend instances (each with --advertise-url and --peers)
and a real HAProxy on loopback. Checks that
- every instance sees the three ready (GET /v1/cluster, through the proxy
  and from each instance);
- the Python client in direct mode (Client(proxy, direct=True)) creates
  through the proxy (buffers land on every instance) and then answers every
  id through its owner: downloads byte-exact, uploads, metadata, runs
  routed by their buffers; the proxy's access log shows none of those
  requests (no line names any of the ids after the creations);
- listings are complete across the instances: the client's list(), and
  curl through the proxy following next_cursor;
- curl -L with Prefer: redirect through the proxy gets a 307 to the owner
  and the bytes from it;
- an owner killed (SIGKILL): the direct client falls back to the proxy and
  answers explicitly (the proxy's 503 while it is down, no bytes from
  elsewhere), the other owners still answer directly, a listing names it
  as skipped (IncompleteListing); once local.sh has started it again its
  ids raise OwnerRestarted (410).
Bounded: every request has a timeout and the whole test an alarm (150 s).
Skipped (77) where haproxy is not installed.

usage: test_cluster_direct.py GPUHTTPD_BINARY REPO_ROOT"""
import json
import re
import os
import signal
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check, fail, need_module, terminate  # noqa: E402
from test_cluster import N, cluster_args, owner, ready_cluster, until  # noqa: E402

requests = need_module("requests", "requests")
np = need_module("numpy", "numpy")


def states(url):
    r = requests.get(url + "/v1/cluster", timeout=5)
    check(r.status_code == 200, f"{url}/v1/cluster: {r.status_code} {r.text[:300]}")
    return {i["instance"]: i["state"] for i in r.json()["instances"]}


def proxy_log(cl):
    with open(os.path.join(cl.dir, "haproxy.log"), encoding="utf-8", errors="replace") as f:
        return f.read()


def all_ready(cl):
    want = {k: "ready" for k in range(N)}
    for url in [cl.url("")] + [f"http://127.0.0.1:{cl.port + 1 + k}" for k in range(N)]:
        until(lambda u=url: states(u), lambda s: s == want, 15)


def direct_answers(cl, c, gpuhttpd):
    """Creations through the proxy, then every id through its owner alone."""
    made = {}
    for k in range(4 * N):
        x = c.asarray(np.arange(1000, dtype=np.float32) + k)
        made[x.id] = np.arange(1000, dtype=np.float32) + k
    owners = {owner(b) for b in made}
    check(owners == set(range(N)), f"{4 * N} creations landed on {owners}")
    check(c.transport.owners() == {k: f"http://127.0.0.1:{cl.port + 1 + k}" for k in range(N)},
          f"the owner map: {c.transport.owners()}")
    mark = len(proxy_log(cl))
    before = c.transport.direct_requests
    for bid, a in made.items():
        x = c.buffer(bid)
        check(np.array_equal(x.get(), a), f"direct GET {bid}: other bytes")
        x.set(a * 2)
        c.run("axpy", a=1.0, x=x, y=x)  # y += x, routed by x: its owner, directly
        check(np.array_equal(x.get(), a * 4), f"direct run on {bid}")
        made[bid] = a * 4
    sent = c.transport.direct_requests - before
    check(sent >= 5 * len(made), f"{sent} direct requests for {len(made)} buffers")
    time.sleep(0.5)  # HAProxy writes its access line as the request ends
    after = proxy_log(cl)[mark:]
    leaked = [b for b in made if b in after]
    check(not leaked, f"the proxy saw requests for {leaked}:\n{after[-2000:]}")
    print(f"test_cluster_direct: {sent} requests for {len(made)} buffers on {N} instances "
          f"answered by their owners, none through the proxy")
    return made


def complete_listings(cl, c, made):
    listed = {x.id for x in c.list()}
    check(set(made) <= listed, f"the client's listing lacks {set(made) - listed}")
    # curl through the proxy: follow next_cursor until it is absent.
    got, cursor, pages = set(), None, 0
    while True:
        q = "?limit=5" + (f"&cursor={cursor}" if cursor else "")
        out = subprocess.run(["curl", "-sS", "-f", "--max-time", "10", cl.url("/v1/buffers" + q)],
                             capture_output=True, timeout=30, check=False)
        check(out.returncode == 0, f"curl list: {out.stderr.decode()}")
        page = json.loads(out.stdout)
        got |= {b["id"] for b in page["buffers"]}
        cursor, pages = page.get("next_cursor"), pages + 1
        if not cursor:
            break
        check(pages < 100, "the listing does not end")
    check(set(made) <= got, f"curl's listing through the proxy lacks {set(made) - got}")
    print(f"test_cluster_direct: listings complete ({len(got)} buffers, {pages} pages by curl)")


def curl_redirect(cl, made):
    bid = next(b for b in made if owner(b) == 1)
    out = subprocess.run(["curl", "-sS", "-f", "-L", "--max-time", "10", "-H", "Prefer: redirect",
                          "-D", "-", "-o", "-", cl.url(f"/v1/buffers/{bid}")],
                         capture_output=True, timeout=30, check=False)
    check(out.returncode == 0, f"curl -L: {out.stderr.decode()}")
    heads = out.stdout.split(b"\r\n\r\n")
    where = f"location: http://127.0.0.1:{cl.port + 2}/v1/buffers/{bid}"
    check(heads[0].startswith(b"HTTP/1.1 307") and where in heads[0].decode().lower(),
          f"307: {heads[0]!r}")
    # The control of direct_answers' check: a request through the proxy for
    # an id is in its access log (here the 307 it answered).
    time.sleep(0.5)
    check(re.search(rf"\b307\b.*GET /v1/buffers/{bid} ", proxy_log(cl)),
          f"the proxy's log has no 307 line for {bid}")
    body = b"\r\n\r\n".join(heads[2:])
    check(body == made[bid].tobytes() and b"gpuhttpd-instance: 1" in heads[1].lower(),
          f"after the 307: {heads[1]!r}, {len(body)} bytes")


def killed_owner(cl, c, gpuhttpd, made):
    after, m = cl.pid(2)
    os.kill(int(m.group(1)), signal.SIGKILL)
    lost = [b for b in made if owner(b) == 2]
    kept = [b for b in made if owner(b) != 2]
    fallbacks = c.transport.fallbacks
    try:
        c.buffer(lost[0]).get()
        fail("a killed owner's buffer answered")
    except gpuhttpd.Unavailable as e:
        check("instance 2" in e.detail or "proxy" in e.detail or "instance" in e.detail,
              f"503 detail: {e.detail}")
    except gpuhttpd.OwnerRestarted:
        pass  # local.sh was faster than us: its new start answers 410
    check(c.transport.fallbacks > fallbacks, "the direct client did not fall back")
    for b in kept[:3]:
        check(np.array_equal(c.buffer(b).get(), made[b]), f"{b} while 2 is down")
    until(lambda: states(f"http://127.0.0.1:{cl.port + 1}").get(2), lambda s: s == "down", 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = {x.id for x in c.list()}
    check(set(kept) <= listed, f"listing without 2 lacks {set(kept) - listed}")
    check(any(issubclass(w.category, gpuhttpd.IncompleteListing) and "2 (down)" in str(w.message)
              for w in caught), f"no IncompleteListing naming 2: {[str(w.message) for w in caught]}")
    cl.wait_line(r"instance 2: pid (\d+)", after + 1, timeout=30)
    until(lambda: states(cl.url("")), lambda s: s.get(2) == "ready", 20)
    try:
        c.buffer(lost[0])
        fail("an id of the killed start answered")
    except gpuhttpd.OwnerRestarted as e:
        check(e.status == 410, f"{e}")
    print(f"test_cluster_direct: owner 2 killed: fell back ({c.transport.fallbacks - fallbacks}),"
          f" 503 then 410; the others answered directly")


def main():
    binary, root = cluster_args()
    signal.alarm(150)
    sys.path.insert(0, os.path.join(root, "clients", "python", "src"))
    import gpuhttpd  # noqa: E402
    start = time.monotonic()
    with ready_cluster(root, binary, "ghd-direct-") as cl:
        all_ready(cl)
        with gpuhttpd.Client(cl.url(""), direct=True, timeout=20, retries=0) as c:
            made = direct_answers(cl, c, gpuhttpd)
            complete_listings(cl, c, made)
            curl_redirect(cl, made)
            killed_owner(cl, c, gpuhttpd, made)
        rc = terminate(cl.proc)
        check(rc == 0, f"local.sh exited with {rc} after SIGTERM")
    print(f"test_cluster_direct: ok ({time.monotonic() - start:.1f} s)")


if __name__ == "__main__":
    main()
