"""The shortcuts that keep a small gradient call cheap, against the general
paths they skip, value for value.

``fuse`` returns before reading its context for a tape of 0-d values and 1-d
ones too short to be a region's root; the rule of ``np.sum(x)`` of an ndarray
(``WholeSumRule``) pulls a 0-d cotangent back without its keyword call, and
a gradient's seed to one kept zero-stride array per shape and dtype; the
plain reverse loop adds a second cotangent into a new array itself; a
gradient call of one argument skips ``Tape.free``'s call; ``hvp`` and
``grad_and_hvp`` of one array and a direction of its shape and dtype skip
the argument's spec. Each is compared here with what the general path
gives.
"""

from math import prod

import numpy as np
import pytest

import chainrules as cr
import chainrules.fused_sweeps as fusion
from chainrules.arguments import _SEEDS, gradient_seed
from chainrules.graph import Tape
from chainrules.rule import node_ids
from chainrules.rules import reductions
from chainrules.sweep_common import MULTI
from chainrules.tracing import Traced

DTYPES = [np.float64, np.float32, np.complex128]
SHAPES = [(), (0,), (1,), (3,), (2, 3)]


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    assert np.result_type(a) == np.result_type(b)
    assert np.shape(a) == np.shape(b)
    np.testing.assert_array_equal(a, b)


def _value(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return np.asarray(v, dtype)


def _traced(x):
    tape = Tape(x)
    return tape, Traced(x, node_ids(0), tape)


# -- the rule of np.sum(x) ----------------------------------------------------------
def _sum_rules(x):
    """The rule of np.sum(x) (the maker's first case) and of np.sum(x,
    axis=None) (the general case), each on a tape of its own."""
    rules = []
    for call in (lambda t: np.sum(t), lambda t: np.sum(t, axis=None)):
        tape, t = _traced(x)
        out = call(t)
        rules.append(tape.rules[out.node])
    return rules


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_whole_sum_rule_pulls_back_as_the_general_one(shape, dtype):
    x = _value(shape, dtype)
    fast, general = _sum_rules(x)
    assert type(fast) is reductions.WholeSumRule
    assert type(general) is not reductions.WholeSumRule
    for name in ("x_id", "op", "transpose", "shape", "args", "kwargs", "forms"):
        assert getattr(fast, name) == getattr(general, name), name
    seed = gradient_seed(np.sum(x), np.sum(x).dtype)
    assert seed is _SEEDS[np.sum(x).dtype]
    g0 = np.array(2.5 - 1j if np.dtype(dtype).kind == "c" else -1.5, dtype)
    for g in (seed, g0, np.array(3.0, np.float32), cr.ZeroTangent()):
        got, want = fast.pullback(g), general.pullback(g)
        assert len(got) == len(want)
        for (i, c), (j, d) in zip(got, want):
            assert i == j
            _same(c, d)
            assert c.strides == d.strides and not c.flags.writeable
    # with tangents (an HVP) and forward
    t = _value(shape, dtype, 1)
    _same(fast.pushforward([t]), general.pushforward([t]))
    for (i, c, cd), (j, d, dd) in zip(fast.pullback_with_tangents(seed, g0, [t]),
                                      general.pullback_with_tangents(seed, g0, [t])):
        _same(c, d)
        _same(cd, dd)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_seed_is_pulled_back_to_one_array_nobody_can_write(dtype):
    x = _value((4,), dtype)
    fast, _ = _sum_rules(x)
    seed = gradient_seed(np.sum(x), np.sum(x).dtype)
    a = fast.pullback(seed)[0][1]
    b = fast.pullback(seed)[0][1]
    assert a is b  # kept
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a.setflags(write=True)
    with pytest.raises(ValueError):
        a[0] = 7
    # another shape and another dtype have arrays of their own
    other, _ = _sum_rules(_value((5,), dtype))
    c = other.pullback(seed)[0][1]
    assert c.shape == (5,) and c is not a
    _same(c, np.ones(5, dtype))
    seed32 = gradient_seed(np.float32(1), np.dtype(np.float32))
    if seed32 is not seed:
        d = fast.pullback(seed32)[0][1]
        _same(d, np.ones(4, np.float32))


def test_the_kept_arrays_are_bounded(monkeypatch):
    monkeypatch.setattr(reductions, "_SEED_UNIFORMS", {})
    monkeypatch.setattr(reductions, "_MAX_SEED_UNIFORMS", 2)
    for n in range(1, 7):
        x = np.arange(n, dtype=float)
        v, g = cr.value_and_grad(lambda x: np.sum(x))(x)
        _same(g, np.ones(n))
        assert len(reductions._SEED_UNIFORMS) <= 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_sum_gradients_match_the_keyword_call(shape, dtype):
    x = _value(shape, dtype)
    for body in (lambda s, x: s, lambda s, x: s * 2.0, lambda s, x: np.sin(s) + np.sum(x * x)):
        fast = cr.value_and_grad(lambda x: body(np.sum(x), x))(x)
        general = cr.value_and_grad(lambda x: body(np.sum(x, axis=None), x))(x)
        _same(fast[0], general[0])
        _same(fast[1], general[1])
        # the general entry (argnums as a tuple) agrees too
        _same(cr.grad(lambda x: body(np.sum(x), x), argnums=(0,))(x)[0], fast[1])
    g1 = cr.grad(lambda x: np.sum(x))(x)
    g2 = cr.grad(lambda x: np.sum(x))(x)
    # a user's gradient is an array of its own, writeable
    assert g1 is not g2 and g1.flags.writeable and not np.shares_memory(g1, g2)
    g1[...] = 5
    _same(g2, np.ones(shape, dtype))
    _same(cr.grad(lambda x: np.sum(x))(x), np.ones(shape, dtype))


def test_sum_of_pytrees_scalars_and_complex_cotangents():
    tree = {"a": np.array([1.0, 2.0]), "b": (np.float32(3.0), np.ones((2, 2)))}

    def f(t, **kw):
        return np.sum(t["a"], **kw) * 3 + np.sum(t["b"][1], **kw) + t["b"][0]

    fast = cr.value_and_grad(f)(tree)
    general = cr.value_and_grad(lambda t: f(t, axis=None))(tree)
    _same(fast[0], general[0])
    _same(fast[1]["a"], general[1]["a"])
    _same(fast[1]["b"][0], general[1]["b"][0])
    _same(fast[1]["b"][1], general[1]["b"][1])
    _same(fast[1]["a"], np.full(2, 3.0))
    for x in (2.0, np.float32(2.0), np.float64(-1.0)):
        _same(cr.grad(lambda x: np.sum(x))(x), cr.grad(lambda x: np.sum(x, axis=None))(x))
    xc = _value((3,), np.complex128)
    ct = np.complex128(2 - 3j)
    for call in (lambda x: np.sum(x), lambda x: np.sum(x, axis=None)):
        out, pb = cr.vjp(call, xc)
        _same(pb(ct)[0], np.full(3, ct))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_hvp_and_jacobians_match_the_keyword_call(dtype):
    x = _value((4,), dtype)
    v = _value((4,), dtype, 3)
    _same(cr.hvp(lambda x: np.sum(x ** 3), x, v), cr.hvp(lambda x: np.sum(x ** 3, axis=None), x, v))
    _same(cr.hessian(lambda x: np.sum(np.sin(x) * x))(x),
          cr.hessian(lambda x: np.sum(np.sin(x) * x, axis=None))(x))
    _same(cr.jacobian(lambda x: np.sum(x) * x)(x), cr.jacobian(lambda x: np.sum(x, axis=None) * x)(x))


# -- fuse on small tapes ---------------------------------------------------------
def _tape_of(shapes, multi=False):
    """A tape of elementwise rules, one per shape, each reading the last
    (broadcast against its own leaf), and a multi-output node first."""
    tape = Tape()
    outs = []
    prev = None
    if multi:
        a = Traced(np.eye(2), tape.leaf(np.eye(2)), tape)
        w, _ = np.linalg.eigh(a)
        prev = np.sum(w)
    for s in shapes:
        x = _value(s, np.float64)
        t = Traced(x, tape.leaf(x), tape)
        y = np.sin(t) * np.cos(t)
        prev = y if prev is None else y * np.sum(prev)
        outs.append(prev)
    tape.active = False
    return tape, (prev.node,)


def _reference(tape, second_order, staged):
    """Whether ``fuse`` looks for regions: the test before the shortcut."""
    m = fusion.MIN_SIZE_SECOND if second_order else fusion.MIN_SIZE
    if staged:
        m = min(m, fusion.MIN_SIZE_STAGED)
    return any(s is MULTI or prod(s) >= m for s in set(tape.shapes))


@pytest.mark.parametrize("shapes", [[(3,)], [()], [(4,), ()], [(5,)], [(2, 2)], [(1, 5)],
                                    [(3,)] * 12, [(3,), (4,)] * 10, [(2,), (5,)] * 10,
                                    [(0,)], [(0, 7)]])
@pytest.mark.parametrize("sizes", [(4, 4, 4), (5, 2, 100), (1, 1, 1), (0, 0, 0),
                                   (2, 3, 9), (100, 100, 4)])
@pytest.mark.parametrize("multi", [False, True])
def test_fuse_looks_for_regions_when_a_node_may_be_a_root(shapes, sizes, multi, monkeypatch):
    monkeypatch.setattr(fusion, "MIN_SIZE", sizes[0])
    monkeypatch.setattr(fusion, "MIN_SIZE_SECOND", sizes[1])
    monkeypatch.setattr(fusion, "MIN_SIZE_STAGED", sizes[2])
    seen = []
    find = fusion.find_regions
    monkeypatch.setattr(fusion, "find_regions",
                        lambda *a, **k: seen.append(1) or find(*a, **k))
    for second_order in (False, True):
        for staged in (False, True):
            tape, outs = _tape_of(shapes, multi)
            seen.clear()
            if staged:
                with fusion.recording():
                    fusion.fuse(tape, outs, second_order=second_order)
            else:
                fusion.fuse(tape, outs, second_order=second_order)
            assert bool(seen) == _reference(tape, second_order, staged), (second_order,
                                                                           staged)


def test_fuse_on_a_long_tape_of_small_values_fuses_nothing(monkeypatch):
    called = []
    monkeypatch.setattr(fusion, "find_regions", lambda *a, **k: called.append(1) or [])
    tape, outs = _tape_of([(16,)] * 40)
    assert len(tape.shapes) > fusion._FEW_NODES
    assert fusion.fuse(tape, outs) == 0 and not called
    monkeypatch.setattr(fusion, "MIN_SIZE", 16)
    fusion.fuse(tape, outs)
    assert called


def test_fused_gradients_are_found_from_the_threshold(monkeypatch):
    # a region is fused at MIN_SIZE exactly, and not one element below
    monkeypatch.setattr(fusion, "MIN_SIZE", 8)
    f = lambda x: np.sum(np.sin(x) * np.cos(x) * x)  # noqa: E731
    for n, fused in ((7, 0), (8, 1)):
        tape, t = _traced(np.linspace(0.1, 1.0, n))
        out = f(t)
        tape.active = False
        assert (fusion.fuse(tape, (out.node,)) > 0) == bool(fused), n


# -- the plain loop's own sums ------------------------------------------------------
def _thrice(x):
    """x read three times and a 0-d intermediate read twice: sums into new
    arrays, then in place, and sums of 0-d arrays (NumPy scalars)."""
    s = np.sum(x * x)
    return np.sum(np.sin(x) * x + x) + s * s


def _sweep(x, check):
    tape, tx = _traced(x)
    out = _thrice(tx)
    tape.active = False
    seed = gradient_seed(out.value, out.value.dtype)
    return tape.backward([out.node], [seed], check=check).get(tx.node)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_plain_loop_adds_as_the_general_loop(shape, dtype):
    x = _value(shape, dtype)
    seen = []
    fast = _sweep(x, None)
    general = _sweep(x, lambda tape, i, g, results: seen.append(i))
    assert seen
    _same(fast, general)
    g = cr.grad(_thrice)(x)
    _same(g, cr.grad(_thrice, argnums=(0,))(x)[0])
    np.testing.assert_array_equal(g, general)
    assert g.dtype == general.dtype


def test_complex_cotangents_add_as_in_the_general_loop():
    x = _value((3,), np.complex128)
    f = lambda x: np.sin(x) * x + x  # noqa: E731
    ct = _value((3,), np.complex128, 5)
    out, pb = cr.vjp(f, x)
    tape, tx = _traced(x)
    o = f(tx)
    tape.active = False
    general = tape.backward([o.node], [ct], check=lambda *a: None).get(tx.node)
    _same(pb(ct)[0], general)


# -- the gradient call of one argument -------------------------------------------------
@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 0.8]), np.float32(0.7), 1.5,
                               np.array(2.0), np.zeros(0), np.array([4.0], np.float32)])
def test_one_argument_calls_match_the_general_entry(x):
    fns = [lambda x: np.sum(np.sin(x) * x), lambda x: np.sum(x), lambda x: 3.0,
           lambda x: np.float32(2.0) * np.sum(x), lambda x: np.sum(x).astype(np.float32),
           lambda x, k=2.0: np.sum(x ** 2) * k]
    for f in fns:
        v, g = cr.value_and_grad(f)(x)
        (v2, (g2,)) = cr.value_and_grad(f, argnums=(0,))(x)
        _same(v, v2)
        _same(g, g2)
    v, g = cr.value_and_grad(fns[-1])(x, k=3.0)
    v2, (g2,) = cr.value_and_grad(fns[-1], argnums=(0,))(x, k=3.0)
    _same(v, v2)
    _same(g, g2)


def test_the_tape_of_a_one_argument_call_is_freed():
    kept = []

    def f(x):
        y = np.cos(x)  # not on the output's path: the sweep leaves its rule
        kept.append(y)
        return np.sum(np.sin(x) * x)

    for entry in (cr.value_and_grad(f), cr.value_and_grad(f, argnums=(0,))):
        kept.clear()
        entry(np.array([0.5, 1.5]))
        tape = kept[0].tape
        assert not tape.active and tape.freed is not None
        assert all(r is None for r in tape.rules) and len(tape.rules) == 5
        assert not tape.replays
        with pytest.raises(cr.AutodiffError):
            tape.backward([kept[0].node], [np.ones(2)])


# -- hvp of one array ------------------------------------------------------------------
def _real_of(x):
    return np.real(x * np.conj(x)) if np.iscomplexobj(x) else x


_HVP_FNS = [lambda x: np.sum(np.sin(_real_of(x)) * _real_of(x)),
            lambda x: np.sum(x * np.conj(x)).real if np.iscomplexobj(x) else 0.5 * np.sum(x * x),
            lambda x: np.sum(_real_of(x)) * 0.0 + 1.5,
            lambda x: 2.0,
            lambda x: np.sum(np.exp(_real_of(x))).astype(np.float32),
            lambda x: np.reshape(np.sum(_real_of(x) ** 3, keepdims=True), ())]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_hvp_of_one_array_matches_the_general_path(shape, dtype):
    x = _value(shape, dtype)
    v = _value(shape, dtype, 7)
    for f in _HVP_FNS:
        general = cr.hvp(lambda t: f(t[0]), (x,), (v,))[0]
        fast = cr.hvp(f, x, v)
        _same(fast, general)
        assert not np.shares_memory(fast, x) and not np.shares_memory(fast, v)
        g, hv = cr.grad_and_hvp(f, x, v)
        (g2,), (hv2,) = cr.grad_and_hvp(lambda t: f(t[0]), (x,), (v,))
        _same(g, g2)
        _same(hv, hv2)
        _same(hv, fast)
        assert not np.shares_memory(g, x) and not np.shares_memory(g, v)
    if shape and shape[0]:
        with cr.fusion(False):  # the same sweep without fused regions
            _same(cr.hvp(_HVP_FNS[0], x, v), cr.hvp(lambda t: _HVP_FNS[0](t[0]), (x,), (v,))[0])


def test_hvp_of_one_array_keeps_other_directions_on_the_general_path():
    x = np.array([0.5, -1.0, 2.0])
    f = lambda x: np.sum(np.sin(x) * x)  # noqa: E731
    want = cr.hvp(f, x, np.ones(3))
    _same(cr.hvp(f, x, np.ones(3, np.float32)), want)  # cast to x's dtype
    _same(cr.hvp(f, x.astype(np.float32), np.ones(3, np.float32)),
          cr.hvp(lambda t: f(t[0]), (x.astype(np.float32),), (np.ones(3, np.float32),))[0])
    with pytest.raises(cr.AutodiffError):
        cr.hvp(f, x, np.ones(4))
    with pytest.raises(cr.AutodiffError):
        cr.hvp(f, x, np.ones(3, complex))


def test_hvp_of_one_array_errors_name_the_function():
    def vector_valued(t):
        x = t[0] if isinstance(t, tuple) else t
        return x * 2

    x = np.ones(2)
    with pytest.raises(cr.AutodiffError) as fast:
        cr.hvp(vector_valued, x, x)
    with pytest.raises(cr.AutodiffError) as general:
        cr.hvp(vector_valued, (x,), (x,))
    assert type(fast.value) is type(general.value)
    assert str(fast.value) == str(general.value) and "vector_valued" in str(fast.value)


def test_hvp_of_one_array_nested_and_in_a_plan():
    f = lambda x: np.sum(np.sin(x) * x * x)  # noqa: E731
    x = np.array([0.3, 0.9])
    v = np.array([1.0, -2.0])
    outer = cr.grad(lambda y: np.sum(cr.hvp(f, x * y, v)))(np.float64(1.5))
    outer2 = cr.grad(lambda y: np.sum(cr.hvp(lambda t: f(t[0]), (x * y,), (v,))[0]))(
        np.float64(1.5))
    _same(outer, outer2)
    jitted = cr.jit(lambda x, v: cr.hvp(f, x, v))
    np.testing.assert_allclose(jitted(x, v), cr.hvp(f, x, v), rtol=1e-14)


def test_hvp_of_one_array_never_hands_back_the_callers_arrays():
    # half the squared norm, whose rule hands the direction on as the
    # tangent of its cotangent (H = I): the results must be copies
    class HalfSquare(cr.ReverseRule):
        def __init__(self, x_id, x):
            self.x_id, self.x = x_id, x

        def inputs(self):
            return (self.x_id,)

        def pullback(self, g):
            return [(self.x_id, g * self.x)]

        def pushforward(self, tangents):
            return np.sum(self.x * tangents[0])

        def pullback_with_tangents(self, g, gd, tangents):
            assert g == 1 and isinstance(gd, cr.ZeroTangent)
            return [(self.x_id, self.x, tangents[0])]

    @cr.primitive
    def half_square(x):
        return 0.5 * np.sum(x * x)

    @cr.register(half_square)
    def _(ids, x):
        return 0.5 * np.sum(x * x), HalfSquare(ids[0], x)

    x = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, 2.0, -1.0])
    hv = cr.hvp(half_square, x, v)
    g, hv2 = cr.grad_and_hvp(half_square, x, v)
    for r in (hv, g, hv2):
        assert not np.shares_memory(r, v) and not np.shares_memory(r, x)
    _same(hv, v.copy())
    _same(g, x.copy())
    _same(hv2, cr.hvp(lambda t: half_square(t[0]), (x,), (v,))[0])
