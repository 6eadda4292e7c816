"""Targeted tests of rules/elementwise.py: first and second derivatives
against closed forms, sinc near 0, nan_to_num, complex branches, float32."""

import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.registry import lookup
from chainrules.rule import NodeId
from chainrules.tangents import Structural

PI = math.pi
LN2, LN10 = math.log(2), math.log(10)

# op, f', f'' (closed forms written independently of the rules), sample points
TABLE = [
    (np.exp, np.exp, np.exp, [-1.0, 0.3, 2.0]),
    (np.exp2, lambda x: LN2 * 2 ** x, lambda x: LN2 ** 2 * 2 ** x, [-1.0, 0.3, 2.0]),
    (np.expm1, np.exp, np.exp, [-1.0, 0.3, 2.0]),
    (np.log, lambda x: 1 / x, lambda x: -1 / x ** 2, [0.3, 1.0, 4.0]),
    (np.log2, lambda x: 1 / (x * LN2), lambda x: -1 / (x ** 2 * LN2), [0.3, 1.0, 4.0]),
    (np.log10, lambda x: 1 / (x * LN10), lambda x: -1 / (x ** 2 * LN10), [0.3, 1.0, 4.0]),
    (np.log1p, lambda x: 1 / (1 + x), lambda x: -1 / (1 + x) ** 2, [-0.5, 0.0, 3.0]),
    (np.sin, np.cos, lambda x: -np.sin(x), [-1.0, 0.0, 2.5]),
    (np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), [-1.0, 0.0, 2.5]),
    (np.tan, lambda x: 1 / np.cos(x) ** 2, lambda x: 2 * np.sin(x) / np.cos(x) ** 3,
     [-1.0, 0.0, 1.2]),
    (np.arcsin, lambda x: (1 - x * x) ** -0.5, lambda x: x * (1 - x * x) ** -1.5,
     [-0.9, 0.0, 0.5]),
    (np.arccos, lambda x: -(1 - x * x) ** -0.5, lambda x: -x * (1 - x * x) ** -1.5,
     [-0.9, 0.0, 0.5]),
    (np.arctan, lambda x: 1 / (1 + x * x), lambda x: -2 * x / (1 + x * x) ** 2,
     [-3.0, 0.0, 0.5]),
    (np.sinh, np.cosh, np.sinh, [-1.0, 0.0, 2.0]),
    (np.cosh, np.sinh, np.cosh, [-1.0, 0.0, 2.0]),
    (np.tanh, lambda x: 1 / np.cosh(x) ** 2, lambda x: -2 * np.tanh(x) / np.cosh(x) ** 2,
     [-1.0, 0.0, 2.0]),
    (np.arcsinh, lambda x: (x * x + 1) ** -0.5, lambda x: -x * (x * x + 1) ** -1.5,
     [-2.0, 0.0, 0.7]),
    (np.arccosh, lambda x: (x * x - 1) ** -0.5, lambda x: -x * (x * x - 1) ** -1.5,
     [1.1, 2.0, 5.0]),
    (np.arctanh, lambda x: 1 / (1 - x * x), lambda x: 2 * x / (1 - x * x) ** 2,
     [-0.9, 0.0, 0.5]),
    (np.deg2rad, lambda x: np.full_like(x, PI / 180), lambda x: 0 * x, [-90.0, 0.0, 30.0]),
    (np.radians, lambda x: np.full_like(x, PI / 180), lambda x: 0 * x, [-90.0, 0.0, 30.0]),
    (np.rad2deg, lambda x: np.full_like(x, 180 / PI), lambda x: 0 * x, [-1.0, 0.0, 3.0]),
    (np.degrees, lambda x: np.full_like(x, 180 / PI), lambda x: 0 * x, [-1.0, 0.0, 3.0]),
    (np.sinc,
     lambda x: (np.cos(PI * x) * PI * x - np.sin(PI * x)) / (PI * x * x),
     lambda x: (-(PI * x) ** 2 * np.sin(PI * x) - 2 * PI * x * np.cos(PI * x)
                + 2 * np.sin(PI * x)) / (PI * x ** 3),
     [-1.7, 0.5, 2.2]),
]


@pytest.mark.parametrize("op,d1,d2,pts", TABLE, ids=[t[0].__name__ for t in TABLE])
def test_first_and_second_derivatives(op, d1, d2, pts):
    x = np.array(pts)
    v = np.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(op(x)))(x), d1(x), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(op(x)), x, v), d2(x) * v, rtol=1e-12,
                               atol=1e-13)
    # reverse over reverse, on a 0-d input
    g2 = cr.grad(cr.grad(lambda s: op(s)))(np.float64(pts[1]))
    np.testing.assert_allclose(g2, d2(np.array(pts[1])), rtol=1e-12, atol=1e-13)


def test_sinc_at_and_near_zero():
    # sinc'(0) = 0, sinc''(0) = -pi^2/3; series near 0 with no cancellation
    assert float(cr.grad(np.sinc)(0.0)) == 0.0
    np.testing.assert_allclose(cr.grad(cr.grad(np.sinc))(0.0), -PI ** 2 / 3, rtol=1e-15)
    x = np.array([1e-8, -3e-4, 0.02, 0.05])
    u = PI * x
    d1 = PI * (-u / 3 + u ** 3 / 30 - u ** 5 / 840 + u ** 7 / 45360 - u ** 9 / 3991680)
    d2 = PI ** 2 * (-1 / 3 + u ** 2 / 10 - u ** 4 / 168 + u ** 6 / 6480 - u ** 8 / 443520)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.sinc(x)))(x), d1, rtol=1e-14)
    # (at 0.05 the closed form is used: a few ulps of cancellation)
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(np.sinc(x)), x, np.ones(4)), d2,
                               rtol=1e-13)
    # float32 near zero: accurate to float32 precision
    g32 = cr.grad(lambda x: np.sum(np.sinc(x)))(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, d1, rtol=1e-5)


def test_nan_to_num_derivative_is_one_where_finite():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    g = cr.grad(lambda x: np.sum(np.nan_to_num(x, posinf=5.0, neginf=-5.0) * 3.0))(x)
    np.testing.assert_array_equal(g, [3, 0, 0, 0, 3])
    g = cr.grad(lambda x: np.sum(np.nan_to_num(x, False)))(x)  # copy=False: never in place
    np.testing.assert_array_equal(g, [1, 0, 0, 0, 1])
    assert np.isnan(x[1]) and np.isinf(x[2])
    t = cr.jvp(lambda x: np.nan_to_num(x), (x,), (np.ones(5),))[1]
    np.testing.assert_array_equal(t, [1, 0, 0, 0, 1])


def test_nan_to_num_complex_parts_separately():
    z = np.array([1 + 2j, complex(np.nan, 1.0), complex(2.0, np.inf)])
    w = np.array([1 - 1j, 2 + 3j, -1 + 0.5j])
    # loss = Re(sum(w * nan_to_num(z))); the cotangent of z keeps Re(w) where the
    # real part is finite and Im(w) where the imaginary part is finite
    g = cr.grad(lambda z: np.sum(np.real(w * np.nan_to_num(z))))(z)
    np.testing.assert_array_equal(g, [1 - 1j, 0 + 3j, -1 + 0j])
    t = cr.jvp(np.nan_to_num, (z,), (np.full(3, 1 + 1j),))[1]
    np.testing.assert_array_equal(t, [1 + 1j, 1j, 1])


def test_arccosh_complex_branch():
    # left half plane: 1/sqrt(z*z - 1) has the wrong sign there; compare with
    # finite differences of NumPy's principal arccosh
    z = np.array([-2.0 + 0.5j, -0.3 - 1.2j, 1.5 + 0.2j])
    h = 1e-6
    fd = (np.arccosh(z + h) - np.arccosh(z - h)) / (2 * h)
    # holomorphic: the cotangent of Re(w * f(z)) is w * f'(z); w = 1 gives f'(z)
    g = cr.grad(lambda z: np.sum(np.real(np.arccosh(z))))(z)
    np.testing.assert_allclose(g, fd, rtol=1e-8)


@pytest.mark.parametrize("op", [t[0] for t in TABLE] + [np.nan_to_num],
                         ids=[t[0].__name__ for t in TABLE] + ["nan_to_num"])
def test_float32_rules_do_not_upcast(op):
    x = np.array([0.3, 0.5, 0.7], np.float32) + (1.0 if op is np.arccosh else 0.0)
    x = x.astype(np.float32)
    out, rule = lookup(op, (np.ndarray,))([NodeId(0)], x)
    assert out.dtype == np.float32
    g = np.ones(3, np.float32)
    (_, c), = rule.pullback(g)
    assert c.dtype == np.float32
    assert rule.pushforward((g,)).dtype == np.float32
    (_, c, cd), = rule.pullback_with_tangents(g, g, (g,))
    assert c.dtype == np.float32
    assert isinstance(cd, Structural) or cd.dtype == np.float32
