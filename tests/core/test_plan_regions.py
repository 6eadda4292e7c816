"""The plan pass that writes elementwise calls feeding a fused region alone
into the region's program (``chainrules.plan_regions``): results bit for
bit those of the plan without it, and nothing absorbed that is written in
place or read elsewhere."""

import operator
import sys

import numpy as np
import pytest
from hypothesis import given, settings

import chainrules as cr
from chainrules import elementwise_expr as ee
from chainrules import fused_sweeps as fusion
from chainrules import kernel_scatter, kernels, plan_regions
from chainrules.staging import Ref

# (fusion at every size, as in test_fusion: the thresholds are for speed)
from test_fusion import chain_case, chains, setup_module, teardown_module  # noqa: F401


jit_module = sys.modules["chainrules.jit"]  # (cr.jit is the function)




def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _replays(fun, args, mode=False, calls=4):
    j = cr.jit(fun, warn=False)
    with cr.fusion(kernels=mode):
        out = [j(*args)]
        j.plan(*args).prepare()  # (every stage of the plan's passes run now)
        out += [j(*args) for _ in range(calls - 1)]
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
    monkeypatch.setattr(jit_module, "absorb_stages", lambda meta, is_region: [])


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_rosenbrock_hvp_region_reads_the_inputs_and_agrees_bit_for_bit(dt, monkeypatch):
    x = np.linspace(-1.2, 1.1, 400).astype(dt)
    v = np.cos(np.arange(400.0)).astype(dt)
    call = lambda x, v: cr.hvp(_rosen, x, v)  # noqa: E731
    got, plan = _replays(call, (x, v))
    # the primal values (x[1:] - x[:-1] ** 2) are computed by the region
    # (x ** 2 records the operator, as eager code computes it: NumPy's fast
    # path; the region's expression computes it so too)
    assert not any(obj is np.square or obj is np.subtract or obj is operator.pow
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


def _tv(x, f):
    dx = x[1:, :-1] - x[:-1, :-1]
    dy = x[:-1, 1:] - x[:-1, :-1]
    r = x - f
    return np.sum(np.sqrt(dx * dx + dy * dy + 1e-2)) + 0.05 * np.sum(r * r)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_a_cotangent_made_by_the_plan_is_not_copied(dt, monkeypatch):
    from chainrules.staging import _astype
    rng = np.random.default_rng(2)
    x, f = (rng.standard_normal((40, 30)).astype(dt) for _ in range(2))
    got, plan = _replays(cr.value_and_grad(_tv), (x, f))
    assert not any(obj is _astype for obj in plan.namespace.values()), plan
    monkeypatch.setattr(plan_regions, "drop_copies", lambda steps, *a: steps)
    expect, plan = _replays(cr.value_and_grad(_tv), (x, f))
    assert any(obj is _astype for obj in plan.namespace.values()), plan
    assert got[0] == expect[0] and got[1].dtype == expect[1].dtype == dt
    assert np.array_equal(got[1], expect[1])


def test_a_copy_of_a_value_read_elsewhere_or_not_made_by_a_ufunc_stays():
    from chainrules.staging import _astype
    r = [Ref(i) for i in range(6)]
    meta = {i: (np.dtype(float), (3,)) for i in range(6)}

    def steps(fn=np.multiply, reader=None):
        s = [("call", fn, (r[0], r[1]), {}, r[2]),
             ("call", _astype, (r[2], np.dtype(float)), {"casting": "unsafe", "copy": True},
              r[3])]
        if reader is not None:
            s.append(("call", np.add, (r[2], r[0]), {}, r[4]))
        return s

    new = plan_regions.drop_copies(steps(), [r[3]], meta)
    assert new[1][1] is plan_regions._given and new[1][2] == (r[2],)
    for s, outs in [(steps(reader=True), [r[3], r[4]]),       # read again
                    (steps(np.broadcast_to), [r[3]]),          # a view, read-only
                    (steps(), [r[3], r[2]])]:                  # returned too
        assert plan_regions.drop_copies(s, outs, meta) == s
    # another dtype than the value's: a real cast
    s = steps()
    s[1] = ("call", _astype, (r[2], np.dtype(np.float32)), {"copy": True}, r[3])
    assert plan_regions.drop_copies(s, [r[3]], meta) == s


def test_a_copy_of_a_region_result_is_dropped_only_when_the_region_made_it():
    from chainrules.staging import _astype
    r = [Ref(i) for i in range(8)]
    meta = {i: (np.dtype(float), (3,)) for i in range(8)}
    x = ee.placeholder("x", np.dtype(float))
    made = ee.apply(np.sin, (x,))
    for exprs, dropped in [((made,), True),         # computed by the program
                           ((x,), False),           # the value given, as it is
                           ((made, made), False)]:  # one array as two results
        outs = tuple(r[2 + j] for j in range(len(exprs)))
        steps = [("call", kernels.run, (ee.Program(exprs), {"x": r[0]}, 1), {}, outs),
                 ("call", _astype, (r[2], np.dtype(float)), {"copy": True}, r[6])]
        new = plan_regions.drop_copies(steps, [r[6]], meta, lambda fn: fn is kernels.run)
        assert (new[1][1] is plan_regions._given) is dropped, exprs


def _same(a, b):
    """Equal bit for bit (NaNs where the other has them)."""
    for u, w in zip(cr.pytree.flatten(a)[0], cr.pytree.flatten(b)[0]):
        u, w = np.asarray(u), np.asarray(w)
        assert u.dtype == w.dtype and u.shape == w.shape
        nan = np.isnan(u)
        assert np.array_equal(nan, np.isnan(w))
        assert np.array_equal(u[~nan].view(np.uint8), w[~nan].view(np.uint8))


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_a_chain_of_ufunc_calls_is_one_program_bit_for_bit(dt, monkeypatch):
    rng = np.random.default_rng(4)
    x, f = (rng.standard_normal((70, 60)).astype(dt) for _ in range(2))
    got, plan = _replays(cr.value_and_grad(_tv), (x, f))
    # sqrt(dx * dx + dy * dy + eps) of the value: one program
    assert not any(obj is np.sqrt for obj in plan.namespace.values()), plan
    monkeypatch.setattr(plan_regions, "fuse_chains", lambda steps, *a: steps)
    expect, plan = _replays(cr.value_and_grad(_tv), (x, f))
    assert any(obj is np.sqrt for obj in plan.namespace.values()), plan
    _same(got, expect)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_a_seed_of_ones_is_a_constant_and_its_products_go(dt, monkeypatch):
    # the gradient's seed (ones, broadcast) is no variable of the region:
    # written as 1 into the program, whose products by it are not computed
    x = np.linspace(-1.2, 1.1, 500).astype(dt)
    x[3], x[4] = -0.0, np.inf
    v = np.cos(np.arange(500.0)).astype(dt)
    call = lambda x, v: cr.hvp(_rosen, x, v)  # noqa: E731
    with np.errstate(all="ignore"):
        got, plan = _replays(call, (x, v))
        programs = [o for o in plan.namespace.values() if isinstance(o, ee.Program)]
        assert programs and all("g" not in p.names for p in programs), plan
        monkeypatch.setattr(plan_regions, "uniform_values", lambda steps, *a: steps)
        want, plain = _replays(call, (x, v))
    before = [o for o in plain.namespace.values() if isinstance(o, ee.Program)]
    assert any("g" in p.names for p in before)
    assert sum(len(p.steps) for p in programs) < sum(len(p.steps) for p in before)
    _same(got, want)


def test_a_seed_that_is_a_result_of_its_region_stays():
    # a region giving the seed itself (and its product with x) keeps it a
    # variable: as a constant that result would lose its shape
    from chainrules.staging import _constant
    g = ee.placeholder("g", np.dtype(float))
    x = ee.placeholder("x", np.dtype(float))
    program = ee.Program((g, ee.apply(np.multiply, (g, x))))
    region = lambda program, env, n: None  # noqa: E731
    ones = np.broadcast_to(np.ones(1), (5,))
    steps = [("call", _constant, (ones,), {}, Ref(1)),
             ("call", region, (program, {"g": Ref(1), "x": Ref(0)}, 1), {}, (Ref(2), Ref(3)))]
    meta = {0: (np.dtype(float), (5,)), 1: (np.dtype(float), (5,))}
    assert plan_regions.uniform_values(steps, meta, lambda fn: fn is region) == steps
    # nor a product that would become a result given as it is (the input x)
    program = ee.Program((ee.apply(np.multiply, (g, x)),))
    steps[1] = ("call", region, (program, {"g": Ref(1), "x": Ref(0)}, 1), {}, (Ref(3),))
    assert plan_regions.uniform_values(steps, meta, lambda fn: fn is region) == steps
    # else the seed is written in and the product dropped
    program = ee.Program((ee.apply(np.sin, (ee.apply(np.multiply, (g, x)),)),))
    steps[1] = ("call", region, (program, {"g": Ref(1), "x": Ref(0)}, 1), {}, (Ref(3),))
    new = plan_regions.uniform_values(steps, meta, lambda fn: fn is region)
    assert {k: v.i for k, v in new[1][2][1].items()} == {"x": 0}
    assert [fn for _, fn, *_ in new[1][2][0].steps] == [np.sin]


def test_a_seed_of_ones_stays_where_it_gives_the_shape():
    # a region whose only array of its shape is the seed keeps it
    def f(x):
        return np.sum(np.sin(x[0]) * np.ones(7) * 2.0)

    x = np.array([0.3, 0.5])
    got, _ = _replays(cr.value_and_grad(f), (x,))
    with cr.fusion(False):
        want = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-15)
    assert got[1].shape == (2,)


def _subtract_calls(plan):
    return sum(f"= {name}(" in line for line in plan.source.splitlines()
               for name, obj in plan.namespace.items() if obj is np.subtract)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_a_cheap_value_read_by_regions_alone_is_computed_in_each(dt, monkeypatch):
    # TV's slice differences dx and dy are read by the value's chain and by
    # the gradient's region: each region computes them from views of x,
    # and neither is stored
    rng = np.random.default_rng(5)
    x, f = (rng.standard_normal((70, 60)).astype(dt) for _ in range(2))
    got, plan = _replays(cr.value_and_grad(_tv), (x, f))
    assert _subtract_calls(plan) == 1, plan.source  # x - f alone
    envs = _region_envs(plan)
    assert len(envs) >= 2 and all("'x2'" not in e and "'x3'" not in e for e in envs), envs
    real = plan_regions._absorb

    def unshared(steps, outputs, meta, is_region, shared=False):
        return steps if shared else real(steps, outputs, meta, is_region)

    monkeypatch.setattr(plan_regions, "_absorb", unshared)
    expect, plain = _replays(cr.value_and_grad(_tv), (x, f))
    assert _subtract_calls(plain) == 3, plain.source
    _same(got, expect)
    if kernels.available():
        monkeypatch.setattr(plan_regions, "_absorb", real)
        compiled, _ = _replays(cr.value_and_grad(_tv), (x, f), mode="always")
        eps = np.finfo(dt).eps
        assert abs(compiled[0] - got[0]) <= 64 * eps * abs(got[0])
        np.testing.assert_allclose(compiled[1], got[1], rtol=16 * eps,
                                   atol=16 * eps * np.max(np.abs(got[1])))


def _exps(plan):
    """The exp calls of ``plan``: its steps' and its programs'."""
    return (sum(f"= {name}(" in line for line in plan.source.splitlines()
                for name, obj in plan.namespace.items() if obj is np.exp)
            + sum(fn is np.exp for obj in plan.namespace.values()
                  if isinstance(obj, ee.Program) for _, fn, *_ in obj.steps))


def test_a_costly_value_read_by_regions_is_not_repeated(monkeypatch):
    # exp(x) is read by three regions alone: stored once, not computed in
    # each (a transcendental costs more than reading it back)
    def f(x):
        e = np.exp(x)
        return np.sum(np.sqrt(e + 1.0)) + np.sum(np.sqrt(e + 2.0) * x)

    x = np.linspace(-1.0, 1.0, 400)
    got, plan = _replays(cr.value_and_grad(f), (x,))
    assert _exps(plan) == 1, plan.source
    with cr.fusion(False):
        want = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13, atol=1e-13)
    # (were it cheap, each region would compute it; unless regions are
    # merged into one program, which computes it once)
    monkeypatch.setattr(plan_regions, "SHARED_COST", 100.0)
    monkeypatch.setattr(plan_regions, "merge_regions", lambda steps, *a: (steps, False))
    _, plan = _replays(cr.value_and_grad(f), (x,))
    assert _exps(plan) == 3, plan.source


def test_a_cheap_value_also_read_outside_regions_is_stored():
    def f(x):
        d = x[1:] - x[:-1]
        return np.sum(np.sqrt(d * d + 1.0)) + np.max(d)  # max reads d too

    x = np.linspace(-1.0, 1.0, 400) ** 3
    got, plan = _replays(cr.value_and_grad(f), (x,))
    assert _subtract_calls(plan) == 1, plan.source
    with cr.fusion(False):
        want = cr.value_and_grad(f)(x)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13, atol=1e-13)


@settings(max_examples=40, deadline=None)
@given(chains())
def test_random_chains_are_fused_bit_for_bit(chain):
    shape, yshape, dt, draw, x, y, special, f = chain_case(chain)
    with np.errstate(all="ignore"):
        w = draw(f(x, y).shape)
        t = (draw(shape), draw(yshape))
        for call, args in [(f, (x, y)),
                           (cr.value_and_grad(lambda p, w: np.sum(w * f(*p))), ((x, y), w)),
                           (lambda p, t, w: cr.hvp(lambda q: np.sum(w * f(*q)), p, t),
                            ((x, y), t, w))]:
            if dt == np.complex128 and call is not f:
                continue
            got, _ = _replays(call, args)
            for name in ("fuse_chains", "uniform_values"):
                original = getattr(plan_regions, name)
                setattr(plan_regions, name, lambda steps, *a: steps)
                try:
                    expect, _ = _replays(call, args)
                finally:
                    setattr(plan_regions, name, original)
                _same(got, expect)


def _program_steps(plan):
    return sum(len(o.steps) for o in plan.namespace.values() if isinstance(o, ee.Program))


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_a_recording_fuses_its_sweeps_from_a_smaller_size(dt, monkeypatch):
    # eager sweeps fuse from fusion.MIN_SIZE_SECOND (an HVP); a recording
    # from fusion.MIN_SIZE_STAGED: the fused derivatives' programs make
    # fewer calls than the rules' own (chained into programs by the plan)
    # (this module fuses at every size: the defaults here)
    monkeypatch.setattr(fusion, "MIN_SIZE", 65536)
    monkeypatch.setattr(fusion, "MIN_SIZE_SECOND", 16384)
    monkeypatch.setattr(plan_regions, "MIN_CHAIN_SIZE", 4096)
    n = fusion.MIN_SIZE_STAGED + 100
    assert n < fusion.MIN_SIZE_SECOND
    x = np.linspace(-1.2, 1.1, n).astype(dt)
    v = np.cos(np.arange(n, dtype=float)).astype(dt)
    call = lambda x, v: cr.hvp(_rosen, x, v)  # noqa: E731
    got, plan = _replays(call, (x, v))
    assert not fusion._staging.get()  # (only while recording)
    monkeypatch.setattr(fusion, "MIN_SIZE_STAGED", 10 ** 9)
    unfused, before = _replays(call, (x, v))
    assert 0 < _program_steps(plan) < _program_steps(before), (plan, before)
    eps = np.finfo(dt).eps
    want = call(x, v)  # eager: not fused at this size
    _same(unfused, want)
    np.testing.assert_allclose(got, want, rtol=64 * eps, atol=64 * eps * np.max(np.abs(want)))
