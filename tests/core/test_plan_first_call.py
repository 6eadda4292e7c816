"""What the first calls of a staged signature do (docs/guide/jit.md,
"Costs"): the first records and runs no plan pass (a signature called once
pays its recording only), the first replay runs the passes, the last
stepped replay writes the plan's source and the next compiles it; each
call's result is the eager one."""

import numpy as np

import chainrules as cr
from chainrules import plan as plan_mod


def _loss(x):
    y = np.sin(x) * x
    return np.sum(y * y) + np.sum(np.sin(x) * x)  # a repeated product: a pass removes it


def _counting(monkeypatch, name, calls):
    orig = getattr(plan_mod, name)

    def counted(*a, **k):
        calls.append(name)
        return orig(*a, **k)

    monkeypatch.setattr(plan_mod, name, counted)


def test_passes_run_at_the_first_replay_only(monkeypatch):
    calls = []
    for name in ("fold_constants", "common_subexpressions", "live_steps"):
        _counting(monkeypatch, name, calls)
    x = np.linspace(-1.0, 2.0, 7)
    want = cr.value_and_grad(_loss)(x)
    f = cr.jit(cr.value_and_grad(_loss))
    got = f(x)
    assert calls == []  # the recording: no pass
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0] == want[0]
    got = f(x)  # the check replays: the passes run once
    assert calls == ["fold_constants", "common_subexpressions", "live_steps"]
    np.testing.assert_array_equal(got[1], want[1])
    for _ in range(5):
        f(x)
    assert len(calls) == 3
    plan = f.plan(x)
    assert plan.recorded_steps > plan.num_steps  # the repeated product went


def test_source_written_a_call_before_it_compiles(monkeypatch):
    monkeypatch.setattr(plan_mod, "COMPILE_AFTER", 4)
    x = np.linspace(-1.0, 2.0, 7)
    want = cr.value_and_grad(_loss)(x)
    f = cr.jit(cr.value_and_grad(_loss))
    f(x)  # recorded
    plan = f.plan(x)
    for k in range(1, 7):
        got = f(x)  # replay k
        assert (plan._written is not None) == (k >= 4), k
        assert (plan._fn is not None) == (k >= 5), k
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] == want[0]
