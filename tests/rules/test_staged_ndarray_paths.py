"""Rules whose fast or closed-form paths were taken for ndarrays only: a
staged value of an ndarray (``cr.jit``'s recording) takes the same path,
so that a replay makes eager code's operations (bit for bit, signed zeros
included) and no more steps or memory. Where the path depends on the data
(ties, zeros, a negative base), the plan guards the decision and records
another variant when it changes."""

import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.pytree import flatten


def _same_bits(a, b):
    la, lb = flatten(a)[0], flatten(b)[0]
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype.kind == "c":
            x, y = np.stack([x.real, x.imag]), np.stack([y.real, y.imag])
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        differ = ((x != y) | (np.signbit(x) != np.signbit(y))) & ~(np.isnan(x) & np.isnan(y))
        if differ.any():
            return False
    return True


def _staged_equals_eager(fn, *calls, strict=True):
    """``cr.jit(fn)`` at each argument tuple of ``calls`` (each called four
    times: record, check, then, every stage of the plan's passes run, two
    replays) equals ``fn`` bit for bit; returns the jitted function."""
    staged = cr.jit(fn, strict=strict)
    for args in calls:
        want = fn(*args)
        for k in range(4):
            assert _same_bits(staged(*args), want)
            if k == 1:
                staged.plan(*args).prepare()
    assert staged.cache_info()["eager"] == 0, staged.eager_reasons()
    return staged


def _plan_lines(staged, *args):
    return len(str(staged.plan(*args)).splitlines())


# -- solve_triangular --------------------------------------------------------------
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("vec", [True, False])
def test_staged_solve_triangular_takes_the_closed_forms(vec, trans, unit):
    # the outer-product pullback (a vector right-hand side) and the
    # closed-form second order (LAPACK solves) on staged values too: with a
    # unit diagonal, the first-order cotangent's diagonal was +0 eagerly and
    # -0 staged where gb x^T was negative
    from chainrules.scipy.linalg import solve_triangular

    rng = np.random.default_rng(3)
    n = 4
    a = np.tril(rng.normal(size=(n, n))) + 3 * np.eye(n)
    b = rng.normal(size=(n,) if vec else (n, 2))

    def loss(a, b):
        x = solve_triangular(a, b, lower=True, trans=trans, unit_diagonal=unit)
        return np.sum(np.sin(x)) + 0.5 * np.sum(x * x)

    _staged_equals_eager(cr.value_and_grad(loss, argnums=(0, 1)), (a, b), (a * 1.01, b))
    hvp = _staged_equals_eager(lambda a, v: cr.hvp(lambda z: loss(z, b), a, v),
                               (a, np.ones_like(a)))
    # the closed form: three triangular solves for the second order, no
    # forward-mode pass over the traced pullback
    code = str(hvp.plan(a, np.ones_like(a)))
    assert code.count("check_finite=False") == 3, code


# -- batched sweeps (Hessians, Jacobians) ------------------------------------------------
def _mlp(x_data, w2):
    return lambda w: np.sum(np.tanh(np.tanh(x_data @ w) @ w2.T))


@pytest.mark.parametrize("name, f, shape", [
    ("matmul", _mlp(np.random.default_rng(0).normal(size=(16, 6)),
                    np.random.default_rng(1).normal(size=(5, 5))), (6, 5)),
    ("sum(axis=0)", lambda x: np.sum(np.tanh(np.sum(np.sin(x), axis=0)) ** 2), (6, 5)),
    ("fft", lambda x: np.sum(np.abs(np.fft.fft(np.sin(x), axis=1)) ** 2), (6, 5)),
    ("slices", lambda x: np.sum((x[1:] - x[:-1] ** 2) ** 2), (6, 5)),
])
def test_staged_hessians_sweep_a_batch_as_eager_code(name, f, shape):
    # a staged value takes the batched forms of matmul (one GEMM over the
    # batch), linear reductions, FFTs and basic indexing as an ndarray
    # does: not one step per direction (30 here), and eager code's bits
    x = np.random.default_rng(2).normal(size=shape) * 0.3
    staged = _staged_equals_eager(cr.hessian(f), (x,))
    assert _plan_lines(staged, x) < 150, name


def test_gather_transpose_batched_of_a_traced_cotangent():
    # the batched transpose of x[basic] writes into zeros of the cotangent's
    # type: a traced cotangent (a Jacobian inside a gradient, the gather's
    # own input constant) makes a traced buffer, differentiated in turn
    c = np.array([1.5, -0.4, 0.8, 2.2])

    def f(x):
        jac = cr.jacobian(lambda z: np.sin(z[1:]) * x[0] + z[:-1] * x[1] ** 2)(c)
        return np.sum(jac ** 2) + np.sum(np.sin(jac))

    x = np.array([0.3, 1.2, -0.7, 2.0])
    eps = 1e-6
    fd = np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(cr.grad(f)(x), fd, rtol=1e-7, atol=1e-8)


# -- arithmetic ---------------------------------------------------------------------------
def test_staged_maximum_ties_are_guarded():
    # no tie: the comparison mask is the weight; a tie: halves. The plan
    # guards which, and records another variant when ties appear
    vg = cr.grad(lambda x, y: np.sum(np.maximum(x, y) ** 2), argnums=(0, 1))
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.0, 5.0, 1.0])
    tie = np.array([1.0, 5.0, 3.0])
    staged = _staged_equals_eager(vg, (x, y), (tie, y), (x, y))
    assert staged(tie, y)[0][1] == 5.0


@pytest.mark.parametrize("y", [np.float64(0.0), np.array(0.0), np.array([0.0, 0.0, 0.0]),
                               np.float64(1.0)])
def test_power_derivative_in_the_base_at_zero_with_a_traced_exponent(y):
    # d/dx x**y = y x**(y-1) is 0 where y == 0 (and the second derivative
    # where y == 1), also at x == 0: a scalar exponent took the product
    # 0 * inf = NaN eagerly (and the plan's where-form 0 staged, so the plan
    # failed its check and ran eagerly)
    x = np.array([0.0, 1.0, 2.0])
    g = cr.grad(lambda x, y: np.sum(x ** y), argnums=(0, 1))
    one = float(np.ravel(y)[0]) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) of the exponent's partial
        gx, _ = g(x, y)
        np.testing.assert_array_equal(gx, np.ones(3) if one else np.zeros(3))
        _staged_equals_eager(g, (x, y))
        if one:  # the second derivative in the base, the exponent traced
            h = cr.hessian(lambda v: np.sum(v[:3] ** v[3]))(np.append(x, y))
            np.testing.assert_array_equal(np.diagonal(h)[:3], np.zeros(3))


def test_staged_negative_base_with_traced_exponent_raises_as_eager():
    # the base's sign is checked on a staged value too (guarded): the first
    # staged call with a negative base raises DomainError as eager code
    # does, where it returned a derivative before
    g = cr.grad(lambda x, y: np.sum(x ** y), argnums=(0, 1))
    staged = cr.jit(g)
    neg = np.array([-1.0, 2.0])
    with pytest.raises(cr.DomainError):
        staged(neg, np.float64(2.0))
    pos = np.array([1.0, 2.0])
    for _ in range(3):
        assert _same_bits(staged(pos, np.float64(2.0)), g(pos, np.float64(2.0)))
    with pytest.raises(cr.DomainError):  # the guard sees the sign change
        staged(neg, np.float64(2.0))


def test_staged_scalar_factor_cotangent_sums_as_eager():
    # the cotangent of a scalar factor of a float64 product: one einsum
    # (not pairwise) eagerly, and now in the plan too
    x = np.random.default_rng(4).normal(size=1000)
    for a in (np.float64(0.7), np.array(0.7)):
        _staged_equals_eager(cr.value_and_grad(lambda a, x: np.sum(np.sin(a * x)),
                                               argnums=(0, 1)), (a, x))


def test_staged_complex_nan_to_num_takes_one_mask():
    z = np.random.default_rng(5).normal(size=50) * (1 + 1j)
    z[::7] = np.nan
    other = z.copy()
    other[3] = complex(np.nan, 1.0)  # parts replaced at different places
    f = cr.grad(lambda z: np.sum(np.abs(np.nan_to_num(z * (1 - 2j))) ** 2))
    _staged_equals_eager(f, (z,), (other,), (z,))


# -- scipy.linalg solvers of plain arrays -----------------------------------------------
def test_staged_scipy_solvers_of_plain_arrays_call_scipy():
    # SciPy's own solver for arrays not being differentiated, staged too
    # (Lyapunov by solve_sylvester differed in 19 of 25 entries)
    from chainrules.scipy.linalg import (solve_banded, solve_continuous_lyapunov,
                                         solveh_banded)

    rng = np.random.default_rng(0)
    n = 5
    a, q = rng.normal(size=(n, n)) - 3 * np.eye(n), rng.normal(size=(n, n))
    ab, b = rng.normal(size=(3, n)), rng.normal(size=n)
    ab[1] += 4
    hb = np.abs(rng.normal(size=(2, n)))
    hb[1] += 4
    _staged_equals_eager(solve_continuous_lyapunov, (a, q))
    _staged_equals_eager(lambda ab, b: solve_banded((1, 1), ab * 1.0, b, overwrite_ab=True),
                         (ab, b))
    _staged_equals_eager(lambda ab, b: solveh_banded(ab, b * 1.0, overwrite_b=True), (hb, b))


# -- power -----------------------------------------------------------------------------
def test_staged_power_of_a_computed_scalar_exponent_takes_the_scalar_path():
    # an exponent computed from the inputs but not differentiated (a count
    # chosen by a mask, as scipy.stats.geom.pmf's k - 1) is a NumPy scalar
    # eagerly, whose power takes the scalar-exponent rule; staged it took the
    # general rule (its HVP an ulp apart). Its value is guarded.
    def loss(z):
        k = np.where(z < 1, 7.0, 1.0) - 1
        r = np.power(1 - z, k)
        return np.sum(r) + 0.5 * np.sum(r * r)

    def hvp(z, v):
        return cr.hvp(loss, z, v)

    p, one = np.float64(0.8286980519104733), np.float64(1.0)
    _staged_equals_eager(hvp, (p, one), (np.float64(0.5), one), (np.float64(1.5), one))


# -- svd ---------------------------------------------------------------------------------
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_staged_svd_checks_stay_staged(full, dtype):
    # the svd pullback's checks (a non-square input of full rank, singular
    # values that do not repeat) read the values as staged arrays: they were
    # converted with np.asarray, and the whole signature ran eagerly
    rng = np.random.default_rng(6)
    a = rng.normal(size=(4, 2)).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * rng.normal(size=(4, 2))

    def loss(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        k = s.shape[-1]
        return np.sum(np.abs(u[:, :k] * s) ** 2) + np.sum(s ** 3) + np.sum(np.real(vh) ** 2)

    staged = _staged_equals_eager(cr.value_and_grad(loss), (a,), (a.T.copy(),), (a * 1.5,))
    # the rank check is guarded: a rank-deficient input of the same signature
    # is refused as eagerly
    low = np.concatenate([a[:, :1], a[:, :1]], axis=1)
    with pytest.raises(cr.DomainError):
        cr.value_and_grad(loss)(low)
    with pytest.raises(cr.DomainError):
        staged(low)


# -- scipy.stats --------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["pdf", "logpdf", "logcdf"])
def test_staged_stats_masks_take_eager_branches(method):
    # every point inside the support and every parameter valid: eager code
    # skips the safe where and the other branch; the cotangents of x, loc and
    # scale then sum fewer terms, in another order (an ulp apart staged)
    from chainrules.scipy import stats

    rng = np.random.default_rng(0)
    x, df = rng.normal(size=1), rng.uniform(1, 8, size=2)
    loc, scale = rng.uniform(-0.5, 0.5, size=1), rng.uniform(0.8, 2.0, size=1)

    def loss(x, loc, scale):
        r = getattr(stats.t, method)(x, df, loc=loc, scale=scale)
        return np.sum(r) + 0.5 * np.sum(r * r)

    _staged_equals_eager(cr.value_and_grad(loss, argnums=(0, 1, 2)), (x, loc, scale))


# -- eigh, qr, eig -------------------------------------------------------------------
def _spectral_cases():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(4, 4))
    sym = a + a.T
    tall = rng.normal(size=(5, 3))

    def eigh_loss(a):
        w, v = np.linalg.eigh(a)
        return np.sum(w ** 3) + np.sum(v[0] ** 3)

    def qr_loss(a):
        q, r = np.linalg.qr(a)
        return np.sum(q ** 3) + np.sum(np.sin(r))

    def eig_loss(a):
        w, v = np.linalg.eig(a)
        return np.sum(np.real(w) ** 3) + np.sum(np.abs(v[0]) ** 3)

    def eigvals_loss(a):
        return np.sum(np.real(np.linalg.eigvals(a)) ** 3)

    jordan = np.diag([1.0, 1.0, 2.0, 3.0]) + np.diag([1.0, 0.0, 0.0], 1)
    q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    repeated = q @ np.diag([1.0, 1.0, 2.0, 3.0]) @ q.T
    return {
        # name: (loss, point, other point, input where the check refuses)
        "eigh": (eigh_loss, sym, sym * 1.5 + np.eye(4), (repeated + repeated.T) / 2),
        "qr": (qr_loss, tall, tall[::-1].copy(),
               np.concatenate([tall[:, :2], tall[:, :1]], axis=1)),
        "eig": (eig_loss, a, a.T.copy(), jordan),
        "eigvals": (eigvals_loss, a, a.T.copy(), jordan),
    }


@pytest.mark.parametrize("name", ["eigh", "qr", "eig", "eigvals"])
def test_staged_spectral_checks_stay_staged(name):
    # the pullback checks of eigh (repeated eigenvalues), qr (rank) and eig
    # (a defective matrix) read the values as staged arrays: they were
    # converted with np.asarray, and the whole signature ran eagerly
    loss, x, x2, bad = _spectral_cases()[name]
    vg = _staged_equals_eager(cr.value_and_grad(loss), (x,), (x2,))
    hvp = _staged_equals_eager(lambda a, v: cr.hvp(loss, a, v), (x, np.ones_like(x)),
                               (x2, x))
    for fn, staged, args in ((cr.value_and_grad(loss), vg, (bad,)),
                             (lambda a, v: cr.hvp(loss, a, v), hvp, (bad, np.ones_like(bad)))):
        assert staged.plan(x, *args[1:]) is not None
        with pytest.raises(cr.DomainError):
            fn(*args)
        # the check is a guard: the replay at the refused input fails it,
        # and the new recording raises as eager does
        with pytest.raises(cr.DomainError):
            staged(*args)
        # and the staged plans are still those of the good inputs
        assert _same_bits(staged(x, *args[1:]), fn(x, *args[1:]))
