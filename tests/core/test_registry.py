import numpy as np
import pytest

import chainrules as cr
from chainrules.registry import lookup


@cr.primitive
def scaled(x, a):
    return a * x


@cr.rrule(scaled)
def _(x, a):
    def scaled_pullback(g):
        return g * a, cr.NoTangent()
    return scaled(x, a), scaled_pullback


def test_closure_rule_is_used():
    g = cr.grad(lambda x: np.sum(scaled(x, 3.0)))(np.ones(2))
    np.testing.assert_array_equal(g, [3.0, 3.0])


def test_primitive_without_trace_calls_function():
    assert scaled(2.0, 3.0) == 6.0


def test_user_registration_overrides_previous():
    @cr.primitive
    def f(x):
        return 2 * x

    @cr.rrule(f)
    def _(x):
        return f(x), lambda g: (2 * g,)

    assert cr.grad(lambda x: f(x))(1.0) == 2.0

    @cr.rrule(f)
    def _(x):  # a deliberately different rule: the newest registration wins
        return f(x), lambda g: (5 * g,)

    assert cr.grad(lambda x: f(x))(1.0) == 5.0


def test_dispatch_on_argument_types():
    @cr.primitive
    def h(x):
        return x * 1.0

    @cr.register(h)
    def _generic(ids, x):
        return h(x), _Const(ids[0], 1.0)

    @cr.register(h, np.float32)
    def _float32(ids, x):
        return h(x), _Const(ids[0], 7.0)

    assert cr.grad(h)(np.float64(1.0)) == 1.0
    assert cr.grad(h)(np.float32(1.0)) == 7.0
    assert cr.grad(lambda x: np.sum(h(x)))(np.ones(2)).tolist() == [1.0, 1.0]


class _Const(cr.ReverseRule):
    __slots__ = ("x_id", "c")

    def __init__(self, x_id, c):
        self.x_id, self.c = x_id, c

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, g * self.c)]


def test_missing_rule_error_names_op_and_types():
    @cr.primitive
    def nothing_registered(x):
        return x

    with pytest.raises(cr.MissingRuleError) as e:
        cr.grad(lambda x: nothing_registered(x))(1.0)
    msg = str(e.value)
    assert "nothing_registered" in msg and "float64" in msg and "rrule" in msg


def test_missing_rule_for_numpy_function():
    # every public NumPy function has a rule now (tests/testing/test_numpy_audit.py):
    # a ufunc made by the user has none
    twice = np.frompyfunc(lambda a: 2 * a, 1, 1)
    with pytest.raises(cr.MissingRuleError, match="no differentiation rule for .*lambda"):
        cr.grad(lambda x: np.sum(twice(x)))(np.ones(3))


def test_rrule_on_plain_function_is_refused():
    def plain(x):
        return x

    with pytest.raises(TypeError, match="primitive"):
        cr.rrule(plain)


def test_lookup_is_cached():
    m1 = lookup(np.sin, (np.ndarray,))
    m2 = lookup(np.sin, (np.ndarray,))
    assert m1 is m2


def test_non_differentiable_returns_plain_values():
    @cr.primitive
    def count(x):
        return np.float64(np.size(x))

    cr.non_differentiable(count)

    def f(x):
        n = count(x)
        assert not isinstance(n, cr.Traced)
        return np.sum(x) * n

    np.testing.assert_array_equal(cr.grad(f)(np.ones(3)), [3.0, 3.0, 3.0])


def test_pullback_with_wrong_number_of_cotangents():
    @cr.primitive
    def two(x, y):
        return x + y

    @cr.rrule(two)
    def _(x, y):
        return two(x, y), lambda g: (g,)  # forgot y

    with pytest.raises(cr.RuleError, match="one cotangent per positional"):
        cr.grad(lambda x: two(x, x))(1.0)


def test_rule_returning_wrong_shape_is_reported():
    @cr.primitive
    def bad(x):
        return x * 2

    @cr.rrule(bad)
    def _(x):
        return bad(x), lambda g: (np.sum(g),)  # shape () for a vector input

    with pytest.raises(cr.TangentShapeError, match=r"rrule\(.*bad.*\).*shape"):
        cr.grad(lambda x: np.sum(bad(x)))(np.ones(3))


def test_multi_output_closure_rule():
    @cr.primitive
    def split2(x):
        return x * 2, x * 3

    @cr.rrule(split2)
    def _(x):
        def split2_pullback(gs):
            g2, g3 = gs
            return (2 * g2 + 3 * g3,)
        return split2(x), split2_pullback

    def f(x):
        a, b = split2(x)
        return np.sum(a * b)  # 6 x^2 -> 12 x

    np.testing.assert_allclose(cr.grad(f)(np.array([1.0, 2.0])), [12.0, 24.0])

    def only_first(x):
        a, _ = split2(x)
        return np.sum(a)

    np.testing.assert_allclose(cr.grad(only_first)(np.array([1.0, 2.0])), [2.0, 2.0])
