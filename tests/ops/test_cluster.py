#!/usr/bin/env python3
"""The cluster model on loopback: three host-backend instances behind a real
HAProxy, started by docker/cluster/local.sh (the routing rules the
Kubernetes ConfigMap has too). Checks that
- new buffers spread over the instances by the agents' weights (free pool
  memory: a fuller instance gets fewer);
- every id routes to its owner, through curl and through the Python client,
  bytes exact; a create with Gpuhttpd-Route or ?near= lands on that owner;
  the Python client's runs route by their buffers (a kernel it defined on
  one instance runs on the others by value) and its near= creations land
  beside them; with regions on, its transfers go through shared memory
  registered with each buffer's owner; an instance reached directly raises
  Misdirected naming the owner;
- a run with the route header runs on its buffers' owner; without it the
  others answer 421 naming the owner; buffers of two owners are 422;
- a copy_of another instance's buffer is 421 naming the owner, and one routed
  by its source (Gpuhttpd-Route) is made there, byte-exact;
- one instance stopped (SIGSTOP: it hangs, while its kernel still accepts
  connections): within HANG_BOUND s its ids answer the proxy's 503
  problem+json naming it, new buffers go to the others; continued
  (SIGCONT), its ids answer 200 again within HANG_BOUND s; every request
  has a short timeout, and the instance is continued whatever happens;
- one instance killed: its ids answer 503 problem+json from the proxy,
  the others serve on, byte-exact, and new buffers go to them; started
  again by local.sh (a new boot), its old ids answer 410;
- SIGTERM stops local.sh and all it started, with status 0.
Skipped (77) where haproxy is not installed.

usage: test_cluster.py GPUHTTPD_BINARY REPO_ROOT"""
import contextlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check, fail, need_module, skip, terminate  # noqa: E402

requests = need_module("requests", "requests")
np = need_module("numpy", "numpy")

N = 3
ID = re.compile(r"^i(\d{4})-[0-9a-f]{8}-[0-9a-f]{32}$")
OCTETS = {"Content-Type": "application/octet-stream"}
LIMIT = 64 << 20  # each instance's pool limit
# Seconds a hung instance may take to be marked down, and to be up again
# once it continues: the proxy's checks (inter 1s, timeout check 1s, fall 1,
# rise 1 in local.sh's configuration) take about 2 s and 1 s.
HANG_BOUND = 8


def free_base(count):
    """A port P with P..P+count-1 all free on 127.0.0.1, below the ephemeral
    range (where outgoing connections keep taking ports)."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 32000 - count)
        socks = []
        try:
            for p in range(base, base + count):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    fail(f"no run of {count} free ports on 127.0.0.1")


@contextlib.contextmanager
def ready_cluster(root, binary, prefix):
    """local.sh's cluster in a fresh folder, once it says it is ready and the
    proxy has all N instances UP; stopped (ghdtest.terminate) on the way out."""
    with tempfile.TemporaryDirectory(prefix=prefix) as workdir:
        cl = Cluster(root, binary, free_base(1 + 2 * N), workdir)
        try:
            cl.wait_line(r"local\.sh: ready")
            cl.wait_stats(lambda st: len(st) == N and all(s == "UP" for s, _ in st.values()))
            yield cl
        finally:
            terminate(cl.proc)


class Cluster:
    """local.sh in the background; its lines read as they come."""

    def __init__(self, root, binary, port, workdir):
        self.port = port
        self.dir = workdir
        self.lines = []
        self.cond = threading.Condition()
        args = ["bash", os.path.join(root, "docker/cluster/local.sh"), "--instances", str(N),
                "--port", str(port), "--gpuhttpd", binary, "--dir", workdir,
                "--restart-after", "5", "--", "--backend", "host", "--pool-initial", "0",
                "--pool-slab", "4M", "--pool-limit", str(LIMIT), "--staging-chunks", "4",
                "--staging-chunk", "256K", "--shutdown-grace", "2", "--log-level", "warn",
                "--allow-shm"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_line(self, pattern, after=0, timeout=30):
        """The first line from index `after` on that matches; (index, match)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i in range(after, len(self.lines)):
                    m = re.search(pattern, self.lines[i])
                    if m:
                        return i, m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    fail(f"local.sh printed no line like {pattern!r}:\n" + "\n".join(self.lines))
                self.cond.wait(left)

    def pid(self, k, after=0):
        return self.wait_line(rf"instance {k}: pid (\d+)", after)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stats(self):
        """{server: (status, weight)} of the balanced backend, from HAProxy's socket."""
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.path.join(self.dir, "haproxy.sock"))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        out = {}
        for row in data.decode().splitlines():
            f = row.split(",")
            if len(f) > 18 and f[0] == "balanced" and f[1].startswith("i"):
                out[f[1]] = (f[17], int(f[18] or 0))
        return out

    def wait_stats(self, want, timeout=20):
        return until(self.stats, want, timeout,
                     show=lambda st: f"HAProxy's servers never got there: {st}")[0]


def owner(bid):
    m = ID.match(bid)
    check(m, f"not an owned id: {bid!r}")
    return int(m.group(1))


def create(cl, size=None, data=None, route=None, near=None, timeout=30):
    """A new buffer through the proxy: (id, the instance that answered)."""
    headers = {"Gpuhttpd-Route": route} if route else {}
    params = {"near": near} if near else None
    if data is None:
        r = requests.post(cl.url("/v1/buffers"), json={"size": size}, headers=headers,
                          params=params, timeout=timeout)
    else:
        r = requests.post(cl.url("/v1/buffers"), data=data, headers={**headers, **OCTETS},
                          params=params, timeout=timeout)
    check(r.status_code == 201, f"create: {r.status_code} {r.text[:300]}")
    bid = r.json()["id"]
    served = int(r.headers["Gpuhttpd-Instance"])
    check(owner(bid) == served, f"{bid} made by instance {served}")
    return bid, served


def problem(r, status, *words):
    check(r.status_code == status, f"{r.request.method} {r.url}: {r.status_code}, not {status}: "
          f"{r.text[:300]}")
    check(r.headers.get("Content-Type") == "application/problem+json", f"{r.url}: {r.headers}")
    body = r.json()
    check(body.get("status") == status, f"problem: {body}")
    for w in words:
        check(w in body.get("detail", ""), f"{r.url}: {w!r} not in {body}")
    return r


def curl_get(cl, bid):
    out = subprocess.run(["curl", "-sS", "-f", "-D", "-", "-o", "-", cl.url(f"/v1/buffers/{bid}")],
                         capture_output=True, timeout=30, check=False)
    check(out.returncode == 0, f"curl GET {bid}: {out.returncode} {out.stderr.decode()}")
    head, _, body = out.stdout.partition(b"\r\n\r\n")
    served = re.search(rb"(?im)^gpuhttpd-instance: (\d+)", head)
    check(served and int(served.group(1)) == owner(bid), f"curl GET {bid} answered by {head!r}")
    return body


def spread(cl):
    """Instance 0 three quarters full: its agent says so and it gets fewer."""
    big, served = create(cl, size=48 << 20, route="i0000")
    check(served == 0, f"Gpuhttpd-Route: i0000 went to instance {served}")
    with socket.create_connection(("127.0.0.1", cl.port + 1 + N)) as s:
        line = s.recv(64).decode()
    check(re.fullmatch(r"up 2[45]%\n", line), f"instance 0's agent says {line!r}")
    cl.wait_stats(lambda st: st["i0000"][1] <= 25 and st["i0001"][1] >= 99
                  and st["i0002"][1] >= 99)
    counts = [0] * N
    for _ in range(30):
        counts[create(cl, size=4096)[1]] += 1
    check(0 < counts[0] < min(counts[1], counts[2]),
          f"30 new buffers over weights 25/100/100: {counts}")
    print(f"test_cluster: 30 creations over agent weights 25/100/100 went {counts}")
    return big


def routes_by_owner(cl):
    """Data buffers on every instance; every id reaches its owner."""
    rng = np.random.default_rng(7)
    data = {}
    for k in range(N):
        for size in (1000, 3 << 20):  # curl sends Expect: 100-continue for the larger
            raw = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
            bid, served = create(cl, data=raw, route=f"i{k:04d}")
            check(served == k, f"route i{k:04d} went to {served}")
            data[bid] = raw
    for bid, raw in data.items():
        check(curl_get(cl, bid) == raw, f"curl GET {bid}: other bytes")
        r = requests.get(cl.url(f"/v1/buffers/{bid}/meta"), timeout=30)
        check(r.status_code == 200 and int(r.headers["Gpuhttpd-Instance"]) == owner(bid),
              f"meta {bid}: {r.status_code} {r.headers}")
    # PUT and DELETE reach the owner too.
    bid = next(iter(data))
    new = bytes(reversed(data[bid]))
    r = requests.put(cl.url(f"/v1/buffers/{bid}"), data=new, headers=OCTETS, timeout=30)
    check(r.status_code in (200, 204), f"PUT {bid}: {r.status_code} {r.text[:200]}")
    data[bid] = new
    check(curl_get(cl, bid) == new, "PUT then GET: other bytes")
    gone, _ = create(cl, size=64, route="i0002")
    r = requests.delete(cl.url(f"/v1/buffers/{gone}"), timeout=30)
    check(r.status_code == 204, f"DELETE: {r.status_code}")
    problem(requests.get(cl.url(f"/v1/buffers/{gone}/meta"), timeout=30), 404)
    return data


def python_client(cl, root, data):
    """The Python client through the proxy: plain calls, and runs routed by
    their buffers (Gpuhttpd-Route) on every owner, creations near a buffer,
    and an instance reached directly with another's id (Misdirected)."""
    sys.path.insert(0, os.path.join(root, "clients", "python", "src"))
    import gpuhttpd  # noqa: E402
    with gpuhttpd.Client(cl.url("")) as c:
        for bid, raw in data.items():
            check(c.buffer(bid).get().tobytes() == raw, f"client: {bid} other bytes")
        made = [c.asarray(np.arange(1000, dtype=np.float32) + k) for k in range(6)]
        owners = {owner(x.id) for x in made}
        check(len(owners) >= 2, f"six client uploads all on {owners}")
        # Defined on the one instance the proxy picks: the others get it by value.
        thrice = c.define("thrice", in_="f32 x", out="f32 y", body="y = 3 * x")
        for k, x in enumerate(made):
            a = np.arange(1000, dtype=np.float32) + k
            check(np.array_equal(x.get(), a), f"client round trip {x.id}")
            y = c.zeros(1000, np.float32, near=x)
            check(owner(y.id) == owner(x.id), f"near {x.id} made {y.id}")
            c.run("axpy", a=2.0, x=x, y=y)  # routed by x; unrouted, most would be 421
            check(np.array_equal(y.get(), 2 * a), f"client run on {x.id}")
            thrice(x=x, y=y)
            check(np.array_equal(y.get(), 3 * a), f"user kernel on {x.id}")
            y.delete()
        # Same host: transfers through shared memory, a segment per owner.
        with gpuhttpd.Client(cl.url(""), shm_threshold=1024, shm_chunk=4096) as near_c:
            for k, x in enumerate(made):
                a = np.arange(1000, dtype=np.float32) + k
                check(np.array_equal(near_c.buffer(x.id).get(), a), f"shm download {x.id}")
                with near_c.shared_array(1000, np.float32, near=x) as s:
                    near_c.buffer(x.id).get_into(s)
                    check(np.array_equal(s, a), f"shared array of {x.id}")
            check(near_c.region_bytes == 2 * 4000 * len(made) and
                  near_c.same_host.why_not is None,
                  f"through regions: {near_c.region_bytes} bytes, {near_c.same_host.why_not}")
        x = made[0]
        elsewhere = (owner(x.id) + 1) % N
        with gpuhttpd.Client(f"http://127.0.0.1:{cl.port + 1 + elsewhere}") as direct:
            try:
                direct.buffer(x.id)
                fail(f"instance {elsewhere} answered for {x.id}")
            except gpuhttpd.Misdirected as e:
                check(e.owner == owner(x.id), f"421 names instance {e.owner}: {e.detail}")
        for x in made:
            x.delete()


def runs(cl, data):
    ids = {owner(b): b for b in data}
    x, y = ids[1], ids[2]
    body = {"kernel": "fill", "args": {"x": x, "n": 16, "dtype": "u8", "value": 7}}
    r = requests.post(cl.url("/v1/runs"), json=body, headers={"Gpuhttpd-Route": x}, timeout=30)
    check(r.status_code == 200 and r.headers["Gpuhttpd-Instance"] == "1",
          f"run with the route header: {r.status_code} {r.headers} {r.text[:300]}")
    rid = r.json()["id"]
    check(owner(rid) == 1, f"run id {rid}")
    r = requests.get(cl.url(f"/v1/runs/{rid}"), timeout=30)
    check(r.status_code == 200 and r.json()["status"] == "succeeded", f"GET run: {r.text[:200]}")
    check(curl_get(cl, x)[:16] == b"\x07" * 16, "the run wrote elsewhere")
    data[x] = b"\x07" * 16 + data[x][16:]
    seen = set()
    for _ in range(6):  # without the header: balanced, so mostly elsewhere
        r = requests.post(cl.url("/v1/runs"), json=body, timeout=30)
        if r.status_code == 200:
            check(r.headers["Gpuhttpd-Instance"] == "1", f"ran on {r.headers}")
        else:
            problem(r, 421, "owned by instance 1")
        seen.add(r.status_code)
    check(421 in seen, f"six runs without the header: statuses {seen}")
    mixed = {"kernel": "add", "args": {"x": x, "y": y, "out": x, "n": 16, "dtype": "u8"}}
    r = requests.post(cl.url("/v1/runs"), json=mixed, headers={"Gpuhttpd-Route": x}, timeout=30)
    problem(r, 422, "instances 1 and 2")


def near_and_copies(cl, data):
    ids = {owner(b): b for b in data}
    bid, served = create(cl, size=64, near=ids[2])
    check(served == 2 and owner(bid) == 2, f"near: {bid} on {served}")
    boot = ids[2].split("-")[1]
    r = requests.post(cl.url("/v1/buffers"), params={"near": f"i0002-{boot}-{'0' * 32}"},
                      json={"size": 64}, timeout=30)
    problem(r, 404, "near")
    check(r.headers.get("Gpuhttpd-Instance") == "2", f"near 404 from {r.headers}")
    r = requests.post(cl.url("/v1/buffers"), params={"near": f"i0009-{boot}-{'0' * 32}"},
                      json={"size": 64}, timeout=30)
    problem(r, 421, "owned by instance 9")
    # A copy of another instance's buffer is refused, naming the owner.
    r = requests.post(cl.url("/v1/buffers"), json={"copy_of": ids[2]},
                      headers={"Gpuhttpd-Route": ids[1]}, timeout=30)
    problem(r, 421, "owned by instance 2")
    check(r.headers.get("Gpuhttpd-Instance") == "1", f"copy_of answered by {r.headers}")
    # Routed by its source, the copy is made there, byte-exact.
    r = requests.post(cl.url("/v1/buffers"), json={"copy_of": ids[2]},
                      headers={"Gpuhttpd-Route": ids[2]}, timeout=30)
    check(r.status_code == 201 and r.headers.get("Gpuhttpd-Instance") == "2",
          f"copy_of routed by its source: {r.status_code} {r.headers} {r.text[:300]}")
    copy = r.json()["id"]
    check(owner(copy) == 2 and curl_get(cl, copy) == data[ids[2]], f"copy {copy}: other bytes")


def bounded_get(cl, path):
    """GET through the proxy that gives up after a second: the response, or
    the error (a timeout above all) as text."""
    try:
        return requests.get(cl.url(path), timeout=1)
    except requests.RequestException as e:
        return f"{type(e).__name__}: {e}"


def shown_reply(got):
    """A bounded_get result as text."""
    return got if isinstance(got, str) else f"{got.status_code} {got.text[:200]}"


def until(what, ok, bound, show=shown_reply):
    """Calls what() until ok(its result) or bound s have passed: (the last
    result, the seconds it took); fails with show(the last result)."""
    start = time.monotonic()
    while True:
        got = what()
        took = time.monotonic() - start
        if ok(got):
            return got, took
        if took > bound:
            fail(f"not within {bound} s: {show(got)}")
        time.sleep(0.1)


def hang_and_resume(cl, data):
    """Instance 2 stopped, not dead: its listening socket still accepts, so
    only a check that waits for an HTTP answer finds it out."""
    _, m = cl.pid(2)
    pid = int(m.group(1))
    hung = [b for b in data if owner(b) == 2]
    os.kill(pid, signal.SIGSTOP)
    try:
        r, down_s = until(lambda: bounded_get(cl, f"/v1/buffers/{hung[0]}/meta"),
                          lambda r: not isinstance(r, str) and r.status_code == 503, HANG_BOUND)
        for bid in hung:
            r = bounded_get(cl, f"/v1/buffers/{bid}/meta")
            check(not isinstance(r, str), f"GET {bid} of the hung instance: {r}")
            problem(r, 503, "instance 2")
            check("Gpuhttpd-Instance" not in r.headers, f"503 from an instance? {r.headers}")
        check(cl.stats()["i0002"][0].startswith("DOWN"), f"instance 2 hung: {cl.stats()}")
        for _ in range(6):
            try:
                served = create(cl, size=64, timeout=5)[1]
            except requests.RequestException as e:
                fail(f"a new buffer while instance 2 hangs: {type(e).__name__}: {e}")
            check(served != 2, "a new buffer went to the hung instance")
    finally:
        os.kill(pid, signal.SIGCONT)
    r, up_s = until(lambda: bounded_get(cl, f"/v1/buffers/{hung[0]}"),
                    lambda r: not isinstance(r, str) and r.status_code == 200, HANG_BOUND)
    check(r.content == data[hung[0]], f"{hung[0]} after SIGCONT: other bytes")
    cl.wait_stats(lambda st: st["i0002"][0] == "UP", timeout=HANG_BOUND)
    print(f"test_cluster: instance 2 stopped: its ids answered 503 after {down_s:.1f} s; "
          f"continued: 200 after {up_s:.1f} s")


def kill_and_restart(cl, data):
    _, m = cl.pid(1)
    idx = len(cl.lines)
    os.kill(int(m.group(1)), signal.SIGKILL)
    lost = [b for b in data if owner(b) == 1]
    # Until local.sh starts it again (5 s) the proxy answers for it: 502 for a
    # kept connection the kill cut, 503 once it cannot connect.
    for bid in lost:
        r = requests.get(cl.url(f"/v1/buffers/{bid}"), timeout=30)
        problem(r, 503 if r.status_code != 502 else 502)
        check("Gpuhttpd-Instance" not in r.headers, f"{r.status_code} from an instance? {r.headers}")
    cl.wait_stats(lambda st: st["i0001"][0].startswith("DOWN"), timeout=10)
    r = problem(requests.get(cl.url(f"/v1/buffers/{lost[0]}/meta"), timeout=30), 503,
                "instance 1")
    for bid, raw in data.items():
        if owner(bid) != 1:
            check(curl_get(cl, bid) == raw, f"{bid} after instance 1 died: other bytes")
    for _ in range(6):
        check(create(cl, size=64)[1] != 1, "a new buffer went to the dead instance")
    # local.sh starts it again: a new boot, whose answer for the old ids is 410.
    cl.pid(1, after=idx)
    cl.wait_stats(lambda st: st["i0001"][0] == "UP", timeout=20)
    for bid in lost:
        r = requests.get(cl.url(f"/v1/buffers/{bid}/meta"), timeout=30)
        problem(r, 410, "earlier start of instance 1", "does not survive a restart")
        check(r.headers.get("Gpuhttpd-Instance") == "1", f"410 from {r.headers}")
    body = {"kernel": "fill", "args": {"x": lost[0], "n": 4, "dtype": "u8", "value": 1}}
    problem(requests.post(cl.url("/v1/runs"), json=body, headers={"Gpuhttpd-Route": lost[0]},
                          timeout=30), 410)


def cluster_args():
    """(gpuhttpd binary, repository root) from the command line; skipped (77)
    where haproxy or curl, which local.sh's cluster and the tests use, is
    not installed."""
    if not shutil.which("haproxy") and not os.access("/usr/sbin/haproxy", os.X_OK):
        skip("haproxy is not installed (Debian: apt-get install haproxy)")
    if not shutil.which("curl"):
        skip("curl is not installed")
    return sys.argv[1], sys.argv[2]


def main():
    binary, root = cluster_args()
    start = time.monotonic()
    with ready_cluster(root, binary, "ghd-cluster-") as cl:
        spread(cl)
        data = routes_by_owner(cl)
        python_client(cl, root, data)
        runs(cl, data)
        near_and_copies(cl, data)
        hang_and_resume(cl, data)
        kill_and_restart(cl, data)
        pids = [int(cl.pid(k)[1].group(1)) for k in (0, 2)]
        rc = terminate(cl.proc)
        check(rc == 0, f"local.sh exited with {rc} after SIGTERM:\n" + "\n".join(cl.lines))
        for p in pids:
            check(not os.path.exists(f"/proc/{p}"), f"instance pid {p} outlived local.sh")
    print(f"test_cluster: ok ({time.monotonic() - start:.1f} s)")


if __name__ == "__main__":
    main()
