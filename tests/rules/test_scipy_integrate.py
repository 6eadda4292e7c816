"""chainrules.scipy.integrate: ODE solutions differentiated by the adjoint
method (w.r.t. initial state, args and time points) against closed forms and
finite differences; quadrature; plain SciPy errors naming the twins."""

import importlib.util
import pathlib

import numpy as np
import pytest

import chainrules as cr

si = pytest.importorskip("scipy.integrate")
sl = pytest.importorskip("scipy.linalg")
from chainrules.scipy import integrate as ci  # noqa: E402

TIGHT = {"rtol": 1e-11, "atol": 1e-12}
RNG = np.random.default_rng(0)
A0 = np.array([[-0.5, 1.0], [-1.0, -0.3]])
Y0 = np.array([1.0, -0.5])
T = np.array([0.2, 0.7, 1.5, 2.0])
W = RNG.normal(size=(4, 2))


def _linear(y, t, a):
    return a @ y


def _closed(y0, t, a):
    """y(t_i) = expm(A (t_i - t_0)) y0, with SciPy's expm."""
    return np.stack([sl.expm(a * (ti - t[0])) @ y0 for ti in t])


def _fd_grad(f, x, h=1e-6):
    x = np.asarray(x, float)
    out = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = h
        out[idx] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def test_linear_ode_gradients_match_the_closed_form():
    def loss(y0, t, a):
        return np.sum(W * ci.odeint(_linear, y0, t, args=(a,), **TIGHT))
    np.testing.assert_allclose(ci.odeint(_linear, Y0, T, args=(A0,), **TIGHT),
                               _closed(Y0, T, A0), rtol=1e-9, atol=1e-10)
    gy0, gt, ga = cr.grad(loss, argnums=(0, 1, 2))(Y0, T, A0)
    ref = lambda y0, t, a: np.sum(W * _closed(y0, t, a))  # noqa: E731
    np.testing.assert_allclose(gy0, _fd_grad(lambda v: ref(v, T, A0), Y0), rtol=1e-7,
                               atol=1e-8)
    np.testing.assert_allclose(gt, _fd_grad(lambda v: ref(Y0, v, A0), T), rtol=1e-7,
                               atol=1e-8)
    np.testing.assert_allclose(ga, _fd_grad(lambda v: ref(Y0, T, v), A0), rtol=1e-7,
                               atol=1e-8)
    # the exact derivative w.r.t. y0 is sum_i expm(A (t_i - t_0))^T w_i
    exact = sum(sl.expm(A0 * (ti - T[0])).T @ W[i] for i, ti in enumerate(T))
    np.testing.assert_allclose(gy0, exact, rtol=1e-8)


def test_linear_ode_forward_mode():
    dy0, dt, da = RNG.normal(size=2), RNG.normal(size=4) * .1, RNG.normal(size=(2, 2))
    out = cr.jvp(lambda y0, t, a: ci.odeint(_linear, y0, t, args=(a,), **TIGHT),
                 (Y0, T, A0), (dy0, dt, da))[1]
    h = 1e-6
    fd = (_closed(Y0 + h * dy0, T + h * dt, A0 + h * da)
          - _closed(Y0 - h * dy0, T - h * dt, A0 - h * da)) / (2 * h)
    np.testing.assert_allclose(out, fd, rtol=1e-7, atol=1e-8)


def _lotka(y, t, p):
    a, b, c, d = p[0], p[1], p[2], p[3]
    return np.stack([a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]])


def test_nonlinear_ode_against_finite_differences():
    p = np.array([1.1, 0.4, 0.1, 0.4])
    y0 = np.array([2.0, 1.0])
    t = np.linspace(0, 3, 7)

    def loss(y0, p):
        return np.sum(ci.odeint(_lotka, y0, t, args=(p,), **TIGHT) ** 2)

    def plain(y0, p):
        return np.sum(si.odeint(_lotka, y0, t, args=(p,), **TIGHT) ** 2)

    gy0, gp = cr.grad(loss, argnums=(0, 1))(y0, p)
    np.testing.assert_allclose(gy0, _fd_grad(lambda v: plain(v, p), y0, 1e-5), rtol=1e-6)
    np.testing.assert_allclose(gp, _fd_grad(lambda v: plain(y0, v), p, 1e-5), rtol=1e-6)


def test_solve_ivp_gradients():
    p = np.array([1.1, 0.4, 0.1, 0.4])
    y0 = np.array([2.0, 1.0])
    te = np.linspace(0.5, 2.8, 5)

    def rhs(t, y, p):
        return _lotka(y, t, p)

    def loss(y0, te, p):
        sol = ci.solve_ivp(rhs, (0.0, 3.0), y0, method="DOP853", t_eval=te, args=(p,),
                           **TIGHT)
        return np.sum(sol.y ** 2)

    def plain(y0, te, p):
        sol = si.solve_ivp(rhs, (0.0, 3.0), y0, method="DOP853", t_eval=te, args=(p,),
                           **TIGHT)
        return np.sum(sol.y ** 2)

    assert abs(loss(y0, te, p) - plain(y0, te, p)) < 1e-9
    g = cr.grad(loss, argnums=(0, 1, 2))(y0, te, p)
    for k, x in enumerate((y0, te, p)):
        args = [y0, te, p]

        def f(v, k=k):
            args2 = list(args)
            args2[k] = v
            return plain(*args2)
        np.testing.assert_allclose(g[k], _fd_grad(f, x, 1e-5), rtol=1e-6, atol=1e-7)


def test_solve_ivp_without_t_eval_uses_the_solver_times():
    def rhs(t, y, k):
        return -k * y
    k = np.array([0.7, 0.3])
    ref = si.solve_ivp(rhs, (0.0, 2.0), Y0, args=(k,), **TIGHT)
    sol = ci.solve_ivp(rhs, (0.0, 2.0), Y0, args=(cr.stop_gradient(k),), **TIGHT)
    out, back = cr.vjp(lambda y0: ci.solve_ivp(rhs, (0.0, 2.0), y0, args=(k,), **TIGHT).y,
                       Y0)
    assert out.shape == ref.y.shape and sol.y.shape == ref.y.shape
    np.testing.assert_allclose(out, ref.y, rtol=1e-9, atol=1e-12)
    w = RNG.normal(size=ref.y.shape)
    # y(t) = y0 exp(-k t): the cotangent of y0 is sum_j w[:, j] exp(-k t_j)
    np.testing.assert_allclose(back(w)[0], np.sum(w * np.exp(-k[:, None] * ref.t), axis=1),
                               rtol=1e-8)


def test_quadrature():
    x = np.sort(RNG.uniform(0, 2, size=7))
    y = RNG.normal(size=(3, 7))
    for name in ("trapezoid", "cumulative_trapezoid"):
        mine, ref = getattr(ci, name), getattr(si, name)
        np.testing.assert_allclose(cr.stop_gradient(mine(cr.stop_gradient(y), x=x)),
                                   ref(y, x=x))
        w = RNG.normal(size=np.shape(ref(y, x=x)))
        gy, gx = cr.grad(lambda y, x: np.sum(w * mine(y, x=x)), argnums=(0, 1))(y, x)
        np.testing.assert_allclose(gy, _fd_grad(lambda v: np.sum(w * ref(v, x=x)), y),
                                   rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(gx, _fd_grad(lambda v: np.sum(w * ref(y, x=v)), x),
                                   rtol=1e-7, atol=1e-9)
    out = ci.cumulative_trapezoid(y.T, dx=0.5, axis=0, initial=0)
    np.testing.assert_allclose(out, si.cumulative_trapezoid(y.T, dx=0.5, axis=0, initial=0))
    gy = cr.grad(lambda v: np.sum(ci.cumulative_trapezoid(v, dx=.5, axis=0, initial=0)))(y.T)
    np.testing.assert_allclose(gy, _fd_grad(lambda v: np.sum(si.cumulative_trapezoid(
        v, dx=.5, axis=0, initial=0)), y.T), rtol=1e-7)
    for n in (6, 7):   # even and odd numbers of samples
        w = RNG.normal(size=3)
        f = lambda v, n=n: np.sum(w * ci.simpson(v, x=x[:n]))  # noqa: E731
        np.testing.assert_allclose(f(y[:, :n]), np.sum(w * si.simpson(y[:, :n], x=x[:n])))
        g = cr.grad(f)(y[:, :n])
        np.testing.assert_allclose(g, _fd_grad(
            lambda v: np.sum(w * si.simpson(v, x=x[:n])), y[:, :n]), rtol=1e-7)


@pytest.mark.parametrize("name, call", [
    ("odeint", lambda y: si.odeint(_linear, y, T, args=(A0,))),
    ("solve_ivp", lambda y: si.solve_ivp(lambda t, v: -v, (0, 1), y).y),
    ("trapezoid", lambda y: si.trapezoid(y)),
    ("simpson", lambda y: si.simpson(y)),
    ("cumulative_trapezoid", lambda y: si.cumulative_trapezoid(y)),
])
def test_plain_scipy_error_names_the_twin(name, call):
    with pytest.raises(cr.UntraceableError, match=f"chainrules.scipy.integrate.{name} "):
        cr.grad(lambda y: np.sum(call(y)))(np.ones(2))


def test_params_in_args_reach_the_twin_hint():
    with pytest.raises(cr.UntraceableError, match="chainrules.scipy.integrate.odeint "):
        cr.grad(lambda a: np.sum(si.odeint(_linear, Y0, T, args=(a,))))(A0)


def test_neural_ode_example_quick():
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "neural_ode.py"
    spec = importlib.util.spec_from_file_location("neural_ode", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    first, last = mod.main(quick=True)
    assert last < 0.05 * first


def test_nested_args_are_differentiated_leaf_by_leaf():
    """autograd's neural-ODE pattern: args=(params,) with params a list of
    (W, b) pairs; every leaf gets its gradient, odeint and solve_ivp agree,
    and they match central differences of SciPy's own solution."""
    import scipy.integrate as si

    from chainrules.scipy.integrate import odeint, solve_ivp

    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(2, 3)) * 0.3, rng.normal(size=3) * 0.1),
              (rng.normal(size=(3, 2)) * 0.3, rng.normal(size=2) * 0.1)]

    def rhs(y, t, p):
        return np.tanh(y @ p[0][0] + p[0][1]) @ p[1][0] + p[1][1]

    t = np.linspace(0.0, 1.0, 5)
    y0 = np.array([1.0, -0.5])
    tol = dict(rtol=1e-10, atol=1e-10)
    g = cr.grad(lambda p: np.sum(odeint(rhs, y0, t, args=(p,), **tol) ** 2))(params)
    g2 = cr.grad(lambda p: np.sum(solve_ivp(lambda s, y, q: rhs(y, s, q), (0.0, 1.0), y0,
                                            t_eval=t[1:], args=(p,), method="LSODA",
                                            **tol).y ** 2))(params)
    assert isinstance(g, list) and len(g) == 2 and g[1][0].shape == (3, 2)

    def loss_np(p):
        return np.sum(si.odeint(rhs, y0, t, args=(p,), **tol) ** 2)

    # central differences of solutions accurate to about 1e-10: a step of
    # 1e-4 keeps the solver's error over the step (1e-6) and the truncation
    # error (1e-8) below the tolerance; 1e-6 measured errors up to 7e-5
    h = 1e-4
    for layer, part, index in ((0, 0, (1, 2)), (0, 1, (0,)), (1, 0, (2, 1)), (1, 1, (1,))):
        plus = [[a.copy() for a in pair] for pair in params]
        minus = [[a.copy() for a in pair] for pair in params]
        plus[layer][part][index] += h
        minus[layer][part][index] -= h
        fd = (loss_np(plus) - loss_np(minus)) / (2 * h)
        np.testing.assert_allclose(g[layer][part][index], fd, rtol=1e-5)
        np.testing.assert_allclose(g2[layer][part][index], fd, rtol=1e-4)


# -- right-hand sides that close over values being differentiated ----------------
K = np.array([0.7, 0.3])


def _decay(k, y0, t):
    """y' = -k y: y(t_i) = y0 exp(-k (t_i - t_0)), per component."""
    return y0 * np.exp(-np.outer(np.asarray(t) - t[0], k))


def test_odeint_closure_over_traced_k():
    w = RNG.normal(size=(len(T), 2))

    def loss(k, y0, t):
        def rhs(y, s):
            return -k * y                      # k is not an argument: a closure
        return np.sum(w * ci.odeint(rhs, y0, t, **TIGHT))

    np.testing.assert_allclose(loss(K, Y0, T), np.sum(w * _decay(K, Y0, T)), rtol=1e-9)
    gk, gy0, gt = cr.grad(loss, argnums=(0, 1, 2))(K, Y0, T)
    # d/dk_j sum_i w_ij y0_j exp(-k_j (t_i - t_0)) = -sum_i w_ij (t_i - t_0) y_ij
    dt = (T - T[0])[:, None]
    np.testing.assert_allclose(gk, -np.sum(w * dt * _decay(K, Y0, T), axis=0), rtol=1e-8)
    np.testing.assert_allclose(gy0, np.sum(w * np.exp(-dt * K), axis=0), rtol=1e-8)
    ref = lambda t: np.sum(w * _decay(K, Y0, t))  # noqa: E731
    np.testing.assert_allclose(gt, _fd_grad(ref, T), rtol=1e-6, atol=1e-8)
    # forward mode: the tangent of the solution along dk
    dk = np.array([1.0, -2.0])
    tan = cr.jvp(lambda k: loss(k, Y0, T), (K,), (dk,))[1]
    np.testing.assert_allclose(tan, gk @ dk, rtol=1e-8)
    # a traced scalar k closed over, the same as passing it in args
    g_cl = cr.grad(lambda k: np.sum(ci.odeint(lambda y, s: -k * y, Y0, T, **TIGHT)))(0.5)
    g_args = cr.grad(lambda k: np.sum(ci.odeint(lambda y, s, k: -k * y, Y0, T, args=(k,),
                                                **TIGHT)))(0.5)
    np.testing.assert_allclose(g_cl, g_args, rtol=1e-12)
    np.testing.assert_allclose(g_cl, -np.sum((T - T[0])[:, None] * _decay(
        np.array([0.5, 0.5]), Y0, T)), rtol=1e-8)


def test_solve_ivp_closure_over_traced_k():
    te = np.linspace(0.3, 2.0, 5)
    w = RNG.normal(size=(2, len(te)))

    def loss(k, y0):
        sol = ci.solve_ivp(lambda s, y: -k * y, (0.0, 2.0), y0, t_eval=te, method="DOP853",
                           **TIGHT)
        return np.sum(w * sol.y)

    gk, gy0 = cr.grad(loss, argnums=(0, 1))(K, Y0)
    y = _decay(K, Y0, np.concatenate([[0.0], te]))[1:].T       # (2, len(te))
    np.testing.assert_allclose(gk, -np.sum(w * te * y, axis=1), rtol=1e-8)
    np.testing.assert_allclose(gy0, np.sum(w * np.exp(-np.outer(K, te)), axis=1), rtol=1e-8)
    # without t_eval: differentiated at the solver's own times
    out, back = cr.vjp(lambda k: ci.solve_ivp(lambda s, y: -k * y, (0.0, 2.0), Y0,
                                              **TIGHT).y, K)
    ts = si.solve_ivp(lambda s, y: -K * y, (0.0, 2.0), Y0, **TIGHT).t
    assert out.shape == (2, len(ts))
    w2 = RNG.normal(size=out.shape)
    np.testing.assert_allclose(back(w2)[0], -np.sum(w2 * ts * Y0[:, None] * np.exp(
        -np.outer(K, ts)), axis=1), rtol=1e-7)


@pytest.mark.parametrize("solver", ["odeint", "solve_ivp"])
def test_closure_over_a_traced_pytree_of_parameters(solver):
    rng = np.random.default_rng(3)
    params = [(rng.normal(size=(2, 3)) * 0.3, rng.normal(size=3) * 0.1),
              (rng.normal(size=(3, 2)) * 0.3, rng.normal(size=2) * 0.1)]
    t = np.linspace(0.0, 1.0, 5)
    y0 = np.array([1.0, -0.5])
    tol = dict(rtol=1e-10, atol=1e-10)

    def field(y, p):
        return np.tanh(y @ p[0][0] + p[0][1]) @ p[1][0] + p[1][1]

    def loss(p):
        if solver == "odeint":
            ys = ci.odeint(lambda y, s: field(y, p), y0, t, **tol)
        else:
            ys = ci.solve_ivp(lambda s, y: field(y, p), (0.0, 1.0), y0, t_eval=t[1:],
                              method="LSODA", **tol).y
        return np.sum(ys ** 2)

    def plain(p):
        return np.sum(si.odeint(lambda y, s: field(y, p), y0, t, **tol)[1:] ** 2) + (
            np.sum(y0 ** 2) if solver == "odeint" else 0.0)

    g = cr.grad(loss)(params)
    assert isinstance(g, list) and g[1][0].shape == (3, 2)
    # central differences of solutions accurate to about 1e-10: a step of
    # 1e-4 keeps the solver's error over the step (1e-6) and the truncation
    # error (1e-8) below the tolerance; 1e-6 measured errors up to 7e-5
    h = 1e-4
    for layer, part, index in ((0, 0, (1, 2)), (0, 1, (0,)), (1, 0, (2, 1)), (1, 1, (1,))):
        plus = [[a.copy() for a in pair] for pair in params]
        minus = [[a.copy() for a in pair] for pair in params]
        plus[layer][part][index] += h
        minus[layer][part][index] -= h
        fd = (plain(plus) - plain(minus)) / (2 * h)
        np.testing.assert_allclose(g[layer][part][index], fd, rtol=1e-4)
    # the same gradient as with the parameters passed in args
    g_args = cr.grad(lambda p: np.sum(ci.odeint(lambda y, s, q: field(y, q), y0, t,
                                                args=(p,), **tol) ** 2))(params)
    if solver == "odeint":
        for pair, pair_args in zip(g, g_args):
            for a, b in zip(pair, pair_args):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_closure_forward_solve_reads_its_values_from_copied_cells(monkeypatch):
    # the forward solve on plain values runs a copy of the right-hand side
    # whose cells hold the plain values, not the closure conversion's capture
    capture = importlib.import_module("chainrules.capture")
    runs = []
    base = capture.Capture.run
    monkeypatch.setattr(capture.Capture, "run", lambda self, *a: runs.append(1) or base(self, *a))
    w = np.random.default_rng(5).normal(size=(len(T), 2))
    t = np.linspace(0.0, 20.0, 4)
    steps = []

    def loss(k, c, via_global):
        def rhs(y, s):
            steps.append(1)                         # a cell that is not replaced
            kk = GLOBAL_K[0] if via_global else k   # a traced global: the conversion
            return -kk * y + c * np.sin(s)
        GLOBAL_K[:] = [k]
        return np.sum(w * ci.odeint(rhs, Y0, t, **TIGHT))

    def plain(k, c):
        return np.sum(w * si.odeint(lambda y, s: -k * y + c * np.sin(s), Y0, t, **TIGHT))

    fd = _fd_grad(lambda x: plain(x[:2], x[2]), np.r_[K, 0.3], h=1e-5)
    for via_global in (False, True):
        runs.clear()
        steps.clear()
        gk, gc = cr.grad(loss, argnums=(0, 1))(K, 0.3, via_global)
        np.testing.assert_allclose(np.r_[gk, gc], fd, rtol=1e-5, atol=1e-7)
        assert len(steps) > 100
        if via_global:
            assert len(runs) > 100
        else:
            assert len(runs) < 10


GLOBAL_K = [None]


def test_checkpoint_around_an_ode_with_a_closure():
    def loss(k, on):
        def solve(y0):
            return ci.odeint(lambda y, s: -k * y, y0, T, **TIGHT)
        seg = cr.checkpoint(solve) if on else solve
        return np.sum(seg(Y0 * k[0]))

    np.testing.assert_allclose(cr.grad(loss)(K, True), cr.grad(loss)(K, False), rtol=1e-12)


def test_closure_errors():
    def branchy(k, k2):
        def rhs(y, s):
            return -k * y if s < 1.0 else -k2 * y   # k2 unseen at the initial point
        return np.sum(ci.odeint(rhs, Y0, T, **TIGHT))

    for argnums in ((0, 1), 1):
        with pytest.raises(cr.UntraceableError, match="rhs of chainrules.scipy.integrate."
                                                      "odeint .* initial point"):
            cr.grad(branchy, argnums=argnums)(0.5, 0.3)
    # nothing traced: SciPy's own result
    np.testing.assert_array_equal(ci.odeint(lambda y, s: -K * y, Y0, T),
                                  si.odeint(lambda y, s: -K * y, Y0, T))


def _tree_rhs(s, t, k):
    return {"a": -k * s["a"], "b": [k * s["a"][0] * np.ones(2), -s["b"][1]]}


def test_odeint_and_solve_ivp_take_a_pytree_state():
    from chainrules.scipy.integrate import odeint, solve_ivp

    t = np.linspace(0.0, 1.0, 5)
    y0 = {"a": np.array([1.0, 2.0]), "b": [np.zeros(2), np.ones(3)]}
    ys = odeint(_tree_rhs, y0, t, args=(0.7,), rtol=1e-10, atol=1e-12)
    assert ys["a"].shape == (5, 2) and ys["b"][0].shape == (5, 2) and ys["b"][1].shape == (5, 3)
    np.testing.assert_allclose(ys["a"][:, 1], 2 * np.exp(-0.7 * t), rtol=1e-8)
    np.testing.assert_allclose(ys["b"][1][:, 2], np.exp(-t), rtol=1e-8)
    # b0' = k a0 = k exp(-k t): b0(t) = 1 - exp(-k t)
    np.testing.assert_allclose(ys["b"][0][:, 0], 1 - np.exp(-0.7 * t), rtol=1e-7, atol=1e-10)

    def loss(k, a0):
        s = odeint(_tree_rhs, {"a": a0, "b": [np.zeros(2), np.ones(3)]}, t, args=(k,),
                   rtol=1e-10, atol=1e-12)
        return np.sum(s["a"][-1]) + np.sum(s["b"][0][-1])

    gk, ga = cr.grad(loss, argnums=(0, 1))(0.7, np.array([1.0, 2.0]))
    # closed form at t = 1: sum a = 3 e^{-k}; sum b0 = 2 (1 - e^{-k}) a0[0]
    np.testing.assert_allclose(gk, -3 * np.exp(-0.7) + 2 * np.exp(-0.7), rtol=1e-6)
    np.testing.assert_allclose(ga, [np.exp(-0.7) + 2 * (1 - np.exp(-0.7)), np.exp(-0.7)],
                               rtol=1e-6)

    def loss_ivp(k):
        sol = solve_ivp(lambda t, s, k: _tree_rhs(s, t, k), (0.0, 1.0),
                        {"a": np.array([1.0, 2.0]), "b": [np.zeros(2), np.ones(3)]},
                        t_eval=t, args=(k,), rtol=1e-10, atol=1e-12)
        assert sol.y["b"][1].shape == (3, 5)
        return np.sum(sol.y["a"][:, -1]) + np.sum(sol.y["b"][0][:, -1])

    np.testing.assert_allclose(cr.grad(loss_ivp)(0.7), -np.exp(-0.7), rtol=1e-6)


# -- reverse mode on small systems: forward sensitivities ------------------------
from chainrules.rules import scipy_integrate as ode_rules  # noqa: E402

T50 = np.linspace(0.0, 10.0, 50)
OSC_Y0 = np.array([1.0, 0.0])
OSC_P = np.array([1.5, 0.5])
OSC_DATA = si.odeint(lambda y, t: [y[1], -2 * y[0] - 0.3 * y[1]], OSC_Y0, T50, rtol=1e-6)


def _osc(y, t, k, c):
    return np.stack([y[1], -k * y[0] - c * y[1]])


def _osc_fd():
    """Central differences of SciPy's own odeint, solved tightly."""
    def plain(p):
        ys = si.odeint(_osc, OSC_Y0, T50, args=(p[0], p[1]), rtol=1e-10, atol=1e-12)
        return np.sum((ys - OSC_DATA) ** 2)
    return _fd_grad(plain, OSC_P, 1e-5)


def _spy(monkeypatch):
    """Counts the calls of the forward-sensitivity solver."""
    calls = []
    inner = ode_rules.sensitivities

    def counted(*args):
        calls.append(args[0].solver)
        return inner(*args)
    monkeypatch.setattr(ode_rules, "sensitivities", counted)
    return calls


def _osc_loss_odeint(p):
    ys = ci.odeint(_osc, OSC_Y0, T50, args=(p[0], p[1]), rtol=1e-6)
    return np.sum((ys - OSC_DATA) ** 2)


def _osc_loss_closure(p):
    def rhs(y, t):
        return np.stack([y[1], -p[0] * y[0] - p[1] * y[1]])   # p closed over
    return np.sum((ci.odeint(rhs, OSC_Y0, T50, rtol=1e-6) - OSC_DATA) ** 2)


def _osc_loss_ivp(p):
    sol = ci.solve_ivp(lambda t, y, k, c: _osc(y, t, k, c), (0.0, 10.0), OSC_Y0,
                       t_eval=T50[1:], args=(p[0], p[1]), rtol=1e-6, atol=1e-8)
    return np.sum((sol.y.T - OSC_DATA[1:]) ** 2)


@pytest.mark.parametrize("loss", [_osc_loss_odeint, _osc_loss_closure, _osc_loss_ivp],
                         ids=["odeint", "closure", "solve_ivp"])
def test_small_system_gradient_by_sensitivities_matches_finite_differences(
        loss, monkeypatch):
    """A damped oscillator fitted at 50 times (rtol 1e-6): the gradient by
    forward sensitivities (the path for small systems) and by the adjoint
    method agree with central differences of SciPy's odeint at rtol 1e-10."""
    calls = _spy(monkeypatch)
    fd = _osc_fd()
    value, g = cr.value_and_grad(loss)(OSC_P)
    assert len(calls) == 1
    np.testing.assert_allclose(g, fd, rtol=1e-5)
    monkeypatch.setattr(ode_rules, "SENSITIVITY_MAX_STATE", 0)
    value_adj, g_adj = cr.value_and_grad(loss)(OSC_P)
    assert len(calls) == 1                                  # the adjoint this time
    assert value_adj == value
    np.testing.assert_allclose(g_adj, fd, rtol=1e-5)


def test_sensitivities_with_y0_and_times_and_a_jacobian():
    """Every input at once (y0, the time points, args) against central
    differences, and the full Jacobian of the solution (one sensitivity solve,
    then one sum per output direction)."""
    p = np.array([1.1, 0.4, 0.1, 0.4])
    y0 = np.array([2.0, 1.0])
    t = np.linspace(0.5, 3.0, 6)
    w = np.random.default_rng(1).normal(size=(6, 2))

    def loss(y0, t, p):
        return np.sum(w * ci.odeint(_lotka, y0, t, args=(p,), **TIGHT) ** 2)

    def plain(y0, t, p):
        return np.sum(w * si.odeint(_lotka, y0, t, args=(p,), **TIGHT) ** 2)

    g = cr.grad(loss, argnums=(0, 1, 2))(y0, t, p)
    for k, x in enumerate((y0, t, p)):
        def f(v, k=k):
            args = [y0, t, p]
            args[k] = v
            return plain(*args)
        np.testing.assert_allclose(g[k], _fd_grad(f, x, 1e-4), rtol=1e-6, atol=1e-8)
    jac = cr.jacobian(lambda p: ci.odeint(_lotka, y0, t, args=(p,), **TIGHT))(p)
    h = 1e-5
    fd = np.stack([(si.odeint(_lotka, y0, t, args=(p + h * e,), **TIGHT)
                    - si.odeint(_lotka, y0, t, args=(p - h * e,), **TIGHT)) / (2 * h)
                   for e in np.eye(4)], axis=-1)
    assert jac.shape == (6, 2, 4)
    np.testing.assert_allclose(jac, fd, rtol=1e-5, atol=1e-8)


def test_right_hand_side_returning_a_list(monkeypatch):
    """odeint's right-hand side may return a list: both reverse methods and
    forward mode take it (k closed over: y = (cos(w t), -w sin(w t)), w^2 = k)."""
    t = np.linspace(0.0, 2.0, 5)

    def loss(k):
        return np.sum(ci.odeint(lambda y, s: [y[1], -k * y[0]], OSC_Y0, t, **TIGHT)[:, 0])

    w = np.sqrt(0.7)
    exact = np.sum(-np.sin(w * t) * t / (2 * w))            # d/dk sum cos(sqrt(k) t)
    np.testing.assert_allclose(cr.grad(loss)(0.7), exact, rtol=1e-7)
    np.testing.assert_allclose(cr.jvp(loss, (0.7,), (1.0,))[1], exact, rtol=1e-7)
    monkeypatch.setattr(ode_rules, "SENSITIVITY_MAX_STATE", 0)
    np.testing.assert_allclose(cr.grad(loss)(0.7), exact, rtol=1e-7)


def _robertson(y, t, k):
    """Robertson's chemical kinetics: stiff (rates from 0.04 to 3e7)."""
    return np.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


class _CountingScipy:
    """scipy.integrate with the Jacobian callbacks the rule passes counted."""

    def __init__(self, calls):
        self.calls = calls

    def _count(self, jac):
        # two named parameters: SciPy's Fortran solvers (f2py callbacks) pass
        # as many arguments as the callback declares, none to a bare *args
        def counted(a, b):
            self.calls.append(1)
            return jac(a, b)
        return counted

    def odeint(self, *args, Dfun=None, **kw):
        return si.odeint(*args, Dfun=None if Dfun is None else self._count(Dfun), **kw)

    def solve_ivp(self, *args, jac=None, **kw):
        if jac is not None:
            kw["jac"] = self._count(jac)
        return si.solve_ivp(*args, **kw)


@pytest.mark.slow  # whole stiff solves: the full tier (--full)
@pytest.mark.parametrize("method", ["odeint", "LSODA", "BDF", "Radau"])
def test_stiff_system_sensitivities_with_their_jacobian(method, monkeypatch):
    """On a stiff system the implicit solvers factorise the augmented
    system's Jacobian, which the rule gives them (its sensitivity blocks from
    the right-hand side's Jacobian, the state's columns by differences); the
    gradient matches central differences of SciPy's odeint (an array atol
    too)."""
    k = np.array([0.04, 3e7, 1e4])
    y0 = np.array([1.0, 0.0, 0.0])
    t = np.array([0.0, 0.4, 4.0, 40.0])
    w = np.array([1.0, 1e4, 1.0])
    tol = dict(rtol=1e-8, atol=np.array([1e-10, 1e-14, 1e-10]))

    def loss(k):
        if method == "odeint":
            ys = ci.odeint(_robertson, y0, t, args=(k,), **tol)
        else:
            ys = ci.solve_ivp(lambda s, y, k: _robertson(y, s, k), (0.0, 40.0), y0,
                              method=method, t_eval=t[1:], args=(k,), **tol).y.T
        return np.sum(w * ys[-3:] ** 2)

    def plain(k):
        ys = si.odeint(_robertson, y0, t, args=(k,), rtol=1e-11,
                       atol=np.array([1e-13, 1e-17, 1e-13]))
        return np.sum(w * ys[-3:] ** 2)

    calls = []
    monkeypatch.setattr(ode_rules, "si", _CountingScipy(calls))
    g = cr.grad(loss)(k)
    assert calls, "the solver never asked for the Jacobian"
    fd = np.array([(plain(k * (1 + 1e-6 * e)) - plain(k * (1 - 1e-6 * e))) / (2e-6 * k[i])
                   for i, e in enumerate(np.eye(3))])
    np.testing.assert_allclose(g * k, fd * k, rtol=1e-4, atol=1e-6 * np.max(np.abs(fd * k)))


def _poisoned(y, t, k):
    """-k y on plain values; infinite on traced ones (the derivative's solves)."""
    from chainrules.tracing import is_traced

    return -k * y * (np.inf if is_traced(y) else 1.0)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("limit", [None, 0], ids=["sensitivities", "adjoint"])
def test_a_failed_derivative_solve_raises(limit, monkeypatch):
    """A derivative solve SciPy does not complete raises (rather than a
    derivative made of its partial result): odeint's report is read, and so
    is solve_ivp's."""
    if limit is not None:
        monkeypatch.setattr(ode_rules, "SENSITIVITY_MAX_STATE", limit)
    t = np.linspace(0.0, 1.0, 3)
    with pytest.warns(si.ODEintWarning):
        with pytest.raises(cr.NumericalInstabilityError,
                           match="odeint: the solver .odeint. failed on the system that gives "
                                 "the derivative"):
            cr.grad(lambda k: np.sum(ci.odeint(_poisoned, OSC_Y0, t, args=(k,))))(0.5)

    class Failing:
        """solve_ivp that reports failure after the first (primal) solve."""
        calls = 0

        def solve_ivp(self, *args, **kw):
            Failing.calls += 1
            sol = si.solve_ivp(*args, **kw)
            if Failing.calls > 1:
                sol.success, sol.message = False, "Required step size is too small."
            return sol

    monkeypatch.setattr(ode_rules, "si", Failing())
    with pytest.raises(cr.NumericalInstabilityError, match="solver .RK45. failed"):
        cr.grad(lambda k: np.sum(ci.solve_ivp(lambda s, y: -k * y, (0.0, 1.0), OSC_Y0,
                                              t_eval=t[1:]).y))(0.5)


@pytest.mark.parametrize("limit", [None, 0], ids=["sensitivities", "adjoint"])
def test_an_array_atol_reaches_both_methods(limit, monkeypatch):
    """A per-entry atol is the state's: the sensitivities repeat it for every
    direction, the adjoint gives its cotangents the least entry. HVPs too."""
    if limit is not None:
        monkeypatch.setattr(ode_rules, "SENSITIVITY_MAX_STATE", limit)
    tol = dict(rtol=1e-10, atol=np.array([1e-12, 1e-11]))
    t = np.linspace(0.0, 3.0, 7)

    def loss(p, solve=ci.odeint):
        return np.sum(solve(_osc, OSC_Y0, t, args=(p[0], p[1]), **tol)[:, 0] ** 2)

    g = cr.grad(loss)(OSC_P)
    fd = _fd_grad(lambda p: loss(p, si.odeint), OSC_P, 1e-4)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    v = np.array([0.3, -0.7])   # second order: the variational solve takes it too
    np.testing.assert_allclose(cr.hvp(loss, OSC_P, v), _fd_hvp(loss, OSC_P, v), rtol=1e-6)


from chainrules.pytree import flatten, tree_map  # noqa: E402 (second derivatives)


def _fd_hvp(loss, x, v, h=2e-4):
    """Central differences of cr.grad along v, h^2 error cancelled (Richardson)."""
    def central(h):
        grads = [cr.grad(loss)(tree_map(lambda a, b: a + e * b, x, v)) for e in (h, -h)]
        return tree_map(lambda a, b: (a - b) / (2 * h), *grads)
    return tree_map(lambda a, b: (4 * b - a) / 3, central(h), central(h / 2))


def _ivp_lotka(x):
    """The Lotka-Volterra solution by solve_ivp, y0 = x[:2] and parameters x[2:]."""
    sol = ci.solve_ivp(lambda s, y, p: _lotka(y, s, p), (0.0, 2.0), x[:2], method="DOP853",
                       t_eval=T, args=(x[2:],), **TIGHT)
    return np.sum(W.T * sol.y ** 2)


_HVP_CASES = {   # loss, point, closed-form Hessian (None: finite differences only)
    "y0-linear": (lambda y0: np.sum(W * ci.odeint(_linear, y0, T, args=(A0,), **TIGHT) ** 3),
                  Y0, sum(sl.expm(A0 * (ti - T[0])).T @ np.diag(6 * W[i] * _closed(
                      Y0, T, A0)[i]) @ sl.expm(A0 * (ti - T[0])) for i, ti in enumerate(T))),
    "args-linear": (lambda a: np.sum(W * ci.odeint(_linear, Y0, T, args=(a,), **TIGHT) ** 2),
                    A0, None),
    "y0-args-lotka-solve_ivp": (_ivp_lotka, np.array([1.0, 0.5, 1.1, 0.4, 0.6, 0.9]), None),
    # y_j = y0_j exp(-k_j (t - t0)): d2/dk_j2 sum_i w_ij y_ij = sum_i w_ij dt_i^2 y_ij
    "closure": (lambda k: np.sum(W * ci.odeint(lambda y, s: -k * y, Y0, T, **TIGHT)), K,
                np.diag(np.sum(W * (T - T[0])[:, None] ** 2 * _decay(K, Y0, T), axis=0))),
    "pytree-args": (lambda p: np.sum(W * ci.odeint(lambda y, s, q: q["a"] @ y + q["b"] * y ** 2,
                                                   Y0, T, args=(p,), **TIGHT) ** 2),
                    {"a": A0, "b": np.array([0.3, -0.2])}, None),
}


# whole Hessians of ODE solutions (seconds each): the full tier (--full); the
# rule sweep checks the ODE rules' HVPs in both tiers
@pytest.mark.slow
@pytest.mark.parametrize("limit", [None, 0], ids=["sensitivities", "adjoint"])
@pytest.mark.parametrize("case", list(_HVP_CASES))
def test_hvp_and_hessian_of_an_ode_solution(case, limit, monkeypatch):
    """HVPs against central differences of the gradient (by the sensitivities
    or the adjoint, as grad chooses), closed forms, Hessians, symmetry."""
    if limit is not None:
        monkeypatch.setattr(ode_rules, "SENSITIVITY_MAX_STATE", limit)
    loss, x, exact = _HVP_CASES[case]
    leaves = lambda tree: np.concatenate([np.ravel(a) for a in flatten(tree)[0]])  # noqa
    # (directions of the test's own: the same whichever tests ran before)
    rng = np.random.default_rng(list(_HVP_CASES).index(case))
    u, v = (tree_map(lambda a: rng.normal(size=np.shape(a)), x) for _ in range(2))
    hv, hu = cr.hvp(loss, x, v), cr.hvp(loss, x, u)
    fd = leaves(_fd_hvp(loss, x, v))
    # (the solver's and the differences' errors scale with the whole vector:
    # a small component of it is held to the norm, 1e-7 of it)
    np.testing.assert_allclose(leaves(hv), fd, rtol=1e-7, atol=1e-7 * np.linalg.norm(fd))
    assert abs(leaves(u) @ leaves(hv) - leaves(v) @ leaves(hu)) <= 1e-9 * np.linalg.norm(fd) \
        * np.linalg.norm(leaves(u))
    if exact is not None:
        np.testing.assert_allclose(cr.hessian(loss)(x), exact, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(hv, exact @ v, rtol=1e-8, atol=1e-9)
    elif isinstance(x, np.ndarray) and x.ndim == 1:
        hess = cr.hessian(loss)(x)
        np.testing.assert_allclose(hess, hess.T, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(hess @ v, hv, rtol=1e-10, atol=1e-10)


def test_second_order_errors_name_what_works():
    def loss(y0, t=T):  # grad of grad and traced times: refused, naming what works
        return np.sum(ci.odeint(_linear, y0, t, args=(A0,), **TIGHT) ** 2)
    with pytest.raises(cr.HvpNotSupported, match="odeint: nested .* chainrules.hvp"):
        cr.grad(lambda y: np.sum(cr.grad(loss)(y) ** 2))(Y0)
    with pytest.raises(cr.HvpNotSupported, match="odeint: .* time points .* not supported"):
        cr.hvp(lambda t: loss(Y0, t), T, np.ones(4))
