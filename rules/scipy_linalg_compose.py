"""``scipy.linalg`` functions written as compositions of differentiable
operations (``np.linalg`` rules, ``expm``, indexing), with SciPy's signatures:
``det``, ``inv``, ``solve``, ``lstsq``, ``pinv``, ``cholesky``, ``eigh``
(including the generalised problem ``b=``), ``svd``, ``qr``, ``lu``,
``expm_frechet`` and ``polar``. Batched over leading axes like SciPy >= 1.14.

On plain arrays each calls SciPy itself (same results); on traced values it
computes the same quantity from differentiable pieces, so no rule of its own is
registered. What SciPy reads, the composition reads: ``solve(assume_a=...)``,
``cholesky`` and ``eigh`` use one triangle of ``a`` (and ``b``), so their
cotangents live on that triangle. Decompositions are returned in SciPy's gauge:
eigenvector and pivot choices are taken from SciPy's own result (constants),
so the primal values equal SciPy's.
"""

import numpy as np

from chainrules.arrays import real_dtype
from chainrules.errors import MissingRuleError
from chainrules.tracing import is_traced

from ._linalg_util import herm_tangent, mH, mT, plain, scipy_takes_batches

from chainrules.opaque import OpaqueNamespace

from ._scipy_blas_pool import LimitedNamespace

try:
    import scipy.linalg as _scipy_linalg

    # each SciPy call recorded as one step of a staged plan (cr.jit), made
    # with SciPy's BLAS pool at one thread (rules/_scipy_blas_pool.py)
    sl = OpaqueNamespace(LimitedNamespace(_scipy_linalg))
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

__all__ = ["det", "inv", "solve", "lstsq", "pinv", "cholesky", "eigh", "svd", "qr", "lu",
           "expm_frechet", "polar"]


def _traced(*xs):
    return any(is_traced(x) for x in xs)


def _sym_from(a, lower, kind):
    """The matrix SciPy sees when it reads one triangle: symmetric (``sym``)
    or Hermitian (``her``, ``pos``) completion of the triangle."""
    n = a.shape[-1]
    if kind == "sym":
        keep = np.tril(np.ones((n, n), real_dtype(a.dtype)), -1)
        s = a * (keep if lower else mT(keep))
        return s + mT(s) + a * np.eye(n, dtype=real_dtype(a.dtype))
    return herm_tangent(a, lower=lower)


def det(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.det``."""
    if not _traced(a):
        return sl.det(a, overwrite_a=overwrite_a, check_finite=check_finite)
    return np.linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.inv``."""
    if not _traced(a):
        return sl.inv(a, overwrite_a=overwrite_a, check_finite=check_finite)
    return np.linalg.inv(a)


_TRI = {"upper triangular": False, "lower triangular": True}


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """``scipy.linalg.solve``: ``assume_a`` in general/gen, sym, her, pos,
    diagonal, upper/lower triangular; symmetric kinds read the ``lower`` (or
    upper) triangle, as LAPACK does."""
    if not _traced(a, b):
        kw = {} if assume_a is None else {"assume_a": assume_a}
        return sl.solve(a, b, lower=lower, overwrite_a=overwrite_a, overwrite_b=overwrite_b,
                        check_finite=check_finite, transposed=transposed, **kw)
    kind = "gen" if assume_a in (None, "general", "gen") else assume_a
    n = a.shape[-1]
    if kind in ("sym", "her", "pos", "positive definite", "symmetric", "hermitian"):
        k = {"symmetric": "sym", "hermitian": "her", "positive definite": "pos"}.get(kind, kind)
        if k == "sym" or a.dtype.kind != "c":
            a = _sym_from(a, lower, "sym")
        else:
            a = _sym_from(a, lower, "her")
    elif kind in ("diagonal",):
        a = a * np.eye(n, dtype=real_dtype(a.dtype))
    elif kind in _TRI:
        low = _TRI[kind]
        a = a * (np.tril(np.ones((n, n), real_dtype(a.dtype))) if low
                 else np.triu(np.ones((n, n), real_dtype(a.dtype))))
    elif kind != "gen":
        raise MissingRuleError(f"chainrules.scipy.linalg.solve: assume_a={assume_a!r} is "
                               "not differentiated; use 'gen', 'sym', 'her', 'pos', "
                               "'diagonal' or a triangular kind")
    if transposed:
        a = mT(a)
    if b.ndim == 1:
        x = np.linalg.solve(a, np.reshape(b, b.shape + (1,)))
        return np.reshape(x, x.shape[:-1])
    return np.linalg.solve(a, b)


def lstsq(a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True,
          lapack_driver=None):
    """``scipy.linalg.lstsq`` -> ``(x, residues, rank, s)``; the derivative
    holds where the rank is locally constant (full rank inputs)."""
    if not _traced(a, b):
        return sl.lstsq(a, b, cond=cond, overwrite_a=overwrite_a, overwrite_b=overwrite_b,
                        check_finite=check_finite, lapack_driver=lapack_driver)
    m, n = a.shape[-2], a.shape[-1]
    if a.ndim > 2:
        return _lstsq_batched(a, b, cond, lapack_driver)
    x, res, rank, s = np.linalg.lstsq(a, b, rcond=cond)
    if m == n and int(rank) == n:  # SciPy reports (zero) residues for square systems
        r = b - (a @ x if b.ndim > 1 else np.reshape(a @ np.reshape(x, (n, 1)), (m,)))
        res = np.sum(np.real(r * np.conjugate(r)) if r.dtype.kind == "c" else r * r, axis=0)
        res = np.reshape(res, (1,)) if b.ndim == 1 else res
    return x, res, rank, s


def _lstsq_batched(a, b, cond, driver):
    """Batched ``lstsq`` (NumPy's is not): ``x = pinv(a) b`` with SciPy's
    cutoff, singular values, rank, and residues where SciPy reports them
    (full column rank, more rows than columns)."""
    ref = sl.lstsq(plain(a), plain(b), cond=cond, lapack_driver=driver)
    m, n = a.shape[-2], a.shape[-1]
    s = np.linalg.svd(a, compute_uv=False)
    sv = plain(s)
    eps = np.finfo(real_dtype(a.dtype)).eps
    rc = (eps * max(m, n) if cond is None or cond < 0 else cond)
    rcond = np.full(sv.shape[:-1], rc)
    x = np.linalg.pinv(a, rcond=rcond) @ b
    rank = ref[2]
    res = ref[1]
    if np.size(res):
        r = b - a @ x
        res = np.sum(np.real(r * np.conjugate(r)) if r.dtype.kind == "c" else r * r, axis=-2)
    return x, res, rank, s


def pinv(a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
    """``scipy.linalg.pinv`` (the derivative keeps the rank constant)."""
    if not _traced(a):
        return sl.pinv(a, atol=atol, rtol=rtol, return_rank=return_rank,
                       check_finite=check_finite)
    s = np.linalg.svd(plain(a), compute_uv=False)
    smax = np.max(s, axis=-1) if s.shape[-1] else np.zeros(s.shape[:-1])
    atol = 0.0 if atol is None else atol
    rtol = max(a.shape[-2:]) * np.finfo(real_dtype(a.dtype)).eps if rtol is None else rtol
    cut = atol + rtol * smax
    rcond = np.where(smax > 0, cut / np.where(smax > 0, smax, 1), 0.0)
    p = np.linalg.pinv(a, rcond=rcond)
    if return_rank:
        return p, int(np.max(np.sum(s > np.asarray(cut)[..., None], axis=-1)))
    return p


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky`` (reads the ``lower`` or upper triangle)."""
    if not _traced(a):
        return sl.cholesky(a, lower=lower, overwrite_a=overwrite_a, check_finite=check_finite)
    return np.linalg.cholesky(a, upper=not lower)


def _match_gauge(v, ref):
    """Columns of ``v`` rotated by constant phases onto SciPy's ``ref``."""
    ph = _phase(np.sum(np.conjugate(plain(v)) * ref, axis=-2, keepdims=True))
    if v.dtype.kind != "c":
        ph = np.real(ph)
    return v * ph.astype(v.dtype)


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """``scipy.linalg.eigh``, standard and generalised (``b=``, type 1:
    ``A v = w B v`` with ``v^H B v = I``), reading the ``lower`` triangles."""
    kw = dict(lower=lower, eigvals_only=eigvals_only, type=type, check_finite=check_finite,
              subset_by_index=subset_by_index, subset_by_value=subset_by_value,
              driver=driver)
    ref = sl.eigh(plain(a), None if b is None else plain(b), **kw)
    if not _traced(a, b):
        return ref
    if type != 1:
        raise MissingRuleError("chainrules.scipy.linalg.eigh: only type=1 generalised "
                               "problems are differentiated")
    herm = "her" if np.result_type(a.dtype, getattr(b, "dtype", a.dtype)).kind == "c" \
        else "sym"
    af = _sym_from(a, lower, herm)
    if b is None:
        w, v = np.linalg.eigh(af)
    else:
        low = np.linalg.cholesky(_sym_from(b, lower, herm))
        li = np.linalg.inv(low)
        c = li @ af @ mH(li)
        w, y = np.linalg.eigh((c + mH(c)) * 0.5)
        v = mH(li) @ y
    wv = plain(w)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi + 1], v[..., :, lo:hi + 1]
    elif subset_by_value is not None:
        lo, hi = subset_by_value
        sel = np.nonzero((wv > lo) & (wv <= hi))[-1]
        w, v = w[..., sel], v[..., :, sel]
    if eigvals_only:
        return w
    return w, _match_gauge(v, ref[1])


def _phase(d):
    """Unit numbers with the phase of ``d`` (1 where ``d`` is 0); constants."""
    d = np.asarray(d)
    mag = np.abs(d)
    return np.where(mag > 0, d / np.where(mag > 0, mag, 1), 1)


def _pair_gauge(u, vh, ref_u, k):
    """Per singular (or QR) pair i < k: ``u_i * c_i`` and row i of ``vh`` times
    ``conj(c_i)`` (the product is unchanged), with ``c_i`` the phase that puts
    ``u_i`` onto SciPy's ``ref_u_i``; the columns of ``u`` past k (a basis of
    the complement) are matched one by one."""
    c = _phase(np.sum(np.conjugate(plain(u[..., :, :k])) * ref_u[..., :, :k], axis=-2))
    if u.dtype.kind != "c":
        c = np.real(c)
    rest = u.shape[-1] - k
    if rest:
        cr = _phase(np.sum(np.conjugate(plain(u[..., :, k:])) * ref_u[..., :, k:], axis=-2))
        cu = np.concatenate([c, np.real(cr) if u.dtype.kind != "c" else cr], axis=-1)
    else:
        cu = c
    u = u * cu.astype(u.dtype)[..., None, :]
    cv = np.conjugate(c) if c.dtype.kind == "c" else c
    m = vh.shape[-2]
    if m > k:
        cv = np.concatenate([cv, np.ones(cv.shape[:-1] + (m - k,), cv.dtype)], axis=-1)
    return u, vh * cv.astype(vh.dtype)[..., :, None]


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """``scipy.linalg.svd`` (U and Vh in SciPy's gauge)."""
    ref = sl.svd(plain(a), full_matrices=full_matrices, compute_uv=compute_uv,
                 check_finite=check_finite, lapack_driver=lapack_driver)
    if not _traced(a):
        return ref
    if not compute_uv:
        return np.linalg.svd(a, compute_uv=False)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    u, vh = _pair_gauge(u, vh, ref[0], k)
    if vh.shape[-2] > k:  # rows of Vh spanning the null space
        vfull = mH(vh)
        c = _phase(np.sum(np.conjugate(plain(vfull[..., :, k:])) * mH(ref[2])[..., :, k:],
                          axis=-2))
        c = np.real(c) if a.dtype.kind != "c" else c
        c = np.concatenate([np.ones(c.shape[:-1] + (k,), c.dtype), c], axis=-1)
        vh = mH(vfull * c.astype(vh.dtype)[..., None, :])
    return u, s, vh


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """``scipy.linalg.qr`` with mode full/economic/r (and ``pivoting``:
    the permutation is a constant)."""
    ref = sl.qr(plain(a), mode=mode, pivoting=pivoting, check_finite=check_finite)
    if not _traced(a):
        return ref
    if mode not in ("full", "economic", "r"):
        raise MissingRuleError(f"chainrules.scipy.linalg.qr(mode={mode!r}) has no "
                               "derivative; use mode='full', 'economic' or 'r'")
    if pivoting:
        p = np.asarray(ref[-1])
        idx = np.broadcast_to(p[..., None, :], a.shape[:-1] + (p.shape[-1],))
        a = np.take_along_axis(a, idx, axis=-1)
    q, r = np.linalg.qr(a, mode="complete" if mode == "full" else "reduced")
    k = min(a.shape[-2:])
    if mode == "r":
        ref_r = ref[0]
        c = _phase(np.conjugate(np.diagonal(plain(r), axis1=-2, axis2=-1)[..., :k]) *
                   np.diagonal(ref_r, axis1=-2, axis2=-1)[..., :k])
        c = np.real(c) if a.dtype.kind != "c" else c
        c = np.concatenate([c, np.ones(c.shape[:-1] + (r.shape[-2] - k,), c.dtype)], -1)
        r = r * c.astype(r.dtype)[..., :, None]
        if pivoting:
            return r, ref[-1]
        return r if a.ndim > 2 else (r,)  # SciPy's batched mode='r' returns R itself
    q, r = _pair_gauge(q, r, ref[0], k)
    return (q, r, ref[-1]) if pivoting else (q, r)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """``scipy.linalg.lu`` of square matrices: ``A = P L U`` with the
    permutation a constant (the pivots SciPy chose)."""
    ref = sl.lu(plain(a), permute_l=permute_l, check_finite=check_finite,
                p_indices=p_indices)
    if not _traced(a):
        return ref
    n = a.shape[-1]
    if a.shape[-2] != n:
        raise MissingRuleError("chainrules.scipy.linalg.lu differentiates square "
                               "matrices only")
    if a.ndim > 2 and not scipy_takes_batches():
        raise MissingRuleError("chainrules.scipy.linalg.lu of a stack of matrices needs "
                               "SciPy 1.16 or later (before it, lu_factor takes one matrix "
                               "per call); differentiate one matrix at a time")
    from .scipy_linalg import lu_factor
    pm = sl.lu(plain(a), check_finite=check_finite)[0]
    pa = mT(pm).astype(real_dtype(a.dtype)) @ a  # P^T A = L U without pivoting
    packed, piv = lu_factor(pa)
    if np.any(np.asarray(piv) != np.arange(n)):
        raise MissingRuleError("chainrules.scipy.linalg.lu: pivoting is ambiguous (ties) "
                               "at this input; perturb it")
    eye = np.eye(n, dtype=real_dtype(a.dtype))
    low = packed * np.tril(np.ones((n, n), real_dtype(a.dtype)), -1) + eye
    up = packed * np.triu(np.ones((n, n), real_dtype(a.dtype)))
    if permute_l:
        return pm.astype(real_dtype(a.dtype)) @ low, up
    return ref[0], low, up


def expm_frechet(A, E, method=None, compute_expm=True, check_finite=True):
    """``scipy.linalg.expm_frechet``: ``(expm(A), L(A, E))`` from the
    exponential of ``[[A, E], [0, A]]`` (differentiable in A and E)."""
    if not _traced(A, E):
        return sl.expm_frechet(A, E, method=method, compute_expm=compute_expm,
                               check_finite=check_finite)
    from .scipy_linalg import expm, frechet_block

    n = A.shape[-1]
    m = expm(frechet_block(A, E))
    lf = m[..., :n, n:]
    return (m[..., :n, :n], lf) if compute_expm else lf


def polar(a, side="right"):
    """``scipy.linalg.polar``: ``a = U P`` (right) or ``P U`` (left), from
    the SVD; differentiable where ``a`` has full rank."""
    if not _traced(a):
        return sl.polar(a, side=side)
    w, s, vh = np.linalg.svd(a, full_matrices=False)
    u = w @ vh
    if side == "right":
        p = (mH(vh) * s[..., None, :]) @ vh
    else:
        p = (w * s[..., None, :]) @ mH(w)
    return u, p
