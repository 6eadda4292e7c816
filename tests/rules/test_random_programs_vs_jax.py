"""Random NumPy programs against JAX.

Hypothesis draws a program: a chain of steps over a (4, 5) float64 array
(or a (256, 300) one, large enough to be fused),
each an elementwise function or an operation that mixes entries or changes
the shape (slices, transposes, reductions broadcast back, sorts, cumsums,
concatenations, matrix products, a solve, einsum, a log-sum-exp), ending in
a scalar loss. The program is written once against a NumPy-like namespace
``xp``: run on traced values with ``np`` for chainrules and with
``jax.numpy`` for JAX. The value, the gradient (``value_and_grad``) and the
Hessian-vector product (``hvp``, forward over reverse; and ``jacobian`` of
the gradient for some programs) must agree with JAX's (``jax.grad``,
``jax.jvp`` of ``jax.grad``) to 1e-9 relative.

The steps avoid points where the derivative is not defined (no exact ties
in maxima and sorts, no kinks at zero) and grow at most linearly in their
values, by factors that do not grow with the size (products go through
``tanh``, sums are divided by their length), so that the derivatives are well
conditioned and both libraries must agree closely (nested cubics reached
gradients of 1e18 that neither computes to better than 1e-6). ``sinc`` is
left out: near 0 JAX's derivative loses digits (1.4e-7 relative at
sin(x) = -2.2e-5, against mpmath) where chainrules' series is exact. JAX
is a peer installed by CI (``pip install -e ".[peers]"``); without it the
test is skipped.

A second family of steps reaches the rules beyond NumPy's elementwise
core: SciPy's special functions, complex intermediates (``exp(1j v)``,
FFTs), and matrix functions of a well-conditioned symmetric positive
definite matrix built from the values (inverse, Cholesky, determinants,
eigenvalues and eigenvectors, ``expm``, triangular and Cholesky solves),
SVD, QR, pinv and spectral and nuclear norms of full-rank matrices (the
values plus twice the identity), quantiles and medians,
``interp``, ``polyval``, ``convolve``, ``kron``, padding and tiling. Their
matrices have distinct eigenvalues and full rank, where the derivatives
exist: at a repeated eigenvalue or a rank-deficient QR chainrules raises
``DomainError`` instead.
"""

import types
import warnings

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
import chainrules.scipy.linalg
import chainrules.scipy.special

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = pytest.importorskip("jax.numpy")
import jax.scipy.linalg  # noqa: E402
import jax.scipy.special  # noqa: E402

#: the SciPy functions of each side: SciPy's ufuncs trace as they are;
#: chainrules' own versions of the functions that convert their arguments
SCIPY = {np: types.SimpleNamespace(special=scipy.special, lse=chainrules.scipy.special,
                                   linalg=chainrules.scipy.linalg),
         jnp: types.SimpleNamespace(special=jax.scipy.special, lse=jax.scipy.special,
                                    linalg=jax.scipy.linalg)}


#: staged results are compared with eager ones bit for bit: the joined
#: products (matrix_power's, _spd's gradients) are checked within their bound elsewhere
pytestmark = pytest.mark.usefixtures("without_joined_products")


SHAPE = (4, 5)
#: large enough that the sweeps fuse, in blocks, on threads
LARGE = (256, 300)
W = np.random.default_rng(99).standard_normal((300, 300))

#: elementwise steps: smooth everywhere the programs reach
UNARY = [
    lambda xp, v: xp.sin(v),
    lambda xp, v: xp.tanh(v),
    lambda xp, v: xp.exp(xp.tanh(v)),
    lambda xp, v: xp.log1p(v * v),
    lambda xp, v: xp.sqrt(v * v + 1.0),
    lambda xp, v: xp.sqrt(v * v + 0.5) * xp.tanh(v),
    lambda xp, v: xp.arctan(v),
    lambda xp, v: 1.0 / (1.0 + v * v),
    lambda xp, v: xp.cosh(xp.tanh(v)),
    lambda xp, v: xp.maximum(v, 0.1 * v + 0.05),
    lambda xp, v: xp.clip(v, -0.8, 0.9) + 0.01 * v,
    lambda xp, v: xp.where(v > 0.2, v * xp.tanh(v), -v),
    lambda xp, v: xp.tanh(v) ** 3 - 0.5 * v,
    lambda xp, v: xp.expm1(xp.tanh(v)),
    lambda xp, v: xp.logaddexp(v, 0.3),
    lambda xp, v: xp.arctan2(v, 1.3),
    lambda xp, v: xp.hypot(v, 0.7),
    lambda xp, v: xp.power(xp.tanh(v) ** 2 + 1.0, 0.7) * v,
    lambda xp, v: v / xp.sqrt(xp.mean(v * v) + 1.0),
]


def _log_softmax(xp, v):
    """Over axis 0, shifted by the maximum: unshifted, ``exp`` of a cumsum's
    hundreds overflows, and JAX's HVP of it was off by 38 where chainrules'
    agreed with differences of the gradient to 2e-7."""
    top = xp.max(v, axis=0, keepdims=True)
    return v - top - xp.log(xp.sum(xp.exp(v - top), axis=0, keepdims=True))


def _mixing(shape):
    """Steps that mix entries or change the shape, for values of ``shape``:
    ``(function of (xp, v), the shape it gives)``."""
    m, n = shape
    a = W[:n, :n] / np.sqrt(n)
    steps = [
        (lambda xp, v: v.T, (n, m)),
        (lambda xp, v: v[::-1], (m, n)),
        (lambda xp, v: xp.cumsum(v, axis=1) / n, (m, n)),
        (lambda xp, v: v - xp.mean(v, axis=0, keepdims=True), (m, n)),
        (lambda xp, v: v / (xp.sum(v * v, axis=1, keepdims=True) + 1.0), (m, n)),
        (lambda xp, v: xp.concatenate([v, v[:1] * 2.0 + 0.1], axis=0), (m + 1, n)),
        (lambda xp, v: xp.stack([v[:, 0], v[:, -1]], axis=1), (m, 2)),
        (lambda xp, v: v.reshape(n, m), (n, m)),
        (lambda xp, v: xp.sort(v, axis=1), (m, n)),
        (lambda xp, v: v @ xp.asarray(a), (m, n)),
        (lambda xp, v: xp.einsum("ij,ij->ij", v, xp.tanh(v[::-1])), (m, n)),
        (lambda xp, v: xp.max(v, axis=1, keepdims=True) + v, (m, n)),
        (lambda xp, v: _log_softmax(xp, v), (m, n)),
        (lambda xp, v: xp.roll(v, 1, axis=0), (m, n)),
        (lambda xp, v: xp.tanh(xp.flip(v, axis=1)) * v, (m, n)),
        (lambda xp, v: xp.outer(xp.tanh(v[:, 0]), xp.tanh(v[0, :])) + v, (m, n)),
        (lambda xp, v: xp.prod(xp.tanh(v[:, :2]) * 0.5 + 1.5, axis=1, keepdims=True) * v,
         (m, n)),
        (lambda xp, v: xp.linalg.norm(v, axis=0, keepdims=True) / m + v, (m, n)),
        (lambda xp, v: xp.var(xp.tanh(v), axis=1, keepdims=True) * v, (m, n)),
        (lambda xp, v: xp.linalg.solve(xp.asarray(W[:m, :m] / np.sqrt(m)) + 3.0 * xp.eye(m),
                                       v), (m, n)),
        (lambda xp, v: v[xp.asarray([2, 0, 1])] if m >= 3 else v, (3, n) if m >= 3 else (m, n)),
        (lambda xp, v: xp.swapaxes(v, 0, 1) @ xp.tanh(v) / m, (n, n)),
        (lambda xp, v: v + xp.sum(v, axis=0)[None, :] / m, (m, n)),
    ]
    if m > 2:
        steps.append((lambda xp, v: v[1:] - v[:-1], (m - 1, n)))
    if n > 2:
        steps.append((lambda xp, v: v[:, 1:] * xp.tanh(v[:, :-1]), (m, n - 1)))
    return steps


#: elementwise steps of the second family
UNARY_MORE = [
    lambda xp, v: SCIPY[xp].special.erf(v),
    lambda xp, v: SCIPY[xp].special.expit(v),
    lambda xp, v: SCIPY[xp].special.gammaln(v * v + 1.0),
    lambda xp, v: SCIPY[xp].special.digamma(v * v + 1.0),
    lambda xp, v: SCIPY[xp].special.xlogy(v * v + 0.5, v * v + 1.0),
    lambda xp, v: SCIPY[xp].special.log_ndtr(v),
    lambda xp, v: SCIPY[xp].special.ndtri(SCIPY[xp].special.expit(v) * 0.9 + 0.05),
    lambda xp, v: SCIPY[xp].special.i0(xp.tanh(v)),
    lambda xp, v: SCIPY[xp].special.erfc(v),
    lambda xp, v: xp.abs(v + 0.123),
    lambda xp, v: xp.cbrt(v * v + 1.0),
    lambda xp, v: xp.log10(v * v + 1.0),
    lambda xp, v: xp.exp2(xp.tanh(v)),
    lambda xp, v: xp.arcsinh(v),
    lambda xp, v: xp.abs(xp.exp(1j * v) * (v + 2.0j)),
    lambda xp, v: xp.real(xp.exp((0.3 + 0.7j) * xp.tanh(v))),
    lambda xp, v: xp.angle(v + 1.5j),
    lambda xp, v: xp.fmax(v, 0.2 * v + 0.011),
    lambda xp, v: xp.sign(v + 0.123) * v * v,
]


def _spd(xp, v):
    """A symmetric positive definite matrix of ``v``'s rows, its
    eigenvalues apart (the diagonal 1, 2, ..., m)."""
    m, n = v.shape
    return v @ v.T / n + xp.diag(xp.arange(1.0, m + 1.0))


def _mixing_more(shape):
    """``_mixing`` of the second family."""
    m, n = shape
    k = min(m, n)
    sp = SCIPY
    steps = [
        (lambda xp, v: xp.linalg.inv(_spd(xp, v)) @ v, (m, n)),
        (lambda xp, v: xp.linalg.cholesky(_spd(xp, v)) @ v, (m, n)),
        (lambda xp, v: v * xp.linalg.slogdet(_spd(xp, v))[1] / m, (m, n)),
        (lambda xp, v: v * xp.linalg.det(_spd(xp, v) / m), (m, n)),
        (lambda xp, v: v + xp.linalg.eigvalsh(_spd(xp, v))[:, None] / m, (m, n)),
        (lambda xp, v: (xp.linalg.eigh(_spd(xp, v))[1] ** 2) @ v, (m, n)),
        (lambda xp, v: v + xp.linalg.svd(v + 2.0 * xp.eye(m, n), compute_uv=False)[0] / m,
         (m, n)),
        (lambda xp, v: xp.linalg.pinv(v + 2.0 * xp.eye(m, n)) / m, (n, m)),
        (lambda xp, v: xp.linalg.qr(v + 3.0 * xp.eye(m, n))[1 if m >= n else 0],
         (k, n) if m >= n else (m, k)),
        (lambda xp, v: xp.linalg.matrix_power(_spd(xp, v) / m, 3) @ v, (m, n)),
        (lambda xp, v: v * xp.linalg.norm(v + 2.0 * xp.eye(m, n), 2) / m, (m, n)),
        (lambda xp, v: v * xp.linalg.norm(v + 2.0 * xp.eye(m, n), "nuc") / (m * n), (m, n)),
        (lambda xp, v: sp[xp].linalg.solve_triangular(xp.linalg.cholesky(_spd(xp, v)), v,
                                                      lower=True), (m, n)),
        (lambda xp, v: sp[xp].linalg.cho_solve((xp.linalg.cholesky(_spd(xp, v)), True), v),
         (m, n)),
        (lambda xp, v: sp[xp].linalg.expm(_spd(xp, v) / (4.0 * m)) @ v, (m, n)),
        (lambda xp, v: xp.abs(xp.fft.fft(v, axis=1)) / n, (m, n)),
        (lambda xp, v: xp.fft.irfft(xp.fft.rfft(v, axis=1) * xp.exp(-0.1 * xp.arange(n // 2 + 1)),
                                    n=n, axis=1), (m, n)),
        (lambda xp, v: xp.real(xp.fft.ifft2(xp.fft.fft2(v) * (1 + 0.5j))), (m, n)),
        (lambda xp, v: sp[xp].lse.logsumexp(v, axis=1, keepdims=True) + v, (m, n)),
        (lambda xp, v: sp[xp].lse.softmax(v, axis=0) * n, (m, n)),
        (lambda xp, v: v * xp.std(v, axis=0, keepdims=True), (m, n)),
        (lambda xp, v: v + xp.ptp(v, axis=1, keepdims=True), (m, n)),
        (lambda xp, v: xp.cumprod(xp.tanh(v) * 0.2 + 1.0, axis=0) / m, (m, n)),
        (lambda xp, v: xp.take_along_axis(v, xp.argsort(v, axis=1), axis=1), (m, n)),
        (lambda xp, v: xp.tensordot(v, xp.tanh(v), axes=([0], [0])) / m, (n, n)),
        (lambda xp, v: v + xp.trace(_spd(xp, v)) / m, (m, n)),
        (lambda xp, v: xp.tril(v) + xp.triu(v, 1) * 0.5, (m, n)),
        (lambda xp, v: xp.pad(v, ((1, 0), (0, 2))), (m + 1, n + 2)),
        (lambda xp, v: xp.tile(v, (1, 2)), (m, 2 * n)),
        (lambda xp, v: xp.repeat(v, 2, axis=0), (2 * m, n)),
        (lambda xp, v: xp.average(v, axis=0, weights=xp.arange(1.0, m + 1))[None, :] + v, (m, n)),
        (lambda xp, v: xp.polyval(xp.tanh(v[0, :3]), xp.tanh(v)), (m, n)),
        (lambda xp, v: xp.convolve(v.ravel(), xp.array([0.2, 0.5, 0.3]), mode="same")
         .reshape(m, n), (m, n)),
        (lambda xp, v: xp.linalg.norm(v, axis=1, ord=1, keepdims=True) / n + v, (m, n)),
        (lambda xp, v: xp.percentile(v, 30.0, axis=1, keepdims=True) + v, (m, n)),
        (lambda xp, v: xp.median(v, axis=0, keepdims=True) + v, (m, n)),
        (lambda xp, v: xp.interp(xp.tanh(v), xp.linspace(-1.0, 1.0, 7),
                                 xp.cos(xp.arange(7.0))) + v, (m, n)),
        (lambda xp, v: xp.linalg.solve(_spd(xp, v), v), (m, n)),
        (lambda xp, v: xp.hstack([v, xp.sin(v)]), (m, 2 * n)),
        (lambda xp, v: xp.vstack([v, xp.tanh(v) ** 2]), (2 * m, n)),
    ]
    if n > 1:
        steps.append((lambda xp, v: xp.diff(v, axis=1), (m, n - 1)))
    if m > 1 and n > 1:
        steps.append((lambda xp, v: xp.kron(v[:2, :2], xp.tanh(v)) / 2.0, (2 * m, 2 * n)))
    # (steps that would make the matrices larger than 12 x 12 are left out)
    return [(f, sh) for f, sh in steps if sh[0] <= 12 and sh[1] <= 12]


@st.composite
def programs(draw):
    """A list of ``("u", k)`` (the k-th unary step) and ``("m", k)`` (the
    k-th mixing step for the shape at that point, modulo how many there
    are), between two and seven long."""
    return draw(st.lists(st.tuples(st.sampled_from("um"), st.integers(0, 10 ** 6)),
                         min_size=2, max_size=7))


def _run(program, xp, unary=UNARY, mixing=_mixing):
    def f(x):
        v, shape = x, x.shape
        for kind, k in program:
            if kind == "u":
                v = unary[k % len(unary)](xp, v)
            else:
                steps = mixing(shape)
                step, shape = steps[k % len(steps)]
                v = step(xp, v)
        return xp.sum(v * xp.cos(v)) + 0.1 * xp.sum(v ** 2)
    return f


def _close(a, b, value):
    """Within 1e-9 of the largest entry of ``b``, or of rounding errors
    of the loss's scale: a saturated ``tanh`` makes a whole gradient tiny
    (1e-8), and ``1 - tanh(v)**2`` then cancels to a few ulps of 1."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.isfinite(b).all()
    return np.max(np.abs(a - b)) <= 1e-9 * np.max(np.abs(b)) + 1e-13 * (1 + abs(value))


def _check(program, seed, shape, hessian, family=(UNARY, _mixing), exact=True):
    """``exact``: staged results are eager's bit for bit at ``SHAPE`` (no
    fused region reorders there)."""
    rng = np.random.default_rng(seed)
    x, v = rng.standard_normal(shape), rng.standard_normal(shape)
    f, fj = _run(program, np, *family), _run(program, jnp, *family)
    ref_value = float(fj(jnp.asarray(x)))
    ref_grad = np.asarray(jax.grad(fj)(jnp.asarray(x)))
    ref_hvp = np.asarray(jax.jvp(jax.grad(fj), (jnp.asarray(x),), (jnp.asarray(v),))[1])
    value, grad = cr.value_and_grad(f)(x)
    assert abs(value - ref_value) <= 1e-9 * (abs(ref_value) + 1), (value, ref_value)
    assert _close(grad, ref_grad, value), program
    assert _close(cr.hvp(f, x, v), ref_hvp, value), program
    if hessian:  # the whole Hessian, one batched sweep
        hess = cr.hessian(f)(x).reshape(x.size, x.size)
        assert _close(hess @ v.ravel(), ref_hvp.ravel(), value), program
    # staged plans (cr.jit): recorded, checked, then replayed after each
    # stage of the plan's passes (one per call), here and at a second point
    # of the same signature, each against JAX
    x2 = rng.standard_normal(shape)
    ref2 = np.asarray(jax.grad(fj)(jnp.asarray(x2)))
    staged_vg = cr.jit(cr.value_and_grad(f))
    staged_hvp = cr.jit(lambda x, v: cr.hvp(f, x, v))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cr.StagingWarning)
        eager_hvp = cr.hvp(f, x, v)
        for point, ref_g in [(x, ref_grad)] * (2 + _stages(staged_vg, x)) + [(x2, ref2)]:
            sv, sg = staged_vg(point)
            assert _close(sg, ref_g, sv), ("staged", program)
            if exact and shape == SHAPE:  # (no fused region reorders: eager's bits)
                ev, eg = cr.value_and_grad(f)(point)
                assert _same_bits(sg, eg) and _same_bits(sv, ev), ("staged bits", program)
        for _ in range(2 + _stages(staged_hvp, x, v)):
            sh = staged_hvp(x, v)
            assert _close(sh, ref_hvp, value), ("staged hvp", program)
            assert not exact or shape != SHAPE or _same_bits(sh, eager_hvp), (
                "staged hvp bits", program)
    for staged, args in ((staged_vg, (x,)), (staged_hvp, (x, v))):
        plan = staged.plan(*args)
        assert plan is None or plan._stages.left == 0  # (every stage replayed above)
    if family[0] is UNARY:  # NumPy's own steps are all staged
        assert staged_vg.cache_info()["eager"] == 0, staged_vg.eager_reasons()
        assert staged_hvp.cache_info()["eager"] == 0, staged_hvp.eager_reasons()


def _stages(staged, *args):
    """How many stages of its plan's passes ``staged(*args)`` runs, one per
    replay after the check (``plan_stages``): every one of a plan of the
    same structure (a fresh recording that is thrown away)."""
    probe = cr.jit(staged.fun, warn=False)
    plan = probe.plan(*args)
    return 0 if plan is None else plan._stages.left


def _same_bits(a, b):
    """Equal bit for bit: signed zeros too, NaN where the other has NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    nan = np.isnan(a) & np.isnan(b)
    return not (((a != b) | (np.signbit(a) != np.signbit(b))) & ~nan).any()


@settings(max_examples=50, deadline=None)
@given(programs(), st.integers(0, 2 ** 16))
def test_random_program_matches_jax(program, seed):
    _check(program, seed, SHAPE, hessian=seed % 4 == 0)


@settings(max_examples=10, deadline=None)
@given(programs(), st.integers(0, 2 ** 16))
def test_large_random_program_matches_jax(program, seed):
    """76,800 elements: regions of elementwise rules are fused (at the
    library's own thresholds), and split into blocks and over two threads."""
    with cr.fusion(threads=2):
        _check(program, seed, LARGE, hessian=False)


@settings(max_examples=40, deadline=None)
@given(programs(), st.integers(0, 2 ** 16))
def test_random_program_of_scipy_linalg_and_complex_steps_matches_jax(program, seed):
    _check(program, seed, SHAPE, hessian=seed % 4 == 0, family=(UNARY_MORE, _mixing_more))
