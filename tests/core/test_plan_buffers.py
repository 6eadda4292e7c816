"""Arrays a plan keeps between replays (``chainrules.plan_buffers``): the
replays' values are eager's bit for bit, a result handed out is never
written by a later call, threads and nested replays never share one."""

import operator
import threading
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules import plan_buffers
from chainrules.pytree import flatten
from chainrules.plan import COMPILE_AFTER

CALLS = COMPILE_AFTER + 8  # (replays as data, compiled segment by segment, then code)


def _same(a, b):
    """Equal bit for bit (signed zeros and NaNs included), leaf by leaf."""
    la, lb = flatten(a)[0], flatten(b)[0]
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes(), (x, y)


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _inputs(n, k, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [(1.0 + 0.3 * rng.standard_normal(n)).astype(dtype) for _ in range(k)]


def _prepared(jitted, *args):
    """``jitted(*args)`` recorded, and every stage of its plan's passes run
    (a replay runs one per call after the check: ``plan_stages``)."""
    jitted(*args)
    jitted.plan(*args).prepare()


def _kept(jitted, *args):
    """The plan's source, once it keeps arrays (after its first replay)."""
    source = jitted.plan(*args).source
    return "kept=" in source or "kept_call" in str(jitted.plan(*args))


def _unkept(monkeypatch, fn, *args):
    """``cr.jit(fn)`` recorded, checked and prepared (every stage of its
    passes run) with nothing kept."""
    j = cr.jit(fn)
    with monkeypatch.context() as m:
        m.setattr(plan_buffers, "KEEP_MIN_BYTES", 1 << 62)
        j(*args)
        j(*args)
        j.plan(*args).prepare()
    assert not _kept(j, *args)
    return j


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_rosenbrock_replays_are_the_plans_and_keep_arrays(dtype, monkeypatch):
    n = 3 * plan_buffers.KEEP_MIN_BYTES // np.dtype(dtype).itemsize
    vg = cr.value_and_grad(_rosen)
    hv = lambda x, v: cr.hvp(_rosen, x, v)  # noqa: E731
    xs = _inputs(n, CALLS, dtype)
    # the same plans keeping nothing: the values to equal bit for bit (the
    # fused regions of a plan at these sizes may round otherwise than
    # eager's calls: within the fused sweeps' bound)
    uvg, uhv = _unkept(monkeypatch, vg, xs[0]), _unkept(monkeypatch, hv, xs[0], xs[1])
    jvg, jhv = cr.jit(vg), cr.jit(hv)
    held = []
    for k, x in enumerate(xs):
        v = xs[k - 1]
        got, want = jvg(x), uvg(x)
        _same(got, want)
        eager = vg(x)[1]
        scale = 64 * np.finfo(dtype).eps * np.max(np.abs(eager))
        np.testing.assert_allclose(got[1], eager, rtol=0, atol=scale)
        hgot = jhv(x, v)
        _same(hgot, uhv(x, v))
        held.append((got, want))
        held.append((hgot, uhv(x, v)))
    assert _kept(jvg, xs[0]) and _kept(jhv, xs[0], xs[1])
    # every result handed out is as it was made: no later call wrote it
    for got, want in held:
        _same(got, want)


def test_small_plans_keep_nothing():
    x = _inputs(100, 1)[0]
    j = cr.jit(cr.value_and_grad(_rosen))
    for _ in range(3):
        j(x)
    assert not _kept(j, x)


@pytest.fixture(params=[False, True], ids=["allocator-frees", "allocator-keeps"])
def keep_all(monkeypatch, request):
    """Every value kept whatever its size: the kept paths on small data,
    with a whole region's run taking kept arrays or making new ones (an
    allocator that keeps freed memory, ``ALLOCATOR_KEEPS_MEMORY``)."""
    monkeypatch.setattr(plan_buffers, "KEEP_MIN_BYTES", 0)
    monkeypatch.setattr(plan_buffers, "ALLOCATOR_KEEPS_MEMORY", request.param)


def _programs():
    """Functions whose intermediates reach their results in the ways a
    plan must see: views, reshapes, aux values, in-place writes."""
    def views(x):
        y = np.sin(x) * 2.0
        return y[::2], np.sum(y)

    def reshaped(x):
        y = np.exp(x) + 1.0
        return y.reshape(-1, 1), y.T

    def aux(x):
        y = np.tanh(x) * x
        return np.sum(y ** 2), y

    def inplace(x):
        y = np.cos(x) * 3.0
        y += x
        y *= 2.0
        return np.sum(y * y)

    def written(x):
        y = x * 2.0
        buf = np.zeros_like(x)
        buf[1:] = y[:-1]  # (a copy of the values)
        return np.sum(buf * y), y + 1.0

    def chain(x):
        a = np.sin(x)
        b = a * x + np.cos(a)
        c = np.sqrt(b * b + 1.0)
        return np.sum(c), c - a

    def broadcast(x):
        m = x.reshape(3, 4)
        r = np.exp(m) / np.sum(np.exp(m), axis=1, keepdims=True)
        return np.sum(r * m), r

    return [views, reshaped, aux, inplace, written, chain, broadcast]


@pytest.mark.parametrize("f", _programs(), ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_kept_arrays_never_reach_results(f, dtype, keep_all):
    if dtype is np.complex128 and f.__name__ in ("inplace", "written", "broadcast"):
        pytest.skip("a real function of a real variable")
    xs = [x.astype(dtype) for x in _inputs(12, 12, seed=3)]
    if dtype is np.complex128:
        xs = [x + 0.5j * x[::-1] for x in xs]
    jitted = cr.jit(f)
    held = []
    for x in xs:
        got, want = jitted(x), f(x)
        _same(got, want)
        held.append((got, want))
    if dtype is not np.complex128:
        def first(x):
            return np.sum(flatten(f(x))[0][0])

        g, e = cr.jit(cr.value_and_grad(first)), cr.value_and_grad(first)
        for x in xs:
            got, want = g(x), e(x)
            _same(got, want)
            held.append((got, want))
    for got, want in held:
        _same(got, want)


def test_threads_replaying_one_plan_use_their_own_arrays(monkeypatch):
    n = 2 * plan_buffers.KEEP_MIN_BYTES // 8
    vg = cr.value_and_grad(_rosen)
    x0 = _inputs(n, 1)[0]
    j, plain = cr.jit(vg), _unkept(monkeypatch, vg, x0)
    for _ in range(CALLS):  # (compiled, keeping arrays)
        j(x0)
    assert _kept(j, x0)
    inputs = {s: _inputs(n, 25, seed=s) for s in range(4)}
    want = {s: [plain(x) for x in xs] for s, xs in inputs.items()}
    errors = []

    def work(seed):
        try:
            for x, w in zip(inputs[seed], want[seed]):
                _same(j(x), w)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_nested_replay_takes_fresh_arrays(monkeypatch):
    monkeypatch.setattr(plan_buffers, "KEEP_AFTER", -1)
    kept = plan_buffers.Kept()
    store = kept.acquire()
    assert store is not None and store.busy
    assert kept.acquire() is None  # (a replay on this thread holds it)
    store.busy = False
    seen = []

    def code(x, s):
        seen.append(s)
        if len(seen) == 1:
            inner(x)  # the plan again, inside its own replay
        raise ValueError("the replay fails")

    inner = kept.wrap(code)
    with pytest.raises(ValueError):
        inner(1.0)
    assert seen[0] is store and seen[1] is None
    assert kept.acquire() is store  # released, after the error too
    other = []
    t = threading.Thread(target=lambda: other.append(kept.acquire()))
    t.start()
    t.join()
    assert other[0] is not None and other[0] is not store


def test_failed_guards_and_warnings_leave_replays_right(keep_all):
    def f(x):
        y = np.exp(x) * 2.0
        if np.sum(x) > 0:
            return np.sum(np.log(y) * y), y - 1.0
        return np.sum(y * y), y + 1.0

    vg = cr.value_and_grad(lambda x: f(x)[0])
    j = cr.jit(vg)
    rng = np.random.default_rng(5)
    held = []
    for k in range(3 * CALLS // 2):
        x = rng.standard_normal(16) + (0.5 if k % 3 else -0.5)
        if k % 7 == 6:
            x[3] = -np.inf  # (exp(-inf) = 0: log(0) warns: that call runs eagerly)
        with np.errstate(divide="ignore" if k % 2 else "warn", invalid="ignore"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got, want = j(x), vg(x)
        _same(got, want)
        held.append((got, want))
    for got, want in held:
        _same(got, want)


def test_the_escape_analysis_follows_views_and_regions():
    from chainrules.staging import Ref

    def is_region(step):
        return False

    # v1 = sin(v0); v2 = v1[::2] (a view); result v2: v1 escapes; v3 = v1 * 2
    # (new) read by nothing returned: private
    steps = [("call", np.sin, (Ref(0),), {}, Ref(1)),
             ("call", operator.getitem, (Ref(1), slice(None, None, 2)), {},
              Ref(2)),
             ("call", np.multiply, (Ref(1), 2.0), {}, Ref(3)),
             ("call", np.add, (Ref(3), 1.0), {}, Ref(4)),
             ("call", np.sum, (Ref(4),), {}, Ref(5))]
    esc = plan_buffers.escaping(steps, [Ref(2), Ref(5)], is_region)
    assert {1, 2, 5} <= esc and not ({3, 4} & esc)
    # a reduction's keywords make a new array all the same; out= does not
    steps2 = [("call", np.sin, (Ref(0),), {}, Ref(1)),
              ("call", np.sum, (Ref(1),), {"axis": 0, "keepdims": True}, Ref(2)),
              ("call", np.exp, (Ref(0),), {}, Ref(3)),
              ("call", np.sum, (Ref(3),), {"axis": 0, "out": Ref(4)}, Ref(5))]
    esc = plan_buffers.escaping(steps2, [Ref(2), Ref(5)], is_region)
    assert 1 not in esc and {3, 4, 5} <= esc
    # a write with out= makes its result the array written: it escapes
    steps.append(("call", np.multiply, (Ref(3), 2.0), {"out": Ref(4)}, Ref(6)))
    esc = plan_buffers.escaping(steps, [Ref(6)], is_region)
    assert {3, 4, 6} <= esc


def _tv(u, f):
    dx = u[1:, :-1] - u[:-1, :-1]
    dy = u[:-1, 1:] - u[:-1, :-1]
    return np.sum(np.sqrt(dx * dx + dy * dy + 1e-3)) + 0.5 * np.sum((u - f) ** 2)


def _elementwise(u):
    return np.sum(np.exp(np.sin(u)) * u + np.tanh(u) ** 2)


@pytest.mark.parametrize("how", ["value_and_grad", "hvp", "elementwise", "elementwise_hvp"])
def test_regions_scatters_and_grids_keep_their_arrays(how, keep_all, monkeypatch):
    # (regions form from plan_regions' sizes: 72 x 72 images; an elementwise
    # function's gradient is a region's result, returned as it is)
    rng = np.random.default_rng(11)
    f = rng.standard_normal((72, 72))
    us = [rng.standard_normal((72, 72)) for _ in range(CALLS)]
    if how.startswith("elementwise"):
        fn = (cr.value_and_grad(_elementwise) if how == "elementwise" else
              lambda u, v: cr.hvp(_elementwise, u, v))
        args = [(u,) if how == "elementwise" else (u, us[k - 1]) for k, u in enumerate(us)]
    elif how == "hvp":
        fn = lambda u, v: cr.hvp(lambda u: _tv(u, f), u, v)  # noqa: E731
        args = [(u, us[k - 1]) for k, u in enumerate(us)]
    else:
        fn = cr.value_and_grad(lambda u: _tv(u, f))
        args = [(u,) for u in us]
    plain = _unkept(monkeypatch, fn, *args[0])
    j = cr.jit(fn)
    held = []
    for a in args:
        got, want = j(*a), plain(*a)
        _same(got, want)
        held.append((got, want))
    text = str(j.plan(*args[0]))
    assert "kept" in text and ("Grid(" in text or "Scatter(" in text
                               or how.startswith("elementwise"))
    for got, want in held:
        _same(got, want)


@pytest.mark.parametrize("n", [5000, 200_000])  # (one run; blocks over threads)
@pytest.mark.parametrize("mode", ["off", "always"])  # (NumPy; compiled kernels)
def test_a_region_keeps_only_its_private_results(n, mode, monkeypatch):
    from chainrules import elementwise_expr as ee

    monkeypatch.setattr(plan_buffers, "KEEP_AFTER", -1)
    monkeypatch.setattr(plan_buffers, "ALLOCATOR_KEEPS_MEMORY", False)
    from chainrules import kernels

    a, b = ee.placeholder("a", np.float64), ee.placeholder("b", np.float64)
    s = ee.apply(np.sin, (a,))
    program = ee.Program((ee.apply(np.multiply, (s, b)), ee.apply(np.add, (s, b)), a))
    kept = plan_buffers.Kept()
    outs = []
    if mode == "always" and not kernels.available():
        pytest.skip("numba is not installed")
    token = kernels.set_mode(mode)
    try:
        _run_kept(program, kept, n, outs, kernels)
    finally:
        kernels.reset_mode(token)
    # the result not kept is a new array at every call, never written again
    assert len({id(o) for o, _ in outs}) == len(outs)
    for o, w in outs:
        np.testing.assert_array_equal(o, w)


def _run_kept(program, kept, n, outs, kernels):
    rng = np.random.default_rng(2)
    for _ in range(6):
        env = {"a": rng.standard_normal(n), "b": rng.standard_normal(n)}
        store = kept.acquire()
        try:
            got = kernels.run(program, env, 2, kept=(store, 7, frozenset({0})))
        finally:
            store.busy = False
        want = program(env)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert got[2] is env["a"]
        assert got[0] is store.bufs[7, 0]  # (kept: the same array each call)
        outs.append((got[1], want[1].copy()))


def test_kept_arrays_wait_for_replays_and_stay_within_the_budget(monkeypatch):
    import gc

    monkeypatch.setattr(plan_buffers, "ALLOCATOR_KEEPS_MEMORY", False)
    n = 4 * plan_buffers.KEEP_MIN_BYTES // 8
    vg = cr.value_and_grad(_elementwise)
    xs = _inputs(n, 12, seed=4)
    others = [_inputs(n + k, 1, seed=k)[0] for k in range(1, 5)]
    # the values of replays of plans keeping nothing (a plan's fused regions
    # may round otherwise than eager at these sizes)
    plain = cr.jit(vg)
    with monkeypatch.context() as m:
        m.setattr(plan_buffers, "KEEP_MIN_BYTES", 1 << 62)
        want = {}
        for x in xs + others:
            _prepared(plain, x)
            want[id(x)] = plain(x)
    gc.collect()  # (the plans of other tests given back first)
    base = plan_buffers.held_bytes()
    j = cr.jit(vg)
    _prepared(j, xs[0])
    for x in xs[1:plan_buffers.KEEP_AFTER + 1]:  # (the check, replays)
        _same(j(x), want[id(x)])
    assert plan_buffers.held_bytes() == base  # nothing kept yet
    for x in xs:
        _same(j(x), want[id(x)])
    one = plan_buffers.held_bytes() - base
    assert one >= n * 8  # at least one array of the plan kept
    # signatures of other shapes: beyond the budget nothing more is kept
    monkeypatch.setattr(plan_buffers, "KEEP_BUDGET_BYTES", base + 2 * one)
    for x in others:
        _prepared(j, x)
        for _ in range(plan_buffers.KEEP_AFTER + 2):
            _same(j(x), want[id(x)])
    assert base + one < plan_buffers.held_bytes() <= base + 2 * one
    j.clear_cache()
    del j
    gc.collect()
    assert plan_buffers.held_bytes() == base  # given back with the plans
