"""np.linalg and scipy.linalg rules at the points the sweep avoids:
repeated eigenvalues and singular values, result types, non-differentiable
options, second order through the pullbacks."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_hvp, check_rrule

RNG = np.random.default_rng(0)


def _orth(n, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return q


# a symmetric matrix with a doubly and a triply repeated eigenvalue
Q5 = _orth(5, 1)
A_DEG = (Q5 * np.array([1.0, 1.0, 2.5, 2.5, 2.5])) @ Q5.T
A_DEG = (A_DEG + A_DEG.T) / 2


def test_eigh_degenerate_eigenvalue_functions():
    # sum(eigvalsh(a)) = trace(a): gradient I; sum(w**2) = ||a||_F^2: gradient 2a
    for f, expected in [
        (lambda a: np.sum(np.linalg.eigvalsh(a)), np.eye(5)),
        (lambda a: np.sum(np.linalg.eigh(a)[0]), np.eye(5)),
        (lambda a: np.sum(np.linalg.eigh(a)[0] ** 2), 2 * np.tril(A_DEG) + 2 * np.tril(A_DEG, -1)),
    ]:
        g = cr.grad(f)(A_DEG)
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, expected, atol=1e-10)


def test_eigh_degenerate_eigenvectors_mixed_with_eigenvalues_raise():
    # V diag(w^2) V^T = A^2 is smooth, but the chain rule through (w, v) at a
    # repeated eigenvalue drops the terms it needs (it returned a gradient off
    # by 61): DomainError instead
    def f(a):
        w, v = np.linalg.eigh(a)
        return np.sum(((v * w ** 2) @ v.T) * np.arange(25.0).reshape(5, 5))
    with pytest.raises(cr.DomainError, match="numpy.linalg.eigh.*repeated eigenvalue"):
        cr.grad(f)(A_DEG)
    # a raw eigenvector inside an eigenspace is not a function of the matrix
    with pytest.raises(cr.DomainError, match="basis LAPACK chose"):
        cr.grad(lambda a: np.sum(np.linalg.eigh(a)[1][:, 0] * np.arange(5.0)))(A_DEG)


def test_eigh_degenerate_eigenspace_projector_is_exact():
    # the projector onto the eigenspace of 2.5 is smooth and invariant under
    # rotations inside it: the rule is exact there
    m = np.arange(25.0).reshape(5, 5)

    def f(a):
        v = np.linalg.eigh(a)[1][:, 2:]
        return np.sum((v @ v.T) * m)
    g = cr.grad(f)(A_DEG)
    assert np.all(np.isfinite(g))
    h = 1e-6
    fd = np.zeros((5, 5))
    for i in range(5):
        for j in range(i + 1):
            e = np.zeros((5, 5))
            e[i, j] = h
            fd[i, j] = (f(A_DEG + e) - f(A_DEG - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, atol=1e-6)


def test_eigh_degenerate_hvp_of_eigenvalue_sum_is_zero():
    f = lambda a: np.sum(np.linalg.eigvalsh(a))  # linear: zero Hessian
    hv = cr.hvp(f, A_DEG, RNG.standard_normal((5, 5)))
    np.testing.assert_allclose(hv, 0, atol=1e-10)


def test_svd_repeated_singular_values():
    u, v = _orth(4, 2), _orth(4, 3)
    a = (u * np.array([2.0, 2.0, 2.0, 0.5])) @ v.T
    # nuclear norm: gradient U V^T, through svd, compute_uv=False and norm
    uu, s, vh = np.linalg.svd(a)
    g1 = cr.grad(lambda x: np.sum(np.linalg.svd(x, compute_uv=False)))(a)
    g2 = cr.grad(lambda x: np.linalg.norm(x, "nuc"))(a)
    g3 = cr.grad(lambda x: np.sum(np.linalg.svd(x)[1]))(a)
    g4 = cr.grad(lambda x: np.sum(np.linalg.svdvals(x)))(a)
    for g in (g1, g2, g3, g4):
        np.testing.assert_allclose(g, uu @ vh, atol=1e-10)
    hv = cr.hvp(lambda x: np.linalg.norm(x, "nuc"), a, np.ones((4, 4)))
    assert np.all(np.isfinite(hv))


def _trace_usv(x):
    u, s, vh = np.linalg.svd(x)
    return np.trace((u * s) @ vh)


def test_svd_repeated_singular_values_through_vectors():
    # trace(U diag(s) V^T) = trace(a): gradient I, at symmetric positive
    # semi-definite points with repeated singular values (identity included)
    q = _orth(4, 4)
    for a in (np.eye(3), (q * np.array([2.0, 2.0, 2.0, 0.5])) @ q.T):
        g = cr.grad(_trace_usv)(a)
        np.testing.assert_allclose(g, np.eye(len(a)), atol=1e-10)
        hv = cr.hvp(_trace_usv, a, np.ones_like(a))
        assert np.all(np.isfinite(hv))


def test_result_types_are_numpys_namedtuples():
    seen = {}

    def f(a):
        for name, res in [("eigh", np.linalg.eigh(a)), ("svd", np.linalg.svd(a)),
                          ("slogdet", np.linalg.slogdet(a)), ("qr", np.linalg.qr(a))]:
            seen[name] = type(res).__name__
        w, v = np.linalg.eigh(a)
        return np.linalg.eigh(a).eigenvalues[0] + np.linalg.slogdet(a).logabsdet
    spd = np.eye(3) * 2 + 0.1
    g = cr.grad(f)(spd)
    assert seen == {"eigh": "EighResult", "svd": "SVDResult",
                    "slogdet": "SlogdetResult", "qr": "QRResult"}
    assert np.all(np.isfinite(g))


def test_triangle_read_by_cholesky_and_eigh():
    # NumPy reads the lower triangle only: the upper triangle gets no cotangent
    a = np.array([[4.0, 100.0], [1.0, 3.0]])
    g = cr.grad(lambda x: np.sum(np.linalg.cholesky(x)))(a)
    assert g[0, 1] == 0.0
    g = cr.grad(lambda x: np.sum(np.linalg.eigvalsh(x) ** 2))(a)
    assert g[0, 1] == 0.0
    np.testing.assert_allclose(g, [[8.0, 0.0], [4.0, 6.0]])  # d||sym(a)||_F^2


def test_solve_vector_and_batched_semantics():
    a = np.stack([np.eye(3) * 2 + 0.1, np.eye(3) * 3 - 0.2])
    b = np.array([1.0, 2.0, 3.0])  # ndim == 1: a vector for every batch entry
    check_rrule(np.linalg.solve, a, b)
    check_hvp(np.linalg.solve, a, b)
    bb = RNG.standard_normal((2, 3, 2))
    check_rrule(np.linalg.solve, a, bb)


def test_second_order_by_nested_grad():
    a = np.eye(3) * 2 + 0.3 * RNG.standard_normal((3, 3))
    v = RNG.standard_normal((3, 3))
    for f in [lambda x: np.linalg.slogdet(x)[1], lambda x: np.linalg.det(x),
              lambda x: np.sum(np.linalg.inv(x) ** 2),
              lambda x: np.sum(np.linalg.svd(x, compute_uv=False) ** 3)]:
        nested = cr.grad(lambda x: np.sum(cr.grad(f)(x) * v))(a)
        np.testing.assert_allclose(nested, cr.hvp(f, a, v), rtol=1e-9, atol=1e-9)


def test_non_differentiable_options():
    a = np.eye(3) * 2.0
    with pytest.raises(cr.MissingRuleError, match="mode='raw'"):
        cr.grad(lambda x: np.sum(np.linalg.qr(x, mode="raw")[0]))(a)
    # matrix_rank and the 0-"norm" (a count) are piecewise constant
    g = cr.grad(lambda x: np.linalg.matrix_rank(x) * 1.0 + np.sum(x))(a)
    np.testing.assert_array_equal(g, np.ones((3, 3)))
    g = cr.grad(lambda x: np.linalg.norm(x[0], 0) + np.sum(x))(a)
    np.testing.assert_array_equal(g, np.ones((3, 3)))


def test_norm_at_zero_is_finite():
    g = cr.grad(lambda x: np.linalg.norm(x))(np.zeros(3))
    np.testing.assert_array_equal(g, 0.0)


# rank deficient: B's second column is twice its first
B_LOW = np.array([[1.0, 2.0], [2.0, 4.0], [0.5, 1.0]])


@pytest.mark.parametrize("a", [np.array([[1.0, 0.0], [0.0, 0.0]]), B_LOW, B_LOW.T,
                               np.stack([B_LOW, B_LOW + np.eye(3, 2)])])
def test_matrix_norms_at_a_zero_singular_value_take_the_least_norm_subgradient(a):
    """A zero singular value's vectors are LAPACK's choice (any sign, any
    vector of a left null space); the gradient leaves them out, as abs'(0)
    is 0: the nuclear norm's is the sum of u v^T over the non-zero singular
    values, and the smallest singular value's is 0 where it is 0."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    on = s > 1e-12 * s.max(axis=-1, keepdims=True)
    nuc = cr.grad(lambda x: np.sum(np.linalg.norm(x, "nuc", axis=(-2, -1))))(a)
    np.testing.assert_allclose(nuc, (u * on[..., None, :]) @ vh, atol=1e-14)
    low = cr.grad(lambda x: np.sum(np.linalg.norm(x, -2, axis=(-2, -1))))(a)
    last = u[..., :, -1:] * vh[..., -1:, :]
    np.testing.assert_allclose(low, np.where(on[..., -1:, None], last, 0.0), atol=1e-14)
    zero = cr.grad(lambda x: np.sum(np.linalg.norm(x, 2, axis=(-2, -1))))(0 * a)
    np.testing.assert_array_equal(zero, 0.0)


@pytest.mark.parametrize("a", [B_LOW, B_LOW.T, np.stack([B_LOW, B_LOW])])
def test_matrix_norm_hessians_at_a_zero_singular_value(a):
    """The largest singular value of a rank-deficient non-square matrix has
    a second derivative: the HVP agrees with differences of the gradient
    (it was NaN: the zero singular value's vectors have infinite tangents).
    The nuclear norm and the smallest singular value, which weigh the zero
    singular value, have none there: DomainError."""
    v = np.cos(np.arange(a.size)).reshape(a.shape)

    def spectral(x):
        return np.sum(np.linalg.norm(x, 2, axis=(-2, -1)))

    h = cr.hvp(spectral, a, v)
    e = 1e-6
    fd = (cr.grad(spectral)(a + e * v) - cr.grad(spectral)(a - e * v)) / (2 * e)
    np.testing.assert_allclose(h, fd, atol=1e-8)
    for o in ("nuc", -2):
        with pytest.raises(cr.DomainError, match="rank deficient"):
            cr.hvp(lambda x: np.sum(np.linalg.norm(x, o, axis=(-2, -1))), a, v)
    # full rank: the nuclear norm's HVP agrees with differences too
    b = a + np.eye(*a.shape[-2:])
    nuc = lambda x: np.sum(np.linalg.norm(x, "nuc", axis=(-2, -1)))  # noqa: E731
    fd = (cr.grad(nuc)(b + e * v) - cr.grad(nuc)(b - e * v)) / (2 * e)
    np.testing.assert_allclose(cr.hvp(nuc, b, v), fd, atol=1e-8)


def test_scipy_linalg_functions_and_plain_scipy_error():
    sl = pytest.importorskip("scipy.linalg")
    from chainrules.rules import scipy_linalg as csl

    a = np.array([[0.3, 0.1], [-0.2, 0.4]])
    # d/dt expm(t a) at t = 1 is a expm(a)
    t = cr.jvp(lambda x: csl.expm(x), (a,), (a,))[1]
    np.testing.assert_allclose(t, a @ sl.expm(a), rtol=1e-10)
    with pytest.raises(cr.UntraceableError):
        cr.grad(lambda x: np.sum(sl.expm(x)))(a)
    spd = np.array([[2.0, 0.3], [0.3, 1.0]])
    c, lower = csl.cho_factor(spd)
    b = np.array([1.0, -1.0])
    g = cr.grad(lambda m: np.sum(csl.cho_solve(csl.cho_factor(m), b)))(spd)
    g_np = cr.grad(lambda m: np.sum(np.linalg.solve(
        np.triu(m) + np.triu(m, 1).T, b)))(spd)
    np.testing.assert_allclose(g, g_np, rtol=1e-10)


def test_logm_pushforward_and_hvp():
    pytest.importorskip("scipy.linalg")
    from chainrules.rules import scipy_linalg as csl
    from chainrules.testing import check_frule

    a = np.array([[1.5, 0.2], [0.3, 1.1]])
    check_frule(csl.logm, a)
    check_hvp(csl.logm, a)
    # exp(log(a)) == a: the chain of both rules is the identity
    t = cr.jvp(lambda x: csl.expm(csl.logm(x)), (a,), (np.ones((2, 2)),))[1]
    np.testing.assert_allclose(t, np.ones((2, 2)), rtol=1e-9)


def test_svd_repeated_singular_values_mixed_with_weights_raise():
    rng = np.random.default_rng(3)
    q1, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    q2, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    a = (q1 * np.array([2., 2., 1., 0.5])) @ q2.T
    m = rng.normal(size=(4, 4))

    def mixed(x):   # U diag(s^2) V^T: smooth, but the rule's chain drops terms
        u, s, vh = np.linalg.svd(x)
        return np.sum(((u * s ** 2) @ vh) * m)
    with pytest.raises(cr.DomainError, match="numpy.linalg.svd.*repeated singular value"):
        cr.grad(mixed)(a)
    with pytest.raises(cr.DomainError, match="basis LAPACK chose"):
        cr.grad(lambda x: np.sum(np.linalg.svd(x)[0][:, 0] * np.arange(4.0)))(a)

    def trace_m(x):  # trace(U S Vh M) = trace(A M): the dropped terms matter
        u, s, vh = np.linalg.svd(x)
        return np.sum(((u * s) @ vh) * m)
    with pytest.raises(cr.DomainError, match="numpy.linalg.svd"):
        cr.grad(trace_m)(a)

    def block(x):   # U1 V1^T of the repeated pair: invariant, exact
        u, s, vh = np.linalg.svd(x)
        return np.sum((u[:, :2] @ vh[:2]) * m)
    h = 1e-6
    fd = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            e = np.zeros((4, 4))
            e[i, j] = h
            fd[i, j] = (block(a + e) - block(a - e)) / (2 * h)
    np.testing.assert_allclose(cr.grad(block)(a), fd, atol=1e-7)


def test_eigh_degenerate_complex():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(4, 4)) + 1j * rng.normal(size=(4, 4)))
    a = (q * np.array([1., 1., 3., 4.])) @ q.conj().T
    m = rng.normal(size=(4, 4))

    def proj(x):    # projector onto the repeated eigenvalue's eigenspace: exact
        v = np.linalg.eigh(x)[1][:, :2]
        return np.sum(np.real(v @ v.conj().T) * m)
    g = cr.grad(proj)(a)
    h = 1e-6
    fd = np.zeros((4, 4), complex)
    for i in range(4):
        for j in range(i + 1):
            for unit in ((1, 1j) if i != j else (1,)):
                e = np.zeros((4, 4), complex)
                e[i, j] = h * unit
                d = (proj(a + e) - proj(a - e)) / (2 * h)
                fd[i, j] += d * (1 if unit == 1 else -1j)
    np.testing.assert_allclose(g, fd, atol=1e-7)

    def mixed(x):
        w, v = np.linalg.eigh(x)
        return np.sum(np.real((v * w ** 2) @ v.conj().T) * m)
    with pytest.raises(cr.DomainError, match="numpy.linalg.eigh"):
        cr.grad(mixed)(a)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 3, 40])
def test_cholesky_cotangent_by_blas_equals_the_traceable_formula(dtype, upper, n):
    """Plain real matrices take LAPACK (``sygst`` after one triangular
    product); the result is the traceable formula's (two triangular
    solves), which nested differentiation still uses, for every memory
    order of the cotangent, and no input is written to."""
    from chainrules.rules._linalg_util import chol_pullback_plain, herm_cotangent, mT, phi_mask
    from chainrules.rules._triangular import tri_solve

    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    low = np.linalg.cholesky(a @ a.T + n * np.eye(n)).astype(dtype)
    g = rng.standard_normal((n, n)).astype(dtype)
    c = (mT(low) @ g) * phi_mask(n, low.dtype)
    ref = herm_cotangent(mT(tri_solve(low, mT(tri_solve(low, c, 1)), 1)), lower=not upper)
    low0, g0 = low.copy(), g.copy()
    for lo in (low, np.asfortranarray(low)):
        for gl in (g, np.asfortranarray(g), np.repeat(g, 2, axis=1)[:, ::2]):
            got = chol_pullback_plain(lo, gl, lower=not upper)
            assert got.dtype == dtype and got.shape == (n, n)
            np.testing.assert_allclose(got, ref, rtol=1e-4 if dtype == np.float32 else 1e-11,
                                       atol=1e-5 if dtype == np.float32 else 1e-13)
    np.testing.assert_array_equal(low, low0)
    np.testing.assert_array_equal(g, g0)
    # where it does not apply it says so, and the caller uses the formula above
    assert chol_pullback_plain(low.astype(complex), g.astype(complex)) is None
    assert chol_pullback_plain(np.stack([low, low]), np.stack([g, g])) is None
    singular = low.copy()
    singular[0, 0] = 0.0
    assert chol_pullback_plain(singular, g) is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 4, 30])
def test_cholesky_second_order_by_blas_equals_the_jvp_of_the_pullback(dtype, upper, n):
    """For plain real matrices the Cholesky tangent and its pullback with
    tangents are written with LAPACK/BLAS triangular routines; they equal the
    traceable pushforward and the jvp of the traced pullback (the general
    path, used for complex, batched and nested-traced input)."""
    import chainrules as cr
    from chainrules.graph import Tape
    from chainrules.rules._linalg_util import pullback_jvp
    from chainrules.tracing import Traced

    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    k = (a @ a.T + n * np.eye(n)).astype(dtype)
    tape = Tape()
    x = Traced(k, tape.leaf(k), tape)
    rule = tape.rules[np.linalg.cholesky(x, upper=upper).node]
    g, gd, t = (rng.standard_normal((n, n)).astype(dtype) for _ in range(3))
    fast = rule.pullback_with_tangents(g, gd, (t,))
    slow = pullback_jvp(rule, g, gd, rule._expand((t,)))
    # the factor's tangent as the forward sweep hands it on (C or Fortran order)
    yd = rule.pushforward((t,))
    given = [rule.pullback_with_tangents(g, gd, (t,), out_tangent=o)
             for o in (yd, np.asfortranarray(yd), np.ascontiguousarray(yd))]
    # the rule now keeps L^-1 from the first sweep: a second sweep reuses it
    assert rule.memo is not None and "li" in rule.memo
    given.append(rule.pullback_with_tangents(g, gd, (t,)))
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for other in [slow] + given:
        for (i, c, cd), (j, c2, cd2) in zip(fast, other):
            assert i == j and c.dtype == dtype and cd.dtype == dtype
            np.testing.assert_allclose(c, c2, **tol)
            np.testing.assert_allclose(cd, cd2, **tol)
    # the tangent: the plain path against the traceable formula (two solves)
    from chainrules.rules._linalg_util import herm_tangent, mH, phi_mask
    from chainrules.rules._triangular import tri_solve

    _, plain = cr.jvp(lambda k: np.linalg.cholesky(k, upper=upper), (k,), (t,))
    low = np.linalg.cholesky(k)
    s = mH(tri_solve(low, mH(tri_solve(low, herm_tangent(t, lower=not upper)))))
    ref = low @ (s * phi_mask(n, low.dtype))
    assert plain.dtype == dtype
    np.testing.assert_allclose(plain, ref.T if upper else ref, **tol)
    assert cr.testing.check_hvp(np.linalg.cholesky, k, upper=upper)


def test_cholesky_second_order_reused_recording_with_a_direction_mutated_in_place():
    """A recording swept many times (``linearize_grad``, as optimisers use it)
    with one direction array overwritten between calls: every HVP is that of
    the current direction (the rule keeps only functions of the primal)."""
    import chainrules as cr

    rng = np.random.default_rng(5)
    a = rng.standard_normal((5, 5))
    k = a @ a.T + 5 * np.eye(5)
    w = rng.standard_normal((5, 5))

    def f(k):
        low = np.linalg.cholesky(k)
        return np.sum(np.log(np.diagonal(low))) + np.sum(w * low * low)

    _, hvp_fn = cr.linearize_grad(f, k)
    v = rng.standard_normal((5, 5))
    for _ in range(3):
        expected = cr.hvp(f, k, v.copy())
        np.testing.assert_allclose(hvp_fn(v), expected, rtol=1e-10, atol=1e-12)
        v[...] = rng.standard_normal((5, 5))  # the same object, another direction


# -- batches of directions (Jacobians, Hessians) ------------------------------------
def _well(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    a = rng.standard_normal(shape) / np.sqrt(n) + 2 * np.eye(n)
    if np.dtype(dtype).kind == "c":
        a = a + 0.3j * rng.standard_normal(shape) / np.sqrt(n)
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("ashape, bshape", [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 2)),
    ((2, 3, 3), (3, 2)), ((3, 3), (2, 3, 4)), ((1, 3, 3), (2, 3, 1)), ((2, 2, 2), (2, 2))])
def test_solve_jacobians_batched_equal_one_direction(ashape, bshape, dtype):
    # NumPy 2 reads b as a stack of vectors only when it is 1-D: ((2, 2, 2),
    # (2, 2)) is one 2 x 2 right-hand side per matrix; the batch axis of the
    # directions must never change that reading
    a = _well(ashape, dtype, 1)
    b = (np.random.default_rng(2).standard_normal(bshape)).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    for mode in ("forward", "reverse"):
        for argnums in (0, 1, (0, 1)):
            hol = np.dtype(dtype).kind == "c"
            J = cr.jacobian(np.linalg.solve, argnums=argnums, mode=mode, holomorphic=hol)(a, b)
            J1 = cr.jacobian(np.linalg.solve, argnums=argnums, mode=mode, holomorphic=hol,
                             chunk_size=1)(a, b)
            for got, ref in zip(J if isinstance(J, tuple) else (J,),
                                J1 if isinstance(J1, tuple) else (J1,)):
                np.testing.assert_allclose(got, ref, **tol)
    if np.dtype(dtype).kind != "c" and ashape == (3, 3) and bshape == (3,):
        # dx/db = a^-1
        Jb = cr.jacobian(np.linalg.solve, argnums=1)(a, b)
        np.testing.assert_allclose(Jb, np.linalg.inv(a), **tol)


def test_logdet_hessian_batched_is_exact():
    # f(x) = logdet(M), M = S + x x^T:
    # H = 2 (M^-1 - (x^T M^-1 x) M^-1 - M^-1 x x^T M^-1)
    n = 5
    s = _well((n, n), "float64", 3)
    s = s @ s.T
    x = np.random.default_rng(4).standard_normal(n)

    def f(x):
        return np.linalg.slogdet(s + np.outer(x, x))[1]

    mi = np.linalg.inv(s + np.outer(x, x))
    u = mi @ x
    ref = 2 * (mi - (x @ u) * mi - np.outer(u, u))
    for chunk in (None, 1, 2, 5):
        np.testing.assert_allclose(cr.hessian(f, chunk_size=chunk)(x), ref, rtol=1e-10,
                                   atol=1e-12)
    g = lambda x: np.log(np.linalg.det(s + np.outer(x, x)))
    np.testing.assert_allclose(cr.hessian(g)(x), ref, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("op", [
    lambda a: np.linalg.qr(a)[1],                              # transposed pullback
    lambda a: np.linalg.pinv(a),
    lambda a: np.linalg.eigvalsh(a + a.T),
    lambda a: np.linalg.inv(a),
    lambda a: np.linalg.matrix_power(a, -2),
    lambda a: np.linalg.lstsq(a, np.arange(3.0), rcond=None)[0],
    lambda a: np.linalg.cholesky(a @ a.T),                     # a hand-written HVP
])
def test_linalg_batched_jacobians_and_hessians(op):
    a = _well((3, 3), "float64", 5)
    for mode in ("forward", "reverse"):
        J = cr.jacobian(op, mode=mode)(a)
        J1 = cr.jacobian(op, mode=mode, chunk_size=1)(a)
        np.testing.assert_allclose(J, J1, rtol=1e-11, atol=1e-12)
    f = lambda a: np.sum(np.sin(op(a)))
    np.testing.assert_allclose(cr.hessian(f)(a), cr.hessian(f, chunk_size=1)(a),
                               rtol=1e-10, atol=1e-11)


def test_linalg_rule_batches_inside_grad():
    # a Hessian of solve inside grad: the batched sweep runs on values traced
    # by the outer tape (the per-direction paths, which record their work)
    a0 = _well((3, 3), "float64", 6)
    b = np.arange(1.0, 4.0)

    def outer(t):
        H = cr.hessian(lambda x: np.sum(np.linalg.solve(a0 * t[0] + np.diag(x ** 2), b) ** 2)
                       + np.linalg.slogdet(a0 * t[1] + np.outer(x, x))[1])(t)
        Jr = cr.jacobian(lambda x: np.linalg.qr(a0 * t[2] + np.diag(x ** 2))[1],
                         mode="reverse")(t)
        Jf = cr.jacobian(lambda x: np.linalg.solve(a0 * t[0] + np.diag(x), b * t[1]),
                         mode="forward")(t)
        return np.sum(H ** 2) + np.sum(Jr ** 2) + np.sum(Jf ** 2)

    t0 = np.array([1.1, 0.4, -0.3])
    g = cr.grad(outer)(t0)
    h = 1e-6
    fd = np.array([(outer(t0 + h * e) - outer(t0 - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
