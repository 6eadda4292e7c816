"""A two-dimensional region whose results the plan adds into shifted views
of one array (the gradient of a stencil: ``plan_grid``, ``kernel_grid``):
one step whose results are those of the plan without the pass, bit for
bit (signed zeros included), with NumPy and with the compiled loop, on
one and several threads."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
from chainrules import kernel_grid, kernels, plan_regions

# (fusion at every size, as in test_fusion: the thresholds are for speed)
from test_fusion import setup_module, teardown_module  # noqa: F401

_HAVE_NUMBA = kernels.available()
_MODES = ["off"] + (["always"] if _HAVE_NUMBA else [])


def _tv(x, f):
    dx = x[1:, :-1] - x[:-1, :-1]
    dy = x[:-1, 1:] - x[:-1, :-1]
    r = x - f
    return np.sum(np.sqrt(dx * dx + dy * dy + 1e-2)) + 0.05 * np.sum(r * r)


def _plan(fun, args, mode, threads=1, calls=4):
    j = cr.jit(fun, warn=False)
    with cr.fusion(kernels=mode, threads=threads):
        out = [j(*args)]
        j.plan(*args).prepare()  # (every stage of the plan's passes run now)
        out += [j(*args) for _ in range(calls - 1)]
    return out[-1], j.plan(*args)


def _grid_steps(plan):
    return sum(obj is kernel_grid.run for obj in plan.namespace.values())


def _without_pass(monkeypatch):
    monkeypatch.setattr(plan_regions, "scatter_grids", lambda steps, *a: steps)


def _bitwise(a, b):
    for u, w in zip(cr.pytree.flatten(a)[0], cr.pytree.flatten(b)[0]):
        u, w = np.asarray(u), np.asarray(w)
        assert u.dtype == w.dtype and u.shape == w.shape
        assert np.array_equal(u.reshape(-1).view(np.uint8), w.reshape(-1).view(np.uint8)), \
            np.max(np.abs(u - w))


@pytest.fixture
def split(monkeypatch):
    # kernels over threads at every size (the threshold is for speed)
    monkeypatch.setattr(kernels, "MIN_WORK", 0)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("mode", _MODES)
def test_tv_gradient_is_one_step_bit_for_bit(dt, mode, split, monkeypatch):
    rng = np.random.default_rng(7)
    x, f = (rng.standard_normal((37, 29)).astype(dt) for _ in range(2))
    x[3, 4], x[3, 5], x[0, 0] = -0.0, 0.0, -0.0
    f[:] = np.where(rng.random(f.shape) < 0.2, x, f)  # (zero residuals)
    call = cr.value_and_grad(_tv)
    got = {}
    for threads in (1, 2, 3):
        got[threads], plan = _plan(call, (x, f), mode, threads)
        assert _grid_steps(plan) == 1, plan.source
    with monkeypatch.context() as m:
        _without_pass(m)
        want, plain = _plan(call, (x, f), mode)
        assert _grid_steps(plain) == 0
    for threads in (1, 2, 3):
        _bitwise(got[threads], want)
    with cr.fusion(False):
        eager = call(x, f)
    eps = np.finfo(dt).eps
    np.testing.assert_allclose(got[1][1], eager[1], rtol=64 * eps,
                               atol=64 * eps * np.max(np.abs(eager[1])))


@pytest.mark.skipif(not _HAVE_NUMBA, reason="numba is not installed")
def test_the_compiled_loop_runs_and_a_nan_falls_back_to_numpy(monkeypatch):
    x = np.linspace(-1.0, 1.0, 30 * 20).reshape(30, 20) ** 2
    f = np.cos(x)
    before = sum(r["kernel_calls"] for r in kernels.stats())
    got, _ = _plan(cr.value_and_grad(_tv), (x, f), "always")
    assert sum(r["kernel_calls"] for r in kernels.stats()) > before
    bad = x.copy()
    bad[4, 6] = np.nan
    with monkeypatch.context() as m:
        _without_pass(m)
        want, _ = _plan(cr.value_and_grad(_tv), (bad, f), "off")
    with np.errstate(invalid="ignore"):
        got, _ = _plan(cr.value_and_grad(_tv), (bad, f), "always")
    assert np.isnan(got[0]) and np.array_equal(np.isnan(got[1]), np.isnan(want[1]))
    _bitwise(np.nan_to_num(got[1]), np.nan_to_num(want[1]))


_VIEWS = {"ul": (slice(None, -1), slice(None, -1)), "ur": (slice(None, -1), slice(1, None)),
          "ll": (slice(1, None), slice(None, -1)), "lr": (slice(1, None), slice(1, None))}


@st.composite
def stencils(draw):
    """A loss of a random stencil: products and differences of shifted
    views of one image, through a smooth function, summed."""
    terms = draw(st.lists(st.tuples(st.sampled_from(sorted(_VIEWS)),
                                    st.sampled_from(sorted(_VIEWS)),
                                    st.sampled_from(["-", "*", "+"])),
                          min_size=1, max_size=3))
    outer = draw(st.sampled_from(["sqrt1", "square", "tanh"]))
    shape = draw(st.sampled_from([(2, 2), (2, 7), (9, 2), (13, 11), (40, 33)]))
    dt = draw(st.sampled_from([np.float64, np.float32]))
    layout = draw(st.sampled_from(["C", "F", "strided"]))
    seed = draw(st.integers(0, 2 ** 16))
    return terms, outer, shape, dt, layout, seed


def _stencil_loss(terms, outer):
    def loss(x):
        total = 0.0
        for a, b, op in terms:
            u, w = x[_VIEWS[a]], x[_VIEWS[b]]
            t = u - w if op == "-" else u * w if op == "*" else u + w
            t = (np.sqrt(t * t + 1.0) if outer == "sqrt1" else t * t if outer == "square"
                 else np.tanh(t))
            total = total + np.sum(t)
        return total
    return loss


@settings(max_examples=30, deadline=None)
@given(stencils())
def test_random_stencils_bit_for_bit(case):
    terms, outer, shape, dt, layout, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape if layout != "strided" else (shape[0], 2 * shape[1]))
    x = (np.asfortranarray(x) if layout == "F" else x[:, ::2] if layout == "strided"
         else x).astype(dt, copy=False)
    call = cr.value_and_grad(_stencil_loss(terms, outer))
    old, real = kernels.MIN_WORK, plan_regions.scatter_grids
    kernels.MIN_WORK = 0
    try:
        for mode in _MODES:
            # (against the same mode without the pass: a compiled tanh may
            # differ from NumPy's in the last bit, the grid's additions not)
            plan_regions.scatter_grids = lambda steps, *a: steps
            try:
                want, _ = _plan(call, (x,), mode)
            finally:
                plan_regions.scatter_grids = real
            for threads in (1, 2):
                got, _ = _plan(call, (x,), mode, threads)
                _bitwise(got, want)
    finally:
        kernels.MIN_WORK = old


@pytest.mark.parametrize("rows_bytes", [600, 2000, 10 ** 6])
@pytest.mark.parametrize("case", ["tv", "stencil"])
def test_the_numpy_path_over_blocks_of_rows_is_bit_for_bit(case, rows_bytes, monkeypatch):
    # (a large D goes over blocks of rows, each block's terms added while in
    # cache; here at every size, blocks of 2 rows and more)
    from chainrules import elementwise_threads as et
    rng = np.random.default_rng(11)
    x = rng.standard_normal((29, 23))
    if case == "tv":
        f = rng.standard_normal((29, 23))
        call, args = cr.value_and_grad(_tv), (x, f)
    else:
        # terms from the row above first, then from the same row, and one
        # broadcast along the rows (a term that does not depend on x's rows)
        loss = _stencil_loss([("lr", "ul", "-"), ("ur", "ll", "*"), ("ul", "ul", "+")],
                             "sqrt1")
        call, args = cr.value_and_grad(loss), (x,)
    with monkeypatch.context() as m:
        _without_pass(m)
        want, _ = _plan(call, args, "off")
    monkeypatch.setattr(kernel_grid, "MIN_BLOCKED", 0)
    monkeypatch.setattr(et, "BLOCK_BYTES", rows_bytes)
    blocked = []
    real = kernel_grid.Grid._blocked
    monkeypatch.setattr(kernel_grid.Grid, "_blocked",
                        lambda self, *a: blocked.append(a[-1]) or real(self, *a))
    got, plan = _plan(call, args, "off")
    assert _grid_steps(plan) >= 1
    # (blocks of at least the whole region: run whole)
    assert bool(blocked) is (rows_bytes < 10 ** 6), blocked
    _bitwise(got, want)


def _pattern(extra_reads=(), written=()):
    """A region's step giving C5 and C6, then D[:-1, 1:] += C5 and D[1:, :-1]
    += C6 (D is value 4), as the pass sees them."""
    import operator

    from chainrules.plan_grid import scatter_grids
    from chainrules.plan_regions import _Counts
    from chainrules.staging import Ref

    region = lambda program, env, n: None  # noqa: E731
    steps = [("call", region, ("program", {"p1": Ref(1)}, 1), {}, (Ref(5), Ref(6))),
             ("call", operator.getitem, (Ref(4), (slice(None, -1), slice(1, None))), {},
              Ref(7)),
             ("call", np.add, (Ref(7), Ref(5)), {"out": (Ref(7),)}, None),
             ("call", operator.getitem, (Ref(4), (slice(1, None), slice(None, -1))), {},
              Ref(8)),
             ("call", np.add, (Ref(8), Ref(6)), {"out": (Ref(8),)}, None)]
    steps += [("call", np.negative, (Ref(i),), {}, Ref(20 + i)) for i in extra_reads]
    outputs = [Ref(4)] + [Ref(20 + i) for i in extra_reads]
    meta = {4: (np.dtype(float), (6, 5)), 5: (np.dtype(float), (5, 4)),
            6: (np.dtype(float), (5, 4)), 1: (np.dtype(float), (5, 4))}
    return scatter_grids(steps, outputs, meta, lambda fn: fn is region,
                         _Counts.of(steps, outputs), lambda i: i in written)


def test_the_pass_takes_the_pattern_and_nothing_else():
    (step,) = _pattern()
    assert step[1] is kernel_grid.run and step[4] is None
    grid = step[2][3]
    assert grid.positions == (0, 1) and grid.offsets == ((0, 1), (1, 0))
    assert step[2][1][kernel_grid.BASE].i == 4
    # a cotangent read elsewhere, a region reading a value written in place:
    # the steps stay
    assert len(_pattern(extra_reads=(5,))) == 6
    assert len(_pattern(written=(1,))) == 5


def test_kernel_source_states_each_term():
    grid = kernel_grid.Grid((2, 1, 0), ((0, 1), (0, 0), (1, 0)), (5, 4), np.float64)
    assert grid.skip == (2, 1, 0) and grid == kernel_grid.Grid(
        [2, 1, 0], [(0, 1), (0, 0), (1, 0)], [5, 4], "float64")
    assert hash(grid) == hash(kernel_grid.Grid((2, 1, 0), ((0, 1), (0, 0), (1, 0)), (5, 4),
                                               np.float64))
    assert "Grid(" in repr(grid)
    with pytest.raises(kernels.NotCompilable, match="float16"):
        kernel_grid.Grid((0, 1), ((0, 0), (1, 1)), (3, 3), np.float16).source(None, ())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_tv_keeps_its_grid_step_beside_the_value_region(monkeypatch):
    # at 80 x 80 the value's chain and the gradient's region are both
    # regions: merging them would move the gradient's region away from the
    # additions it is one step with (plan_merge leaves it)
    rng = np.random.default_rng(3)
    x, f = (rng.standard_normal((80, 80)) for _ in range(2))
    call = cr.value_and_grad(_tv)
    got, plan = _plan(call, (x, f), "off")
    assert _grid_steps(plan) == 1, plan.source
    monkeypatch.setattr(plan_regions, "merge_regions", lambda steps, *a: (steps, False))
    want, _ = _plan(call, (x, f), "off")
    _bitwise(got, want)
