"""Non-differentiable operations: plain outputs, no tangent, and the rest of
the function still differentiates."""

import numpy as np
import pytest

import chainrules as cr


def test_nondiff_ops_do_not_break_the_gradient_of_the_rest():
    x = np.array([0.3, -1.2, 2.5, 0.7])

    def f(x):
        i = np.argmax(x)
        order = np.argsort(x)
        k = np.floor(x * 2)  # a plain array: its derivative is zero almost everywhere
        mask = np.logical_and(x > -1, np.isfinite(x))
        n = np.count_nonzero(mask)
        return x[i] ** 2 + np.sum(x[order] * np.arange(4.0)) + np.sum(k * x) + n * np.sum(x)

    g = cr.grad(f)(x)
    expected = np.zeros(4)
    expected[2] += 2 * x[2]
    expected[np.argsort(x)] += np.arange(4.0)
    expected += np.floor(x * 2) + 3
    np.testing.assert_allclose(g, expected)
    # and to second order
    h = cr.hvp(f, x, np.ones(4))
    np.testing.assert_allclose(h, [0.0, 0.0, 2.0, 0.0])


def test_outputs_are_plain_values():
    seen = {}

    def f(x):
        seen["argmax"] = np.argmax(x)
        seen["nonzero"] = np.nonzero(x)
        seen["round"] = np.round(x, 1)
        seen["cmp"] = x < 0.5
        seen["shape"] = np.shape(x)
        seen["full"] = cr.stop_gradient(np.full_like(x, 3.0))  # a traced buffer
        seen["close"] = np.allclose(x, x)
        seen["div"] = x // 0.5
        return np.sum(x)

    cr.grad(f)(np.array([0.25, 1.0]))
    for name, v in seen.items():
        leaves = v if isinstance(v, tuple) else (v,)
        assert not any(isinstance(leaf, cr.Traced) for leaf in leaves), name
    assert seen["shape"] == (2,)
    np.testing.assert_array_equal(seen["full"], [3.0, 3.0])
    np.testing.assert_array_equal(seen["div"], [0.0, 2.0])
    assert seen["close"] is True or seen["close"] == np.True_


def test_piecewise_constant_ops_give_zero_derivative():
    x = np.array([0.3, 1.7])
    for op in (np.floor, np.ceil, np.rint, np.trunc, np.fix, np.sign, np.round):
        g = cr.grad(lambda x: np.sum(op(x) + 0.0 * x))(x)
        np.testing.assert_array_equal(g, [0.0, 0.0])
        _, t = cr.jvp(lambda x: op(x), (x,), (np.ones(2),))
        np.testing.assert_array_equal(t, [0.0, 0.0])


def test_full_like_with_traced_fill_value():
    # a traced buffer filled with the traced value (tests/core/test_writes.py)
    np.testing.assert_array_equal(
        cr.grad(lambda x: np.sum(np.full_like(x, x[0])))(np.ones(3)), [3.0, 0.0, 0.0])
    # with a plain first argument NumPy fills through np.copyto, which raises
    with pytest.raises(cr.AutodiffError, match="copyto"):
        cr.grad(lambda x: np.sum(np.full_like(np.ones(3), x)))(2.0)


def test_shape_queries_after_differentiation_finished():
    box = {}

    def f(x):
        box["x"] = x
        return np.sum(x)

    cr.grad(f)(np.ones((2, 3)))
    escaped = box["x"]
    assert np.shape(escaped) == (2, 3)
    assert np.ndim(escaped) == 2
    with pytest.raises(cr.EscapedTracerError):
        np.sin(escaped)


def test_astype_int_and_bool_is_plain():
    def f(x):
        i = x.astype(int)
        b = x.astype(bool)
        assert not isinstance(i, cr.Traced) and not isinstance(b, cr.Traced)
        return np.sum(x * i * b)

    np.testing.assert_array_equal(cr.grad(f)(np.array([0.0, 1.5, 2.5])), [0.0, 1.0, 2.0])
