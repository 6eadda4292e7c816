"""Python operators on traced values behave as on ndarrays, and
differentiate like the NumPy functions they stand for."""

import numpy as np
import pytest

import chainrules as cr

X = np.array([1.0, 2.3, -0.7])


def test_divmod_builtin_and_ufunc():
    for form in (lambda x: divmod(x, 0.6), lambda x: np.divmod(x, 0.6)):
        q, r = form(X)
        np.testing.assert_array_equal(q, np.floor_divide(X, 0.6))
        g = cr.grad(lambda x: np.sum(form(x)[1] ** 2))(X)
        np.testing.assert_allclose(g, 2 * np.remainder(X, 0.6))
        # the quotient is piecewise constant: no derivative flows through it
        np.testing.assert_array_equal(cr.grad(lambda x: np.sum(form(x)[0] * 0 + x))(X),
                                      np.ones(3))


def test_rdivmod():
    x = np.array([1.5, 0.7])
    g = cr.grad(lambda x: np.sum(divmod(2.0, x)[1] ** 2))(x)
    r = np.remainder(2.0, x)
    np.testing.assert_allclose(g, 2 * r * -np.floor_divide(2.0, x))


def test_round_pos_abs_floordiv_mod():
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(round(x, 1) * x))(X), np.round(X, 1))
    assert cr.grad(lambda x: round(x) * x)(np.float64(1.3)) == 1.0
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(+x))(X), np.ones(3))
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(abs(x)))(X), np.sign(X))
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum((x // 0.5) * x))(X), X // 0.5)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum((x % 0.7) ** 2))(X), 2 * (X % 0.7))
    np.testing.assert_allclose(cr.grad(lambda x: np.sum((3.0 % x) ** 2))(X),
                               2 * (3.0 % X) * -(3.0 // X))


def test_matmul_both_sides_and_comparisons():
    a = np.arange(6.0).reshape(2, 3)
    g = cr.grad(lambda w: np.sum(a @ w @ np.ones(2)))(np.ones((3, 2)))
    np.testing.assert_array_equal(g, np.outer(a.sum(0), np.ones(2)))
    c = cr.grad(lambda x: np.sum(np.where((x > 0) & (x <= 2.3) & (x != 1.0), x, 0.0)))(X)
    np.testing.assert_array_equal(c, [0.0, 1.0, 0.0])


def test_bool_follows_the_value_and_refuses_ambiguity():
    assert cr.grad(lambda x: x if x > 0 else -x)(np.float64(-2.0)) == -1.0
    with pytest.raises(cr.TruthValueError, match="ambiguous"):
        cr.grad(lambda x: np.sum(x) if x else 0.0)(X)
    with pytest.raises(ValueError):  # also a ValueError, as NumPy raises
        cr.grad(lambda x: np.sum(x) if x else 0.0)(X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_product_of_a_value_with_itself(dtype):
    """``x * x`` records one rule with the cotangent ``2 g x``; every order
    and mode agrees with finite differences and with ``x * copy(x)``."""
    x = np.array([0.4, -1.3, 2.0], dtype=dtype)
    if np.iscomplexobj(x):
        x = x + 0.5j
    f = (lambda x: np.sum(np.real(x * x * np.sin(x)))) if np.iscomplexobj(x) else (
        lambda x: np.sum(x * x * np.sin(x)))
    assert cr.testing.check_grads(f, x, order=2)
    ref = cr.grad(lambda x: np.sum(np.real(x * np.copy(x) * np.sin(x))))(x)
    got = cr.grad(f)(x)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12)
    v = np.array([1.0, -2.0, 0.5])
    if dtype == np.float64:
        np.testing.assert_allclose(cr.hvp(lambda x: np.sum((x * x) * (x * x)), x, v),
                                   12 * x ** 2 * v)
        _, t = cr.jvp(lambda x: x * x, (x,), (v,))
        np.testing.assert_allclose(t, 2 * x * v)
        # a Python float and a 0-d array take the same path
        assert cr.grad(lambda s: s * s)(3.0) == 6.0
        assert cr.grad(lambda s: s * s)(np.array(3.0)) == 6.0


@pytest.mark.parametrize("c", [-0.0, 0.0, np.float64(-0.0)])
def test_a_zero_factor_keeps_its_sign_and_nan(c):
    # a user's zero factor is a number like any other: the cotangent is
    # g * c with NumPy's signs (-0.0 where cos(x) > 0) and NaN where g is inf
    x = np.array([1.0, 2.0])
    want = np.cos(x) * c
    for f in (lambda x: np.sum(np.sin(x) * c), lambda x: np.sum(c * np.sin(x))):
        for g in (cr.grad(f), cr.jit(cr.grad(f))):
            for _ in range(3):
                got = g(x)
                np.testing.assert_array_equal(got, want)
                np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    with np.errstate(over="ignore", invalid="ignore"):
        got = cr.grad(lambda x: np.sum(np.exp(1000 * x) * c))(x)
    assert np.isnan(got).all()
