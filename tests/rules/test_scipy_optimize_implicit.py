"""chainrules.scipy.optimize's solvers: solutions differentiated by the
implicit function theorem. Closed-form references (the cube root, the
minimizer of a quadratic, the normal equations, linear regression),
gradients against finite differences of the whole solve, HVPs against
finite differences of the gradient (check_grads to order 2), every method of
root and minimize, parameters through args and through closures, every kind
of float input, and the typed errors (not converged, singular, active
bound)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import chainrules as cr
from chainrules.scipy import optimize as co
from chainrules.testing import check_grads, strategies as crs

so = pytest.importorskip("scipy.optimize")


def cube(x, p):
    return x ** 3 - p


def mild(x, p):
    # a Jacobian near -1: the mixing methods of root converge on it
    return p - x - 0.1 * x ** 3


def dcube(p):
    return (1.0 / 3.0) * p ** (-2.0 / 3.0)


def fd_grad(f, p, h=1e-5):
    p = np.asarray(p, dtype=float)
    g = np.zeros_like(p)
    for i in np.ndindex(p.shape):
        e = np.zeros_like(p)
        e[i] = h
        g[i] = (f(p + e) - f(p - e)) / (2 * h)
    return g


P = np.array([2.0, 3.0, 0.5])

# -- root -------------------------------------------------------------------------

ROOT_NEWTONLIKE = ["hybr", "lm", "broyden1", "broyden2", "anderson", "krylov", "df-sane"]
ROOT_MIXING = ["linearmixing", "diagbroyden", "excitingmixing"]


@pytest.mark.parametrize("method", ROOT_NEWTONLIKE)
def test_root_cube_root_every_method(method):
    def f(p):
        return np.sum(np.sin(co.root(cube, np.cbrt(P) + 0.1, args=(p,), method=method,
                                     tol=1e-12).x))
    expected = np.cos(np.cbrt(P)) * dcube(P)
    np.testing.assert_allclose(cr.grad(f)(P), expected, rtol=1e-7)


@pytest.mark.parametrize("method", ROOT_MIXING)
def test_root_mixing_methods(method):
    def sol(p):
        return co.root(mild, np.zeros(3), args=(p,), method=method, tol=1e-12).x
    x = so.root(mild, np.zeros(3), args=(P,), method="hybr", tol=1e-14).x
    # x + 0.1 x^3 = p: dx/dp = 1 / (1 + 0.3 x^2)
    np.testing.assert_allclose(cr.jacobian(sol)(P), np.diag(1 / (1 + 0.3 * x ** 2)),
                               rtol=1e-6, atol=1e-9)


def test_root_result_object_and_jac_true():
    def fun(x, p):
        return x ** 3 - p, np.diag(3 * x ** 2)

    def f(p):
        res = co.root(fun, np.ones(3), args=(p,), jac=True)
        assert isinstance(res, so.OptimizeResult) and res.success
        assert isinstance(res.nfev, int)
        return np.sum(res.x) + np.sum(res.fun)

    np.testing.assert_allclose(cr.grad(f)(P), dcube(P) - 0.0, rtol=1e-9)
    # res.fun is F(x*(p), p), zero for every p: its derivative is zero
    g = cr.grad(lambda p: np.sum(co.root(fun, np.ones(3), args=(p,), jac=True).fun))(P)
    np.testing.assert_allclose(g, 0.0, atol=1e-9)


def test_root_hvp_and_second_order():
    def f(p):
        return np.sum(co.root(cube, np.ones(3), args=(p,), tol=1e-12).x ** 2)
    v = np.array([1.0, -0.5, 0.25])
    # sum p^(2/3): Hessian diag(-2/9 p^(-4/3))
    np.testing.assert_allclose(cr.hvp(f, P, v), -2 / 9 * P ** (-4 / 3) * v, rtol=1e-7)
    np.testing.assert_allclose(cr.hessian(f)(P), np.diag(-2 / 9 * P ** (-4 / 3)), rtol=1e-7,
                               atol=1e-12)
    check_grads(f, P, order=2, rtol=1e-4, atol=1e-6)


def test_args_and_closure_agree_and_nest():
    m = np.array([[2.0, 0.3], [0.1, 1.5]])

    def by_args(p, w):
        return co.root(lambda x, p, w: m @ x + w * x ** 3 - p, np.zeros(2), args=(p, w),
                       tol=1e-13).x

    def by_closure(p, w):
        return co.root(lambda x: m @ x + w * x ** 3 - p, np.zeros(2), tol=1e-13).x

    p, w = np.array([1.0, -0.5]), 0.2
    for argnums in (0, 1):
        ja = cr.jacobian(by_args, argnums=argnums)(p, w)
        jc = cr.jacobian(by_closure, argnums=argnums)(p, w)
        np.testing.assert_allclose(ja, jc, rtol=1e-10, atol=1e-12)
    loss = lambda p: np.sum(by_closure(p, w) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(loss)(p), fd_grad(loss, p), rtol=1e-5, atol=1e-8)
    # grad of grad: the closed-over p of the outer differentiation
    gg = cr.grad(lambda p: cr.grad(loss)(p)[0])(p)
    np.testing.assert_allclose(gg, cr.hessian(loss)(p)[0], rtol=1e-8, atol=1e-10)
    check_grads(loss, p, order=2, rtol=1e-4, atol=1e-6)


def test_nested_args_are_pytrees():
    def f(params):
        return np.sum(co.root(lambda x, d: x ** 3 - d["a"] * d["b"], np.ones(2),
                              args=(params,)).x)
    d = {"a": np.array([2.0, 3.0]), "b": 1.5}
    g = cr.grad(f)(d)
    np.testing.assert_allclose(g["a"], dcube(d["a"] * 1.5) * 1.5, rtol=1e-8)
    np.testing.assert_allclose(g["b"], np.sum(dcube(d["a"] * 1.5) * d["a"]), rtol=1e-8)


# -- fsolve, scalar roots, newton, fixed_point -----------------------------------------

def test_fsolve_and_full_output():
    f = lambda p: np.sum(co.fsolve(cube, np.ones(3), args=(p,)))  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(P), dcube(P), rtol=1e-8)
    x, info, ier, mesg = co.fsolve(cube, np.ones(3), args=(cr.stop_gradient(P),),
                                   full_output=True)
    assert ier == 1
    got = cr.grad(lambda p: np.sum(co.fsolve(cube, np.ones(3), args=(p,),
                                              full_output=True)[0]))(P)
    np.testing.assert_allclose(got, dcube(P), rtol=1e-8)


@pytest.mark.parametrize("name", ["brentq", "brenth", "ridder", "bisect", "toms748"])
@pytest.mark.parametrize("kind", ["float", "float64", "float32", "0-d", "size-1"])
def test_bracketing_solvers_every_float(name, kind):
    solver = getattr(co, name)
    p = {"float": 8.0, "float64": np.float64(8.0), "float32": np.float32(8.0),
         "0-d": np.array(8.0), "size-1": np.array([8.0])}[kind]

    def f(p):
        return solver(lambda x, p: x ** 3 - np.sum(p), 0.0, 10.0, args=(p,))

    g = cr.grad(f)(p)
    np.testing.assert_allclose(np.asarray(g, dtype=float), np.full(np.shape(p), 1 / 12),
                               rtol=1e-5 if kind == "float32" else 1e-10)
    assert np.shape(g) == np.shape(p)
    r, info = solver(lambda x: x ** 3 - 8.0, 0.0, 10.0, full_output=True)
    assert info.converged and abs(r - 2.0) < 1e-10


@pytest.mark.parametrize("kw", [dict(bracket=[0, 10]), dict(method="brentq", bracket=[0, 10]),
                                dict(x0=1.0, fprime=lambda x: 3 * x ** 2),
                                dict(x0=1.0, x1=3.0, method="secant")])
def test_root_scalar(kw):
    def f(q):
        res = co.root_scalar(lambda x: x ** 3 - q, **kw)
        assert res.converged
        return res.root
    np.testing.assert_allclose(cr.grad(f)(8.0), 1 / 12, rtol=1e-9)
    np.testing.assert_allclose(cr.hvp(f, 8.0, 1.0), -2 / 9 * 8.0 ** (-5 / 3), rtol=1e-7)


def test_newton_scalar_and_array():
    f = lambda q: co.newton(lambda x, q: x ** 3 - q, 1.0, args=(q,),  # noqa: E731
                            fprime=lambda x, q: 3 * x ** 2)
    np.testing.assert_allclose(cr.grad(f)(8.0), 1 / 12, rtol=1e-10)
    g = cr.grad(lambda q: np.sum(co.newton(lambda x: x ** 3 - q, np.ones(3))))(P)
    np.testing.assert_allclose(g, dcube(P), rtol=1e-7)
    r, info = co.newton(lambda x: x ** 3 - cr.stop_gradient(8.0), 1.0, full_output=True)
    assert info.converged


def test_fixed_point():
    def f(q):
        return np.sum(co.fixed_point(lambda x, q: q * np.cos(x), np.ones(2), args=(q,)))
    q = np.array([0.5, 0.7])
    x = so.fixed_point(lambda x: q * np.cos(x), np.ones(2))
    # x = q cos x: dx/dq = cos x / (1 + q sin x)
    np.testing.assert_allclose(cr.grad(f)(q), np.cos(x) / (1 + q * np.sin(x)), rtol=1e-7)
    check_grads(f, q, order=2, rtol=1e-4, atol=1e-6)


# -- minimize ---------------------------------------------------------------------------

A = np.array([[3.0, 1.0], [1.0, 2.0]])

MIN_METHODS = ["Nelder-Mead", "Powell", "CG", "BFGS", "Newton-CG", "L-BFGS-B", "TNC",
               "COBYLA", "SLSQP", "trust-constr", "dogleg", "trust-ncg", "trust-exact",
               "trust-krylov"]


@pytest.mark.parametrize("method", MIN_METHODS)
def test_minimize_quadratic_every_method(method):
    def sol(b):
        return co.minimize(lambda x, b: 0.5 * x @ A @ x - b @ x, np.zeros(2), args=(b,),
                           method=method, tol=1e-10).x
    b = np.array([1.0, -0.5])
    tol = 1e-4 if method in ("Nelder-Mead", "Powell", "COBYLA", "TNC") else 1e-6
    # (Newton-CG and the trust-region methods take chainrules' gradient and
    # Hessian when differentiated; SciPy's plain call needs them given)
    np.testing.assert_allclose(cr.vjp(sol, b)[0], np.linalg.solve(A, b), atol=tol)
    # the Jacobian of the minimizer A^-1 b is A^-1, whatever the solution's accuracy
    np.testing.assert_allclose(cr.jacobian(sol)(b), np.linalg.inv(A), rtol=1e-6, atol=1e-8)


def test_minimize_result_and_second_order():
    def res(b):
        def fun(x):
            return 0.5 * x @ A @ x - b @ x + 0.1 * np.sum(x ** 4)
        # a gradient and a Hessian given only guide the solver
        return co.minimize(fun, np.zeros(2), method="trust-exact", jac=cr.grad(fun),
                           hess=cr.hessian(fun), tol=1e-10)
    b = np.array([1.0, -0.5])
    r = res(b)
    assert isinstance(r, so.OptimizeResult) and r.success
    f = lambda b: np.sum(res(b).x ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(b), fd_grad(f, b), rtol=1e-6)
    check_grads(f, b, order=2, rtol=1e-4, atol=1e-6)
    # the optimal value: its gradient in b is -x* (envelope theorem)
    np.testing.assert_allclose(cr.grad(lambda b: res(b).fun)(b), -res(b).x, rtol=1e-8)


def test_minimize_bounds_interior_and_active():
    def sol(b, bounds):
        return co.minimize(lambda x: 0.5 * x @ A @ x - b @ x, np.zeros(2), bounds=bounds,
                           tol=1e-12).x
    b = np.array([1.0, -0.5])
    wide = [(-5.0, 5.0), (None, 3.0)]
    np.testing.assert_allclose(cr.jacobian(lambda b: sol(b, wide))(b), np.linalg.inv(A),
                               rtol=1e-6)
    np.testing.assert_allclose(
        cr.jacobian(lambda b: sol(b, so.Bounds([-5, -5], [5, 5])))(b), np.linalg.inv(A),
        rtol=1e-6)
    with pytest.raises(cr.DomainError, match="active bound"):
        cr.jacobian(lambda b: sol(b, [(0.0, 1.0), (0.0, 1.0)]))(b)


def test_minimize_constraints():
    b = np.array([1.0, -0.5])

    def sol(b, cons):
        return co.minimize(lambda x: 0.5 * x @ A @ x - b @ x, np.zeros(2), method="SLSQP",
                           constraints=cons, tol=1e-12).x
    inactive = [{"type": "ineq", "fun": lambda x: 10.0 - x[0]}]
    np.testing.assert_allclose(cr.jacobian(lambda b: sol(b, inactive))(b), np.linalg.inv(A),
                               rtol=1e-6)
    with pytest.raises(cr.DomainError, match="equality"):
        cr.grad(lambda b: np.sum(sol(b, [{"type": "eq", "fun": lambda x: x[0] - x[1]}])))(b)
    with pytest.raises(cr.DomainError, match="constraint"):
        cr.grad(lambda b: np.sum(sol(b, [{"type": "ineq", "fun": lambda x: -x[0]}])))(b)


# -- least_squares and curve_fit ---------------------------------------------------------

X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 3.5]])
Y = np.array([0.1, 0.9, 2.2, 2.9])


@pytest.mark.parametrize("method", ["trf", "dogbox", "lm"])
def test_least_squares_normal_equations(method):
    def sol(y):
        return co.least_squares(lambda w, y: X @ w - y, np.zeros(2), args=(y,),
                                method=method, xtol=1e-14, ftol=1e-14, gtol=1e-14).x
    np.testing.assert_allclose(sol(Y), np.linalg.pinv(X) @ Y, rtol=1e-8)
    np.testing.assert_allclose(cr.jacobian(sol)(Y), np.linalg.pinv(X), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan"])
def test_least_squares_robust_losses_and_kwargs(loss):
    def f(y):
        res = co.least_squares(lambda w, y, scale=1.0: scale * (X @ w - y), np.zeros(2),
                               kwargs={"y": y, "scale": 2.0}, loss=loss, f_scale=0.5,
                               xtol=1e-14, ftol=1e-14, gtol=1e-14)
        return np.sum(res.x ** 2)
    y = Y + np.array([0.0, 0.5, -0.3, 0.0])
    # (finite differences of a solve to SciPy's tolerances: a wide step, whose
    # error differs between SciPy releases: 1.8e-4 with SciPy 1.18)
    np.testing.assert_allclose(cr.grad(f)(y), fd_grad(f, y, 1e-4), rtol=1e-3, atol=1e-6)


def test_least_squares_active_bound_raises():
    with pytest.raises(cr.DomainError, match="active bound"):
        cr.grad(lambda y: np.sum(co.least_squares(lambda w: X @ w - y, np.array([0.7, 0.5]),
                                                  bounds=([0.5, 0.0], [1.0, 1.0])).x))(Y)


def _line(x, a, b):
    return a * x + b


def _regression(x, y, s=None):
    s = np.ones_like(x) if s is None else s
    m = np.stack([x, np.ones_like(x)], 1) / s[:, None]
    return np.linalg.solve(m.T @ m, m.T @ (y / s))


XD = np.array([0.0, 1.0, 2.0, 3.5, 5.0])
YD = np.array([0.1, 0.9, 2.2, 2.9, 4.4])
SD = np.array([1.0, 0.5, 2.0, 1.5, 1.0])


@pytest.mark.parametrize("wrt", ["xdata", "ydata", "sigma"])
def test_curve_fit_is_linear_regression(wrt):
    def fit(v):
        kw = {"xdata": XD, "ydata": YD, "sigma": SD}
        kw[wrt] = v
        return co.curve_fit(_line, kw["xdata"], kw["ydata"], sigma=kw["sigma"])[0]

    def ref(v):
        kw = {"x": XD, "y": YD, "s": SD}
        kw[{"xdata": "x", "ydata": "y", "sigma": "s"}[wrt]] = v
        return _regression(kw["x"], kw["y"], kw["s"])[:: 1]
    v = {"xdata": XD, "ydata": YD, "sigma": SD}[wrt]
    np.testing.assert_allclose(fit(v), ref(v), rtol=1e-7)
    np.testing.assert_allclose(cr.jacobian(fit)(v), cr.jacobian(ref)(v), rtol=1e-6,
                               atol=1e-9)


def test_curve_fit_pcov_closure_and_hvp():
    popt, pcov = co.curve_fit(_line, XD, cr.stop_gradient(YD))
    ppl, pcl = so.curve_fit(_line, XD, YD)
    np.testing.assert_allclose(popt, ppl, rtol=1e-7)

    def both(y):
        return co.curve_fit(_line, XD, y)
    p2, c2 = both(YD * 1.0)
    np.testing.assert_allclose(c2, pcl, rtol=1e-6)
    # pcov is differentiable: the closed form of a line's covariance
    def ref(y):
        m = np.stack([XD, np.ones_like(XD)], 1)
        r = m @ np.linalg.solve(m.T @ m, m.T @ y) - y
        return np.sum(np.linalg.inv(m.T @ m) * np.sum(r * r) / (len(y) - 2))
    np.testing.assert_allclose(cr.grad(lambda y: np.sum(both(y)[1]))(YD), cr.grad(ref)(YD),
                               rtol=1e-6, atol=1e-10)
    # a nonlinear model closing over a traced rate
    t = np.linspace(0.0, 2.0, 7)

    def g(k):
        y = np.exp(-k * t) + 0.05 * np.sin(5 * t)
        return np.sum(co.curve_fit(lambda x, a, c: a * np.exp(-c * x), t, y,
                                   p0=[1.0, 1.0])[0] ** 2)
    check_grads(g, np.array(0.8), order=2, rtol=1e-4, atol=1e-6)


# -- errors, plain calls, inputs untouched ---------------------------------------------

def test_not_converged_raises():
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda p: np.sum(co.root(cube, np.ones(3), args=(p,), method="broyden1",
                                         options={"maxiter": 2}).x))(P)
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda p: co.brentq(lambda x: x ** 3 - p, 0.0, 10.0, maxiter=3))(8.0)
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda p: np.sum(co.minimize(lambda x: np.sum((x - p) ** 2), np.zeros(2),
                                             options={"maxiter": 1}).x))(P[:2])
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda p: np.sum(co.fixed_point(lambda x: p * np.cos(x), np.ones(2),
                                                maxiter=2)))(P[:2])


def test_singular_jacobian_raises():
    # a double root of x^2 - p at p = 0; a flat minimum of x^4
    with pytest.raises(cr.NumericalInstabilityError, match="singular"):
        cr.grad(lambda p: co.newton(lambda x: x ** 2 - p, 0.0))(0.0)
    with pytest.raises(cr.NumericalInstabilityError, match="singular"):
        cr.grad(lambda p: np.sum(co.minimize(lambda x: (x[0] - p[0]) ** 2
                                             + 0 * x[1] ** 2, np.zeros(2),
                                             method="trust-exact").x))(P[:2])


def test_complex_parameter_refused():
    with pytest.raises(cr.MissingRuleError, match="complex"):
        cr.grad(lambda p: np.real(co.fsolve(lambda x: x - np.abs(p), np.ones(1))[0]))(
            np.array([1.0 + 1.0j]))


def test_plain_calls_are_scipys_and_inputs_untouched():
    p = P.copy()
    a = co.root(cube, np.ones(3), args=(p,))
    b = so.root(cube, np.ones(3), args=(p,))
    np.testing.assert_array_equal(a.x, b.x)
    assert co.brentq(lambda x: x ** 3 - 8.0, 0, 10) == so.brentq(lambda x: x ** 3 - 8.0, 0, 10)
    x0 = np.ones(3)
    cr.grad(lambda p: np.sum(co.root(cube, x0, args=(p,)).x))(p)
    np.testing.assert_array_equal(p, P)
    np.testing.assert_array_equal(x0, np.ones(3))


@given(st.data())
def test_random_cubic_systems(data):
    """x + a x^3 = p solved by root and by minimize (of its potential):
    gradients against the closed form, HVPs against finite differences of
    the gradient."""
    n = data.draw(st.integers(1, 3))
    a = data.draw(crs.arrays(np.float64, (n,), (0.1, 1.0)))
    p = data.draw(crs.arrays(np.float64, (n,), (-2.0, 2.0)))

    def by_root(p):
        return co.root(lambda x: x + a * x ** 3 - p, np.zeros(n), tol=1e-13).x

    def by_min(p):
        return co.minimize(lambda x: np.sum(0.5 * x ** 2 + 0.25 * a * x ** 4 - p * x),
                           np.zeros(n), method="trust-constr", tol=1e-12).x
    x = by_root(p)
    jac = np.diag(1 / (1 + 3 * a * x ** 2))
    np.testing.assert_allclose(cr.jacobian(by_root)(p), jac, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(cr.jacobian(by_min)(p), jac, rtol=1e-6, atol=1e-9)
    v = data.draw(crs.arrays(np.float64, (n,), (-1.0, 1.0)))
    loss = lambda p: np.sum(np.sin(by_root(p)))  # noqa: E731
    h = 1e-5
    fd = (cr.grad(loss)(p + h * v) - cr.grad(loss)(p - h * v)) / (2 * h)
    np.testing.assert_allclose(cr.hvp(loss, p, v), fd, rtol=1e-4, atol=1e-7)


PLAIN_SCIPY = {
    "root": lambda p: so.root(lambda x: x ** 3 - p, np.ones(2)).x,
    "root_scalar": lambda p: so.root_scalar(lambda x: x ** 3 - p[0], bracket=[0, 10]).root,
    "fsolve": lambda p: so.fsolve(lambda x: x ** 3 - p, np.ones(2)),
    "brentq": lambda p: so.brentq(lambda x: x ** 3 - p[0], 0, 10),
    "newton": lambda p: so.newton(lambda x: x ** 3 - p, np.ones(2)),
    "minimize": lambda p: so.minimize(lambda x: np.sum((x - p) ** 2), np.ones(2)).x,
    "least_squares": lambda p: so.least_squares(lambda x: x - p, np.ones(2)).x,
    "curve_fit": lambda p: so.curve_fit(lambda x, a: a * x, np.arange(2.0), p)[0],
}


@pytest.mark.parametrize("name", sorted(PLAIN_SCIPY))
def test_plain_scipy_names_the_twin(name, capsys):
    """SciPy's own solver refuses a traced value, naming the twin. Where
    SciPy's compiled code replaces the error with its own, the refusal
    naming the twin is the error it was raised from (brentq's SystemError,
    minimize's ValueError: Python prints it above), or MINPACK prints it
    before raising "not a proper array of floats" (root, fsolve)."""
    with pytest.raises(Exception) as info:
        cr.grad(lambda p: np.sum(PLAIN_SCIPY[name](p)))(np.array([2.0, 3.0]))
    chain, e = [], info.value
    while e is not None and len(chain) < 5:
        chain.append(e)
        e = e.__cause__ or e.__context__
    told = [str(c) for c in chain if isinstance(c, cr.UntraceableError)]
    told.append(capsys.readouterr().err)
    # (root_scalar with a bracket runs brentq's compiled loop, so which of
    # the two the refusal names depends on which frame the hint finds first
    # (it varies with what ran before): either twin is a way out)
    names = {"brentq": ("brentq", "root_scalar"),
             "root_scalar": ("root_scalar", "brentq")}.get(name, (name,))
    assert any(f"chainrules.scipy.optimize.{n} instead" in t for t in told for n in names), told


FLOATS = {"float": 8.0, "float64": np.float64(8.0), "float32": np.float32(8.0),
          "0-d": np.array(8.0), "size-1": np.array([8.0])}
SOLVES = {
    "root": lambda p: np.sum(co.root(lambda x: x ** 3 - p, 1.0).x),
    "fsolve": lambda p: np.sum(co.fsolve(lambda x, p: x ** 3 - p, 1.0, args=(p,))),
    "minimize": lambda p: np.sum(co.minimize(lambda x: np.sum((x ** 3 - p) ** 2),
                                             np.array([1.0]), method="trust-exact",
                                             tol=1e-10).x),
    "least_squares": lambda p: np.sum(co.least_squares(lambda x: x ** 3 - p, 1.0).x),
    "newton": lambda p: np.sum(co.newton(lambda x: x ** 3 - p, 1.0)),
}


@pytest.mark.parametrize("kind", sorted(FLOATS))
@pytest.mark.parametrize("solver", sorted(SOLVES))
def test_every_kind_of_float_parameter(solver, kind):
    p = FLOATS[kind]
    g = cr.grad(SOLVES[solver])(p)
    assert np.shape(g) == np.shape(p)
    assert np.asarray(g).dtype == (np.float32 if kind == "float32" else np.float64)
    np.testing.assert_allclose(np.asarray(g, dtype=float), 1 / 12,
                               rtol=1e-5 if kind == "float32" else 1e-7)


def test_helpers_given_by_the_user():
    """jac=True (the function returns its gradient or Jacobian too), and
    helpers that close over the traced parameters: they guide the solver
    on plain values; the derivative is chainrules' own."""
    b = np.array([1.0, -0.5])

    def with_grad(b):
        def fun(x):
            return 0.5 * x @ A @ x - b @ x, A @ x - b
        return co.minimize(fun, np.zeros(2), jac=True, method="trust-exact", tol=1e-10).x
    np.testing.assert_allclose(cr.jacobian(with_grad)(b), np.linalg.inv(A), rtol=1e-8)

    def with_derivative(q):
        return co.root_scalar(lambda x: (x ** 3 - q, 3 * x ** 2), x0=1.0, fprime=True).root
    np.testing.assert_allclose(cr.grad(with_derivative)(8.0), 1 / 12, rtol=1e-10)

    def lsq_jac(y):
        return co.least_squares(lambda w: X @ w - y, np.zeros(2), jac=lambda w: X,
                                xtol=1e-14, ftol=1e-14, gtol=1e-14).x
    np.testing.assert_allclose(cr.jacobian(lsq_jac)(Y), np.linalg.pinv(X), rtol=1e-8)

    def fit_jac(y):
        return co.curve_fit(_line, XD, y, jac=lambda x, a, b: np.stack([x, np.ones_like(x)],
                                                                     1))[0]
    np.testing.assert_allclose(cr.jacobian(fit_jac)(YD), cr.jacobian(
        lambda y: _regression(XD, y))(YD), rtol=1e-7, atol=1e-10)


def test_a_closed_over_value_first_used_during_the_solve_is_refused():
    """The closed-over values are found at the starting point; one the
    function reaches only later (a branch on x) is refused with a typed
    error, whatever SciPy's compiled code makes of it."""
    def f(pq):
        p, q = pq[0], pq[1]

        def fun(x):
            return x ** 3 - p if x[0] < 1.5 else x ** 3 - q * p
        return np.sum(co.root(fun, np.ones(1)).x)
    with pytest.raises(cr.UntraceableError, match="did not use at the starting point"):
        cr.grad(f)(np.array([8.0, 1.0]))

    def g(pq):
        p, q = pq[0], pq[1]
        return co.brentq(lambda x: x ** 3 - p if x < 1.5 else x ** 3 - q * p, 0.0, 10.0)
    with pytest.raises(cr.UntraceableError, match="did not use at the starting point"):
        cr.grad(g)(np.array([8.0, 1.0]))


def test_more_failures_and_forms():
    # fixed_point's plain iteration, differentiated as del2's
    q = np.array([0.5, 0.7])
    got = cr.grad(lambda q: np.sum(co.fixed_point(lambda x: q * np.cos(x), np.ones(2),
                                                  method="iteration", xtol=1e-13,
                                                  maxiter=2000)))(q)
    x = so.fixed_point(lambda x: q * np.cos(x), np.ones(2))
    np.testing.assert_allclose(got, np.cos(x) / (1 + q * np.sin(x)), rtol=1e-7)
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda p: np.sum(co.newton(lambda x: x ** 3 - p, np.ones(2), maxiter=2)))(P[:2])
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda y: np.sum(co.least_squares(lambda w: np.exp(X @ w) - y, np.zeros(2),
                                                  max_nfev=1).x))(Y + 1.0)
    with pytest.raises(cr.NumericalInstabilityError, match="did not converge"):
        cr.grad(lambda y: np.sum(co.curve_fit(lambda x, a, b: np.exp(a * x) + b, XD, y,
                                              maxfev=3)[0]))(YD)
    with pytest.raises(cr.DomainError, match="active bound"):
        cr.grad(lambda y: np.sum(co.curve_fit(_line, XD, y, p0=[0.5, 0.5],
                                              bounds=([0.0, 0.0], [0.7, 1.0]))[0]))(YD)
    # an interior bound: as without
    np.testing.assert_allclose(
        cr.jacobian(lambda y: co.curve_fit(_line, XD, y, p0=[0.5, 0.5],
                                           bounds=([-5.0, -5.0], [5.0, 5.0]))[0])(YD),
        cr.jacobian(lambda y: _regression(XD, y))(YD), rtol=1e-6, atol=1e-9)


def test_minimize_objective_returning_a_size_1_array():
    def sol(b):
        return co.minimize(lambda x: np.atleast_1d(0.5 * x @ A @ x - b @ x), np.zeros(2),
                           tol=1e-9).x
    np.testing.assert_allclose(cr.jacobian(sol)(np.array([1.0, -0.5])), np.linalg.inv(A),
                               rtol=1e-6)
