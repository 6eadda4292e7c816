"""Linear-algebra rules that solve a derived problem verify it: the right
derivative where it exists, ``DomainError`` naming the op where it does not."""

import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules import DomainError

sl = pytest.importorskip("scipy.linalg")
from chainrules.rules import scipy_linalg as rsl  # noqa: E402
from chainrules.scipy import linalg as csl  # noqa: E402
from chainrules.rules._linalg_util import scipy_takes_batches  # noqa: E402


def _needs_stacks():
    if not scipy_takes_batches():
        pytest.skip("this SciPy takes one matrix per call (stacks of matrices from 1.16 on)")

# a real matrix with one negative real eigenvalue (-0.964) and a complex pair
X = np.array([[-.2, .4, -.3], [.3, -1.1, 1.2], [-1.7, -1., .2]])
U = np.array([[1.5, .3, -.2], [-1.4, -.2, 0.], [1.7, .6, -1.5]])


def _fd_vjp(f, x, u, h=1e-6):
    out = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = h
        out[idx] = np.real(np.sum(u * (f(x + e) - f(x - e)))) / (2 * h)
    return out


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("name", ["sqrtm", "logm", "expm"])
def test_matrix_functions_at_a_negative_real_eigenvalue(name):
    f, ref = getattr(csl, name), getattr(sl, name)
    g = cr.vjp(f, X)[1](U)[0]
    np.testing.assert_allclose(g, _fd_vjp(ref, X, U), rtol=1e-6, atol=1e-7)
    t = cr.jvp(f, (X,), (U,))[1]
    fd = (ref(X + 1e-6 * U) - ref(X - 1e-6 * U)) / 2e-6
    np.testing.assert_allclose(t, fd, rtol=1e-6, atol=1e-7)


def test_sqrtm_example_value():
    g = cr.vjp(csl.sqrtm, X)[1](U)[0]
    assert abs(g[0, 1] - 3.93254573769) < 1e-8


def test_sqrtm_batched_and_nested():
    _needs_stacks()
    a = np.stack([X, X.T + 3 * np.eye(3)])
    u = np.stack([U, U.T])
    g = cr.vjp(csl.sqrtm, a)[1](u)[0]
    for k in range(2):
        np.testing.assert_allclose(g[k], _fd_vjp(sl.sqrtm, a[k], u[k]), rtol=1e-6,
                                   atol=1e-7)
    spd = np.array([[2., .3], [.3, 1.]])
    v = np.array([[.1, -.4], [.7, .2]])

    def loss(m):
        return np.sum(csl.sqrtm(m) ** 2 * np.array([[1., 2.], [3., 4.]]))
    hv = cr.hvp(loss, spd, v)
    h = 1e-5
    fd = (cr.grad(loss)(spd + h * v) - cr.grad(loss)(spd - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["sqrtm", "logm"])
@pytest.mark.parametrize("a, why", [
    (np.diag([0., 1., 2.]), "singular"),
    (np.diag([-1., -1., 2.]), "repeated eigenvalue on the negative real axis"),
    (np.diag([-1., 2., 3.]).astype(complex), "branch cut"),
])
def test_root_domain_errors(name, a, why):
    with pytest.raises(DomainError, match=f"scipy.linalg.{name}.*{why}"):
        cr.vjp(getattr(csl, name), a)[1](np.ones((3, 3)))


def test_block_frechet_check_rejects_a_non_primary_root():
    # SciPy's sqrtm of the complex [[X^T, U], [0, X^T]] (the old pullback's
    # derived problem) takes different branches for the two copies of -0.964:
    # its upper right block (about 1e16) is not the derivative
    with pytest.raises(DomainError, match="diagonal blocks differ"):
        rsl._frechet(sl.sqrtm, X.T, U.astype(complex), sl.sqrtm(X.T), "scipy.linalg.sqrtm")
    with pytest.raises(DomainError, match="diagonal blocks differ"):
        rsl._frechet(sl.logm, X.T, U.astype(complex), sl.logm(X.T), "scipy.linalg.logm")
    # ... and a block result that does not commute with the block matrix
    with pytest.raises(DomainError, match="does not commute"):
        rsl._frechet(lambda b: sl.expm(b) + np.triu(np.ones(b.shape), 4), X * .1,
                     U, sl.expm(X * .1), "scipy.linalg.expm")


def test_sylvester_solvers_against_finite_differences():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 3)) + 3 * np.eye(3), rng.normal(size=(2, 2)) + 3 * np.eye(2)
    q, w = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    x = csl.solve_sylvester(a, b, q)
    np.testing.assert_allclose(x, sl.solve_sylvester(a, b, q))
    ga, gb, gq = cr.vjp(csl.solve_sylvester, a, b, q)[1](w)
    np.testing.assert_allclose(ga, _fd_vjp(lambda m: sl.solve_sylvester(m, b, q), a, w),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, _fd_vjp(lambda m: sl.solve_sylvester(a, m, q), b, w),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gq, _fd_vjp(lambda m: sl.solve_sylvester(a, b, m), q, w),
                               rtol=1e-6, atol=1e-8)
    a2, q2, w2 = a * .2, rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    for mine, ref in ((csl.solve_continuous_lyapunov, sl.solve_continuous_lyapunov),
                      (csl.solve_discrete_lyapunov, sl.solve_discrete_lyapunov)):
        np.testing.assert_allclose(mine(a2, q2), ref(a2, q2), atol=1e-12)
        g1, g2 = cr.vjp(mine, a2, q2)[1](w2)
        np.testing.assert_allclose(g1, _fd_vjp(lambda m: ref(m, q2), a2, w2), rtol=1e-6,
                                   atol=1e-8)
        np.testing.assert_allclose(g2, _fd_vjp(lambda m: ref(a2, m), q2, w2), rtol=1e-6,
                                   atol=1e-8)


def test_singular_sylvester_raises():
    # A and -B share the eigenvalue 1: SciPy returns an answer of size 1e15
    # with a tiny relative residual; the derivative does not exist
    a, b, q = np.diag([1., 2.]), np.diag([-1., 3.]), np.ones((2, 2))
    with pytest.raises(DomainError, match="solve_sylvester.*singular"):
        cr.grad(lambda m: np.sum(csl.solve_sylvester(a, b, m)))(q)


def test_singular_discrete_lyapunov_raises():
    a = np.array([[1., 0.], [0., .5]])
    x = sl.solve_discrete_lyapunov(a * .5, np.eye(2))
    from chainrules.rules.scipy_linalg_solvers import checked_discrete
    with pytest.raises(DomainError, match="X - A X A\\^H = Q"):
        checked_discrete("scipy.linalg.solve_discrete_lyapunov", a, x)


def test_defective_eig_raises():
    j = np.array([[1., 1.], [0., 1.]])
    with pytest.raises(DomainError, match="numpy.linalg.eig.*defective"):
        cr.grad(lambda a: np.sum(np.abs(np.linalg.eig(a)[0])))(j)
    with pytest.raises(DomainError, match="numpy.linalg.eigvals.*defective"):
        cr.grad(lambda a: np.sum(np.abs(np.linalg.eigvals(a))))(j)
    # a nearly defective matrix still differentiates (large but correct)
    # (sum of squared eigenvalues = trace(A @ A), gradient 2 A^T)
    a = np.array([[1., 1.], [1e-6, 1.]])
    g = cr.grad(lambda m: np.sum(np.real(np.linalg.eigvals(m)) ** 2))(a)
    np.testing.assert_allclose(g, 2 * a.T, rtol=1e-6)


def test_rank_deficient_qr_lu_det_raise():
    s = np.array([[1., 2.], [2., 4.]])
    with pytest.raises(DomainError, match="numpy.linalg.qr.*linearly dependent"):
        cr.grad(lambda a: np.sum(np.linalg.qr(a)[0]))(s)
    with pytest.raises(DomainError, match="scipy.linalg.lu_factor.*singular"):
        cr.grad(lambda a: np.sum(csl.lu_factor(a)[0]))(s)
    with pytest.raises(DomainError, match="numpy.linalg.det.*singular"):
        cr.grad(np.linalg.det)(np.zeros((2, 2)))
    with pytest.raises(DomainError, match="numpy.linalg.slogdet.*singular"):
        cr.grad(lambda a: np.linalg.slogdet(a)[1])(np.zeros((2, 2)))


def test_batched_lu_and_cho_solve():
    _needs_stacks()
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 1, 1)) + 2
    b = rng.normal(size=(3, 1, 1))
    g = cr.grad(lambda m: np.sum(csl.lu_solve(csl.lu_factor(m), b)))(a)
    np.testing.assert_allclose(g, -b / a ** 2)
    m = rng.normal(size=(1, 3, 3, 3))
    spd = m @ np.swapaxes(m, -1, -2) + np.eye(3)
    b4 = rng.normal(size=(1, 3, 3, 3))
    g = cr.grad(lambda m: np.sum(csl.cho_solve(csl.cho_factor(m, lower=True), b4) ** 2))(spd)
    g2 = cr.grad(lambda m: np.sum(np.linalg.solve(m, b4) ** 2))(spd)
    low = np.tril(g2 + np.swapaxes(g2, -1, -2), -1) + g2 * np.eye(3)
    np.testing.assert_allclose(g, low, atol=1e-12)
    bv = rng.normal(size=3)   # one right-hand side for every matrix of the batch
    gb = cr.grad(lambda v: np.sum(csl.lu_solve(csl.lu_factor(spd), v) ** 2))(bv)
    gb2 = cr.grad(lambda v: np.sum(np.linalg.solve(spd, v[:, None]) ** 2))(bv)
    np.testing.assert_allclose(gb, gb2, atol=1e-12)


@pytest.mark.parametrize("name", ["solve_sylvester", "solve_continuous_lyapunov",
                                  "solve_discrete_lyapunov"])
def test_plain_scipy_error_names_the_twin(name):
    a = np.eye(2) * .3
    args = (a, a, np.eye(2)) if name == "solve_sylvester" else (a, np.eye(2))
    with pytest.raises(cr.UntraceableError, match=f"chainrules.scipy.linalg.{name}"):
        cr.grad(lambda m: np.sum(getattr(sl, name)(m, *args[1:])))(args[0])


def test_svd_vectors_of_rank_deficient_rectangular_raise():
    a = np.array([[1., 2.], [2., 4.], [3., 6.]])          # rank 1, 3 x 2
    with pytest.raises(DomainError, match="numpy.linalg.svd: the input is rank deficient"):
        cr.grad(lambda m: np.sum(np.linalg.svd(m, full_matrices=False)[0] ** 3))(a)
    # functions of the singular values stay differentiable there: the Hessian
    # of sum(s^2) = ||A||_F^2 is 2 I
    v = np.arange(6.).reshape(3, 2)
    hv = cr.hvp(lambda m: np.sum(np.linalg.svd(m, full_matrices=False)[1] ** 2), a, v)
    # (rounding of the order of eps * |v| where the exact entry is 0)
    np.testing.assert_allclose(hv, 2 * v, rtol=1e-10, atol=1e-13 * np.max(np.abs(v)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T"])
@pytest.mark.parametrize("lower,unit", [(True, False), (False, False), (True, True)])
@pytest.mark.parametrize("bshape", [(5,), (5, 3)])
def test_solve_triangular_second_order_equals_the_jvp_of_the_pullback(dtype, trans, lower,
                                                                      unit, bshape):
    """The hand-written pullback with tangents of solve_triangular (real
    input) equals the jvp of the traced pullback, for every trans, triangle
    and right-hand side, with the output's tangent passed or not and with
    either input's tangent structurally zero; HVPs through it match."""
    from chainrules.graph import Tape
    from chainrules.rules._linalg_util import pullback_jvp
    from chainrules.tangents import ZERO
    from chainrules.tracing import Traced

    rng = np.random.default_rng(len(bshape) + (3 if lower else 0))
    a = (np.tril(rng.standard_normal((5, 5))) + 4 * np.eye(5)).astype(dtype)
    if not lower:
        a = a.T.copy()
    b = rng.standard_normal(bshape).astype(dtype)
    tape = Tape()
    ta, tb = Traced(a, tape.leaf(a), tape), Traced(b, tape.leaf(b), tape)
    y = rsl.solve_triangular(ta, tb, trans=trans, lower=lower, unit_diagonal=unit)
    rule = tape.rules[y.node]
    g, gd = (rng.standard_normal(y.value.shape).astype(dtype) for _ in range(2))
    ad, bd = rng.standard_normal((5, 5)).astype(dtype), rng.standard_normal(bshape).astype(dtype)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    for ts in [(ad, bd), (ZERO, bd), (ad, ZERO)]:
        slow = pullback_jvp(rule, g, gd, rule._expand(ts))
        yd = rule.pushforward(ts)
        for kw in ({}, {"out_tangent": yd}):
            fast = rule.pullback_with_tangents(g, gd, ts, **kw)
            assert [i for i, _, _ in fast] == [i for i, _, _ in slow]
            for (_, c, cd), (_, c2, cd2) in zip(fast, slow):
                assert c.dtype == dtype and cd.dtype == dtype
                np.testing.assert_allclose(c, c2, **tol)
                np.testing.assert_allclose(cd, cd2, **tol)
    if dtype == np.float64:
        def f(a, b):
            return np.sum(np.sin(csl.solve_triangular(a, b, trans=trans, lower=lower,
                                                      unit_diagonal=unit)))
        assert cr.testing.check_hvp(f, a, b)


def test_solve_triangular_hvp_with_a_batch_of_right_hand_sides():
    """A batched b (SciPy broadcasts the factor over it): the hand-written
    second order steps aside, and the HVP w.r.t. the factor sums the batch."""
    _needs_stacks()
    rng = np.random.default_rng(7)
    a = np.tril(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))

    def f(a):
        return np.sum(np.sin(csl.solve_triangular(a, b, lower=True)))
    assert cr.testing.check_hvp(f, a)
