"""Linear algebra: ``np.linalg`` (batched over leading axes where NumPy batches).

inv, det, slogdet, solve, cholesky, pinv, lstsq, matrix_power, multi_dot,
tensorinv, tensorsolve, norm (matrix_rank is non-differentiable). The
spectral decompositions (eigh, eigvalsh, eig, eigvals, svd, svdvals, qr) are
in rules/decompositions.py.

Every rule here is defined by its *pushforward* ``pf(rule, tangents)``, a
function of the inputs' tangents written with ``np.*`` calls; ``pullback``
(when not written by hand) and ``pullback_with_tangents`` are derived from
it by the shared machinery in rules/_linalg_util.py (``defrule``,
``LinalgRule``), which also serves rules/decompositions.py and
rules/scipy_linalg.py.

Complex numbers follow the JAX convention (docs/guide/complex.md): cotangents pair with
tangents through ``Re(sum(c * t))``, so holomorphic maps (inv, solve, det,
matrix_power, ...) transpose without conjugation, and Hermitian ones (eigh,
cholesky, svd, qr, norms) carry the conjugates their maths needs.

Triangles: like LAPACK, ``eigh``, ``eigvalsh`` and ``cholesky`` read one
triangle of the input (the lower one by default; the imaginary part of a
complex diagonal is ignored) and their cotangents live on that triangle.
"""

import numpy as np

from chainrules.arrays import real_dtype
from chainrules.broadcast import unbroadcast_batched
from chainrules.errors import DomainError, MissingRuleError
from chainrules.registry import accepts_sequences, non_differentiable, register
from chainrules.tangents import ZERO, is_zero
from chainrules.tracing import is_traced, untraced

from ._util import array_value
from ._linalg_batch import broadcasting_pb, broadcasting_pf, fold_columns, lift, solve_rhs
from ._triangular import tri_solve

from ._linalg_util import (LinalgDef, LinalgRule, as_column, as_row, cached_eye,
                           chol_pullback_plain, chol_pullback_with_tangents_plain,
                           chol_tangent_plain, conj, defrule, diag_part, herm_cotangent,
                           herm_tangent, is_complex, mH, mT, phi_mask, reject_traced,
                           unbroadcast_to, zeros_of)

__all__ = ["LinalgRule", "defrule", "herm_tangent", "herm_cotangent"]


# -- inv, det, slogdet -----------------------------------------------------------
def _inv_pf(r, xds):
    y = r.y
    return -(y @ xds[0] @ y)


def _inv_pb(r, g):
    yt = mT(r.y)
    return [-(yt @ g @ yt)]


defrule(np.linalg.inv, _inv_pf, _inv_pb, pfb=broadcasting_pf(_inv_pf),
        pbb=broadcasting_pb(_inv_pb))


def _singular(op, fn, *args):
    """``fn(*args)`` (a solve or inverse with the input matrix); an exactly
    singular input raises ``DomainError`` naming ``op`` instead of LAPACK's
    bare LinAlgError."""
    try:
        return fn(*args)
    except np.linalg.LinAlgError:
        raise DomainError(
            f"{op}: the input matrix is singular; this rule differentiates through "
            "its inverse, which does not exist there (the derivative of det, the "
            "adjugate, does, but is not computed here: perturb the input, or write "
            "det as the product of an LU or Cholesky factor's diagonal)") from None


def _trace_solve(a, ad, op):
    return np.sum(diag_part(_singular(op, np.linalg.solve, a, ad)), axis=-1)


def _det_pf(r, xds):
    return r.y * _trace_solve(r.xs[0], xds[0], "numpy.linalg.det")


def _det_pb(r, g):
    a = r.xs[0]
    return [as_column(as_column(g * r.y)) * mT(_singular("numpy.linalg.det", np.linalg.inv, a))]


def _trace_inv_batched(a, ad, op):
    """``trace(a^-1 ad_j)`` for a batch ``ad`` (``(k,) + a.shape``): one
    inverse for the batch instead of a solve per direction."""
    ai = _singular(op, np.linalg.inv, a)
    return np.sum(mT(ai) * ad, axis=(-2, -1))


def _det_pfb(r, xds, k):
    return r.y * _trace_inv_batched(r.xs[0], xds[0], "numpy.linalg.det")


defrule(np.linalg.det, _det_pf, _det_pb, pfb=_det_pfb, pbb=broadcasting_pb(_det_pb))


def _slogdet_pf(r, xds):
    a = r.xs[0]
    sign, logabs = r.y
    tau = _trace_solve(a, xds[0], "numpy.linalg.slogdet")
    if is_complex(tau):
        itau = (tau - np.conjugate(tau)) * 0.5
        return sign * itau, np.real(tau)
    return zeros_of(sign), tau


def _slogdet_pb(r, g):
    a = r.xs[0]
    sign, logabs = r.y
    gs, gl = g
    c = zeros_of(logabs) if is_zero(gl) else gl
    if is_complex(sign) and not is_zero(gs):
        z = gs * sign
        c = c + (z - np.conjugate(z)) * 0.5
    return [as_column(as_column(c)) * mT(_singular("numpy.linalg.slogdet", np.linalg.inv, a))]


def _slogdet_pfb(r, xds, k):
    sign, logabs = r.y
    tau = _trace_inv_batched(r.xs[0], xds[0], "numpy.linalg.slogdet")
    if is_complex(tau):
        return sign * ((tau - np.conjugate(tau)) * 0.5), np.real(tau)
    return np.zeros((k,) + sign.shape, sign.dtype), tau


def _slogdet_pbb(r, G, k):
    sign, logabs = r.y
    gs, gl = G
    c = np.zeros((k,) + logabs.shape, logabs.dtype) if is_zero(gl) else gl
    if is_complex(sign) and not is_zero(gs):
        z = gs * sign
        c = c + (z - np.conjugate(z)) * 0.5
    inv = _singular("numpy.linalg.slogdet", np.linalg.inv, r.xs[0])
    return [as_column(as_column(c)) * mT(inv)]


defrule(np.linalg.slogdet, _slogdet_pf, _slogdet_pb, multi=True, pfb=_slogdet_pfb,
        pbb=_slogdet_pbb)


# -- solve ------------------------------------------------------------------------
def _vec(b):
    return b.ndim == 1


def _solve_pf(r, xds):
    a, b = r.xs
    ad, bd = xds
    x = r.y
    if _vec(b):
        rhs = as_column(bd) - ad @ as_column(x)
        return np.reshape(np.linalg.solve(a, rhs), x.shape)
    return np.linalg.solve(a, bd - ad @ x)


def _solve_pb(r, g):
    a, b = r.xs
    x = r.y
    if _vec(b):
        gb = np.reshape(np.linalg.solve(mT(a), as_column(g)), x.shape)
        ga = -(as_column(gb) * as_row(x))
    else:
        gb = np.linalg.solve(mT(a), g)
        ga = -(gb @ mT(x))
    return [unbroadcast_to(ga, a.shape) if r.ids[0] is not None else None,
            unbroadcast_to(gb, b.shape) if r.ids[1] is not None else None]


def _solve_pfb(r, xds, k):
    a, b = r.xs
    ad, bd = xds
    x = r.y
    xm = as_column(x) if _vec(b) else x                 # (..., n, m)
    rank = xm.ndim + 1
    rhs = solve_rhs(bd, None if is_zero(ad) else lift(ad, rank) @ xm, _vec(b), rank)
    xd = fold_columns(lambda m: np.linalg.solve(a, m), rhs, xm.shape)
    return np.reshape(xd, (k,) + x.shape)


def _solve_pbb(r, G, k):
    a, b = r.xs
    x = r.y
    vec = _vec(b)
    xm = as_column(x) if vec else x
    at = mT(a)
    gb = fold_columns(lambda m: np.linalg.solve(at, m), np.reshape(G, G.shape + (1,)) if vec
                      else G, xm.shape)
    ga = -(gb @ mT(xm))
    if vec:
        gb = np.reshape(gb, gb.shape[:-1])
    return [unbroadcast_batched(ga, a.shape) if r.ids[0] is not None else None,
            unbroadcast_batched(gb, b.shape) if r.ids[1] is not None else None]


defrule(np.linalg.solve, _solve_pf, _solve_pb, pfb=_solve_pfb, pbb=_solve_pbb)


# -- cholesky ------------------------------------------------------------------
def _chol_parts(r):
    upper = r.kw.get("upper", False)
    low = mH(r.y) if upper else r.y
    return upper, low


def _cholesky_pf(r, xds):
    upper, low = _chol_parts(r)
    ld = chol_tangent_plain(low, xds[0], lower=not upper)
    if ld is not None:
        return ld.T if upper else ld
    ad = herm_tangent(xds[0], lower=not upper)
    # s = L^-1 dA L^-H, by two triangular solves
    s = mH(tri_solve(low, mH(tri_solve(low, ad))))
    ld = low @ (s * phi_mask(low.shape[-1], low.dtype))
    return mH(ld) if upper else ld


def _cholesky_pb(r, g):
    upper, low = _chol_parts(r)
    gl = mH(g) if upper else g
    plain = chol_pullback_plain(low, gl, lower=not upper)
    if plain is not None:
        return [plain]
    c = (mT(low) @ gl) * phi_mask(low.shape[-1], low.dtype)
    # ga = L^-T c conj(L)^-1, by two triangular solves
    ga = mT(tri_solve(conj(low), mT(tri_solve(low, c, 1)), 1))
    return [herm_cotangent(ga, lower=not upper)]


def _cholesky_pbt(r, g, gd, xds, yd=None):
    # called with a traced input and a nonzero cotangent only
    # (LinalgRule.pullback_with_tangents takes the other cases)
    upper, low = _chol_parts(r)
    flip = mH if upper else (lambda m: m)
    gd = zeros_of(r.y) if is_zero(gd) else gd
    ad = zeros_of(r.xs[0]) if is_zero(xds[0]) else xds[0]
    if r.memo is None:
        r.memo = {}
    # the factor's tangent, when the forward sweep passed it on
    ld = None if yd is None or is_zero(yd) else flip(yd)
    res = chol_pullback_with_tangents_plain(low, flip(g), flip(gd), ad, lower=not upper,
                                            memo=r.memo, ld=ld)
    if res is None:
        return None
    return [(r.ids[0], res[0], res[1])]


defrule(np.linalg.cholesky, _cholesky_pf, _cholesky_pb, pbt=_cholesky_pbt)


# -- pinv, lstsq -------------------------------------------------------------------
def _pinv_d(a, p, ad):
    m, n = a.shape[-2], a.shape[-1]
    adh = mH(ad)
    out = -(p @ ad @ p)
    out = out + (p @ mH(p)) @ adh @ (cached_eye(m, a.dtype) - a @ p)
    out = out + (cached_eye(n, a.dtype) - p @ a) @ adh @ (mH(p) @ p)
    return out


def _pinv_pf(r, xds):
    a = r.xs[0]
    ad = xds[0]
    herm = r.kw.get("hermitian", r.xs[2] if len(r.xs) > 2 else False)
    if herm:
        ad = herm_tangent(ad, lower=True)
        a = herm_tangent(a, lower=True)
    return _pinv_d(a, r.y, ad)


defrule(np.linalg.pinv, _pinv_pf, pfb=broadcasting_pf(_pinv_pf))


def _lstsq_prepare(xs, kw):
    res = np.linalg.lstsq(*xs, **kw)
    a = xs[0]
    p = np.linalg.pinv(a)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return res, (p, u, vh)


def _lstsq_pf(r, xds):
    a, b = r.xs[0], r.xs[1]
    ad, bd = xds[0], xds[1]
    x, res, rank, s = r.y
    p, u, vh = r.aux
    vec = b.ndim == 1
    x2 = as_column(x) if vec else x
    b2 = as_column(b) if vec else b
    bd2 = as_column(bd) if vec else bd
    resid = b2 - a @ x2
    xd = p @ (bd2 - ad @ x2) + (p @ mH(p)) @ (mH(ad) @ resid)
    n = a.shape[-1]
    xd = xd + (cached_eye(n, a.dtype) - p @ a) @ (mH(ad) @ (mH(p) @ x2))
    if res.shape[0]:
        rd = bd2 - ad @ x2 - a @ xd
        resd = 2 * np.sum(conj(resid) * rd, axis=0)
        resd = np.real(resd) if is_complex(resd) else resd
        resd = np.reshape(resd, res.shape)
    else:
        resd = zeros_of(res)
    sd = diag_part(mH(u) @ ad @ mH(vh))
    sd = np.real(sd) if is_complex(sd) else sd
    xd = np.reshape(xd, x.shape) if vec else xd
    return xd, resd, ZERO, sd


defrule(np.linalg.lstsq, _lstsq_pf, multi=True, prepare=_lstsq_prepare)


# -- matrix_power, multi_dot ---------------------------------------------------
def _matrix_power_pf(r, xds):
    a, n = r.xs[0], r.xs[1]
    ad = xds[0]
    if n == 0:
        return ZERO
    base, bd = a, ad
    if n < 0:
        base = np.linalg.inv(a)
        bd = -(base @ ad @ base)
        n = -n
    # d(B^n) = sum_k B^k dB B^(n-1-k), accumulated as P_j' = P_{j-1}' B + P_{j-1} dB
    p, pd = base, bd
    for _ in range(n - 1):
        pd = pd @ base + p @ bd
        p = p @ base
    return pd


defrule(np.linalg.matrix_power, _matrix_power_pf, pfb=broadcasting_pf(_matrix_power_pf))


def _multi_dot_pf(r, xds):
    xs = list(r.xs)
    first_vec = xs[0].ndim == 1
    last_vec = xs[-1].ndim == 1

    def mat(k, v):
        if k == 0 and first_vec:
            return np.reshape(v, (1, v.shape[0]))
        if k == len(xs) - 1 and last_vec:
            return np.reshape(v, (v.shape[0], 1))
        return v

    total = None
    for j, t in enumerate(xds):
        if r.ids[j] is None:
            continue
        prod = None
        for k, v in enumerate(xs):
            m = mat(k, t if k == j else v)
            prod = m if prod is None else prod @ m
        total = prod if total is None else total + prod
    return np.reshape(total, r.y.shape)


def _multi_dot_register():
    d = LinalgDef("numpy.linalg.multi_dot", _multi_dot_pf)

    def multi_dot_maker(ids, arrays, *rest, **kw):
        reject_traced(ids, 1, d.name, "the out argument")
        if type(ids[0]) is not tuple:
            raise MissingRuleError(
                f"{d.name} takes a list of arrays; pass a list (not one stacked array)")
        sub = ids[0]
        y = np.linalg.multi_dot(arrays, *rest, **kw)
        return y, LinalgRule(d, tuple(sub), tuple(arrays), y, {})

    register(np.linalg.multi_dot)(multi_dot_maker)
    accepts_sequences(np.linalg.multi_dot, 0)


_multi_dot_register()


# -- tensorinv, tensorsolve ------------------------------------------------------
def _tensorinv_pf(r, xds):
    a, y = r.xs[0], r.y
    ind = r.kw.get("ind", r.xs[1] if len(r.xs) > 1 else 2)
    n = int(np.prod(a.shape[ind:]))
    y2 = np.reshape(y, (n, -1))  # inv(a.reshape(-1, n))
    ad2 = np.reshape(xds[0], (-1, n))
    return np.reshape(-(y2 @ ad2 @ y2), y.shape)


defrule(np.linalg.tensorinv, _tensorinv_pf)


def _tensorsolve_parts(r):
    a, b = r.xs[0], r.xs[1]
    axes = r.kw.get("axes", r.xs[2] if len(r.xs) > 2 else None)
    perm = None
    if axes is not None:
        perm = list(range(a.ndim))
        for k in axes:
            perm.remove(k)
            perm.insert(a.ndim, k)
    return a, b, perm


def _tensorsolve_pf(r, xds):
    a, b, perm = _tensorsolve_parts(r)
    ad, bd = xds[0], xds[1]
    if perm is not None:
        a = np.transpose(a, perm)
        ad = np.transpose(ad, perm)
    x = r.y
    nb = int(np.prod(b.shape))
    a2 = np.reshape(a, (nb, -1))
    rhs = np.reshape(bd, (nb, 1)) - np.reshape(ad, (nb, -1)) @ np.reshape(x, (-1, 1))
    return np.reshape(np.linalg.solve(a2, rhs), x.shape)


defrule(np.linalg.tensorsolve, _tensorsolve_pf)


# -- norm ------------------------------------------------------------------------
def _norm_args(r):
    names = ("ord", "axis", "keepdims")
    vals = dict(zip(names, (None, None, False)))
    vals.update(zip(names, r.xs[1:]))
    vals.update({k: v for k, v in r.kw.items() if k in names})
    return vals["ord"], vals["axis"], vals["keepdims"]


def _abs_sign(x):
    """(|x|, x/|x|) with sign 0 at 0, written with registered calls."""
    if is_complex(x):
        sq = np.real(x * np.conjugate(x))
        xv = array_value(x)
        nz = (xv != 0).astype(real_dtype(x.dtype))
        ab = np.sqrt(sq + (1 - nz)) * nz
        return ab, x * nz / (ab + (1 - nz))
    sg = np.sign(untraced(x))
    return x * sg, sg


def _extreme_mask(v, axis, want_max):
    vv = array_value(v)
    ext = np.max(vv, axis=axis, keepdims=True) if want_max else np.min(
        vv, axis=axis, keepdims=True)
    m = (vv == ext).astype(real_dtype(vv.dtype))
    return m / np.sum(m, axis=axis, keepdims=True)


def _norm_weights(r):
    """W with d||x|| = Re sum(conj-free W * dx) over the reduced axes, and
    the reduced axes (a tuple) and whether they are matrix axes."""
    x = r.xs[0]
    ord_, axis, keepdims = _norm_args(r)
    nd = x.ndim
    if axis is None:
        if ord_ is None or (ord_ in ("fro", "f") and nd == 2) or (nd == 1 and ord_ == 2):
            axes = tuple(range(nd))
            return _w_two(x, r.y, axes, keepdims), axes
        axes = tuple(range(nd))
    else:
        axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = tuple(a % nd for a in axes)
    if len(axes) == 1:
        return _w_vector(x, r.y, axes, ord_, keepdims), axes
    return _w_matrix(x, r.y, axes, ord_, keepdims), axes


def _kept_shape(shape, axes):
    out = list(shape)
    for a in sorted(axes):
        out.insert(a, 1)
    return tuple(out)


def _safe_div(a, n):
    nv = array_value(n)
    nz = (nv != 0).astype(real_dtype(nv.dtype))
    return a * nz / (n + (1 - nz))


def _w_two(x, y, axes, keepdims):
    yk = np.reshape(y, _kept_shape(np.shape(y), axes)) if not keepdims else y
    return _safe_div(conj(x), yk)


def _w_vector(x, y, axes, ord_, keepdims):
    yk = np.reshape(y, _kept_shape(np.shape(y), axes)) if not keepdims else y
    if ord_ is None or ord_ == 2:
        return _safe_div(conj(x), yk)
    # ord=0 (a count of nonzeros) never gets here: norm_maker records no rule
    ab, sg = _abs_sign(x)
    if ord_ == 1:
        return conj(sg)
    if ord_ == np.inf or ord_ == -np.inf:
        return conj(sg) * _extreme_mask(ab, axes[0], ord_ > 0)
    p = float(ord_)
    return conj(sg) * ab ** (p - 1) * _safe_div(1.0, yk ** (p - 1))


def _move_last(x, axes):
    rest = [k for k in range(x.ndim) if k not in axes]
    perm = rest + list(axes)
    return np.transpose(x, perm), perm


def _w_matrix(x, y, axes, ord_, keepdims):
    yk = np.reshape(y, _kept_shape(np.shape(y), axes)) if not keepdims else y
    if ord_ is None or ord_ in ("fro", "f"):
        return _safe_div(conj(x), yk)
    ab, sg = _abs_sign(x)
    r0, c0 = axes
    if ord_ in (1, -1):
        colsum = np.sum(array_value(ab), axis=r0, keepdims=True)
        return conj(sg) * _extreme_mask(colsum, c0, ord_ > 0)
    if ord_ in (np.inf, -np.inf):
        rowsum = np.sum(array_value(ab), axis=c0, keepdims=True)
        return conj(sg) * _extreme_mask(rowsum, r0, ord_ > 0)
    if ord_ in ("nuc", 2, -2):
        xm, perm = _move_last(x, axes)
        u, s, vh = np.linalg.svd(xm, full_matrices=False)
        # a zero singular value's pair of vectors is LAPACK's choice (any
        # sign, any vector of a left null space): like abs at 0, its weight
        # is 0, so W is the subgradient of least norm, a function of x
        sv = array_value(s)
        rdt = real_dtype(sv.dtype)
        tol = np.max(sv, axis=-1, keepdims=True) * (max(xm.shape[-2:]) * np.finfo(rdt).eps)
        weights = (np.ones(sv.shape, rdt) if ord_ == "nuc"
                   else _extreme_mask(s, -1, ord_ > 0))
        sel = weights * (sv > tol).astype(rdt)
        on = sel > 0
        if is_traced(x) and not on.all():  # differentiated again (an HVP)
            if np.any(sel != weights):
                # W jumps where a singular value it weighs leaves zero
                raise DomainError(
                    f"numpy.linalg.norm(ord={ord_!r}): the matrix is rank deficient, and "
                    "the norm has no second derivative where a singular value it depends "
                    "on is zero (its gradient, the subgradient of least norm there, "
                    "jumps); regularise the matrix (add a small multiple of the identity) "
                    "or use ord='fro'")
            # only the vectors W weighs: those of a zero singular value of a
            # non-square matrix have infinite tangents, and 0 * inf is NaN
            idx = np.flatnonzero(np.any(on.reshape(-1, on.shape[-1]), axis=0))
            u, sel, vh = u[..., idx], sel[..., idx], vh[..., idx, :]
        wm = (u * as_row(sel)) @ vh
        wm = conj(wm)
        return np.transpose(wm, np.argsort(perm))
    raise MissingRuleError(f"numpy.linalg.norm: no derivative for ord={ord_!r}")


def _norm_pf(r, xds):
    w, axes = _norm_weights(r)
    _, _, keepdims = _norm_args(r)
    t = np.sum(w * xds[0], axis=axes, keepdims=keepdims)
    return np.real(t) if is_complex(t) else t


def _norm_pb(r, g):
    w, axes = _norm_weights(r)  # recomputed from the inputs: differentiable again
    _, _, keepdims = _norm_args(r)
    gk = g if keepdims else np.reshape(g, _kept_shape(g.shape, axes))
    return [gk * w] + [None] * (len(r.xs) - 1)


def _norm_register():
    d = LinalgDef("numpy.linalg.norm", _norm_pf, _norm_pb)

    def norm_maker(ids, *xs, **kw):
        reject_traced(ids, 1, d.name, "ord/axis")
        y = np.linalg.norm(*xs, **kw)
        rule = LinalgRule(d, tuple(ids), xs, y, kw)
        if _norm_args(rule)[0] == 0:
            return y, None  # counts nonzeros: piecewise constant, no derivative
        return y, rule

    register(np.linalg.norm)(norm_maker)


_norm_register()

non_differentiable(np.linalg.matrix_rank)
