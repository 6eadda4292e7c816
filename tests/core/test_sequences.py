"""Traced values inside lists and tuples: where a function takes a sequence
of arrays (concatenate, stack, select, choose, multi_dot, block) each piece
is its own input; anywhere else the list is an array_like and is traced as
one array. Every case is checked against central finite differences."""

import numpy as np
import pytest

import chainrules as cr

X = np.array([1.0, 2.0, 3.0])
A = np.ones((2, 2))

CASES = {
    "append list arr": lambda x: np.append([x, 2.0 * x], x),
    "append list values": lambda x: np.append(x, [x[0], 1.0]),
    "concatenate nested": lambda x: np.concatenate([[x[0], x[1]], x]),
    "stack mixed": lambda x: np.stack([x, np.ones(3), 2 * x]),
    "hstack": lambda x: np.hstack([x, [x[0]]]),
    "vstack": lambda x: np.vstack([x, [1.0, 2.0, x[2]]]),
    "column_stack": lambda x: np.column_stack([x, [x[0], x[0], x[0]]]),
    "dstack": lambda x: np.dstack([x, [x[0], x[1], x[1]]]),
    "block 2x2": lambda x: np.block([[x, x], [x, 2 * x]]),
    "block mixed ranks": lambda x: np.block([[A, x[:2, None]], [x[None, :2], 5.0]]),
    "where list": lambda x: np.where(x > 1, [x[0]] * 3, x),
    "select lists": lambda x: np.select([x > 1, x <= 1], [x, [x[0], x[1], x[2]]]),
    "choose list": lambda x: np.choose([0, 1, 0], [x, [x[2], x[1], x[0]]]),
    "dot list": lambda x: np.dot([x[0], x[1], x[2]], x),
    "maximum list": lambda x: np.maximum([x[0], x[1], 0.0], x),
    "multiply tuple": lambda x: np.multiply((x[0], 2.0, x[1]), x),
    # the operators: a list or tuple operand is an array_like, on either side
    "operator + list": lambda x: x + [x[0], 1.0, x[2]],
    "operator list *": lambda x: [x[1], 1.0, 2.0] * x,
    "operator - tuple": lambda x: x - (x[0], x[1] * 3, 0.5),
    "operator tuple /": lambda x: (x[2], 1.0, x[0]) / x,
    "operator ** list": lambda x: x ** [x[0], 2.0, 1.0],
    "operator list @": lambda x: [x[0], 1.0, x[2]] @ x,
    "multi_dot": lambda x: np.linalg.multi_dot([np.outer(x, x), [x[0], 1.0, x[2]]]),
}


def _fd(f, x, eps=1e-6):
    e = np.eye(x.size)
    return np.array([(np.sum(f(x + eps * e[i]) ** 2) - np.sum(f(x - eps * e[i]) ** 2))
                     / (2 * eps) for i in range(x.size)])


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_values_in_sequences(name):
    f = CASES[name]
    np.testing.assert_allclose(np.asarray(cr.stop_gradient(f(X))), f(X))
    g = cr.grad(lambda x: np.sum(f(x) ** 2))(X)
    np.testing.assert_allclose(g, _fd(f, X), rtol=1e-6, atol=1e-6)
    hv = cr.hvp(lambda x: np.sum(f(x) ** 2), X, np.ones(3))
    eps = 1e-5
    fd_h = (cr.grad(lambda x: np.sum(f(x) ** 2))(X + eps) -
            cr.grad(lambda x: np.sum(f(x) ** 2))(X - eps)) / (2 * eps)
    np.testing.assert_allclose(hv, fd_h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("f", [lambda x: np.sum([x[0], x[1] * 2]),
                               lambda x: np.mean([x, 2 * x], axis=0)])
def test_lists_numpy_converts_before_any_protocol_raise_a_clear_error(f):
    # np.sum(list) converts the list with np.asarray before a traced value is
    # seen: the conversion refuses, naming the way out
    with pytest.raises(cr.UntraceableError, match="np.stack"):
        cr.grad(lambda x: np.sum(f(x)))(X)


def test_a_list_operand_of_a_ufunc_is_an_array_like_once_met_plain():
    """A plain list met before is remembered among the plain operand types;
    a list holding traced values is still made an array (not passed to the
    rule as a constant) by a two-argument ufunc call."""
    from chainrules import tracing

    np.maximum(cr.stop_gradient(X), [1.0, 2.0, 3.0])
    tracing._PLAIN.add(list)  # (as the first call of an operator with a plain list does)
    g = cr.grad(lambda x: np.sum(np.maximum([x[0], 0.0, x[2]], x)))(X)
    want = cr.grad(lambda x: np.sum(np.maximum(np.stack([x[0], 0.0 * x[1], x[2]]), x)))(X)
    np.testing.assert_array_equal(g, want)
