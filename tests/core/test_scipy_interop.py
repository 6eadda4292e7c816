"""SciPy's Python-level functions cannot be traced: a clear error that names
the function and the differentiable replacement in chainrules.scipy."""

import numpy as np
import pytest

import chainrules as cr

sp = pytest.importorskip("scipy.special")
sl = pytest.importorskip("scipy.linalg")


def test_python_level_scipy_function_names_itself_and_the_way_out():
    with pytest.raises(cr.UntraceableError, match=r"scipy\.special.*logsumexp.*call chainrules\.scipy\.special\.logsumexp"):
        cr.grad(lambda x: sp.logsumexp(x))(np.ones(3))
    with pytest.raises(cr.UntraceableError, match=r"call chainrules\.scipy\.linalg\.expm"):
        cr.grad(lambda a: np.sum(sl.expm(a)))(np.eye(2))


def test_scipy_function_without_a_twin_points_to_primitive():
    with pytest.raises(cr.UntraceableError, match=r"chainrules\.primitive"):
        cr.grad(lambda a: np.sum(sl.hadamard(2) @ sl.fractional_matrix_power(a, 0.5)))(np.eye(2))


def test_chainrules_scipy_versions_differentiate():
    from chainrules.scipy import linalg, special

    x = np.array([0.1, 0.5, -0.3])
    g = cr.grad(lambda x: special.logsumexp(x))(x)
    np.testing.assert_allclose(g, np.exp(x) / np.sum(np.exp(x)))
    a = np.array([[0.1, 0.2], [0.0, -0.1]])
    # d/da sum(expm(a)) along e equals sum of the Frechet derivative
    e = np.array([[1.0, 0.0], [0.0, 0.0]])
    g = cr.grad(lambda a: np.sum(linalg.expm(a)))(a)
    fd = (np.sum(sl.expm(a + 1e-6 * e)) - np.sum(sl.expm(a - 1e-6 * e))) / 2e-6
    assert np.sum(g * e) == pytest.approx(fd, rel=1e-7)


def test_scipy_ufuncs_are_reached_directly():
    x = np.array([0.2, -1.0])
    g = cr.grad(lambda x: np.sum(sp.expit(x)))(x)
    s = sp.expit(x)
    np.testing.assert_allclose(g, s * (1 - s))
