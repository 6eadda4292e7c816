"""Shared machinery of the linear-algebra rules (rules/linalg.py,
rules/decompositions.py, rules/scipy_linalg.py).

Every rule there is defined by its *pushforward* ``pf(rule, tangents)``, a
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

Batches of directions (Jacobians, Hessians): ``LinalgRule`` takes them
itself (rules/_linalg_batch.py), through hand-written batched maps where a
rule gives them (``pfb``, ``pbb``: solves fold the directions into more
right-hand sides of one factorization), else through ``pf`` recorded once
and swept with the whole batch, else once per direction.

This module registers no rule: ``defrule`` (and the makers built on
``LinalgRule``) register from the family modules that call them.
"""

import functools

import numpy as np

from chainrules.arrays import computes_eagerly, real_dtype
from chainrules.tangents import is_zero

from chainrules.errors import MissingRuleError
from chainrules.graph import Tape
from chainrules.rule import MultiOutput
from chainrules.registry import op_name, register
from chainrules.rule import ReverseRule
from chainrules.opaque import opaque
from chainrules.tangents import ZERO
from chainrules.tracing import Traced, untraced

from ._linalg_base import (all_zero, cotangent_pairs, is_inexact,  # noqa: F401  (re-exported)
                           project_cotangent, zeros_of)
from ._linalg_batch import pullback_batched, pullback_with_tangents_batched, pushforward_batched
from ._scipy_blas_pool import one_thread
from ._util import array_value, conj  # noqa: F401  (conj re-exported)

__all__ = ["LinalgRule", "defrule", "herm_tangent", "herm_cotangent"]


# -- helpers written with registered np.* calls only ---------------------------
def is_complex(x):
    """Whether the array ``x`` has a complex dtype."""
    return x.dtype.kind == "c"


def mT(x):
    """Swap the last two axes (with the registered np.transpose)."""
    nd = x.ndim
    return np.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


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


def cached_eye(n, dtype):
    """The cached read-only ``n x n`` identity in the real dtype of ``dtype``."""
    return _const("eye", n, real_dtype(dtype))


def diag_part(x):
    """(..., n, n) -> (..., n)."""
    return np.sum(x * cached_eye(x.shape[-1], x.dtype), axis=-1)


def diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    n = v.shape[-1]
    return np.reshape(v, v.shape + (1,)) * cached_eye(n, v.dtype)


def as_column(v):
    """``v`` with a trailing size-1 axis: (..., n) -> (..., n, 1)."""
    return np.reshape(v, v.shape + (1,))


def as_row(v):
    """``v`` with a size-1 axis before its last: (..., n) -> (..., 1, n)."""
    return np.reshape(v, v.shape[:-1] + (1, v.shape[-1]))


def tri_mask(n, dtype, lower, k):
    """Cached 0/1 mask of the lower (or upper) triangle from diagonal ``k`` on."""
    return _const("tri", n, real_dtype(dtype), bool(lower), k)


def imag_diag(c):
    """``i * Im(diag(c))`` as a diagonal matrix (complex ``c``)."""
    d = diag_part(c)
    return diag_embed((d - np.conjugate(d)) * 0.5)


@functools.cache
def scipy_takes_batches():
    """Whether the installed SciPy's linalg functions take stacks of
    matrices (``(..., n, n)``; SciPy 1.16 on, and Python 3.10 has no such
    SciPy): asked of SciPy once, on a stack of one 1 x 1 matrix."""
    try:
        import scipy.linalg as sl

        sl.solve_triangular(np.ones((1, 1, 1)), np.ones((1, 1, 1)))
        sl.sqrtm(np.ones((1, 1, 1)))
    except Exception:
        return False
    return True


@functools.cache
def _blas_lapack():
    try:
        from scipy.linalg import get_blas_funcs, get_lapack_funcs
    except ImportError:  # pragma: no cover - SciPy is an optional extra
        return None
    return get_blas_funcs, get_lapack_funcs


def _staged(a):
    return type(a) is not np.ndarray and computes_eagerly(a)


def _plain_real(*arrays):
    return (_blas_lapack() is not None
            and all(type(a) is np.ndarray and a.ndim == 2 and a.dtype == arrays[0].dtype
                    and a.shape == arrays[0].shape for a in arrays)
            and arrays[0].dtype in (np.float64, np.float32))


def _chol_inverse(low, memo):
    """``L^-1`` for a plain real lower ``low`` with no zero on its diagonal
    (LAPACK trtri on the Fortran view ``low.T``, an upper matrix: no copy;
    trtri fails only on an exactly zero diagonal entry), kept in ``memo`` (a
    dict) for the next sweep of the same recording."""
    li = memo.get("li")
    if li is None:
        (trtri,) = _blas_lapack()[1](("trtri",), (low,))
        lit, _ = trtri(low.T, lower=0)          # (L^T)^-1 = (L^-1)^T
        li = memo["li"] = lit.T
    return li


def _times_tri(b, m, trmm):
    """``b @ m`` for a lower-triangular ``m`` (BLAS trmm, into a new Fortran
    array), reading ``m`` in the memory order it has: a C array is the
    transpose of a Fortran one, so no copy transposes it."""
    if m.flags.f_contiguous:
        return trmm(1.0, m, b, side=1, lower=1)
    return trmm(1.0, m.T, b, side=1, lower=0, trans_a=1)


def _congruence(rev_low, c, sygst):
    """``S = Li^T (C_l + C_l^T) Li`` for ``Li = L^-1``, ``C_l`` the lower
    triangle of ``c`` with half its diagonal (so the middle matrix is the
    symmetric one whose lower triangle is c's), by LAPACK's ``sygst``; S is
    returned as a view whose upper triangle holds it (S is symmetric).

    sygst computes ``inv(B) A inv(B^T)`` for a lower B: with both axes
    reversed (``J``), ``B = J L^T J`` (``rev_low``: the Fortran view of a
    reversed C copy of L) and ``A = J c^T J`` (read below its diagonal:
    c's lower triangle) give ``J S J``, its lower triangle S's upper one.
    (sygst reports only illegal arguments: it has no failure to check.)"""
    a = np.ascontiguousarray(c[::-1, ::-1]).T
    out, _ = sygst(a, rev_low, itype=1, lower=1, overwrite_a=1)
    return out[::-1, ::-1]


def _sym_cotangent(s, lower):
    """The cotangent on the triangle LAPACK read (``herm_cotangent`` of a
    matrix whose symmetric part is ``s``): s off the diagonal, half s on it.
    ``s`` is valid in its upper triangle."""
    n = s.shape[-1]
    out = np.tril(s.T, -1) if lower else np.triu(s, 1)
    out.flat[::n + 1] = np.diagonal(s) * 0.5
    return out


def _chol_kernels(low):
    get_blas_funcs, get_lapack_funcs = _blas_lapack()
    (trmm,) = get_blas_funcs(("trmm",), (low,))
    (sygst,) = get_lapack_funcs(("sygst",), (low,))
    return trmm, sygst


def chol_pullback_plain(low, gl, lower=True):
    if _staged(low):
        # a staged value (cr.jit): the BLAS and LAPACK calls below are one
        # step of the plan, on the replay's arrays
        return opaque(_chol_pullback_plain, *(low, gl, lower))
    return _chol_pullback_plain(low, gl, lower)


@one_thread
def _chol_pullback_plain(low, gl, lower=True):
    """The cotangent of ``A`` from the cotangent ``gl`` of its lower Cholesky
    factor ``low``, ``herm_cotangent(L^-T Phi(L^T gl) L^-1, lower)``, for
    plain real 2-D arrays, by BLAS and LAPACK. Returns None where it does
    not apply (SciPy missing, other array types, complex, batched, a
    singular factor): the caller then uses the traceable formula.

    ``L^-T Phi(C) L^-1`` with ``C = L^T gl`` has the symmetric part
    ``S = Li^T (C_l + C_l^T) Li`` (``_congruence``): one triangular product
    and LAPACK's ``sygst``, instead of a triangular inverse and three
    triangular products."""
    if not _plain_real(low, gl) or not np.all(np.diagonal(low)):
        return None
    trmm, sygst = _chol_kernels(low)
    c = _times_tri(gl.T, low, trmm).T                 # C = L^T gl (a C-order view)
    s = _congruence(np.ascontiguousarray(low[::-1, ::-1]).T, c, sygst)
    return _sym_cotangent(s, lower)


def chol_tangent_plain(low, ad, lower=True):
    if _staged(low):
        # a staged value (cr.jit): the BLAS and LAPACK calls below are one
        # step of the plan, on the replay's arrays
        return opaque(_chol_tangent_plain, *(low, ad, lower))
    return _chol_tangent_plain(low, ad, lower)


@one_thread
def _chol_tangent_plain(low, ad, lower=True):
    """The tangent ``L Phi(L^-1 Ad L^-T)`` of the lower Cholesky factor for
    plain real 2-D arrays (``Ad`` read from one triangle, as LAPACK read the
    matrix), by LAPACK's ``sygst`` (the congruence ``L^-1 Ad L^-T`` from one
    triangle of ``Ad``) and one BLAS triangular product; None where it does
    not apply."""
    if not _plain_real(low, ad) or not np.all(np.diagonal(low)):
        return None
    trmm, sygst = _chol_kernels(low)
    # the Fortran view ad.T holds ad's lower triangle above its diagonal
    # (sygst reports only illegal arguments: it has no failure to check)
    if lower:   # sygst's upper variant: inv(U^T) A inv(U) with U = L^T (low.T)
        s, _ = sygst(ad.T, low.T, itype=1, lower=0)
        phi = s.T                      # S below the diagonal (C order)
    else:       # ad's upper triangle is ad.T's lower: the lower variant, B = L
        phi, _ = sygst(ad.T, np.asfortranarray(low), itype=1, lower=1)
    phi = _phi_of(phi)
    # Ld^T = Phi^T L^T, a Fortran array: Ld is its C-order transpose
    return trmm(1.0, low.T, phi.T, side=1, lower=0).T


def _phi_of(s):
    """``Phi(S)`` of a matrix valid below (and on) its diagonal: the lower
    triangle, half the diagonal, in a new C array."""
    out = np.tril(s, -1)
    out.flat[::s.shape[-1] + 1] = np.diagonal(s) * 0.5
    return out


def chol_pullback_with_tangents_plain(low, gl, gld, ad, lower=True, memo=None, ld=None):
    if _staged(low):
        # a staged value (cr.jit): the BLAS and LAPACK calls below are one
        # step of the plan, on the replay's arrays
        return opaque(_chol_pullback_with_tangents_plain, *(low, gl, gld, ad, lower, memo, ld))
    return _chol_pullback_with_tangents_plain(low, gl, gld, ad, lower, memo, ld)


@one_thread
def _chol_pullback_with_tangents_plain(low, gl, gld, ad, lower=True, memo=None, ld=None):
    """``(c, cd)``: the cotangent of ``A`` (as ``chol_pullback_plain``) and its
    tangent along the input tangent ``ad`` (the matrix LAPACK reads one
    triangle of) and the cotangent's tangent ``gld``, for plain real 2-D
    arrays; None where it does not apply. ``ld``, if given, is the factor's
    tangent the forward sweep computed (else it is computed from ``ad``);
    ``memo`` (a dict) keeps ``L^-1`` for the next sweep of the recording
    (a function of the factor only: tangents are never kept, the same array
    object may hold another direction in the next sweep).
    With ``Li = L^-1``:

        Ld = L Phi(Li Ad Li^T)                      (the factor's tangent)
        C  = L^T G,             S  = Li^T Phi(C) Li (the pullback's core)
        Cd = Ld^T G + L^T Gd,   M  = Ld Li
        Sd = Li^T Phi(Cd) Li - M^T S - S M

    and ``c, cd`` are ``herm_cotangent`` of ``S, Sd``, which read only their
    symmetric parts: ``S + S^T`` and ``Li^T (Phi(Cd) + Phi(Cd)^T) Li`` are
    congruences (``_congruence``, LAPACK's sygst) and ``Sd + Sd^T`` is the
    latter minus ``X + X^T`` with ``X = (S + S^T) M``. The triangular
    inverse, five triangular products and two sygst (one product and one
    sygst more when ``ld`` is not given), instead of the jvp of the traced
    pullback."""
    if (not _plain_real(low, gl, gld, ad) or (ld is not None and not _plain_real(low, ld))
            or not np.all(np.diagonal(low))):
        return None
    li = _chol_inverse(low, {} if memo is None else memo)
    if ld is None:
        ld = chol_tangent_plain(low, ad, lower)
    trmm, sygst = _chol_kernels(low)
    rev_low = np.ascontiguousarray(low[::-1, ::-1]).T
    c = _times_tri(gl.T, low, trmm).T                                 # L^T G
    cd = _times_tri(gl.T, ld, trmm)                                   # (Ld^T G)^T
    cd += _times_tri(gld.T, low, trmm)                                # + (L^T Gd)^T
    s = _congruence(rev_low, c, sygst)
    sd = _congruence(rev_low, cd.T, sygst)
    s_full = np.triu(s)
    s_full += np.triu(s, 1).T                                         # S + S^T
    m = _times_tri(ld, li, trmm)                                      # M = Ld Li
    x = _times_tri(s_full.T, m, trmm)                                 # (S + S^T) M
    y = sd.T - x
    y -= x.T                                                          # lower: Sd + Sd^T
    return _sym_cotangent(s, lower), _sym_cotangent(y.T, lower)


def herm_tangent(xd, lower=True):
    """The tangent of the Hermitian matrix LAPACK reads from one triangle."""
    n = xd.shape[-1]
    s = xd * tri_mask(n, xd.dtype, lower, -1)
    d = (np.real(xd) if is_complex(xd) else xd) * cached_eye(n, xd.dtype)
    return s + mH(s) + d


def herm_cotangent(c, lower=True):
    """Transpose of ``herm_tangent``: a cotangent on the triangle read."""
    n = c.shape[-1]
    s = (c + mH(c)) * tri_mask(n, c.dtype, lower, -1)
    return s + (np.real(c) if is_complex(c) else c) * cached_eye(n, c.dtype)


def inv_gaps(w, keep_diag=False):
    """``F_ij = 1 / (w_j - w_i)``, 0 on the diagonal and where w_i == w_j.

    The degeneracy mask is computed on the plain values (a constant)."""
    wv = array_value(w)
    n = wv.shape[-1]
    gap = wv[..., None, :] - wv[..., :, None]
    scale = np.maximum(np.max(np.abs(wv), axis=-1, keepdims=True)[..., None], 1.0)
    eps = np.finfo(real_dtype(wv.dtype)).eps
    keep = (np.abs(gap) > 100 * n * eps * scale).astype(real_dtype(wv.dtype))
    d = as_row(w) - as_column(w)
    return keep / (d + (1 - keep))


# -- the generic rule ----------------------------------------------------------
class LinalgDef:
    """The definition of one linear-algebra rule: ``pf`` and its optional parts."""

    __slots__ = ("name", "pf", "pb", "prepare", "pbt", "pfb", "pbb")

    def __init__(self, name, pf, pb=None, prepare=None, pbt=None, pfb=None, pbb=None):
        self.name, self.pf, self.pb, self.prepare = name, pf, pb, prepare
        # pbt(rule, g, gd, tangents, out_tangent): a hand-written
        # pullback_with_tangents (a list of (id, c, cd)) or None where it does
        # not apply; out_tangent is the output's tangent when the engine
        # has it, else None
        self.pbt = pbt
        # pfb(rule, tangents, k) / pbb(rule, G, k): hand-written batches of
        # pf / pb (a leading axis of k directions on every tangent and
        # cotangent, structural zeros as ZERO); None: see rules/_linalg_batch.py
        self.pfb, self.pbb = pfb, pbb


def _matrices_only(name, ids, xs):
    """The derivatives here read every traced argument as a matrix or a
    vector, by its trailing axes; a 0-d one (which NumPy or SciPy may take
    as a scalar or a 1 x 1 matrix) is refused by name."""
    for i, x in zip(ids, xs):
        pairs = zip(i, x) if type(i) is tuple else ((i, x),)
        if any(j is not None and np.ndim(v) == 0 for j, v in pairs):
            raise MissingRuleError(
                f"{name} of a traced 0-d array has no derivative rule (the rule reads its "
                "arguments as matrices and vectors); pass np.reshape(x, (1, 1)) for a "
                "1 x 1 matrix, or np.reshape(x, (1,)) for a vector of one element")


class LinalgRule(ReverseRule):
    """A nonlinear rule defined by its pushforward (see the module docstring).

    ``ids``/``xs``: NodeId (or None) and value of every positional argument;
    ``y``: the output (a plain tuple for several outputs); ``kw``: keywords;
    ``aux``: values the maker saved for the derivative (factors, ...).
    """

    __slots__ = ("d", "ids", "xs", "y", "kw", "aux", "memo")

    def __init__(self, d, ids, xs, y, kw, aux=None):
        _matrices_only(d.name, ids, xs)
        self.d = d
        self.ids = ids
        self.xs = xs
        self.y = y
        self.kw = kw
        self.aux = aux
        # what a rule's own derivative code keeps between the sweeps of one
        # recording: functions of the primal only (the Cholesky factor's
        # inverse), never of a tangent or cotangent
        self.memo = None

    @property
    def name(self):
        return self.d.name

    def inputs(self):
        return tuple(i for i in self.ids if i is not None)

    def _expand(self, tangents):
        it = iter(tangents)
        return [next(it) if i is not None else ZERO for i in self.ids]

    def _materialize(self, xds):
        return [(zeros_of(x) if is_zero(t) else t) if is_inexact(x) else None
                for x, t in zip(self.xs, xds)]

    def pushforward(self, tangents):
        xds = self._expand(tangents)
        if all(is_zero(t) for t in xds):
            return ZERO
        return self.d.pf(self, self._materialize(xds))

    def cotangents(self, g):
        """One cotangent per positional argument (None where not traced)."""
        if self.d.pb is not None:
            return self.d.pb(self, g)
        return transpose_pushforward(self, g)

    def pullback(self, g):
        if all_zero(g):
            return []
        cots = self.cotangents(g)
        return [(i, project_cotangent(c, x)) for i, c, x in zip(self.ids, cots, self.xs)
                if i is not None and not is_zero(c)]

    #: the engine passes the output's tangent from the forward sweep
    #: (``out_tangent``) to ``pullback_with_tangents``: a hand-written second
    #: order (``pbt``) may reuse it instead of computing it again
    takes_output_tangent = True

    def pullback_with_tangents(self, g, gd, tangents, out_tangent=None):
        xds = self._expand(tangents)
        if all_zero(g) or all(is_zero(t) for t in xds):
            # no second-order term: two pullbacks (each [] for a zero cotangent)
            c, cd = dict(self.pullback(g)), dict(self.pullback(gd))
            return [(i, c.get(i, ZERO), cd.get(i, ZERO)) for i in self.inputs()]
        if self.d.pbt is not None:
            out = self.d.pbt(self, g, gd, xds, out_tangent)
            if out is not None:
                return out
        return pullback_jvp(self, g, gd, xds)

    # -- batches of directions (rules/_linalg_batch.py) ---------------------------
    batched = True

    def pushforward_batched(self, tangents):
        return pushforward_batched(self, self._expand(tangents))

    def pullback_batched(self, G):
        return pullback_batched(self, G)

    def pullback_with_tangents_batched(self, g, GD, tangents, out_tangent=None):
        return pullback_with_tangents_batched(self, g, GD, tangents, out_tangent)


def transpose_pushforward(r, g):
    """Cotangents from the pushforward: reverse mode of ``<g, pf(r, xd)>``
    with respect to the tangents ``xd``, on a small local tape."""
    local = Tape()
    xds, leaves = [], []
    for i, x in zip(r.ids, r.xs):
        if i is None:
            xds.append(zeros_of(x) if is_inexact(x) else None)
            leaves.append(None)
        else:
            z = zeros_of(x)
            nid = local.leaf(z)
            xds.append(Traced(z, nid, local))
            leaves.append(nid)
    try:
        t = r.d.pf(r, xds)
        total = None
        for gk, tk in cotangent_pairs(g, t):
            if is_zero(gk) or is_zero(tk):
                continue
            prod = gk * tk
            if is_complex(prod):
                prod = np.real(prod)
            term = np.sum(prod)
            total = term if total is None else total + term
    finally:
        local.active = False
    if total is None or type(total) is not Traced or total.tape is not local:
        return [None if n is None else ZERO for n in leaves]
    grads = local.backward([total.node], [np.ones((), total.dtype)])
    return [None if n is None else grads.get(n) for n in leaves]


def pullback_jvp(r, g, gd, xds):
    """``pullback_with_tangents`` as the jvp of the pullback along the input
    tangents, the output tangents and the cotangent's tangent."""
    from chainrules.api import jvp

    pos = [k for k, i in enumerate(r.ids) if i is not None]
    yd = r.d.pf(r, r._materialize(xds))
    multi = isinstance(r.y, tuple)
    if multi:
        g = tuple(zeros_of(y) if is_zero(gk) and not is_zero(gdk) else gk
                  for y, gk, gdk in zip(r.y, g, gd if isinstance(gd, tuple)
                                        else (ZERO,) * len(g)))
        if is_zero(gd):
            gd = (ZERO,) * len(g)
        yd = tuple(ZERO if not is_inexact(y) else t for y, t in zip(r.y, yd))
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
        c = ZERO if not is_inexact(c) else project_cotangent(c, r.xs[k])
        cd = ZERO if not is_inexact(cd) else project_cotangent(cd, r.xs[k])
        out.append((r.ids[k], c, cd))
    return out


def defrule(op, pf, pb=None, multi=False, prepare=None, pbt=None, pfb=None, pbb=None):
    """Register ``op`` (all positional array arguments differentiable).

    ``pf(rule, tangents) -> output tangent`` (a tuple for ``multi``);
    ``pb(rule, g) -> one cotangent per positional argument`` (optional);
    ``prepare(xs, kw) -> (y, aux)`` computes the output and saved values
    (default: ``op(*xs, **kw)``); ``pbt(rule, g, gd, tangents)`` is a
    hand-written ``pullback_with_tangents`` returning ``None`` where it does
    not apply (default: the jvp of the pullback). ``pfb(rule, tangents, k)``
    and ``pbb(rule, G, k)`` are ``pf`` and ``pb`` on batches of ``k``
    directions (a leading axis; default: see ``LinalgRule.pushforward_batched``).
    """
    d = LinalgDef(op_name(op), pf, pb, prepare, pbt, pfb, pbb)

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


def reject_traced(ids, k, name, what):
    """Raise ``MissingRuleError`` if any argument from position ``k`` on is traced."""
    if len(ids) > k and any(i is not None for i in ids[k:]):
        raise MissingRuleError(f"{name}: {what} cannot be differentiated; pass it as a "
                               "constant (chainrules.stop_gradient)")


def unbroadcast_to(g, shape):
    """``g`` summed down to ``shape`` (the transpose of a broadcast to g's shape)."""
    from chainrules.derived import unbroadcast

    return unbroadcast(g, tuple(shape))


def phi_mask(n, dtype):
    """Cached lower-triangle mask with a halved diagonal (the ``Phi`` of Cholesky)."""
    return _const("phi", n, real_dtype(dtype))


# -- verification of derived problems --------------------------------------------
def plain(x):
    """The value of ``x`` as a plain ndarray (no node is recorded)."""
    return np.asarray(untraced(x))


def check_tol(dtype):
    """Relative residual accepted from a backward-stable solve: sqrt(eps)
    of the working precision, far above rounding, far below a failed solve."""
    return float(np.sqrt(np.finfo(real_dtype(np.dtype(dtype))).eps))


def fro_norm(x):
    """Frobenius norm of each matrix of a stack (the last two axes)."""
    return np.sqrt(np.sum(np.abs(x) ** 2, axis=(-2, -1)))


def check_residual(op, what, resid, scale, dtype=None):
    """Raise ``DomainError`` unless ``||resid|| <= tol * scale`` in every
    matrix of a batch (Frobenius norms of plain values; NaN/Inf fail).

    ``op`` names the differentiated operation, ``what`` the derived problem
    whose solution was checked."""
    from chainrules.errors import DomainError

    r = plain(resid)
    tol = check_tol(dtype if dtype is not None else r.dtype)
    err = fro_norm(r)
    bound = tol * np.asarray(plain(scale), dtype=float)
    ok = np.isfinite(err) & (err <= bound)
    if not np.all(ok):
        worst = float(np.max(np.where(np.isfinite(err), err / np.maximum(bound, 1e-300),
                                      np.inf)))
        raise DomainError(
            f"{op}: the derivative is not defined or cannot be computed reliably at "
            f"this input: {what} failed its residual check (residual {worst:.3g} times "
            "the tolerance). Perturb the input away from the singular point or "
            "differentiate a reformulation that avoids it.")
    return True
