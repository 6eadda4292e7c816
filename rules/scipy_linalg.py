"""``scipy.linalg`` (registered only when SciPy is installed).

* ``expm``, ``sqrtm``, ``logm``: primary matrix functions. Their derivative is
  the Fréchet derivative ``L(A, E)``; its transpose is ``L(A^T, G)`` (the
  functions have real power-series coefficients).

  - ``expm``: read off the block identity
    ``f([[A, E], [0, A]]) = [[f(A), L(A, E)], [0, f(A)]]``.
  - ``sqrtm``: ``S L + L S = E`` with ``S = sqrtm(A)``, a Sylvester solve. The
    block identity is not used: SciPy may return a *non-primary* square root
    of the block matrix (different branches for the two copies of an
    eigenvalue on the negative real axis), a valid root whose upper right
    block is not the derivative.
  - ``logm``: ``log A = 2 log S``, so ``L_log(A, E) = 2 L_log(S, L_sqrt(A, E))``
    with the block identity applied to ``S``, whose spectrum is in the closed
    right half plane, away from the logarithm's branch cut.

  Every derived result is verified: the Sylvester solves by residual and
  spectral separation, the block results by their diagonal blocks (which must
  equal ``f(A)``) and by commuting with the block matrix. ``sqrtm`` and
  ``logm`` are differentiable where the input is nonsingular and has no
  eigenvalue on the negative real axis, except that a real input may have
  simple ones there (real perturbations keep them real); elsewhere
  ``DomainError`` names the op and the reason.
* ``solve_triangular``, ``cho_factor``/``cho_solve``, ``lu_factor``/``lu_solve``:
  written with the same machinery as ``np.linalg`` (see rules/linalg.py). The
  factor arrays are differentiated as the arrays SciPy returns: the triangle
  holding the factor, and for ``cho_factor`` the other triangle, which holds
  a copy of the input before SciPy 1.18 and zeros from 1.18 on (asked of
  SciPy once). ``cho_solve`` and ``lu_solve`` read only their factor's
  triangles, so their cotangents live there. Pivots carry no derivative.
  For complex input, ``trans=2`` (``'C'``) solves with the conjugate
  transpose, which is not holomorphic in the factor: its rules carry the
  conjugates (``x = A^-H b`` pulls ``g`` back to ``conj(A^-1 conj(g))``).
"""

import functools

import numpy as np

from chainrules.arrays import real_dtype
from chainrules.broadcast import unbroadcast_batched
from chainrules.errors import DomainError, MissingRuleError
from chainrules.rule import MultiOutput
from chainrules.staging import plain_array
from chainrules.registry import accepts_sequences, register
from chainrules.tangents import is_zero

from ._linalg_util import (LinalgDef, LinalgRule, as_column, check_residual, check_tol, conj,
                           defrule, fro_norm, herm_tangent, is_complex, mH, mT, phi_mask, plain,
                           scipy_takes_batches, tri_mask, unbroadcast_to)
from ._linalg_batch import fold_columns, lift, solve_rhs
from .scipy_linalg_factors import (cho_solve_pbb, cho_solve_pfb, lu_parts, lu_solve_pbb,
                                   lu_solve_pfb, lu_trans, perm_matrix, trans_op)
from .scipy_linalg_solvers import checked_sylvester

from ._util import fixed_global_rng, on_demand_family

from chainrules.opaque import OpaqueNamespace, opaque

from ._scipy_blas_pool import LimitedNamespace, one_thread

try:
    import scipy.linalg as _scipy_linalg

    # each SciPy call recorded as one step of a staged plan (cr.jit), made
    # with SciPy's BLAS pool at one thread (rules/_scipy_blas_pool.py)
    sl = OpaqueNamespace(LimitedNamespace(_scipy_linalg))
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

_family_loaded = on_demand_family()


def _as_opaque(fn):
    """``fn`` called through ``opaque`` (one step of a staged plan)."""
    @functools.wraps(fn)
    def w(*args, **kwargs):
        return opaque(fn, *args, **kwargs)
    return w


__all__ = ["expm", "sqrtm", "logm", "solve_triangular", "cho_factor", "cho_solve",
           "lu_factor", "lu_solve"]

if sl is not None:
    from chainrules.primitives import primitive

    # SciPy's linalg functions are Python functions that call np.asarray on
    # their inputs, so traced values never reach a registry through them.
    # These primitives (same signatures) are the differentiable versions:
    # ``from chainrules.rules.scipy_linalg import expm``.
    expm = primitive(sl.expm)
    sqrtm = primitive(sl.sqrtm)
    # SciPy's logm draws from np.random (the norm estimates that choose its
    # scaling): called at a fixed random state, its result is a function of
    # the input (one opaque step of a staged plan, which the replay calls so)
    logm = primitive(_as_opaque(fixed_global_rng(one_thread(_scipy_linalg.logm))))
    solve_triangular = primitive(sl.solve_triangular)
    cho_factor = primitive(sl.cho_factor)
    cho_solve = primitive(sl.cho_solve)
    lu_factor = primitive(sl.lu_factor)
    lu_solve = primitive(sl.lu_solve)


def frechet_block(a, e):
    """[[a, e], [0, a]] from matmuls with constant selectors."""
    n = a.shape[-1]
    eye = np.eye(2 * n, dtype=real_dtype(a.dtype))
    p1, p2 = eye[:, :n], eye[:, n:]
    return p1 @ a @ p1.T + p1 @ e @ p2.T + p2 @ a @ p2.T


def _frechet(f, a, e, fa, op):
    """``L(A, E)``: the upper right block of ``f([[A, E], [0, A]])``, verified.

    The block identity holds for the *primary* function of the block matrix.
    SciPy may return another function of it (a square root or logarithm that
    picks different branches for the two copies of an eigenvalue, which is a
    perfectly good square root of the block matrix but whose upper right block
    is not the derivative), so the result is checked: both diagonal blocks must
    equal ``fa = f(A)``, and the block must commute with the block matrix (as
    every primary function does)."""
    n = a.shape[-1]
    blk = frechet_block(a, e)
    m = f(blk)
    mp, bp, fp = plain(m), plain(blk), plain(fa)
    diag = np.concatenate([mp[..., :n, :n] - fp, mp[..., n:, n:] - fp], axis=-1)
    check_residual(op, f"the {op} of the block matrix [[A, E], [0, A]] (its diagonal "
                   f"blocks differ from {op}(A))", diag, 2 * fro_norm(fp) + 1e-300,
                   np.result_type(mp, fp))
    check_residual(op, f"the {op} of the block matrix [[A, E], [0, A]] (it does not "
                   "commute with the block matrix)", bp @ mp - mp @ bp,
                   2 * fro_norm(bp) * fro_norm(mp), np.result_type(mp, bp))
    return m[..., :n, n:]


def _real_for_real(op, t, x, y):
    """The derivative ``t`` of a real result ``y`` of a real input ``x`` is
    real: SciPy before 1.16 may compute the square root or logarithm it is
    made of as complex (a real matrix with complex eigenvalues), with an
    imaginary part at rounding level, checked here and dropped."""
    if np.iscomplexobj(plain(t)) and not is_complex(x) and not np.iscomplexobj(plain(y)):
        tp = plain(t)
        check_residual(op, "the derivative of a real result (its imaginary part is not "
                       "rounding noise)", tp.imag, 2 * fro_norm(tp) + 1e-300, tp.dtype)
        return np.real(t)
    return t


def _expm_pf(r, xds):
    return _frechet(expm, r.xs[0], xds[0], r.y, "scipy.linalg.expm")


def _expm_pb(r, g):
    return [_frechet(expm, mT(r.xs[0]), g, mT(r.y), "scipy.linalg.expm")]


# -- sqrtm, logm -----------------------------------------------------------------
_SQRTM = "scipy.linalg.sqrtm"
_LOGM = "scipy.linalg.logm"


def _check_root(op, a, s, complex_input):
    """Where ``s = sqrtm(a)`` (and the logarithm through it) is differentiable.

    Verifies ``s @ s == a`` and that the spectrum of ``s`` avoids the points
    where the principal root is not differentiable: a zero eigenvalue (a
    singular ``a``), and eigenvalues of ``a`` on the negative real axis (the
    branch cut, where ``s`` has purely imaginary eigenvalues) unless ``a`` is
    real and each of them is simple, since real perturbations then keep them
    real."""
    ap, sp = plain(a), plain(s)
    check_residual(op, "the principal square root S of A (S @ S != A)", sp @ sp - ap,
                   fro_norm(sp) ** 2 + fro_norm(ap), np.result_type(ap, sp))
    mu = np.linalg.eigvals(sp)
    tol = check_tol(np.result_type(ap, sp))
    size = np.max(np.abs(mu), axis=-1, keepdims=True) if mu.shape[-1] else mu.real
    if np.any(np.abs(mu) <= tol * size) or not np.all(np.isfinite(mu)):
        raise DomainError(f"{op}: the input is singular (an eigenvalue is 0 to working "
                          "precision), where the matrix square root and logarithm are "
                          "not differentiable")
    cut = np.abs(mu.real) <= tol * np.abs(mu)
    if not np.any(cut):
        return
    if complex_input:
        raise DomainError(f"{op}: the complex input has an eigenvalue on the closed "
                          "negative real axis (the branch cut), where the principal "
                          "branch is not differentiable")
    gaps = np.where(np.eye(mu.shape[-1], dtype=bool), np.inf,
                    np.abs(mu[..., :, None] - mu[..., None, :]))
    both = cut[..., :, None] & cut[..., None, :]
    if np.any(both & (gaps <= tol * size[..., None])):
        raise DomainError(f"{op}: the input has a repeated eigenvalue on the negative "
                          "real axis, where the principal branch is discontinuous (a "
                          "real perturbation can split it into a complex pair)")


def _sqrtm_pf(r, xds):
    s = r.y
    _check_root(_SQRTM, r.xs[0], s, is_complex(r.xs[0]))
    return _real_for_real(_SQRTM, checked_sylvester(_SQRTM, s, s, xds[0]), r.xs[0], s)


def _sqrtm_pb(r, g):
    s = r.y
    _check_root(_SQRTM, r.xs[0], s, is_complex(r.xs[0]))
    st = mT(s)
    return [_real_for_real(_SQRTM, checked_sylvester(_SQRTM, st, st, g), r.xs[0], s)]


def _logm_prepare(xs, kw):
    return logm(*xs, **kw), sqrtm(xs[0])


def _logm_pf(r, xds):
    # log A = 2 log S with S = sqrtm(A), whose spectrum lies in the closed right
    # half plane, away from the branch cut of the logarithm: so
    # L_log(A, E) = 2 L_log(S, L_sqrt(A, E)), and the block matrix of S is safe
    s = r.aux
    _check_root(_LOGM, r.xs[0], s, is_complex(r.xs[0]))
    ls = checked_sylvester(_LOGM, s, s, xds[0])
    return _real_for_real(_LOGM, 2 * _frechet(logm, s, ls, r.y * 0.5, _LOGM), r.xs[0], r.y)


def _logm_pb(r, g):
    s = r.aux
    _check_root(_LOGM, r.xs[0], s, is_complex(r.xs[0]))
    st = mT(s)
    w = 2 * _frechet(logm, st, g, mT(r.y) * 0.5, _LOGM)
    return [_real_for_real(_LOGM, checked_sylvester(_LOGM, st, st, w), r.xs[0], r.y)]


# -- triangular solves -----------------------------------------------------------
def _tri_opts(r):
    names = ("trans", "lower", "unit_diagonal")
    vals = dict(zip(names, (0, False, False)))
    vals.update(zip(names, r.xs[2:]))
    vals.update({k: v for k, v in r.kw.items() if k in names})
    t = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}[vals["trans"]]
    return t, vals["lower"], vals["unit_diagonal"]


def _tri_of(a, lower, unit):
    mask = tri_mask(a.shape[-1], a.dtype, lower, 0)
    if unit:
        mask = mask - np.eye(a.shape[-1], dtype=mask.dtype)
    return a * mask


def _tri_of_own(m, lower, unit):
    """``_tri_of`` in place, for a matrix this module has just made (an
    outer product, or a view of one): returns ``m``. (np.fill_diagonal
    writes an ndarray's diagonal as ``m.flat[::n + 1] = 0`` does, and a
    staged value's as a step of the plan.)"""
    m *= tri_mask(m.shape[-1], m.dtype, lower, 0)
    if unit:
        np.fill_diagonal(m, 0)
    return m


def _solve_triangular_pf(r, xds):
    a, b = r.xs[0], r.xs[1]
    ad, bd = xds[0], xds[1]
    t, lower, unit = _tri_opts(r)
    x = r.y
    vec = b.ndim == 1
    x2 = as_column(x) if vec else x
    td = trans_op(t, _tri_of(ad, lower, unit))
    rhs = (as_column(bd) if vec else bd) - td @ x2
    out = solve_triangular(a, rhs, trans=t, lower=lower, unit_diagonal=unit,
                           check_finite=False)
    return np.reshape(out, x.shape) if vec else out


def _solve_triangular_pb(r, g):
    a, b = r.xs[0], r.xs[1]
    t, lower, unit = _tri_opts(r)
    if not is_complex(a):
        t = min(t, 1)              # real: the conjugate transpose is the transpose
    x = r.y
    vec = b.ndim == 1
    g2, x2 = (as_column(g), as_column(x)) if vec else (g, x)
    # the factor was checked (or not) by the forward call; a non-finite
    # cotangent gives non-finite results either way. gb = op(A)^-T g: for
    # op(A) = A^H that is conj(A)^-1 g = conj(A^-1 conj(g))
    if t == 2:
        gb = conj(solve_triangular(a, conj(g2), trans=0, lower=lower, unit_diagonal=unit,
                                   check_finite=False))
    else:
        gb = solve_triangular(a, g2, trans=0 if t else 1, lower=lower, unit_diagonal=unit,
                              check_finite=False)
    # the cotangent of op(A) is -gb x^T; op's transpose (conjugated for A^H)
    # carries it to A
    if r.ids[0] is None:
        ga = None
    elif vec and a.ndim == 2 and plain_array(gb) and plain_array(x):
        # an outer product: one pass by the ufunc, masked in place (no BLAS
        # call, no negated or masked copies); a staged value of an ndarray
        # (cr.jit) takes it too, so that the plan computes eager code's bits
        ga = _tri_of_own(trans_op(t, np.multiply.outer(gb[:, 0], -x)), lower, unit)
    else:
        ga = _tri_of(trans_op(t, -(gb @ mT(x2))), lower, unit)
    gb = np.reshape(gb, x.shape) if vec else gb
    return [unbroadcast_to(ga, a.shape) if ga is not None else None,
            unbroadcast_to(gb, b.shape) if r.ids[1] is not None else None] + \
        [None] * (len(r.xs) - 2)


def _tri_solver(r, a, trans):
    t, lower, unit = _tri_opts(r)
    return lambda m: solve_triangular(a, m, trans=trans, lower=lower, unit_diagonal=unit,
                                      check_finite=False)


def _solve_triangular_pfb(r, xds, k):
    a, b = r.xs[0], r.xs[1]
    ad, bd = xds[0], xds[1]
    t, lower, unit = _tri_opts(r)
    x = r.y
    vec = b.ndim == 1
    xm = as_column(x) if vec else x
    rank = xm.ndim + 1
    td_x = None if is_zero(ad) else lift(trans_op(t, _tri_of(ad, lower, unit)), rank) @ xm
    out = fold_columns(_tri_solver(r, a, t), solve_rhs(bd, td_x, vec, rank), xm.shape)
    return np.reshape(out, (k,) + x.shape)


def _solve_triangular_pbb(r, G, k):
    """``_solve_triangular_pb`` on a batch: one triangular solve with every
    direction's right-hand sides."""
    a, b = r.xs[0], r.xs[1]
    t, lower, unit = _tri_opts(r)
    if not is_complex(a):
        t = min(t, 1)
    x = r.y
    vec = b.ndim == 1
    xm = as_column(x) if vec else x
    gm = np.reshape(G, G.shape + (1,)) if vec else G
    if t == 2:
        gb = conj(fold_columns(_tri_solver(r, a, 0), conj(gm), xm.shape))
    else:
        gb = fold_columns(_tri_solver(r, a, 0 if t else 1), gm, xm.shape)
    ga = None
    if r.ids[0] is not None:
        ga = unbroadcast_batched(_tri_of(trans_op(t, -(gb @ mT(xm))), lower, unit), a.shape)
    gb = np.reshape(gb, gb.shape[:-1]) if vec else gb
    return [ga, unbroadcast_batched(gb, b.shape) if r.ids[1] is not None else None] + \
        [None] * (len(r.xs) - 2)


def _real_arrays(*vs):
    """Whether every one of ``vs`` is a real floating ndarray, or a staged
    value of one (cr.jit: it takes the ndarray's computation)."""
    return all(plain_array(v) and v.dtype.kind == "f" for v in vs)


def _solve_triangular_pbt(r, g, gd, xds, yd=None):
    """The pullback with tangents of ``op(A) x = b`` for real ndarrays and
    staged values of them (cr.jit: the plan makes the same LAPACK calls);
    None elsewhere: the jvp of the pullback then. With ``gb = op(A)^-T g``
    and ``gA = -tri(gb x^T)`` (on op(A)), their tangents are
    ``gbd = op(A)^-T (gd - op(Ad)^T gb)`` and ``-tri(gbd x^T + gb xd^T)``,
    ``xd = op(A)^-1 (bd - op(Ad) x)`` the output's tangent (from the
    forward sweep when the engine passes it): two triangular solves and
    outer products, instead of differentiating the traced pullback."""
    a, b = r.xs[0], r.xs[1]
    x = r.y
    ad = None if is_zero(xds[0]) else xds[0]
    bd = None if is_zero(xds[1]) else xds[1]
    tangents = (None if is_zero(gd) else gd, ad, bd, None if is_zero(yd) else yd)
    if is_zero(g) or not _real_arrays(a, b, x, g) or a.ndim != 2 or b.ndim > 2 \
            or not _real_arrays(*(v for v in tangents if v is not None)):
        return None
    gd = np.zeros_like(x) if is_zero(gd) else gd
    t, lower, unit = _tri_opts(r)
    t = min(t, 1)                  # real: the conjugate transpose is the transpose
    vec = b.ndim == 1
    col = as_column if vec else (lambda m: m)

    def solve(rhs, trans):
        out = sl.solve_triangular(a, col(rhs), trans=trans, lower=lower,
                                  unit_diagonal=unit, check_finite=False)
        return np.reshape(out, x.shape)

    adt = None if ad is None else trans_op(t, _tri_of(ad, lower, unit))   # op(Ad), masked
    if yd is None or is_zero(yd):
        rhs = np.zeros_like(x) if bd is None else bd
        if adt is not None:
            rhs = rhs - np.reshape(adt @ col(x), x.shape)
        yd = solve(rhs, t)
    back = 1 - t                   # op(A)^T's trans
    gb = solve(g, back)
    rhs = gd if adt is None else gd - np.reshape(mT(adt) @ col(gb), x.shape)
    gbd = solve(rhs, back)
    out = []
    if r.ids[0] is not None:
        if vec:   # outer products, negated through -x
            nx = -x
            ga = np.multiply.outer(gb, nx)
            gad = np.multiply.outer(gbd, nx)
            gad -= np.multiply.outer(gb, yd)
        else:
            ga = -(gb @ mT(x))
            gad = -(gbd @ mT(x) + gb @ mT(yd))
        out.append((r.ids[0], _tri_of_own(trans_op(t, ga), lower, unit),
                    _tri_of_own(trans_op(t, gad), lower, unit)))
    if r.ids[1] is not None:
        out.append((r.ids[1], gb, gbd))
    return out


# -- Cholesky factor and solve ---------------------------------------------------
def _flag(lower):
    """SciPy's batched ``cho_factor`` returns ``lower`` as an array of one
    repeated flag; the rules need the flag."""
    arr = np.asarray(lower)
    return bool(arr.flat[0]) if arr.size else False


@functools.cache
def _cho_keeps_input():
    """Whether this SciPy's ``cho_factor`` leaves a copy of the input in the
    triangle that does not hold the factor (SciPy before 1.18) or zeroes it
    (1.18 on): the tangent of that triangle is the input's tangent, or zero.
    Asked of SciPy itself, once, on a 2 x 2 matrix."""
    c, _ = sl.cho_factor(np.array([[4.0, 1.0], [1.0, 3.0]]), lower=False)
    return bool(c[1, 0] != 0)


def _cho_factor_pf(r, xds):
    c, lower = r.y
    lower = _flag(lower)
    ad = xds[0]
    n = c.shape[-1]
    tri = tri_mask(n, c.dtype, lower, 0)
    f = c * tri
    low = f if lower else mH(f)
    li = np.linalg.inv(low)
    s = li @ herm_tangent(ad, lower=lower) @ mH(li)
    ld = low @ (s * phi_mask(n, c.dtype))
    fd = ld if lower else mH(ld)
    if _cho_keeps_input():
        return fd * tri + ad * (1 - tri), None
    return fd * tri, None


def _cho_register():
    d = LinalgDef("scipy.linalg.cho_factor", _cho_factor_pf)

    def cho_factor_maker(ids, *xs, **kw):
        c, lower = cho_factor(*xs, **kw)
        return MultiOutput((c, lower)), LinalgRule(d, tuple(ids), xs, (c, lower), kw)

    register(cho_factor)(cho_factor_maker)

    def cho_solve_pf(r, xds):
        c, b = r.xs
        cd, bd = xds
        lower = r.kw["_lower"]
        n = c.shape[-1]
        tri = tri_mask(n, c.dtype, lower, 0)
        f, fd = c * tri, cd * tri
        ad = fd @ mH(f) + f @ mH(fd) if lower else mH(fd) @ f + mH(f) @ fd
        x = r.y
        vec = b.ndim == 1
        rhs = (as_column(bd) - ad @ as_column(x)) if vec else bd - ad @ x
        out = cho_solve((c, lower), rhs)
        return np.reshape(out, x.shape) if vec else out

    def cho_solve_pb(r, g):
        # x = A^{-1} b with A = F F^H (F^H F for upper): gb = conj(A^{-1} conj(g))
        # (A is Hermitian), gA = -gb x^T, and through A's dependence on F and
        # conj(F): gF = (gA + gA^H) conj(F) (lower) or conj(F) (gA + gA^H)
        c, b = r.xs
        lower = r.kw["_lower"]
        x = r.y
        vec = b.ndim == 1
        g2, x2 = (as_column(g), as_column(x)) if vec else (g, x)
        gb = conj(cho_solve((c, lower), conj(g2)))
        ga = -(gb @ mT(x2))
        sym = ga + mH(ga)
        tri = tri_mask(c.shape[-1], c.dtype, lower, 0)
        f = conj(c * tri)
        gc = (sym @ f if lower else f @ sym) * tri
        gb = unbroadcast_to(np.reshape(gb, x.shape) if vec else gb, b.shape)
        return [unbroadcast_to(gc, c.shape) if r.ids[0] is not None else None,
                gb if r.ids[1] is not None else None]

    ds = LinalgDef("scipy.linalg.cho_solve", cho_solve_pf, cho_solve_pb, pfb=cho_solve_pfb,
              pbb=cho_solve_pbb)

    def cho_solve_maker(ids, c_and_lower, b, *rest, **kw):
        c, lower = c_and_lower
        cid = ids[0][0] if type(ids[0]) is tuple else None
        if type(ids[0]) is tuple and ids[0][1] is not None:
            raise MissingRuleError("scipy.linalg.cho_solve: `lower` cannot be traced")
        y = cho_solve((c, lower), b, *rest, **kw)
        kw2 = dict(kw, _lower=_flag(lower))
        return y, LinalgRule(ds, (cid, ids[1]), (c, b), y, kw2)

    register(cho_solve)(cho_solve_maker)
    accepts_sequences(cho_solve, 0)


# -- LU factor and solve ---------------------------------------------------------
def _check_lu(lu):
    """The LU factors are differentiable where U is invertible (the
    derivative divides by U's pivots)."""
    d = np.abs(plain(lu))
    d = np.diagonal(d, axis1=-2, axis2=-1)
    if d.shape[-1] == 0:
        return
    scale = np.max(np.abs(plain(lu)), axis=(-2, -1))[..., None]
    if np.any(d <= 100 * d.shape[-1] * np.finfo(d.dtype).eps * scale) or \
            not np.all(np.isfinite(d)):
        raise DomainError("scipy.linalg.lu_factor: the input is singular (U has a zero "
                          "pivot), where the LU factors have no derivative")


def _one_matrix(op, *arrays):
    """SciPy before 1.16 factors one matrix per call: its lu_factor reads a
    stack as something else without a word. A stack is refused there, so no
    derivative of that result is ever given."""
    if not scipy_takes_batches() and any(np.ndim(a) > 2 for a in arrays):
        raise MissingRuleError(
            f"{op} of a stack of matrices needs SciPy 1.16 or later (this SciPy takes one "
            "matrix per call); differentiate one matrix at a time")


def _lu_register():
    def lu_factor_pf(r, xds):
        lu, piv = r.y
        n = lu.shape[-1]
        _check_lu(lu)
        pt = perm_matrix(piv, n, lu.dtype)
        low, up = lu_parts(lu)
        x = np.linalg.inv(low) @ (pt @ xds[0]) @ np.linalg.inv(up)
        strict = tri_mask(n, lu.dtype, True, -1)
        upper = tri_mask(n, lu.dtype, False, 0)
        return low @ (x * strict) + (x * upper) @ up, None

    d = LinalgDef("scipy.linalg.lu_factor", lu_factor_pf)

    def lu_factor_maker(ids, *xs, **kw):
        _one_matrix("scipy.linalg.lu_factor", xs[0])
        lu, piv = lu_factor(*xs, **kw)
        return MultiOutput((lu, piv)), LinalgRule(d, tuple(ids), xs, (lu, piv), kw)

    register(lu_factor)(lu_factor_maker)

    def lu_solve_pf(r, xds):
        lu, b = r.xs
        lud, bd = xds
        piv = r.kw["_piv"]
        n = lu.shape[-1]
        pt = perm_matrix(piv, n, lu.dtype)
        low, up = lu_parts(lu)
        ld = lud * tri_mask(n, lu.dtype, True, -1)
        ud = lud * tri_mask(n, lu.dtype, False, 0)
        ad = mT(pt) @ (ld @ up + low @ ud)
        t = lu_trans(r)
        ad = trans_op(t, ad)
        x = r.y
        vec = b.ndim == 1
        rhs = (as_column(bd) - ad @ as_column(x)) if vec else bd - ad @ x
        out = lu_solve((lu, piv), rhs, trans=t)
        return np.reshape(out, x.shape) if vec else out

    def lu_solve_pb(r, g):
        # x = op(A)^-1 b with A = P^T L U: gb = op(A)^-T g (for op(A) = A^H,
        # conj(A^-1 conj(g))), the cotangent of op(A) is -gb x^T, carried to
        # A by op's transpose (conjugated for A^H), then to L and U
        lu, b = r.xs
        piv = r.kw["_piv"]
        t = lu_trans(r)
        x = r.y
        vec = b.ndim == 1
        g2, x2 = (as_column(g), as_column(x)) if vec else (g, x)
        if t == 2:
            gb = conj(lu_solve((lu, piv), conj(g2), trans=0))
        else:
            gb = lu_solve((lu, piv), g2, trans=1 - t)
        ga = trans_op(t, -(gb @ mT(x2)))
        n = lu.shape[-1]
        pt = perm_matrix(piv, n, lu.dtype)
        low, up = lu_parts(lu)
        pa = pt @ ga
        glu = (pa @ mT(up)) * tri_mask(n, lu.dtype, True, -1) + \
            (mT(low) @ pa) * tri_mask(n, lu.dtype, False, 0)
        gb = unbroadcast_to(np.reshape(gb, x.shape) if vec else gb, b.shape)
        return [unbroadcast_to(glu, lu.shape) if r.ids[0] is not None else None,
                gb if r.ids[1] is not None else None]

    ds = LinalgDef("scipy.linalg.lu_solve", lu_solve_pf, lu_solve_pb, pfb=lu_solve_pfb,
              pbb=lu_solve_pbb)

    def lu_solve_maker(ids, lu_and_piv, b, *rest, **kw):
        lu, piv = lu_and_piv
        _one_matrix("scipy.linalg.lu_solve", lu)
        luid = ids[0][0] if type(ids[0]) is tuple else None
        y = lu_solve((lu, piv), b, *rest, **kw)
        kw2 = dict(kw, _piv=piv)
        if rest:
            kw2["trans"] = rest[0]
        return y, LinalgRule(ds, (luid, ids[1]), (lu, b), y, kw2)

    register(lu_solve)(lu_solve_maker)
    accepts_sequences(lu_solve, 0)


if sl is not None:
    defrule(expm, _expm_pf, _expm_pb)
    defrule(sqrtm, _sqrtm_pf, _sqrtm_pb)
    defrule(logm, _logm_pf, _logm_pb, prepare=_logm_prepare)
    defrule(solve_triangular, _solve_triangular_pf, _solve_triangular_pb,
            pbt=_solve_triangular_pbt, pfb=_solve_triangular_pfb, pbb=_solve_triangular_pbb)
    _cho_register()
    _lu_register()

_family_loaded()
