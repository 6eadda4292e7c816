"""What a rule returns is checked: a pullback naming a node that is not one
of its inputs, or an input more often than it is one, raises RuleError
(a cotangent would otherwise land on another node, or twice); an input left
out has a zero cotangent, as the protocol documents. Closure rules return
exactly one cotangent per argument, and one per element of a sequence
argument."""

import numpy as np
import pytest

import chainrules as cr


def _op_with(rule_cls):
    op = cr.primitive(lambda x: x * 2)

    @cr.register(op)
    def _(ids, x):
        return x * 2, rule_cls(ids[0])

    return op


class _Base(cr.ReverseRule):
    def __init__(self, i):
        self.i = i

    def inputs(self):
        return (self.i,)


def test_more_cotangents_than_inputs():
    class Twice(_Base):
        def pullback(self, g):
            return [(self.i, 2 * g), (self.i, g)]

    op = _op_with(Twice)
    with pytest.raises(cr.RuleError, match="more cotangents than it has inputs"):
        cr.grad(lambda x: np.sum(op(x)))(np.ones(2))


def test_cotangent_for_a_node_that_is_not_an_input():
    class Elsewhere(_Base):
        def pullback(self, g):
            return [(self.i, 2 * g), (cr.NodeId(0), g)]

    op = _op_with(Elsewhere)
    with pytest.raises(cr.RuleError, match="not one of its inputs"):
        cr.grad(lambda y, x: np.sum(op(x)), argnums=(0, 1))(np.ones(2), np.ones(2))


def test_not_a_list_of_pairs():
    class Bare(_Base):
        def pullback(self, g):
            return 2 * g

    op = _op_with(Bare)
    with pytest.raises(cr.RuleError, match=r"list of \(NodeId, cotangent\) tuples"):
        cr.grad(lambda x: np.sum(op(x)))(np.ones(2))


def test_an_input_left_out_has_zero_cotangent():
    class Nothing(_Base):
        def pullback(self, g):
            return []

    op = _op_with(Nothing)
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(op(x) + x))(np.ones(2)),
                                  [1.0, 1.0])


def test_the_same_input_twice_is_two_inputs():
    op = cr.primitive(lambda x, y: x * y)

    class Product(cr.ReverseRule):
        def __init__(self, ids, x, y):
            self.ids, self.x, self.y = ids, x, y

        def inputs(self):
            return tuple(self.ids)

        def pullback(self, g):
            return [(self.ids[0], g * self.y), (self.ids[1], g * self.x)]

    @cr.register(op)
    def _(ids, x, y):
        return x * y, Product(ids, x, y)

    x = np.array([1.5, -2.0])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(op(x, x)))(x), 2 * x)


def test_pullback_with_tangents_results_are_checked():
    class Hvp(_Base):
        def pullback(self, g):
            return [(self.i, 2 * g)]

        def pullback_with_tangents(self, g, gd, tangents):
            return [(self.i, 2 * g, 2 * gd), (self.i, g, gd)]

    op = _op_with(Hvp)
    with pytest.raises(cr.RuleError, match="pullback_with_tangents returned more"):
        cr.hvp(lambda x: np.sum(op(x) ** 2), np.ones(2), np.ones(2))


def test_closure_rule_sequence_cotangent_of_the_wrong_length():
    op = cr.primitive(lambda xs: xs[0] * xs[1])

    @cr.rrule(op)
    def _(xs):
        a, b = xs
        return a * b, lambda g: ([g * b, g * a, g],)

    with pytest.raises(cr.RuleError, match="sequence of 2 values"):
        cr.grad(lambda a, b: np.sum(op([a, b])), argnums=(0, 1))(np.ones(2), np.ones(2))


def test_closure_rule_count():
    op = cr.primitive(lambda x, y: x + y)

    @cr.rrule(op)
    def _(x, y):
        return x + y, lambda g: (g, g, g)

    with pytest.raises(cr.RuleError, match="one cotangent per positional argument"):
        cr.grad(lambda x: np.sum(op(x, x)))(np.ones(2))


def test_rules_recorded_on_a_tape_by_hand_are_checked():
    class Elsewhere(_Base):
        def pullback(self, g):
            return [(self.i, 2 * g), (cr.NodeId(0), g)]

    tape = cr.Tape()
    a = tape.leaf(np.ones(2))
    b = tape.leaf(np.ones(2))
    y = tape.record(Elsewhere(b), np.ones(2))
    assert tape.user_rules
    with pytest.raises(cr.RuleError, match="not one of its inputs"):
        tape.backward([y], [np.ones(2)], wrt=[a, b])


def test_a_user_rule_for_a_numpy_ufunc_is_checked_on_the_fast_paths():
    # np.cbrt on one traced argument takes the tracer's unary fast path; a
    # user's maker for it is still checked (and the library's rule restored)
    from chainrules.registry import DISPATCHERS, lookup

    class Twice(_Base):
        def pullback(self, g):
            return [(self.i, g), (self.i, g)]

    from chainrules import registry

    d = DISPATCHERS[np.cbrt]
    before = set(d.funcs)
    try:
        @cr.register(np.cbrt, np.ndarray)
        def _(ids, x):
            return np.cbrt(x), Twice(ids[0])

        with pytest.raises(cr.RuleError, match="more cotangents than it has inputs"):
            cr.grad(lambda x: np.sum(np.cbrt(x)))(np.ones(2))
    finally:
        for sig in set(d.funcs) - before:
            del d.funcs[sig]
        d.reorder()
        d._cache.clear()
        registry._cache.clear()
        registry.GENERIC_MAKERS.clear()
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.cbrt(x)))(np.full(2, 8.0)),
                               np.full(2, 1 / 12))
    assert lookup(np.cbrt, (np.ndarray,)).__module__.startswith("chainrules.")


def test_a_duck_typed_user_rule_is_checked():
    class Duck:  # not a ReverseRule
        def __init__(self, i):
            self.i = i

        def inputs(self):
            return (self.i,)

        def pullback(self, g):
            return [(self.i, g), (cr.NodeId(0), g)]

    op = _op_with(Duck)
    with pytest.raises(cr.RuleError, match="not one of its inputs"):
        cr.grad(lambda y, x: np.sum(op(x)), argnums=(0, 1))(np.ones(2), np.ones(2))
