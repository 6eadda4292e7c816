"""scipy.special rules: closed-form values, second derivatives, and the
differentiable versions of SciPy's Python-level functions."""

import numpy as np
import pytest

import chainrules as cr

sc = pytest.importorskip("scipy.special")
from chainrules.rules import special as crsp  # noqa: E402

RNG = np.random.default_rng(0)


def test_expit_gradient_and_second_derivative():
    x = np.array([-3.0, 0.0, 2.0])
    s = sc.expit(x)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(sc.expit(x)))(x), s * (1 - s))
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(sc.expit(x)), x, np.ones(3)),
                               s * (1 - s) * (1 - 2 * s))


def test_gammaln_derivatives_are_digamma_and_trigamma():
    x = np.array([0.5, 1.0, 3.5])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(sc.gammaln(x)))(x), sc.digamma(x))
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(sc.gammaln(x)), x, np.ones(3)),
                               sc.polygamma(1, x))
    # third order through nested differentiation
    d3 = cr.grad(lambda x: np.sum(cr.grad(lambda y: np.sum(sc.digamma(y)))(x)))(x)
    np.testing.assert_allclose(d3, sc.polygamma(2, x), rtol=1e-10)


def test_order_argument_is_not_differentiated():
    with pytest.raises(cr.MissingRuleError, match="order v"):
        cr.grad(lambda v: np.sum(sc.iv(v, 1.5)))(np.array([1.0]))


def test_logsumexp_matches_scipy_and_gradient_is_softmax():
    x = RNG.standard_normal((3, 4))
    b = RNG.uniform(0.5, 2, (3, 4))
    for kw in [{}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": 1, "b": b}]:
        np.testing.assert_allclose(crsp.logsumexp(x, **kw), sc.logsumexp(x, **kw))
    g = cr.grad(lambda x: np.sum(crsp.logsumexp(x, axis=1)))(x)
    np.testing.assert_allclose(g, sc.softmax(x, axis=1), rtol=1e-12)
    gb = cr.grad(lambda x: crsp.logsumexp(x, b=b))(x)
    np.testing.assert_allclose(gb, b * np.exp(x) / np.sum(b * np.exp(x)), rtol=1e-12)
    out, sign = crsp.logsumexp(x, b=-b, return_sign=True)
    ref = sc.logsumexp(x, b=-b, return_sign=True)
    np.testing.assert_allclose((out, sign), ref)


def test_softmax_log_softmax_polygamma():
    x = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(crsp.softmax(x, axis=1), sc.softmax(x, axis=1))
    np.testing.assert_allclose(crsp.log_softmax(x, axis=0), sc.log_softmax(x, axis=0))
    g = cr.grad(lambda x: np.sum(crsp.log_softmax(x, axis=1)[:, 0]))(x)
    p = sc.softmax(x, axis=1)
    np.testing.assert_allclose(g, np.eye(3)[0] - p, rtol=1e-12)
    y = np.array([0.7, 2.0])
    np.testing.assert_allclose(crsp.polygamma(2, y), sc.polygamma(2, y))
    np.testing.assert_allclose(cr.grad(lambda y: np.sum(crsp.polygamma(1, y)))(y),
                               sc.polygamma(2, y))


def test_python_level_scipy_functions_raise_clearly():
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda x: sc.logsumexp(x))(np.ones(3))
