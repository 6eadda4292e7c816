"""Every public entry point run from 8 threads at once gives, bitwise, the
single-threaded answer; per-context state (anomaly mode, checkpoint savers)
never leaks between threads."""

import sys
import threading

import numpy as np
import pytest

import chainrules as cr

N_THREADS = 8
ROUNDS = 5


def _mlp(params, x):
    w1, w2 = params
    h = np.tanh(x @ w1)
    return np.sum(np.log1p(np.exp(h @ w2)))


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((4, 5)), rng.standard_normal((5, 3))), rng.standard_normal((6, 4))


def _blocks(x):
    w = np.linspace(-0.5, 0.5, 16).reshape(4, 4)
    block = cr.checkpoint(lambda h: np.tanh(h @ w) @ w, policy="dots")
    for _ in range(3):
        x = block(x)
    return np.sum(x ** 2)


def _cases():
    f = lambda v: np.sum(np.sin(v) ** 3 * np.exp(-v))  # noqa: E731
    return {
        "grad": lambda s: cr.grad(_mlp)(*_inputs(s)),
        "value_and_grad": lambda s: cr.value_and_grad(_mlp, argnums=(0, 1))(*_inputs(s)),
        "vjp": lambda s: cr.vjp(np.sin, np.arange(5.0) + s)[1](np.ones(5)),
        "jvp": lambda s: cr.jvp(f, (np.arange(5.0) + s,), (np.ones(5),)),
        "hvp": lambda s: cr.hvp(f, np.arange(5.0) + s, np.ones(5)),
        "grad_and_hvp": lambda s: cr.grad_and_hvp(f, np.arange(5.0) + s, np.ones(5)),
        "jacobian": lambda s: cr.jacobian(lambda v: np.sin(v) * v)(np.arange(4.0) + s),
        "hessian": lambda s: cr.hessian(f)(np.arange(4.0) + s),
        "hessian_operator": lambda s: cr.hessian_operator(f, np.arange(4.0) + s).matvec(
            np.ones(4)),
        "linearize_grad": lambda s: cr.linearize_grad(f, np.arange(4.0) + s)[1](np.ones(4)),
        "checkpoint_dots": lambda s: cr.grad(_blocks)(np.ones((2, 4)) * (s + 1) * 0.1),
        "grad_of_grad": lambda s: cr.grad(cr.grad(lambda t: np.sin(t) * t ** 2))(0.3 + s),
    }


def _flat(result):
    leaves = cr.pytree.flatten(result)[0]
    return [np.asarray(leaf) for leaf in leaves]


@pytest.mark.parametrize("name", sorted(_cases()))
def test_entry_point_from_eight_threads_matches_single_threaded(name):
    fn = _cases()[name]
    expected = {s: _flat(fn(s)) for s in range(N_THREADS)}
    barrier = threading.Barrier(N_THREADS)
    failures = []

    def worker(seed):
        try:
            barrier.wait()
            for _ in range(ROUNDS):
                got = _flat(fn(seed))
                for a, b in zip(got, expected[seed]):
                    if not np.array_equal(a, b):
                        failures.append((seed, a, b))
        except Exception as e:  # pragma: no cover - reported below
            failures.append((seed, repr(e)))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]


def test_anomaly_mode_is_per_thread():
    """One thread inside detect_anomaly() does not make the others raise."""
    # log(0) = -inf is computed, but only isinf (no derivative) reads it
    f = lambda x: np.sum(x) + np.sum(np.isinf(np.log(np.abs(x) - np.abs(x))))  # noqa: E731
    x = np.array([1.0, 2.0])
    inside, release = threading.Event(), threading.Event()
    errors, anomaly_seen = [], []

    def debugging():
        with cr.detect_anomaly():
            inside.set()
            try:
                with np.errstate(divide="ignore"):
                    cr.grad(f)(x)
            except cr.NumericalInstabilityError:
                anomaly_seen.append(True)
            release.wait(5)

    def working():
        inside.wait(5)
        try:
            for _ in range(20):
                with np.errstate(divide="ignore", invalid="ignore"):
                    g = cr.grad(f)(x)
                np.testing.assert_array_equal(g, [1.0, 1.0])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t0 = threading.Thread(target=debugging)
    workers = [threading.Thread(target=working) for _ in range(N_THREADS - 1)]
    t0.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    release.set()
    t0.join()
    assert anomaly_seen == [True]
    assert not errors, errors
    assert not cr.is_anomaly_enabled()


def test_overlapping_anomaly_blocks_restore_their_own_setting():
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    states = {}

    def a():
        with cr.detect_anomaly():
            a_in.set()
            b_in.wait(5)
        states["a_after"] = cr.is_anomaly_enabled()
        a_out.set()

    def b():
        a_in.wait(5)
        with cr.detect_anomaly():
            b_in.set()
            a_out.wait(5)
            states["b_inside_after_a_left"] = cr.is_anomaly_enabled()
        states["b_after"] = cr.is_anomaly_enabled()

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert states == {"a_after": False, "b_inside_after_a_left": True, "b_after": False}
    assert not cr.is_anomaly_enabled()


def test_anomaly_blocks_nest():
    with cr.detect_anomaly():
        with cr.detect_anomaly(False):
            assert not cr.is_anomaly_enabled()
        assert cr.is_anomaly_enabled()
    assert not cr.is_anomaly_enabled()


def test_anomaly_mode_checks_forward_tangents():
    x = np.array([0.0, 1.0])
    # sqrt's tangent at 0 is infinite while its value is finite
    with cr.detect_anomaly(), np.errstate(divide="ignore"):
        with pytest.raises(cr.NumericalInstabilityError, match="sqrt.*forward-mode"):
            cr.jvp(np.sqrt, (x,), (np.ones(2),))
    with np.errstate(divide="ignore"):
        _, t = cr.jvp(np.sqrt, (x,), (np.ones(2),))
    assert np.isinf(t[0])


def test_node_ids_stay_right_while_threads_grow_the_shared_table():
    """Recording indexes one NodeId table shared by every tape; tapes that
    outgrow it in several threads at once must each get NodeId(n) at
    position n (a wrong id would pull cotangents into the wrong node). With
    threads switching every microsecond, a table grown without a lock gave
    wrong ids in 24 of 30 such trials."""
    from chainrules.rule import NODE_IDS

    n_nodes = 5000
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: provoke interleaved growth
    try:
        for _ in range(5):
            NODE_IDS.clear()  # every thread grows the table from empty
            errors = []
            barrier = threading.Barrier(N_THREADS)

            def record_many():
                tape = cr.Tape()
                barrier.wait()
                ids = [tape.leaf(np.float64(0.0)) for _ in range(n_nodes)]
                if ids != list(range(n_nodes)) or any(type(i) is not cr.NodeId for i in ids):
                    errors.append("ids out of order")

            threads = [threading.Thread(target=record_many) for _ in range(N_THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors
            assert all(int(nid) == i for i, nid in enumerate(NODE_IDS))
    finally:
        sys.setswitchinterval(interval)


def test_a_long_gradient_tape_past_the_node_table():
    """A tape that outgrows the shared NodeId table while recording (from
    empty, three growths) gives the gradient the same multiplications give
    by hand, to the bit."""
    from chainrules.rule import NODE_IDS

    steps = 3000
    NODE_IDS.clear()

    def f(x):
        for _ in range(steps):
            x = x * 1.0001
        return np.sum(x)

    g = cr.grad(f)(np.ones(3))
    expected = 1.0
    for _ in range(steps):   # the reverse sweep's products, in the same order
        expected *= 1.0001
    assert len(NODE_IDS) > steps
    np.testing.assert_array_equal(g, np.full(3, expected))
