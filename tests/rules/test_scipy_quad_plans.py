"""The staged integrands of the quadrature twins' derivatives (rules/scipy_quad.py
through rules/scipy_integrate_plans.py): SciPy's points replay a plan instead
of tracing the integrand, the plans are kept across integrals of the same
integrand, the derivatives are the eager ones bit for bit, and a rebound
global or a closed-over array changed in place is seen."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.tracing import is_traced

pytest.importorskip("scipy.integrate")
from chainrules.rules import scipy_integrate_plans as plans  # noqa: E402
from chainrules.rules import scipy_quad as sq  # noqa: E402
from chainrules.scipy.integrate import dblquad, quad, quad_vec  # noqa: E402

GAIN = 1.0  # a global the integrands read; tests rebind it
TRACED = {"n": 0}  # calls of an integrand with a traced result (tracing it)


def _count(y):
    if is_traced(y):
        TRACED["n"] += 1
    return y


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    plans.clear_shared()
    monkeypatch.setattr(__import__(__name__), "GAIN", 1.0)
    TRACED["n"] = 0
    yield
    plans.clear_shared()


def _eager(rule, key, make):
    return make(rule, key[1])


def _gauss(p):   # a new lambda per call, parameters in args, an infinite limit
    return quad(lambda x, p: _count(GAIN * np.exp(-p[0] * x * x) * np.cos(p[1] * x)),
                0.0, np.inf, args=(p,))[0] ** 2


def _vec(w):     # quad_vec, a closed-over parameter
    return np.sum(quad_vec(lambda x: _count(np.exp(-w * x) * np.sin(x + w)), 0.0, 2.0)[0]
                  ** 2)


def _ignores(t):  # a parameter the integrand does not read: a structural zero
    return quad(lambda x, p, c: _count(np.sum(np.cos(p * x)) / (1 + x * x)), t[0], t[1],
                args=(t[2:4], t[4]))[0]


P = np.array([0.8, 0.6])
W = np.linspace(0.5, 1.5, 4)
T = np.array([0.2, 1.7, 0.5, 1.3, 2.0])
CASES = [(_gauss, P), (_vec, W), (_ignores, T)]


@pytest.mark.parametrize("f, x", CASES)
def test_the_points_replay_a_plan_kept_across_gradients(f, x):
    grad = cr.grad(f)
    grad(x)
    TRACED["n"] = 0
    for s in (1.01, 0.97, 1.05):
        grad(x * s)
    # each later gradient traces the integrand once, for the check of the
    # kept plan at its first point, where eager traces it at every point
    # (tens: 63 at least for quad_vec, which samples 21 points per interval)
    assert TRACED["n"] <= 3
    with pytest.MonkeyPatch.context() as m:
        m.setattr(sq, "staged", _eager)
        TRACED["n"] = 0
        grad(x)
        assert TRACED["n"] >= 21


@pytest.mark.parametrize("f, x", CASES)
def test_staged_derivatives_are_the_eager_ones_bit_for_bit(f, x, monkeypatch):
    v = np.linspace(-1.0, 1.0, x.size)
    calls = [cr.grad(f), lambda x: cr.hvp(f, x, v),
             cr.grad(lambda x: cr.grad(f)(x) @ v)]
    staged = [[c(x * s) for s in (1.0, 1.01, 1.02)] for c in calls]
    monkeypatch.setattr(sq, "staged", _eager)
    eager = [[c(x * s) for s in (1.0, 1.01, 1.02)] for c in calls]
    for got, want in zip(staged, eager):
        for g, e in zip(got, want):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)
    # the plans were used: the integrand's vjp and, for the second
    # derivatives, the jvp of that vjp and the vjp of that vjp
    kinds = {key[-2] for key in plans._shared}
    assert kinds == {"integrand_vjp", "integrand_jvp"}


def test_float32_parameters_keep_their_dtype_and_the_eager_values(monkeypatch):
    def f(p):
        return quad(lambda x, p: np.exp(-p * x * x), 0.0, 1.0, args=(p,))[0]

    p = np.float32(1.5)
    staged = [cr.grad(f)(p), cr.grad(f)(np.float32(1.25)), cr.hvp(f, p, np.float32(1.0))]
    assert plans.shared_info()["entries"] >= 2
    monkeypatch.setattr(sq, "staged", _eager)
    eager = [cr.grad(f)(p), cr.grad(f)(np.float32(1.25)), cr.hvp(f, p, np.float32(1.0))]
    for g, e in zip(staged, eager):
        assert g.dtype == e.dtype == np.float32
        assert g == e


def _exact_grad(p, gain):
    # d/dp of (gain * sqrt(pi / p) / 2)^2 = gain^2 pi / (4 p): -gain^2 pi / (4 p^2)
    return -gain * gain * np.pi / (4 * p * p)


def _rebound(p):
    return quad(lambda x, p: GAIN * np.exp(-p * x * x), 0.0, np.inf, args=(p,))[0] ** 2


def test_a_rebound_global_between_gradients_gives_the_eager_result(monkeypatch):
    grad = cr.grad(_rebound)
    for gain in (1.0, 1.0, 2.5, 2.5, 0.5, 1.5, 3.0):
        monkeypatch.setattr(__import__(__name__), "GAIN", gain)
        assert grad(0.7) == pytest.approx(_exact_grad(0.7, gain), rel=1e-8)
        assert grad(0.9) == pytest.approx(_exact_grad(0.9, gain), rel=1e-8)
    (entry,) = plans._shared.values()
    # the first point of a gradient after each rebinding found the plan
    # stale; after RETRIES such gradients the integrand is staged per
    # integral (the next three rebindings were seen that way)
    assert entry.differed == plans.RETRIES and entry.per_solve


def test_a_closed_over_array_changed_in_place_is_seen():
    scale = np.array([1.0, 2.0])

    def f(p):
        return quad(lambda x: np.sum(scale * np.exp(-p * x * x)), 0.0, 2.0)[0]

    def exact(p, scale):   # d/dp of the integral of sum(scale) exp(-p x^2) over [0, 2]
        xs = np.linspace(0.0, 2.0, 20001)
        return np.sum(scale) * np.trapezoid(-xs * xs * np.exp(-p * xs * xs), xs)

    grad = cr.grad(f)
    for _ in range(2):
        assert grad(0.7) == pytest.approx(exact(0.7, scale), rel=1e-7)
    assert plans.shared_info() == {"entries": 1, "functions": 1}
    scale *= 3.0
    assert grad(0.7) == pytest.approx(exact(0.7, scale), rel=1e-7)
    assert grad(0.8) == pytest.approx(exact(0.8, scale), rel=1e-7)
    # seen before the first point's check: the plan was recorded anew
    assert all(e.differed == 0 for e in plans._shared.values())


def test_dblquad_stages_its_inner_integrals_only():
    def d(c):   # the integral of c x y over 0 < y < c x, 0 < x < 1: c^3 / 8
        return dblquad(lambda y, x: c * x * y, 0.0, 1.0, 0.0, lambda x: c * x)[0]

    for c in (0.7, 0.9):
        assert cr.grad(d)(c) == pytest.approx(3 * c ** 2 / 8, rel=1e-10)
        assert cr.hvp(d, c, 1.0) == pytest.approx(0.75 * c, rel=1e-10)
    # the outer integrand solves an integral at each point: it is not staged
    # (its recordings would be tainted by SciPy's conversions); the inner
    # integrand's derivatives are
    owners = [r() for r, _ in plans._owners.values()]
    assert owners and all(getattr(o, "co_name", getattr(o, "__name__", None)) == "<lambda>"
                          for o in owners)
    assert all(e.jitted.cache_info()["eager"] == 0 for e in plans._shared.values())


def test_the_value_of_a_closure_is_solved_on_copied_cells(monkeypatch):
    # SciPy's solve of the value calls a copy of the integrand whose cells
    # hold the plain values, not the closure conversion's capture at each point
    capture = __import__("chainrules.capture", fromlist=["Capture"])
    runs = []
    base = capture.Capture.run
    monkeypatch.setattr(capture.Capture, "run", lambda self, *a: runs.append(1) or base(self, *a))
    seen = {}

    def f(w):
        out = quad_vec(lambda x: np.exp(-w * x) * np.sin(x + w), 0.0, 2.0, full_output=True)
        seen["neval"] = out[2].neval
        return np.sum(out[0] ** 2)

    with monkeypatch.context() as m:
        m.setattr(sq, "staged", _eager)
        cr.grad(f)(W)
    # eager derivatives: the conversion's first run and the derivative's
    # points (traced), not the value's points (twice as many runs before)
    assert seen["neval"] >= 21 and len(runs) <= seen["neval"] + 2
    del runs[:]
    cr.grad(f)(W)
    del runs[:]
    cr.grad(f)(W * 1.1)
    # staged derivatives: the conversion's first run and the check of the
    # kept plan at the derivative's first point
    assert len(runs) <= 3


def test_a_value_not_seen_at_the_first_evaluation_is_named():
    def g(p, q):   # q is used only for x > 1.5, not at the midpoint 1.0
        return quad(lambda x: p * x + (q * x if x > 1.5 else x), 0.0, 2.0)[0]

    with pytest.raises(cr.UntraceableError, match="did not use at x = 1.0"):
        cr.grad(g, argnums=(0, 1))(1.0, 2.0)


@pytest.mark.parametrize("twin", [quad, quad_vec])
def test_an_integrand_using_its_only_traced_value_elsewhere_is_named(twin):
    # no value being differentiated reaches the integrand at the midpoint,
    # so SciPy integrates on plain values: its plain form still names the
    # value it meets elsewhere (not SciPy's conversion, nor a rule of norm)
    def g(p):
        return np.sum(twin(lambda x: p * x if x > 1.5 else x, 0.0, 2.0)[0])

    with pytest.raises(cr.UntraceableError, match="did not use at x = 1.0"):
        cr.grad(g)(2.0)
    # undifferentiated, the twins are SciPy's functions
    for args in [(), (3.0,)]:
        got = twin(lambda x, *c: x * x + sum(c), 0.0, 2.0, args=args)[0]
        assert np.allclose(got, 8.0 / 3.0 + 2.0 * sum(args))
