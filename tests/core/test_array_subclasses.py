"""ndarray subclasses: np.memmap is an ndarray in all but name and is
differentiated as one; every other subclass (np.matrix, masked arrays,
record arrays, user subclasses) has semantics of its own that a traced
computation would not follow, so it is refused with a typed error, as an
input and as a constant operand, and the user's array is left untouched."""

import numpy as np
import pytest

import chainrules as cr

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")

X = np.array([[0.3, -1.2], [2.0, 0.7]])


class Scaled(np.ndarray):
    """A user subclass whose results differ from an ndarray's."""

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return np.asarray(arr).view(Scaled) * 2


def _subclasses():
    return {
        "matrix": np.matrix(X),
        "masked": np.ma.array(X, mask=[[0, 1], [0, 0]]),
        "masked-nomask": np.ma.array(X),
        "recarray": X.view(np.recarray),
        "user": X.view(Scaled),
    }


@pytest.mark.parametrize("kind", sorted(_subclasses()))
def test_subclass_input_is_refused_and_untouched(kind):
    a = _subclasses()[kind]
    before = np.array(a)
    for entry in (cr.grad, cr.value_and_grad):
        with pytest.raises(cr.NonDifferentiableInputError,
                           match=r"subclass of np.ndarray.*np.asarray\(x\)"):
            entry(lambda x: np.sum(np.sin(x) * x ** 2))(a)
    with pytest.raises(cr.NonDifferentiableInputError, match="subclass of np.ndarray"):
        cr.jvp(lambda x: np.sin(x), (a,), (np.ones((2, 2)),))
    with pytest.raises(cr.NonDifferentiableInputError, match="subclass of np.ndarray"):
        cr.hvp(lambda x: np.sum(x ** 3), a, np.ones((2, 2)))
    np.testing.assert_array_equal(np.array(a), before)


def test_matrix_input_names_its_semantics():
    with pytest.raises(cr.NonDifferentiableInputError, match=r"\* is a matrix product"):
        cr.grad(lambda x: np.sum(x * x))(np.matrix(X))


@pytest.mark.parametrize("kind", ["matrix", "masked", "recarray", "user"])
@pytest.mark.parametrize("form", ["x * c", "c * x", "np.multiply(x, c)", "x @ c",
                                  "np.add(c, x)", "x - c"])
def test_subclass_constant_operand_is_refused(kind, form):
    c = _subclasses()[kind]
    f = eval(f"lambda x, c: np.sum({form})")
    with pytest.raises(cr.AutodiffError):
        cr.grad(f)(X.copy(), c)


def test_memmap_is_differentiated_as_an_ndarray(tmp_path):
    m = np.memmap(tmp_path / "x.dat", dtype=float, mode="w+", shape=(3,))
    m[:] = [1.0, 2.0, 3.0]
    g = cr.grad(lambda x: np.sum(x ** 2))(m)
    assert type(g) is np.ndarray
    np.testing.assert_array_equal(g, [2.0, 4.0, 6.0])
    g = cr.grad(lambda x: np.sum(x * m))(np.ones(3))
    np.testing.assert_array_equal(g, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m, [1.0, 2.0, 3.0])


def test_plain_arrays_unaffected():
    v, g = cr.value_and_grad(lambda x: np.sum(np.sin(x) * x ** 2))(X)
    np.testing.assert_allclose(v, np.sum(np.sin(X) * X ** 2))
    np.testing.assert_allclose(g, np.cos(X) * X ** 2 + 2 * X * np.sin(X))
