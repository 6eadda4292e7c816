"""A fused region's programs split over threads (``fusion(threads=n)``).

The split is along one axis of the data and every entry is computed by the
same sequence of ufuncs as on one thread, so the results must be those of
one thread (to an ulp or so: NumPy's vector loops may round the last
entries of a block otherwise): random elementwise chains (float32, float64,
complex, broadcast second inputs, 0-d, empty and size-1 arrays, NaN and
infinity) through every entry point, programs whose values broadcast along
the split axis, and two-dimensional slices. Floating-point errors and
warnings raised in a worker reach the caller as they would on one thread.
"""

import os
import threading
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings

import chainrules as cr
from chainrules import elementwise_expr as ee
from chainrules import elementwise_threads as et
from chainrules import fused_sweeps as fusion

from test_fusion import _chain, chains, values_of


def setup_module():
    # fuse and split at every size (the thresholds are for speed, not results)
    global _SAVED
    _SAVED = (fusion.MIN_SIZE, fusion.MIN_SIZE_SECOND, fusion.MIN_NONLINEAR, et.MIN_WORK,
              et.MIN_COST)
    fusion.MIN_SIZE = fusion.MIN_SIZE_SECOND = fusion.MIN_NONLINEAR = 0
    et.MIN_WORK = et.MIN_COST = 0


def teardown_module():
    (fusion.MIN_SIZE, fusion.MIN_SIZE_SECOND, fusion.MIN_NONLINEAR, et.MIN_WORK,
     et.MIN_COST) = _SAVED


#: measured: at most 1 (complex powers); real chains come out the same bit for bit
ULPS = 4


def _same(a, b, where):
    fa, fb = cr.pytree.flatten(a)[0], cr.pytree.flatten(b)[0]
    assert len(fa) == len(fb), where
    for u, v in zip(fa, fb):
        u, v = np.asarray(u), np.asarray(v)
        assert u.dtype == v.dtype and u.shape == v.shape, (where, u.dtype, v.dtype)
        # NumPy's vector loops may round an entry at the end of a block
        # otherwise than in its middle (complex powers: 1 ulp): the same
        # non-finite entries, the rest within ULPS of the largest magnitude
        assert np.array_equal(np.isfinite(u), np.isfinite(v)), where
        assert np.array_equal(u[~np.isfinite(u)], v[~np.isfinite(v)], equal_nan=True), where
        fin = np.isfinite(v)
        if fin.any():
            scale = np.max(np.abs(v[fin]))
            tol = ULPS * np.finfo(v.dtype).eps * scale
            assert np.max(np.abs(u[fin] - v[fin])) <= tol, (where, u, v)


def _counting(counts):
    """``_split`` that appends to ``counts`` how many blocks it made (1: none)."""
    real = et._split

    def counting(*args):
        s = real(*args)
        counts.append(1 if s is None else len(s[1]))
        return s

    return counting


@pytest.fixture
def splits(monkeypatch):
    """How many blocks each program run was split into (1: not split)."""
    counts = []
    monkeypatch.setattr(et, "_split", _counting(counts))
    return counts


#: shapes that split along their first axis or their second, or not at all
_SHAPES = [(), (0,), (1,), (5,), (9,), (3, 4), (6, 5), (7, 1)]


@settings(max_examples=40, deadline=None)
@given(chains(_SHAPES))
def test_split_results_are_those_of_one_thread(chain):
    shape, yshape, kind, steps, special, seed = chain
    dt, draw = values_of(kind, seed)
    x, y = draw(shape), draw(yshape)
    if special is not None and x.size:
        x.flat[-1] = special  # in the last block
    f = _chain(steps)
    with np.errstate(all="ignore"):
        out = f(x, y)
        ct, tx, ty, w = draw(out.shape), draw(shape), draw(yshape), draw(out.shape)
        calls = {
            "vjp": lambda: cr.vjp(f, x, y)[1](ct),
            "vjp batch": lambda: cr.vjp(f, x, y)[1].many(np.stack([ct, ct * 0.5 - 1])),
            "jvp": lambda: cr.jvp(f, (x, y), (tx, ty)),
        }
        if dt != np.complex128:
            def loss(p):
                return np.sum(w * f(*p))

            calls["grad"] = lambda: cr.grad(loss)((x, y))
            calls["hvp"] = lambda: cr.hvp(loss, (x, y), (tx, ty))
            calls["hessian"] = lambda: cr.hessian(loss)((x, y))
        blocks = []
        counting = _counting(blocks)
        for where, call in calls.items():
            with cr.fusion(threads=1):
                one = call()
            for n in (2, 3):
                with cr.fusion(threads=n), mock.patch.object(et, "_split", counting):
                    _same(call(), one, f"{where}, {n} threads")
        # the programs were split whenever an axis has room for two blocks
        if any(s >= 4 for s in shape):
            assert max(blocks) >= 2, blocks


def test_programs_split_along_either_axis(splits):
    def tv(u):
        dx = u[1:, :-1] - u[:-1, :-1]
        dy = u[:-1, 1:] - u[:-1, :-1]
        return np.sum(np.sqrt(dx * dx + dy * dy + 1e-3))

    for shape in [(9, 7), (2, 9), (3, 40)]:
        u = np.random.default_rng(1).standard_normal(shape)
        v = np.ones(shape)
        with cr.fusion(threads=1):
            one = cr.value_and_grad(tv)(u), cr.hvp(tv, u, v)
        splits.clear()
        with cr.fusion(threads=2):
            two = cr.value_and_grad(tv)(u), cr.hvp(tv, u, v)
        _same(two, one, shape)
        assert splits and max(splits) == 2, (shape, splits)


def test_program_values_broadcast_along_the_split_axis():
    f64 = np.float64
    a, b, c = (ee.placeholder(n, f64) for n in "abc")
    exprs = (
        a,                                                     # a value given
        ee.constant(2.5),                                      # a constant
        ee.apply(np.multiply, (b, c)),                         # whole values only
        ee.apply(np.add, (ee.apply(np.sin, (a,)), b)),         # split
        ee.where(ee.apply(np.greater, (a, c)), a, b),          # a where
        ee.apply(np.power, (ee.apply(np.add, (a, c)), ee.constant(3.0))),  # a power
    )
    program = ee.Program(exprs)
    rng = np.random.default_rng(2)
    env = {"a": rng.standard_normal((8, 3)), "b": rng.standard_normal((1, 3)),
           "c": f64(0.25)}
    one = program(env, False)
    parts = []
    real = et._split
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(et, "_split", lambda *s: parts.append(real(*s)) or parts[-1])
        two = et.run(program, env, 2)
    assert parts[0][0] == 0 and len(parts[0][1]) == 2
    assert two[0] is env["a"]
    for u, v in zip(two, one):
        assert np.shape(u) == np.shape(v) and np.array_equal(u, v)


def test_floating_point_errors_reach_the_caller(splits):
    x = np.linspace(1.0, 2.0, 64)
    x[-1] = 0.0  # sqrt's derivative divides by zero in the last block only

    def f(x):
        return np.sum(np.sqrt(x) * np.sin(x))

    with cr.fusion(threads=2), np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            cr.grad(f)(x)
    with cr.fusion(threads=2), np.errstate(divide="warn"), warnings.catch_warnings(record=True) \
            as caught:
        warnings.simplefilter("always")
        g = cr.grad(f)(x)  # THE CALL
    with open(__file__) as src:
        line = next(i for i, t in enumerate(src, 1) if t.rstrip().endswith("# THE CALL"))
    divide = [w for w in caught if "divide by zero" in str(w.message)]
    assert len(divide) == 1, [str(w.message) for w in caught]
    assert divide[0].filename == __file__ and divide[0].lineno == line
    assert splits and max(splits) == 2, splits  # the zero was in the worker's block
    with cr.fusion(threads=1), np.errstate(divide="ignore", invalid="ignore"):
        assert np.array_equal(g, cr.grad(f)(x), equal_nan=True)
    assert np.isnan(g[-1]) and np.isfinite(g[:-1]).all()  # inf * sin(0) + 0


def test_sweeps_through_blocked_programs_are_those_of_whole_ones(monkeypatch):
    """grad, hvp, jvp and hessian with every program cut into blocks (of 16
    float64 entries) at 1 and 2 threads equal those of whole programs."""
    def f(x):
        a = x[:-1]
        r = 100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2
        return np.sum(r + np.logaddexp(0.0, np.sin(x[1:]) * 0.5 - 0.25) ** 2)

    rng = np.random.default_rng(7)
    x, v = rng.standard_normal(200), rng.standard_normal(200)
    calls = {"grad": lambda: cr.grad(f)(x), "hvp": lambda: cr.hvp(f, x, v),
             "jvp": lambda: cr.jvp(f, (x,), (v,)), "hessian": lambda: cr.hessian(f)(x[:40])}
    with cr.fusion(threads=1):
        whole = {k: c() for k, c in calls.items()}
    monkeypatch.setattr(et, "BLOCK_BYTES", 8 * 16)
    monkeypatch.setattr(et, "MIN_BLOCKED", 0)
    monkeypatch.setattr(et, "MIN_BETWEEN", 0)
    counts = []
    monkeypatch.setattr(et, "_split", _counting(counts))
    for n in (1, 2):
        for k, c in calls.items():
            with cr.fusion(threads=n):
                _same(c(), whole[k], f"{k}, {n} threads")
    assert max(counts) >= 10, counts  # the programs ran in blocks


@pytest.mark.parametrize("n", [1, 2])
def test_floating_point_errors_of_many_blocks_are_reported_once(monkeypatch, n):
    monkeypatch.setattr(et, "BLOCK_BYTES", 8 * 8)  # blocks of 8 float64 entries
    monkeypatch.setattr(et, "MIN_BLOCKED", 0)
    monkeypatch.setattr(et, "MIN_BETWEEN", 0)
    x = np.linspace(1.0, 2.0, 64)
    x[::4] = 0.0  # a division by zero in every block

    def f(x):
        return np.sum(np.sqrt(x) * np.sin(x))

    counts = []
    monkeypatch.setattr(et, "_split", _counting(counts))
    with cr.fusion(threads=n), np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            cr.grad(f)(x)
    with cr.fusion(threads=n), np.errstate(divide="warn"), warnings.catch_warnings(record=True) \
            as caught:
        warnings.simplefilter("always")
        g = cr.grad(f)(x)  # THE BLOCKED CALL
    with open(__file__) as src:
        line = next(i for i, t in enumerate(src, 1)
                    if t.rstrip().endswith("# THE BLOCKED CALL"))
    divide = [w for w in caught if "divide by zero" in str(w.message)]
    assert len(divide) == 1, [str(w.message) for w in caught]
    assert divide[0].filename == __file__ and divide[0].lineno == line
    assert max(counts) == 8, counts
    assert np.isnan(g[::4]).all() and np.isfinite(np.delete(g, np.s_[::4])).all()


def test_thread_counts_are_per_context_and_checked():
    assert et.threads() >= 1
    seen = {}

    def other():
        seen["other"] = et.threads()

    with cr.fusion(threads=3):
        assert et.threads() == 3
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["other"] == et.threads()
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match="threads"):
            with cr.fusion(threads=bad):
                pass


def test_the_default_follows_the_environment(monkeypatch):
    for var in ("CHAINRULES_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert et._from_environment() == 1
    monkeypatch.setenv("CHAINRULES_NUM_THREADS", "3")
    assert et._from_environment() == 3
    monkeypatch.setenv("CHAINRULES_NUM_THREADS", "many")  # unreadable: the next one
    assert et._from_environment() == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_its_own_workers():
    x = np.linspace(0.5, 1.5, 64)

    def f(x):
        return np.sum(np.tanh(x) * np.sin(x))

    with cr.fusion(threads=2):
        expected = cr.grad(f)(x)  # the parent's workers are running
        with warnings.catch_warnings():  # (3.12 on: fork of a process with threads)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: a fork keeps no thread but the caller's
            ok = False
            try:
                ok = np.array_equal(cr.grad(f)(x), expected)
            finally:
                os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_cheap_or_small_programs_stay_on_one_thread(monkeypatch):
    x = ee.placeholder("x", np.float64)
    cheap = ee.Program((ee.apply(np.multiply, (ee.apply(np.add, (x, x)), x)),))
    costly = ee.Program((ee.apply(np.tanh, (ee.apply(np.sin, (x,)),)),))
    monkeypatch.setattr(et, "MIN_WORK", 200_000)
    monkeypatch.setattr(et, "MIN_COST", 1.5)
    monkeypatch.setattr(et, "MIN_BLOCKED", 6_000_000)
    monkeypatch.setattr(et, "MIN_BETWEEN", 3)
    # (no intermediate: never blocked, whatever its size)
    assert et._split((10 ** 7,), 2, et._mean_cost(cheap), 8, 0) is None
    assert et._split((1000,), 2, et._mean_cost(costly), 8, 1) is None
    assert et._split((10 ** 5,), 2, et._mean_cost(costly), 8, 1) == (
        0, [(0, 50000), (50000, 10 ** 5)], 2)
    # cheap passes over many bytes: blocks in cache, which threads share
    axis, blocks, t = et._split((10 ** 6,), 2, et._mean_cost(cheap), 8, 3)
    assert (axis, t, len(blocks)) == (0, 2, 8)
    # ... but with fewer intermediate arrays they stream from memory: whole
    assert et._split((10 ** 6,), 2, et._mean_cost(cheap), 8, 2) is None


def test_large_programs_run_block_by_block(monkeypatch):
    """Blocks of about ``BLOCK_BYTES`` along the outermost axis whose blocks
    fit (an inner one when the outer blocks would be too large), shared by
    the threads; the results are those of the program whole."""
    monkeypatch.setattr(et, "BLOCK_BYTES", 8 * 1000)
    monkeypatch.setattr(et, "MIN_BLOCKED", 8 * 4000)
    monkeypatch.setattr(et, "MIN_BETWEEN", 3)
    # 1000 elements per block of float64, 500 of complex128
    assert len(et._split((10 ** 4,), 1, 1.0, 8, 3)[1]) == 10
    assert len(et._split((10 ** 4,), 1, 1.0, 16, 3)[1]) == 20
    assert et._split((10 ** 4,), 1, 1.0, 8, 2) is None  # too few intermediates
    assert et._split((3000,), 1, 1.0, 8, 3) is None  # too few bytes
    axis, blocks, _ = et._split((40, 250), 1, 1.0, 8, 3)
    assert axis == 0 and len(blocks) == 10 and blocks[0] == (0, 4)
    axis, blocks, _ = et._split((2, 5000), 1, 1.0, 8, 3)
    assert axis == 1 and len(blocks) == 10 and blocks[0] == (0, 500)
    axis, blocks, t = et._split((10 ** 4,), 3, 10.0, 8, 3)
    assert t == 3 and len(blocks) == 10
    x, y = ee.placeholder("x", np.float64), ee.placeholder("y", np.float64)
    s = ee.apply(np.sin, (x,))
    program = ee.Program((
        ee.apply(np.multiply, (ee.apply(np.add, (s, y)), s)),
        ee.apply(np.tanh, (ee.apply(np.multiply, (x, y)),)),
        x,
    ))
    env = {"x": np.ones(4), "y": np.ones(4)}
    assert et._passes_between(program, env) == 3  # sin, add, multiply
    # with y a scalar, x * y still makes an array; with x one, sin(x) does not
    assert et._passes_between(program, dict(env, y=np.float64(2.0))) == 3
    assert et._passes_between(program, {"x": np.float64(1.0), "y": np.ones(4)}) == 2
    rng = np.random.default_rng(3)
    for shape, yshape in [((10 ** 4,), (10 ** 4,)), ((40, 250), (250,)),
                          ((2, 5000), (2, 1)), ((40, 250), ())]:
        env = {"x": rng.standard_normal(shape), "y": rng.standard_normal(yshape)}
        whole = program(env, False)
        counts = []
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(et, "_split", _counting(counts))
            for n in (1, 2, 3):
                got = et.run(program, env, n)
                assert got[2] is env["x"]
                for u, v in zip(got, whole):
                    assert u.shape == v.shape and np.array_equal(u, v), (shape, n)
        assert min(counts) >= 10, counts


def test_values_of_other_dtypes_are_not_split(splits):
    # the buffers take the expressions' dtypes: a float32 value given to a
    # program built for float64 is evaluated whole (as NumPy computes it)
    x = ee.placeholder("x", np.float64)
    program = ee.Program((ee.apply(np.sin, (x,)),))
    v = np.linspace(0.0, 1.0, 64, dtype=np.float32)
    (r,) = et.run(program, {"x": v}, 2)
    assert splits == [] and r.dtype == np.float32
    (r,) = et.run(program, {"x": v.astype(np.float64)}, 2)
    assert splits == [2] and r.dtype == np.float64
