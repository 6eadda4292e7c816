"""chainrules.pytree.ravel: a pytree of arrays and scalars as one vector and
back, with shapes and dtypes kept, differentiable both ways."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.pytree import ravel


def _tree():
    return {"w": np.arange(6.0).reshape(2, 3), "b": np.float32(0.5),
            "layers": [1.5, np.ones(2, np.float32)], "empty": np.zeros((0, 2))}


def test_round_trip_keeps_structure_shapes_and_dtypes():
    tree = _tree()
    v, unravel = ravel(tree)
    assert v.shape == (10,) and v.dtype == np.float64
    np.testing.assert_array_equal(v, np.concatenate([np.arange(6.0), [0.5, 1.5, 1.0, 1.0]]))
    back = unravel(v)
    assert set(back) == set(tree)
    np.testing.assert_array_equal(back["w"], tree["w"])
    assert back["b"].dtype == np.float32 and back["layers"][1].dtype == np.float32
    assert back["empty"].shape == (0, 2)


def test_float32_leaves_give_a_float32_vector():
    v, unravel = ravel([np.ones(2, np.float32), np.float32(2.0)])
    assert v.dtype == np.float32
    assert unravel(v)[0].dtype == np.float32


def test_gradient_through_unravel_is_a_vector():
    tree = _tree()
    v, unravel = ravel(tree)

    def loss(v):
        p = unravel(v)
        return np.sum(p["w"] ** 2) + 3 * p["b"] + p["layers"][0] * np.sum(p["layers"][1])

    g = cr.grad(loss)(v)
    expected = np.concatenate([2 * np.arange(6.0), [3.0, 2.0, 1.5, 1.5]])
    np.testing.assert_allclose(g, expected)


def test_gradient_through_ravel_has_the_tree_structure():
    tree = _tree()
    g = cr.grad(lambda t: np.sum(ravel(t)[0] ** 2))(tree)
    np.testing.assert_allclose(g["w"], 2 * tree["w"])
    assert g["b"].dtype == np.float32 and float(g["b"]) == 1.0
    np.testing.assert_allclose(g["layers"][1], [2.0, 2.0])


def test_wrong_length_is_a_clear_error():
    _, unravel = ravel({"a": np.ones(3)})
    with pytest.raises(ValueError, match="vector of 3 elements"):
        unravel(np.ones(4))
