"""chainrules.scipy.optimize: SciPy's Rosenbrock functions, differentiable.
Values equal SciPy's; the derivatives of each function equal the next one
(grad of rosen is rosen_der, its Jacobian rosen_hess, the HVP
rosen_hess_prod); every function passes check_grads to second order."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import chainrules as cr
from chainrules.scipy import optimize as co
from chainrules.testing import check_grads, strategies as crs

so = pytest.importorskip("scipy.optimize")


def _x(draw, batch=False):
    n = draw(st.integers(2, 6))
    shape = (n,) + ((draw(st.integers(1, 3)),) if batch else ())
    return draw(crs.arrays(np.float64, shape, "real"))


@given(st.data())
def test_values_equal_scipy(data):
    x = _x(data.draw, batch=data.draw(st.booleans()))
    p = data.draw(crs.arrays(np.float64, x.shape, "real"))
    np.testing.assert_allclose(co.rosen(x), so.rosen(x), rtol=1e-13)
    np.testing.assert_allclose(co.rosen_der(x), so.rosen_der(x), rtol=1e-12, atol=1e-12)
    if x.ndim == 1:
        np.testing.assert_allclose(co.rosen_hess_prod(x, p), so.rosen_hess_prod(x, p),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(co.rosen_hess(x), so.rosen_hess(x), rtol=1e-13, atol=1e-13)


@given(st.data())
def test_each_is_the_derivative_of_the_last(data):
    x = _x(data.draw)
    p = data.draw(crs.arrays(np.float64, x.shape, "real"))
    np.testing.assert_allclose(cr.grad(co.rosen)(x), co.rosen_der(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cr.hvp(co.rosen, x, p), co.rosen_hess_prod(x, p),
                               rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(cr.jacobian(co.rosen_der)(x), co.rosen_hess(x),
                               rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(cr.hessian(co.rosen)(x), co.rosen_hess(x), rtol=1e-12, atol=1e-11)


@given(st.data())
def test_check_grads(data):
    x = _x(data.draw, batch=data.draw(st.booleans()))
    p = data.draw(crs.arrays(np.float64, x.shape, "real"))
    check_grads(lambda x: np.sum(co.rosen(x)), x, order=2)
    check_grads(co.rosen_der, x, order=2)
    check_grads(co.rosen_hess_prod, x, p, order=2)
    if x.ndim == 1:
        check_grads(co.rosen_hess, x, order=1)


def test_plain_inputs_and_dtypes():
    assert co.rosen([1.0, 1.0, 1.0]) == 0.0
    np.testing.assert_array_equal(co.rosen_der([1, 1]), [0.0, 0.0])
    x32 = np.array([0.5, -0.3, 1.2], np.float32)
    assert co.rosen(x32).dtype == np.float32 and co.rosen_der(x32).dtype == np.float32
    with pytest.raises(ValueError, match="at least 2"):
        co.rosen(np.array([1.0]))
    with pytest.raises(ValueError, match="shape"):
        co.rosen_hess_prod(np.ones(3), np.ones(2))


def test_minimize_and_the_twin_hint():
    res = so.minimize(co.rosen, np.full(8, -1.0), jac=cr.grad(co.rosen),
                      hessp=cr.hessp(co.rosen), method="trust-krylov")
    assert res.success and np.allclose(res.x, 1.0, atol=1e-6)
    # SciPy's own rosen cannot be traced; the error names this twin
    with pytest.raises(cr.UntraceableError, match=r"chainrules\.scipy\.optimize\.rosen"):
        cr.grad(so.rosen)(np.ones(3))
