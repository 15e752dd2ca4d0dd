"""The client behind a proxy that routes by owner, on a FakeServer: runs
carry Gpuhttpd-Route (their first buffer), creations ?near=, 410 and 421 are
errors of their own (NotFounds still), and a kernel or module an instance
does not know is sent again by value."""

from __future__ import annotations

import numpy as np
import pytest
from fakeserver import OWNER, FakeServer, problem

import gpuhttpd
from gpuhttpd import MockTransport, Response

SAXPY = "extern \"C\" __global__ void saxpy(float a, float *x) { x[threadIdx.x] *= a; }"


def _runs(fake: FakeServer) -> list:
    return [r for r in fake.requests if r.path == "/v1/runs"]


def _route(req) -> str | None:
    return req.headers.get("Gpuhttpd-Route")


def test_runs_carry_their_first_buffer_as_route(client, fake):
    x, y = client.zeros(8), client.zeros(8)
    assert x.id.startswith(OWNER)
    client.run("axpy", a=2.0, x=x, y=y)
    client.run("fill", value=1.0, x=y.id)  # an id given as a string routes too
    client.run("iota", n=8, dtype=np.float32)  # no buffer: any instance
    with client.pipeline() as p:
        p.add("iota", n=8).add("sum", x=y)
    client.run_async("sum", x=x)
    assert [_route(r) for r in _runs(fake)] == [x.id, y.id, None, y.id, x.id]


def test_creations_near_a_buffer(client, fake):
    x = client.zeros(8)
    client.empty(4, near=x)
    client.asarray(np.arange(3), near=x.id)
    made = fake.creations()
    assert [m.get("near") for m in made[1:]] == [x.id] * 2
    assert (made[2]["dtype"], made[2]["shape"]) == ("i64", "3")  # with its bytes, one request


def test_gone_and_misdirected_are_not_found_too(client, fake):
    handler = fake.__call__
    answers = {
        "gone": problem(410, "gone", "created by an earlier start of instance 3 (boot "
                        "5f2c9a1e; this is boot 8b108b30); what an instance holds (buffers, "
                        "regions, runs, kernels) does not survive a restart"),
        "misdirected": problem(421, "misdirected-request", "owned by instance 2, and this is "
                               "instance 3: send it to instance 2 (a proxy routes on the id's "
                               "prefix i0002-)"),
    }
    client.transport = MockTransport(lambda r: answers.get(r.path.split("/")[3]) or handler(r))
    with pytest.raises(gpuhttpd.OwnerRestarted) as gone:
        client.buffer("gone")
    assert isinstance(gone.value, gpuhttpd.NotFound) and gone.value.status == 410
    with pytest.raises(gpuhttpd.Misdirected) as wrong:
        client.buffer("misdirected")
    assert isinstance(wrong.value, gpuhttpd.NotFound) and wrong.value.status == 421
    assert wrong.value.owner == 2
    named = gpuhttpd.Misdirected(421, "", "", "elsewhere", body={"owner": 7})
    assert named.owner == 7 and gpuhttpd.Misdirected(421).owner is None


def _unknown_kernel(fake: FakeServer, known: set[str]) -> None:
    """Runs answer unknown-kernel for a kernel name the instance does not know."""

    def run(body: dict) -> Response:
        for step in body.get("steps", [body]):
            kernel = step.get("kernel")
            if isinstance(kernel, str) and kernel not in known:
                return problem(422, "unknown-kernel", f"unknown kernel '{kernel}' (GET "
                               "/v1/kernels lists them; a user kernel can be sent by value)")
        return Response(200, json={"id": "r" * 32, "status": "succeeded", "result": {"n": 8}})

    fake.run = run


def test_definitions_sent_by_value_where_unknown(client, fake):
    k = client.define("scaled", in_="f32 x", out="f32 y", body="y = 2 * x")
    definition = {"in": "f32 x", "out": "f32 y", "body": "y = 2 * x", "name": "scaled"}
    _unknown_kernel(fake, {"sum"})  # another instance: the built-ins, not "scaled"
    x, y = client.zeros(8), client.zeros(8)
    assert k(x=x, y=y) == {"n": 8}
    first, again = _runs(fake)
    assert first.json()["kernel"] == "scaled" and again.json()["kernel"] == definition
    assert _route(again) == x.id
    client.pipeline().add("scaled", x=x, y=y).add("sum", x=y).run()
    steps = _runs(fake)[-1].json()["steps"]
    assert [s["kernel"] for s in steps] == [definition, "sum"]  # a built-in stays a name
    with pytest.raises(gpuhttpd.InvalidArgument, match="unknown kernel 'nope'"):
        client.run("nope", x=x)  # nothing to send: one request, its error
    assert _runs(fake)[-1].json()["kernel"] == "nope" and len(_runs(fake)) == 5
    k.delete()
    with pytest.raises(gpuhttpd.InvalidArgument):
        k(x=x, y=y)  # forgotten: not sent by value any more


def test_definitions_always_by_value(fake):
    c = gpuhttpd.Client("http://fake", transport=MockTransport(fake), inline_definitions=True)
    c.define("scaled", in_="f32 x", out="f32 y", body="y = 2 * x")
    _unknown_kernel(fake, set())
    x = c.zeros(8)
    c.run("scaled", x=x, y=x)
    [run] = _runs(fake)
    assert run.json()["kernel"]["body"] == "y = 2 * x"


def test_raw_modules_launch_and_by_value(client, fake):
    m = client.module(SAXPY, options=["--use_fast_math"])
    assert m.functions == ["saxpy"]
    x = client.zeros(32)
    tries = []

    def run(body: dict) -> Response:
        tries.append(body)
        if isinstance(body["module"], str):  # another instance: it never built the module
            return problem(404, "not-found", f"no module with id '{body['module']}'")
        return Response(200, json={"id": "r" * 32, "status": "succeeded", "result": {}})

    fake.run = run
    m.launch("saxpy", [1], [32], np.float32(2), x)
    assert tries[0] == {"module": m.id, "function": "saxpy", "grid": [1], "block": [32],
                        "args": [{"f32": 2.0}, {"buffer": x.id}], "wait": True}
    assert tries[1]["module"] == {"source": SAXPY, "options": ["--use_fast_math"]}
    assert _route(_runs(fake)[1]) == x.id
    p = client.pipeline().add_raw(m, "saxpy", [1], [32], {"f32": 3.0},
                                  {"buffer": x, "offset": 64, "access": "in"}, shared_mem=128)
    assert p.steps[0]["args"][1] == {"buffer": x.id, "offset": 64, "access": "in"}
    assert p.steps[0]["shared_mem"] == 128
    with pytest.raises(TypeError, match="raw argument 0"):
        m.launch("saxpy", [1], [32], 2.0, x)  # a Python float names no C type
    m.delete()
    assert m.id not in client.module_sources
