"""chainrules.scipy.special.polygamma and multigammaln: values equal SciPy's
(scalar and array orders, broadcasting, float32 kept, SciPy's nan for a
non-integer order), the derivative in x against finite differences and the
next polygamma, HVPs, the integer arguments refused when traced, d validated
as SciPy does, and the plain SciPy call naming the twin."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import chainrules as cr

sc = pytest.importorskip("scipy.special")
from chainrules.scipy import special as cs  # noqa: E402
from chainrules.testing import check_grads, check_rule  # noqa: E402
from chainrules.testing.specs import special as special_specs  # noqa: E402

X = np.array([0.3, 0.7, 2.0, 5.5, 40.0])
ORDERS = [0, 1, 2, 3, 6, np.array([[0], [1], [4]]), np.array([2, 0, 1, 3, 5])]


@pytest.mark.parametrize("n", ORDERS, ids=str)
def test_polygamma_values_and_derivative(n):
    out = cr.vjp(lambda x: cs.polygamma(n, x), X)[0]
    np.testing.assert_allclose(out, sc.polygamma(n, X), rtol=1e-13)
    np.testing.assert_allclose(cs.polygamma(n, X), sc.polygamma(n, X), rtol=1e-13)
    # d/dx polygamma(n, x) = polygamma(n + 1, x)
    g = cr.grad(lambda x: np.sum(cs.polygamma(n, x)))(X)
    ref = np.sum(np.broadcast_to(sc.polygamma(np.asarray(n) + 1, X), np.shape(out)), axis=0) \
        if np.ndim(out) > 1 else sc.polygamma(np.asarray(n) + 1, X)
    np.testing.assert_allclose(g, ref, rtol=1e-11)
    h = cr.hvp(lambda x: np.sum(cs.polygamma(n, x)), X, np.ones_like(X))
    ref2 = sc.polygamma(np.asarray(n) + 2, X)
    np.testing.assert_allclose(h, np.sum(ref2, axis=0) if np.ndim(ref2) > 1 else ref2,
                               rtol=1e-10)


def test_polygamma_dtypes_and_scipy_edges():
    x32 = X.astype(np.float32)
    for n in (0, 2, np.array([1, 0, 2, 3, 1])):
        assert cs.polygamma(n, x32).dtype == np.float32
        assert cr.vjp(lambda x: cs.polygamma(n, x), x32)[0].dtype == np.float32
        np.testing.assert_allclose(cs.polygamma(n, x32), sc.polygamma(n, X), rtol=2e-5)
    with np.errstate(invalid="ignore"):
        assert np.isnan(cs.polygamma(1.5, 2.0)) and np.isnan(sc.polygamma(1.5, 2.0))
        np.testing.assert_array_equal(np.isnan(cs.polygamma(np.array([1.5, 1.0]), 2.0)),
                                      [True, False])
    assert cs.polygamma(25, 3.0) == pytest.approx(sc.polygamma(25, 3.0), rel=1e-13)
    with pytest.raises(cr.MissingRuleError, match="integer argument"):
        cr.grad(lambda n: cs.polygamma(n, 2.0))(1.0)


def test_multigammaln_values_dtypes_and_validation():
    a = np.array([2.5, 4.0, 11.0])
    for d in (1, 2, 3, 5, np.int64(4)):
        np.testing.assert_allclose(cr.vjp(lambda a: cs.multigammaln(a, d), a)[0],
                                   sc.multigammaln(a, d), rtol=1e-13)
    assert cs.multigammaln(a.astype(np.float32), 3).dtype == np.float32
    for bad in (2.5, np.array([2, 3])):
        with pytest.raises(ValueError, match="positive integer"):
            cs.multigammaln(a, bad)
        with pytest.raises(ValueError, match="positive integer"):
            sc.multigammaln(a, bad)
    with pytest.raises(ValueError, match="condition"):
        cr.grad(lambda a: np.sum(cs.multigammaln(a, 4)))(np.array([1.4, 3.0]))
    with pytest.raises(cr.MissingRuleError, match="integer argument"):
        cr.grad(lambda d: cs.multigammaln(4.0, d))(2.0)


@pytest.mark.parametrize("name", ["polygamma", "multigammaln"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_check_rule(name, dtype):
    spec = next(s for s in special_specs.SPECS if s.label == f"chainrules.scipy.special.{name}")

    @settings(max_examples=6, deadline=None, database=None, derandomize=True)
    @given(st.data())
    def run(data):
        args, kw = spec.args(data.draw, np.dtype(dtype))
        check_rule(spec.op, *args, op_kwargs=kw, hvp_fast=True)

    run()


def test_check_grads_to_third_order():
    check_grads(lambda x: cs.polygamma(1, x), X[:3], order=3)
    check_grads(lambda a: cs.multigammaln(a, 3), np.array([1.7, 3.2]), order=3)


@pytest.mark.parametrize("name, call", [
    ("polygamma", lambda x: sc.polygamma(1, x)),
    ("multigammaln", lambda x: sc.multigammaln(x + 2.0, 3)),
])
def test_plain_scipy_call_names_the_twin(name, call):
    with pytest.raises(cr.UntraceableError, match=rf"chainrules\.scipy\.special\.{name} "):
        cr.grad(lambda x: np.sum(call(x)))(X)
