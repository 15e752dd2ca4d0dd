"""Direct mode against real servers (host backend): three instances that
know each other (--advertise-url, --peers), the client given instance 0's
URL (no proxy: an instance's 421 names the owner's URL, which the client
then asks itself). Every id is answered by its owner, byte-exact, listings
cover the three, and an owner that is gone falls back to the URL given,
whose answer keeps its meaning (421 from an instance; through a proxy, its
503: tests/ops/test_cluster_direct.py)."""
import json
import time
import urllib.request
import warnings

import numpy as np
import pytest
from liveserver import free_ports

import gpuhttpd


def _wait_ready(url: str, n: int) -> None:
    """Until the instance at url has seen its n - 1 peers ready (its first look
    at them is within a second of its start)."""
    deadline = time.monotonic() + 15
    while True:
        with urllib.request.urlopen(url + "/v1/cluster", timeout=5) as r:
            states = [i["state"] for i in json.load(r)["instances"]]
        if states.count("ready") == n:
            return
        assert time.monotonic() < deadline, states
        time.sleep(0.1)


def test_direct_mode_reaches_every_owner(make_server):
    ports = free_ports(3)
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    servers = [make_server("--port", str(ports[k]), "--instance", str(k), "--advertise-url",
                           urls[k], "--peers", ",".join(urls)) for k in range(3)]
    _wait_ready(urls[0], 3)
    arrays = {}
    for k, s in enumerate(servers):  # one buffer made on each instance, by its own client
        with gpuhttpd.Client(s.url) as c:
            arrays[k] = c.asarray(np.full(1000, k, np.int32))
    with gpuhttpd.Client(urls[0], direct=True) as c:
        t = c.transport
        assert isinstance(t, gpuhttpd.DirectTransport)
        for k, x in arrays.items():
            y = c.buffer(x.id)
            np.testing.assert_array_equal(y.get(), np.full(1000, k, np.int32))
            y.set(np.full(1000, 10 + k, np.int32))
        assert t.owners() == {k: urls[k] for k in range(3)}
        assert t.direct_requests >= 6
        # An instance whose peer probe timed out (a loaded machine: CI runs
        # suites side by side) passes that peer over until its next probe, and
        # the page names it (IncompleteListing): never silently short. Asked
        # again, the listing is complete.
        want = {x.id for x in arrays.values()}
        deadline = time.monotonic() + 20
        while True:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = {x.id for x in c.list()}
            if got >= want:
                break
            assert any(issubclass(w.category, gpuhttpd.IncompleteListing) for w in caught), \
                (got, want)
            assert time.monotonic() < deadline, (got, want)
            time.sleep(0.2)
        servers[2].stop()
        with pytest.raises(gpuhttpd.Misdirected) as e:
            c.buffer(arrays[2].id)
        assert e.value.owner == 2 and t.fallbacks >= 1  # tried, then the URL given
        np.testing.assert_array_equal(c.buffer(arrays[1].id).get(), np.full(1000, 11, np.int32))
