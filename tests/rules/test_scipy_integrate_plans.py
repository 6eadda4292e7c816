"""The staged derivatives of an ODE's right-hand side kept across solves
(rules/scipy_integrate_plans.py): recorded once, verified against an eager
evaluation at the start of every later solve, so that a rebound global is
seen, shared by the new function objects of one code whose closed-over
values match, and bounded, weak and thread-safe."""

import gc
import importlib
import threading

import numpy as np
import pytest

import chainrules as cr

pytest.importorskip("scipy.integrate")
from chainrules.rules import scipy_integrate as ode_rules  # noqa: E402
from chainrules.rules import scipy_integrate_plans as plans  # noqa: E402
from chainrules.scipy import integrate as ci  # noqa: E402

jit_module = importlib.import_module("chainrules.jit")
TIGHT = {"rtol": 1e-11, "atol": 1e-12}
T = np.linspace(0.0, 2.0, 6)
Y0 = np.array([1.0, -0.5])
W = np.array([[0.3, -1.0], [1.2, 0.4], [-0.7, 0.9], [0.5, 0.5], [-1.1, 0.2], [0.8, -0.3]])

GAIN = 1.0  # a global the right-hand side reads; tests rebind it


def _decay(y, t, k):
    return -GAIN * k * y


def _exact_grad(k, gain=1.0, scale=np.ones(2)):
    """d/dk of sum(W * y) for y' = -gain * k * scale * y (k a vector)."""
    dt = (T - T[0])[:, None]
    y = Y0 * np.exp(-gain * k * scale * dt)
    return -np.sum(W * gain * scale * dt * y, axis=0)


K = np.array([0.7, 1.3])


def _loss(k, rhs=_decay):
    return np.sum(W * ci.odeint(rhs, Y0, T, args=(k,), **TIGHT))


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    plans.clear_shared()
    monkeypatch.setattr(__import__(__name__), "GAIN", 1.0)
    yield
    plans.clear_shared()


@pytest.fixture(params=["sensitivities", "adjoint"])
def method(request, monkeypatch):
    if request.param == "adjoint":
        monkeypatch.setattr(ode_rules, "SENSITIVITY_MAX_STATE", 0)
    return request.param


class _Recordings:
    """Counts the recordings cr.jit makes."""

    def __init__(self, monkeypatch):
        self.n = 0
        base = jit_module.Recorder
        counter = self

        class Counting(base):
            __slots__ = ()

            def __init__(self):
                counter.n += 1
                super().__init__()

        monkeypatch.setattr(jit_module, "Recorder", Counting)


def test_plans_are_recorded_once_for_many_solves(method, monkeypatch):
    rec = _Recordings(monkeypatch)
    grad = cr.grad(_loss)
    first = grad(K)
    np.testing.assert_allclose(first, _exact_grad(K), rtol=1e-8)
    after_first = rec.n
    assert after_first >= 1
    for k in (K, K * 1.5, K * 0.5):
        np.testing.assert_allclose(grad(k), _exact_grad(k), rtol=1e-8)
    # the later solves replay the first solve's plans (a solver's time of
    # another type may record one more signature, once)
    assert rec.n <= after_first + 1
    assert plans.shared_info() == {"entries": 1, "functions": 1}


def test_a_rebound_global_between_solves_gives_the_eager_result(method, monkeypatch):
    grad = cr.grad(_loss)
    np.testing.assert_allclose(grad(K), _exact_grad(K), rtol=1e-8)
    np.testing.assert_allclose(grad(K), _exact_grad(K), rtol=1e-8)
    monkeypatch.setattr(__import__(__name__), "GAIN", 2.5)
    np.testing.assert_allclose(grad(K), _exact_grad(K, gain=2.5), rtol=1e-8)
    np.testing.assert_allclose(grad(K), _exact_grad(K, gain=2.5), rtol=1e-8)
    monkeypatch.setattr(__import__(__name__), "GAIN", 0.5)
    np.testing.assert_allclose(grad(K), _exact_grad(K, gain=0.5), rtol=1e-8)
    # a third difference: this right-hand side is staged per solve from now
    monkeypatch.setattr(__import__(__name__), "GAIN", 1.5)
    np.testing.assert_allclose(grad(K), _exact_grad(K, gain=1.5), rtol=1e-8)
    assert any(e.per_solve for e in plans._shared.values())
    monkeypatch.setattr(__import__(__name__), "GAIN", 3.0)
    np.testing.assert_allclose(grad(K), _exact_grad(K, gain=3.0), rtol=1e-8)


def test_a_closed_over_array_changed_in_place_is_seen(method):
    scale = np.array([1.0, 2.0])

    def rhs(y, t, k):
        return -k * scale * y           # read by reference by the plan

    def rhs_folded(y, t, k):
        return -k * np.exp(np.log(scale)) * y   # folded when recorded: a constant

    for f in (rhs, rhs_folded):
        scale[:] = [1.0, 2.0]
        grad = cr.grad(lambda k: _loss(k, f))
        np.testing.assert_allclose(grad(K), _exact_grad(K, scale=scale), rtol=1e-8)
        np.testing.assert_allclose(grad(K), _exact_grad(K, scale=scale), rtol=1e-8)
        scale *= np.array([0.5, 3.0])
        np.testing.assert_allclose(grad(K), _exact_grad(K, scale=scale), rtol=1e-8)


def test_a_closure_over_a_traced_value_records_through_each_solve():
    # one function object whose closed-over traced value differs per solve:
    # the plans kept stand the closed-over value in as a parameter
    box = {}

    def rhs(y, t):
        return -box["k"] * y

    def loss(k):
        box["k"] = k
        return np.sum(W * ci.odeint(rhs, Y0, T, **TIGHT))

    for k in (K, K * 2.0, K * 0.3):
        np.testing.assert_allclose(cr.grad(loss)(k), _exact_grad(k), rtol=1e-8)
    assert plans.shared_info()["functions"] == 1


def test_solve_ivp_and_a_pytree_state_share_plans(monkeypatch):
    rec = _Recordings(monkeypatch)

    def rhs(t, y, k):
        return {"a": -k[0] * y["a"], "b": -k[1] * y["b"]}

    def loss(k):
        sol = ci.solve_ivp(rhs, (0.0, 2.0), {"a": Y0[0], "b": Y0[1]}, t_eval=T[1:],
                           args=(k,), **TIGHT)
        return np.sum(W[1:, 0] * sol.y["a"]) + np.sum(W[1:, 1] * sol.y["b"])

    np.testing.assert_allclose(cr.grad(loss)(K), _exact_grad(K), rtol=1e-7)
    n = rec.n
    np.testing.assert_allclose(cr.grad(loss)(K * 2), _exact_grad(K * 2), rtol=1e-7)
    assert rec.n <= n + 1
    assert plans.shared_info()["functions"] == 1


def test_two_threads_share_plans():
    ks = [K * (1 + 0.1 * i) for i in range(6)]
    expected = [_exact_grad(k) for k in ks]
    grad = cr.grad(_loss)
    out = [None] * len(ks)
    errors = []

    def work(idx):
        try:
            for i in idx:
                out[i] = grad(ks[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(range(j, len(ks), 2),)) for j in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got, want, rtol=1e-8)


def test_the_cache_is_bounded_and_does_not_keep_functions_alive(monkeypatch):
    monkeypatch.setattr(plans, "MAX_SHARED", 2)

    def make(c):
        def rhs(y, t, k):
            return -c * k * y
        return rhs

    # one code, three closed-over numbers: three kept derivatives, one owner
    for c in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(cr.grad(lambda k: _loss(k, make(c)))(K),
                                   _exact_grad(K, gain=c), rtol=1e-8)
    assert plans.shared_info() == {"entries": 2, "functions": 1}
    # the least recently used (c = 1) went first: solved anew, right
    np.testing.assert_allclose(cr.grad(lambda k: _loss(k, make(1.0)))(K), _exact_grad(K),
                               rtol=1e-8)
    assert plans.shared_info() == {"entries": 2, "functions": 1}
    # the functions are not held, their code weakly: plans of a code made
    # at run time go with it
    space = {"np": np}
    exec(compile("def rhs(y, t, k):\n    return -k * y\n", "<generated>", "exec"), space)
    np.testing.assert_allclose(cr.grad(lambda k: _loss(k, space["rhs"]))(K), _exact_grad(K),
                               rtol=1e-8)
    assert plans.shared_info() == {"entries": 2, "functions": 2}
    del space
    gc.collect()
    assert plans.shared_info() == {"entries": 1, "functions": 1}


def test_one_function_keeps_at_most_its_share_of_the_cache(monkeypatch):
    monkeypatch.setattr(plans, "MAX_SHARED", 4)
    monkeypatch.setattr(plans, "MAX_PER_FUNCTION", 2)

    def make(c):
        def rhs(y, t, k):
            return -c * k * y
        return rhs

    # another function's derivative, kept first
    np.testing.assert_allclose(cr.grad(lambda k: _loss(k, _decay))(K), _exact_grad(K),
                               rtol=1e-8)
    # one code closing over a new number at every solve: it replaces its own
    for c in (1.0, 2.0, 3.0, 4.0, 5.0):
        np.testing.assert_allclose(cr.grad(lambda k: _loss(k, make(c)))(K),
                                   _exact_grad(K, gain=c), rtol=1e-8)
        assert plans.shared_info() == {"entries": min(3, 1 + int(c)), "functions": 2}
    # the first function's plan was kept: its next solve records nothing
    rec = _Recordings(monkeypatch)
    np.testing.assert_allclose(cr.grad(lambda k: _loss(k, _decay))(K), _exact_grad(K),
                               rtol=1e-8)
    assert rec.n == 0


def test_a_new_lambda_per_loss_call_reuses_the_plans(method, monkeypatch):
    rec = _Recordings(monkeypatch)

    def loss(k):
        return np.sum(W * ci.odeint(lambda y, t: _decay(y, t, k), Y0, T, **TIGHT))

    grad = cr.grad(loss)
    np.testing.assert_allclose(grad(K), _exact_grad(K), rtol=1e-8)
    after_first = rec.n
    assert after_first >= 1
    # the closed-over parameter changes every call: read by the plan as an input
    for k in (K * 1.5, K * 0.5, K * 3.0):
        np.testing.assert_allclose(grad(k), _exact_grad(k), rtol=1e-8)
    assert rec.n <= after_first + 1
    assert plans.shared_info() == {"entries": 1, "functions": 1}


def test_closed_over_values_of_another_kind_or_value_record_anew(monkeypatch):
    rec = _Recordings(monkeypatch)

    def make(scale):
        def rhs(y, t, k):
            return -k * scale * y
        return rhs

    def grad_with(scale, k=K):
        return cr.grad(lambda k: _loss(k, make(scale)))(k)

    one = np.array([1.0, 2.0])
    np.testing.assert_allclose(grad_with(one), _exact_grad(K, scale=one), rtol=1e-8)
    n = rec.n
    # a new array with the same values: the same plans
    np.testing.assert_allclose(grad_with(one.copy(), K * 2), _exact_grad(K * 2, scale=one),
                               rtol=1e-8)
    assert rec.n <= n + 1
    assert plans.shared_info()["entries"] == 1
    # other values, another shape (broadcast), a number: each recorded anew
    other = np.array([0.5, 3.0])
    np.testing.assert_allclose(grad_with(other), _exact_grad(K, scale=other), rtol=1e-8)
    np.testing.assert_allclose(grad_with(np.array([2.0])), _exact_grad(K, scale=2.0),
                               rtol=1e-8)
    np.testing.assert_allclose(grad_with(2.5), _exact_grad(K, scale=2.5), rtol=1e-8)
    assert plans.shared_info() == {"entries": 4, "functions": 1}
    # the array the first plan was recorded with, changed in place, and a new
    # one with its old values: the plan may read the first, so it records anew
    kept = one
    np.testing.assert_allclose(grad_with(kept), _exact_grad(K, scale=one), rtol=1e-8)
    kept *= 4.0
    np.testing.assert_allclose(grad_with(np.array([1.0, 2.0])),
                               _exact_grad(K, scale=np.array([1.0, 2.0])), rtol=1e-8)
    np.testing.assert_allclose(grad_with(kept), _exact_grad(K, scale=kept), rtol=1e-8)
    # seen before the solve's first point is checked against eager
    assert all(e.differed == 0 for e in plans._shared.values())


def test_an_entry_recorded_through_too_many_arrays_is_no_longer_shared(monkeypatch):
    monkeypatch.setattr(plans, "_MAX_READ", 0)

    def make(scale):
        def rhs(y, t, k):
            return -k * scale * y
        return rhs

    one = np.array([1.0, 2.0])
    for k in (K, K * 2.0, K * 0.5):
        np.testing.assert_allclose(cr.grad(lambda k: _loss(k, make(one.copy())))(k),
                                   _exact_grad(k, scale=one), rtol=1e-8)
    (entry,) = plans._shared.values()
    assert entry.per_solve and entry.read == []


def test_objects_closed_over_are_compared_by_identity():
    class Gain:
        def __init__(self, g):
            self.g = g

    def make(gain):
        def rhs(y, t, k):
            return -gain.g * k * y
        return rhs

    a, b = Gain(1.0), Gain(2.0)
    for _ in range(2):
        for obj in (a, b):
            np.testing.assert_allclose(cr.grad(lambda k: _loss(k, make(obj)))(K),
                                       _exact_grad(K, gain=obj.g), rtol=1e-8)
    assert plans.shared_info() == {"entries": 2, "functions": 1}
    # the kept plans hold the objects weakly: one that dies takes its plans'
    # use with it (its identity may be reused)
    assert sorted(e.held[-1]() is a for e in plans._shared.values()) == [False, True]
    del a
    gc.collect()
    assert sum(e.held[-1]() is None for e in plans._shared.values()) == 1


def test_a_closure_over_a_list_is_its_own_key(monkeypatch):
    rec = _Recordings(monkeypatch)
    box = [1.0]

    def rhs_one(y, t, k):
        return -box[0] * k * y

    for k in (K, K * 2.0):
        np.testing.assert_allclose(cr.grad(lambda k: _loss(k, rhs_one))(k), _exact_grad(k),
                                   rtol=1e-8)
        n = n if k is not K else rec.n
    assert rec.n == n  # the one function object: its plans kept
    assert plans.shared_info() == {"entries": 1, "functions": 1}
    del rhs_one
    gc.collect()

    def loss(k):
        box = [k]

        def rhs(y, t):
            return -box[0] * y
        return np.sum(W * ci.odeint(rhs, Y0, T, **TIGHT))

    for k in (K, K * 2.0):
        np.testing.assert_allclose(cr.grad(loss)(k), _exact_grad(k), rtol=1e-8)
    gc.collect()
    # keyed by the function itself, held weakly: gone with it
    assert plans.shared_info() == {"entries": 0, "functions": 0}


def test_a_rebound_global_with_new_lambdas_gives_the_eager_result(monkeypatch):
    def loss(k):
        return np.sum(W * ci.odeint(lambda y, t: _decay(y, t, k), Y0, T, **TIGHT))

    for gain in (1.0, 1.0, 2.5, 2.5, 0.5):
        monkeypatch.setattr(__import__(__name__), "GAIN", gain)
        np.testing.assert_allclose(cr.grad(loss)(K), _exact_grad(K, gain=gain), rtol=1e-8)


def test_two_threads_with_new_closures_share_plans():
    ks = [K * (1 + 0.1 * i) for i in range(6)]
    expected = [_exact_grad(k) for k in ks]

    def loss(k):
        def rhs(y, t):
            return -k * y
        return np.sum(W * ci.odeint(rhs, Y0, T, **TIGHT))

    grad = cr.grad(loss)
    out = [None] * len(ks)
    errors = []

    def work(idx):
        try:
            for i in idx:
                out[i] = grad(ks[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(range(j, len(ks), 2),)) for j in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got, want, rtol=1e-8)
    assert plans.shared_info() == {"entries": 1, "functions": 1}


def test_a_function_that_cannot_be_referenced_weakly_is_staged_per_solve():
    class Rhs:
        __slots__ = ()

        def __call__(self, y, t, k):
            return -k * y

    rhs = Rhs()
    for _ in range(2):
        np.testing.assert_allclose(cr.grad(lambda k: _loss(k, rhs))(K), _exact_grad(K),
                                   rtol=1e-8)
    assert plans.shared_info() == {"entries": 0, "functions": 0}


def test_bound_methods_share_plans_per_object():
    class Model:
        def __init__(self, gain):
            self.gain = gain

        def rhs(self, y, t, k):
            return -self.gain * k * y

    a, b = Model(1.0), Model(2.0)
    for _ in range(2):
        np.testing.assert_allclose(cr.grad(lambda k: _loss(k, a.rhs))(K), _exact_grad(K),
                                   rtol=1e-8)
        np.testing.assert_allclose(cr.grad(lambda k: _loss(k, b.rhs))(K),
                                   _exact_grad(K, gain=2.0), rtol=1e-8)
    assert plans.shared_info() == {"entries": 2, "functions": 2}
    del a
    gc.collect()
    assert plans.shared_info() == {"entries": 1, "functions": 1}


def test_sensitivities_with_an_unused_parameter_and_y0():
    # the staged sensitivity system: a parameter the right-hand side does
    # not read has zero sensitivities; y0's columns start from the identity
    def rhs(y, t, k, unused):
        return -k * y

    def loss(k, y0, unused):
        return np.sum(W * ci.odeint(rhs, y0, T, args=(k, unused), **TIGHT))

    for _ in range(2):
        gk, gy0, gu = cr.grad(loss, argnums=(0, 1, 2))(K, Y0, np.array([0.3, 2.0]))
        np.testing.assert_allclose(gk, _exact_grad(K), rtol=1e-8)
        np.testing.assert_allclose(gy0, np.sum(W * np.exp(-(T - T[0])[:, None] * K), axis=0),
                                   rtol=1e-8)
        np.testing.assert_array_equal(gu, np.zeros(2))


def test_the_sensitivity_plan_does_not_grow_with_the_directions(monkeypatch):
    # the staged sensitivity system takes flat arrays and numbers, and its
    # batched forward sweep indexes and stacks all directions at once: y0
    # traced (4 directions) gives a plan as long as y0 constant (2)
    def osc(y, t, k):
        return np.stack([y[1], -k[0] * y[0] - k[1] * y[1]])

    def loss(k, y0):
        return np.sum(W * ci.odeint(osc, y0, T, args=(k,), **TIGHT))

    seen = {}
    staged_rhs = ode_rules.sensitivity_rhs

    def capture(spec, y, zs, s, params, pidx):
        seen[zs.shape[0]] = (spec, (y, zs, s, *params), pidx)
        return staged_rhs(spec, y, zs, s, params, pidx)

    monkeypatch.setattr(ode_rules, "sensitivity_rhs", capture)
    k = np.array([2.0, 0.3])
    for argnums in (0, (0, 1)):
        got = cr.grad(loss, argnums=argnums)(k, Y0)
        with monkeypatch.context() as m:
            m.setattr(ode_rules, "SENSITIVITY_MAX_STATE", 0)  # the adjoint method
            want = cr.grad(loss, argnums=argnums)(k, Y0)
        for g, w in zip(got if argnums else [got], want if argnums else [want]):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
    assert sorted(seen) == [2, 4]
    steps = []
    for spec, args, pidx in seen.values():
        assert all(type(a) in (np.ndarray, np.float64, float) for a in args)
        (entry,) = [e for key, e in plans._shared.items() if key[-2] == "sensitivity"]
        plan = entry.jitted.plan(*args)
        steps.append(plan.num_steps)
        # the replay is the eager evaluation
        np.testing.assert_array_equal(plan(*args),
                                      ode_rules._sensitivity_rhs_of(spec, pidx)(*args))
    assert steps[0] == steps[1]
