"""Instances that know who they are, against real servers (host backend):
an id sent to another instance (in the path, in a run's arguments, as
near=) raises Misdirected naming its owner, one of an earlier start
OwnerRestarted (both NotFounds), and the route header and ?near= that a
proxy routes by are accepted by a server reached directly. Through a real
proxy: tests/ops/test_cluster.py."""
import numpy as np
import pytest

import gpuhttpd


def test_misdirected_and_restarted(make_server):
    one, two = make_server("--instance", "1"), make_server("--instance", "2")
    with gpuhttpd.Client(one.url) as c1, gpuhttpd.Client(two.url) as c2:
        x = c1.asarray(np.arange(16, dtype=np.float32))
        assert x.id.startswith("i0001-")
        with pytest.raises(gpuhttpd.Misdirected) as wrong:
            c2.buffer(x.id)
        assert wrong.value.status == 421 and wrong.value.owner == 1
        assert isinstance(wrong.value, gpuhttpd.NotFound)
        with pytest.raises(gpuhttpd.Misdirected) as wrong:  # a run's buffer, in its body
            c2.run("fill", x=x, value=1.0)
        assert wrong.value.owner == 1
        with pytest.raises(gpuhttpd.Misdirected) as wrong:
            c2.zeros(4, near=x)
        assert wrong.value.owner == 1
        one.stop()
        again = make_server("--instance", "1")
        with gpuhttpd.Client(again.url) as c3, pytest.raises(gpuhttpd.OwnerRestarted) as gone:
            c3.buffer(x.id)
        assert gone.value.status == 410 and "does not survive a restart" in gone.value.detail


def test_route_and_near_reach_a_server_directly(client):
    with client.asarray(np.arange(64, dtype=np.float32)) as x, \
            client.zeros(64, np.float32, near=x) as y:
        assert client.run("axpy", a=2.0, x=x, y=y)["n"] == 64
        np.testing.assert_array_equal(y.get(), 2 * np.arange(64, dtype=np.float32))


def test_definitions_by_value_on_another_instance(make_server):
    one, two = make_server("--instance", "1"), make_server("--instance", "2")
    with gpuhttpd.Client(one.url) as c:
        k = c.define("twice", in_="f32 x", out="f32 y", body="y = 2 * x")
        c.transport = gpuhttpd.HTTPTransport(two.url)  # as a proxy sends a run elsewhere
        with c.asarray(np.arange(8, dtype=np.float32)) as x, c.zeros(8, np.float32) as y:
            assert k(x=x, y=y) == {"n": 8}  # unknown-kernel there, then by value
            np.testing.assert_array_equal(y.get(), 2 * np.arange(8, dtype=np.float32))
            with pytest.raises(gpuhttpd.InvalidArgument, match="unknown kernel 'nope'"):
                c.run("nope", x=x)  # nothing to send by value
    with gpuhttpd.Client(two.url, inline_definitions=True) as c:
        c.kernel_definitions["thrice"] = {"name": "thrice", "in": "f32 x", "out": "f32 y",
                                          "body": "y = 3 * x"}
        with c.asarray(np.ones(4, np.float32)) as x, c.zeros(4, np.float32) as y:
            c.run("thrice", x=x, y=y)  # by value from the start: never defined here
            np.testing.assert_array_equal(y.get(), np.full(4, 3, np.float32))
