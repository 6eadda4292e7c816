"""Spectral decompositions of ``np.linalg``: eigh, eigvalsh, eig, eigvals,
svd, svdvals, qr (batched over leading axes where NumPy batches).

The rules are written with the machinery of rules/_linalg_util.py (each is
defined by its pushforward; see that module and rules/linalg.py for the
complex convention and the triangles ``eigh``/``eigvalsh`` read).

Spectral degeneracy (eigh, svd, eig): the factor ``F_ij = 1/(w_j - w_i)`` of
the eigenvector derivative is set to 0 where ``w_i`` and ``w_j`` coincide
(to ``100 * n * eps`` relative to the spectrum's scale), so repeated
eigenvalues or singular values never give NaN or Inf. Eigenvectors of a
repeated eigenvalue are not unique (any rotation inside the eigenspace is as
good), and neither is the phase/sign of any eigenvector; the rules pick the
gauge "no rotation inside an eigenspace, no change of phase". At a repeated
eigenvalue the individual eigenvalues are not differentiable (they split
along the eigenvalues of the perturbation's block), so a chain rule through
``(w, v)`` is exact only for functions that do not see that split:

* exact: functions of the eigenvalues symmetric within each eigenspace
  (``sum(eigvalsh(a))``, ``sum(f(w))``, ``np.linalg.norm(a, 'nuc')``,
  ``sum(svd(a)[1])``); for svd also the relative rotation of U and V (kept
  exact through ``1/(s_i + s_j)``), so ``trace(U diag(s) V^H)`` is exact at
  symmetric positive semi-definite points such as the identity;
* not the derivative: functions mixing the eigenvectors of a repeated
  eigenvalue with a non-constant weight (``v @ diag(h(w)) @ v.T`` with ``h'``
  non-zero there; use the matrix function directly instead), and functions
  of raw eigenvectors inside an eigenspace (not functions of the matrix). The
  ``eigh`` pullback detects both from first-order data and raises
  ``DomainError`` (``_check_degenerate_chain``), and so does real ``svd`` for
  its ``1/(s_j - s_i)`` part (``_check_degenerate_svd``); complex ``svd`` and
  ``eig`` do not check.

At distinct eigenvalues every rule is exact. Finite differences of raw
eigenvectors only agree with the rule when LAPACK's gauge happens to
coincide; test gauge-invariant functions of them.
"""

import numpy as np

from chainrules.arrays import real_dtype
from chainrules.errors import DomainError, MissingRuleError
from chainrules.rule import MultiOutput
from chainrules.registry import register
from chainrules.tangents import is_zero
from chainrules.tracing import untraced

from ._util import array_value
from ._linalg_batch import broadcasting_pb, broadcasting_pf

from ._linalg_util import (LinalgDef, LinalgRule, as_column, as_row, check_tol, conj, defrule,
                           diag_embed, diag_part, herm_cotangent, herm_tangent, imag_diag,
                           inv_gaps, is_complex, mH, mT, tri_mask)


# -- eigh, eigvalsh ---------------------------------------------------------------
def _lower(r):
    uplo = r.kw.get("UPLO", r.xs[1] if len(r.xs) > 1 else "L")
    return str(uplo).upper() == "L"


def _eigh_pf(r, xds):
    w, v = r.y
    ad = herm_tangent(xds[0], lower=_lower(r))
    k = mH(v) @ ad @ v
    wd = diag_part(k)
    wd = np.real(wd) if is_complex(wd) else wd
    return wd, v @ (inv_gaps(w) * k)


def _check_degenerate_chain(w, v, gw, gv):
    """At a repeated eigenvalue the pullback drops the terms
    ``(V^T gv)_ij / (w_j - w_i)`` of the pairs (i, j) inside an eigenspace.
    That is exact when the function is invariant under rotations inside the
    eigenspace and treats its eigenvalues alike; two first-order signs that
    it is not:

    * ``V^T gv`` is not Hermitian on the pair: the function depends on which
      basis of the eigenspace LAPACK returned, so it is not a function of the
      matrix there (no derivative);
    * ``gw`` differs on the pair while ``V^T gv`` is non-zero there: the
      function mixes the eigenvectors with weights that distinguish the
      eigenvalues (``v @ diag(h(w)) @ v.T``), whose derivative needs the
      dropped terms' limits, which first-order data cannot give.

    Either raises ``DomainError``. Functions of the eigenvalues alone keep the
    subgradient the rule returns at a crossing."""
    wv = array_value(w)
    n = wv.shape[-1]
    if n < 2:
        return
    scale = np.maximum(np.max(np.abs(wv), axis=-1, keepdims=True)[..., None], 1.0)
    eps = np.finfo(real_dtype(wv.dtype)).eps
    deg = np.abs(wv[..., None, :] - wv[..., :, None]) <= 100 * n * eps * scale
    deg &= ~np.eye(n, dtype=bool)
    if not np.any(deg):
        return
    # turning V by a unitary R = I + Omega changes the loss by Re sum(c * Omega);
    # |c| is compared with the size of the cotangent (V is unitary)
    gvv = array_value(gv)
    c = mT(array_value(v)) @ gvv
    tol = np.sqrt(eps) * n * (np.max(np.abs(gvv)) + np.finfo(float).tiny)
    anti = np.abs(c - np.conjugate(np.swapaxes(c, -1, -2)))
    why = None
    if np.any(deg & (anti > tol)):
        why = ("it depends on the basis LAPACK chose inside the eigenspace of a repeated "
               "eigenvalue, so it is not a function of the matrix there")
    elif not is_zero(gw):
        gwv = array_value(gw)
        gtol = np.sqrt(eps) * (np.max(np.abs(gwv)) + np.finfo(float).tiny)
        split = np.abs(gwv[..., None, :] - gwv[..., :, None]) > gtol
        if np.any(deg & split & (np.abs(c) > tol)):
            why = ("it mixes the eigenvectors of a repeated eigenvalue with weights that "
                   "tell its copies apart (like v @ diag(h(w)) @ v.T)")
    if why is not None:
        raise DomainError(
            f"numpy.linalg.eigh: the chain rule through (w, v) fails for this function: "
            f"{why}. Write it as a function of the matrix (a matrix function: "
            "chainrules.scipy.linalg.expm, sqrtm, ...; or of the eigenvalues only), or "
            "perturb the input to separate the eigenvalues.")


def _eigh_pb(r, g):
    w, v = r.y
    gw, gv = g
    c = None
    if not is_zero(gv):
        _check_degenerate_chain(w, v, gw, gv)
        c = inv_gaps(w) * (mT(v) @ gv)
    if not is_zero(gw):
        c = diag_embed(gw) if c is None else c + diag_embed(gw)
    ga = conj(v) @ c @ mT(v)
    return [herm_cotangent(ga, lower=_lower(r))] + [None] * (len(r.xs) - 1)


defrule(np.linalg.eigh, _eigh_pf, _eigh_pb, multi=True, pfb=broadcasting_pf(_eigh_pf))


def _eigvalsh_prepare(xs, kw):
    res = np.linalg.eigh(*xs, **kw)
    return res[0], res[1]


def _eigvalsh_pf(r, xds):
    v = r.aux
    ad = herm_tangent(xds[0], lower=_lower(r))
    wd = np.sum(conj(v) * (ad @ v), axis=-2)
    return np.real(wd) if is_complex(wd) else wd


def _eigvalsh_pb(r, g):
    v = r.aux
    ga = (conj(v) * as_row(g)) @ mT(v)
    return [herm_cotangent(ga, lower=_lower(r))] + [None] * (len(r.xs) - 1)


defrule(np.linalg.eigvalsh, _eigvalsh_pf, _eigvalsh_pb, prepare=_eigvalsh_prepare,
        pfb=broadcasting_pf(_eigvalsh_pf), pbb=broadcasting_pb(_eigvalsh_pb))


# -- svd -------------------------------------------------------------------------
def _svd_flags_of(xs, kw):
    names = ("full_matrices", "compute_uv", "hermitian")
    vals = dict(zip(names, (True, True, False)))
    vals.update(zip(names, xs[1:]))
    vals.update({k: v for k, v in kw.items() if k in names})
    return vals


def _svd_flags(r):
    return _svd_flags_of(r.xs, r.kw)


def _inv_sums(s):
    """``1 / (s_i + s_j)`` (diagonal included), 0 where both are zero."""
    sv = array_value(s)
    tot = sv[..., :, None] + sv[..., None, :]
    scale = np.maximum(np.max(sv, axis=-1, keepdims=True)[..., None], 1.0)
    keep = (tot > 100 * sv.shape[-1] * np.finfo(sv.dtype).eps * scale).astype(sv.dtype)
    return keep / (as_row(s) + as_column(s) + (1 - keep))


def _svd_core(a_d, u1, s, v1):
    """Reduced-SVD tangents (U1', s', V1') of a = U1 diag(s) V1^H along a_d.

    With dP = U1^H a_d V1, the rotations U1^H U1' and V1^H V1' are
    ``Fm * sym(dP) +/- Fp * asym(dP)`` where ``Fm_ij = 1/(s_j - s_i)``
    and ``Fp_ij = 1/(s_i + s_j)``. The ``Fm`` part turns U and V together and
    is a pure gauge where singular values repeat (set to 0 there); the
    ``Fp`` part, their relative rotation, stays exact. So functions of
    ``U diag(s) V^H``-type products keep their exact derivative at repeated
    singular values.
    """
    m, n, k = u1.shape[-2], v1.shape[-2], s.shape[-1]
    dp = mH(u1) @ a_d @ v1
    sd = diag_part(dp)
    if is_complex(sd):
        sd = np.real(sd)
    dph = mH(dp)
    sym = inv_gaps(s) * ((dp + dph) * 0.5)
    asym = _inv_sums(s) * ((dp - dph) * 0.5)
    ud = u1 @ (sym + asym)
    vd = v1 @ (sym - asym)
    sr = as_row(s)
    if m > k:
        ud = ud + (a_d @ v1 - u1 @ dp) / sr
    if n > k:
        vd = vd + (mH(a_d) @ u1 - v1 @ dph) / sr
    return ud, sd, vd


def _complete(qd1, q, k):
    """Tangent of a full orthonormal basis [Q1, Q2] from that of Q1, in the
    gauge Q2' = -Q1 (Q1'^H Q2) (no rotation inside the complement)."""
    m = q.shape[-1]
    if m == k:
        return qd1
    q1, q2 = q[..., :, :k], q[..., :, k:]
    qd2 = -(q1 @ (mH(qd1) @ q2))
    e = np.eye(m, dtype=real_dtype(q.dtype))
    return qd1 @ e[:k] + qd2 @ e[k:]


def _svd_prepare(xs, kw):
    res = np.linalg.svd(*xs, **kw)
    fl = _svd_flags_of(xs, kw)
    if fl["compute_uv"]:
        return res, None
    u, s, vh = np.linalg.svd(xs[0], full_matrices=False, hermitian=fl["hermitian"])
    return res, (u, vh)


def _svd_pf(r, xds):
    fl = _svd_flags(r)
    ad = xds[0]
    if fl["hermitian"]:
        ad = herm_tangent(ad, lower=True)
    if not fl["compute_uv"]:
        u, vh = r.aux
        s = r.y
        dp = mH(u) @ ad @ mH(vh)
        sd = diag_part(dp)
        return np.real(sd) if is_complex(sd) else sd
    u, s, vh = r.y
    k = s.shape[-1]
    full = fl["full_matrices"]
    u1 = u[..., :, :k] if full else u
    v = mH(vh)
    v1 = v[..., :, :k] if full else v
    ud, sd, vd = _svd_core(ad, u1, s, v1)
    if full:
        ud = _complete(ud, u, k)
        vd = _complete(vd, v, k)
    return ud, sd, mH(vd)


def _svd_pb(r, g):
    """The pullback by transposing the pushforward, refused where it would
    divide by a zero singular value: the singular vectors of a rank-deficient
    non-square matrix (their part outside the range) have no derivative."""
    from ._linalg_util import transpose_pushforward

    fl = _svd_flags(r)
    if fl["compute_uv"] and isinstance(g, tuple):
        u, s, vh = r.y
        m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
        gu, gvh = g[0], g[2]
        if (m > k and not is_zero(gu)) or (n > k and not is_zero(gvh)):
            sv = array_value(s)
            scale = np.max(sv, axis=-1, keepdims=True) if k else sv
            if k and np.any(sv <= 100 * k * np.finfo(sv.dtype).eps * scale):
                raise DomainError(
                    "numpy.linalg.svd: the input is rank deficient and not square, so its "
                    "singular vectors have no derivative (the part of U or V outside the "
                    "range divides by a zero singular value); differentiate a function of "
                    "the singular values, or of U diag(s) V^H, instead")
        _check_degenerate_svd(g, u, s, vh, k)
    return transpose_pushforward(r, g)


def _check_degenerate_svd(g, u, s, vh, k):
    """The svd analogue of ``_check_degenerate_chain``: at a repeated
    singular value the pullback drops the ``1/(s_j - s_i)`` terms of U and V
    turning together; the function must be invariant under that turn
    (``c`` below symmetric on the pair) and, where it uses those vectors,
    treat the repeated values alike (real inputs)."""
    gu, gs, gvh = g
    if (is_zero(gu) and is_zero(gvh)) or k < 2 or u.dtype.kind == "c":
        return
    sv = array_value(s)
    eps = np.finfo(real_dtype(sv.dtype)).eps
    scale = np.maximum(np.max(sv, axis=-1, keepdims=True)[..., None], 1.0)
    deg = np.abs(sv[..., None, :] - sv[..., :, None]) <= 100 * k * eps * scale
    deg &= ~np.eye(k, dtype=bool)
    if not np.any(deg):
        return
    # c = U1^T gU + Vh1 gVh^T pairs with the rotation U' = U X, V' = V X: its
    # antisymmetric part with the gauge (X skew, U and V turning together),
    # its symmetric part with the 1/(s_j - s_i) terms the pullback drops
    c, size = 0, np.finfo(float).tiny
    if not is_zero(gu):
        c = c + array_value(mT(u[..., :, :k]) @ gu[..., :, :k])
        size += np.max(np.abs(array_value(gu)))
    if not is_zero(gvh):
        c = c + array_value(vh[..., :k, :] @ mT(gvh[..., :k, :]))
        size += np.max(np.abs(array_value(gvh)))
    tol = np.sqrt(eps) * max(u.shape[-2], vh.shape[-1]) * size
    why = None
    if np.any(deg & (np.abs(c - np.swapaxes(c, -1, -2)) > tol)):
        why = ("it depends on the basis LAPACK chose for the singular vectors of a "
               "repeated singular value")
    elif not is_zero(gs):
        gsv = array_value(gs)
        gtol = np.sqrt(eps) * (np.max(np.abs(gsv)) + np.finfo(float).tiny)
        split = np.abs(gsv[..., None, :] - gsv[..., :, None]) > gtol
        if np.any(deg & split & (np.abs(c) > tol)):
            why = ("it mixes the singular vectors of a repeated singular value with "
                   "weights that tell its copies apart")
    if why is not None:
        raise DomainError(f"numpy.linalg.svd: the chain rule through (U, s, Vh) fails for "
                          f"this function: {why}; write it through U diag(s) Vh, the "
                          "singular values alone, or perturb the input")


def _svd_register():
    d_multi = LinalgDef("numpy.linalg.svd", _svd_pf, _svd_pb, _svd_prepare)

    def svd_maker(ids, *xs, **kw):
        y, aux = _svd_prepare(xs, kw)
        rule = LinalgRule(d_multi, tuple(ids), xs, tuple(y) if aux is None else y, kw, aux)
        if aux is None:
            return MultiOutput(y), rule
        return y, rule

    register(np.linalg.svd)(svd_maker)


_svd_register()


if hasattr(np.linalg, "svdvals"):
    def _svdvals_prepare(xs, kw):
        u, s, vh = np.linalg.svd(xs[0], full_matrices=False)
        return s, (u, vh)

    def _svdvals_pf(r, xds):
        u, vh = r.aux
        sd = diag_part(mH(u) @ xds[0] @ mH(vh))
        return np.real(sd) if is_complex(sd) else sd

    defrule(np.linalg.svdvals, _svdvals_pf, prepare=_svdvals_prepare)


# -- qr --------------------------------------------------------------------------
def _qr_mode(r):
    return r.kw.get("mode", r.xs[1] if len(r.xs) > 1 else "reduced")


def _qr_prepare(xs, kw):
    res = np.linalg.qr(*xs, **kw)
    mode = kw.get("mode", xs[1] if len(xs) > 1 else "reduced")
    if mode == "r":
        return res, np.linalg.qr(xs[0])
    if mode not in ("reduced", "complete"):
        raise MissingRuleError(
            f"numpy.linalg.qr(mode={mode!r}) has no derivative rule (the Householder "
            "representation is not a smooth function of the input); use mode='reduced', "
            "'complete' or 'r'")
    return res, None


def _qr_pf(r, xds):
    mode = _qr_mode(r)
    ad = xds[0]
    if mode == "r":
        q, rr = r.aux
    else:
        q, rr = r.y
    m, n = ad.shape[-2], ad.shape[-1]
    k = min(m, n)
    q1 = q[..., :, :k]
    r1 = rr[..., :k, :k]
    rtop = rr[..., :k, :]
    _check_full_rank("numpy.linalg.qr", r1)
    ri = np.linalg.inv(r1)
    ad1 = ad[..., :, :k] if n > k else ad
    qa = mH(q1) @ ad1
    c = qa @ ri
    low = c * tri_mask(k, c.dtype, True, -1)
    om = low - mH(low)
    if is_complex(c):
        om = om + imag_diag(c)
    qd1 = q1 @ om
    if m > k:
        qd1 = qd1 + (ad1 - q1 @ qa) @ ri
    rd = mH(q1) @ ad - om @ rtop
    if mode == "r":
        return rd
    if mode == "reduced":
        return qd1, rd
    # complete
    qd = _complete(qd1, q, k)
    if rr.shape[-2] > k:
        rd = _pad_rows(rd, rr.shape[-2])
    return qd, rd


def _check_full_rank(op, r1):
    """Q and R are differentiable only where the leading k columns have full
    rank (R's diagonal has no zero): there Q is not unique."""
    d = np.abs(diag_part(array_value(r1)))
    if d.shape[-1] == 0:
        return
    scale = np.max(d, axis=-1, keepdims=True)
    if np.any(d <= 100 * d.shape[-1] * np.finfo(d.dtype).eps * scale) or \
            not np.all(np.isfinite(d)):
        raise DomainError(
            f"{op}: the leading columns of the input are linearly dependent (R has a "
            "zero on its diagonal), where the factors are not unique and have no "
            "derivative")


def _pad_rows(x, m):
    k = x.shape[-2]
    e = np.eye(m, dtype=real_dtype(x.dtype))[:, :k]
    return e @ x


def _qr_register():
    d = LinalgDef("numpy.linalg.qr", _qr_pf, None, _qr_prepare)

    def qr_maker(ids, *xs, **kw):
        y, aux = _qr_prepare(xs, kw)
        if _qr_mode_xs(xs, kw) == "r":
            return y, LinalgRule(d, tuple(ids), xs, y, kw, aux)
        return MultiOutput(y), LinalgRule(d, tuple(ids), xs, tuple(y), kw, aux)

    register(np.linalg.qr)(qr_maker)


def _qr_mode_xs(xs, kw):
    return kw.get("mode", xs[1] if len(xs) > 1 else "reduced")


_qr_register()


# -- eig, eigvals -------------------------------------------------------------
def _check_eigvectors(op, v):
    """The eigenvector derivative solves with ``V``: at a defective matrix
    (a Jordan block) ``V`` is singular and no derivative exists; near one its
    condition number exceeds ``1/sqrt(eps)`` and the solve has no digits."""
    vp = array_value(v)
    if vp.shape[-1] == 0:
        return
    cond = np.linalg.cond(vp)
    if not np.all(np.isfinite(cond) & (cond * check_tol(vp.dtype) < 1)):
        raise DomainError(
            f"{op}: the matrix is defective or nearly so (its eigenvector matrix has "
            f"condition number {float(np.max(cond)):.3g}): eigenvalues and eigenvectors "
            "are not differentiable there. Use a function of the matrix that is "
            "(np.trace, scipy.linalg.expm, ...) or a Schur form.")


def _eig_core(a_d, w, v, op="numpy.linalg.eig"):
    _check_eigvectors(op, v)
    k = np.linalg.solve(v, a_d @ v)
    wd = diag_part(k)
    vd = v @ (inv_gaps(w) * k)
    # keep the columns at unit norm (NumPy normalizes them)
    nrm = np.sum(conj(v) * vd, axis=-2)
    if is_complex(nrm):
        nrm = np.real(nrm)
    vd = vd - v * as_row(nrm)
    return wd, vd


def _eig_pf(r, xds):
    w, v = r.y
    wd, vd = _eig_core(xds[0], w, v)
    return wd, vd


defrule(np.linalg.eig, _eig_pf, multi=True)


def _eigvals_prepare(xs, kw):
    # LAPACK may order the eigenvalues differently with and without
    # eigenvectors: match eig's vectors to eigvals' order
    y = np.linalg.eigvals(*xs, **kw)
    w, v = np.linalg.eig(*xs, **kw)
    yv, wv = array_value(y), array_value(w)
    order = np.argmin(np.abs(yv[..., :, None] - wv[..., None, :]), axis=-1)
    if not np.array_equal(order, np.broadcast_to(np.arange(yv.shape[-1]), order.shape)):
        v = np.take_along_axis(v, order[..., None, :], axis=-1)
    return y, v


def _eigvals_pf(r, xds):
    v = r.aux
    _check_eigvectors("numpy.linalg.eigvals", v)
    return diag_part(np.linalg.solve(v, xds[0] @ v))


defrule(np.linalg.eigvals, _eigvals_pf, prepare=_eigvals_prepare)
