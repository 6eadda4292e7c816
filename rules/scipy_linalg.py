"""``scipy.linalg`` (registered only when SciPy is installed).

* ``expm``, ``sqrtm``, ``logm``: primary matrix functions. Their derivative is
  the Fréchet derivative ``L(A, E)``, read off the block identity
  ``f([[A, E], [0, A]]) = [[f(A), L(A, E)], [0, f(A)]]``; its transpose is
  ``L(A^T, G)`` (the functions have real power-series coefficients). ``sqrtm``
  and ``logm`` are differentiable where they are well defined: no eigenvalue
  on the closed negative real axis.
* ``solve_triangular``, ``cho_factor``/``cho_solve``, ``lu_factor``/``lu_solve``:
  written with the same machinery as ``np.linalg`` (see rules/linalg.py). The
  factor arrays are differentiated as the arrays SciPy returns: the triangle
  holding the factor, and for ``cho_factor`` the other triangle, which holds
  a copy of the input. ``cho_solve`` and ``lu_solve`` read only their factor's
  triangles, so their cotangents live there. Pivots carry no derivative.
  ``cho_solve`` and ``lu_solve`` are differentiated for real dtypes only.
"""

import numpy as np

from chainrules.errors import MissingRuleError
from chainrules.graph import MultiOutput
from chainrules.registry import register

from ._linalg_util import (LinalgRule, _Def, _col, _phi_mask, _rdt, _tri_mask,
                           _unbroadcast, defrule, herm_tangent, mH, mT)

try:
    import scipy.linalg as sl
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

__all__ = ["expm", "sqrtm", "logm", "solve_triangular", "cho_factor", "cho_solve",
           "lu_factor", "lu_solve"]

if sl is not None:
    from chainrules.tracing import primitive

    # SciPy's linalg functions are Python functions that call np.asarray on
    # their inputs, so traced values never reach a registry through them.
    # These primitives (same signatures) are the differentiable versions:
    # ``from chainrules.rules.scipy_linalg import expm``.
    expm = primitive(sl.expm)
    sqrtm = primitive(sl.sqrtm)
    logm = primitive(sl.logm)
    solve_triangular = primitive(sl.solve_triangular)
    cho_factor = primitive(sl.cho_factor)
    cho_solve = primitive(sl.cho_solve)
    lu_factor = primitive(sl.lu_factor)
    lu_solve = primitive(sl.lu_solve)


def _block(a, e):
    """[[a, e], [0, a]] from matmuls with constant selectors."""
    n = a.shape[-1]
    eye = np.eye(2 * n, dtype=_rdt(a.dtype))
    p1, p2 = eye[:, :n], eye[:, n:]
    return p1 @ a @ p1.T + p1 @ e @ p2.T + p2 @ a @ p2.T


def _frechet(f, a, e):
    n = a.shape[-1]
    m = f(_block(a, e))
    return m[..., :n, n:]


def _matrix_function(f):
    def matfun_pf(r, xds):
        return _frechet(f, r.xs[0], xds[0])

    def matfun_pb(r, g):
        return [_frechet(f, mT(r.xs[0]), g)]

    defrule(f, matfun_pf, matfun_pb)


# -- triangular solves -----------------------------------------------------------
def _tri_opts(r):
    names = ("trans", "lower", "unit_diagonal")
    vals = dict(zip(names, (0, False, False)))
    vals.update(zip(names, r.xs[2:]))
    vals.update({k: v for k, v in r.kw.items() if k in names})
    t = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}[vals["trans"]]
    return t, vals["lower"], vals["unit_diagonal"]


def _tri_of(a, lower, unit):
    mask = _tri_mask(a.shape[-1], a.dtype, lower, 0)
    if unit:
        mask = mask - np.eye(a.shape[-1], dtype=mask.dtype)
    return a * mask


def _op(t, m):
    return m if t == 0 else (mT(m) if t == 1 else mH(m))


def _solve_triangular_pf(r, xds):
    a, b = r.xs[0], r.xs[1]
    ad, bd = xds[0], xds[1]
    t, lower, unit = _tri_opts(r)
    x = r.y
    vec = b.ndim == 1
    x2 = _col(x) if vec else x
    td = _op(t, _tri_of(ad, lower, unit))
    rhs = (_col(bd) if vec else bd) - td @ x2
    out = solve_triangular(a, rhs, trans=t, lower=lower, unit_diagonal=unit)
    return np.reshape(out, x.shape) if vec else out


def _solve_triangular_pb(r, g):
    a, b = r.xs[0], r.xs[1]
    t, lower, unit = _tri_opts(r)
    if t == 2 and a.dtype.kind == "c":
        raise MissingRuleError("scipy.linalg.solve_triangular(trans='C') is not "
                               "differentiated for complex input; use trans='T' on "
                               "np.conjugate(a)")
    x = r.y
    vec = b.ndim == 1
    g2, x2 = (_col(g), _col(x)) if vec else (g, x)
    gb = solve_triangular(a, g2, trans=0 if t else 1, lower=lower, unit_diagonal=unit)
    m = -(gb @ mT(x2))
    ga = _tri_of(m if t == 0 else mT(m), lower, unit)
    gb = np.reshape(gb, b.shape) if vec else gb
    return [ga if r.ids[0] is not None else None,
            _unbroadcast(gb, b.shape) if r.ids[1] is not None else None] + \
        [None] * (len(r.xs) - 2)


# -- Cholesky factor and solve ---------------------------------------------------
def _cho_factor_pf(r, xds):
    c, lower = r.y
    ad = xds[0]
    n = c.shape[-1]
    tri = _tri_mask(n, c.dtype, lower, 0)
    f = c * tri
    low = f if lower else mH(f)
    li = np.linalg.inv(low)
    s = li @ herm_tangent(ad, lower=lower) @ mH(li)
    ld = low @ (s * _phi_mask(n, c.dtype))
    fd = ld if lower else mH(ld)
    return fd * tri + ad * (1 - tri), None


def _cho_register():
    d = _Def("scipy.linalg.cho_factor", _cho_factor_pf)

    def cho_factor_maker(ids, *xs, **kw):
        c, lower = cho_factor(*xs, **kw)
        return MultiOutput((c, lower)), LinalgRule(d, tuple(ids), xs, (c, lower), kw)

    register(cho_factor)(cho_factor_maker)

    def cho_solve_pf(r, xds):
        c, b = r.xs
        cd, bd = xds
        lower = r.kw["_lower"]
        n = c.shape[-1]
        tri = _tri_mask(n, c.dtype, lower, 0)
        f, fd = c * tri, cd * tri
        ad = fd @ mH(f) + f @ mH(fd) if lower else mH(fd) @ f + mH(f) @ fd
        x = r.y
        vec = b.ndim == 1
        rhs = (_col(bd) - ad @ _col(x)) if vec else bd - ad @ x
        out = cho_solve((c, lower), rhs)
        return np.reshape(out, x.shape) if vec else out

    def cho_solve_pb(r, g):
        c, b = r.xs
        if c.dtype.kind == "c" or b.dtype.kind == "c":
            raise MissingRuleError("scipy.linalg.cho_solve is differentiated for real "
                                   "dtypes only; use np.linalg.solve for complex systems")
        lower = r.kw["_lower"]
        x = r.y
        vec = b.ndim == 1
        g2, x2 = (_col(g), _col(x)) if vec else (g, x)
        gb = cho_solve((c, lower), g2)
        ga = -(gb @ mT(x2))
        sym = ga + mT(ga)
        tri = _tri_mask(c.shape[-1], c.dtype, lower, 0)
        f = c * tri
        gc = (sym @ f if lower else f @ sym) * tri
        gb = np.reshape(gb, b.shape) if vec else gb
        return [gc if r.ids[0] is not None else None,
                gb if r.ids[1] is not None else None]

    ds = _Def("scipy.linalg.cho_solve", cho_solve_pf, cho_solve_pb)

    def cho_solve_maker(ids, c_and_lower, b, *rest, **kw):
        c, lower = c_and_lower
        cid = ids[0][0] if type(ids[0]) is tuple else None
        if type(ids[0]) is tuple and ids[0][1] is not None:
            raise MissingRuleError("scipy.linalg.cho_solve: `lower` cannot be traced")
        y = cho_solve((c, lower), b, *rest, **kw)
        kw2 = dict(kw, _lower=lower)
        return y, LinalgRule(ds, (cid, ids[1]), (c, b), y, kw2)

    register(cho_solve)(cho_solve_maker)


# -- LU factor and solve ---------------------------------------------------------
def _perm_matrix(piv, n, dtype):
    perm = np.arange(n)
    for i, p in enumerate(np.asarray(piv)):
        perm[i], perm[p] = perm[p], perm[i]
    return np.eye(n, dtype=_rdt(dtype))[perm]  # Pt @ A == L @ U


def _lu_parts(lu):
    n = lu.shape[-1]
    low = lu * _tri_mask(n, lu.dtype, True, -1) + np.eye(n, dtype=_rdt(lu.dtype))
    up = lu * _tri_mask(n, lu.dtype, False, 0)
    return low, up


def _lu_register():
    def lu_factor_pf(r, xds):
        lu, piv = r.y
        n = lu.shape[-1]
        pt = _perm_matrix(piv, n, lu.dtype)
        low, up = _lu_parts(lu)
        x = np.linalg.inv(low) @ (pt @ xds[0]) @ np.linalg.inv(up)
        strict = _tri_mask(n, lu.dtype, True, -1)
        upper = _tri_mask(n, lu.dtype, False, 0)
        return low @ (x * strict) + (x * upper) @ up, None

    d = _Def("scipy.linalg.lu_factor", lu_factor_pf)

    def lu_factor_maker(ids, *xs, **kw):
        lu, piv = lu_factor(*xs, **kw)
        return MultiOutput((lu, piv)), LinalgRule(d, tuple(ids), xs, (lu, piv), kw)

    register(lu_factor)(lu_factor_maker)

    def _trans(r):
        t = r.kw.get("trans", 0)
        return {0: 0, "N": 0, 1: 1, "T": 1, 2: 1, "C": 1}[t]

    def lu_solve_pf(r, xds):
        lu, b = r.xs
        lud, bd = xds
        piv = r.kw["_piv"]
        n = lu.shape[-1]
        pt = _perm_matrix(piv, n, lu.dtype)
        low, up = _lu_parts(lu)
        ld = lud * _tri_mask(n, lu.dtype, True, -1)
        ud = lud * _tri_mask(n, lu.dtype, False, 0)
        ad = pt.T @ (ld @ up + low @ ud)
        t = _trans(r)
        ad = ad if t == 0 else mT(ad)
        x = r.y
        vec = b.ndim == 1
        rhs = (_col(bd) - ad @ _col(x)) if vec else bd - ad @ x
        out = lu_solve((lu, piv), rhs, trans=t)
        return np.reshape(out, x.shape) if vec else out

    def lu_solve_pb(r, g):
        lu, b = r.xs
        if lu.dtype.kind == "c" or b.dtype.kind == "c":
            raise MissingRuleError("scipy.linalg.lu_solve is differentiated for real "
                                   "dtypes only; use np.linalg.solve for complex systems")
        piv = r.kw["_piv"]
        t = _trans(r)
        x = r.y
        vec = b.ndim == 1
        g2, x2 = (_col(g), _col(x)) if vec else (g, x)
        gb = lu_solve((lu, piv), g2, trans=1 - t)
        gop = -(gb @ mT(x2))
        ga = gop if t == 0 else mT(gop)
        n = lu.shape[-1]
        pt = _perm_matrix(piv, n, lu.dtype)
        low, up = _lu_parts(lu)
        pa = pt @ ga
        glu = (pa @ mT(up)) * _tri_mask(n, lu.dtype, True, -1) + \
            (mT(low) @ pa) * _tri_mask(n, lu.dtype, False, 0)
        gb = np.reshape(gb, b.shape) if vec else gb
        return [glu if r.ids[0] is not None else None,
                gb if r.ids[1] is not None else None]

    ds = _Def("scipy.linalg.lu_solve", lu_solve_pf, lu_solve_pb)

    def lu_solve_maker(ids, lu_and_piv, b, *rest, **kw):
        lu, piv = lu_and_piv
        luid = ids[0][0] if type(ids[0]) is tuple else None
        y = lu_solve((lu, piv), b, *rest, **kw)
        kw2 = dict(kw, _piv=piv)
        if rest:
            kw2["trans"] = rest[0]
        return y, LinalgRule(ds, (luid, ids[1]), (lu, b), y, kw2)

    register(lu_solve)(lu_solve_maker)


if sl is not None:
    for _f in (expm, sqrtm, logm):
        _matrix_function(_f)
    defrule(solve_triangular, _solve_triangular_pf, _solve_triangular_pb)
    _cho_register()
    _lu_register()
