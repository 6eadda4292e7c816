"""Array creation from traced values: np.array fails loudly,
chainrules.numpy.array works (gradients, HVPs, nesting)."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.numpy as cnp


@pytest.mark.parametrize("build", [
    lambda x: np.array([x[0], x[1]]),
    lambda x: np.array([[x[0], 1.0]]),
    lambda x: np.asarray([x[0], x[1]]),
    lambda x: np.array(x),
    lambda x: np.array([x, x]),
    lambda x: np.array([x[0], 1.0], dtype=float),
])
def test_np_array_of_traced_values_raises_naming_np_stack(build):
    def f(x):
        return np.sum(build(x))

    with pytest.raises(cr.UntraceableError, match=r"np\.stack") as info:
        cr.grad(f)(np.array([1.0, 2.0]))
    assert "chainrules.numpy.array" in str(info.value)


def test_cnp_array_gradient_matches_closed_form():
    def f(x):
        m = cnp.array([[x[0], 1.0], [x[1] * x[0], 2.0]])
        return np.sum(m ** 2)

    x = np.array([1.5, -0.5])
    # f = x0^2 + 1 + x0^2 x1^2 + 4
    g = cr.grad(f)(x)
    np.testing.assert_allclose(g, [2 * x[0] + 2 * x[0] * x[1] ** 2, 2 * x[0] ** 2 * x[1]])
    v = np.array([0.3, 0.7])
    hess = np.array([[2 + 2 * x[1] ** 2, 4 * x[0] * x[1]],
                     [4 * x[0] * x[1], 2 * x[0] ** 2]])
    np.testing.assert_allclose(cr.hvp(f, x, v), hess @ v)
    # nested: the gradient of a gradient component
    np.testing.assert_allclose(cr.grad(lambda x: cr.grad(f)(x)[1])(x), hess[1])


def test_cnp_array_of_scalars_and_arrays_mixed():
    def f(a, s):
        m = cnp.array([a, [1.0, 2.0], np.zeros(2) + s])
        return m

    a = np.array([3.0, 4.0])
    out, f_vjp = cr.vjp(f, a, 2.0)
    np.testing.assert_array_equal(out, [[3.0, 4.0], [1.0, 2.0], [2.0, 2.0]])
    ga, gs = f_vjp(np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(ga, [0.0, 1.0])
    assert gs == pytest.approx(9.0)


def test_cnp_array_dtype_and_plain_inputs():
    np.testing.assert_array_equal(cnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
    g = cr.grad(lambda x: np.sum(cnp.array([x, x * 2], dtype=np.float32)))(np.float64(1.0))
    assert g == pytest.approx(3.0)

    def f(x):
        y = cnp.array([x, 1.0], dtype=np.float32)
        assert y.dtype == np.float32
        return np.sum(y)

    cr.grad(f)(np.float64(1.0))


def test_cnp_asarray_passes_traced_through():
    def f(x):
        assert cnp.asarray(x) is x
        return np.sum(cnp.asarray([x, x]))

    np.testing.assert_array_equal(cr.grad(f)(np.ones(2)), [2.0, 2.0])
