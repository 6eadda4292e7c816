"""The fast paths of a gradient call give what the general paths give.

A call with one inexact array or scalar argument is traced without a
pytree walk (``arguments.trace_arg``), its cotangent returned without
rebuilding a tree (``collect_cotangents``), its seed made directly
(``gradient_seed``); ``dispatch`` records a call of one traced argument
without keywords directly; ``fuse`` leaves a tape of small arrays after
one product per distinct shape; ``at_user_line`` sets the redirected NumPy
settings it met last time directly. Each is checked here against the general path it short-cuts:
the same argument inside a one-element tuple (a pytree: the general
tracing path), the same NumPy call with a keyword (the general dispatch),
tapes of large arrays and of several outputs per node, the settings
changed between calls. ``uniform_array`` (the cotangent of a full sum) is
made over its value's bytes, read-only as made, and compared with the view
whose flag is set; a tape shares one read-only empty mapping of replays
until it keeps one.
"""

import threading
import warnings
from unittest import mock

import numpy as np
import pytest

import chainrules as cr
from chainrules import arguments, fused_sweeps, pytree
from chainrules.derived import LinearRule
from chainrules.errors import (ComplexOutputError, EscapedTracerError,
                               NonDifferentiableInputError, NonScalarOutputError)
from chainrules.graph import Tape
from chainrules.rules.reductions import WholeSumRule


def f(x):
    return np.sum(np.sin(x) * x)


def df(x):
    return np.cos(x) * x + np.sin(x)


#: every input kind a user passes, with the kind of its gradient
KINDS = {
    "python float": (0.7, np.float64),
    "float64 scalar": (np.float64(0.7), np.float64),
    "float32 scalar": (np.float32(0.7), np.float32),
    "float16 scalar": (np.float16(0.7), np.float16),
    "0-d": (np.array(0.7), np.ndarray),
    "0-d float32": (np.array(0.7, np.float32), np.ndarray),
    "size-1": (np.array([0.7]), np.ndarray),
    "empty": (np.zeros((0, 3)), np.ndarray),
    "n-d": (np.linspace(-1, 1, 6).reshape(2, 3), np.ndarray),
    "n-d float32": (np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), np.ndarray),
    "non-contiguous": (np.linspace(-1, 1, 12).reshape(3, 4)[:, ::2], np.ndarray),
}


def _same(a, b):
    """``a`` and ``b`` agree in type, dtype, shape and every value."""
    assert type(a) is type(b), (type(a), type(b))
    assert np.result_type(a) == np.result_type(b)
    assert np.shape(a) == np.shape(b)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(KINDS))
def test_one_leaf_matches_the_pytree_path(name):
    x, kind = KINDS[name]
    fast = cr.value_and_grad(f)(x)
    general = cr.value_and_grad(lambda t: f(t[0]))((x,))
    _same(fast[0], general[0])
    _same(fast[1], general[1][0])
    assert type(fast[1]) is kind
    np.testing.assert_allclose(fast[1], df(np.asarray(x, np.float64)),
                               rtol=2e-3 if np.result_type(x).itemsize < 8 else 1e-12)
    _same(cr.grad(f)(x), general[1][0])


@pytest.mark.parametrize("name", list(KINDS))
def test_one_leaf_spec_matches_the_general_spec(name):
    x, _ = KINDS[name]
    fast = arguments.trace_arg(Tape(), x, "f", 0)[1]
    general = arguments.trace_arg(Tape(), [x], "f", 0)[1]  # a list: the general path
    assert fast.treedef is pytree.LEAF
    assert fast.ids == general.ids and fast.scalar == general.scalar
    assert fast.leaves[0] is general.leaves[0]


def test_complex_inputs():
    z = np.array([1.0 + 2.0j, -0.5j])
    g = cr.grad(lambda z: np.sum(np.abs(z) ** 2))(z)
    _same(g, cr.grad(lambda t: np.sum(np.abs(t[0]) ** 2))((z,))[0])
    np.testing.assert_allclose(g, 2 * np.conj(z))  # as JAX: 2 conj(z)
    for w in (1.0 + 2.0j, np.complex128(1.0 + 2.0j), np.complex64(1.0 + 2.0j)):
        hol = cr.grad(lambda z: z * z, holomorphic=True)(w)
        _same(hol, cr.grad(lambda t: t[0] * t[0], holomorphic=True)((w,))[0])
        assert hol == 2 * w


@pytest.mark.parametrize("x", [3, True, np.arange(3), np.int64(2), np.array([True]), "a",
                               None, np.array(["a"])])
def test_non_inexact_arguments_raise_the_general_error(x):
    with pytest.raises(NonDifferentiableInputError) as fast:
        cr.grad(f)(x)
    assert "argument 0 has type" in str(fast.value)
    assert "only float and complex values can be differentiated" in str(fast.value)


def test_argnums_forms_and_keywords():
    x, y = np.array([0.3, -1.2]), 0.5

    def g(a, b, scale=1.0):
        return scale * np.sum(np.sin(a) * b)

    v, (ga, gb) = cr.value_and_grad(g, argnums=(0, 1))(x, y, scale=2.0)
    v2, (gt,) = cr.value_and_grad(lambda t, scale: g(t[0], t[1], scale), argnums=(0,))(
        (x, y), scale=2.0)
    _same(v, v2)
    _same(ga, gt[0])
    _same(gb, gt[1])
    assert type(gb) is np.float64
    np.testing.assert_allclose(gb, 2.0 * np.sum(np.sin(x)), rtol=1e-14)
    _same(cr.grad(g, argnums=1)(x, y, scale=2.0), gb)
    _same(cr.grad(g, argnums=-1)(x, y, scale=2.0) / 2.0, cr.grad(g, argnums=-1)(x, y))
    with pytest.raises(IndexError, match="argnums 2 is out of range"):
        cr.grad(g, argnums=2)(x, y)


def test_pytree_arguments_keep_their_structure():
    d = {"a": np.array([0.1, 0.2]), "b": 0.3}
    g = cr.grad(lambda d: np.sum(np.sin(d["a"]) * d["b"]))(d)
    assert set(g) == {"a", "b"} and type(g["b"]) is np.float64
    np.testing.assert_allclose(g["a"], np.cos(d["a"]) * 0.3)
    np.testing.assert_allclose(g["b"], np.sum(np.sin(d["a"])))


def test_gradients_never_alias_the_input_or_each_other():
    x = np.array(0.5)
    g1 = cr.grad(lambda x: x)(x)  # the seed itself reaches the leaf
    g2 = cr.grad(lambda x: x)(x)
    assert type(g1) is np.ndarray and g1.shape == () and g1 == 1.0
    g1[...] = 7.0
    assert g2 == 1.0 and x == 0.5
    v, g = cr.value_and_grad(lambda x: x)(x)
    assert not np.may_share_memory(v, x)
    s = cr.grad(lambda x: np.sum(x))(np.ones(3))  # a broadcast cotangent, copied
    assert s.flags.writeable
    s[0] = 5.0
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(x))(np.ones(3)), np.ones(3))


def test_vjp_keeps_a_private_copy_of_a_one_leaf_input():
    x = np.array([1.0, 2.0])
    out, f_vjp = cr.vjp(lambda x: x * x, x)
    x[:] = 100.0
    np.testing.assert_array_equal(f_vjp(np.ones(2))[0], [2.0, 4.0])


@pytest.mark.parametrize("out", [
    lambda x: np.sum(x * x).astype(np.float32),
    lambda x: np.reshape(np.sum(x * x), (1, 1)),
    lambda x: np.sum(x * x)[()],
    lambda x: np.float64(2.0) * np.sum(x),
])
def test_seed_and_output_dtype_match_the_general_path(out):
    x = np.array([0.5, 1.5])
    v, g = cr.value_and_grad(out)(x)
    v2, g2 = cr.value_and_grad(lambda t: out(t[0]))((x,))
    _same(v, v2)
    _same(g, g2[0])


def test_output_errors_are_unchanged():
    x = np.ones(2)
    with pytest.raises(NonScalarOutputError, match="the output has shape"):
        cr.grad(lambda x: x * 2)(x)
    with pytest.raises(NonScalarOutputError, match="returned str, not a scalar"):
        cr.grad(lambda x: "no")(x)
    with pytest.raises(ComplexOutputError, match="the output is complex"):
        cr.grad(lambda x: np.sum(x * 1j))(x)
    # a constant output: zeros of the input's kind, no sweep
    _same(cr.grad(lambda x: 3.0)(x), np.zeros(2))
    _same(cr.grad(lambda x: 3.0)(0.5), np.float64(0.0))


def test_dispatch_of_one_traced_argument_matches_the_keyword_path():
    x = np.linspace(-1, 1, 5)
    for fn in (np.sum, np.mean, np.cumsum, np.max, np.sort, np.linalg.norm):
        one = cr.value_and_grad(lambda x: np.sum(np.sin(fn(x))))(x)
        if fn is np.linalg.norm:
            kw = cr.value_and_grad(lambda x: np.sum(np.sin(fn(x, ord=None))))(x)
        else:
            kw = cr.value_and_grad(lambda x: np.sum(np.sin(fn(x, axis=-1))))(x)
        _same(one[0], kw[0])
        np.testing.assert_allclose(one[1], kw[1], rtol=1e-14, atol=1e-15)


#: arrays np.sum(x) meets on its fast path (an ndarray without keywords)
SUM_INPUTS = {
    "n-d": np.linspace(-1, 1, 6).reshape(2, 3),
    "float32": np.linspace(-1, 1, 5, dtype=np.float32),
    "0-d": np.array(0.7),
    "empty": np.zeros((0, 2)),
    "non-contiguous": np.linspace(-1, 1, 12).reshape(3, 4)[:, ::2],
    "complex": np.array([1.0 + 2.0j, -0.5j, 0.25]),
}


@pytest.mark.parametrize("name", list(SUM_INPUTS))
def test_whole_sum_matches_the_general_sum(name):
    x = SUM_INPUTS[name]
    fast = cr.vjp(lambda x: np.sum(np.sin(x) * x), x)
    general = cr.vjp(lambda x: np.sum(np.sin(x) * x, axis=None), x)  # a keyword: general path
    _same(fast[0], general[0])
    _same(fast[0], np.sum(np.sin(x) * x))  # NumPy's own value and type
    seed = np.array(0.5 - 1j if x.dtype.kind == "c" else 0.5, dtype=fast[0].dtype)
    _same(fast[1](seed)[0], general[1](seed)[0])
    np.testing.assert_allclose(fast[1](seed)[0], seed * (np.cos(x) * x + np.sin(x)),
                               rtol=1e-6 if x.dtype == np.float32 else 1e-14)
    if x.dtype.kind == "f":  # second order and batches of directions
        _same(cr.hvp(lambda x: np.sum(np.sin(x) * x), x, np.ones_like(x)),
              cr.hvp(lambda x: np.sum(np.sin(x) * x, axis=None), x, np.ones_like(x)))
        _same(cr.jacobian(lambda x: np.sum(x))(x), cr.jacobian(lambda x: np.sum(x, None))(x))


def test_whole_sum_records_the_general_rule():
    x = np.linspace(-1, 1, 4).reshape(2, 2)
    rules = []
    for call in (lambda t: np.sum(t), lambda t: np.sum(t, axis=None, keepdims=False)):
        tape = Tape()
        t = arguments.trace_arg(tape, x, "f", 0)[0]
        out = call(t)
        rule = tape.rules[out.node]
        rules.append((type(rule), rule.op, rule.transpose, rule.shape, rule.args,
                      rule.kwargs, rule.forms, tape.shapes[out.node], tape.dtypes[out.node]))
    # the general rule, as a subclass whose pullback skips the keyword call
    # (tests/core/test_fixed_cost_paths.py compares the two)
    assert rules[0][0] is WholeSumRule and rules[1][0] is LinearRule
    assert rules[0][1:] == rules[1][1:]


def test_whole_sum_of_traced_and_plain_scalars():
    # a NumPy scalar or a traced value of an outer tape: not an ndarray, the general path
    _same(cr.grad(lambda x: np.sum(x * x))(np.float64(1.5)), np.float64(3.0))
    h = cr.grad(lambda x: cr.grad(lambda y: np.sum(y * y * x))(x)[0])(np.array([2.0]))
    _same(h, np.array([8.0]))  # d/dx of 2 y x at y = x


def test_one_argument_calls_match_the_general_path():
    x = np.array([0.3, -1.2])

    def g(a, scale=1.0):
        return scale * np.sum(np.sin(a) * a)

    for argnums in (0, -1):
        v, ga = cr.value_and_grad(g, argnums=argnums)(x, scale=2.0)
        v2, (ga2,) = cr.value_and_grad(g, argnums=(argnums,))(x, scale=2.0)
        _same(v, v2)
        _same(ga, ga2)
        _same(cr.grad(g)(x, 2.0), ga)  # two arguments: the general path
    (v, aux), ga = cr.value_and_grad(lambda a: (g(a), a * 2), has_aux=True)(x)
    _same(aux, x * 2)
    _same(ga, cr.grad(g)(x))
    with pytest.raises(IndexError, match="argnums 1 is out of range"):
        cr.grad(g, argnums=1)(x)
    with pytest.raises(NonDifferentiableInputError, match="holomorphic=True needs complex"):
        cr.grad(lambda z: z * z, holomorphic=True)(1.0)


def test_transformed_functions_keep_their_name_and_bind_as_methods():
    def loss(x):
        """The loss."""
        return np.sum(x * x)

    g = cr.grad(loss)
    assert g.__name__ == "loss" and g.__doc__ == "The loss." and g.__wrapped__ is loss
    assert repr(g) == f"<grad of {loss.__qualname__!r}>"

    class Model:
        w = 3.0
        grad_of = cr.grad(lambda self, x: self.w * np.sum(x * x), argnums=1)

    _same(Model().grad_of(np.array([1.0, 2.0])), np.array([6.0, 12.0]))
    assert Model.grad_of.__name__ == "<lambda>"


def test_escaped_values_still_refused_on_the_fast_dispatch():
    kept = []

    def leak(x):
        kept.append(np.sin(x))
        return np.sum(x)

    cr.grad(leak)(np.ones(3))
    with pytest.raises(EscapedTracerError, match="differentiation has finished"):
        np.sum(kept[0])
    assert np.shape(kept[0]) == (3,)  # shape queries stay harmless


def test_nested_and_captured_values_take_the_general_dispatch():
    # grad of grad: np.sum of a value traced on two tapes
    h = cr.grad(lambda x: np.sum(cr.grad(lambda y: np.sum(np.sin(y) * x))(x)))
    x = np.array([0.2, 0.9])
    # d/dx sum(cos(x) * x) = cos(x) - sin(x) * x
    np.testing.assert_allclose(h(x), np.cos(x) - np.sin(x) * x, rtol=1e-12)
    # a checkpointed segment closing over an outer traced value
    g = cr.grad(lambda x: cr.checkpoint(lambda y: np.sum(np.sin(y * x)))(x))(x)
    np.testing.assert_allclose(g, 2 * x * np.cos(x * x), rtol=1e-12)


def _tape_of(n_ops, size):
    tape = Tape()
    x = arguments.trace_arg(tape, np.linspace(0.1, 1.0, size), "f", 0)[0]
    for _ in range(n_ops):
        x = np.tanh(x) * x
    out = np.sum(x)
    tape.active = False
    return tape, out


@pytest.mark.parametrize("size", [3, fused_sweeps.MIN_SIZE - 1, fused_sweeps.MIN_SIZE])
@pytest.mark.parametrize("n_ops", [1, 2, 5, 20])
def test_regions_found_only_where_an_array_is_large_enough(n_ops, size):
    tape, out = _tape_of(n_ops, size)
    found = fused_sweeps.find_regions(tape, (out.node,), (), fused_sweeps.MIN_SIZE)
    assert bool(found) == (size >= fused_sweeps.MIN_SIZE)
    # a lower threshold finds the regions of the small tape too
    assert fused_sweeps.find_regions(tape, (out.node,), (), 2)
    assert (fused_sweeps.fuse(tape, (out.node,)) > 0) == (size >= fused_sweeps.MIN_SIZE)
    with mock.patch.object(fused_sweeps, "MIN_SIZE", 2):
        assert fused_sweeps.fuse(_tape_of(n_ops, size)[0], (out.node,)) > 0


@pytest.mark.parametrize("size", [4, 2 * fused_sweeps.MIN_SIZE])
def test_tapes_with_several_outputs_per_node(size):
    def g(x):
        a, b = np.split(np.tanh(x) * x, 2)
        return np.sum(np.tanh(a) * a) + np.sum(np.sin(b) * b)

    x = np.linspace(0.1, 1.0, size)
    with cr.fusion(False):
        ref = cr.grad(g)(x)
    np.testing.assert_allclose(cr.grad(g)(x), ref, rtol=1e-12)


def test_a_short_tape_of_large_arrays_is_fused():
    tape, out = _tape_of(2, fused_sweeps.MIN_SIZE)
    assert fused_sweeps.fuse(tape, (out.node,)) >= 1
    x = np.linspace(0.1, 1.0, fused_sweeps.MIN_SIZE)
    g = cr.grad(lambda x: np.sum(np.tanh(np.tanh(x) * x) * (np.tanh(x) * x)))(x)
    with cr.fusion(False):
        ref = cr.grad(lambda x: np.sum(np.tanh(np.tanh(x) * x) * (np.tanh(x) * x)))(x)
    np.testing.assert_allclose(g, ref, rtol=1e-12)


def _log_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if "divide by zero" in str(w.message)]


def test_redirect_follows_settings_changed_between_calls():
    vg = cr.value_and_grad(lambda x: np.sum(np.log(x)))
    x = np.array([0.0, 1.0])
    for _ in range(2):  # the settings met last time, set again
        caught = _log_warnings(lambda: vg(x))
        assert caught and all(w.filename == __file__ for w in caught)
    with np.errstate(divide="ignore"):
        assert _log_warnings(lambda: vg(x)) == []
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            vg(x)
    assert _log_warnings(lambda: vg(x))
    assert np.geterr()["divide"] == "warn" and np.geterrcall() is None


def test_redirect_is_per_thread():
    vg = cr.value_and_grad(lambda x: np.sum(np.log(x)))
    x = np.array([0.0, 1.0])
    seen = {}
    barrier = threading.Barrier(2)

    def run(name, mode):
        with np.errstate(divide=mode):
            barrier.wait()
            for _ in range(20):
                try:
                    seen[name] = len(_log_warnings(lambda: vg(x)))
                except FloatingPointError:
                    seen[name] = "raised"
            assert np.geterr()["divide"] == mode

    threads = [threading.Thread(target=run, args=("ignore", "ignore")),
               threading.Thread(target=run, args=("raise", "raise"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"ignore": 0, "raise": "raised"}


def test_anomaly_mode_on_the_fast_path():
    x = np.array([0.0, 1.0])
    with cr.detect_anomaly():
        with pytest.raises(cr.AutodiffError):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cr.grad(lambda x: np.sum(np.sqrt(x)))(x)
    _same(cr.grad(lambda x: np.sum(np.sqrt(x + 1)))(x), 0.5 / np.sqrt(x + 1))


@pytest.mark.parametrize("value", [np.array(2.5), 2.5, np.float32(-1.5), 1 - 2j,
                                   np.array(0.5 + 1j, np.complex64), np.float16(3.0)])
def test_uniform_array_over_bytes_matches_the_flagged_view(value):
    """``uniform_array`` of a number makes its read-only array over the
    value's bytes; an object dtype keeps the view with its flag set. Both
    read as ``np.broadcast_to`` does."""
    from chainrules.arrays import uniform_array, uniform_value

    base = np.asarray(value)
    for shape in [(), (3,), (2, 0), (2, 3)]:
        a = uniform_array(value, shape)
        truth = np.broadcast_to(base, shape)
        _same(a, np.array(truth))
        assert a.dtype == base.dtype and not a.flags.writeable
        assert not any(a.strides)
        if a.ndim and a.size:
            assert uniform_value(a) == base[()]
        with pytest.raises(ValueError):
            a[...] = 0
    base[...] = 7  # the array does not follow a later write into the value
    assert uniform_array(np.array(4.0), (2,)).tolist() == [4.0, 4.0]
    obj = uniform_array(np.array(1.5, object), (2,))
    assert obj.dtype == object and obj.tolist() == [1.5, 1.5] and not obj.flags.writeable


def test_sum_cotangent_is_read_only_and_copied_for_the_caller():
    """The gradient of a sum (a uniform cotangent reaching the leaf) is an
    ordinary array the caller may write to, for every input dtype."""
    for x in (np.ones(3), np.ones((2, 2), np.float32), np.array([1j, 2.0])):
        g = cr.grad(lambda x: np.real(np.sum(x)))(x)
        assert g.flags.writeable and g.dtype == x.dtype and g.shape == x.shape
        np.testing.assert_array_equal(g, np.ones_like(x))
        g[...] = 3  # writing into one gradient changes no other
        np.testing.assert_array_equal(cr.grad(lambda x: np.real(np.sum(x)))(x),
                                      np.ones_like(x))


def test_replays_are_kept_per_tape_and_dropped_by_free():
    """A tape keeps no replays until one is recorded (a shared read-only
    empty mapping), then its own; ``free`` drops them."""
    a, b = Tape(), Tape()
    assert len(a.replays) == 0 and len(b.replays) == 0
    with pytest.raises(TypeError):
        a.replays[0] = ("rule",)  # the shared empty mapping is read-only
    a.leaf(np.ones(2))
    a.keep_replay(("rule", None, (), (), {}, None))
    assert a.replays == {1: ("rule", None, (), (), {}, None)}
    assert len(b.replays) == 0 and len(Tape().replays) == 0
    a.free()
    assert len(a.replays) == 0
    # an HVP through a closure rule, whose second order is found by replay
    cube = cr.primitive(lambda x: x ** 3)

    @cr.rrule(cube)
    def _(x):
        return x ** 3, lambda g: (g * 3 * x ** 2,)

    x = np.array([0.3, -0.8])
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(cube(x)), x, np.ones(2)), 6 * x,
                               rtol=1e-12)
