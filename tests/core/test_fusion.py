"""Fused sweeps (``chainrules.fusion``) against the same sweeps with every
rule on its own (``fusion(False)``): every expressible elementwise rule of
the library inside a region, and random elementwise chains (float32,
float64, complex, broadcasting, 0-d, empty and size-1 arrays, NaN and
infinity), through ``grad``, ``vjp``, ``jvp`` and ``hvp``.

The bound: a fused result has the unfused one's dtype, shape, and NaN and
infinite entries, and agrees with it to ``BOUND_ULPS`` units of the dtype's
machine epsilon, relative to the largest finite magnitude of the unfused
result (the fused programs multiply scalar factors first and factor
``s a + s b`` as ``s (a + b)``). A result that cancels (an HVP entry small
against the terms it came from) has no scale of its own: for the random
chains it is then compared with the unfused sweep in a wider dtype (long
double, float64 for float32), and its error may be at most four times the
unfused result's plus the bound.
"""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import chainrules as cr
from chainrules import fused_sweeps as fusion
from chainrules import plan_regions, pytree

from test_elementwise_expr import EXPRESSIBLE, SPECS, _sample

def setup_module():
    # fuse at every size here (the thresholds are for speed, not results)
    # (and every region, however few of its members are non-linear)
    # (and plans fuse chains of ufunc calls at every size: plan_regions)
    global _SIZES
    _SIZES = (fusion.MIN_SIZE, fusion.MIN_SIZE_SECOND, fusion.MIN_NONLINEAR,
              plan_regions.MIN_CHAIN_SIZE)
    fusion.MIN_SIZE = fusion.MIN_SIZE_SECOND = fusion.MIN_NONLINEAR = 0
    plan_regions.MIN_CHAIN_SIZE = 0


def teardown_module():
    (fusion.MIN_SIZE, fusion.MIN_SIZE_SECOND, fusion.MIN_NONLINEAR,
     plan_regions.MIN_CHAIN_SIZE) = _SIZES


#: measured: at most 2.0 (float64) and 2.2 (float32) over the library sweep
#: and the random chains; the bound leaves room for other inputs
BOUND_ULPS = 16


@pytest.fixture
def regions(monkeypatch):
    """The number of regions each API call fused, in call order."""
    counts = []
    real = fusion.fuse

    def counting(*args, **kwargs):
        n = real(*args, **kwargs)
        counts.append(n)
        return n

    monkeypatch.setattr(cr.api, "fuse", counting)
    return counts


def _agree(fused, plain, where="", truth=None, infinite_inputs=False):
    """Same dtypes, shapes, NaN and infinite entries, and finite entries
    within the bound; or, given ``truth`` (the unfused sweep in a wider
    dtype), no further from it than four times the unfused result's worst
    error plus the bound (a result that cancels has no scale of its own).
    ``infinite_inputs``: an input was infinite, and a product 0 * inf may
    be formed in one order of the products and not in the other (NaN
    against a number, neither more right: the derivative at infinity is
    undefined); the entries finite in both are compared."""
    fl, _ = pytree.flatten(fused)
    pl, _ = pytree.flatten(plain)
    tl = [None] * len(pl) if truth is None else pytree.flatten(truth)[0]
    assert len(fl) == len(pl) == len(tl)
    for f, p, t in zip(fl, pl, tl):
        f, p = np.asarray(f), np.asarray(p)
        assert f.dtype == p.dtype and f.shape == p.shape, (where, f.dtype, p.dtype)
        if infinite_inputs:
            fin = np.isfinite(p) & np.isfinite(f)
        else:
            assert np.array_equal(np.isnan(f), np.isnan(p)), where
            inf = np.isinf(p)
            assert np.array_equal(f[inf], p[inf]) and not np.isinf(f[~inf]).any(), where
            fin = np.isfinite(p)
        if not fin.any():
            continue
        scale = np.max(np.abs(p[fin]))
        eps = np.finfo(p.dtype).eps
        err = np.max(np.abs(f[fin] - p[fin]), initial=0)
        if err <= BOUND_ULPS * eps * scale:
            continue
        assert t is not None, (where, err / (eps * scale) if scale else err)
        t = np.asarray(t)[fin]
        err_f = np.max(np.abs(f[fin] - t))
        err_p = np.max(np.abs(p[fin] - t))
        assert err_f <= 4 * err_p + BOUND_ULPS * eps * np.max(np.abs(t)), (
            where, float(err_f), float(err_p))


def _both(call):
    fused = call()
    with cr.fusion(False):
        plain = call()
    return fused, plain


# -- every expressible rule of the library, inside a region --------------------------
def _case(name, dt):
    spec = SPECS[name]
    env, _ = _sample(spec, dt, n=48)
    args = [env["x"]] + ([env["y"]] if hasattr(spec, "dx") else [])
    rng = np.random.default_rng(3)
    w = rng.uniform(0.5, 1.5, args[0].shape).astype(dt)
    return spec.op, args, w, rng


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", EXPRESSIBLE)
def test_library_rule_fused_agrees(name, dt, regions):
    op, args, w, rng = _case(name, dt)

    def vec(*a):
        return w * op(*a)

    def loss(a):
        return np.sum(np.real(vec(*a)) * 0.75)

    def flat(a):  # the sum's uniform cotangent, scaled by constants only
        return np.sum(np.real(op(*a) * 0.75 + 0.5))

    with np.errstate(all="ignore"):
        out = vec(*args)
        ct = rng.standard_normal(np.shape(out)).astype(np.result_type(out))
        ts = [rng.standard_normal(a.shape).astype(dt) for a in args]
        _agree(*_both(lambda: cr.grad(loss)(tuple(args))), "grad")
        _agree(*_both(lambda: cr.vjp(vec, *args)[1](ct)), "vjp")
        _agree(*_both(lambda: cr.jvp(vec, tuple(args), tuple(ts))), "jvp")
        _agree(*_both(lambda: cr.hvp(loss, tuple(args), tuple(ts))), "hvp")
        _agree(*_both(lambda: cr.grad(flat)(tuple(args))), "grad, uniform")
        _agree(*_both(lambda: cr.hvp(flat, tuple(args), tuple(ts))), "hvp, uniform")
    # the rule was inside a fused region (its result type may differ: wofz)
    assert regions and regions[0] >= (1 if np.result_type(out) == dt else 0), regions


# -- random elementwise chains ---------------------------------------------------------
_UNARY = {
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "square": np.square,
    "cube": lambda v: v ** 3, "neg": np.negative, "exp_small": lambda v: np.exp(v * 0.25),
    "scale": lambda v: v * 1.7, "shift": lambda v: v + 0.3, "rsub": lambda v: 2.0 - v,
    "halve": lambda v: v / 2.0,
}
_BINARY = {"mul": np.multiply, "add": np.add, "sub": np.subtract}
_SHAPES = [(), (0,), (1,), (5,), (3, 4)]


@st.composite
def chains(draw, shapes=_SHAPES):
    shape = draw(st.sampled_from(shapes))
    # the second input broadcasts against the first, or has its shape
    yshape = draw(st.sampled_from([shape, shape[1:], (1,) * len(shape), ()]))
    kind = draw(st.sampled_from(["f64", "f32", "c128"]))
    steps = draw(st.lists(st.tuples(st.sampled_from(sorted(_UNARY) + sorted(_BINARY)),
                                    st.integers(0, 10)), min_size=2, max_size=12))
    special = draw(st.sampled_from([None, np.nan, np.inf, -np.inf]))
    seed = draw(st.integers(0, 2 ** 16))
    return shape, yshape, kind, steps, special, seed


def values_of(kind, seed):
    """The dtype of ``kind`` and a function drawing arrays of it by shape."""
    dt = {"f64": np.float64, "f32": np.float32, "c128": np.complex128}[kind]
    rng = np.random.default_rng(seed)

    def draw(s):
        v = rng.uniform(-1.5, 1.5, s)
        if dt == np.complex128:
            v = v + 1j * rng.uniform(-1, 1, s)
        return np.asarray(v, dtype=dt)

    return dt, draw


def _chain(steps):
    def f(x, y):
        vals = [x, y]
        for name, k in steps:
            if name in _UNARY:
                vals.append(_UNARY[name](vals[-1]))
            else:
                vals.append(_BINARY[name](vals[-1], vals[k % len(vals)]))
        return vals[-1] + 0 * x  # the first input's shape at least
    return f


def chain_case(chain):
    """``(shape, yshape, dtype, draw, x, y, special, f)`` of a drawn chain:
    its inputs (the first element of ``x`` the special value, if any) and
    its function."""
    shape, yshape, kind, steps, special, seed = chain
    dt, draw = values_of(kind, seed)
    x, y = draw(shape), draw(yshape)
    if special is not None and x.size:
        x.flat[0] = special
    return shape, yshape, dt, draw, x, y, special, _chain(steps)


@settings(max_examples=60, deadline=None)
@given(chains())
def test_random_chains_fused_agree(chain):
    shape, yshape, dt, draw, x, y, special, f = chain_case(chain)
    counts = []
    real = fusion.fuse

    def counting(*args, **kwargs):
        counts.append(real(*args, **kwargs))
        return counts[-1]

    with np.errstate(all="ignore"):
        out = f(x, y)
        ct, tx, ty, w = draw(out.shape), draw(shape), draw(yshape), draw(out.shape)
        values = (x, y, ct, tx, ty, w)
        # the unfused sweeps in a wider dtype: what a result that cancels is
        # compared with
        wide = {np.float32: np.float64, np.float64: np.longdouble,
                np.complex128: np.clongdouble}[dt]
        wide_values = tuple(np.asarray(v, dtype=wide) for v in values)

        def check(where, call):
            fused, plain = _both(lambda: call(*values))
            with cr.fusion(False):
                truth = call(*wide_values)
            _agree(fused, plain, where, truth,
                   infinite_inputs=special is not None and np.isinf(special))

        with mock.patch.object(cr.api, "fuse", counting):
            check("vjp", lambda x, y, ct, tx, ty, w: cr.vjp(f, x, y)[1](ct))
        # every chain ends in a region (its last step, + 0 * x)
        assert counts[0] >= 1, counts
        check("vjp batch", lambda x, y, ct, tx, ty, w: cr.vjp(f, x, y)[1].many(
            np.stack([ct, ct * 0.5 - 1])))
        check("jvp", lambda x, y, ct, tx, ty, w: cr.jvp(f, (x, y), (tx, ty)))
        if dt != np.complex128:
            def loss(p, w):
                return np.sum(w * f(*p))

            def flat(p, w):  # a sum's uniform cotangent reaches every member unscaled
                return np.sum(f(*p) * 0.5)

            for g in (loss, flat):
                check("grad", lambda x, y, ct, tx, ty, w: cr.grad(g)((x, y), w))
                check("hvp", lambda x, y, ct, tx, ty, w: cr.hvp(
                    lambda p: g(p, w), (x, y), (tx, ty)))
                # batches of directions: every column of the Hessian at once
                check("hessian", lambda x, y, ct, tx, ty, w: cr.hessian(g)((x, y), w))
            # (the recordings behind jacobian and hessian fuse too)
            first = len(counts)  # the fused call's count comes first
            with mock.patch.object(cr.jacobians, "fuse", counting):
                check("jacobian", lambda x, y, ct, tx, ty, w: cr.jacobian(
                    f, argnums=(0, 1))(x, y))
            assert counts[first] >= 1, counts


# -- what fusion leaves alone -----------------------------------------------------------
def test_rosenbrock_is_one_region_and_agrees(regions):
    def rosen(x):
        a = x[:-1]
        return np.sum(100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2)

    x = np.linspace(-1.2, 1.1, 50)
    v = np.cos(np.arange(50.0))
    _agree(*_both(lambda: cr.hvp(rosen, x, v)), "hvp")
    _agree(*_both(lambda: cr.grad(rosen)(x)), "grad")
    assert regions[0] == 1


def test_a_long_chain_is_cut_into_regions_of_bounded_size(regions):
    # 1200 members in one chain: written as one region, its expressions
    # would be deeper than Python's recursion limit
    def f(x):
        for _ in range(600):
            x = np.tanh(x * 1.01)
        return np.sum(x)

    x = np.linspace(-1.0, 1.0, 7)
    wide = x.astype(np.longdouble)
    # products of 1200 partials in another order: compared with the truth
    # in a wider dtype when they differ by more than the bound
    for where, call in [("grad", lambda x: cr.grad(f)(x)),
                        ("hvp", lambda x: cr.hvp(f, x, np.cos(x))),
                        ("hessian", lambda x: cr.hessian(f)(x))]:
        with cr.fusion(False):
            truth = call(wide)
        _agree(*_both(lambda: call(x)), where, truth)
    # 1200 tanh and scaling members, and the sum outside: ceil(1200 / 48)
    # in each fused grad and hvp
    assert [r for r in regions if r] == [-(-1200 // fusion.MAX_MEMBERS)] * 2 == [25, 25], \
        regions


def test_anomaly_mode_sweeps_the_rules_one_by_one(regions):
    def f(x):
        return np.sum(np.sqrt(x * 2.0) * (x - x) * 3.0)

    x = np.array([0.0, 1.0])
    with np.errstate(all="ignore"):
        with cr.detect_anomaly(), pytest.raises(cr.NumericalInstabilityError,
                                                match="pullback of numpy.sqrt"):
            cr.grad(f)(x)
        assert regions == [0]
        # fused, the NaN comes out as it does from the rules one by one
        _agree(*_both(lambda: cr.grad(f)(x)))
        assert regions[1] == 1


def test_small_arrays_are_not_fused(monkeypatch, regions):
    monkeypatch.setattr(fusion, "MIN_SIZE", 100)
    monkeypatch.setattr(fusion, "MIN_SIZE_SECOND", 10)

    def f(x):
        return np.sum(np.tanh(x * 2.0) ** 2)

    for n in (9, 50, 100):
        x = np.linspace(-1, 1, n)
        cr.grad(f)(x)
        cr.hvp(f, x, x)
    assert regions == [0, 0, 0, 1, 1, 1]


def test_a_lone_nonlinear_rule_is_not_fused(monkeypatch, regions):
    monkeypatch.setattr(fusion, "MIN_NONLINEAR", 2)
    b = np.linspace(0, 1, 4)
    x = np.linspace(-1, 1, 4)
    cr.grad(lambda x: np.sum(np.tanh(x + b)))(x)           # add, tanh: one non-linear
    cr.grad(lambda x: np.sum(np.tanh(x + b) ** 2))(x)      # and a square: two
    assert regions == [0, 1]


def test_a_rule_without_second_partials_is_not_fused():
    # the code would read a missing second partial as zero: such a rule
    # keeps its own sweep, which says that it has no second order
    from chainrules.derived import UnaryScalarRule, _UnarySpec
    from chainrules.graph import Tape
    from chainrules.tangents import ZERO

    def record_two(d2):
        spec = _UnarySpec()
        spec.op, spec.name, spec.d, spec.d2 = np.sin, "sin_by_hand", \
            (lambda x, y: np.cos(x)), d2
        spec.const = spec.linear = False
        x = np.linspace(0, 1, 5)
        tape = Tape()
        a = tape.leaf(x)
        b = tape.record(UnaryScalarRule(a, x, np.sin(x), spec), np.sin(x))
        c = tape.record(UnaryScalarRule(b, np.sin(x), np.sin(np.sin(x)), spec),
                        np.sin(np.sin(x)))
        return tape, a, c

    tape, a, c = record_two(None)
    assert fusion.fuse(tape, (c,), second_order=True) == 0
    tans = tape.forward({a: np.ones(5)})
    with pytest.raises(cr.HvpNotSupported, match="second="):
        tape.backward_with_tangents([c], [np.ones(5)], [ZERO], tans)
    # with second partials the same two rules fuse
    tape, a, c = record_two(lambda x, y: -y)
    assert fusion.fuse(tape, (c,), second_order=True) == 1


def test_fusion_is_per_context():
    import threading

    seen = []

    def other():
        seen.append(fusion._enabled.get())

    with cr.fusion(False):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert fusion._enabled.get() is False
    assert seen == [True] and fusion._enabled.get() is True


def test_nested_differentiation_takes_the_rules_one_by_one():
    # the inner tape records traced values of the outer one
    def f(x):
        return np.sum(np.sin(x) * 3.0 + x ** 2)

    x = np.array([0.3, -1.2, 2.0])
    gg = cr.grad(lambda x: np.sum(cr.grad(f)(x) * np.cos(x)))(x)
    with cr.fusion(False):
        ref = cr.grad(lambda x: np.sum(cr.grad(f)(x) * np.cos(x)))(x)
    np.testing.assert_allclose(gg, ref, rtol=1e-14)


def test_an_output_inside_a_region_keeps_its_cotangent():
    def f(x):
        u = np.sin(x) * 2.0
        return np.sum(u * u + np.exp(u)), u

    x = np.array([0.1, 0.7])
    (v, aux), g = cr.value_and_grad(f, has_aux=True)(x)
    with cr.fusion(False):
        (v0, aux0), g0 = cr.value_and_grad(f, has_aux=True)(x)
    np.testing.assert_allclose(g, g0, rtol=1e-15)



# -- gathers of one node at one index, read by one region ----------------------------
def _tv(x):
    """Smoothed total variation: ``x[:-1, :-1]`` is gathered twice."""
    dx = x[1:, :-1] - x[:-1, :-1]
    dy = x[:-1, 1:] - x[:-1, :-1]
    return np.sum(np.sqrt(dx * dx + dy * dy + 1e-3))


def _regions_made(call):
    """The FusedRegion rules ``call()`` made."""
    made = []
    real = fusion.FusedRegion.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self)

    with mock.patch.object(fusion.FusedRegion, "__init__", init):
        call()
    return made


def test_a_node_gathered_twice_at_one_index_is_one_region_input():
    x = np.cos(np.arange(30.0)).reshape(5, 6)
    made = _regions_made(lambda: cr.grad(_tv)(x))
    assert len(made) == 1
    # x[1:, :-1], x[:-1, :-1] (read by both differences) and x[:-1, 1:]
    assert len(made[0].inputs()) == 3 and len(made[0].alias) == 1
    d = made[0].alias[0]
    assert d[0] != d[1] and d[1] in made[0].inputs() and d[0] not in made[0].inputs()


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex128])
def test_merged_gathers_agree_in_every_sweep(dt):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 7)).astype(dt)
    v = rng.standard_normal((6, 7)).astype(dt)
    if dt is np.complex128:
        x = x + 0.5j * rng.standard_normal((6, 7))

    def f(x):  # real-valued for complex x too
        d = x[1:] - x[:-1]
        e = x[:-1] * x[:-1]
        return np.sum(np.real(d * np.conj(d)) + np.real(np.sin(e) * np.conj(e)))

    real = dt is not np.complex128
    loss = _tv if real else f
    _agree(*_both(lambda: cr.grad(loss)(x)), "grad")
    _agree(*_both(lambda: cr.hvp(loss, x, v)), "hvp")
    _agree(*_both(lambda: cr.jvp(loss, (x,), (v,))), "jvp")
    if real:
        _agree(*_both(lambda: cr.hessian(loss)(x[:4, :4])), "hessian")
        _agree(*_both(lambda: cr.jacobian(lambda x: np.sqrt(
            (x[1:] - x[:-1]) ** 2 + (x[:-1] * 2.0) ** 2 + 1.0))(x[:, 0])), "jacobian")
    # against the closed form of the total variation's gradient
    if real:
        x64 = x.astype(np.float64)
        dx = x64[1:, :-1] - x64[:-1, :-1]
        dy = x64[:-1, 1:] - x64[:-1, :-1]
        s = np.sqrt(dx * dx + dy * dy + 1e-3)
        want = np.zeros_like(x64)
        want[1:, :-1] += dx / s
        want[:-1, 1:] += dy / s
        want[:-1, :-1] -= (dx + dy) / s
        tol = 1e-13 if dt is np.float64 else 1e-5
        np.testing.assert_allclose(cr.grad(_tv)(x), want, rtol=tol, atol=tol)


def test_gathers_at_other_indices_or_of_other_nodes_stay_apart(plans):
    """Tapes alike but for their indices share their cached regions; each
    merges its gathers by its own indices only."""
    x = np.linspace(-1.0, 1.0, 12)
    y = np.cos(x)

    def same(x, y):
        return np.sum(np.sin(x[:-1]) * np.cos(x[:-1]))

    def shifted(x, y):
        return np.sum(np.sin(x[:-1]) * np.cos(x[1:]))

    def spelled_otherwise(x, y):  # one slice, written two ways: left apart
        return np.sum(np.sin(x[:-1]) * np.cos(x[0:-1]))

    def other_node(x, y):
        return np.sum(np.sin(x[:-1]) * np.cos(y[:-1]))

    for f, merged in ((same, 1), (shifted, 0), (same, 1), (spelled_otherwise, 0),
                      (other_node, 0)):
        made = _regions_made(lambda: cr.grad(f, argnums=(0, 1))(x, y))
        assert [len(r.alias) for r in made] == [merged], f.__name__
        _agree(*_both(lambda: cr.grad(f, argnums=(0, 1))(x, y)), f.__name__)
        _agree(*_both(lambda: cr.hvp(lambda x: f(x, y), x, y)), f.__name__)


def test_a_gathered_output_keeps_its_own_cotangent():
    def f(x):
        a, b = x[:-1], x[:-1]
        return np.sum(np.sin(a) * np.cos(b)), b

    x = np.linspace(-1.0, 1.0, 9)
    seed = (1.0, np.arange(8.0))
    _, pull = cr.vjp(f, x)
    with cr.fusion(False):
        _, pull0 = cr.vjp(f, x)
    _agree(pull(seed), pull0(seed), "vjp")
    np.testing.assert_allclose(
        pull(seed)[0][:-1], np.cos(2 * x[:-1]) + np.arange(8.0), rtol=1e-14)


def test_merged_gathers_one_by_one_in_nested_differentiation():
    # the inner tape's region reads traced values: its members run alone,
    # and the merged gather's cotangent and tangent are its input's
    x = np.cos(np.arange(20.0)).reshape(4, 5)
    outer = lambda x: np.sum(cr.grad(_tv)(x) * np.sin(x))  # noqa: E731
    gg = cr.grad(outer)(x)
    h = cr.hvp(outer, x, np.cos(x))
    with cr.fusion(False):
        gg0, h0 = cr.grad(outer)(x), cr.hvp(outer, x, np.cos(x))
    _agree(gg, gg0, "grad of grad")
    _agree(h, h0, "hvp of grad")
    np.testing.assert_allclose(gg, gg0, rtol=1e-12, atol=1e-14)
    # an HVP inside: the members' tangents, from the region inputs' ones
    inner = lambda x: np.sum(cr.hvp(_tv, x, np.cos(x)) * np.sin(x))  # noqa: E731
    gh = cr.grad(inner)(x)
    jv = cr.jvp(lambda x: cr.jvp(_tv, (x,), (np.sin(x),))[1], (x,), (np.cos(x),))
    with cr.fusion(False):
        gh0 = cr.grad(inner)(x)
        jv0 = cr.jvp(lambda x: cr.jvp(_tv, (x,), (np.sin(x),))[1], (x,), (np.cos(x),))
    _agree(gh, gh0, "grad of hvp")
    _agree(jv, jv0, "jvp of jvp")



# -- the uniform cotangent 1 ----------------------------------------------------------
def test_powers_of_two_fold_into_a_constant_numerator():
    from chainrules.fusion_code import _Algebra
    from chainrules import elementwise_expr as ee

    alg = _Algebra()
    y = ee.placeholder("y", np.dtype(np.float64))
    x = ee.placeholder("x", np.dtype(np.float64))
    half = ee.apply(np.divide, (ee.constant(0.5), y))
    # 2 * (0.5 / y) * x: the 2 and the 0.5 are one factor 1.0, no pass
    e = alg.mul(ee.apply(np.multiply, (ee.constant(2), x)), half)
    assert e is ee.apply(np.multiply, (x, ee.apply(np.divide, (ee.constant(1.0), y))))
    assert alg.mul(ee.constant(-4), half) is ee.apply(np.divide, (ee.constant(-2.0), y))
    # not a power of two, or a complex denominator: the scalar stays apart
    assert alg.mul(ee.constant(3), half).op == "multiply"
    z = ee.placeholder("z", np.dtype(np.complex128))
    assert alg.mul(ee.constant(2), ee.apply(np.divide, (ee.constant(0.5), z))).op == "multiply"
    # the values: the same numbers, but where 0.5 / y is subnormal (y = 7e307:
    # rounded to fewer bits before the 2 scales it), and there no further
    # from the exact value
    yv = np.array([3.0, 1e-300, -0.1, 7e307])
    xv = np.array([1.5, 2.0, -3.0, 1.0])
    fused, plain = ee.evaluate(e, {"x": xv, "y": yv}), 2 * xv * (0.5 / yv)
    np.testing.assert_array_equal(fused[:3], plain[:3])
    exact = np.longdouble(xv[3]) / np.longdouble(yv[3])
    assert abs(fused[3] - exact) <= abs(plain[3] - exact) and fused[3] != plain[3]


def test_the_gradient_program_of_a_norm_folds_its_constants():
    """TV's region (``sqrt`` of a sum of squares) pulls the sum's cotangent 1
    back in five passes: ``1 / s``, three products, one subtraction."""
    x = np.cos(np.arange(30.0)).reshape(5, 6)
    made = _regions_made(lambda: cr.grad(_tv)(x))
    prog = made[0].code.program("pullback", "one", False)[1]
    assert [st[1] for st in prog.steps] == [np.divide, np.multiply, np.multiply,
                                            np.multiply, np.subtract]


def test_results_for_the_cotangent_one_are_arrays_of_their_own():
    """A region input's cotangent that is a member's value (``w`` in
    ``x * w``) or a constant comes back as a new array of the region's
    dtype, never the value itself."""
    for dt in (np.float64, np.float32):
        w = np.linspace(1.0, 2.0, 6).astype(dt)
        keep = w.copy()

        def f(x, y, z):  # the cotangents of x and z: w and 2
            return np.sum(np.sin(y) * np.cos(y) + x * w + z * 2.0)

        x, y, z = np.linspace(-1.0, 1.0, 6).astype(dt), np.ones(6, dt), np.zeros(6, dt)
        (gx, gy, gz), plain = _both(lambda: cr.grad(f, argnums=(0, 1, 2))(x, y, z))
        _agree((gx, gy, gz), plain, str(dt))
        assert gx.dtype == gz.dtype == dt and not np.shares_memory(gx, w)
        np.testing.assert_array_equal(gx, w)
        np.testing.assert_array_equal(gz, 2.0)
        gx += 1.0
        gz += 1.0
        np.testing.assert_array_equal(w, keep)
        # a second call: nothing it computed was changed by the writes
        _agree(cr.grad(f, argnums=(0, 1, 2))(x, y, z), plain, "again")


# -- regions found once per tape structure ---------------------------------------------
@pytest.fixture
def plans(monkeypatch):
    """Checks, at every fusing call, that the regions found from the cache
    of tape structures are those found afresh; returns the counts of calls
    and of structures grown."""
    seen = {"calls": 0, "grown": 0}
    real_fuse, real_grow = fusion.fuse, fusion._grow_regions

    def grow(*args):
        seen["grown"] += 1
        return real_grow(*args)

    def checking(tape, outputs, keep=(), second_order=False):
        if not fusion._enabled.get():
            return real_fuse(tape, outputs, keep, second_order)
        size = fusion.MIN_SIZE_SECOND if second_order else fusion.MIN_SIZE
        hit = fusion.find_regions(tape, outputs, keep, size)
        cached = dict(fusion._plans)
        fusion._plans.clear()
        fresh = fusion.find_regions(tape, outputs, keep, size)
        fusion._plans.clear()
        fusion._plans.update(cached)
        assert hit == fresh
        seen["calls"] += 1
        return real_fuse(tape, outputs, keep, second_order)

    monkeypatch.setattr(fusion, "_grow_regions", grow)
    monkeypatch.setattr(cr.api, "fuse", checking)
    fusion._plans.clear()
    return seen


def test_an_optimiser_loop_finds_its_regions_once(plans):
    def loss(w):
        return np.sum(np.log1p(np.exp(np.sin(w) * 3.0)))

    w = np.linspace(-1.0, 1.0, 40)
    for _ in range(4):
        (value, g), (value0, g0) = _both(lambda: cr.value_and_grad(loss)(w))
        _agree(g, g0, "grad")
        w = w - 0.1 * g
    # four traces of one structure; each check grows it once more, afresh
    assert plans["calls"] == 4 and plans["grown"] == 1 + 4


def test_tapes_of_the_same_operations_wired_otherwise_get_their_own_regions(plans):
    """The same operations on the same shapes: a value read twice, another
    constant, an output inside the region, a sweep with tangents. Each
    structure's regions, from the cache, are the ones it gets afresh, and
    the derivatives agree with the rules swept one by one."""
    def once(x):
        u = np.sin(x)
        return np.sum(np.exp(u) * 2.0 + x)

    def twice(x):
        u = np.sin(x)
        return np.sum(np.exp(u) * 2.0 + u)

    def other_constant(x):
        u = np.sin(x)
        return np.sum(np.exp(u) * -0.0 + x)

    def with_aux(x):
        u = np.sin(x)
        return np.sum(np.exp(u) * 2.0 + x), u

    def summed_input(x):  # a rule outside the regions reads x ...
        u = np.sin(x)
        return np.sum(np.exp(u) * 2.0 + x) + np.sum(x)

    def summed_member(x):  # ... or u: then u is no member
        u = np.sin(x)
        return np.sum(np.exp(u) * 2.0 + x) + np.sum(u)

    x = np.linspace(-1.0, 1.0, 30)
    functions = (once, twice, other_constant, summed_input, summed_member)
    for _ in range(2):  # the second time from the cache
        for f in functions:
            _agree(*_both(lambda: cr.grad(f)(x)), f.__name__)
            _agree(*_both(lambda: cr.hvp(f, x, np.cos(x))), f.__name__)
        _agree(*_both(lambda: cr.value_and_grad(with_aux, has_aux=True)(x)), "aux")
    calls = 2 * (2 * len(functions) + 1)
    assert plans["calls"] == calls
    # once's tape with u as a second output: u's cotangent is its own
    y, pull = cr.vjp(with_aux, x)
    with cr.fusion(False):
        y0, pull0 = cr.vjp(with_aux, x)
    _agree(pull((1.0, x)), pull0((1.0, x)), "vjp")
    assert plans["calls"] == calls + 1
    # every call afresh, and each structure once: a function's grad and hvp
    # record the same tape, with_aux records once's (the aux value is not
    # differentiated), the vjp's has an output more
    assert plans["grown"] == calls + 1 + len(functions) + 1


def test_regions_follow_the_thresholds_of_the_call(regions, monkeypatch):
    """A structure seen under other thresholds is not taken from the cache."""
    def lone(x):  # one non-linear member
        return np.sum(np.sin(x) * 2.0)

    x = np.linspace(-1.0, 1.0, 30)
    fusion._plans.clear()
    for fewest in (0, 2, 0):
        monkeypatch.setattr(fusion, "MIN_NONLINEAR", fewest)
        _agree(*_both(lambda: cr.grad(lone)(x)), "lone")
    assert regions == [1, 0, 0, 0, 1, 0]  # (each second call unfused)


def test_the_cache_of_structures_is_bounded(monkeypatch):
    monkeypatch.setattr(fusion, "_plans", {})
    monkeypatch.setattr(fusion, "_plans_nodes", 100_001)  # past the bound
    x = np.linspace(0.0, 1.0, 30)
    cr.grad(lambda x: np.sum(np.exp(np.sin(x)) * 2.0))(x)
    assert len(fusion._plans) == 1 and 0 < fusion._plans_nodes < 10
    for k in range(300):  # 300 structures (their constants differ)
        cr.grad(lambda x: np.sum(np.exp(np.sin(x)) * float(k)))(x)
    assert 0 < len(fusion._plans) <= 256


def test_constant_keys_tell_signed_zeros_apart():
    assert fusion._const_key(0.0) != fusion._const_key(-0.0)
    assert fusion._const_key(complex(1.0, 0.0)) != fusion._const_key(complex(1.0, -0.0))
    assert fusion._const_key(float("nan")) == fusion._const_key(float("nan"))
    assert fusion._const_key(np.float64(-0.0)) != fusion._const_key(np.float64(0.0))


def test_dask_arrays_are_fused_into_dask_graphs(regions):
    da = pytest.importorskip("dask.array")

    def loss(x):
        d = x - 0.5
        return np.sum(np.log1p(d * d)) + 0.1 * np.sum(np.sin(x) ** 2)

    xn = np.linspace(-1, 2, 40)
    x, v = da.from_array(xn, chunks=10), da.from_array(np.cos(xn), chunks=10)
    g = cr.grad(loss)(x)
    h = cr.hvp(loss, x, v)
    # log1p((x - 0.5)**2), sin(x)**2, and the 0-d sum + 0.1 * sum
    assert regions == [3, 3]
    assert isinstance(g, da.Array) and isinstance(h, da.Array)  # still lazy
    with cr.fusion(False):
        g0, h0 = cr.grad(loss)(x), cr.hvp(loss, x, v)
    _agree(g.compute(), g0.compute(), "grad")
    _agree(h.compute(), h0.compute(), "hvp")
    d = xn - 0.5
    np.testing.assert_allclose(g.compute(), 2 * d / (1 + d * d) + 0.1 * np.sin(2 * xn),
                               rtol=1e-13)
