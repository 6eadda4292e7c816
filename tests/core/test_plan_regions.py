"""The plan pass that writes elementwise calls feeding a fused region alone
into the region's program (``chainrules.plan_regions``): results bit for
bit those of the plan without it, and nothing absorbed that is written in
place or read elsewhere."""

import sys

import numpy as np
import pytest

import chainrules as cr
from chainrules import elementwise_expr as ee
from chainrules import fused_sweeps as fusion
from chainrules import kernel_scatter, kernels

# (fusion at every size, as in test_fusion: the thresholds are for speed)
from test_fusion import setup_module, teardown_module  # noqa: F401


jit_module = sys.modules["chainrules.jit"]  # (cr.jit is the function)




def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _replays(fun, args, mode=False, calls=4):
    j = cr.jit(fun, warn=False)
    with cr.fusion(kernels=mode):
        out = [j(*args) for _ in range(calls)]
    return out[-1], j.plan(*args)


def _region_envs(plan):
    """The value names each region step of ``plan`` reads."""
    envs = []
    for line in plan.source.splitlines():
        for name, obj in plan.namespace.items():
            if (obj is kernels.run or obj is kernel_scatter.run) and f"= {name}(" in line:
                envs.append(line.split("{", 1)[1].split("}", 1)[0])
    return envs


def _without_pass(monkeypatch):
    monkeypatch.setattr(jit_module, "absorb", lambda steps, *a: steps)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_rosenbrock_hvp_region_reads_the_inputs_and_agrees_bit_for_bit(dt, monkeypatch):
    x = np.linspace(-1.2, 1.1, 400).astype(dt)
    v = np.cos(np.arange(400.0)).astype(dt)
    call = lambda x, v: cr.hvp(_rosen, x, v)  # noqa: E731
    got, plan = _replays(call, (x, v))
    # the primal values (x[1:] - x[:-1] ** 2) are computed by the region
    assert not any(obj is np.square or obj is np.subtract
                   for obj in plan.namespace.values()), plan
    (env,) = _region_envs(plan)
    assert "p2" in env, env
    with monkeypatch.context() as m:
        _without_pass(m)
        want, plain_plan = _replays(call, (x, v))
    assert any(obj is np.subtract for obj in plain_plan.namespace.values())
    np.testing.assert_array_equal(got, want)
    with cr.fusion(False):
        eager = call(x, v)
    np.testing.assert_allclose(got, eager, rtol=50 * np.finfo(dt).eps,
                               atol=50 * np.finfo(dt).eps * np.max(np.abs(eager)))
    if kernels.available():
        compiled, _ = _replays(call, (x, v), mode="always")
        np.testing.assert_allclose(compiled, want, rtol=16 * np.finfo(dt).eps,
                                   atol=16 * np.finfo(dt).eps * np.max(np.abs(want)))


def test_a_value_also_read_elsewhere_is_not_absorbed():
    def f(x):
        a = np.sin(x) * 2.0
        return np.sum(np.tanh(a) * a) + np.max(a)  # a is read by max too

    x = np.linspace(-1.0, 1.0, 300)
    got, plan = _replays(lambda x: cr.grad(f)(x), (x,))
    with cr.fusion(False):
        np.testing.assert_allclose(got, cr.grad(f)(x), rtol=1e-13, atol=1e-13)


def test_a_value_written_in_place_is_not_absorbed(monkeypatch):
    def f(x, v):
        b = np.exp(x * 0.5)         # read by the region, then written in place
        h = cr.hvp(lambda y: np.sum(np.tanh(y * b) ** 2), x, v)
        b += 1.0
        return h * b

    x = np.linspace(-1.0, 1.0, 300)
    v = np.sin(np.arange(300.0))
    got, _ = _replays(f, (x, v))
    with monkeypatch.context() as m:
        _without_pass(m)
        want, _ = _replays(f, (x, v))
    np.testing.assert_array_equal(got, want)
    with cr.fusion(False):
        np.testing.assert_allclose(got, f(x, v), rtol=1e-12, atol=1e-12)


def test_absorbed_programs_keep_dtypes_of_weak_constants():
    # float32 values with Python constants: float32 throughout, as NumPy
    def f(x):
        return np.sum(np.sqrt(x * x * 0.1 + 1.0) * 3.0)

    x = np.linspace(-2, 2, 500).astype(np.float32)
    v = np.ones(500, np.float32)
    got, plan = _replays(lambda x, v: cr.hvp(f, x, v), (x, v))
    assert got.dtype == np.float32
    for obj in plan.namespace.values():
        if isinstance(obj, ee.Program):
            assert all(dt == np.float32 for _, _, dt in obj.variables)
    with cr.fusion(False):
        want = cr.hvp(f, x, v)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
