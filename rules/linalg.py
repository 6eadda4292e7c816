"""Linear algebra: ``np.linalg`` (batched over leading axes where NumPy batches).

Every rule here is defined by its *pushforward* ``pf(rule, tangents)``, a
function of the inputs' tangents written with ``np.*`` calls (linear in the
tangents). From that one definition:

* ``pushforward`` calls it;
* ``pullback`` is either written by hand (``pb``: inv, solve, det, slogdet,
  cholesky, eigh, eigvalsh, norm: the cheap and common ones, and the ones
  whose pushforward calls the op itself) or derived by transposing ``pf``:
  ``pf`` is recorded on a small tape with traced tangents and swept back;
* ``pullback_with_tangents`` (the HVP fast path) is the forward derivative of
  the pullback: a ``chainrules.jvp`` of ``pullback(x, y, g)`` along the input
  tangents, the output tangents (from ``pf``) and the cotangent's tangent.
  It is exact; it costs about one more pullback.

Since pullbacks are written with ``np.*`` calls on the inputs and saved
outputs, they are differentiable again (grad of grad).

Complex numbers follow the JAX convention (DESIGN.md): cotangents pair with
tangents through ``Re(sum(c * t))``, so holomorphic maps (inv, solve, det,
matrix_power, ...) transpose without conjugation, and Hermitian ones (eigh,
cholesky, svd, qr, norms) carry the conjugates their maths needs.

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
* finite but not the derivative: functions mixing the eigenvectors of a
  repeated eigenvalue with a non-constant weight (``v @ diag(h(w)) @ v.T``
  with ``h'`` non-zero there; use the matrix function directly instead).

At distinct eigenvalues every rule is exact. Finite differences of raw
eigenvectors only agree with the rule when LAPACK's gauge happens to
coincide; test gauge-invariant functions of them.

Triangles: like LAPACK, ``eigh``, ``eigvalsh`` and ``cholesky`` read one
triangle of the input (the lower one by default; the imaginary part of a
complex diagonal is ignored) and their cotangents live on that triangle.
"""

import functools

import numpy as np

from chainrules.errors import MissingRuleError
from chainrules.graph import MultiOutput, Tape
from chainrules.registry import non_differentiable, op_name, register
from chainrules.rule import ReverseRule
from chainrules.tangents import ZERO, _Structural
from chainrules.tracing import Traced, stop_gradient

__all__ = ["LinalgRule", "defrule", "herm_tangent", "herm_cotangent"]


# -- helpers written with registered np.* calls only ---------------------------
def _is_zero(t):
    return t is None or isinstance(t, _Structural)


def _all_zero(g):
    if isinstance(g, tuple):
        return all(_is_zero(t) for t in g)
    return _is_zero(g)


def _rdt(dtype):
    """The real dtype of the same precision."""
    return np.finfo(dtype).dtype


def _cplx(x):
    return x.dtype.kind == "c"


def mT(x):
    """Swap the last two axes (with the registered np.transpose)."""
    nd = x.ndim
    return np.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def conj(x):
    return np.conjugate(x) if _cplx(x) else x


def mH(x):
    return conj(mT(x))


@functools.lru_cache(maxsize=256)
def _const(kind, n, dtype, lower=True, k=0):
    """Cached read-only constant matrices (identity, triangle masks)."""
    if kind == "eye":
        m = np.eye(n, dtype=dtype)
    elif kind == "tri":
        ones = np.ones((n, n), dtype=dtype)
        m = np.tril(ones, k) if lower else np.triu(ones, -k)
    else:  # "phi": lower triangle with a halved diagonal
        m = np.tril(np.ones((n, n), dtype)) - 0.5 * np.eye(n, dtype=dtype)
    m.flags.writeable = False
    return m


def _eye(n, dtype):
    return _const("eye", n, _rdt(dtype))


def diag_part(x):
    """(..., n, n) -> (..., n)."""
    return np.sum(x * _eye(x.shape[-1], x.dtype), axis=-1)


def diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    n = v.shape[-1]
    return np.reshape(v, v.shape + (1,)) * _eye(n, v.dtype)


def _col(v):
    return np.reshape(v, v.shape + (1,))


def _row(v):
    return np.reshape(v, v.shape[:-1] + (1, v.shape[-1]))


def _tri_mask(n, dtype, lower, k):
    return _const("tri", n, _rdt(dtype), bool(lower), k)


def _imag_diag(c):
    """``i * Im(diag(c))`` as a diagonal matrix (complex ``c``)."""
    d = diag_part(c)
    return diag_embed((d - np.conjugate(d)) * 0.5)


def herm_tangent(xd, lower=True):
    """The tangent of the Hermitian matrix LAPACK reads from one triangle."""
    n = xd.shape[-1]
    s = xd * _tri_mask(n, xd.dtype, lower, -1)
    d = (np.real(xd) if _cplx(xd) else xd) * _eye(n, xd.dtype)
    return s + mH(s) + d


def herm_cotangent(c, lower=True):
    """Transpose of ``herm_tangent``: a cotangent on the triangle read."""
    n = c.shape[-1]
    s = (c + mH(c)) * _tri_mask(n, c.dtype, lower, -1)
    return s + (np.real(c) if _cplx(c) else c) * _eye(n, c.dtype)


def inv_gaps(w, keep_diag=False):
    """``F_ij = 1 / (w_j - w_i)``, 0 on the diagonal and where w_i == w_j.

    The degeneracy mask is computed on the plain values (a constant)."""
    wv = np.asarray(stop_gradient(w))
    n = wv.shape[-1]
    gap = wv[..., None, :] - wv[..., :, None]
    scale = np.maximum(np.max(np.abs(wv), axis=-1, keepdims=True)[..., None], 1.0)
    eps = np.finfo(_rdt(wv.dtype)).eps
    keep = (np.abs(gap) > 100 * n * eps * scale).astype(_rdt(wv.dtype))
    d = _row(w) - _col(w)
    return keep / (d + (1 - keep))


def _zeros(x):
    return np.zeros(x.shape, x.dtype)


def _inexact(x):
    return hasattr(x, "dtype") and hasattr(x, "shape") and x.dtype.kind in "fc"


# -- the generic rule ----------------------------------------------------------
class _Def:
    __slots__ = ("name", "pf", "pb", "prepare")

    def __init__(self, name, pf, pb=None, prepare=None):
        self.name, self.pf, self.pb, self.prepare = name, pf, pb, prepare


class LinalgRule(ReverseRule):
    """A nonlinear rule defined by its pushforward (see the module docstring).

    ``ids``/``xs``: NodeId (or None) and value of every positional argument;
    ``y``: the output (a plain tuple for several outputs); ``kw``: keywords;
    ``aux``: values the maker saved for the derivative (factors, ...).
    """

    __slots__ = ("d", "ids", "xs", "y", "kw", "aux")

    def __init__(self, d, ids, xs, y, kw, aux=None):
        self.d = d
        self.ids = ids
        self.xs = xs
        self.y = y
        self.kw = kw
        self.aux = aux

    @property
    def name(self):
        return self.d.name

    def inputs(self):
        return tuple(i for i in self.ids if i is not None)

    def _expand(self, tangents):
        it = iter(tangents)
        return [next(it) if i is not None else ZERO for i in self.ids]

    def _materialize(self, xds):
        return [(_zeros(x) if _is_zero(t) else t) if _inexact(x) else None
                for x, t in zip(self.xs, xds)]

    def pushforward(self, tangents):
        xds = self._expand(tangents)
        if all(_is_zero(t) for t in xds):
            return ZERO
        return self.d.pf(self, self._materialize(xds))

    def cotangents(self, g):
        """One cotangent per positional argument (None where not traced)."""
        if self.d.pb is not None:
            return self.d.pb(self, g)
        return _transpose(self, g)

    def pullback(self, g):
        if _all_zero(g):
            return []
        cots = self.cotangents(g)
        return [(i, _project(c, x)) for i, c, x in zip(self.ids, cots, self.xs)
                if i is not None and not _is_zero(c)]

    def pullback_with_tangents(self, g, gd, tangents):
        xds = self._expand(tangents)
        if _all_zero(g) or all(_is_zero(t) for t in xds):
            c = {} if _all_zero(g) else dict(self.pullback(g))
            cd = {} if _all_zero(gd) else dict(self.pullback(gd))
            return [(i, c.get(i, ZERO), cd.get(i, ZERO)) for i in self.inputs()]
        return _pullback_jvp(self, g, gd, xds)


def _project(c, x):
    """The cotangent in its primal's dtype: the real part for a real primal
    (the pairing is Re(sum(c * t))), the primal's precision."""
    if c.dtype == x.dtype:
        return c
    if c.dtype.kind == "c" and x.dtype.kind != "c":
        c = np.real(c)
    return c if c.dtype == x.dtype else c.astype(x.dtype)


def _pairs(g, t):
    if isinstance(g, tuple):
        return zip(g, t)
    return ((g, t),)


def _transpose(r, g):
    """Cotangents from the pushforward: reverse mode of ``<g, pf(r, xd)>``
    with respect to the tangents ``xd``, on a small local tape."""
    local = Tape()
    xds, leaves = [], []
    for i, x in zip(r.ids, r.xs):
        if i is None:
            xds.append(_zeros(x) if _inexact(x) else None)
            leaves.append(None)
        else:
            z = _zeros(x)
            nid = local.leaf(z)
            xds.append(Traced(z, nid, local))
            leaves.append(nid)
    try:
        t = r.d.pf(r, xds)
        total = None
        for gk, tk in _pairs(g, t):
            if _is_zero(gk) or _is_zero(tk):
                continue
            prod = gk * tk
            if _cplx(prod):
                prod = np.real(prod)
            term = np.sum(prod)
            total = term if total is None else total + term
    finally:
        local.active = False
    if total is None or type(total) is not Traced or total.tape is not local:
        return [None if n is None else ZERO for n in leaves]
    grads = local.backward([total.node], [np.ones((), total.dtype)])
    return [None if n is None else grads.get(n) for n in leaves]


def _pullback_jvp(r, g, gd, xds):
    """``pullback_with_tangents`` as the jvp of the pullback along the input
    tangents, the output tangents and the cotangent's tangent."""
    from chainrules.api import jvp

    pos = [k for k, i in enumerate(r.ids) if i is not None]
    yd = r.d.pf(r, r._materialize(xds))
    multi = isinstance(r.y, tuple)
    if multi:
        g = tuple(_zeros(y) if _is_zero(gk) and not _is_zero(gdk) else gk
                  for y, gk, gdk in zip(r.y, g, gd if isinstance(gd, tuple)
                                        else (ZERO,) * len(g)))
        if _is_zero(gd):
            gd = (ZERO,) * len(g)
        yd = tuple(ZERO if not _inexact(y) else t for y, t in zip(r.y, yd))
    x_p = tuple(r.xs[k] for k in pos)
    x_t = tuple(xds[k] for k in pos)

    def pullback_of(xp, y, gg):
        xs = list(r.xs)
        for k, v in zip(pos, xp):
            xs[k] = v
        aux = r.aux
        if aux is not None:  # saved factors depend on x: recompute them traced
            y, aux = r.d.prepare(tuple(xs), r.kw)
        r2 = LinalgRule(r.d, r.ids, tuple(xs), tuple(y) if multi else y, r.kw, aux)
        cots = r2.cotangents(tuple(gg) if multi else gg)
        return tuple(cots[k] for k in pos)

    cots, dots = jvp(pullback_of, (x_p, r.y, g), (x_t, yd, gd))
    out = []
    for k, c, cd in zip(pos, cots, dots):
        c = ZERO if not _inexact(c) else _project(c, r.xs[k])
        cd = ZERO if not _inexact(cd) else _project(cd, r.xs[k])
        out.append((r.ids[k], c, cd))
    return out


def defrule(op, pf, pb=None, multi=False, prepare=None):
    """Register ``op`` (all positional array arguments differentiable).

    ``pf(rule, tangents) -> output tangent`` (a tuple for ``multi``);
    ``pb(rule, g) -> one cotangent per positional argument`` (optional);
    ``prepare(xs, kw) -> (y, aux)`` computes the output and saved values
    (default: ``op(*xs, **kw)``).
    """
    d = _Def(op_name(op), pf, pb, prepare)

    def linalg_maker(ids, *xs, **kw):
        if prepare is None:
            y, aux = op(*xs, **kw), None
        else:
            y, aux = prepare(xs, kw)
        if multi:
            return MultiOutput(y), LinalgRule(d, tuple(ids), xs, tuple(y), kw, aux)
        return y, LinalgRule(d, tuple(ids), xs, y, kw, aux)

    register(op)(linalg_maker)
    return op


def _no_traced(ids, k, name, what):
    if len(ids) > k and any(i is not None for i in ids[k:]):
        raise MissingRuleError(f"{name}: {what} cannot be differentiated; pass it as a "
                               "constant (chainrules.stop_gradient)")


# -- inv, det, slogdet -----------------------------------------------------------
def _inv_pf(r, xds):
    y = r.y
    return -(y @ xds[0] @ y)


def _inv_pb(r, g):
    yt = mT(r.y)
    return [-(yt @ g @ yt)]


defrule(np.linalg.inv, _inv_pf, _inv_pb)


def _trace_solve(a, ad):
    return np.sum(diag_part(np.linalg.solve(a, ad)), axis=-1)


def _det_pf(r, xds):
    return r.y * _trace_solve(r.xs[0], xds[0])


def _det_pb(r, g):
    a = r.xs[0]
    return [_col(_col(g * r.y)) * mT(np.linalg.inv(a))]


defrule(np.linalg.det, _det_pf, _det_pb)


def _slogdet_pf(r, xds):
    a = r.xs[0]
    sign, logabs = r.y
    tau = _trace_solve(a, xds[0])
    if _cplx(tau):
        itau = (tau - np.conjugate(tau)) * 0.5
        return sign * itau, np.real(tau)
    return _zeros(sign), tau


def _slogdet_pb(r, g):
    a = r.xs[0]
    sign, logabs = r.y
    gs, gl = g
    c = _zeros(logabs) if _is_zero(gl) else gl
    if _cplx(sign) and not _is_zero(gs):
        z = gs * sign
        c = c + (z - np.conjugate(z)) * 0.5
    return [_col(_col(c)) * mT(np.linalg.inv(a))]


defrule(np.linalg.slogdet, _slogdet_pf, _slogdet_pb, multi=True)


# -- solve ------------------------------------------------------------------------
def _vec(b):
    return b.ndim == 1


def _unbroadcast(g, shape):
    from chainrules.derived import unbroadcast

    return unbroadcast(g, tuple(shape))


def _solve_pf(r, xds):
    a, b = r.xs
    ad, bd = xds
    x = r.y
    if _vec(b):
        rhs = _col(bd) - ad @ _col(x)
        return np.reshape(np.linalg.solve(a, rhs), x.shape)
    return np.linalg.solve(a, bd - ad @ x)


def _solve_pb(r, g):
    a, b = r.xs
    x = r.y
    if _vec(b):
        gb = np.reshape(np.linalg.solve(mT(a), _col(g)), x.shape)
        ga = -(_col(gb) * _row(x))
    else:
        gb = np.linalg.solve(mT(a), g)
        ga = -(gb @ mT(x))
    return [_unbroadcast(ga, a.shape) if r.ids[0] is not None else None,
            _unbroadcast(gb, b.shape) if r.ids[1] is not None else None]


defrule(np.linalg.solve, _solve_pf, _solve_pb)


# -- cholesky ------------------------------------------------------------------
def _phi_mask(n, dtype):
    return _const("phi", n, _rdt(dtype))


def _chol_parts(r):
    upper = r.kw.get("upper", False)
    low = mH(r.y) if upper else r.y
    return upper, low


def _cholesky_pf(r, xds):
    upper, low = _chol_parts(r)
    ad = herm_tangent(xds[0], lower=not upper)
    li = np.linalg.inv(low)
    s = li @ ad @ mH(li)
    ld = low @ (s * _phi_mask(low.shape[-1], low.dtype))
    return mH(ld) if upper else ld


def _cholesky_pb(r, g):
    upper, low = _chol_parts(r)
    gl = mH(g) if upper else g
    li = np.linalg.inv(low)
    c = (mT(low) @ gl) * _phi_mask(low.shape[-1], low.dtype)
    ga = mT(li) @ c @ conj(li)
    return [herm_cotangent(ga, lower=not upper)]


defrule(np.linalg.cholesky, _cholesky_pf, _cholesky_pb)


# -- eigh, eigvalsh ---------------------------------------------------------------
def _lower(r):
    uplo = r.kw.get("UPLO", r.xs[1] if len(r.xs) > 1 else "L")
    return str(uplo).upper() == "L"


def _eigh_pf(r, xds):
    w, v = r.y
    ad = herm_tangent(xds[0], lower=_lower(r))
    k = mH(v) @ ad @ v
    wd = diag_part(k)
    wd = np.real(wd) if _cplx(wd) else wd
    return wd, v @ (inv_gaps(w) * k)


def _eigh_pb(r, g):
    w, v = r.y
    gw, gv = g
    c = None
    if not _is_zero(gv):
        c = inv_gaps(w) * (mT(v) @ gv)
    if not _is_zero(gw):
        c = diag_embed(gw) if c is None else c + diag_embed(gw)
    ga = conj(v) @ c @ mT(v)
    return [herm_cotangent(ga, lower=_lower(r))] + [None] * (len(r.xs) - 1)


defrule(np.linalg.eigh, _eigh_pf, _eigh_pb, multi=True)


def _eigvalsh_prepare(xs, kw):
    res = np.linalg.eigh(*xs, **kw)
    return res[0], res[1]


def _eigvalsh_pf(r, xds):
    v = r.aux
    ad = herm_tangent(xds[0], lower=_lower(r))
    wd = np.sum(conj(v) * (ad @ v), axis=-2)
    return np.real(wd) if _cplx(wd) else wd


def _eigvalsh_pb(r, g):
    v = r.aux
    ga = (conj(v) * _row(g)) @ mT(v)
    return [herm_cotangent(ga, lower=_lower(r))] + [None] * (len(r.xs) - 1)


defrule(np.linalg.eigvalsh, _eigvalsh_pf, _eigvalsh_pb, prepare=_eigvalsh_prepare)


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
    sv = np.asarray(stop_gradient(s))
    tot = sv[..., :, None] + sv[..., None, :]
    scale = np.maximum(np.max(sv, axis=-1, keepdims=True)[..., None], 1.0)
    keep = (tot > 100 * sv.shape[-1] * np.finfo(sv.dtype).eps * scale).astype(sv.dtype)
    return keep / (_row(s) + _col(s) + (1 - keep))


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
    if _cplx(sd):
        sd = np.real(sd)
    dph = mH(dp)
    sym = inv_gaps(s) * ((dp + dph) * 0.5)
    asym = _inv_sums(s) * ((dp - dph) * 0.5)
    ud = u1 @ (sym + asym)
    vd = v1 @ (sym - asym)
    sr = _row(s)
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
    e = np.eye(m, dtype=_rdt(q.dtype))
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
        return np.real(sd) if _cplx(sd) else sd
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


def _svd_register():
    d_multi = _Def("numpy.linalg.svd", _svd_pf, None, _svd_prepare)

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
        return np.real(sd) if _cplx(sd) else sd

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
    ri = np.linalg.inv(r1)
    ad1 = ad[..., :, :k] if n > k else ad
    qa = mH(q1) @ ad1
    c = qa @ ri
    low = c * _tri_mask(k, c.dtype, True, -1)
    om = low - mH(low)
    if _cplx(c):
        om = om + _imag_diag(c)
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


def _pad_rows(x, m):
    k = x.shape[-2]
    e = np.eye(m, dtype=_rdt(x.dtype))[:, :k]
    return e @ x


def _qr_register():
    d = _Def("numpy.linalg.qr", _qr_pf, None, _qr_prepare)

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
def _eig_core(a_d, w, v):
    k = np.linalg.solve(v, a_d @ v)
    wd = diag_part(k)
    vd = v @ (inv_gaps(w) * k)
    # keep the columns at unit norm (NumPy normalizes them)
    nrm = np.sum(conj(v) * vd, axis=-2)
    if _cplx(nrm):
        nrm = np.real(nrm)
    vd = vd - v * _row(nrm)
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
    yv, wv = np.asarray(stop_gradient(y)), np.asarray(stop_gradient(w))
    order = np.argmin(np.abs(yv[..., :, None] - wv[..., None, :]), axis=-1)
    if not np.array_equal(order, np.broadcast_to(np.arange(yv.shape[-1]), order.shape)):
        v = np.take_along_axis(v, order[..., None, :], axis=-1)
    return y, v


def _eigvals_pf(r, xds):
    v = r.aux
    return diag_part(np.linalg.solve(v, xds[0] @ v))


defrule(np.linalg.eigvals, _eigvals_pf, prepare=_eigvals_prepare)


# -- pinv, lstsq -------------------------------------------------------------------
def _pinv_d(a, p, ad):
    m, n = a.shape[-2], a.shape[-1]
    adh = mH(ad)
    out = -(p @ ad @ p)
    out = out + (p @ mH(p)) @ adh @ (_eye(m, a.dtype) - a @ p)
    out = out + (_eye(n, a.dtype) - p @ a) @ adh @ (mH(p) @ p)
    return out


def _pinv_pf(r, xds):
    a = r.xs[0]
    ad = xds[0]
    herm = r.kw.get("hermitian", r.xs[2] if len(r.xs) > 2 else False)
    if herm:
        ad = herm_tangent(ad, lower=True)
        a = herm_tangent(a, lower=True)
    return _pinv_d(a, r.y, ad)


defrule(np.linalg.pinv, _pinv_pf)


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
    x2 = _col(x) if vec else x
    b2 = _col(b) if vec else b
    bd2 = _col(bd) if vec else bd
    resid = b2 - a @ x2
    xd = p @ (bd2 - ad @ x2) + (p @ mH(p)) @ (mH(ad) @ resid)
    n = a.shape[-1]
    xd = xd + (_eye(n, a.dtype) - p @ a) @ (mH(ad) @ (mH(p) @ x2))
    if res.shape[0]:
        rd = bd2 - ad @ x2 - a @ xd
        resd = 2 * np.sum(conj(resid) * rd, axis=0)
        resd = np.real(resd) if _cplx(resd) else resd
        resd = np.reshape(resd, res.shape)
    else:
        resd = _zeros(res)
    sd = diag_part(mH(u) @ ad @ mH(vh))
    sd = np.real(sd) if _cplx(sd) else sd
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


defrule(np.linalg.matrix_power, _matrix_power_pf)


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
    d = _Def("numpy.linalg.multi_dot", _multi_dot_pf)

    def multi_dot_maker(ids, arrays, *rest, **kw):
        _no_traced(ids, 1, d.name, "the out argument")
        if type(ids[0]) is not tuple:
            raise MissingRuleError(
                f"{d.name} takes a list of arrays; pass a list (not one stacked array)")
        sub = ids[0]
        y = np.linalg.multi_dot(arrays, *rest, **kw)
        return y, LinalgRule(d, tuple(sub), tuple(arrays), y, {})

    register(np.linalg.multi_dot)(multi_dot_maker)


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
    if _cplx(x):
        sq = np.real(x * np.conjugate(x))
        xv = np.asarray(stop_gradient(x))
        nz = (xv != 0).astype(_rdt(x.dtype))
        ab = np.sqrt(sq + (1 - nz)) * nz
        return ab, x * nz / (ab + (1 - nz))
    sg = np.sign(stop_gradient(x))
    return x * sg, sg


def _extreme_mask(v, axis, want_max):
    vv = np.asarray(stop_gradient(v))
    ext = np.max(vv, axis=axis, keepdims=True) if want_max else np.min(
        vv, axis=axis, keepdims=True)
    m = (vv == ext).astype(_rdt(vv.dtype))
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
    nv = np.asarray(stop_gradient(n))
    nz = (nv != 0).astype(_rdt(nv.dtype))
    return a * nz / (n + (1 - nz))


def _w_two(x, y, axes, keepdims):
    yk = np.reshape(y, _kept_shape(np.shape(y), axes)) if not keepdims else y
    return _safe_div(conj(x), yk)


def _w_vector(x, y, axes, ord_, keepdims):
    yk = np.reshape(y, _kept_shape(np.shape(y), axes)) if not keepdims else y
    if ord_ is None or ord_ == 2:
        return _safe_div(conj(x), yk)
    if ord_ == 0:
        return None
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
        colsum = np.sum(np.asarray(stop_gradient(ab)), axis=r0, keepdims=True)
        return conj(sg) * _extreme_mask(colsum, c0, ord_ > 0)
    if ord_ in (np.inf, -np.inf):
        rowsum = np.sum(np.asarray(stop_gradient(ab)), axis=c0, keepdims=True)
        return conj(sg) * _extreme_mask(rowsum, r0, ord_ > 0)
    if ord_ in ("nuc", 2, -2):
        xm, perm = _move_last(x, axes)
        u, s, vh = np.linalg.svd(xm, full_matrices=False)
        if ord_ == "nuc":
            wm = u @ vh
        else:
            sel = _extreme_mask(s, -1, ord_ > 0)
            wm = (u * _row(sel)) @ vh
        wm = conj(wm)
        return np.transpose(wm, np.argsort(perm))
    raise MissingRuleError(f"numpy.linalg.norm: no derivative for ord={ord_!r}")


def _norm_pf(r, xds):
    w, axes = _norm_weights(r)
    if w is None:
        return ZERO
    _, _, keepdims = _norm_args(r)
    t = np.sum(w * xds[0], axis=axes, keepdims=keepdims)
    return np.real(t) if _cplx(t) else t


def _norm_pb(r, g):
    w, axes = _norm_weights(r)  # recomputed from the inputs: differentiable again
    if w is None:
        return [ZERO] + [None] * (len(r.xs) - 1)
    _, _, keepdims = _norm_args(r)
    gk = g if keepdims else np.reshape(g, _kept_shape(g.shape, axes))
    return [gk * w] + [None] * (len(r.xs) - 1)


def _norm_register():
    d = _Def("numpy.linalg.norm", _norm_pf, _norm_pb)

    def norm_maker(ids, *xs, **kw):
        _no_traced(ids, 1, d.name, "ord/axis")
        y = np.linalg.norm(*xs, **kw)
        rule = LinalgRule(d, tuple(ids), xs, y, kw)
        if _norm_args(rule)[0] == 0:
            return y, None  # counts nonzeros: piecewise constant, no derivative
        return y, rule

    register(np.linalg.norm)(norm_maker)


_norm_register()

non_differentiable(np.linalg.matrix_rank)
