"""chainrules.scipy.linalg twins written as compositions: same values as
SciPy (including its gauge), gradients against finite differences, batched
inputs, and the plain SciPy call's error naming the twin."""

import warnings

import numpy as np
import pytest

import chainrules as cr

sl = pytest.importorskip("scipy.linalg")
from chainrules.scipy import linalg as csl  # noqa: E402
from chainrules.rules._linalg_util import scipy_takes_batches  # noqa: E402


class _OneMatrixAtATime:
    """SciPy before 1.16 takes one matrix per call: as references, its
    functions are called on each matrix of a stack (every argument of more
    than two dimensions sliced alike) and the results stacked. The twins
    themselves batch on every SciPy."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        fn = getattr(self._module, name)

        def looped(*args, **kwargs):
            stacks = [a for a in args if isinstance(a, np.ndarray) and a.ndim > 2]
            if not stacks:
                return fn(*args, **kwargs)
            outs = [fn(*[a[i] if isinstance(a, np.ndarray) and a.ndim > 2 else a
                         for a in args], **kwargs) for i in range(stacks[0].shape[0])]
            if isinstance(outs[0], tuple):
                return tuple(np.stack(parts) for parts in zip(*outs))
            return np.stack(outs)
        return looped


if not scipy_takes_batches():
    sl = _OneMatrixAtATime(sl)

RNG = np.random.default_rng(0)
A = RNG.normal(size=(2, 3, 3))                      # batched general matrices
S = A @ np.swapaxes(A, -1, -2) + np.eye(3)          # batched SPD
B = RNG.normal(size=(2, 3, 2))
AC = A + 1j * RNG.normal(size=A.shape)
SC = AC @ np.conjugate(np.swapaxes(AC, -1, -2)) + np.eye(3)
E1 = B[..., :1] * np.ones(3)


def _fd_vjp(f, x, w, h=1e-6):
    out = np.zeros(x.shape, x.dtype)
    for idx in np.ndindex(*x.shape):
        for unit in ((1,) if x.dtype.kind != "c" else (1, 1j)):
            e = np.zeros(x.shape, x.dtype)
            e[idx] = h * unit
            d = np.real(np.sum(w * (f(x + e) - f(x - e)))) / (2 * h)
            out[idx] += d * (1 if unit == 1 else -1j)
    return out


CASES = {
    "det": (lambda a: csl.det(a), lambda a: sl.det(a), A),
    "inv": (lambda a: csl.inv(a), lambda a: sl.inv(a), A),
    "solve": (lambda a: csl.solve(a, B), lambda a: sl.solve(a, B), A),
    "solve_vector": (lambda a: csl.solve(a[0], B[0, :, 0]), lambda a: sl.solve(a[0], B[0, :, 0]),
                     A),
    "solve_sym": (lambda a: csl.solve(a, B, assume_a="sym"),
                  lambda a: sl.solve(a, B, assume_a="sym"), A),
    "solve_pos_upper": (lambda a: csl.solve(a, B, assume_a="pos", lower=False),
                        lambda a: sl.solve(a, B, assume_a="pos", lower=False), S),
    "solve_her_complex": (lambda a: csl.solve(a, B, assume_a="her"),
                          lambda a: sl.solve(a, B, assume_a="her"), SC),
    "solve_transposed": (lambda a: csl.solve(a, B, transposed=True),
                         lambda a: sl.solve(a, B, transposed=True), A),
    "cholesky": (lambda a: csl.cholesky(a), lambda a: sl.cholesky(a), S),
    "cholesky_lower_complex": (lambda a: csl.cholesky(a, lower=True),
                               lambda a: sl.cholesky(a, lower=True), SC),
    "pinv": (lambda a: csl.pinv(a[..., :2]), lambda a: sl.pinv(a[..., :2]), A),
    "lstsq": (lambda a: csl.lstsq(a[0], B[0])[0], lambda a: sl.lstsq(a[0], B[0])[0], A),
    "lstsq_batched": (lambda a: csl.lstsq(a[..., :2], B)[0], lambda a: sl.lstsq(a[..., :2], B)[0],
                      A),
    "lstsq_batched_residues": (lambda a: csl.lstsq(a[..., :2], B)[1],
                               lambda a: sl.lstsq(a[..., :2], B)[1], A),
    "lstsq_batched_s": (lambda a: csl.lstsq(a, B)[3], lambda a: sl.lstsq(a, B)[3], A),
    "qr_pivoting_batched": (lambda a: csl.qr(a, pivoting=True)[1],
                            lambda a: sl.qr(a, pivoting=True)[1], A),
    "lstsq_residues": (lambda a: csl.lstsq(a[0, :, :2], B[0])[1],
                       lambda a: sl.lstsq(a[0, :, :2], B[0])[1], A),
    "eigh_values": (lambda a: csl.eigh(a)[0], lambda a: sl.eigh(a)[0], S),
    # (SciPy's sign choice can flip between x + h and x - h: compare squares)
    "eigh_vectors": (lambda a: csl.eigh(a)[1] ** 2, lambda a: sl.eigh(a)[1] ** 2, S),
    "eigh_complex": (lambda a: np.abs(csl.eigh(a)[1]) ** 2, lambda a: np.abs(sl.eigh(a)[1]) ** 2,
                     SC),
    "eigh_generalised": (lambda a: csl.eigh(a[0], a[1])[0], lambda a: sl.eigh(a[0], a[1])[0], S),
    "eigh_generalised_vectors": (lambda a: csl.eigh(a[0], a[1])[1],
                                 lambda a: sl.eigh(a[0], a[1])[1], S),
    "eigh_upper_values_only": (lambda a: csl.eigh(a, lower=False, eigvals_only=True),
                               lambda a: sl.eigh(a, lower=False, eigvals_only=True), S),
    "eigh_subset": (lambda a: csl.eigh(a, subset_by_index=(1, 2))[1],
                    lambda a: sl.eigh(a, subset_by_index=(1, 2))[1], S),
    "svd_values": (lambda a: csl.svd(a, compute_uv=False), lambda a: sl.svd(a, compute_uv=False),
                   A),
    "svd_u": (lambda a: csl.svd(a)[0], lambda a: sl.svd(a)[0], A),
    "svd_vh_wide": (lambda a: csl.svd(a[..., :2, :])[2], lambda a: sl.svd(a[..., :2, :])[2], A),
    "qr_q": (lambda a: csl.qr(a)[0], lambda a: sl.qr(a)[0], A),
    "qr_r_mode": (lambda a: csl.qr(a[0], mode="r")[0], lambda a: sl.qr(a[0], mode="r")[0], A),
    "qr_pivoting": (lambda a: csl.qr(a[0], pivoting=True)[1],
                    lambda a: sl.qr(a[0], pivoting=True)[1], A),
    "qr_economic": (lambda a: csl.qr(a[..., :2], mode="economic")[0],
                    lambda a: sl.qr(a[..., :2], mode="economic")[0], A),
    "lu_l": (lambda a: csl.lu(a)[1], lambda a: sl.lu(a)[1], A),
    "lu_u": (lambda a: csl.lu(a)[2], lambda a: sl.lu(a)[2], A),
    "lu_permute_l": (lambda a: csl.lu(a, permute_l=True)[0],
                     lambda a: sl.lu(a, permute_l=True)[0], A),
    "expm_frechet": (lambda a: csl.expm_frechet(a * .3, E1)[1],
                     lambda a: sl.expm_frechet(a * .3, E1)[1], A),
    "polar_right": (lambda a: csl.polar(a)[0], lambda a: sl.polar(a)[0], A),
    "polar_left": (lambda a: csl.polar(a, "left")[1], lambda a: sl.polar(a, "left")[1], A),
}


@pytest.mark.parametrize("name", list(CASES))
def test_twin_values_and_gradients(name):
    f, ref, x = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = ref(x)
        try:
            out, pull = cr.vjp(f, x)  # the differentiable composition
        except (ValueError, cr.MissingRuleError):
            if scipy_takes_batches():
                raise
            # SciPy before 1.16 takes one matrix at a time, and so do the twins
            # that take their gauge (pivots, eigenvector phases) from SciPy
            pytest.skip("this SciPy takes one matrix per call (stacks from 1.16 on)")
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        if scipy_takes_batches():  # on plain arrays the twin is SciPy's own call
            np.testing.assert_allclose(f(x), expected, rtol=1e-12, atol=1e-12)
        w = RNG.normal(size=np.shape(expected))
        g = pull(w)[0]
        np.testing.assert_allclose(g, _fd_vjp(ref, x, w), rtol=1e-6, atol=1e-7)


def test_twin_hvp_generalised_eigh():
    def loss(a):
        w, v = csl.eigh(a, S[1])
        return np.sum(w ** 2) + np.sum(v[0] ** 3)
    v = RNG.normal(size=(3, 3))
    hv = cr.hvp(loss, S[0], v)
    h = 1e-5
    fd = (cr.grad(loss)(S[0] + h * v) - cr.grad(loss)(S[0] - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6)


def test_plain_inputs_call_scipy():
    assert csl.qr(A[0], mode="raw")[0][1].shape == (3,)  # no derivative, but SciPy works
    with pytest.raises(cr.MissingRuleError, match="mode='raw'"):
        cr.grad(lambda a: np.sum(csl.qr(a, mode="raw")[0][0]))(A[0])


@pytest.mark.parametrize("name, call", [
    ("det", lambda a: sl.det(a)), ("inv", lambda a: sl.inv(a)),
    ("solve", lambda a: sl.solve(a, a)), ("lstsq", lambda a: sl.lstsq(a, a)[0]),
    ("pinv", lambda a: sl.pinv(a)), ("cholesky", lambda a: sl.cholesky(a @ a.T)),
    ("eigh", lambda a: sl.eigh(a + a.T)[0]), ("svd", lambda a: sl.svd(a)[1]),
    ("qr", lambda a: sl.qr(a)[0]), ("lu", lambda a: sl.lu(a)[1]),
    ("expm_frechet", lambda a: sl.expm_frechet(a, a)[1]), ("polar", lambda a: sl.polar(a)[0]),
])
def test_plain_scipy_error_names_the_twin(name, call):
    with pytest.raises(cr.UntraceableError, match=f"chainrules.scipy.linalg.{name} "):
        cr.grad(lambda a: np.sum(call(a)))(A[0] + 3 * np.eye(3))


@pytest.mark.parametrize("bshape", [(5,), (5, 2), (2, 5, 2)])
def test_solve_banded(bshape):
    if len(bshape) == 3 and not scipy_takes_batches():
        pytest.skip("this SciPy solves one banded system per call (stacks from 1.16 on)")
    lo, up = 1, 2
    ab = RNG.normal(size=(lo + up + 1, 5))
    ab[up] += 4
    if len(bshape) == 3:
        ab = np.stack([ab, ab * 1.1])
    b = RNG.normal(size=bshape)
    w = RNG.normal(size=bshape)
    f = lambda m, v: csl.solve_banded((lo, up), m, v)  # noqa: E731
    ref = lambda m, v: sl.solve_banded((lo, up), m, v)  # noqa: E731
    np.testing.assert_allclose(f(ab, b), ref(ab, b))
    gab, gb = cr.vjp(f, ab, b)[1](w)
    np.testing.assert_allclose(gab, _fd_vjp(lambda m: ref(m, b), ab, w), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, _fd_vjp(lambda v: ref(ab, v), b, w), rtol=1e-6, atol=1e-8)
    if len(bshape) == 1:   # the band storage is the matrix's band
        dense = np.zeros((5, 5))
        for r in range(lo + up + 1):
            for j in range(5):
                i = r + j - up
                if 0 <= i < 5:
                    dense[i, j] = ab[r, j]
        np.testing.assert_allclose(f(ab, b), np.linalg.solve(dense, b))


@pytest.mark.parametrize("lower", [False, True])
def test_solveh_banded(lower):
    n, p = 5, 2
    a = RNG.normal(size=(n, n))
    a = a @ a.T + n * np.eye(n)
    ab = np.zeros((p + 1, n))
    for i in range(n):
        for j in range(n):
            if lower and 0 <= i - j <= p:
                ab[i - j, j] = a[i, j]
            if not lower and 0 <= j - i <= p:
                ab[p + i - j, j] = a[i, j]
    b, w = RNG.normal(size=n), RNG.normal(size=n)
    f = lambda m: csl.solveh_banded(m, b, lower=lower)  # noqa: E731
    ref = lambda m: sl.solveh_banded(m, b, lower=lower)  # noqa: E731
    g = cr.vjp(f, ab)[1](w)[0]
    np.testing.assert_allclose(g, _fd_vjp(ref, ab, w), rtol=1e-6, atol=1e-8)
    y = cr.jvp(f, (ab,), (ab,))[1]
    np.testing.assert_allclose(y, (ref(ab * (1 + 1e-6)) - ref(ab * (1 - 1e-6))) / 2e-6,
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name, call", [
    ("solve_banded", lambda m: sl.solve_banded((0, 0), m, np.ones(3))),
    ("solveh_banded", lambda m: sl.solveh_banded(m, np.ones(3))),
])
def test_plain_scipy_banded_error_names_the_twin(name, call):
    with pytest.raises(cr.UntraceableError, match=f"chainrules.scipy.linalg.{name} "):
        cr.grad(lambda m: np.sum(call(m)))(np.ones((1, 3)) * 2)


@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur(output):
    batch = (2,) if scipy_takes_batches() else ()  # stacks of matrices from SciPy 1.16
    v = RNG.normal(size=batch + (4, 4)) * 0.3 + 2 * np.eye(4)
    a = (v * np.array([0.5, 1.5, 2.5, 3.5])) @ np.linalg.inv(v)  # real, distinct spectrum
    t, z = csl.schur(a, output=output)
    tr, zr = sl.schur(a, output=output)
    np.testing.assert_allclose(t, tr)
    w = RNG.normal(size=batch + (4, 4))
    for k, ref in ((0, tr), (1, zr)):   # |T|^2 and |Z|^2 do not depend on Z's phases
        f = lambda m, k=k: np.abs(csl.schur(m, output=output)[k]) ** 2  # noqa: E731
        g = cr.vjp(f, a)[1](w)[0]
        fd = _fd_vjp(lambda m: np.abs(sl.schur(m, output=output)[k]) ** 2, a, w)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_schur_domain():
    rot = np.array([[0., -1.], [1., 0.]])                 # eigenvalues +-i
    with pytest.raises(cr.MissingRuleError, match="output='complex'"):
        cr.grad(lambda m: np.sum(csl.schur(m)[0]))(rot)
    g = cr.grad(lambda m: np.sum(np.abs(csl.schur(m, output="complex")[0]) ** 2))(rot)
    np.testing.assert_allclose(g, 2 * rot, atol=1e-10)   # |T|_F = |A|_F (Z is unitary)
    with pytest.raises(cr.DomainError, match="repeated eigenvalue"):
        cr.grad(lambda m: np.sum(np.abs(csl.schur(m, output="complex")[0])))(np.eye(3))


def test_plain_scipy_schur_error_names_the_twin():
    with pytest.raises(cr.UntraceableError, match="chainrules.scipy.linalg.schur "):
        cr.grad(lambda m: np.sum(sl.schur(m)[0]))(np.eye(2))
