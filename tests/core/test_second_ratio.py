"""``scalar_rule(..., second_ratio=r)``: a unary rule may give ``f''/f'``
instead of (or beside) ``f''``; Hessian sweeps then compute the tangent of
the cotangent as ``f' (gd + g r xd)`` in one array. The result must be the
second derivative's, for every input kind, and no array passed in is
written to."""

import itertools

import numpy as np
import pytest

import chainrules as cr
from chainrules.arrays import uniform_array
from chainrules.derived_common import first_times_sum
from chainrules.tangents import ZERO


@cr.primitive
def softplus(x):
    return np.logaddexp(0.0, x)


# f' = expit(x) = y' , f'' = f' (1 - f'): the ratio is 1 - f', cheaper than f''
cr.scalar_rule(softplus, lambda x, y: 1 / (1 + np.exp(-x)),
               second_ratio=lambda x, y: 1 / (1 + np.exp(x)))


def _softplus_d2(x):
    s = 1 / (1 + np.exp(-x))
    return s * (1 - s)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 4), (0,)])
def test_hvp_of_a_rule_given_only_the_ratio(dtype, shape):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(dtype)
    v = rng.standard_normal(shape).astype(dtype)
    x0, v0 = x.copy(), v.copy()
    hv = cr.hvp(lambda x: np.sum(softplus(x) * 3.0), x, v)
    assert hv.dtype == dtype and hv.shape == shape
    np.testing.assert_allclose(hv, 3.0 * _softplus_d2(x) * v,
                               rtol=1e-5 if dtype == np.float32 else 1e-13, atol=1e-30)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(v, v0)
    # the full Hessian (jacobian of the gradient) agrees with the HVP's sweep
    if x.size and x.ndim == 1:
        h = cr.hessian(lambda x: np.sum(softplus(x) * 3.0))(x.astype(np.float64))
        np.testing.assert_allclose(h @ v, hv, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_second_order_through_a_product_uses_the_cotangent_tangent():
    """g and gd both depend on x here (softplus(x) * x): the fused sum
    carries gd, the tangent of the cotangent, beside g r xd."""
    x = np.array([-1.3, 0.2, 2.5])
    v = np.array([0.5, -1.0, 2.0])
    s = 1 / (1 + np.exp(-x))
    # f(x) = sum(softplus(x) * x): f'' = 2 s + x s (1 - s) on the diagonal
    expected = (2 * s + x * s * (1 - s)) * v
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(softplus(x) * x), x, v), expected,
                               rtol=1e-14)


CLOSED = {  # f: (f', f'') in closed form
    np.tanh: (lambda x: 1 - np.tanh(x) ** 2,
              lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    np.exp: (np.exp, np.exp),
    np.expm1: (np.exp, np.exp),
    np.log: (lambda x: 1 / x, lambda x: -1 / x ** 2),
    np.tan: (lambda x: 1 + np.tan(x) ** 2, lambda x: 2 * np.tan(x) * (1 + np.tan(x) ** 2)),
}


@pytest.mark.parametrize("f", list(CLOSED), ids=lambda f: f.__name__)
def test_builtin_ratios_equal_the_second_derivative(f):
    x = np.array([0.3, 0.9, 1.2])
    v = np.array([1.0, -2.0, 0.5])
    d1, d2 = CLOSED[f]
    hv = cr.hvp(lambda x: np.sum(f(x) * x), x, v)
    # d/dx of (f'(x) x + f(x)) = f''(x) x + 2 f'(x)
    np.testing.assert_allclose(hv, (d2(x) * x + 2 * d1(x)) * v, rtol=1e-13)


def test_fused_sum_values_and_fallbacks():
    rng = np.random.default_rng(0)
    d, g, gd, xd, r = (rng.standard_normal((4, 3)) for _ in range(5))
    args = [a.copy() for a in (d, gd, g, r, xd)]
    out = first_times_sum(*args)
    np.testing.assert_allclose(out, gd * d + g * (d * r) * xd, rtol=1e-14)
    for a, b in zip(args, (d, gd, g, r, xd)):
        np.testing.assert_array_equal(a, b)  # nothing passed in was written
    assert out is not g and out is not xd and out is not gd
    # structural zero gd, a constant ratio, a uniform cotangent
    np.testing.assert_allclose(first_times_sum(d, ZERO, g, 1, xd), d * g * xd, rtol=1e-15)
    u = uniform_array(np.float64(0.5), (4, 3))
    np.testing.assert_allclose(first_times_sum(d, u, u, r, xd), d * (0.5 + 0.5 * r * xd),
                               rtol=1e-14)
    # mixed dtypes or a non-array partial: the caller takes the general path
    f32 = g.astype(np.float32)
    for bad in itertools.product([d, 2.0], [gd, gd.astype(np.complex128)], [g, f32]):
        if all(a is b for a, b in zip(bad, (d, gd, g))):
            continue
        assert first_times_sum(bad[0], bad[1], bad[2], r, xd) is None
