"""Finite differences accurate enough to test float64 rules tightly.

``fd_jvp(f, primals, tangents)`` estimates the directional derivative
``J u`` of ``f`` at ``primals`` along ``tangents`` with a central stencil of
order 6 (seven points, ``f'(x) ~ sum_k c_k (f(x + k h u) - f(x - k h u)) / h``)
at steps ``h``, ``h / 2`` and ``h / 4``, Richardson-extrapolating each
adjacent pair to order 8. The finer extrapolation is the value; its
difference from the coarser one estimates the truncation error (the
difference of two raw stencils alone can agree by chance where the higher
derivatives are large against the step), and the
precision of ``f``'s output estimates the rounding error; both are returned
so that a checker can widen its tolerance by exactly what the finite
differences cannot resolve, and refuse to judge a rule where they cannot
resolve anything (near a kink or a singularity).

Everything is evaluated in float64 / complex128: inputs of lower precision
are upcast first (the values are exactly representable), so float32 rules
are compared with a reference that is far more accurate than they are.

The step follows the scale of the input: ``h = eps**(1/7) * max|x| / max|u|``
(with ``eps`` the precision of ``f``'s output); when its error estimate is
poor or not finite (the stencil left the function's domain), steps eight
times smaller and four times larger are tried and the best one kept.

>>> import numpy as np
>>> r = fd_jvp(np.sin, (np.array([0.3, 1.0]),), (np.array([1.0, 2.0]),))
>>> np.allclose(r.value, np.cos([0.3, 1.0]) * [1.0, 2.0], rtol=1e-12, atol=0)
True
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from chainrules import pytree
from chainrules.tangents import Structural

__all__ = ["fd_jvp", "fd_jacobian", "FDResult", "upcast", "STENCILS"]

#: central first-derivative weights c_1..c_m for points +-k h (order 2m)
STENCILS = {
    2: (1 / 2,),
    4: (2 / 3, -1 / 12),
    6: (3 / 4, -3 / 20, 1 / 60),
    8: (4 / 5, -1 / 5, 4 / 105, -1 / 280),
}


class FDResult(NamedTuple):
    """A finite-difference derivative and its error estimate.

    value:      the derivative, with the structure of ``f``'s output (float64 /
                complex128 leaves; ``None`` for outputs of integer or bool dtype)
    error:      estimated 2-norm of the error of ``value`` (truncation + rounding)
    truncation: the truncation part (large near kinks and singularities)
    roundoff:   the rounding part
    step:       the step ``h`` used
    """

    value: Any
    error: float
    truncation: float
    roundoff: float
    step: float


def _inexact(x):
    if isinstance(x, (bool, np.bool_)) or isinstance(x, Structural) or x is None:
        return False
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "fc"
    return isinstance(x, (float, complex))


def _up_leaf(x):
    if not _inexact(x):
        return x
    if isinstance(x, np.ndarray):
        return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    if isinstance(x, np.generic):
        return (np.complex128 if x.dtype.kind == "c" else np.float64)(x)
    return x  # Python float / complex are already double precision


def upcast(tree):
    """``tree`` with every float leaf in float64 and complex leaf in complex128
    (arrays stay arrays, NumPy scalars stay NumPy scalars)."""
    return pytree.tree_map(_up_leaf, tree)


def _leaf_arrays(tree):
    """Inexact leaves of ``tree`` as float64/complex128 arrays (None elsewhere)."""
    leaves, _ = pytree.flatten(tree)
    out = []
    for leaf in leaves:
        if _inexact(leaf):
            a = np.asarray(leaf)
            out.append(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        else:
            out.append(None)
    return out


def maxabs(arrays):
    """The largest magnitude in a list of arrays (``None`` entries skipped)."""
    m = 0.0
    for a in arrays:
        if a is not None and a.size:
            m = max(m, float(np.max(np.abs(a))))
    return m


def _norm(arrays):
    s = 0.0
    for a in arrays:
        if a is not None and a.size:
            s += float(np.sum(np.abs(a) ** 2))
    return math.sqrt(s)


def _out_eps(leaves):
    eps = 0.0
    for leaf in leaves:
        if _inexact(leaf):
            eps = max(eps, float(np.finfo(np.asarray(leaf).dtype).eps))
    return eps or float(np.finfo(np.float64).eps)


def _finite_or_inf(e):
    return e if math.isfinite(e) else math.inf


def _directions(primals, tangents):
    """The primals' leaves and structures, and per leaf the direction as a
    float64 or complex128 array of the leaf's shape (``None`` for a leaf
    held fixed: integer, bool, or a structurally zero tangent)."""
    p_leaves, p_defs = [], []
    for p in primals:
        leaves, td = pytree.flatten(p)
        p_leaves.append(leaves)
        p_defs.append(td)
    u_leaves = []
    for p, t in zip(p_leaves, tangents):
        tl, _ = pytree.flatten(t)
        if len(tl) != len(p):
            raise ValueError("fd_jvp: tangents do not have the structure of primals")
        row = []
        for x, u in zip(p, tl):
            if _inexact(x) and not isinstance(u, Structural) and u is not None:
                ua = np.asarray(u)
                ua = ua.astype(np.complex128 if ua.dtype.kind == "c" else np.float64)
                row.append(np.broadcast_to(ua, np.shape(x)))
            else:
                row.append(None)
        u_leaves.append(row)
    return p_leaves, p_defs, u_leaves


def _along(f, p_leaves, p_defs, u_leaves):
    """``t -> f(primals + t * directions)``, each moved leaf keeping its
    kind (a NumPy or Python scalar stays one)."""

    def at(t):
        args = []
        for leaves, us, td in zip(p_leaves, u_leaves, p_defs):
            moved = []
            for x, u in zip(leaves, us):
                if u is None:
                    moved.append(x)
                    continue
                v = x + t * u
                if not isinstance(x, np.ndarray):
                    v = v[()] if isinstance(v, np.ndarray) else v
                    v = type(x)(v) if isinstance(x, np.generic) else v
                moved.append(v)
            args.append(pytree.unflatten(td, moved))
        return f(*args)

    return at


class _Stencil:
    """Central differences of ``at`` (a function of the step ``t``) with
    the weights of one order, its evaluations cached by ``t``, and their
    Richardson extrapolation with error estimates."""

    def __init__(self, at, f0_arr, order, eps, fscale, richardson):
        self.at, self.f0_arr, self.order = at, f0_arr, order
        self.weights = STENCILS[order]
        self.eps, self.fscale, self.richardson = eps, fscale, richardson
        self.wsum = 2.0 * sum(abs(c) for c in self.weights)
        self.cache = {}

    def differences(self, h):
        """The stencil's derivative estimate at step ``h`` (one array per
        output leaf) and the largest output norm it saw."""
        acc = [None if a is None else np.zeros(a.shape, a.dtype) for a in self.f0_arr]
        fmax = self.fscale
        for k, c in enumerate(self.weights, start=1):
            for sgn in (1, -1):
                t = sgn * k * h
                if t not in self.cache:
                    self.cache[t] = _leaf_arrays(self.at(t))
                vals = self.cache[t]
                fmax = max(fmax, _norm(vals))
                for i, v in enumerate(vals):
                    if acc[i] is not None and v is not None:
                        acc[i] = acc[i] + (sgn * c) * v
        return [None if a is None else a / h for a in acc], fmax

    def estimate(self, h):
        """``(value, truncation error, rounding error)`` at step ``h``."""
        d1, m1 = self.differences(h)
        if not self.richardson:
            rnd = 4.0 * self.eps * m1 * self.wsum / h
            return d1, 0.0, rnd
        d2, m2 = self.differences(h / 2)
        d3, m3 = self.differences(h / 4)
        r = 2.0 ** self.order - 1.0

        def extrapolate(a, b):
            return [None if x is None else y + (y - x) / r for x, y in zip(a, b)]

        # two extrapolations; their difference bounds the error of the coarser
        # one, which keeps the estimate honest where the higher derivatives
        # are large against the step (nearly equal singular values) and the
        # two stencils' errors happen to agree
        coarse, value = extrapolate(d1, d2), extrapolate(d2, d3)
        trunc = max(_norm([None if a is None else b - a for a, b in zip(coarse, value)]),
                    _norm([None if a is None else b - a for a, b in zip(d2, d3)]) / r)
        rnd = 4.0 * self.eps * max(m1, m2, m3) * self.wsum / (h / 4)
        return value, trunc, rnd

    def best(self, h):
        """The estimate at ``h``, or, where truncation dominates or the
        stencil left the function's domain (a NaN or an infinity, e.g. past
        the support of a density), the best of a few other steps:
        ``(h, value, trunc, rnd)``."""
        value, trunc, rnd = self.estimate(h)
        if math.isfinite(trunc) and trunc <= 1e-8 * _norm(value) + rnd:
            return h, value, trunc, rnd
        best = (_finite_or_inf(trunc + rnd), h, value, trunc, rnd)
        for hh in (h / 8, h * 4, h / 64, h / 512):
            if hh == h / 512 and best[0] < math.inf:
                break  # the smallest step only to get back into the domain
            v2, t2, r2 = self.estimate(hh)
            if _finite_or_inf(t2 + r2) < best[0]:
                best = (t2 + r2, hh, v2, t2, r2)
        return best[1:]


def fd_jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
           order: int = 6, step: float | None = None, richardson: bool = True) -> FDResult:
    """Directional derivative of ``f(*primals)`` along ``tangents``.

    ``primals`` and ``tangents`` are sequences of pytrees with the same
    structure (tangent leaves may be ``ZeroTangent()``; integer and bool
    leaves are held fixed). Returns an ``FDResult``. ``order`` is the order
    of the central stencil (2, 4, 6 or 8); ``step`` fixes ``h`` instead of
    choosing it from the input scale.
    """
    if order not in STENCILS:
        raise ValueError(f"order must be one of {sorted(STENCILS)}, got {order}")
    primals = tuple(upcast(p) for p in primals)
    p_leaves, p_defs, u_leaves = _directions(primals, tangents)
    at = _along(f, p_leaves, p_defs, u_leaves)
    f0 = at(0.0)
    out_leaves, out_def = pytree.flatten(f0)
    eps = _out_eps(out_leaves)
    f0_arr = _leaf_arrays(f0)
    xs = maxabs([np.asarray(x) for leaves, us in zip(p_leaves, u_leaves)
                  for x, u in zip(leaves, us) if u is not None])
    us = maxabs([u for row in u_leaves for u in row])
    if us == 0.0:
        zero = [None if a is None else np.zeros_like(a) for a in f0_arr]
        return FDResult(pytree.unflatten(out_def, zero), 0.0, 0.0, 0.0, 0.0)
    stencil = _Stencil(at, f0_arr, order, eps, _norm(f0_arr), richardson)
    if step is not None:
        h = float(step)
        value, trunc, rnd = stencil.estimate(h)
    else:
        h = eps ** (1.0 / (order + 1)) * (xs if xs > 0 else 1.0) / us
        h, value, trunc, rnd = stencil.best(h)
    return FDResult(pytree.unflatten(out_def, value), trunc + rnd, trunc, rnd, h)


def fd_jacobian(f: Callable[[NDArray[np.float64]], ArrayLike], x: ArrayLike,
                order: int = 6) -> NDArray[np.float64]:
    """Dense Jacobian of ``f`` at the array ``x`` by finite differences:
    shape ``f(x).shape + x.shape`` (real ``x``), built one column at a time."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        raise TypeError("fd_jacobian takes real inputs; split complex ones into "
                        "real and imaginary parts")
    x = x.astype(np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = 1.0
        cols.append(np.asarray(fd_jvp(f, (x,), (e.reshape(x.shape),),
                                      order=order).value))
    if not cols:
        return np.zeros(np.shape(f(x)) + x.shape)
    jac = np.stack(cols, axis=-1)
    return jac.reshape(jac.shape[:-1] + x.shape)
