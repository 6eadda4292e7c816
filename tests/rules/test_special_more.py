"""scipy.special beyond the spec sweep: derivatives in shape arguments
(the incomplete-gamma series), arguments without a closed-form derivative,
limits at the zeros of 1/Gamma, the Python-level twins."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.errors import MissingRuleError, UntraceableError

sc = pytest.importorskip("scipy.special")
from chainrules.scipy import special as crs  # noqa: E402


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@pytest.mark.parametrize("a, x", [(0.3, 0.01), (1.5, 0.5), (3.0, 2.0), (20.0, 30.0),
                                  (150.0, 160.0), (2.0, 400.0), (800.0, 700.0)])
def test_gammainc_shape_derivative_against_finite_differences(a, x):
    for f in (sc.gammainc, sc.gammaincc):
        g = cr.grad(lambda a_: f(a_, x))(a)
        np.testing.assert_allclose(g, _fd(lambda a_: f(a_, x), a), rtol=1e-6, atol=1e-12)
        h = cr.grad(cr.grad(lambda a_: f(a_, x)))(a)
        fd2 = _fd(lambda a_: cr.grad(lambda b: f(b, x))(a_), a, 1e-5)
        np.testing.assert_allclose(h, fd2, rtol=1e-5, atol=1e-10)


def test_gammainc_shape_derivative_far_tail_and_zero():
    # Q(2, 1e4) underflows: the derivative is 0, not nan; x = 0 gives P = 0 for all a
    g = cr.grad(lambda a: np.sum(sc.gammainc(a, np.array([1e4, 0.0]))))(np.array([2.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_gammainc_mixed_second_derivative():
    f = lambda a, x: sc.gammainc(a, x)  # noqa: E731
    h = cr.grad(cr.grad(f, argnums=0), argnums=1)(2.5, 1.7)
    fd = _fd(lambda x: cr.grad(f, argnums=0)(2.5, x), 1.7, 1e-5)
    np.testing.assert_allclose(h, fd, rtol=1e-6)


@pytest.mark.parametrize("call, what", [
    (lambda v: sc.jv(v, 1.5), "order v"),
    (lambda v: sc.kv(v, 1.5), "order v"),
    (lambda a: sc.betainc(a, 2.0, 0.3), "shape a"),
    (lambda b: sc.betainc(2.0, b, 0.3), "shape b"),
    (lambda a: sc.gammaincinv(a, 0.3), "shape a"),
])
def test_no_closed_form_raises_naming_the_argument(call, what):
    with pytest.raises(MissingRuleError, match=what):
        cr.grad(call)(1.5)


def test_order_held_constant_differentiates_the_argument():
    g = cr.grad(lambda x: sc.jv(2.5, x))(1.3)
    np.testing.assert_allclose(g, sc.jvp(2.5, 1.3), rtol=1e-12)
    g = cr.grad(lambda x: sc.kve(1.0, x))(0.7)
    np.testing.assert_allclose(g, _fd(lambda x: sc.kve(1.0, x), 0.7), rtol=1e-7)


def test_rgamma_at_its_zeros():
    x = np.array([0.0, -1.0, -2.0, -3.0])
    g = cr.grad(lambda x: np.sum(sc.rgamma(x)))(x)
    np.testing.assert_allclose(g, [1.0, -1.0, 2.0, -6.0])
    h = np.diag(cr.hessian(lambda x: np.sum(sc.rgamma(x)))(x))
    fd = _fd(lambda x: cr.grad(lambda y: np.sum(sc.rgamma(y)))(x), x, 1e-5)
    np.testing.assert_allclose(h, fd, rtol=1e-6)


def test_gammasgn_is_a_constant():
    g = cr.grad(lambda x: np.sum(sc.gammasgn(x) * x))(np.array([-0.5, 1.5]))
    np.testing.assert_array_equal(g, [-1.0, 1.0])


def test_wofz_of_real_argument_gives_real_cotangent():
    g = cr.grad(lambda x: np.real(sc.wofz(x)))(0.6)
    assert isinstance(g, float)
    np.testing.assert_allclose(g, _fd(lambda x: np.real(sc.wofz(x)), 0.6), rtol=1e-8)


def test_loggamma_complex_first_order_and_clear_second_order_error():
    z = 1.5 + 0.5j
    g = cr.grad(lambda z: sc.loggamma(z), holomorphic=True)(z)
    np.testing.assert_allclose(g, sc.digamma(z), rtol=1e-12)
    with pytest.raises(MissingRuleError, match="trigamma"):
        cr.hvp(lambda z: np.real(sc.loggamma(z)), np.array([z]), np.array([1.0 + 0j]))


def test_huber_zones():
    d = 1.0
    r = np.array([0.3, -2.5])
    gd, gr = cr.grad(lambda d, r: np.sum(sc.huber(d, r)), argnums=(0, 1))(d, r)
    np.testing.assert_allclose(gr, [0.3, -1.0])
    np.testing.assert_allclose(gd, 0.0 + (2.5 - 1.0))


def test_multigammaln_twin_values_and_message():
    a = np.array([2.5, 4.0])
    np.testing.assert_allclose(crs.multigammaln(a, 3), sc.multigammaln(a, 3), rtol=1e-13)
    g = cr.grad(lambda a: np.sum(crs.multigammaln(a, 3)))(a)
    np.testing.assert_allclose(g, sum(sc.digamma(a + (1 - j) / 2) for j in (1, 2, 3)))
    with pytest.raises(UntraceableError, match="chainrules.scipy.special.multigammaln"):
        cr.grad(lambda a: np.sum(sc.multigammaln(a, 3)))(a)
    with pytest.raises(ValueError):
        crs.multigammaln(0.5, 3)


def test_softplus_twin():
    x = np.array([-30.0, 0.0, 40.0])
    np.testing.assert_allclose(crs.softplus(x), sc.softplus(x), rtol=1e-15)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(crs.softplus(x)))(x), sc.expit(x))


def test_ternary_rule_broadcasts_and_keeps_float32():
    a = np.float32(2.0)
    x = np.array([[0.2], [0.6]], np.float32)
    g = cr.grad(lambda x: np.sum(sc.betainc(a, np.array([1.5, 3.0], np.float32), x)))(x)
    assert g.dtype == np.float32 and g.shape == (2, 1)
    ref = sum(_fd(lambda t: sc.betainc(2.0, b, t), x.astype(float)) for b in (1.5, 3.0))
    np.testing.assert_allclose(g, ref, rtol=1e-4)
