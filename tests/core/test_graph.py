"""The engine used directly: tapes, sweeps, the gradient store, freeing."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.tracing import Traced


class Scale(cr.ReverseRule):
    """y = c * x, a hand-written linear rule."""

    __slots__ = ("x", "c")
    linear = True

    def __init__(self, x, c):
        self.x, self.c = x, c

    def inputs(self):
        return (self.x,)

    def pullback(self, g):
        return [(self.x, self.c * g)]


class Mul(cr.ReverseRule):
    __slots__ = ("a", "b", "va", "vb")

    def __init__(self, a, b, va, vb):
        self.a, self.b, self.va, self.vb = a, b, va, vb

    def inputs(self):
        return (self.a, self.b)

    def pullback(self, g):
        return [(self.a, g * self.vb), (self.b, g * self.va)]


def test_low_level_tape_backward_and_store():
    tape = cr.Tape()
    xv = np.array([1.0, 2.0])
    x = tape.leaf(xv)
    assert isinstance(x, cr.NodeId) and int(x) == 0
    y = tape.record(Scale(x, 3.0), 3.0 * xv)
    z = tape.record(Mul(x, y, xv, 3.0 * xv), xv * 3.0 * xv)  # z = 3 x^2
    grads = tape.backward([z], [np.ones(2)])
    np.testing.assert_array_equal(grads.get(x), 6.0 * xv)
    assert x in grads and len(grads) == 1
    old = grads.replace(x, np.zeros(2))
    np.testing.assert_array_equal(old, 6.0 * xv)
    np.testing.assert_array_equal(grads.remove(x), np.zeros(2))
    assert grads.get(x) is cr.ZeroTangent()


def test_backward_frees_rules_unless_retained():
    tape = cr.Tape()
    x = tape.leaf(np.ones(2))
    y = tape.record(Scale(x, 2.0), 2.0 * np.ones(2))
    tape.backward([y], [np.ones(2)], retain_graph=True)
    assert tape.rules[y] is not None
    tape.backward([y], [np.ones(2)])
    assert tape.rules[y] is None


def test_forward_sweep_and_derived_pushforward():
    tape = cr.Tape()
    xv = np.array([1.0, -2.0])
    x = tape.leaf(xv)
    y = tape.record(Mul(x, x, xv, xv), xv * xv)  # Mul has no pushforward: derived
    tans = tape.forward({x: np.array([1.0, 1.0])})
    np.testing.assert_allclose(tans[y], 2 * xv)


def test_hvp_sweep_raises_for_rule_without_second_order():
    tape = cr.Tape()
    xv = np.array([1.0, -2.0])
    x = tape.leaf(xv)
    y = tape.record(Mul(x, x, xv, xv), xv * xv)
    tans = tape.forward({x: np.ones(2)})
    with pytest.raises(cr.HvpNotSupported, match="Mul"):
        tape.backward_with_tangents([y], [np.ones(2)], [cr.ZeroTangent()], tans)


def test_linear_rule_gets_hvp_sweep_for_free():
    tape = cr.Tape()
    x = tape.leaf(np.ones(2))
    y = tape.record(Scale(x, 2.0), 2 * np.ones(2))
    tans = tape.forward({x: np.ones(2)})
    g, gd = tape.backward_with_tangents([y], [np.ones(2)], [np.full(2, 5.0)], tans)
    np.testing.assert_array_equal(g.get(x), [2.0, 2.0])
    np.testing.assert_array_equal(gd.get(x), [10.0, 10.0])


def test_fan_out_accumulates():
    # x used three times: f = x*x + sin(x) + x
    f = lambda x: np.sum(x * x + np.sin(x) + x)
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(cr.grad(f)(x), 2 * x + np.cos(x) + 1)


def test_in_place_accumulation_does_not_corrupt_shared_cotangents():
    # add passes the same cotangent object to both inputs; fan-out then adds into it
    def f(x):
        a = x + x
        b = a + x
        return np.sum(b * b)

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.grad(f)(x), 18 * x)


def test_constants_create_no_nodes():
    W = np.ones((2, 2))
    seen = {}

    def f(x):
        c = np.sin(W) @ W + 1.0   # no traced input: plain NumPy, no node
        assert not isinstance(c, Traced)
        y = x * 2.0
        seen["tape"] = y.tape
        return np.sum(y @ c)

    cr.grad(f)(np.ones(2))
    # leaf, multiply, matmul, sum
    assert len(seen["tape"]) == 4


def test_deep_graph_without_recursion():
    def f(x):
        for _ in range(50_000):
            x = x * 1.0000001
            x = x + 1e-9
        return np.sum(x)

    g = cr.grad(f)(np.ones(3))
    np.testing.assert_allclose(g, np.full(3, 1.0000001 ** 50_000), rtol=1e-12)


def test_deep_graph_100k_ops_hvp():
    def f(x):
        for _ in range(50_000):
            x = np.sin(x)
        return np.sum(x * 1.0)

    x = np.array([0.3])
    g, hv = cr.grad_and_hvp(f, x, np.ones(1))
    # closed form by second-order forward propagation through the chain
    y, d1, d2 = 0.3, 1.0, 0.0
    for _ in range(50_000):
        y, d1, d2 = np.sin(y), np.cos(y) * d1, np.cos(y) * d2 - np.sin(y) * d1 * d1
    np.testing.assert_allclose(g, [d1], rtol=1e-10)
    np.testing.assert_allclose(hv, [d2], rtol=1e-8)


def test_multiple_outputs_backward():
    tape = cr.Tape()
    x = tape.leaf(np.ones(2))
    y1 = tape.record(Scale(x, 2.0), 2 * np.ones(2))
    y2 = tape.record(Scale(x, 5.0), 5 * np.ones(2))
    grads = tape.backward([y1, y2], [np.ones(2), np.full(2, 2.0)])
    np.testing.assert_array_equal(grads.get(x), [12.0, 12.0])


def test_partial_backward_wrt():
    tape = cr.Tape()
    x = tape.leaf(np.ones(2))
    y = tape.record(Scale(x, 2.0), 2 * np.ones(2))
    z = tape.record(Scale(y, 3.0), 6 * np.ones(2))
    grads = tape.backward([z], [np.ones(2)], wrt=[y])
    np.testing.assert_array_equal(grads.get(y), [3.0, 3.0])
    assert x not in grads


def test_accumulating_plain_then_traced_then_plain_cotangents():
    # in grad-of-hvp the HVP sweep adds plain tangents of cotangents (from the
    # quadratic terms) and traced ones (from sin's) into one node: an owned
    # plain buffer that became a traced sum must not be written to in place
    c1, c2, c4 = np.array([1.0, 2.0]), np.array([3.0, -1.0]), np.array([0.5, 0.25])

    def f(x):
        return (np.sum(c4 * (x * x)) + np.sum(np.sin(x)) + np.sum(c2 * (x * x))
                + np.sum(c1 * (x * x)))

    x, v, w = np.array([0.3, -1.2]), np.array([1.0, 2.0]), np.array([-0.5, 1.5])
    np.testing.assert_allclose(cr.hvp(f, x, v), (2 * (c1 + c2 + c4) - np.sin(x)) * v,
                               rtol=1e-14)
    third = cr.grad(lambda x: np.sum(cr.hvp(f, x, v) * w))(x)
    np.testing.assert_allclose(third, -np.cos(x) * v * w, rtol=1e-13)
