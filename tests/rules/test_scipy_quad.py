"""The quadrature twins (chainrules.scipy.integrate.quad, quad_vec, dblquad):
closed forms, finite differences of values and gradients, the limits,
parameters in args or closed over, the argument kinds, and SciPy's results
and warnings."""

import warnings

import numpy as np
import pytest
import scipy.integrate as si

import chainrules as cr
from chainrules.scipy.integrate import dblquad, quad, quad_vec

SQPI = np.sqrt(np.pi)


def _fd(f, x, eps=1e-5):
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = eps
        out[i] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps)
    return out


def _gauss(p):
    return quad(lambda x, p: np.exp(-p * x * x), 0.0, np.inf, args=(p,))[0]


def test_gaussian_closed_form_grad_hvp_and_grad_of_grad():
    p = 1.7
    assert _gauss(p) == pytest.approx(0.5 * SQPI / np.sqrt(p), rel=1e-10)
    assert cr.grad(_gauss)(p) == pytest.approx(-0.25 * SQPI * p ** -1.5, rel=1e-8)
    second = 0.375 * SQPI * p ** -2.5
    assert cr.hvp(_gauss, p, 1.0) == pytest.approx(second, rel=1e-7)
    assert cr.grad(cr.grad(_gauss))(p) == pytest.approx(second, rel=1e-7)


def _sin_integral(t):
    a, b, p = t[0], t[1], t[2]
    return quad(lambda x: np.sin(p * x), a, b)[0]


def test_sin_closed_form_in_limits_and_parameter():
    a, b, p = 0.3, 2.1, 1.3
    t = np.array([a, b, p])
    exact = (np.cos(p * a) - np.cos(p * b)) / p
    assert _sin_integral(t) == pytest.approx(exact, rel=1e-10)
    grad = cr.grad(_sin_integral)(t)
    dp = (-a * np.sin(p * a) + b * np.sin(p * b)) / p - exact / p
    np.testing.assert_allclose(grad, [-np.sin(p * a), np.sin(p * b), dp], rtol=1e-8)
    # HVPs against finite differences of the gradient
    v = np.array([0.4, -0.3, 0.7])
    fd = (cr.grad(_sin_integral)(t + 1e-5 * v) - cr.grad(_sin_integral)(t - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(_sin_integral, t, v), fd, rtol=1e-6, atol=1e-8)
    h = cr.hessian(_sin_integral)(t)
    np.testing.assert_allclose(h, h.T, atol=1e-10)
    assert h[0, 1] == 0.0      # the limits do not interact


def test_gaussian_infinite_limits_location_and_scale():
    def total(t):
        m, s = t[0], t[1]
        return quad(lambda x: np.exp(-(x - m) ** 2 / (2 * s * s)), -np.inf, np.inf)[0]

    t = np.array([0.4, 1.3])
    assert total(t) == pytest.approx(t[1] * np.sqrt(2 * np.pi), rel=1e-9)
    np.testing.assert_allclose(cr.grad(total)(t), [0.0, np.sqrt(2 * np.pi)], atol=1e-7)


def test_infinite_limit_is_not_differentiated():
    with pytest.raises(cr.DomainError, match="upper limit inf"):
        cr.grad(lambda b: quad(lambda x: np.exp(-x * x), 0.0, b)[0])(np.inf)
    with pytest.raises(cr.DomainError, match="lower limit -inf"):
        cr.grad(lambda a: quad(lambda x: np.exp(-x * x), a, 0.0)[0])(-np.inf)


def test_args_and_closure_agree():
    w = np.array([0.5, 1.5, 2.0])

    def by_args(w):
        return quad(lambda x, w: np.sum(np.cos(w * x)) / (1 + x * x), 0.0, 2.0, args=(w,))[0]

    def by_closure(w):
        return quad(lambda x: np.sum(np.cos(w * x)) / (1 + x * x), 0.0, 2.0)[0]

    g = cr.grad(by_args)(w)
    np.testing.assert_allclose(cr.grad(by_closure)(w), g, rtol=1e-12)
    np.testing.assert_allclose(g, _fd(by_args, w), rtol=1e-6)
    v = np.array([1.0, -0.5, 0.25])
    fd = (cr.grad(by_args)(w + 1e-5 * v) - cr.grad(by_args)(w - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(by_closure, w, v), fd, rtol=1e-6, atol=1e-9)


def test_nested_args_and_non_float_args():
    def f(ws):
        return quad(lambda x, pair, n: n * ws[0] * np.exp(-pair[1] * x), 0.0, 1.0,
                    args=((ws[0], ws[1]), 2))[0]

    ws = np.array([0.7, 1.2])
    np.testing.assert_allclose(cr.grad(f)(ws), _fd(f, ws), rtol=1e-7)


@pytest.mark.parametrize("p", [1.3, np.float64(1.3), np.array(1.3), np.array([1.3])])
def test_parameter_kinds(p):
    g = cr.grad(lambda p: np.sum(quad(lambda x: np.sum(np.exp(-p * x)), 0.0, 1.0)[0]))(p)
    exact = ((1 + 1.3) * np.exp(-1.3) - 1) / 1.3 ** 2
    assert np.shape(g) == np.shape(p)
    np.testing.assert_allclose(g, exact, rtol=1e-9)


def test_float32_parameter_keeps_float32():
    p = np.float32(1.5)
    g = cr.grad(lambda p: quad(lambda x, p: np.exp(-p * x * x), 0.0, 1.0, args=(p,))[0])(p)
    assert g.dtype == np.float32
    exact = _fd(lambda q: si.quad(lambda x: np.exp(-q * x * x), 0.0, 1.0)[0], 1.5)
    assert float(g) == pytest.approx(float(exact), rel=1e-5)
    pa = np.array([1.5, 0.5], dtype=np.float32)
    ga = cr.grad(lambda p: quad(lambda x: np.sum(np.exp(-p * x)), 0.0, 1.0)[0])(pa)
    assert ga.dtype == np.float32 and ga.shape == (2,)


def test_empty_parameter():
    def f(p, c):
        return quad(lambda x: np.sum(p * x) + c * x, 0.0, 2.0)[0]

    g = cr.grad(f, argnums=(0, 1))(np.zeros(0), 1.5)
    assert g[0].shape == (0,)
    assert g[1] == pytest.approx(2.0)


def test_value_error_estimate_and_full_output_are_scipys():
    p = 1.2
    ref = si.quad(lambda x: np.exp(-p * x * x), 0.0, 3.0, full_output=1)
    seen = {}

    def f(p):
        out = quad(lambda x: np.exp(-p * x * x), 0.0, 3.0, full_output=1)
        seen["out"] = out
        return out[0]

    cr.grad(f)(p)
    out = seen["out"]
    assert len(out) == len(ref) and out[1] == ref[1]
    assert float(cr.stop_gradient(out[0])) == ref[0]
    assert out[2]["neval"] == ref[2]["neval"]


def test_not_converged_warns_as_scipy():
    def f(p):
        return quad(lambda x: np.cos(p * x) / np.sqrt(x), 0.0, 50.0, limit=2)[0]

    with pytest.warns(si.IntegrationWarning):
        si.quad(lambda x: np.cos(1.0 * x) / np.sqrt(x), 0.0, 50.0, limit=2)
    with pytest.warns(si.IntegrationWarning):
        cr.grad(f)(1.0)


def test_weighted_integrals_are_refused():
    with pytest.raises(cr.MissingRuleError, match="weight"):
        cr.grad(lambda p: quad(lambda x: p * x, 0.0, 1.0, weight="cos", wvar=2.0)[0])(1.0)


def test_inputs_untouched():
    w = np.array([0.5, 1.0])
    keep = w.copy()
    cr.hvp(lambda w: quad(lambda x: np.sum(np.sin(w * x)), 0.0, 1.0)[0], w, np.ones(2))
    np.testing.assert_array_equal(w, keep)


def test_plain_calls_are_scipys():
    f = lambda x, p: np.exp(-p * x)   # noqa: E731
    assert quad(f, 0.0, 1.0, args=(2.0,)) == si.quad(f, 0.0, 1.0, args=(2.0,))
    assert quad(f, 0.0, 1.0, args=2.0) == si.quad(f, 0.0, 1.0, args=2.0)


def test_quad_vec_vector_output():
    def vec(w):
        return quad_vec(lambda x: np.exp(-w * x), 0.0, 1.0)[0]

    w = np.array([0.5, 1.0, 2.0])
    exact = (1 - np.exp(-w)) / w
    np.testing.assert_allclose(vec(w), exact, rtol=1e-8)
    jac = cr.jacobian(vec)(w)
    djac = ((1 + w) * np.exp(-w) - 1) / w ** 2
    np.testing.assert_allclose(jac, np.diag(djac), rtol=1e-7, atol=1e-12)

    def loss(t):
        a, w = t[0], t[1:]
        return np.sum(quad_vec(lambda x, w: np.sin(w * x) ** 2, a, 2.0, args=(w,))[0] ** 2)

    t = np.array([0.2, 0.7, 1.1])
    np.testing.assert_allclose(cr.grad(loss)(t), _fd(loss, t), rtol=1e-6)
    v = np.array([0.3, -0.2, 0.5])
    fd = (cr.grad(loss)(t + 1e-5 * v) - cr.grad(loss)(t - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(loss, t, v), fd, rtol=1e-5, atol=1e-8)


def test_dblquad_parameters_and_callable_limits():
    def d(c):
        return dblquad(lambda y, x, c: np.exp(-c * x * y), 0.0, 1.0, lambda x: 0.0,
                       lambda x: c * x, args=(c,))[0]

    c = 0.7
    plain = si.dblquad(lambda y, x: np.exp(-c * x * y), 0.0, 1.0, 0.0, lambda x: c * x)[0]
    assert float(d(c)) == pytest.approx(plain, rel=1e-12)
    assert cr.grad(d)(c) == pytest.approx(float(_fd(d, c)), rel=1e-6)

    def box(t):   # the integral of x y over [a, b] x [0, 1]: (b^2 - a^2) / 4
        return dblquad(lambda y, x: x * y, t[0], t[1], 0.0, 1.0)[0]

    t = np.array([0.5, 2.0])
    np.testing.assert_allclose(cr.grad(box)(t), [-t[0] / 2, t[1] / 2], rtol=1e-9)


def test_warning_names_the_users_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cr.grad(lambda p: quad(lambda x: np.cos(p * x) / np.sqrt(x), 0.0, 50.0, limit=2)[0])(1.0)
    assert caught and all(w.filename == __file__ for w in caught
                          if issubclass(w.category, si.IntegrationWarning))


@pytest.mark.parametrize("name, call", [
    ("quad", lambda p: si.quad(lambda x: p * x, 0.0, 1.0)[0]),
    ("quad", lambda p: si.quad(lambda x, p: p * x, 0.0, 1.0, args=(p,))[0]),
    ("quad", lambda b: si.quad(lambda x: x, 0.0, b)[0]),
    ("dblquad", lambda p: si.dblquad(lambda y, x: p * x, 0.0, 1.0, 0.0, 1.0)[0]),
])
def test_plain_scipy_error_names_the_twin(name, call):
    with pytest.raises(cr.UntraceableError, match=f"chainrules.scipy.integrate.{name} "):
        cr.grad(call)(1.0)


def test_points_reversed_limits_and_a_traced_constant_inner_limit():
    # |x - p| over [0, 2] with a break point: d/dp = 2p - 2
    kink = lambda p: quad(lambda x: np.abs(x - p), 0.0, 2.0, points=[1.0])[0]  # noqa: E731
    assert cr.grad(kink)(0.7) == pytest.approx(2 * 0.7 - 2, rel=1e-8)
    # from 2 down to b: d/db = b^2
    assert cr.grad(lambda b: quad(lambda x: x * x, 2.0, b)[0])(0.5) == pytest.approx(0.25)
    # the inner lower limit a traced constant: (4 - c^2) / 4
    inner = lambda c: dblquad(lambda y, x: x * y, 0.0, 1.0, c, 2.0)[0]  # noqa: E731
    assert cr.grad(inner)(0.5) == pytest.approx(-0.25, rel=1e-10)


def test_quad_vec_full_output_is_scipys():
    seen = []

    def f(p):
        seen.append(quad_vec(lambda x: np.stack([p * x, p * p]), 0.0, 1.0, full_output=True))
        return np.sum(seen[-1][0])

    assert cr.grad(f)(1.5) == pytest.approx(0.5 + 2 * 1.5)
    res, err, info = seen[-1]
    assert info.success and err >= 0.0


def _closed_over(t):
    a, b, w = t[0], t[1], t[2:]
    return quad(lambda x: np.sum(np.sin(w * x)) * np.exp(-x * x), a, b)[0]


def _in_args(t):
    return quad(lambda x, w: np.sum(np.sin(w * x)) * np.exp(-x * x), t[0], t[1],
                args=(t[2:],))[0]


@pytest.mark.parametrize("f", [_closed_over, _in_args])
def test_nested_differentiation_to_third_order(f):
    t = np.array([0.1, 1.2, 0.7, 1.3])
    v = np.array([0.2, -0.4, 0.5, 0.3])
    h = cr.hessian(f)(t)
    np.testing.assert_allclose(cr.jacobian(cr.grad(f))(t), h, rtol=1e-10, atol=1e-12)
    third = cr.grad(lambda t: cr.hvp(f, t, v) @ v)(t)
    fd = _fd(lambda s: cr.hvp(f, s, v) @ v, t, eps=1e-4)
    np.testing.assert_allclose(third, fd, rtol=1e-5, atol=1e-8)


def test_dblquad_second_order_with_a_closed_over_limit():
    def d(c):   # the integral of c x y over 0 < y < c x, 0 < x < 1: c^3 / 8
        return dblquad(lambda y, x: c * x * y, 0.0, 1.0, 0.0, lambda x: c * x)[0]

    c = 0.7
    assert float(d(c)) == pytest.approx(c ** 3 / 8, rel=1e-12)
    assert cr.grad(d)(c) == pytest.approx(3 * c ** 2 / 8, rel=1e-10)
    assert cr.hvp(d, c, 1.0) == pytest.approx(0.75 * c, rel=1e-10)
    assert cr.grad(cr.grad(d))(c) == pytest.approx(0.75 * c, rel=1e-10)
