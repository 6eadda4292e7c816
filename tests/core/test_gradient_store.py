"""The low-level tape's gradient store and partial backward."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.graph import Gradients, Tape
from chainrules.tracing import Traced


class Counting(cr.ReverseRule):
    """y = s * x, counting its pullbacks."""

    __slots__ = ("x", "s", "log")

    def __init__(self, x, s, log):
        self.x, self.s, self.log = x, s, log

    def inputs(self):
        return (self.x,)

    def pullback(self, g):
        self.log.append(self.s)
        return [(self.x, g * self.s)]

    def pullback_with_tangents(self, g, gd, tangents):
        self.log.append(self.s)
        return [(self.x, g * self.s, gd * self.s)]


def build(log):
    """a, b leaves; u = 2a, v = 3b, w = 5u, out = sum(w + v)."""
    tape = Tape()
    a = tape.leaf(np.array([1.0, 2.0]))
    b = tape.leaf(np.array([3.0, 4.0]))
    u = tape.record(Counting(a, 2.0, log), np.array([2.0, 4.0]))
    v = tape.record(Counting(b, 3.0, log), np.array([9.0, 12.0]))
    w = tape.record(Counting(u, 5.0, log), np.array([10.0, 20.0]))
    tv = Traced(np.array([9.0, 12.0]), v, tape)
    tw = Traced(np.array([10.0, 20.0]), w, tape)
    out = np.sum(tw + tv)
    tape.active = False
    return tape, a, b, u, v, w, out.node


def test_full_backward_and_store_operations():
    log = []
    tape, a, b, u, v, w, out = build(log)
    grads = tape.backward([out], [np.ones(())], retain_graph=True)
    assert isinstance(grads, Gradients)
    assert set(grads) == {a, b} and len(grads) == 2 and a in grads
    np.testing.assert_array_equal(grads.get(a), [10.0, 10.0])
    np.testing.assert_array_equal(grads.get(b), [3.0, 3.0])
    assert isinstance(grads.get(u), cr.ZeroTangent)  # not requested: zero
    ga = grads.get(a)
    popped = grads.remove(a)
    assert popped is ga and a not in grads  # no copy
    assert isinstance(grads.remove(a), cr.ZeroTangent)
    new = np.zeros(2)
    old = grads.replace(b, new)
    np.testing.assert_array_equal(old, [3.0, 3.0])
    assert grads.get(b) is new
    assert sorted(log) == [2.0, 3.0, 5.0]


def test_partial_backward_pulls_back_only_what_leads_to_wrt():
    log = []
    tape, a, b, u, v, w, out = build(log)
    grads = tape.backward([out], [np.ones(())], wrt=[a], retain_graph=True)
    assert set(grads) == {a}
    np.testing.assert_array_equal(grads.get(a), [10.0, 10.0])
    assert sorted(log) == [2.0, 5.0]  # the pullback of v = 3b never ran
    # the retained graph is intact for a later full sweep
    log.clear()
    full = tape.backward([out], [np.ones(())])
    np.testing.assert_array_equal(full.get(b), [3.0, 3.0])
    assert sorted(log) == [2.0, 3.0, 5.0]


def test_partial_backward_wrt_intermediate_and_subset():
    log = []
    tape, a, b, u, v, w, out = build(log)
    grads = tape.backward([out], [np.ones(())], wrt=[u, b], retain_graph=True)
    np.testing.assert_array_equal(grads.get(u), [5.0, 5.0])
    np.testing.assert_array_equal(grads.get(b), [3.0, 3.0])
    assert a not in grads
    assert sorted(log) == [3.0, 5.0]  # no need to go below u
    log.clear()
    grads = tape.backward([out], [np.ones(())], wrt=[b])  # graph consumed
    np.testing.assert_array_equal(grads.get(b), [3.0, 3.0])
    assert log == [3.0]
    assert tape.rules[u] is None and tape.rules[w] is None  # dropped early


def test_partial_backward_with_tangents():
    log = []
    tape, a, b, u, v, w, out = build(log)
    tans = tape.forward({a: np.array([1.0, -1.0])})
    log.clear()  # the derived pushforward ran the pullbacks of u and w
    g, gd = tape.backward_with_tangents([out], [np.ones(())], [cr.ZeroTangent()], tans,
                                        wrt=[b])
    np.testing.assert_array_equal(g.get(b), [3.0, 3.0])
    assert isinstance(gd.get(b), cr.ZeroTangent)  # linear: no second-order term
    assert sorted(log) == [3.0]


def test_partial_backward_through_traced_numpy_graph():
    tape = Tape()
    xv, yv = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    x = Traced(xv, tape.leaf(xv), tape)
    y = Traced(yv, tape.leaf(yv), tape)
    out = np.sum(np.sin(x) * np.exp(y) + np.tanh(y))
    tape.active = False
    gx = tape.backward([out.node], [np.ones(())], wrt=[x.node], retain_graph=True)
    full = tape.backward([out.node], [np.ones(())])
    np.testing.assert_array_equal(gx.get(x.node), full.get(x.node))
    assert y.node not in gx


def test_empty_and_unreachable_wrt():
    log = []
    tape, a, b, u, v, w, out = build(log)
    grads = tape.backward([out], [np.ones(())], wrt=[], retain_graph=True)
    assert len(grads) == 0 and log == []
    with pytest.raises(TypeError):
        Gradients().replace()
