"""A fused region and the scatter of its two results into one array at
neighbouring offsets (``plan_regions.scatter_pairs``, ``kernel_scatter``):
the gradient of ``f(x[1:], x[:-1])`` as one step, then one compiled loop.

Results are bit for bit those of the plan without the pass (the same NumPy
calls), and a kernel's those of the NumPy program, on every thread count
and at every block boundary, signed zeros included."""

import operator
import sys
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules import kernel_scatter, kernels, plan_regions
from chainrules.staging import Ref

# (fusion at every size, as in test_fusion: the thresholds are for speed)
from test_fusion import setup_module, teardown_module  # noqa: F401
from test_kernels import _cache_dir, _same_bits, needs_numba  # noqa: F401

jit_module = sys.modules["chainrules.jit"]

#: a scattered buffer of at least this many elements is written as
#: ``empty; zero the rest; copy; add`` (``sweep_common._placed``), the form
#: the pass takes
N = 5000


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _mirror(x):  # x[:-1] read first: the scatter's mirror image
    return np.sum(x[:-1] * x[:-1] * x[1:] + np.sin(x[1:]) * 3.0)


def _trig(x):
    return np.sum(np.sin(x[:-1]) * np.cos(x[1:]) + x[1:] ** 2)


CASES = [("rosen-hvp", lambda x, v: cr.hvp(_rosen, x, v)),
         ("rosen-grad", lambda x, v: cr.grad(_rosen)(x) * v),
         ("mirror-hvp", lambda x, v: cr.hvp(_mirror, x, v)),
         ("mirror-grad", lambda x, v: cr.grad(_mirror)(x)),
         ("trig-hvp", lambda x, v: cr.hvp(_trig, x, v))]


def _points(dt, n=N, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, n).astype(dt)
    v = rng.standard_normal(n).astype(dt)
    return x, v


def _replay(call, args, mode, calls=4):
    j = cr.jit(call, warn=False)
    with cr.fusion(kernels=mode):
        out = [j(*args)]
        j.plan(*args).prepare()  # (every stage of the plan's passes run now)
        out += [j(*args) for _ in range(calls - 1)]
    return out[-1], j.plan(*args)


def _scatters(plan):
    return [v for v in plan.namespace.values() if isinstance(v, kernel_scatter.Scatter)]


def _without_scatter(monkeypatch):
    monkeypatch.setattr(plan_regions, "scatter_pairs", lambda steps, *a: steps)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_the_pass_keeps_results_bit_for_bit(name, call, dt, monkeypatch):
    x, v = _points(dt)
    got, plan = _replay(call, (x, v), False)
    (spec,) = _scatters(plan)
    assert spec.size == N and spec.dtype == dt, spec
    assert not any(obj is operator.setitem or obj is np.empty_like
                   for obj in plan.namespace.values()), plan
    _without_scatter(monkeypatch)
    before, plan_before = _replay(call, (x, v), False)
    assert not _scatters(plan_before)
    assert got.dtype == before.dtype == dt
    assert _same_bits(got, before)


@needs_numba
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_the_kernel_equals_the_numpy_step(name, call, dt, threads, monkeypatch):
    x, v = _points(dt, seed=threads)
    monkeypatch.setattr(kernels, "MIN_WORK", 0 if threads > 1 else 10**15)
    with cr.fusion(threads=threads):
        numpy_plan, _ = _replay(call, (x, v), False)
        runs = sum(r["kernel_calls"] for r in kernels.stats())
        compiled, plan = _replay(call, (x, v), "always")
    assert _scatters(plan)
    assert sum(r["kernel_calls"] for r in kernels.stats()) > runs
    if name.startswith(("trig", "mirror")):  # sin, cos: the compiler's, a few ulps
        np.testing.assert_allclose(compiled, numpy_plan, rtol=8 * np.finfo(dt).eps,
                                   atol=8 * np.finfo(dt).eps)
    else:
        assert _same_bits(compiled, numpy_plan)


@needs_numba
@pytest.mark.parametrize("a_last", [True, False])
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_signed_zeros_at_the_ends_and_block_boundaries(a_last, threads, monkeypatch):
    """Every element of A and B a signed zero or not, the block cuts of 2
    and 4 threads included: each of D's additions is NumPy's."""
    from chainrules import elementwise_expr as ee
    monkeypatch.setattr(kernels, "MIN_WORK", 0)
    L = 12
    x = ee.placeholder("x", np.dtype(float))
    y = ee.placeholder("y", np.dtype(float))
    program = ee.Program((ee.apply(np.negative, (x,)), ee.apply(np.multiply, (y, 1.0))))
    spec = kernel_scatter.Scatter(0, 1, a_last, L + 1, np.float64)
    rng = np.random.default_rng(threads)
    for trial in range(20):
        env = {"x": rng.choice([0.0, -0.0, 1.5, -2.0], L),
               "y": rng.choice([0.0, -0.0, 0.25, -3.0], L)}
        expect = spec.numpy(program, env, 1)
        with cr.fusion(kernels="always"):
            got = kernels.run(program, env, threads, spec)
        assert got[1] is None and expect[1] is None
        assert _same_bits(got[0], expect[0]), (trial, env, got[0], expect[0])
        assert np.array_equal(np.signbit(got[0]), np.signbit(expect[0]))


@pytest.mark.parametrize("a_last", [True, False])
@pytest.mark.parametrize("L", [1, 2, 13])
def test_the_numpy_step_is_the_plans_calls_bit_for_bit(a_last, L):
    """``Scatter.numpy`` writes each element of D once; the plan's calls
    (D[0:1] = 0; D[1:] = A; D[:-1] += B, or the mirror image) give the same
    bits: signed zeros, infinities and NaNs included."""
    from chainrules import elementwise_expr as ee
    x = ee.placeholder("x", np.dtype(float))
    y = ee.placeholder("y", np.dtype(float))
    program = ee.Program((ee.apply(np.negative, (x,)), ee.apply(np.multiply, (y, 1.0))))
    spec = kernel_scatter.Scatter(0, 1, a_last, L + 1, np.float64)
    rng = np.random.default_rng(L)
    values = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]
    for trial in range(30):
        env = {"x": rng.choice(values, L), "y": rng.choice(values, L)}
        with np.errstate(all="ignore"):
            got = spec.numpy(program, env, 1)
            a, b = -env["x"], env["y"] * 1.0
            d = np.empty(L + 1)
            if a_last:
                d[0:1] = 0
                d[1:] = a
                d[:-1] += b
            else:
                d[-1:] = 0
                d[:-1] = a
                d[1:] += b
        assert got[1] is None
        assert _same_bits(got[0], d), (trial, env, got[0], d)


@needs_numba
def test_an_overflow_reruns_numpy_with_its_warning():
    x = np.full(N, 1e200)
    x[7] = 3.0
    v = np.ones(N)
    call = CASES[0][1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expect, _ = _replay(call, (x, v), False)
    j = cr.jit(call, warn=False)
    with cr.fusion(kernels="always"), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for k in range(4):
            got = j(x, v)
            if k == 0:
                j.plan(x, v).prepare()  # (every stage of the plan's passes run now)
    assert any("overflow" in str(w.message) for w in seen), [str(w.message) for w in seen]
    assert _scatters(j.plan(x, v))
    assert _same_bits(got, expect)


def test_both_mirror_images_are_taken():
    x, v = _points(np.float64)
    seen = set()
    for fun in (lambda x: np.sum(x[1:] * x[:-1] ** 2), lambda x: np.sum(x[:-1] * x[1:] ** 2)):
        _, plan = _replay(lambda x, v: cr.hvp(fun, x, v), (x, v), False)
        seen |= {s.a_last for s in _scatters(plan)}
    assert seen == {True, False}


def test_kernels_off_runs_the_numpy_step():
    x, v = _points(np.float64)
    runs = sum(r["kernel_calls"] for r in kernels.stats())
    got, plan = _replay(CASES[0][1], (x, v), False)
    assert _scatters(plan)
    assert sum(r["kernel_calls"] for r in kernels.stats()) == runs
    np.testing.assert_allclose(got, cr.hvp(_rosen, x, v), rtol=1e-12, atol=1e-9)


def _steps(ra_uses=1, m=6):
    """A region step and the scatter after it, with ``ra`` read
    ``ra_uses`` times."""
    from chainrules import elementwise_expr as ee
    program = ee.Program((ee.placeholder("x", np.dtype(float)),
                          ee.placeholder("y", np.dtype(float))))
    r = [Ref(i) for i in range(10)]
    steps = [("call", kernels.run, (program, {"x": r[0], "y": r[1]}, 1), {}, (r[2], r[3])),
             ("call", np.empty_like, (r[2],), {"shape": (m,), "dtype": np.dtype(float)},
              r[4]),
             ("call", operator.setitem, (r[4], (slice(0, 1, None),), 0), {}, None),
             ("call", operator.setitem, (r[4], (slice(1, None, None),), r[2]), {}, None),
             ("call", operator.getitem, (r[4], slice(None, -1, None)), {}, r[5]),
             ("call", np.add, (r[5], r[3]), {"out": (r[5],)}, None)]
    outputs = [r[4]] + [r[2]] * (ra_uses - 1)
    meta = {2: (np.dtype(float), (m - 1,)), 3: (np.dtype(float), (m - 1,))}
    return steps, outputs, meta


def test_the_pass_matches_only_the_whole_pattern():
    steps, outputs, meta = _steps()
    region = lambda fn: fn is kernels.run  # noqa: E731
    (new,) = plan_regions.scatter_pairs(steps, outputs, meta, region)
    assert new[1] is kernel_scatter.run and new[2][3] == kernel_scatter.Scatter(
        0, 1, True, 6, np.float64)
    # A read elsewhere too (here: returned): left as it is
    steps, outputs, meta = _steps(ra_uses=2)
    assert plan_regions.scatter_pairs(steps, outputs, meta, region) == steps
    # another zero-filled slice, another copied one, another view
    for k, idx in [(2, (slice(0, 2, None),)), (3, (slice(2, None, None),)),
                   (4, slice(1, None, None))]:
        steps, outputs, meta = _steps()
        s = steps[k]
        steps[k] = s[:2] + ((s[2][0], idx) + s[2][2:],) + s[3:]
        assert plan_regions.scatter_pairs(steps, outputs, meta, region) == steps, k
    # values of another shape than D's neighbours
    steps, outputs, meta = _steps()
    meta[3] = (np.dtype(float), (4,))
    assert plan_regions.scatter_pairs(steps, outputs, meta, region) == steps
