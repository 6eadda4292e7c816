"""What the first calls of a staged signature do (docs/guide/jit.md,
"Costs"): the first records and runs no plan pass (a signature called once
pays its recording only), the first replay (the purity check) replays the
recorded steps, each later one runs a stage of the passes first; the last
stepped replay writes the plan's source and the next compiles it; each
call's result is the eager one."""

import numpy as np

import chainrules as cr
from chainrules import plan as plan_mod
from chainrules import plan_regions as regions_mod
from chainrules import plan_stages as stages_mod


def _loss(x):
    y = np.sin(x) * x
    return np.sum(y * y) + np.sum(np.sin(x) * x)  # a repeated product: a pass removes it


def _counting(monkeypatch, module, name, calls):
    orig = getattr(module, name)

    def counted(*a, **k):
        calls.append(name)
        return orig(*a, **k)

    monkeypatch.setattr(module, name, counted)


def test_passes_run_a_stage_per_replay_after_the_check(monkeypatch):
    import importlib
    jit_mod = importlib.import_module("chainrules.jit")
    calls = []
    for name in ("fold_constants", "common_subexpressions", "live_steps"):
        _counting(monkeypatch, stages_mod, name, calls)
    for name in ("join_products", "keep_buffers"):
        _counting(monkeypatch, jit_mod, name, calls)
    for name in ("_absorb", "fuse_chains", "merge_regions"):
        _counting(monkeypatch, regions_mod, name, calls)
    # (this plan's regions: none, so no region pass does anything)
    absorbing = len(regions_mod.absorb_stages({}, lambda fn: False))
    expected = [["join_products"]] + [[]] * absorbing + [
        ["fold_constants", "common_subexpressions", "live_steps"], ["keep_buffers"]]
    x = np.linspace(-1.0, 2.0, 7)
    want = cr.value_and_grad(_loss)(x)
    f = cr.jit(cr.value_and_grad(_loss))
    got = f(x)
    assert calls == []  # the recording: no pass
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0] == want[0]
    plan = f._cache[next(iter(f._cache))].variants[0]
    assert plan._stages.left == len(expected)
    got = f(x)  # the check replays the recorded steps: no pass
    assert calls == [] and plan._stages.state.steps is not None
    assert len(plan._stages.state.steps) == plan.recorded_steps
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0] == want[0]
    # then one stage per replay: products, regions, the base passes, the
    # kept arrays; every replay's result the eager one
    for k, names in enumerate(expected):
        del calls[:]
        got = f(x)
        assert calls == names, k
        assert plan._stages.left == len(expected) - k - 1
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] == want[0]
    del calls[:]
    for _ in range(5):
        f(x)
    assert calls == []
    assert plan.recorded_steps > plan.num_steps  # the repeated product went


def test_looking_at_a_plan_runs_the_stages_left():
    x = np.linspace(-1.0, 2.0, 7)
    f = cr.jit(cr.value_and_grad(_loss))
    f(x)
    f(x)
    plan = f.plan(x)
    n = plan.num_steps  # (every stage run: the plan as its code will be)
    assert plan._stages.left == 0 and n < plan.recorded_steps
    want = cr.value_and_grad(_loss)(x)
    for _ in range(3):
        got = f(x)
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] == want[0]


def test_source_written_a_call_before_it_compiles(monkeypatch):
    monkeypatch.setattr(plan_mod, "COMPILE_AFTER", 4)
    x = np.linspace(-1.0, 2.0, 7)
    want = cr.value_and_grad(_loss)(x)
    f = cr.jit(cr.value_and_grad(_loss))
    f(x)  # recorded
    plan = f.plan(x)
    for k in range(1, 5):
        got = f(x)  # replay k, stepped
        assert (plan._written is not None) == (k >= 4), k
        assert plan._fn is None and plan._compiled == 0
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] == want[0]
    # then one segment of the code compiled per call, the code run once
    # the last is
    n = plan.segments
    assert n == len(plan.source.split("\ndef ")) > 1
    for k in range(1, n + 2):
        got = f(x)
        assert plan._compiled == min(k, n)
        assert (plan._fn is not None) == (k >= n), k
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] == want[0]


def test_segments_of_the_code_pass_the_values_later_ones_read(monkeypatch):
    # cut after every line: each value crosses from the segment that makes
    # it to each that reads it; guards and writes in place stay right
    monkeypatch.setattr(plan_mod, "_segment_size", lambda n: 1)

    def f(x, n):
        g = np.zeros_like(x)
        g[1:] = np.sin(x[:-1]) * x[1:]
        h = g * 2.0
        if np.sum(x) > 0:
            h = h + x
        return np.sum(h * g) + n, h

    x = np.linspace(-1.0, 2.0, 6)
    j = cr.jit(f)
    plan = j.plan(x, 3.0)
    plan.compile()
    assert plan.segments == plan.source.count("def ") > 5
    for k in range(3):
        xk = x + 0.5 * k
        got, want = j(xk, 3.0), f(xk, 3.0)
        assert got[0] == want[0]
        np.testing.assert_array_equal(got[1], want[1])
    # the guard raises from its segment: a variant is recorded
    got, want = j(-x, 3.0), f(-x, 3.0)
    np.testing.assert_array_equal(got[1], want[1])
    assert j.cache_info()["plans"] == 2


def test_a_function_named_as_a_constant_of_its_plan():
    # its code's function gets another name: the constant keeps its own
    def f1(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.0, 1.0, 5)
    j = cr.jit(cr.value_and_grad(f1))
    want = cr.value_and_grad(f1)(x)
    plan = j.plan(x)
    plan.compile()
    assert "f1" in plan.namespace and not plan.source.startswith("def f1(")
    for _ in range(3):
        got = j(x)
        assert got[0] == want[0]
        np.testing.assert_array_equal(got[1], want[1])


def test_threads_calling_a_new_signature_share_its_stages():
    # every thread's call runs a stage, or replays the state it finds: the
    # stages run once each and the plan ends as one thread's would
    import threading

    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.linspace(-1.2, 1.1, 5000)
    want = cr.value_and_grad(rosen)(x)
    f = cr.jit(cr.value_and_grad(rosen))
    f(x)
    plan = f.plan(x)
    errors = []

    def work():
        try:
            for _ in range(12):
                value, grad = f(x)
                np.testing.assert_allclose(grad, want[1], rtol=1e-13, atol=1e-10)
                assert abs(value - want[0]) <= 1e-12 * abs(want[0])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert plan._stages.left == 0
    alone = cr.jit(cr.value_and_grad(rosen))
    alone(x)
    assert alone.plan(x).num_steps == plan.num_steps
