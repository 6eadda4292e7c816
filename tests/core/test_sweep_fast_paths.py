"""The shortcuts of a gradient call against the general paths they skip.

``value_and_grad`` and ``grad`` of one inexact argument trace it onto a
tape made with its leaf (``Tape(first)``) and redirect NumPy's warnings in
their own frame; the reverse sweep of cotangents alone, without a check
hook or ``wrt``, runs a loop of its own (the general loop, which a check
hook selects, adds the results through ``_scatter``); a ``BilinearRule``
without static arguments calls its transposes directly; a NumPy function of
one traced argument is recorded by ``__array_function__`` itself. Each is
compared here, value for value, with the general path.
"""

import numpy as np
import pytest

import chainrules as cr
from chainrules.derived_linear import BilinearRule
from chainrules.graph import HOOKS, MultiOutput, Tape
from chainrules.tracing import Traced


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    assert np.result_type(a) == np.result_type(b)
    np.testing.assert_array_equal(a, b)


def test_a_tape_made_with_its_leaf_is_a_tape_and_a_leaf():
    v = np.linspace(0.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    made = Tape(v)
    plain = Tape()
    nid = plain.leaf(v)
    assert (made.rules, made.shapes, made.dtypes) == (plain.rules, plain.shapes, plain.dtypes)
    assert made.level < plain.level and made.active and made.freed is None
    assert int(nid) == 0
    with cr.detect_anomaly():
        # anomaly mode notes the leaf of a tape made with it, as leaf() does
        a, b = Tape(np.float64(2.0)), Tape()
        b.leaf(np.float64(2.0))
        assert len(a.sources) == len(b.sources) == 1


def _chain(x):
    """Fan-out and fan-in (x read three times), a multi-output node, a
    gather (indexing), a scalar cotangent and a constant side."""
    s, c = np.sin(x), np.cos(x)
    w, v = np.linalg.eigh(np.outer(s, c) + np.outer(c, s))
    return np.sum(s * x) + w[0] * 2.0 + x[1] + np.sum(v[:, 0] ** 2)


def _sweep(x, check):
    tape = Tape()
    tx = Traced(x, tape.leaf(x), tape)
    out = _chain(tx)
    tape.close()
    seeds = [np.ones((), out.value.dtype)]
    g = tape.backward([out.node], seeds, check=check)
    return g.get(tx.node)


def test_the_plain_loop_matches_the_general_loop():
    x = np.array([0.3, -1.2, 0.8])
    seen = []
    fast = _sweep(x, None)
    general = _sweep(x, lambda tape, i, g, results: seen.append(i))
    assert seen  # the check hook ran: the general loop
    _same(fast, general)
    _same(cr.grad(_chain)(x), general)


def test_the_plain_loop_verifies_user_rules():
    class Bad(cr.ReverseRule):
        def __init__(self, x):
            self.x = x

        def inputs(self):
            return (self.x,)

        def pullback(self, g):
            return [(self.x, np.ones(5))]  # the wrong shape

    tape = Tape()
    x = tape.leaf(np.ones(3))
    y = tape.record(Bad(x), np.ones(3))
    with pytest.raises(cr.AutodiffError):
        tape.backward([y], [np.ones(3)])


def test_multi_output_results_in_the_plain_loop():
    tape = Tape()
    x = tape.leaf(np.array([1.0, 2.0]))

    class Split(cr.ReverseRule):
        def inputs(self):
            return (x,)

        def pullback(self, g):
            a, b = g
            return [(x, np.concatenate([np.atleast_1d(a), np.atleast_1d(b)]))]

    a, b = tape.record_multi(Split(), MultiOutput((np.float64(1.0), np.float64(2.0))).values)
    g = tape.backward([a, b], [np.array(3.0), np.array(5.0)])
    _same(g.get(x), np.array([3.0, 5.0]))
    assert HOOKS.anomaly is not None


@pytest.mark.parametrize("static", [False, True])
def test_bilinear_pullback_with_and_without_static_arguments(static):
    x, y = np.array([1.0, -2.0, 3.0]), np.array([0.5, 4.0, -1.0])
    g = np.array([2.0, 3.0, 5.0])

    def tx(g, y, xshape, *args, **kwargs):
        return g * y * (kwargs.get("k", 1.0))

    def ty(g, x, yshape, *args, **kwargs):
        return g * x * (kwargs.get("k", 1.0))

    kw = {"k": 1.0} if static else {}
    for xi, yi in [(0, 1), (0, None), (None, 1)]:
        rule = BilinearRule(xi, yi, x, y, np.multiply, tx, ty, x.shape, y.shape, (), kw)
        got = dict(rule.pullback(g))
        want = {}
        if xi is not None:
            want[xi] = rule._gx(g, y)
        if yi is not None:
            want[yi] = rule._gy(g, x)
        assert got.keys() == want.keys()
        for k in want:
            _same(got[k], want[k])
            _same(got[k], g * (y if k == xi else x))


def test_product_gradients_through_the_maker():
    x = np.array([0.5, -1.5, 2.0])
    y = np.array([1.0, 3.0, -2.0])
    gx, gy = cr.grad(lambda a, b: np.sum(a * b * a), argnums=(0, 1))(x, y)
    _same(gx, 2 * x * y)
    _same(gy, x * x)
    _same(cr.grad(lambda a: np.sum(a * y))(x), y.copy())
    _same(cr.grad(lambda a: np.sum(y * a))(x), y.copy())


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.cumsum])
def test_one_argument_functions_match_their_keyword_call(fn):
    x = np.array([[1.0, -2.0], [0.5, 4.0]])
    fast = cr.value_and_grad(lambda x: np.sum(fn(x) * x.ravel()[0]))(x)
    general = cr.value_and_grad(lambda x: np.sum(fn(x, axis=None) * x.ravel()[0]))(x)
    _same(fast[0], general[0])
    _same(fast[1], general[1])


def test_the_value_of_a_one_leaf_call_never_aliases_the_input():
    x = np.array([2.0])
    value, g = cr.value_and_grad(lambda x: x)(x)
    assert not np.shares_memory(value, x)
    _same(value, x.copy())
    _same(g, np.ones(1))
    value, g = cr.value_and_grad(lambda x: x * 3.0)(x)
    _same(value, np.array([6.0]))
    _same(g, np.array([3.0]))


def test_nested_one_leaf_calls():
    f = lambda x: np.sin(x) * x  # noqa: E731
    d2 = cr.grad(cr.grad(f))(0.7)
    want = 2 * np.cos(0.7) - 0.7 * np.sin(0.7)
    assert type(d2) is np.float64
    np.testing.assert_allclose(d2, want, rtol=1e-14)
    v, g = cr.value_and_grad(lambda x: np.sum(cr.grad(lambda y: np.sum(y * x))(x)))(
        np.array([1.0, 2.0]))
    _same(v, np.float64(3.0))
    _same(g, np.ones(2))


def test_has_aux_and_keywords_on_the_one_leaf_path():
    f = lambda x, scale=1.0: (np.sum(x * x) * scale, x * 2)  # noqa: E731
    x = np.array([1.0, 2.0])
    (v, aux), g = cr.value_and_grad(f, has_aux=True)(x, scale=3.0)
    _same(v, np.float64(15.0))
    _same(aux, np.array([2.0, 4.0]))
    _same(g, np.array([6.0, 12.0]))
    g, aux = cr.grad(f, has_aux=True)(np.float32(2.0), scale=0.5)
    _same(g, np.float32(2.0))
    _same(aux, np.float32(4.0))
    with pytest.raises(TypeError, match="has_aux"):
        cr.grad(lambda x: np.sum(x), has_aux=True)(x)
