"""The plan pass that computes a sum of matrix products accumulated one
product at a time as one product of the stacked operands
(``chainrules.plan_join``).

Joined, a sum of ``n`` products of inner dimension ``k`` differs from the
steps' by rounding only: entrywise within ``2 n k u S`` for real dtypes and
``4 sqrt(2) n k u S`` for complex ones, ``S = sum_t |A_t| @ |B_t|``, ``u``
the unit roundoff. The tests check that bound against eager results and
against a long-double reference, that a chain is joined (the plan's
products counted), and that it is not where joining would change more than
the order of the sum: an operand written in place before the last addition,
the partial sum read midway, operands of other shapes or dtypes, integers,
fewer than three products."""

import importlib.util
import pathlib

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import chainrules as cr
from chainrules import plan as plan_mod
from chainrules import plan_batch, plan_buffers, plan_join


def _benchmarks_common():
    """``benchmarks/common.py``, whose ``lstm_loss`` the benchmarks time."""
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "common.py"
    spec = importlib.util.spec_from_file_location("_benchmarks_common", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lstm_loss = _benchmarks_common().lstm_loss


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
    """The result of the ``calls``-th call of ``cr.jit(fun)`` (the first
    records, the second checks, the next ones replay) and its plan's steps;
    the staged function must never give up."""
    j = cr.jit(fun, strict=True)
    for k in range(calls):
        out = j(*args)
        if k == 0:
            _steps(j, *args)  # (every stage of the plan's passes run now)
    return out, _steps(j, *args)


def _bound(n, k, dtype, S):
    """The entrywise bound on a joined sum minus the steps' sum."""
    u = np.finfo(dtype).eps / 2
    c = 2.0 if np.dtype(dtype).kind == "f" else 4.0 * np.sqrt(2.0)
    return c * n * k * u * S


def _magnitudes(As, Bs):
    """``sum_t |A_t| @ |B_t|`` in float64."""
    return sum(np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
               for a, b in zip(As, Bs))


def _exact(As, Bs):
    """``sum_t A_t @ B_t`` in long double, and the bound on its own error."""
    wide = np.clongdouble if np.iscomplexobj(As[0]) else np.longdouble
    ref = sum(np.asarray(a, wide) @ np.asarray(b, wide) for a, b in zip(As, Bs))
    k = As[0].shape[1]
    return ref, _bound(len(As), k, wide, _magnitudes(As, Bs))


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def _data(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


# -- gradients of a weight used at every step of a loop -------------------------


def _loop_loss(W, A, C):
    """A weight used at each of ``A.shape[0]`` steps: its gradient is
    ``sum_t A[t].T @ C[t]``, which the reverse sweep accumulates product by
    product."""
    total = 0.0
    for t in range(A.shape[0]):
        total = total + np.real(np.sum((A[t] @ W) * C[t]))
    return total


DTYPES = [np.float32, np.float64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
@example(n=2, k=3, m=2, p=4, seed=0)  # (each of the three kinds of chain at least once)
@example(n=3, k=1, m=1, p=1, seed=1)
@example(n=64, k=5, m=4, p=3, seed=2)
@given(n=st.one_of(st.just(2), st.integers(3, 9), st.just(64)),
       k=st.integers(1, 6), m=st.integers(1, 5), p=st.integers(1, 5),
       seed=st.integers(0, 2 ** 32 - 1))
def test_gradient_of_a_loop_is_joined_within_the_bound(dtype, n, k, m, p, seed):
    rng = np.random.default_rng(seed)
    W, A, C = _data(rng, (m, p), dtype), _data(rng, (n, k, m), dtype), \
        _data(rng, (n, k, p), dtype)
    grad = cr.grad(_loop_loss)
    eager = grad(W, A, C)
    staged, steps = _replayed(grad, (W, A, C))
    As, Bs = [a.T for a in A], list(C)
    if n < plan_join.MIN_TERMS:  # two products: left as they are, bit for bit
        assert _count(steps, np.matmul) == n and _count(steps, np.concatenate) == 0
        _same(staged, eager)
        return
    assert _count(steps, np.matmul) == 1 and _count(steps, np.concatenate) == 2
    assert staged.dtype == eager.dtype == np.dtype(dtype)
    S = _magnitudes(As, Bs)
    assert np.all(np.abs(staged - eager) <= _bound(n, k, dtype, S))
    ref, ref_err = _exact(As, Bs)
    # the joined sum alone: one sum of n k products, within half the bound
    assert np.all(np.abs(staged - ref) <= _bound(n, k, dtype, S) / 2 + ref_err)


def test_joined_gradient_replays_as_compiled_code():
    rng = np.random.default_rng(0)
    W, A, C = (rng.standard_normal(s) for s in ((3, 4), (6, 5, 3), (6, 5, 4)))
    grad = cr.grad(_loop_loss)
    j = cr.jit(grad, strict=True)
    outs, left = [], []
    for _ in range(plan_mod.COMPILE_AFTER + 4):
        outs.append(j(W, A, C))
        left.append(j.plan(W, A, C)._stages.left)
    assert j.plan(W, A, C)._written is not None  # its code was written
    assert _count(_steps(j, W, A, C), np.concatenate) == 2
    # every replay after the passes, stepped or compiled, the same
    done = left.index(0)
    assert done == 1 + len(j.plan(W, A, C)._stages._stages)  # (the check, then a stage a call)
    for o in outs[done:]:
        _same(o, outs[done])
    S = _magnitudes([a.T for a in A], list(C))
    assert np.all(np.abs(outs[-1] - grad(W, A, C)) <= _bound(6, 5, np.float64, S))


# -- chains written by the function itself ---------------------------------------


def _operands(seed=0, n=5, k=4, m=3, p=2, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return _data(rng, (n, k, m), dtype), _data(rng, (n, k, p), dtype)


def _chain(A, B, n=None):
    """``acc = A[0].T @ B[0] + A[1].T @ B[1]``, then ``acc += A[t].T @ B[t]``."""
    acc = A[0].T @ B[0] + A[1].T @ B[1]
    for t in range(2, len(A) if n is None else n):
        acc += A[t].T @ B[t]
    return acc


def _check_joined(out, As, Bs, dtype=np.float64):
    S = _magnitudes(As, Bs)
    ref, ref_err = _exact(As, Bs)
    assert np.all(np.abs(out - ref) <= _bound(len(As), As[0].shape[1], dtype, S) / 2
                  + ref_err)


def test_a_chain_of_the_function_is_joined():
    A, B = _operands()
    out, steps = _replayed(lambda A, B: _chain(A, B), (A, B))
    assert _count(steps, np.matmul) == 1
    # stacked through the arrays the operands transpose: one copy of rows
    assert _count(steps, np.transpose) == 1
    _check_joined(out, [a.T for a in A], list(B))


def test_operands_not_transposed_and_mixed_are_joined():
    A, B = _operands()
    At = np.ascontiguousarray(A.transpose(0, 2, 1))

    def plain(At, B):
        acc = At[0] @ B[0] + At[1] @ B[1]
        for t in range(2, len(At)):
            acc += At[t] @ B[t]
        return acc

    def mixed(A, At, B):  # some operands transposes, some not
        acc = A[0].T @ B[0] + At[1] @ B[1]
        for t in range(2, len(A)):
            acc += (A[t].T if t % 2 else At[t]) @ B[t]
        return acc

    for fun, args in ((plain, (At, B)), (mixed, (A, At, B))):
        out, steps = _replayed(fun, args)
        assert _count(steps, np.matmul) == 1 and _count(steps, np.concatenate) == 2
        _check_joined(out, list(At), list(B))


def test_writes_after_the_last_addition_do_not_block():
    A, B = _operands()

    def f(A, B):
        B = B * 1.0
        acc = _chain(A, B)
        B[0] += 1.0  # the joined product was made before this
        return acc, B

    (out, b), steps = _replayed(f, (A, B))
    assert _count(steps, np.matmul) == 1
    _check_joined(out, [a.T for a in A], list(B))
    _same(b[0], B[0] + 1.0)


def _in_place_cases():
    """Functions that write an operand (or memory it shares) after its
    product and before the chain's last addition."""

    def into_a_slice(A, B):
        B = B * 1.0
        acc = A[0].T @ B[0] + A[1].T @ B[1]
        acc += A[2].T @ B[2]
        B[0] += 1.0  # the first product's operand
        acc += A[3].T @ B[3]
        acc += A[4].T @ B[4]
        return acc

    def through_a_reshape(A, B):
        B = B * 1.0
        flat = B.reshape(-1)
        acc = A[0].T @ B[0] + A[1].T @ B[1]
        acc += A[2].T @ B[2]
        np.multiply(flat, 2.0, out=flat)  # every operand, through a view
        acc += A[3].T @ B[3]
        acc += A[4].T @ B[4]
        return acc

    def the_transposed_array(A, B):
        A = A * 1.0
        a0 = A[0]
        acc = a0.T @ B[0] + A[1].T @ B[1]
        acc += A[2].T @ B[2]
        a0[...] = 0.0  # what the first product's transpose reads
        acc += A[3].T @ B[3]
        acc += A[4].T @ B[4]
        return acc

    def by_copyto(A, B):
        B = B * 1.0
        acc = A[0].T @ B[0] + A[1].T @ B[1]
        acc += A[2].T @ B[2]
        acc += A[3].T @ B[3]
        np.copyto(B[2], -B[1])  # an effect step: before the last addition
        acc += A[4].T @ B[4]
        return acc

    return [into_a_slice, through_a_reshape, the_transposed_array, by_copyto]


@pytest.mark.parametrize("fun", _in_place_cases(), ids=lambda f: f.__name__)
def test_an_operand_written_before_the_last_addition_blocks(fun):
    A, B = _operands()
    out, steps = _replayed(fun, (A, B))
    assert _count(steps, np.concatenate) == 0 and _count(steps, np.matmul) == 5
    _same(out, fun(A, B))


@pytest.mark.parametrize("fun", _in_place_cases(), ids=lambda f: f.__name__)
def test_without_the_write_analysis_those_chains_would_be_wrong(fun, monkeypatch):
    # (the cases above test something: joined regardless of the writes, the
    # replay reads the written operands and computes another sum)
    monkeypatch.setattr(plan_join, "_unwritten", lambda *a: True)
    A, B = _operands()
    j = cr.jit(fun, warn=False)
    j(A, B)
    plan = j.plan(A, B)
    assert _count(plan._parts[0], np.concatenate) == 2
    assert not np.allclose(plan(A, B), fun(A, B))


def test_the_partial_sum_read_midway_blocks():
    A, B = _operands()

    def after_two(A, B):
        acc = A[0].T @ B[0] + A[1].T @ B[1]
        mid = acc * 2.0  # the sum of two products is read
        for t in range(2, 5):
            acc += A[t].T @ B[t]
        return acc, mid

    def through_a_view(A, B):
        acc = A[0].T @ B[0] + A[1].T @ B[1]
        row = acc[0]  # a view: it sees every later addition
        for t in range(2, 5):
            acc += A[t].T @ B[t]
        return acc, row * 1.0

    for fun in (after_two, through_a_view):
        out, steps = _replayed(fun, (A, B))
        assert _count(steps, np.concatenate) == 0 and _count(steps, np.matmul) == 5
        _same(out[0], fun(A, B)[0])
        _same(out[1], fun(A, B)[1])


def test_a_chain_ends_where_its_sum_is_read():
    A, B = _operands()

    def after_three(A, B):
        acc = _chain(A, B, 3)
        mid = acc * 2.0
        acc += A[3].T @ B[3]
        acc += A[4].T @ B[4]
        return acc, mid

    (out, mid), steps = _replayed(after_three, (A, B))
    # the first three joined where the sum is read; the two more added to it
    assert _count(steps, np.concatenate) == 2 and _count(steps, np.matmul) == 3
    As, Bs = [a.T for a in A], list(B)
    _check_joined(mid / 2.0, As[:3], Bs[:3])
    three = after_three(A, B)[1] / 2.0
    S3 = _magnitudes(As[:3], Bs[:3])
    _same(out, (mid / 2.0 + As[3] @ Bs[3]) + As[4] @ Bs[4])
    assert np.all(np.abs(mid / 2.0 - three) <= _bound(3, 4, np.float64, S3))


def test_a_product_read_elsewhere_ends_the_chain():
    A, B = _operands()

    def kept(A, B):
        acc = A[0].T @ B[0] + A[1].T @ B[1]
        third = A[2].T @ B[2]
        acc += third
        acc += A[3].T @ B[3]
        return acc, third

    out, steps = _replayed(kept, (A, B))
    assert _count(steps, np.concatenate) == 0
    _same(out[0], kept(A, B)[0])


def test_shapes_that_differ_block():
    A, B = _operands()
    A2, B2 = _operands(seed=1, k=6)  # another inner dimension, same result shape

    def f(A, B, A2, B2):
        acc = A[0].T @ B[0] + A[1].T @ B[1]
        acc += A2[2].T @ B2[2]
        acc += A[3].T @ B[3]
        acc += A[4].T @ B[4]
        return acc

    def g(A, B, A2, B2):
        acc = A2[0].T @ B2[0] + A[1].T @ B[1]
        for t in range(2, 5):
            acc += A[t].T @ B[t]
        return acc

    for fun in (f, g):
        out, steps = _replayed(fun, (A, B, A2, B2))
        assert _count(steps, np.concatenate) == 0 and _count(steps, np.matmul) == 5
        _same(out, fun(A, B, A2, B2))


@pytest.mark.parametrize("dtypes", [(np.int64, np.int64), (np.float32, np.float64),
                                    (np.float16, np.float16)])
def test_integer_mixed_and_non_blas_dtypes_are_left(dtypes):
    A, _ = _operands()
    _, B = _operands(seed=1)
    A, B = (np.round(4 * A).astype(dtypes[0]), np.round(4 * B).astype(dtypes[1]))
    out, steps = _replayed(lambda A, B: _chain(A, B), (A, B))
    assert _count(steps, np.concatenate) == 0 and _count(steps, np.matmul) == 5
    _same(out, _chain(A, B))


def test_two_products_are_left():
    A, B = _operands(n=2)
    out, steps = _replayed(lambda A, B: _chain(A, B), (A, B))
    assert _count(steps, np.concatenate) == 0 and _count(steps, np.matmul) == 2
    _same(out, _chain(A, B))


# -- an LSTM's gradient ------------------------------------------------------------


def _lstm_operands(params, X, T):
    """The per-step operands of the products whose sums are the gradients
    of ``Wx``, ``Wh`` and ``Wo`` in ``benchmarks.common.lstm_loss``: a
    NumPy forward and reverse sweep of it. Returns ``{name: (As, Bs)}`` and
    the three gradients."""
    Wx, Wh, b, Wo, bo = params
    H = Wh.shape[0]
    steps, batch = X.shape[:2]

    def sig(z):
        return 0.5 * np.tanh(0.5 * z) + 0.5

    hs, cs, gates, ys = [np.zeros((batch, H))], [np.zeros((batch, H))], [], []
    for t in range(steps):
        z = X[t] @ Wx + b + hs[-1] @ Wh
        s, g = sig(z[:, :3 * H]), np.tanh(z[:, 3 * H:])
        c = s[:, H:2 * H] * cs[-1] + s[:, :H] * g
        hs.append(s[:, 2 * H:] * np.tanh(c))
        cs.append(c)
        gates.append((s, g))
        ys.append(hs[-1] @ Wo + bo)
    dh_next, dc_next = np.zeros((batch, H)), np.zeros((batch, H))
    dzs, dys = [None] * steps, [None] * steps
    for t in reversed(range(steps)):
        y = ys[t] - ys[t].max(axis=1, keepdims=True)
        soft = np.exp(y) / np.exp(y).sum(axis=1, keepdims=True)
        e = -T[t] / (steps * batch)
        dy = e - soft * e.sum(axis=1, keepdims=True)
        dys[t] = dy
        (s, g), c, c_prev = gates[t], cs[t + 1], cs[t]
        dh = dy @ Wo.T + dh_next
        tc = np.tanh(c)
        dc = dh * s[:, 2 * H:] * (1 - tc * tc) + dc_next
        ds = np.concatenate([dc * g, dc * c_prev, dh * tc], axis=1)
        dz = np.concatenate([ds * s * (1 - s), dc * s[:, :H] * (1 - g * g)], axis=1)
        dzs[t] = dz
        dh_next, dc_next = dz @ Wh.T, dc * s[:, H:2 * H]
    ops = {"Wx": ([x.T for x in X], dzs), "Wh": ([h.T for h in hs[1:-1]], dzs[1:]),
           "Wo": ([h.T for h in hs[1:]], dys)}
    return ops, {k: sum(a @ b for a, b in zip(*v)) for k, v in ops.items()}


@pytest.mark.parametrize("steps, hidden, vocab, batch", [
    (3, 4, 5, 2),  # Wh's gradient: two products, left as they are
    (12, 16, 8, 4),
    pytest.param(64, 128, 64, 32, marks=pytest.mark.slow),  # the benchmark's
])
def test_lstm_gradient_within_the_bound(steps, hidden, vocab, batch, monkeypatch):
    # (the products that share an operand, plan_batch, off: its rounding
    # would reach the other gradients through the loop;
    # tests/core/test_plan_batch.py checks it on the LSTM)
    monkeypatch.setattr(plan_batch, "MIN_TERMS", 10 ** 9)
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

    ops, ref = _lstm_operands(params, X, T)
    names = ["Wx", "Wh", "b", "Wo", "bo"]
    joined = 0
    for name, g, sg in zip(names, grads, s_grads):
        if name not in ops:  # sums of reductions: bit for bit
            _same(sg, g)
            continue
        As, Bs = ops[name]
        n = len(As)
        # the reference sweep computes the same products as eager's
        assert np.allclose(g, ref[name], rtol=1e-12, atol=1e-15)
        if n < plan_join.MIN_TERMS:
            _same(sg, g)
            continue
        joined += n - 1
        S = _magnitudes(As, Bs)
        assert np.all(np.abs(sg - g) <= _bound(n, batch, np.float64, S))
    _same(s_value, value)
    # each joined chain's n products became one: the forward's X[t] @ Wx,
    # h @ Wh (from the second step) and h @ Wo, the reverse sweep's three
    # chains of as many products, and dy @ Wo.T and dz @ Wh.T
    n_products = 2 * (3 * steps - 1) + steps + (steps - 1)
    assert _count(plan_steps, np.matmul) == n_products - joined
    # Wx's and Wo's operands joined (X's and h's rows, dz and dy); Wh's are
    # runs of theirs: h_0.. h_(T-2) of Wo's, dz_(T-1).. dz_1 of Wx's
    assert _count(plan_steps, np.concatenate) == 4


# -- chains that join the same operands ---------------------------------------------


def _two_chains(A, C, B, read_midway=False, write_midway=False):
    """``sum_t A[t].T @ B[t]`` over every ``t`` and ``sum_t C[t].T @ B[t]``
    from ``t = 1``, accumulated in one loop backwards (as a reverse sweep
    does): the second's ``B`` are a run of the first's."""
    n = len(A)
    C = C * 1.0
    first = A[n - 1].T @ B[n - 1] + A[n - 2].T @ B[n - 2]
    second = C[n - 1].T @ B[n - 1] + C[n - 2].T @ B[n - 2]
    for t in range(n - 3, 0, -1):
        first += A[t].T @ B[t]
        second += C[t].T @ B[t]
    mid = second * 2.0 if read_midway else None
    if write_midway:
        C[n - 1] += 1.0  # an operand of the second, before the first's end
    first += A[0].T @ B[0]
    return first, second, mid


def test_chains_share_the_operands_they_both_join():
    A, B = _operands(n=6)
    C, _ = _operands(seed=1, n=6)
    (first, second, _), steps = _replayed(lambda A, C, B: _two_chains(A, C, B), (A, C, B))
    # B joined once: the second chain's are rows of the first's
    assert _count(steps, np.matmul) == 2 and _count(steps, np.concatenate) == 3
    _check_joined(first, [a.T for a in A], list(B))
    _check_joined(second, [c.T for c in C[1:]], list(B[1:]))


@pytest.mark.parametrize("case", ["read_midway", "write_midway"])
def test_a_chain_read_or_written_before_the_other_ends_does_not_share(case):
    A, B = _operands(n=6)
    C, _ = _operands(seed=1, n=6)

    def f(A, C, B):
        return _two_chains(A, C, B, **{case: True})

    (first, second, mid), steps = _replayed(f, (A, C, B))
    assert _count(steps, np.matmul) == 2 and _count(steps, np.concatenate) == 4
    _check_joined(first, [a.T for a in A], list(B))
    _check_joined(second, [c.T for c in C[1:]], list(B[1:]))
    if mid is not None:
        _same(mid, second * 2.0)


def test_without_the_read_analysis_a_shared_chain_would_be_wrong(monkeypatch):
    # (the case above tests something: shared regardless of the read, the
    # sum would be read before its product is made)
    monkeypatch.setattr(plan_join, "_read_between", lambda *a: False)
    A, B = _operands(n=6)
    C, _ = _operands(seed=1, n=6)

    def f(A, C, B):
        return _two_chains(A, C, B, read_midway=True)

    j = cr.jit(f, warn=False)
    j(A, C, B)
    plan = j.plan(A, C, B)
    plan.prepare()  # (every stage of the passes run)
    with pytest.raises(Exception):
        plan(A, C, B)


def _written_between(A, C, B):
    """Two chains over the same rows of ``B``, one after the other, and a
    row written between the first's end and the second's products."""
    B = B * 1.0
    first = _chain(A, B)
    B[2] += 1.0
    second = _chain(C, B)
    return first, second


def test_a_run_written_between_the_chains_is_not_shared():
    A, B = _operands(n=6)
    C, _ = _operands(seed=1, n=6)
    (first, second), steps = _replayed(_written_between, (A, C, B))
    assert _count(steps, np.matmul) == 2 and _count(steps, np.concatenate) == 4
    B2 = B * 1.0
    B2[2] += 1.0
    _check_joined(first, [a.T for a in A], list(B))
    _check_joined(second, [c.T for c in C], list(B2))


def test_without_the_write_analysis_that_run_would_be_shared_wrong(monkeypatch):
    monkeypatch.setattr(plan_join, "_unwritten_run", lambda *a: True)
    A, B = _operands(n=6)
    C, _ = _operands(seed=1, n=6)
    j = cr.jit(_written_between, warn=False)
    j(A, C, B)
    plan = j.plan(A, C, B)
    assert _count(plan._parts[0], np.concatenate) == 3
    assert not np.allclose(plan(A, C, B)[1], _written_between(A, C, B)[1])
