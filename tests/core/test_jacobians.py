"""jacobian, hessian, linearize, linearize_grad, hessian_operator, hessp."""

import numpy as np
import pytest

import chainrules as cr

rng = np.random.default_rng(20240606)
A3 = rng.standard_normal((3, 3))
B4 = rng.standard_normal((4, 3))


def fd_jacobian(f, x, eps=1e-6):
    """Central differences: d f / d x with layout f.shape + x.shape."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    out_shape = np.shape(f(x))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


# -- random scalar functions built from the rule library ------------------------
SCALAR_FUNCS = {
    "sin_exp": lambda x: np.sum(np.sin(x) * np.exp(0.3 * x)),
    "tanh_matmul": lambda x: np.sum(np.tanh(A3 @ x) ** 2),
    "quartic": lambda x: np.sum(x ** 4) * 0.25 + np.sum(x * (A3 @ x)),
    "log_sqrt": lambda x: np.sum(np.log(1.0 + x * x)) + np.sum(np.sqrt(2.0 + np.cos(x))),
    "rational": lambda x: np.sum(x / (2.0 + np.sin(x))) * np.mean(np.exp(-x * x)),
}


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCS))
def test_hessian_equals_jacobian_of_grad_equals_fd(name):
    f = SCALAR_FUNCS[name]
    x = rng.uniform(-1, 1, 3)
    H = cr.hessian(f)(x)
    J = cr.jacobian(cr.grad(f))(x)
    assert H.shape == (3, 3)
    np.testing.assert_allclose(H, J, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)
    H_fd = fd_jacobian(cr.grad(f), x)
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-7)


def test_hessian_of_known_quadratic_and_cubic():
    A = A3 + A3.T
    H = cr.hessian(lambda x: 0.5 * np.sum(x * (A @ x)))(np.ones(3))
    np.testing.assert_allclose(H, A, rtol=1e-14)
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(cr.hessian(lambda x: np.sum(x ** 3))(x), np.diag(6 * x))


def test_hessian_scalar_and_matrix_inputs():
    h = cr.hessian(lambda t: np.sin(t) * t)(0.7)
    np.testing.assert_allclose(h, 2 * np.cos(0.7) - 0.7 * np.sin(0.7))
    W = rng.standard_normal((2, 2))
    H = cr.hessian(lambda W: np.sum(np.tanh(W @ W)))(W)
    assert H.shape == (2, 2, 2, 2)
    H_fd = fd_jacobian(cr.grad(lambda W: np.sum(np.tanh(W @ W))), W)
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-7)


def test_hessian_pytree_and_argnums_tuple():
    def f(a, b):
        return np.sum(np.sin(a)) * np.sum(b * b) + np.sum(a ** 2) * np.sum(b ** 3)

    a, b = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 3)
    H = cr.hessian(f, argnums=(0, 1))(a, b)
    assert [[blk.shape for blk in row] for row in H] == [[(2, 2), (2, 3)],
                                                         [(3, 2), (3, 3)]]
    J = cr.jacobian(cr.grad(f, argnums=(0, 1)), argnums=(0, 1))(a, b)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j], J[i][j], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H[0][1], H[1][0].T, rtol=1e-10, atol=1e-12)

    Hd = cr.hessian(lambda d: f(d["a"], d["b"]))({"a": a, "b": b})
    np.testing.assert_allclose(Hd["a"]["b"], H[0][1], rtol=1e-12)
    np.testing.assert_allclose(Hd["b"]["b"], H[1][1], rtol=1e-12)


def test_hessian_of_a_class_rule_without_tangent_sweep_traces_f_once():
    # a class rule without pullback_with_tangents: its second order is found
    # by making the rule again on forward-traced inputs; f runs once per call
    @cr.primitive
    def cube(x):
        return x ** 3

    class CubeRule(cr.ReverseRule):
        def __init__(self, i, x):
            self.i, self.x = i, x

        def inputs(self):
            return (self.i,)

        def pullback(self, g):
            return [(self.i, 3 * g * self.x ** 2)]

    @cr.register(cube)
    def _(ids, x):
        return x ** 3, CubeRule(ids[0], x)

    calls = []

    def f(x):
        calls.append(1)
        return np.sum(cube(x) * np.sin(x))

    x = np.array([0.3, -1.2])
    d2 = 6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x)
    from chainrules.api import _hvp_fast
    _, hv = _hvp_fast(f, x, np.ones(2), "f")
    np.testing.assert_allclose(hv, d2, rtol=1e-12)
    assert len(calls) == 1
    H = cr.hessian(f)(x)
    np.testing.assert_allclose(H, np.diag(d2), rtol=1e-12)
    assert len(calls) == 2
    H_op = cr.hessian_operator(f, x)
    np.testing.assert_allclose(H_op @ np.eye(2), np.diag(d2), rtol=1e-12)
    np.testing.assert_allclose(H_op.matvec(np.array([1.0, 2.0])), d2 * [1, 2], rtol=1e-12)
    assert len(calls) == 3


def test_hessian_errors():
    with pytest.raises(cr.NonScalarOutputError):
        cr.hessian(lambda x: x * 2)(np.ones(2))
    with pytest.raises(cr.NonDifferentiableInputError):
        cr.hessian(lambda z: np.sum(np.real(z * z)))(np.ones(2, complex))


# -- jacobian ----------------------------------------------------------------
VECTOR_FUNCS = {
    "wide": (lambda x: np.sum(np.sin(x) * x), (4,)),          # 4 -> 1: reverse
    "tall": (lambda x: np.tanh(B4 @ x) * 2.0, (3,)),           # 3 -> 4: forward
    "square": (lambda x: np.exp(x) * np.sum(x * x), (3,)),
    "matrix": (lambda W: np.tanh(W @ W.T), (2, 3)),
}


@pytest.mark.parametrize("name", sorted(VECTOR_FUNCS))
def test_jacobian_forward_reverse_and_fd_agree(name):
    f, shape = VECTOR_FUNCS[name]
    x = rng.uniform(-1, 1, shape)
    Jf = cr.jacobian(f, mode="forward")(x)
    Jr = cr.jacobian(f, mode="reverse")(x)
    Ja = cr.jacobian(f)(x)
    expected_shape = np.shape(f(x)) + shape
    assert np.shape(Jf) == np.shape(Jr) == np.shape(Ja) == expected_shape
    np.testing.assert_allclose(Jf, Jr, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Ja, Jf, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Jf, fd_jacobian(f, x), rtol=1e-6, atol=1e-8)


def test_jacobian_chooses_mode_by_size(monkeypatch):
    from chainrules import jacobians

    calls = []
    monkeypatch.setattr(jacobians, "_jac_forward",
                        lambda *a: calls.append("forward") or None)
    monkeypatch.setattr(jacobians, "_jac_reverse",
                        lambda *a: calls.append("reverse") or None)
    for f, shape in (VECTOR_FUNCS["wide"], VECTOR_FUNCS["tall"]):
        try:
            cr.jacobian(f)(np.ones(shape))
        except TypeError:
            pass  # the stubs return no blocks to assemble
    assert calls == ["reverse", "forward"]


def test_jacobian_records_once():
    calls = []

    def f(x):
        calls.append(1)
        return np.sin(x) * 3.0

    cr.jacobian(f, mode="forward")(np.ones(4))
    cr.jacobian(f, mode="reverse")(np.ones(4))
    assert len(calls) == 2


def test_jacobian_pytrees_in_and_out_and_argnums():
    def f(d, c):
        return {"s": np.sum(d["u"] * d["v"]) * c, "t": (d["u"] * c, np.sin(d["v"]))}

    d = {"u": rng.uniform(-1, 1, 2), "v": rng.uniform(-1, 1, 2)}
    for mode in ("forward", "reverse"):
        J = cr.jacobian(f, mode=mode)(d, 1.5)
        np.testing.assert_allclose(J["s"]["u"], d["v"] * 1.5)
        np.testing.assert_allclose(J["s"]["v"], d["u"] * 1.5)
        np.testing.assert_allclose(J["t"][0]["u"], np.eye(2) * 1.5)
        np.testing.assert_allclose(J["t"][0]["v"], np.zeros((2, 2)))
        np.testing.assert_allclose(J["t"][1]["v"], np.diag(np.cos(d["v"])))
        J2 = cr.jacobian(f, argnums=(0, 1), mode=mode)(d, 1.5)
        np.testing.assert_allclose(J2["t"][0][1], d["u"])
        np.testing.assert_allclose(J2["s"][1], np.sum(d["u"] * d["v"]))
        np.testing.assert_allclose(J2["t"][1][0]["v"], np.diag(np.cos(d["v"])))


def test_jacobian_complex_output_of_real_input():
    f = lambda x: np.exp(1j * x) * x  # noqa: E731
    x = np.array([0.3, -0.8])
    expected = np.diag(np.exp(1j * x) * (1 + 1j * x))
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(cr.jacobian(f, mode=mode)(x), expected, rtol=1e-14)


def test_jacobian_holomorphic_and_complex_input_error():
    z = np.array([0.5 + 0.2j, -0.3 + 1.0j])
    with pytest.raises(cr.NonDifferentiableInputError, match="holomorphic"):
        cr.jacobian(lambda z: z * z)(z)
    for mode in ("forward", "reverse"):
        J = cr.jacobian(lambda z: z * z * z, mode=mode, holomorphic=True)(z)
        np.testing.assert_allclose(J, np.diag(3 * z ** 2), rtol=1e-14)


def test_jacobian_constant_output_and_has_aux():
    J = cr.jacobian(lambda x: (x * 2.0, np.ones(3)))(np.ones(2))
    np.testing.assert_allclose(J[0], 2 * np.eye(2))
    np.testing.assert_array_equal(J[1], np.zeros((3, 2)))
    J, aux = cr.jacobian(lambda x: (x * 3.0, "aux"), has_aux=True)(np.ones(2))
    assert aux == "aux"
    np.testing.assert_allclose(J, 3 * np.eye(2))
    with pytest.raises(ValueError, match="mode"):
        cr.jacobian(np.sin, mode="sideways")


def test_jacobian_of_float32_stays_float32():
    J = cr.jacobian(lambda x: np.sin(x) * x)(np.ones(3, np.float32))
    assert J.dtype == np.float32


# -- nested grad: third and fourth derivatives -----------------------------------
def test_third_and_fourth_derivatives_by_nesting_grad():
    f = lambda x: np.sin(x) * x ** 3  # noqa: E731
    d1 = cr.grad(f)
    d2 = cr.grad(d1)
    d3 = cr.grad(d2)
    d4 = cr.grad(d3)
    x = 0.7
    s, c = np.sin(x), np.cos(x)
    expect3 = -x ** 3 * c - 9 * x ** 2 * s + 18 * x * c + 6 * s
    expect4 = x ** 3 * s - 12 * x ** 2 * c - 36 * x * s + 24 * c
    np.testing.assert_allclose(d3(x), expect3, rtol=1e-12)
    np.testing.assert_allclose(d4(x), expect4, rtol=1e-12)
    g = lambda x: np.exp(2.0 * x) * np.tanh(x)  # noqa: E731
    h = 1e-3
    fd4 = (cr.grad(cr.grad(cr.grad(g)))(0.3 + h)
           - cr.grad(cr.grad(cr.grad(g)))(0.3 - h)) / (2 * h)
    np.testing.assert_allclose(cr.grad(cr.grad(cr.grad(cr.grad(g))))(0.3), fd4, rtol=1e-5)


def test_fourth_derivative_of_polynomial_is_exact():
    p = lambda x: 3.0 * x ** 5 - x ** 4 + 2.0 * x  # noqa: E731
    d4 = cr.grad(cr.grad(cr.grad(cr.grad(p))))
    assert float(d4(2.0)) == pytest.approx(360.0 * 2.0 - 24.0, rel=1e-14)


# -- linearize ---------------------------------------------------------------
def test_linearize_matches_jvp_and_traces_once():
    calls = []

    def f(x, y):
        calls.append(1)
        return {"a": np.sin(x) * y, "b": np.sum(x * x)}

    x, y = rng.uniform(-1, 1, 3), 0.5
    out, f_jvp = cr.linearize(f, x, y)
    np.testing.assert_allclose(out["a"], np.sin(x) * y)
    for _ in range(3):
        tx, ty = rng.standard_normal(3), 0.7
        t = f_jvp(tx, ty)
        _, expected = cr.jvp(f, (x, y), (tx, ty))
        np.testing.assert_allclose(t["a"], expected["a"], rtol=1e-14)
        np.testing.assert_allclose(t["b"], expected["b"], rtol=1e-14)
    assert len(calls) == 1 + 3  # once for linearize, once per reference jvp
    with pytest.raises(cr.TangentShapeError):
        f_jvp(np.ones(2), 1.0)


def test_linearize_grad_gives_gradient_and_hvps():
    f = SCALAR_FUNCS["tanh_matmul"]
    x = rng.uniform(-1, 1, 3)
    g, hvp_fn = cr.linearize_grad(f, x)
    np.testing.assert_allclose(g, cr.grad(f)(x), rtol=1e-14)
    H = cr.hessian(f)(x)
    for k in range(3):
        v = rng.standard_normal(3)
        np.testing.assert_allclose(hvp_fn(v), H @ v, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(hvp_fn(v), cr.hvp(f, x, v), rtol=1e-14, atol=1e-15)
    tree_g, tree_hvp = cr.linearize_grad(lambda d: f(d["x"]), {"x": x})
    np.testing.assert_allclose(tree_hvp({"x": np.ones(3)})["x"], H @ np.ones(3),
                               rtol=1e-12)


# -- hessian_operator with scipy ---------------------------------------------------
scipy = pytest.importorskip("scipy")


def test_hessian_operator_eigsh_finds_top_eigenvalues():
    from scipy.sparse.linalg import eigsh

    n = 40
    Q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((n, n)))
    lam = np.linspace(-3.0, 10.0, n)
    A = (Q * lam) @ Q.T
    A = 0.5 * (A + A.T)
    b = np.arange(n) / n

    def f(x):
        return 0.5 * np.sum(x * (A @ x)) + np.sum(b * x)

    calls = []
    H = cr.hessian_operator(lambda x: calls.append(1) or f(x), np.zeros(n))
    assert H.shape == (n, n)
    np.testing.assert_allclose(H.grad, b, atol=1e-14)
    top = eigsh(H, k=3, which="LA", return_eigenvectors=False, tol=1e-10)
    np.testing.assert_allclose(np.sort(top), lam[-3:], rtol=1e-8)
    assert len(calls) == 1  # recorded once, every matvec is a sweep
    np.testing.assert_allclose(H @ np.eye(n), A, atol=1e-12)


def test_hessian_operator_with_cg_and_pytree():
    from scipy.sparse.linalg import cg

    A = A3 @ A3.T + 3 * np.eye(3)

    def f(p):
        return 0.5 * np.sum(p["x"] * (A @ p["x"])) + 2.0 * p["s"] ** 2

    p = {"x": np.ones(3), "s": 0.5}
    H = cr.hessian_operator(f, p)
    assert H.shape == (4, 4)
    dense = H @ np.eye(4)
    expected = np.zeros((4, 4))
    expected[:3, :3] = A
    expected[3, 3] = 4.0
    np.testing.assert_allclose(dense, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H.grad_vector, np.r_[A @ np.ones(3), 2.0], rtol=1e-12)
    rhs = np.array([1.0, 2.0, 3.0, 4.0])
    sol, info = cg(H, rhs, rtol=1e-12)
    assert info == 0
    np.testing.assert_allclose(expected @ sol, rhs, rtol=1e-8)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_trust_krylov_rosenbrock_1000_dims_with_package_hessp():
    from scipy.optimize import minimize

    from scipy.optimize import rosen_der, rosen_hess_prod

    n = 1000
    x0 = np.random.default_rng(0).uniform(0.0, 2.0, n)
    h = cr.hessp(rosenbrock)
    p = np.random.default_rng(1).standard_normal(n)
    np.testing.assert_allclose(h(x0, p), rosen_hess_prod(x0, p), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(h.value_and_grad(x0)[1], rosen_der(x0), rtol=1e-12,
                               atol=1e-10)
    res = minimize(h.value_and_grad, x0, jac=True, hessp=h, method="trust-krylov",
                   options={"gtol": 1e-8, "maxiter": 500})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(n), atol=1e-6)
    assert res.fun < 1e-12
    # several Hessian-vector products per recorded point
    assert res.nhev > h.recordings


def test_newton_cg_with_hessian_operator_products():
    from scipy.optimize import minimize

    n = 50
    x0 = np.zeros(n)
    vg = cr.value_and_grad(rosenbrock)
    res = minimize(vg, x0, jac=True, method="Newton-CG",
                   hessp=lambda x, p: cr.hessian_operator(rosenbrock, x) @ p,
                   options={"xtol": 1e-10, "maxiter": 500})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(n), atol=1e-5)


def test_hessp_reuses_the_recording_per_point():
    """Without plans, f is recorded once per point; value_and_grad shares
    it (with plans: tests/core/test_linearization_plans.py)."""
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(np.sin(x) * x)

    h = cr.hessp(f, staged=False)
    x = np.array([0.1, 0.2])
    for _ in range(4):
        h(x, np.ones(2))
    assert len(calls) == 1 and h.recordings == 1
    h(x + 1.0, np.ones(2))
    assert len(calls) == 2
    value, g = h.value_and_grad(x + 1.0)
    assert len(calls) == 2
    np.testing.assert_allclose(g, cr.grad(f)(x + 1.0), rtol=1e-14)


def test_closure_rules_carry_tangents_without_tracing_f_again():
    """A closure rule's second order differentiates its own pullback (one
    jvp of the rule), so hvp, hessian and hessian_operator trace f once."""
    @cr.primitive
    def softplus(x):
        return np.log1p(np.exp(x))

    @cr.rrule(softplus)
    def _(x):
        s = 1 / (1 + np.exp(-x))
        return softplus(x), lambda g: g * s

    calls = []

    def f(x):
        calls.append(1)
        return np.sum(softplus(x) ** 2 * np.sin(x))

    x = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, 0.5, -1.0])
    sp, s = np.log1p(np.exp(x)), 1 / (1 + np.exp(-x))
    # f = sp^2 sin: f'' = 2 (s^2 + sp s (1 - s)) sin + 4 sp s cos - sp^2 sin
    d2 = 2 * (s * s + sp * s * (1 - s)) * np.sin(x) + 4 * sp * s * np.cos(x) \
        - sp * sp * np.sin(x)
    np.testing.assert_allclose(cr.hvp(f, x, v), d2 * v, rtol=1e-12)
    assert len(calls) == 1
    calls.clear()
    np.testing.assert_allclose(cr.hessian(f)(x), np.diag(d2), rtol=1e-12, atol=1e-14)
    assert len(calls) == 1
    calls.clear()
    H = cr.hessian_operator(f, x)
    np.testing.assert_allclose(H.matvec(v), d2 * v, rtol=1e-12)
    np.testing.assert_allclose(H.matvec(2 * v), 2 * d2 * v, rtol=1e-12)
    assert len(calls) == 1


def test_closure_rule_second_order_with_a_sequence_and_two_arguments():
    @cr.primitive
    def weighted(xs, w):
        return w * (xs[0] * xs[1])

    @cr.rrule(weighted)
    def _(xs, w):
        a, b = xs
        return w * a * b, lambda g: ([g * w * b, g * w * a], g * a * b)

    def f(a, b, w):
        return np.sum(np.sin(weighted([a, b], w)))

    a, b, w = np.array([0.3, 0.7]), np.array([-0.5, 1.1]), np.array([1.3, 0.4])
    u = (np.array([1.0, -1.0]), np.array([0.5, 2.0]), np.array([0.2, 0.3]))
    g = lambda a, b, w: cr.grad(f, argnums=(0, 1, 2))(a, b, w)  # noqa: E731
    hv = cr.hvp(lambda t: f(*t), (a, b, w), u)
    h = 1e-6
    fd = [(p - m) / (2 * h) for p, m in zip(
        g(a + h * u[0], b + h * u[1], w + h * u[2]),
        g(a - h * u[0], b - h * u[1], w - h * u[2]))]
    for got, want in zip(hv, fd):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_jacobian_and_hessian_refuse_lazy_arguments_before_computing():
    da = pytest.importorskip("dask.array")
    computed = []

    def f(x):
        computed.append(1)
        return x ** 2

    x = da.ones(4, chunks=2)
    with pytest.raises(cr.MissingRuleError, match=r"jacobian of .*f: argument 0 is a "
                                                  r"dask.*lazy array.*x.compute\(\)"):
        cr.jacobian(f)(x)
    with pytest.raises(cr.MissingRuleError, match="hessian of"):
        cr.hessian(lambda x: np.sum(f(x)))(x)
    assert computed == []  # refused before f ran
    # the way out: vjp stays lazy
    out, pull = cr.vjp(f, x)
    assert hasattr(pull(da.ones(4, chunks=2))[0], "dask")
