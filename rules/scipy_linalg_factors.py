"""Pieces of the factor-and-solve rules of ``rules/scipy_linalg.py``:
the transposes a ``trans`` argument selects, LU's permutation and triangular
parts, and the batched maps of ``cho_solve`` and ``lu_solve`` (every
direction's right-hand sides solved with the one factorization; see
``_linalg_batch.py``). The batched maps run on plain arrays only: values
traced on an enclosing tape take the per-direction path."""

import numpy as np

from chainrules.broadcast import unbroadcast_batched

from ._linalg_batch import fold_columns, lift, solve_rhs
from ._linalg_util import _col, _cplx, _is_zero, _rdt, _tri_mask, conj, mH, mT

try:
    import scipy.linalg as sl
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

__all__ = ["_op", "_perm_matrix", "_lu_parts", "_lu_trans", "_cho_solve_pfb",
           "_cho_solve_pbb", "_lu_solve_pfb", "_lu_solve_pbb"]


def _op(t, m):
    return m if t == 0 else (mT(m) if t == 1 else mH(m))


def _perm_matrix(piv, n, dtype):
    """``Pt`` with ``Pt @ A == L @ U`` from LAPACK's pivots (batched: piv of
    shape (..., n) gives (..., n, n))."""
    piv = np.asarray(piv)
    flat = piv.reshape(-1, piv.shape[-1]) if piv.ndim else piv.reshape(1, 1)
    perms = np.empty((flat.shape[0], n), dtype=np.intp)
    for b, row in enumerate(flat):
        perm = np.arange(n)
        for i, p in enumerate(row):
            perm[i], perm[p] = perm[p], perm[i]
        perms[b] = perm
    eye = np.eye(n, dtype=_rdt(dtype))
    return eye[perms].reshape(piv.shape[:-1] + (n, n))


def _lu_parts(lu):
    n = lu.shape[-1]
    low = lu * _tri_mask(n, lu.dtype, True, -1) + np.eye(n, dtype=_rdt(lu.dtype))
    up = lu * _tri_mask(n, lu.dtype, False, 0)
    return low, up


def _cho_solve_pfb(r, xds, k):
    c, b = r.xs
    cd, bd = xds
    lower = r.kw["_lower"]
    x = r.y
    vec = b.ndim == 1
    xm = _col(x) if vec else x
    rank = xm.ndim + 1
    td_x = None
    if not _is_zero(cd):
        tri = _tri_mask(c.shape[-1], c.dtype, lower, 0)
        f, fd = c * tri, cd * tri
        ad = fd @ mH(f) + f @ mH(fd) if lower else mH(fd) @ f + mH(f) @ fd
        td_x = lift(ad, rank) @ xm
    out = fold_columns(lambda m: sl.cho_solve((c, lower), m), solve_rhs(bd, td_x, vec, rank),
                       xm.shape)
    return np.reshape(out, (k,) + x.shape)


def _cho_solve_pbb(r, G, k):
    c, b = r.xs
    lower = r.kw["_lower"]
    x = r.y
    vec = b.ndim == 1
    xm = _col(x) if vec else x
    gm = np.reshape(G, G.shape + (1,)) if vec else G
    gb = conj(fold_columns(lambda m: sl.cho_solve((c, lower), m), conj(gm), xm.shape))
    gc = None
    if r.ids[0] is not None:
        ga = -(gb @ mT(xm))
        sym = ga + mH(ga)
        tri = _tri_mask(c.shape[-1], c.dtype, lower, 0)
        f = conj(c * tri)
        gc = unbroadcast_batched((sym @ f if lower else f @ sym) * tri, c.shape)
    gb = np.reshape(gb, gb.shape[:-1]) if vec else gb
    return [gc, unbroadcast_batched(gb, b.shape) if r.ids[1] is not None else None]


def _lu_trans(r):
    """0: A x = b, 1: A^T x = b, 2: A^H x = b (complex factor only: for a
    real one the conjugate transpose is the transpose)."""
    t = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}[r.kw.get("trans", 0)]
    return 1 if t == 2 and not _cplx(r.xs[0]) else t


def _lu_solve_pfb(r, xds, k):
    lu, b = r.xs
    lud, bd = xds
    piv = r.kw["_piv"]
    t = _lu_trans(r)
    x = r.y
    vec = b.ndim == 1
    xm = _col(x) if vec else x
    rank = xm.ndim + 1
    td_x = None
    if not _is_zero(lud):
        n = lu.shape[-1]
        pt = _perm_matrix(piv, n, lu.dtype)
        low, up = _lu_parts(lu)
        ld = lud * _tri_mask(n, lu.dtype, True, -1)
        ud = lud * _tri_mask(n, lu.dtype, False, 0)
        td_x = lift(_op(t, mT(pt) @ (ld @ up + low @ ud)), rank) @ xm
    out = fold_columns(lambda m: sl.lu_solve((lu, piv), m, trans=t),
                       solve_rhs(bd, td_x, vec, rank), xm.shape)
    return np.reshape(out, (k,) + x.shape)


def _lu_solve_pbb(r, G, k):
    lu, b = r.xs
    piv = r.kw["_piv"]
    t = _lu_trans(r)
    x = r.y
    vec = b.ndim == 1
    xm = _col(x) if vec else x
    gm = np.reshape(G, G.shape + (1,)) if vec else G
    if t == 2:
        gb = conj(fold_columns(lambda m: sl.lu_solve((lu, piv), m, trans=0), conj(gm),
                               xm.shape))
    else:
        gb = fold_columns(lambda m: sl.lu_solve((lu, piv), m, trans=1 - t), gm, xm.shape)
    glu = None
    if r.ids[0] is not None:
        n = lu.shape[-1]
        pa = _perm_matrix(piv, n, lu.dtype) @ _op(t, -(gb @ mT(xm)))
        low, up = _lu_parts(lu)
        glu = (pa @ mT(up)) * _tri_mask(n, lu.dtype, True, -1) + \
            (mT(low) @ pa) * _tri_mask(n, lu.dtype, False, 0)
        glu = unbroadcast_batched(glu, lu.shape)
    gb = np.reshape(gb, gb.shape[:-1]) if vec else gb
    return [glu, unbroadcast_batched(gb, b.shape) if r.ids[1] is not None else None]
