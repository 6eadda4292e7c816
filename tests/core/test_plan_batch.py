"""The plan pass that computes products sharing a right operand as one
product of the stacked rows, and copies a transposed right operand that
many products read once into rows (``chainrules.plan_batch``).

A rewritten product differs from the plan's by rounding only: entrywise
within ``2 k u S`` for real dtypes and ``4 sqrt(2) k u S`` for complex
ones, ``S = |A| @ |B|``, ``k`` the inner dimension, ``u`` the unit
roundoff. The tests check that bound against eager results and a
long-double reference, that the products are rewritten (the plan's steps
counted), and that they are not where the rewrite would read other values
than the products do: an operand written in place between the first
product and the last, a product that is a result, operands of other
shapes or dtypes, fewer than three products, rows too far apart."""

import importlib.util
import pathlib

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import chainrules as cr
from chainrules import plan as plan_mod
from chainrules import plan_batch, plan_buffers
from chainrules.staging import Ref


def _steps(jitted, *args):
    plan = jitted.plan(*args)
    assert plan is not None, jitted.eager_reasons()
    return plan._parts[0]


def _count(steps, fn):
    """The calls of ``fn`` among ``steps``, those writing into an array the
    plan keeps between replays (``plan_buffers.kept_call``) too."""
    return sum(1 for s in steps if s[0] == "call" and (
        s[1] is fn or s[1] is plan_buffers.kept_call and s[2][2] is fn))


def _replayed(fun, args, calls=3):
    """The result of the ``calls``-th call of ``cr.jit(fun)`` and its
    plan's steps; the staged function must never give up."""
    j = cr.jit(fun, strict=True)
    for k in range(calls):
        out = j(*args)
        if k == 0:
            _steps(j, *args)  # (every stage of the plan's passes run now)
    return out, _steps(j, *args)


def _bound(k, dtype, S):
    """The entrywise bound on a rewritten product minus the plan's."""
    u = np.finfo(dtype).eps / 2
    c = 2.0 if np.dtype(dtype).kind == "f" else 4.0 * np.sqrt(2.0)
    return c * k * u * S


def _magnitude(a, b):
    return np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)


def _check(staged, eager, As, B, dtype):
    """Each ``staged[t]`` within the bound of ``eager[t]``, and within half
    of it of ``As[t] @ B`` in long double."""
    wide = np.clongdouble if np.iscomplexobj(B) else np.longdouble
    k = B.shape[0]
    assert staged.dtype == eager.dtype == np.dtype(dtype)
    for t, a in enumerate(As):
        S = _magnitude(a, B)
        assert np.all(np.abs(staged[t] - eager[t]) <= _bound(k, dtype, S))
        ref = np.asarray(a, wide) @ np.asarray(B, wide)
        assert np.all(np.abs(staged[t] - ref) <= _bound(k, dtype, S) / 2
                      + _bound(k, wide, S))


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def _data(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


DTYPES = [np.float32, np.float64, np.complex128]


# -- products of the rows of one array ------------------------------------------


def _rows(X, W):
    return np.stack([X[t] @ W for t in range(X.shape[0])])


@pytest.mark.parametrize("dtype", DTYPES)
@example(n=2, b=3, d=4, m=2, seed=0)
@example(n=3, b=1, d=1, m=1, seed=1)
@example(n=64, b=32, d=64, m=48, seed=2)
@given(n=st.one_of(st.just(2), st.integers(3, 9), st.just(64)),
       b=st.integers(1, 6), d=st.integers(1, 40), m=st.integers(1, 6),
       seed=st.integers(0, 2 ** 32 - 1))
def test_products_of_rows_are_batched_within_the_bound(dtype, n, b, d, m, seed):
    rng = np.random.default_rng(seed)
    X, W = _data(rng, (n, b, d), dtype), _data(rng, (d, m), dtype)
    eager = _rows(X, W)
    staged, steps = _replayed(_rows, (X, W))
    if n < plan_batch.MIN_TERMS:
        assert _count(steps, np.matmul) == n
        _same(staged, eager)
        return
    assert _count(steps, np.matmul) == 1
    _check(staged, eager, list(X), W, dtype)


def test_a_part_of_the_rows_in_any_order():
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((9, 3, 4)), rng.standard_normal((4, 5))

    def f(X, W):  # rows 2..7, not in order, one by a negative index
        return [X[i] @ W for i in (5, 2, -3, 3, 7, 4)]

    out, steps = _replayed(lambda X, W: np.stack(f(X, W)), (X, W))
    assert _count(steps, np.matmul) == 1
    _check(out, np.stack(f(X, W)), [X[i] for i in (5, 2, -3, 3, 7, 4)], W, np.float64)


def test_batched_products_replay_as_compiled_code():
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((6, 5, 3)), rng.standard_normal((3, 4))
    j = cr.jit(_rows, strict=True)
    outs = [j(X, W) for _ in range(plan_mod.COMPILE_AFTER + 4)]
    assert j.plan(X, W)._written is not None
    assert _count(_steps(j, X, W), np.matmul) == 1
    for o in outs[1:]:
        _same(o, outs[1])
    _check(outs[-1], _rows(X, W), list(X), W, np.float64)


# -- a transposed right operand ----------------------------------------------------


def _transposed(A, W):
    """Products of ``W.T`` with operands that are not rows of one array."""
    return np.stack([(A[t] * 1.0) @ W.T for t in range(A.shape[0])])


@pytest.mark.parametrize("dtype", DTYPES)
@example(n=3, b=2, d=3, m=4, seed=0)
@example(n=64, b=32, d=128, m=64, seed=1)
@given(n=st.one_of(st.just(2), st.integers(3, 9)), b=st.integers(1, 6),
       d=st.integers(1, 40), m=st.integers(1, 6), seed=st.integers(0, 2 ** 32 - 1))
def test_a_transposed_operand_is_read_in_rows_within_the_bound(dtype, n, b, d, m, seed):
    rng = np.random.default_rng(seed)
    A, W = _data(rng, (n, b, d), dtype), _data(rng, (m, d), dtype)
    eager = _transposed(A, W)
    staged, steps = _replayed(_transposed, (A, W))
    if n < plan_batch.MIN_TERMS:
        assert _count(steps, np.copy) == 0
        _same(staged, eager)
        return
    assert _count(steps, np.copy) == 1 and _count(steps, np.matmul) == n
    made = {s[4].i: s for s in steps if s[0] == "call" and type(s[4]) is Ref}
    for s in steps:  # every product reads the copy
        if s[0] == "call" and s[1] is np.matmul:
            assert made[s[2][1].i][1] is np.copy
    _check(staged, eager, list(A), W.T, dtype)


def test_rows_of_one_array_times_a_transpose_are_one_product():
    rng = np.random.default_rng(1)
    X, W = rng.standard_normal((7, 4, 5)), rng.standard_normal((3, 5))

    def f(X, W):
        return np.stack([X[t] @ W.T for t in range(7)])

    out, steps = _replayed(f, (X, W))
    assert _count(steps, np.matmul) == 1 and _count(steps, np.copy) == 1
    _check(out, f(X, W), list(X), W.T, np.float64)


# -- where the operands may change between the products ----------------------------


def _in_place_cases():
    """Functions that write an operand (or memory it shares) between the
    first product of a group and the last."""

    def a_row(X, W):
        X = X * 1.0
        p = [X[0] @ W, X[1] @ W]
        X[2] += 1.0  # a later product's operand
        return np.stack(p + [X[t] @ W for t in range(2, 5)])

    def the_weight(X, W):
        W = W * 1.0
        p = [X[0] @ W, X[1] @ W]
        W += 1.0
        return np.stack(p + [X[t] @ W for t in range(2, 5)])

    def through_a_reshape(X, W):
        X = X * 1.0
        flat = X.reshape(-1)
        p = [X[0] @ W, X[1] @ W]
        np.multiply(flat, 2.0, out=flat)
        return np.stack(p + [X[t] @ W for t in range(2, 5)])

    def a_transposed_weight(X, W):
        W = W * 1.0
        p = [(X[t] * 1.0) @ W.T for t in range(2)]
        np.copyto(W[0], -W[1])  # an effect step
        return np.stack(p + [(X[t] * 1.0) @ W.T for t in range(2, 5)])

    return [a_row, the_weight, through_a_reshape, a_transposed_weight]


def _operands(fun):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 3, 4))
    W = rng.standard_normal((3, 4) if fun.__name__ == "a_transposed_weight" else (4, 3))
    return X, W


@pytest.mark.parametrize("fun", _in_place_cases(), ids=lambda f: f.__name__)
def test_an_operand_written_between_the_products_blocks(fun):
    X, W = _operands(fun)
    out, steps = _replayed(fun, (X, W))
    assert _count(steps, np.matmul) == 5 and _count(steps, np.copy) == 0
    _same(out, fun(X, W))


@pytest.mark.parametrize("fun", _in_place_cases(), ids=lambda f: f.__name__)
def test_without_the_write_analysis_those_products_would_be_wrong(fun, monkeypatch):
    # (the cases above test something: rewritten regardless of the writes,
    # the replay reads the operands before they are written)
    monkeypatch.setattr(plan_batch, "_unwritten", lambda *a: True)
    X, W = _operands(fun)
    j = cr.jit(fun, warn=False)
    j(X, W)
    plan = j.plan(X, W)
    steps = plan._parts[0]
    assert _count(steps, np.matmul) == 1 or _count(steps, np.copy) == 1
    assert not np.allclose(plan(X, W), fun(X, W))


def test_products_that_are_results_are_not_batched():
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((5, 3, 4)), rng.standard_normal((4, 2))

    def f(X, W):
        return [X[t] @ W for t in range(5)]

    out, steps = _replayed(f, (X, W))
    assert _count(steps, np.matmul) == 5
    for o, e in zip(out, f(X, W)):
        _same(o, e)


def test_other_weights_shapes_and_dtypes_are_left():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 3, 4))
    W, V = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))

    def two_weights(X, W, V):  # two products of each: no group of three
        return np.stack([X[t] @ (W if t % 3 else V) for t in range(4)])

    def two_arrays(X, W, V):
        Y = X * 2.0
        return np.stack([(X if t % 3 else Y)[t] @ W for t in range(4)])

    for fun in (two_weights, two_arrays):
        out, steps = _replayed(fun, (X, W, V))
        assert _count(steps, np.matmul) == 4
        _same(out, fun(X, W, V))


@pytest.mark.parametrize("dtypes", [(np.int64, np.int64), (np.float32, np.float64),
                                    (np.float16, np.float16)])
def test_integer_mixed_and_non_blas_dtypes_are_left(dtypes):
    rng = np.random.default_rng(0)
    X = np.round(4 * rng.standard_normal((5, 3, 4))).astype(dtypes[0])
    W = np.round(4 * rng.standard_normal((4, 2))).astype(dtypes[1])
    out, steps = _replayed(_rows, (X, W))
    assert _count(steps, np.matmul) == 5
    _same(out, _rows(X, W))
    out, steps = _replayed(_transposed, (X, np.ascontiguousarray(W.T)))
    assert _count(steps, np.copy) == 0
    _same(out, _transposed(X, np.ascontiguousarray(W.T)))


def test_rows_far_apart_are_left():
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((20, 3, 4)), rng.standard_normal((4, 2))

    def f(X, W):  # three products over a span of twenty rows
        return np.stack([X[i] @ W for i in (0, 9, 19)])

    out, steps = _replayed(f, (X, W))
    assert _count(steps, np.matmul) == 3
    _same(out, f(X, W))


# -- an LSTM's gradient ------------------------------------------------------------


def _benchmarks_common():
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "common.py"
    spec = importlib.util.spec_from_file_location("_benchmarks_common", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("steps, hidden, vocab, batch", [
    (12, 16, 8, 4),
    pytest.param(64, 128, 64, 32, marks=pytest.mark.slow),  # the benchmark's
])
def test_lstm_gradient(steps, hidden, vocab, batch):
    lstm_loss = _benchmarks_common().lstm_loss
    rng = np.random.default_rng(3)
    H, V = hidden, vocab
    params = (rng.standard_normal((V, 4 * H)) / np.sqrt(V),
              rng.standard_normal((H, 4 * H)) / np.sqrt(H), 0.1 * rng.standard_normal(4 * H),
              rng.standard_normal((H, V)) / np.sqrt(H), 0.1 * rng.standard_normal(V))
    onehot = np.eye(V)[rng.integers(0, V, (steps + 1, batch))]
    X, T = onehot[:-1], onehot[1:]
    vg = cr.value_and_grad(lambda p, X, T: lstm_loss(np, p, X, T, True))
    value, grads = vg(params, X, T)
    (s_value, s_grads), plan_steps = _replayed(vg, (params, X, T))
    # X[t] @ Wx one product; dz @ Wh.T and dy @ Wo.T read copies in rows
    assert _count(plan_steps, np.copy) == 2
    made = {s[4].i: s for s in plan_steps if s[0] == "call" and type(s[4]) is Ref}
    # (a product into an array the plan keeps: kept_call(store, key, matmul, a, b))
    products = [s[2] if s[1] is np.matmul else s[2][3:] for s in plan_steps
                if s[0] == "call" and (s[1] is np.matmul or s[1] is plan_buffers.kept_call
                                       and s[2][2] is np.matmul)]
    x_products = [a for a in products if made[a[0].i][1] is np.reshape]
    assert len(x_products) == 1
    # (X one-hot: its products are exact in any order; the reverse sweep's
    # products within the bound, carried through the loop's derivatives)
    assert np.isclose(s_value, value, rtol=1e-14, atol=0)
    for g, sg in zip(grads, s_grads):
        assert np.allclose(sg, g, rtol=1e-11, atol=1e-14 * np.abs(g).max())
