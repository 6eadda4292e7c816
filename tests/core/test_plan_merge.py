"""The plan pass that writes a fused region into a later region reading its
results (``chainrules.plan_merge``): one program, the replay's results bit
for bit those of the plan without the pass, and no merge where a step in
between reads the first region's results."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import chainrules as cr
from chainrules import elementwise_expr as ee
from chainrules import fused_sweeps as fusion
from chainrules import kernel_scatter, kernels, plan_regions

N = plan_regions.MIN_CHAIN_SIZE + 7  # chains of calls become regions from here


def setup_module():
    # regions made of the plan's chains of calls (plan_regions.fuse_chains),
    # as where a recording's sweeps are not fused
    global _SAVED
    _SAVED = fusion.MIN_SIZE_STAGED
    fusion.MIN_SIZE_STAGED = 10 ** 9


def teardown_module():
    fusion.MIN_SIZE_STAGED = _SAVED


def _rosen_shared(x):
    a = x[:-1]  # (one slice: its cotangent sums both terms', then one scatter)
    return np.sum(100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2)


def _replays(fun, args, calls=4):
    j = cr.jit(fun, warn=False)
    with cr.fusion(kernels=False):
        out = [j(*args)]
        j.plan(*args).prepare()  # (every stage of the plan's passes run now)
        out += [j(*args) for _ in range(calls - 1)]
    return out[-1], j.plan(*args)


def _region_steps(plan):
    return [line for line in plan.source.splitlines()
            if any(f"= {name}(" in line for name, obj in plan.namespace.items()
                   if obj is kernels.run or obj is kernel_scatter.run)]


def _no_merge(monkeypatch):
    monkeypatch.setattr(plan_regions, "merge_regions", lambda steps, *a: (steps, False))


def _same(a, b):
    """Equal bit for bit, signed zeros and NaNs included."""
    for u, w in zip(cr.pytree.flatten(a)[0], cr.pytree.flatten(b)[0]):
        u, w = np.asarray(u), np.asarray(w)
        assert u.dtype == w.dtype and u.shape == w.shape
        assert u.tobytes() == w.tobytes()


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_rosenbrock_hvp_is_one_region(dt, monkeypatch):
    # (at 1e4 elements the chains end at a cotangent that the second region
    # reads and the scatter stores: merged at the second's place)
    n = 10_000
    x = np.linspace(-1.2, 1.1, n).astype(dt)
    v = np.cos(np.arange(n, dtype=float)).astype(dt)
    x[5], v[7], v[-1] = -0.0, -0.0, -0.0
    call = lambda x, v: cr.hvp(_rosen_shared, x, v)  # noqa: E731
    got, plan = _replays(call, (x, v))
    assert len(_region_steps(plan)) == 1, plan
    assert any(isinstance(o, kernel_scatter.Scatter) for o in plan.namespace.values()), plan
    # (the seed of ones is a constant of the merged program: no array of it)
    assert not any(type(o) is np.ndarray for o in plan.namespace.values()), plan
    with monkeypatch.context() as m:
        _no_merge(m)
        want, before = _replays(call, (x, v))
    assert len(_region_steps(before)) >= 2, before
    _same(got, want)
    with cr.fusion(False):
        _same(got, call(x, v))  # and the eager sweeps' own values


def test_no_merge_when_a_step_between_reads_the_first_result():
    def f(x):
        a = np.sin(x) * x + 1.0      # a chain: one region, whose result is
        m = a[:10].copy()            # read between the two regions
        b = np.exp(a) * a - 2.0      # a second chain reading it
        return np.sum(b) + np.sum(m)

    x = np.linspace(0.1, 0.9, N)
    got, plan = _replays(cr.value_and_grad(f), (x,))
    with cr.fusion(False):
        want = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-14)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
    # the forward's two chains stay two regions: the copy reads the first
    forward = [s for s in _region_steps(plan)]
    assert len(forward) >= 2, plan


_UNARY = [np.sin, np.exp, np.tanh, np.square, lambda a: a * 1.5, lambda a: a - 0.25,
          lambda a: 1.0 / (1.0 + a * a)]
_BINARY = [np.add, np.subtract, np.multiply, lambda a, b: a * b + a]


@settings(max_examples=20, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, 30), st.integers(0, 30),
                                st.integers(0, 30)), min_size=2, max_size=9),
       dt=st.sampled_from([np.float64, np.float32]), seed=st.integers(0, 999),
       special=st.sampled_from([None, -0.0, np.inf, np.nan]))
def test_random_programs_merge_bit_for_bit(steps, dt, seed, special):
    # values read several times end chains: several regions, read by others
    def f(x):
        vals = [x, x[::-1] * 0.5]
        for unary, i, j, k in steps:
            a, b = vals[i % len(vals)], vals[j % len(vals)]
            vals.append(_UNARY[k % len(_UNARY)](a) if unary else
                        _BINARY[k % len(_BINARY)](a, b))
        return np.sum(vals[-1] * vals[len(vals) // 2])

    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, N).astype(dt)
    v = rng.standard_normal(N).astype(dt)
    if special is not None:
        x[3] = special
    with np.errstate(all="ignore"):
        for call, args in [(cr.value_and_grad(f), (x,)),
                           (lambda x, v: cr.hvp(f, x, v), (x, v))]:
            got, _ = _replays(call, args)
            with pytest.MonkeyPatch.context() as m:
                _no_merge(m)
                want, _ = _replays(call, args)
            _same(got, want)


@pytest.mark.parametrize("budget", [None, 1000], ids=["default", "small budget"])
def test_a_long_loop_tries_each_pair_once_and_merges_within_a_budget(monkeypatch, budget):
    # a loop whose every step is a region reading the one before (a
    # recurrent cell): the pass tries the pairs that read each other, each
    # once, and merges them within its budget of scanned steps (each merge
    # rescans the plan); the results are the unmerged plan's, bit for bit
    from chainrules import plan_merge

    def f(x):
        h = x
        for k in range(40):
            h = np.tanh(h * 0.9 + 0.1 * k)
            h = h * h + 0.5 * h
        return np.sum(h)

    x = np.linspace(-1.0, 1.0, N)
    tried = []
    real = plan_merge._merged

    def counting(*args):
        tried.append(args[1:3])
        return real(*args)

    monkeypatch.setattr(plan_merge, "_merged", counting)
    if budget is not None:
        monkeypatch.setattr(plan_merge, "MAX_SCANNED", budget)
    got, plan = _replays(lambda x: cr.grad(f)(x), (x,))
    regions = len(_region_steps(plan))
    with monkeypatch.context() as m:
        _no_merge(m)
        want, plain = _replays(lambda x: cr.grad(f)(x), (x,))
    merged = len(_region_steps(plain)) - regions
    if budget is None:  # every pair merges, into programs of MAX_NODES at most
        assert merged > 40, (merged, regions)
    else:  # a scan of this plan's 70-odd steps per merge: about 13 merges
        assert 1 <= merged < 20, (merged, regions)
    # pairs built: the reading pairs, a pair that failed never again (not
    # every pair at every rescan)
    assert len(tried) <= 4 * len(_region_steps(plain)), len(tried)
    _same(got, want)
