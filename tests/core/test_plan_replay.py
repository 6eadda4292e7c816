"""A plan's first replays run its steps as data (``plan._Replay``), later
ones its compiled code (docs/design.md, "Staged plans"): both make the
same calls on the same values, so their results are equal bit for bit and
their guards fail alike. Compiled code is shared by plans whose source
reads alike; each keeps its own constants."""

import collections
import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules import plan as plan_mod
from chainrules.plan import GuardFailed

Pair = collections.namedtuple("Pair", "a b")


def _same_bits(a, b):
    la, ta = cr.pytree.flatten(a)
    lb, tb = cr.pytree.flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        assert type(x) is type(y), (x, y)
        if isinstance(x, (np.ndarray, np.generic)):
            assert x.dtype == y.dtype and np.shape(x) == np.shape(y)
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), (x, y)
        else:
            assert x == y or (x != x and y != y), (x, y)


def _scalar_ops(x):
    y = x * x - x / 3.0 + abs(-x) + (+x)
    return y * np.sin(y)


def _kwargs_and_out(x):
    s = np.sum(x * x, axis=0, keepdims=True)
    z = np.zeros_like(x)
    z += s
    z[0] = x[1]
    return z, np.mean(x, axis=-1)


def _nested_templates(x, i):
    a = np.concatenate([x, x[::-1], x[:, i]], axis=1)
    b = np.stack((x[0], x[-1]))
    frac, whole = np.modf(a)
    return {"a": frac * whole, "b": b}


def _guards(x):
    n = int(np.argmax(x))
    if x[0] > 0:
        x = x * 2.0
    s = float(cr.stop_gradient(np.sum(x)))
    t = cr.stop_gradient(x[:2]).tolist()
    k = x.shape[0] - 1
    return x[n] * s + cr.stop_gradient(x[k]).item() + sum(t) + x[x > 0].sum()


def _results_of_all_kinds(x):
    return Pair(np.sin(x), (None, 3, np.ones(2), x[0]))


CASES = [
    (_scalar_ops, lambda r: (np.float64(r.normal()),)),
    (_scalar_ops, lambda r: (np.array(r.normal()),)),
    (cr.value_and_grad(_scalar_ops), lambda r: (np.float64(r.normal()),)),
    (_kwargs_and_out, lambda r: (r.normal(size=(3, 4)),)),
    (cr.value_and_grad(lambda x: np.sum(_kwargs_and_out(x)[0] ** 2)),
     lambda r: (r.normal(size=(3, 4)),)),
    (_nested_templates, lambda r: (r.normal(size=(3, 4)) * 5, np.array([0, 2]))),
    (_guards, lambda r: (np.abs(r.normal(size=5)) + np.arange(5),)),
    (cr.grad(_guards), lambda r: (np.abs(r.normal(size=5)) + np.arange(5),)),
    (_results_of_all_kinds, lambda r: (r.normal(size=3),)),
    (lambda x, v: cr.hvp(lambda z: np.sum(np.tanh(z) ** 3), x, v),
     lambda r: (r.normal(size=4), r.normal(size=4))),
]


@pytest.mark.parametrize("fun, make_args", CASES)
def test_replayed_steps_equal_the_compiled_code_bit_for_bit(fun, make_args):
    rng = np.random.default_rng(0)
    args = make_args(rng)
    plan = cr.jit(fun).plan(*args)
    assert plan is not None
    for _ in range(3):
        stepped = plan._replay(args)
        plan.compile()
        _same_bits(stepped, plan._fn(*args))
        # (eager may round another order of operations: a fused region's)
        for x, y in zip(cr.pytree.flatten(stepped)[0], cr.pytree.flatten(fun(*args))[0]):
            if isinstance(x, (np.ndarray, np.generic, float)):
                np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-300)
            else:
                assert x == y
        args = make_args(rng)
        # (other values: a guard may fail, alike on both paths)
        try:
            plan._replay(args)
        except GuardFailed as e:
            with pytest.raises(GuardFailed) as again:
                plan._fn(*args)
            assert again.value.index == e.index and again.value.line == e.line
            args = make_args(np.random.default_rng(0))


def test_guards_fail_alike_on_both_paths():
    plan = cr.jit(_guards).plan(np.array([1.0, 2.0, 3.0]))
    plan.compile()
    for bad in (np.array([-1.0, 2.0, 3.0]),     # the `if`
                np.array([4.0, 2.0, 3.0]),      # int(argmax)
                np.array([1.0, 2.0, 3.5])):     # float(sum)
        with pytest.raises(GuardFailed) as a:
            plan._replay((bad,))
        with pytest.raises(GuardFailed) as b:
            plan._fn(bad)
        assert (a.value.index, a.value.line) == (b.value.index, b.value.line)


def test_calls_across_the_compile_threshold_stay_right():
    step = cr.jit(cr.value_and_grad(_scalar_ops))
    eager = cr.value_and_grad(_scalar_ops)
    plan = None
    for k in range(plan_mod.COMPILE_AFTER + 64):
        x = np.float64(0.1 * k - 0.3)
        _same_bits(step(x), eager(x))
        plan = step.plan(x)
        if plan._fn is not None:
            break
    # compiled once replayed enough (a segment a call: as many calls as the
    # segments its code was cut into, as few lines each as compile within
    # about an eager call's time)
    assert plan._fn is not None and k <= plan_mod.COMPILE_AFTER + plan.segments + 1
    for k in range(3):
        x = np.float64(0.2 * k - 0.1)
        _same_bits(step(x), eager(x))


def test_plans_that_read_alike_share_code_and_keep_their_constants():
    a = cr.jit(lambda x: np.sin(x) * 2.5)
    b = cr.jit(lambda x: np.sin(x) * 4.0)
    x = np.linspace(0, 1, 3)
    pa, pb = a.plan(x), b.plan(x)
    pa.compile()
    pb.compile()
    assert pa.source.replace("<lambda>", "") == pb.source.replace("<lambda>", "")
    assert pa._fn.__code__ is pb._fn.__code__
    np.testing.assert_array_equal(pa(x), np.sin(x) * 2.5)
    np.testing.assert_array_equal(pb(x), np.sin(x) * 4.0)


def test_operators_of_the_replay_are_pythons():
    # the table the replay reads for the plan's Python operators
    x, y = np.float64(1.5), np.float32(0.25)
    for op, fn in plan_mod._OPERATOR_FNS.items():
        if "{0}" in op:
            want = eval(op.format("x"))
            got = fn(x)
        else:
            want = eval(f"x {op} y")
            got = fn(x, y)
        assert type(got) is type(want) and got == want
    assert plan_mod._OPERATOR_FNS["/"] is operator.truediv


def _of_two_scalars(x):
    return (x[0] ** 2 + x[1] ** 2 - 2 * x[0]) ** 2 + 0.25 * x[0] * x[1]


def test_a_gradients_scalar_buffer_keeps_its_elements_in_variables():
    # g = zeros(2); g[i] = g[i] + c ... becomes the last write of each
    # element, its reads the values written: equal to eager bit for bit
    step = cr.jit(cr.value_and_grad(_of_two_scalars))
    eager = cr.value_and_grad(_of_two_scalars)
    x = np.array([0.3, -1.7])
    plan = step.plan(x)
    reads = [line for line in plan.source.splitlines() if "] = " not in line
             and "v0[" not in line and "[" in line.split("=")[-1]]
    assert reads == [], plan.source
    writes = [line for line in plan.source.splitlines() if "] = " in line]
    assert len(writes) == 2, plan.source  # one per element
    for k in range(plan_mod.COMPILE_AFTER + 3):
        x = np.array([0.1 * k - 0.5, 1.3 - 0.2 * k])
        _same_bits(step(x), eager(x))


def test_buffers_read_otherwise_or_written_with_casts_are_left_alone():
    def writes(x):
        g = np.zeros_like(x)
        g[0] = x[0] * 2.0
        g[1] = np.float32(1.5)          # cast when written: a NumPy scalar of float32
        h = g[0] + g[1]
        return h, g, np.sum(g)           # the buffer read as a whole too

    def only_elements(x):
        g = np.zeros_like(x, shape=(3,))
        g[0] = x[0] * 2.0
        g[-1] = g[0] * x[1]
        g[0] = g[2] + x[1]
        return g[0] * g[1], g

    for fun in (writes, only_elements):
        j = cr.jit(fun)
        for k in range(plan_mod.COMPILE_AFTER + 3):
            x = np.array([0.25 * k - 1.0, -0.5 * k])
            _same_bits(j(x), fun(x))
    assert "v0[" in cr.jit(writes).plan(np.ones(2)).source
    src = cr.jit(only_elements).plan(np.ones(2)).source
    assert src.count("] = ") == 2, src  # g[0] and g[2] once each


@pytest.mark.parametrize("x", [np.float64(0.75), np.complex128(0.39 - 0.65j), np.float32(2.0)])
def test_a_scalar_buffer_element_that_is_a_result(x):
    # the gradient of a NumPy scalar argument is the buffer's one element
    # read back: a result the buffer forwarding must still bind
    def loss(v):
        r = np.real(v[()])
        return 1.0 + np.sum(r) + 0.5 * np.sum(r * r)

    vg = cr.value_and_grad(loss)
    j = cr.jit(vg)
    want = vg(x)
    for _ in range(plan_mod.COMPILE_AFTER + 3):  # stepped replays, then compiled
        got = j(x)
        assert type(got[1]) is type(want[1]) and got[1].dtype == want[1].dtype
        assert got[0] == want[0] and got[1] == want[1]


@pytest.mark.parametrize("n", [5, 1000, 5000])
def test_a_sliced_cotangent_keeps_its_negative_zeros(n):
    # the pullback of x[1:] places the cotangent into a new buffer: a copy,
    # eagerly and staged, so a -0.0 stays -0.0 (0.0 + -0.0 would be 0.0)
    def f(x, v):
        return cr.vjp(lambda x: x[1:] * 2.0, x)[1](v)[0]

    x = np.ones(n)
    v = np.ones(n - 1)
    v[-1] = -0.0
    v[0] = -0.0
    eager = f(x, v)
    assert np.signbit(eager[-1]) and np.signbit(eager[1]) and not np.signbit(eager[0])
    staged = cr.jit(f)
    for _ in range(3):
        r = staged(x, v)
        np.testing.assert_array_equal(r, eager)
        np.testing.assert_array_equal(np.signbit(r), np.signbit(eager))


def _bits_of(tree):
    return [np.asarray(v).tobytes() for v in cr.pytree.flatten(tree)[0]]


@pytest.mark.parametrize("dt", [np.complex128, np.complex64, np.float64, np.float32])
def test_arithmetic_on_scalars_is_eagers_bit_for_bit(dt):
    # NumPy's scalar arithmetic computes a complex product and abs()
    # otherwise than the ufunc's loop (an ulp in about a third of cases): a
    # staged value's Python operators compute as the eager code's do, and
    # explicit ufunc calls stay ufunc calls in the plan
    rng = np.random.default_rng(5)

    def f(a, b):
        p = a * b - b / a + abs(a) * a
        q = np.multiply(a, b) + np.absolute(b) * np.square(a)
        return p * q, -p

    for _ in range(40):
        a, b = (dt(complex(*rng.standard_normal(2))) if np.dtype(dt).kind == "c"
                else dt(rng.standard_normal()) for _ in range(2))
        staged = cr.jit(f)
        want = _bits_of(f(a, b))
        for _ in range(3):  # the recording, the check, a replay
            assert _bits_of(staged(a, b)) == want, (a, b)


@pytest.mark.parametrize("dt", [np.complex128, np.complex64, np.float64, np.float32])
@pytest.mark.parametrize("shape", [(7,), (), (0,), (1,), (3, 2)],
                         ids=["vector", "0-d", "empty", "size-1", "matrix"])
def test_an_arrays_power_of_a_scalar_is_eagers_bit_for_bit(dt, shape):
    # ndarray ** scalar takes NumPy's fast paths (exponents -1, 0, 0.5, 1,
    # 2: reciprocal, ones, sqrt, copy, square), which differ from np.power
    # for complex values in about a third of entries: the plan calls the
    # operator as eager code does
    rng = np.random.default_rng(3)
    z = rng.standard_normal(shape) + (1j * rng.standard_normal(shape)
                                      if np.dtype(dt).kind == "c" else 0)
    z = np.asarray(z, dtype=dt)
    for e in (-1, 0, 0.5, 1, 2, 2.0, 3, 2.5, np.float64(0.5), np.float32(2.0)):
        def f(z):
            w = z ** e
            w **= 2  # (in place: NumPy's own path for the staged buffer)
            return w, 2.0 ** z

        staged = cr.jit(f)
        with np.errstate(all="ignore"):
            want = _bits_of(f(z))
            for _ in range(3):
                assert _bits_of(staged(z)) == want, e
        assert staged.cache_info()["eager"] == 0


def test_a_complex_unary_hvp_writes_in_place_as_eager_code():
    # the HVP term d * (gd + g * r * xd) of a unary rule with a second ratio
    # (tan: r = 2 tan): eager code scales its product in place, and NumPy's
    # complex product in place takes another loop than into a new array
    # (an ulp apart at times); the plan does the same writes
    rng = np.random.default_rng(0)

    def loss(z):
        return np.sum(np.real(np.tan(z)))

    def hvp(x, v):
        return cr.hvp(loss, x, v)

    for _ in range(40):
        n = int(rng.integers(1, 5))
        x0 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        x1 = x0 * (1 + 0.1 * rng.standard_normal(n))
        v = np.ones_like(x0)
        staged = cr.jit(hvp)
        for x in (x0, x0, x0, x1):
            assert staged(x, v).tobytes() == hvp(x, v).tobytes(), x


def test_a_complex_scalar_gradient_records_as_eager_computes():
    rng = np.random.default_rng(0)

    def loss(a):
        r = np.real(np.reciprocal(a))
        return np.sum(r) + 0.5 * np.sum(r * r)

    vg = cr.value_and_grad(loss)
    for _ in range(20):
        x = np.complex128(complex(*rng.standard_normal(2)))
        staged = cr.jit(vg)
        want = _bits_of(vg(x))
        for _ in range(3):
            assert _bits_of(staged(x)) == want, x


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex128])
def test_powers_of_scalars_are_eagers_bit_for_bit(dt):
    # a NumPy scalar's ** is not np.power's loop (an ulp apart at times):
    # a staged scalar's ** computes as eager code's, np.power stays np.power,
    # and a negative literal base keeps its sign in the plan's code
    rng = np.random.default_rng(2)

    def f(a, b):
        return a ** 3 + a ** 1.5 + np.power(a, 2.5) + (-2) ** b + 2.0 ** a, b ** -1

    staged = cr.jit(f)
    for k in range(plan_mod.COMPILE_AFTER + 8):  # stepped replays, then the code
        a = dt(rng.uniform(0.2, 3.0))
        b = dt(rng.integers(1, 4))
        got, want = _bits_of(staged(a, b)), _bits_of(f(a, b))
        assert got == want, (k, a, b)
    assert "** (" in staged.plan(a, b).source


def test_a_0d_array_written_into_a_scalar_buffer_stays_an_array():
    # (a value the recorder did not see as a NumPy scalar has no dtype in
    # the scalars table: ``dtype == None`` must not read as a match, or the
    # buffer is forwarded and a replay returns what eager does not)
    x = np.float64(0.75)
    f = cr.value_and_grad(lambda v: np.sum(np.reshape(v[()], (1,)) * 2.0))
    j = cr.jit(f)
    want = f(x)
    for _ in range(4):
        got = j(x)
        assert type(got[1]) is type(want[1]) and got[1] == want[1]
