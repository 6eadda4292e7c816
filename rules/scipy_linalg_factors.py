"""Pieces of the factor-and-solve rules of ``rules/scipy_linalg.py``:
the transposes a ``trans`` argument selects, LU's permutation and triangular
parts, and the batched maps of ``cho_solve`` and ``lu_solve`` (every
direction's right-hand sides solved with the one factorization; see
``_linalg_batch.py``). The batched maps run on plain arrays only: values
traced on an enclosing tape take the per-direction path."""

import numpy as np

from chainrules.arrays import real_dtype
from chainrules.broadcast import unbroadcast_batched
from chainrules.tangents import is_zero

from ._linalg_batch import fold_columns, lift, solve_rhs
from ._linalg_util import as_column, conj, is_complex, mH, mT, tri_mask

from chainrules.opaque import OpaqueNamespace

from ._scipy_blas_pool import LimitedNamespace

try:
    import scipy.linalg as _scipy_linalg

    # each SciPy call recorded as one step of a staged plan (cr.jit), made
    # with SciPy's BLAS pool at one thread (rules/_scipy_blas_pool.py)
    sl = OpaqueNamespace(LimitedNamespace(_scipy_linalg))
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

__all__ = ["trans_op", "perm_matrix", "lu_parts", "lu_trans", "cho_solve_pfb",
           "cho_solve_pbb", "lu_solve_pfb", "lu_solve_pbb"]


def trans_op(t, m):
    """``op(m)`` a ``trans`` code selects: 0 ``m``, 1 its transpose, 2 its adjoint."""
    return m if t == 0 else (mT(m) if t == 1 else mH(m))


def perm_matrix(piv, n, dtype):
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
    eye = np.eye(n, dtype=real_dtype(dtype))
    return eye[perms].reshape(piv.shape[:-1] + (n, n))


def lu_parts(lu):
    """``(L, U)`` from LAPACK's packed LU factor (L with a unit diagonal)."""
    n = lu.shape[-1]
    low = lu * tri_mask(n, lu.dtype, True, -1) + np.eye(n, dtype=real_dtype(lu.dtype))
    up = lu * tri_mask(n, lu.dtype, False, 0)
    return low, up


def cho_solve_pfb(r, xds, k):
    """The pushforward of ``cho_solve`` on a batch of ``k`` directions."""
    c, b = r.xs
    cd, bd = xds
    lower = r.kw["_lower"]
    x = r.y
    vec = b.ndim == 1
    xm = as_column(x) if vec else x
    rank = xm.ndim + 1
    td_x = None
    if not is_zero(cd):
        tri = tri_mask(c.shape[-1], c.dtype, lower, 0)
        f, fd = c * tri, cd * tri
        ad = fd @ mH(f) + f @ mH(fd) if lower else mH(fd) @ f + mH(f) @ fd
        td_x = lift(ad, rank) @ xm
    out = fold_columns(lambda m: sl.cho_solve((c, lower), m), solve_rhs(bd, td_x, vec, rank),
                       xm.shape)
    return np.reshape(out, (k,) + x.shape)


def cho_solve_pbb(r, G, k):
    """The pullback of ``cho_solve`` on a batch of ``k`` cotangents."""
    c, b = r.xs
    lower = r.kw["_lower"]
    x = r.y
    vec = b.ndim == 1
    xm = as_column(x) if vec else x
    gm = np.reshape(G, G.shape + (1,)) if vec else G
    gb = conj(fold_columns(lambda m: sl.cho_solve((c, lower), m), conj(gm), xm.shape))
    gc = None
    if r.ids[0] is not None:
        ga = -(gb @ mT(xm))
        sym = ga + mH(ga)
        tri = tri_mask(c.shape[-1], c.dtype, lower, 0)
        f = conj(c * tri)
        gc = unbroadcast_batched((sym @ f if lower else f @ sym) * tri, c.shape)
    gb = np.reshape(gb, gb.shape[:-1]) if vec else gb
    return [gc, unbroadcast_batched(gb, b.shape) if r.ids[1] is not None else None]


def lu_trans(r):
    """0: A x = b, 1: A^T x = b, 2: A^H x = b (complex factor only: for a
    real one the conjugate transpose is the transpose)."""
    t = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}[r.kw.get("trans", 0)]
    return 1 if t == 2 and not is_complex(r.xs[0]) else t


def lu_solve_pfb(r, xds, k):
    """The pushforward of ``lu_solve`` on a batch of ``k`` directions."""
    lu, b = r.xs
    lud, bd = xds
    piv = r.kw["_piv"]
    t = lu_trans(r)
    x = r.y
    vec = b.ndim == 1
    xm = as_column(x) if vec else x
    rank = xm.ndim + 1
    td_x = None
    if not is_zero(lud):
        n = lu.shape[-1]
        pt = perm_matrix(piv, n, lu.dtype)
        low, up = lu_parts(lu)
        ld = lud * tri_mask(n, lu.dtype, True, -1)
        ud = lud * tri_mask(n, lu.dtype, False, 0)
        td_x = lift(trans_op(t, mT(pt) @ (ld @ up + low @ ud)), rank) @ xm
    out = fold_columns(lambda m: sl.lu_solve((lu, piv), m, trans=t),
                       solve_rhs(bd, td_x, vec, rank), xm.shape)
    return np.reshape(out, (k,) + x.shape)


def lu_solve_pbb(r, G, k):
    """The pullback of ``lu_solve`` on a batch of ``k`` cotangents."""
    lu, b = r.xs
    piv = r.kw["_piv"]
    t = lu_trans(r)
    x = r.y
    vec = b.ndim == 1
    xm = as_column(x) if vec else x
    gm = np.reshape(G, G.shape + (1,)) if vec else G
    if t == 2:
        gb = conj(fold_columns(lambda m: sl.lu_solve((lu, piv), m, trans=0), conj(gm),
                               xm.shape))
    else:
        gb = fold_columns(lambda m: sl.lu_solve((lu, piv), m, trans=1 - t), gm, xm.shape)
    glu = None
    if r.ids[0] is not None:
        n = lu.shape[-1]
        pa = perm_matrix(piv, n, lu.dtype) @ trans_op(t, -(gb @ mT(xm)))
        low, up = lu_parts(lu)
        glu = (pa @ mT(up)) * tri_mask(n, lu.dtype, True, -1) + \
            (mT(low) @ pa) * tri_mask(n, lu.dtype, False, 0)
        glu = unbroadcast_batched(glu, lu.shape)
    gb = np.reshape(gb, gb.shape[:-1]) if vec else gb
    return [glu, unbroadcast_batched(gb, b.shape) if r.ids[1] is not None else None]
