"""Closure capture: a checkpointed function that uses values being
differentiated without receiving them (closures, globals) gets them as
inputs of its one recorded node, so gradients, JVPs, HVPs and Hessians equal
those of the same function without checkpoint; paths the capture cannot see
raise instead of dropping a derivative."""

import contextvars
import threading

import numpy as np
import pytest

import chainrules as cr
from chainrules.capture import closure_convert
from chainrules.checkpoint import CheckpointRule
from chainrules.graph import Tape
from chainrules.tracing import Traced

RNG = np.random.default_rng(7)
W = RNG.normal(size=(3, 3)) * 0.6
B = RNG.normal(size=3) * 0.3
X = RNG.normal(size=3)
V = RNG.normal(size=(3, 3))
POLICIES = ["nothing", "dots"]


def maybe_checkpoint(on, policy="nothing"):
    return (lambda f: cr.checkpoint(f, policy=policy)) if on else (lambda f: f)


def kinds(tape):
    return [type(r).__name__ for r in tape.rules if r is not None]


def test_closure_over_one_traced_scalar():
    def loss(k, on):
        seg = maybe_checkpoint(on)(lambda x: np.sin(k * x) * k)
        return np.sum(seg(X))

    k = 0.7
    # d/dk sum(k sin(k x)) = sum(sin(k x) + k x cos(k x))
    expect = np.sum(np.sin(k * X) + k * X * np.cos(k * X))
    np.testing.assert_allclose(cr.grad(loss)(k, True), expect, rtol=1e-14)
    assert cr.grad(loss)(k, True) == cr.grad(loss)(k, False)
    # second derivative: sum(2 x cos(k x) - k x^2 sin(k x))
    d2 = np.sum(2 * X * np.cos(k * X) - k * X ** 2 * np.sin(k * X))
    np.testing.assert_allclose(cr.grad(cr.grad(loss))(k, True), d2, rtol=1e-13)


@pytest.mark.parametrize("policy", POLICIES)
def test_closure_over_a_matrix_in_a_matmul(policy):
    def loss(w, on):
        seg = maybe_checkpoint(on, policy)(lambda x: np.tanh(w @ x))
        return np.sum(seg(seg(X)) ** 2)

    g_plain = cr.grad(loss)(W, False)
    g = cr.grad(loss)(W, True)
    np.testing.assert_array_equal(g, g_plain)
    # one layer by hand: d/dW sum(tanh(W x)) = (1 - tanh(W x)^2) x^T
    one = cr.grad(lambda w: np.sum(cr.checkpoint(lambda x: np.tanh(w @ x),
                                                 policy=policy)(X)))(W)
    np.testing.assert_allclose(one, np.outer(1 - np.tanh(W @ X) ** 2, X), rtol=1e-14)


def test_closure_over_several_values():
    def loss(w, b, s, on):
        seg = maybe_checkpoint(on)(lambda x: s * np.tanh(w @ x + b) + b * x)
        return np.sum(seg(X) ** 2)

    s = 1.3
    ref = cr.grad(loss, argnums=(0, 1, 2))(W, B, s, False)
    got = cr.grad(loss, argnums=(0, 1, 2))(W, B, s, True)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    # against central differences of plain NumPy, for b
    f = lambda b: np.sum((s * np.tanh(W @ X + b) + b * X) ** 2)  # noqa: E731
    fd = [(f(B + e) - f(B - e)) / 2e-6 for e in np.eye(3) * 1e-6]
    np.testing.assert_allclose(got[1], fd, rtol=1e-7)


def test_closure_value_also_passed_as_argument():
    def loss(w, on):
        seg = maybe_checkpoint(on)(lambda x, m: np.tanh(m @ x) + w @ x)
        return np.sum(seg(X, w) ** 2)

    np.testing.assert_allclose(cr.grad(loss)(W, True), cr.grad(loss)(W, False),
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(cr.hvp(lambda w: loss(w, True), W, V),
                               cr.hvp(lambda w: loss(w, False), W, V), rtol=1e-13, atol=1e-14)
    # the argument is the closed-over value itself: one input, not two
    tape = Tape()
    w = Traced(W, tape.leaf(W), tape)
    cr.checkpoint(lambda x: x @ w)(w)
    assert tape.rules[-1].inputs() == (w.node,)


@pytest.mark.parametrize("policy", POLICIES)
def test_nested_checkpoints_close_over_the_same_values(policy):
    def loss(w, b, on):
        ck = maybe_checkpoint(on, policy)
        inner = ck(lambda z: np.sin(w @ z) + b)
        outer = ck(lambda z: np.tanh(inner(z) * b) + w @ inner(z))
        return np.sum(outer(X) ** 2)

    for got, ref in zip(cr.grad(loss, argnums=(0, 1))(W, B, True),
                        cr.grad(loss, argnums=(0, 1))(W, B, False)):
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-14)
    f = lambda w, on: loss(w, B, on)  # noqa: E731
    np.testing.assert_allclose(cr.hvp(lambda w: f(w, True), W, V),
                               cr.hvp(lambda w: f(w, False), W, V), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("policy", POLICIES)
def test_hessian_hvp_jvp_through_a_checkpointed_closure(policy):
    def loss(w, on):
        seg = maybe_checkpoint(on, policy)(lambda x: np.tanh(w @ x) * np.exp(-x))
        return np.sum(seg(seg(X)) * B)

    plain = lambda w: loss(w, False)  # noqa: E731
    ck = lambda w: loss(w, True)  # noqa: E731
    np.testing.assert_allclose(cr.hessian(ck)(W), cr.hessian(plain)(W), rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_allclose(cr.hvp(ck, W, V), cr.hvp(plain, W, V), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(cr.jvp(ck, (W,), (V,))[1], cr.jvp(plain, (W,), (V,))[1],
                               rtol=1e-13)
    # grad of grad: nested tapes, the closure traced on both
    gg = cr.grad(lambda w: np.sum(cr.grad(ck)(w) * V))(W)
    gg_plain = cr.grad(lambda w: np.sum(cr.grad(plain)(w) * V))(W)
    np.testing.assert_allclose(gg, gg_plain, rtol=1e-12, atol=1e-13)


def test_closure_on_a_higher_tape_than_the_arguments():
    """The outer grad traces x, the inner one w: the segment's argument is
    on the lower tape, its closure on the higher one (and the reverse)."""
    def mixed(on, outer_x):
        def outer(a):
            def inner(b):
                x, w = (a, b) if outer_x else (b, a)
                seg = maybe_checkpoint(on)(lambda z: np.tanh(w @ z) ** 2)
                return np.sum(seg(x))
            return np.sum(cr.grad(inner)(W if outer_x else X) * (V if outer_x else B))
        return cr.grad(outer)(X if outer_x else W)

    for outer_x in (True, False):
        np.testing.assert_allclose(mixed(True, outer_x), mixed(False, outer_x),
                                   rtol=1e-13, atol=1e-14)


def test_segment_with_plain_arguments_is_still_one_node():
    tape = Tape()
    w = Traced(W, tape.leaf(W), tape)
    out = cr.checkpoint(lambda x: np.tanh(np.tanh(w @ x)))(X)
    assert type(out) is Traced and out.tape is tape
    assert kinds(tape) == ["CheckpointRule"]
    rule = tape.rules[-1]
    assert isinstance(rule, CheckpointRule) and rule.inputs() == (w.node,)
    np.testing.assert_allclose(out.value, np.tanh(np.tanh(W @ X)))
    # outside any differentiation: a plain call
    np.testing.assert_array_equal(cr.checkpoint(lambda x: np.tanh(W @ x))(X),
                                  np.tanh(W @ X))


def test_value_returned_unchanged_is_captured():
    def loss(w, on):
        seg = maybe_checkpoint(on)(lambda x: (np.tanh(w @ x), w))
        a, m = seg(X)
        return np.sum(a) + np.sum(m ** 2)

    np.testing.assert_allclose(cr.grad(loss)(W, True), cr.grad(loss)(W, False), rtol=1e-14)
    np.testing.assert_allclose(cr.hvp(lambda w: loss(w, True), W, V),
                               cr.hvp(lambda w: loss(w, False), W, V), rtol=1e-13)


def test_user_arrays_are_untouched():
    w0, x0 = W.copy(), X.copy()
    cr.hvp(lambda w: np.sum(cr.checkpoint(lambda x: np.tanh(w @ x), policy="dots")(X)),
           W, V)
    cr.grad(lambda w: np.sum(cr.checkpoint(lambda x: w @ x)(X)))(W)
    np.testing.assert_array_equal(W, w0)
    np.testing.assert_array_equal(X, x0)


@pytest.mark.parametrize("segments", [None, 2, 5])
def test_checkpoint_sequential_with_closure_layers(segments):
    ws = [RNG.normal(size=(3, 3)) * 0.5 for _ in range(6)]

    def loss(ws, sequential):
        layers = [lambda x, w=w: np.tanh(w @ x) + 0.1 * x for w in ws]
        if sequential:
            y = cr.checkpoint_sequential(layers, X, segments=segments)
        else:
            y = X
            for layer in layers:
                y = layer(y)
        return np.sum(y * B)

    g = cr.grad(loss)(ws, True)
    g_plain = cr.grad(loss)(ws, False)
    assert len(g) == 6
    for a, b in zip(g, g_plain):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    assert np.all(np.abs(g[0]) > 0)  # the first layer's weights get a gradient
    h = cr.hvp(lambda w0: loss([w0] + ws[1:], True), ws[0], V)
    h_plain = cr.hvp(lambda w0: loss([w0] + ws[1:], False), ws[0], V)
    np.testing.assert_allclose(h, h_plain, rtol=1e-12, atol=1e-13)
    # the checkpointed groups are single nodes whose inputs include the weights
    tape = Tape()
    tws = [Traced(w, tape.leaf(w), tape) for w in ws]
    cr.checkpoint_sequential([lambda x, w=w: np.tanh(w @ x) for w in tws], X, segments=3)
    rules = [r for r in tape.rules if isinstance(r, CheckpointRule)]
    assert len(rules) == 2
    assert rules[0].inputs() == (tws[0].node, tws[1].node)


def _in_thread(fn):
    """``fn()`` in another thread, in a context of its own (as threads start
    on most builds): no capture running there sees what it computes."""
    out = []
    th = threading.Thread(target=lambda: out.append(contextvars.Context().run(fn)))
    th.start()
    th.join()
    return out[0]


def test_value_computed_where_the_capture_cannot_see_raises():
    def loss(w):
        # np.tanh(w) in another thread: recorded on w's tape, out of sight
        seg = cr.checkpoint(lambda x: x * _in_thread(lambda: np.tanh(w)))
        return np.sum(seg(w * 2.0))

    with pytest.raises(cr.UntraceableError, match="cannot see"):
        cr.grad(loss)(np.array([0.5, 1.0]))

    def leaky(w):
        # a traced value of a differentiation finished inside the segment
        def f(x):
            kept = []
            cr.grad(lambda v: kept.append(v) or np.sum(v * w))(x)
            return kept[0]
        return np.sum(cr.checkpoint(f)(w))

    with pytest.raises(cr.UntraceableError, match="cannot follow"):
        cr.grad(leaky)(np.array([0.5, 1.0]))


def test_recomputation_using_another_traced_value_raises():
    def loss(a, b):
        runs = []

        def f(x):
            runs.append(1)
            return x * (a if len(runs) == 1 else b)  # not deterministic
        return np.sum(cr.checkpoint(f)(X))

    with pytest.raises(cr.UntraceableError, match="first run did not use"):
        cr.grad(loss, argnums=(0, 1))(1.0, 2.0)


def test_closure_convert_makes_captured_values_arguments():
    def outer(k):
        def rhs(y):
            return -k * y
        conv, captured = closure_convert(rhs, np.ones(2))
        assert len(captured) == 1 and captured[0] is k
        # a plain value stands in for k: a plain result
        np.testing.assert_array_equal(conv(np.array([1.0, 2.0]), 3.0), [-3.0, -6.0])
        # a value traced by a new differentiation stands in for k
        g = cr.grad(lambda kk: np.sum(conv(np.array([1.0, 2.0]), kk)))(3.0)
        assert g == -3.0
        return np.sum(rhs(np.ones(2)))

    assert cr.grad(outer)(0.5) == -2.0
    fn, captured = closure_convert(lambda y: 2 * y, np.ones(2))
    assert captured == []
    np.testing.assert_array_equal(fn(np.ones(2)), [2.0, 2.0])


def test_segment_inside_a_segment_given_a_closed_over_value():
    """The inner segment's argument is the outer segment's closure: inside
    the outer run it is the outer segment's own input, not a new node."""
    def loss(w, on):
        ck = maybe_checkpoint(on)
        outer = ck(lambda x: ck(lambda m: np.tanh(m @ x))(w) * x)
        return np.sum(outer(X) ** 2)

    np.testing.assert_allclose(cr.grad(loss)(W, True), cr.grad(loss)(W, False), rtol=1e-14)
    np.testing.assert_allclose(cr.hvp(lambda w: loss(w, True), W, V),
                               cr.hvp(lambda w: loss(w, False), W, V), rtol=1e-13)
