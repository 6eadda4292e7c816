"""Matrix-equation solvers of ``scipy.linalg``: ``solve_sylvester``,
``solve_continuous_lyapunov``, ``solve_discrete_lyapunov`` (registered only
when SciPy is installed; batched over leading axes like SciPy >= 1.14).

* ``solve_sylvester(a, b, q)``: ``X`` with ``A X + X B = Q``. Differentiating
  gives ``A X' + X' B = Q' - A' X - X B'`` (one more Sylvester solve), and the
  transpose of ``Q -> X`` is ``G -> Y`` with ``A^T Y + Y B^T = G``, so
  ``gQ = Y``, ``gA = -Y X^T``, ``gB = -X^T Y``.
* ``solve_continuous_lyapunov(a, q)`` is ``solve_sylvester(a, a^H, q)``,
  written as that composition (so the conjugate is differentiated by its rule).
* ``solve_discrete_lyapunov(a, q)``: ``X - A X A^H = Q``; its tangent solves
  the same equation with ``Q' + A' X A^H + A X A'^H`` and its transpose is the
  equation of ``A^T``.

Every derived solve (tangent and cotangent) is checked by its residual; a
singular equation (``A`` and ``-B`` sharing an eigenvalue, or ``A`` with
eigenvalues ``l_i l_j == 1`` for the discrete equation) raises
``DomainError`` naming the operation: the derivative does not exist there.
``sqrtm``'s Fréchet derivative (rules/scipy_linalg.py) is a Sylvester solve
made by ``checked_sylvester``.
"""

import numpy as np

from chainrules.arrays import real_dtype
from chainrules.errors import DomainError
from chainrules.staging import is_staged, plain_array

from ._linalg_util import (check_residual, conj, defrule, fro_norm, mH, mT, plain,
                           unbroadcast_to)

from ._util import on_demand_family

from chainrules.opaque import OpaqueNamespace

from ._scipy_blas_pool import LimitedNamespace

try:
    import scipy.linalg as _scipy_linalg

    # each SciPy call recorded as one step of a staged plan (cr.jit), made
    # with SciPy's BLAS pool at one thread (rules/_scipy_blas_pool.py)
    sl = OpaqueNamespace(LimitedNamespace(_scipy_linalg))
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

_family_loaded = on_demand_family()

__all__ = ["solve_sylvester", "solve_continuous_lyapunov", "solve_discrete_lyapunov",
           "checked_sylvester"]


def _scale(*ms):
    return sum(fro_norm(plain(m)) for m in ms)


def _check_separated(op, what, lam, mu, combine):
    """The equation's operator has eigenvalues ``combine(lam_i, mu_j)``; it is
    singular (no unique solution: a backward-stable solver still returns one
    with a tiny residual) when one of them is 0 to working precision."""
    if lam.shape[-1] == 0 or mu.shape[-1] == 0:
        return
    ev = combine(lam[..., :, None], mu[..., None, :])
    n = max(lam.shape[-1], mu.shape[-1])
    scale = 1 + np.max(np.abs(lam), axis=-1)[..., None, None] * \
        np.max(np.abs(mu), axis=-1)[..., None, None] if what == "discrete" else \
        np.max(np.abs(lam), axis=-1)[..., None, None] + \
        np.max(np.abs(mu), axis=-1)[..., None, None]
    eps = np.finfo(real_dtype(ev.dtype)).eps
    if np.any(np.abs(ev) <= 100 * n * eps * scale) or not np.all(np.isfinite(ev)):
        eq = "X - A X A^H = Q" if what == "discrete" else "A X + X B = Q"
        raise DomainError(
            f"{op}: the equation {eq} of its derivative is singular at this input "
            "(an eigenvalue of its operator is 0), so the derivative does not exist")


def checked_sylvester(op, a, b, q):
    """``X`` with ``A X + X B = Q`` (differentiable), verified by the spectra
    of ``A`` and ``-B`` (disjoint) and by its residual; ``op`` names the
    operation whose derivative needed it."""
    ap, bp = plain(a), plain(b)
    _check_separated(op, "sylvester", np.linalg.eigvals(ap), np.linalg.eigvals(bp),
                     lambda x, y: x + y)
    x = solve_sylvester(a, b, q)
    qp, xp = plain(q), plain(x)
    resid = ap @ xp + xp @ bp - qp
    check_residual(op, "the Sylvester equation A X + X B = Q of its derivative",
                   resid, (_scale(ap) + _scale(bp)) * _scale(xp) + _scale(qp),
                   np.result_type(ap, bp, qp))
    return x


def checked_discrete(op, a, q):
    """``X`` with ``X - A X A^H = Q`` (differentiable), verified."""
    ap = plain(a)
    lam = np.linalg.eigvals(ap)
    _check_separated(op, "discrete", lam, lam, lambda x, y: 1 - x * np.conjugate(y))
    x = solve_discrete_lyapunov(a, q)
    qp, xp = plain(q), plain(x)
    resid = xp - ap @ xp @ np.conjugate(np.swapaxes(ap, -1, -2)) - qp
    check_residual(op, "the discrete Lyapunov equation X - A X A^H = Q of its derivative",
                   resid, (1 + _scale(ap) ** 2) * _scale(xp) + _scale(qp),
                   np.result_type(ap, qp))
    return x


_SYL = "scipy.linalg.solve_sylvester"
_DLYAP = "scipy.linalg.solve_discrete_lyapunov"


def _sylvester_pf(r, xds):
    a, b, q = r.xs
    ad, bd, qd = xds
    x = r.y
    return checked_sylvester(_SYL, a, b, qd - ad @ x - x @ bd)


def _sylvester_pb(r, g):
    a, b, q = r.xs
    x = r.y
    y = checked_sylvester(_SYL, mT(a), mT(b), g)
    ga = -(y @ mT(x)) if r.ids[0] is not None else None
    gb = -(mT(x) @ y) if r.ids[1] is not None else None
    return [None if ga is None else unbroadcast_to(ga, a.shape),
            None if gb is None else unbroadcast_to(gb, b.shape),
            unbroadcast_to(y, q.shape) if r.ids[2] is not None else None]


def _dlyap_pf(r, xds):
    a, q = r.xs[0], r.xs[1]
    ad, qd = xds[0], xds[1]
    x = r.y
    rhs = qd + ad @ x @ mH(a) + a @ x @ mH(ad)
    return checked_discrete(_DLYAP, a, rhs)


def _dlyap_pb(r, g):
    a, q = r.xs[0], r.xs[1]
    x = r.y
    y = checked_discrete(_DLYAP, mT(a), g)
    out = [None, unbroadcast_to(y, q.shape) if r.ids[1] is not None else None]
    if r.ids[0] is not None:
        ga = y @ conj(a) @ mT(x) + conj(mT(y) @ a @ x)
        out[0] = unbroadcast_to(ga, a.shape)
    return out + [None] * (len(r.xs) - 2)


if sl is not None:
    from chainrules.primitives import primitive

    solve_sylvester = primitive(sl.solve_sylvester)
    _solve_discrete_lyapunov = primitive(sl.solve_discrete_lyapunov)

    def solve_discrete_lyapunov(a, q, method=None):
        """``scipy.linalg.solve_discrete_lyapunov`` (differentiable in a, q)."""
        return _solve_discrete_lyapunov(a, q, method=method)

    def solve_continuous_lyapunov(a, q):
        """``scipy.linalg.solve_continuous_lyapunov``: ``A X + X A^H = Q``,
        as ``solve_sylvester(a, a^H, q)`` (differentiable in a and q). Arrays
        not traced (ndarrays, staged values of them: one step of cr.jit's
        plan) take SciPy's own solver."""
        if plain_array(a) and plain_array(q):
            return sl.solve_continuous_lyapunov(a, q)
        return solve_sylvester(a, mH(a), q)

    defrule(solve_sylvester, _sylvester_pf, _sylvester_pb)
    defrule(_solve_discrete_lyapunov, _dlyap_pf, _dlyap_pb)


# -- banded solves ----------------------------------------------------------------
# Band storage (SciPy's): ab[u + i - j, j] == A[i, j] for -l <= i - j <= u. The
# derivative rules work on the band only (O(bandwidth * n) per right-hand side)
# with gathers through constant index arrays, so they are differentiable again.
_BANDED = "scipy.linalg.solve_banded"


def _band_index(nb, n, u):
    """For each stored (r, j): the row i = r + j - u of A and whether it exists."""
    r = np.arange(nb)[:, None]
    j = np.arange(n)[None, :]
    i = r + j - u
    ok = (i >= 0) & (i < n)
    return np.where(ok, i, 0), ok


def _band_matvec(ab, x, l, u):
    """``A @ x`` from band storage; x of shape (..., n, k)."""
    nb, n = ab.shape[-2], ab.shape[-1]
    r = np.arange(nb)[:, None]
    i = np.arange(n)[None, :]
    j = i - r + u                       # column of A[i, j] stored at row r
    ok = (j >= 0) & (j < n)
    jc = np.where(ok, j, 0)
    vals = ab[..., r, jc] * ok.astype(real_dtype(ab.dtype))          # (..., nb, n)
    xs = x[..., jc, :]                                          # (..., nb, n, k)
    return np.sum(vals[..., None] * xs, axis=-3)


def _band_transpose(ab, l, u):
    """Band storage of A^T (lower and upper bandwidths swap)."""
    nb, n = ab.shape[-2], ab.shape[-1]
    rt = np.arange(nb)[:, None]          # row in A^T storage: l + i - j
    j = np.arange(n)[None, :]
    i = rt + j - l                       # A^T[i, j] = A[j, i] = ab[u + j - i, i]
    ok = (i >= 0) & (i < n)
    mask = ok.astype(real_dtype(ab.dtype))
    return ab[..., np.where(ok, u + j - i, 0), np.where(ok, i, 0)] * mask


def _band_outer(y, x, u, nb):
    """Band part of ``y @ x^T`` (y, x of shape (..., n, k)) in band storage."""
    n = x.shape[-2]
    i, ok = _band_index(nb, n, u)
    j = np.broadcast_to(np.arange(n)[None, :], i.shape)
    return np.sum(y[..., i, :] * x[..., j, :], axis=-1) * ok.astype(real_dtype(x.dtype))


def _banded_pf(r, xds):
    ab, b = r.xs
    abd, bd = xds
    l, u = r.kw["_lu"]
    x = r.y
    vec = b.ndim == 1
    x2, bd2 = (x[..., None], bd[..., None]) if vec else (x, bd)
    rhs = bd2 - _band_matvec(abd, x2, l, u)
    out = solve_banded((l, u), ab, rhs)
    return np.reshape(out, x.shape) if vec else out


def _banded_pb(r, g):
    ab, b = r.xs
    l, u = r.kw["_lu"]
    x = r.y
    vec = b.ndim == 1
    g2, x2 = (g[..., None], x[..., None]) if vec else (g, x)
    abt = _band_transpose(ab, l, u)
    y = solve_banded((u, l), abt, g2)
    gab = -_band_outer(y, x2, u, ab.shape[-2]) if r.ids[0] is not None else None
    gb = (np.reshape(y, x.shape) if vec else y) if r.ids[1] is not None else None
    return [None if gab is None else unbroadcast_to(gab, ab.shape),
            None if gb is None else unbroadcast_to(gb, b.shape)]


def _hermitian_to_general(ab, lower):
    """General band storage (l == u == p) of the Hermitian matrix that
    ``solveh_banded`` reads from its half-band storage."""
    nb, n = ab.shape[-2], ab.shape[-1]
    p = nb - 1
    rows = np.arange(2 * p + 1)[:, None]
    j = np.arange(n)[None, :]
    d = rows - p                         # i - j
    i = d + j
    ok = (i >= 0) & (i < n)
    stored = (d >= 0) if lower else (d <= 0)
    # stored half: lower ab[d, j]; upper ab[p + d, j]; other half from A[j, i]
    r_s = np.where(stored, d if lower else p + d, 0)
    c_s = j + 0 * rows
    r_o = np.where(stored, 0, -d if lower else p - d)
    c_o = np.where(ok, i, 0)
    own = ab[..., np.clip(r_s, 0, p), np.clip(c_s, 0, n - 1)]
    other = ab[..., np.clip(r_o, 0, p), c_o]
    if ab.dtype.kind == "c":
        other = np.conjugate(other)
        diag = (d == 0)
        own = np.where(diag, np.real(own) + 0j, own)
    w_s = (stored & ok).astype(real_dtype(ab.dtype))
    w_o = (~stored & ok).astype(real_dtype(ab.dtype))
    return own * w_s + other * w_o


if sl is not None:
    def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False,
                     check_finite=True):
        """``scipy.linalg.solve_banded`` (differentiable in ab and b)."""
        if plain_array(ab) and plain_array(b):
            return sl.solve_banded(l_and_u, ab, b, overwrite_ab=_may_write(overwrite_ab, ab),
                                   overwrite_b=_may_write(overwrite_b, b),
                                   check_finite=check_finite)
        l, u = (int(v) for v in l_and_u)
        return _solve_banded_op(ab, b, _lu=(l, u))

    def _may_write(overwrite, v):
        """SciPy's permission to overwrite ``v``, given for an ndarray only: a
        staged value's plan step must not write into its arguments unseen."""
        return overwrite and not is_staged(v)

    def _solve_banded_impl(ab, b, _lu):
        return sl.solve_banded(_lu, ab, b)

    _solve_banded_op = primitive(_solve_banded_impl)
    _solve_banded_op.__name__ = "solve_banded"

    def solveh_banded(ab, b, overwrite_ab=False, overwrite_b=False, lower=False,
                      check_finite=True):
        """``scipy.linalg.solveh_banded``: the Hermitian positive definite band
        solve, differentiated as the general band solve of the matrix it reads."""
        if plain_array(ab) and plain_array(b):
            return sl.solveh_banded(ab, b, overwrite_ab=_may_write(overwrite_ab, ab),
                                    overwrite_b=_may_write(overwrite_b, b), lower=lower,
                                    check_finite=check_finite)
        p = ab.shape[-2] - 1
        return solve_banded((p, p), _hermitian_to_general(ab, lower), b)

    defrule(_solve_banded_op, _banded_pf, _banded_pb)

__all__ += ["solve_banded", "solveh_banded"]

_family_loaded()
