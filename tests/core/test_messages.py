"""What a user meets on the way: printing a traced value shows its value,
and refused uses name the library or the pattern involved and the way out."""

import math

import numpy as np
import pytest

import chainrules as cr


def test_print_debugging_shows_the_value():
    seen = {}

    def f(x):
        loss = np.sum(x ** 2)
        seen["fmt"] = f"{loss:.3f}"
        seen["str"] = str(x)
        seen["repr"] = repr(loss)
        return loss

    cr.grad(f)(np.array([1.0, 2.0]))
    assert seen["fmt"] == "5.000"
    assert seen["str"] == str(np.array([1.0, 2.0]))
    assert seen["repr"].startswith("Traced(") and "5.0" in seen["repr"]
    assert "node" not in seen["repr"] and "level" not in seen["repr"]


def test_format_spec_on_an_array_fails_as_numpy_does():
    def f(x):
        f"{x:.3f}"
        return np.sum(x)

    with pytest.raises(TypeError):
        f"{np.ones(2):.3f}"
    with pytest.raises(TypeError):
        cr.grad(f)(np.ones(2))


def test_math_module_names_numpy():
    with pytest.raises(cr.UntraceableError, match=r"math.exp.*np.exp"):
        cr.grad(lambda x: math.exp(x))(1.0)


def test_vectorize_is_named():
    with pytest.raises(cr.UntraceableError, match=r"np.vectorize.*chainrules.primitive"):
        cr.grad(lambda x: np.sum(np.vectorize(lambda t: t * 2)(x)))(np.ones(2))


def test_a_list_argument_is_explained():
    with pytest.raises(cr.UntraceableError, match=r"Python list.*np.array\(the_list\)"):
        cr.grad(lambda x: np.sum(x))([0.3, -1.2])
    # a list is a pytree of scalars: used element by element it is differentiable
    g = cr.grad(lambda x: x[0] * x[1])([0.3, -1.2])
    assert [float(v) for v in g] == [-1.2, 0.3]


def test_pandas_objects():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(np.arange(6.0).reshape(3, 2))
    y = pd.Series(np.ones(3))
    with pytest.raises(cr.UntraceableError, match=r"pandas.*X.to_numpy\(\)"):
        cr.grad(lambda w: np.sum(X @ w))(np.ones(2))
    with pytest.raises(cr.UntraceableError, match="pandas"):
        cr.grad(lambda w: np.sum(y * w))(np.ones(3))
    with pytest.raises(cr.NonDifferentiableInputError, match=r"pandas Series.*to_numpy\(\)"):
        cr.grad(lambda s: np.sum(s ** 2))(y)
    with pytest.raises(cr.NonDifferentiableInputError, match=r"pandas DataFrame"):
        cr.grad(lambda s: np.sum(s ** 2))(X)
    # the way out works
    g = cr.grad(lambda w: np.sum((X.to_numpy() @ w - y.to_numpy()) ** 2))(np.ones(2))
    np.testing.assert_allclose(g, 2 * X.to_numpy().T @ (X.to_numpy() @ np.ones(2) - 1))
