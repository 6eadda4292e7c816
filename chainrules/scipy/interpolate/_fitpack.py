"""FITPACK-style functions on ``(t, c, k)`` tuples and the least-squares
spline constructors of ``scipy.interpolate``, with traced coefficients,
data values and query points: ``splev``, ``splder``, ``splantider``,
``splint``, ``spalde``, ``pchip_interpolate``, ``make_lsq_spline`` and
``make_smoothing_spline`` (with a given ``lam``).

The tuple functions evaluate the ``BSpline`` twin (de Boor's recursion at
the query's knot interval); SciPy's call on the values runs first, for its
checks and its errors. A least-squares spline with fixed knots, weights
and ``lam`` is a linear map of the data, read off SciPy's solver on unit
vectors. ``make_smoothing_spline`` without ``lam`` picks ``lam`` from the
data (generalized cross-validation), so its coefficients are not linear in
the data: the twin asks for ``lam``.
"""

import numpy as np
import scipy.interpolate as _si

from chainrules.errors import DomainError, MissingRuleError
from chainrules.tracing import is_traced, untraced

from ._bspline import BSpline, antiderivative_tck, basis_matrix, derivative_tck
from ._cubic import PchipInterpolator
from ._ppoly import any_traced, constant, widen

__all__ = ["splev", "splder", "splantider", "splint", "spalde", "insert", "bisplev",
           "pchip_interpolate",
           "make_lsq_spline", "make_smoothing_spline"]


def _parametric(c):
    """FITPACK's test: coefficients that index twice are one spline per row."""
    return isinstance(c, (list, tuple)) or np.ndim(c) > 1


def _bspline_object(tck):
    return isinstance(tck, (BSpline, _si.BSpline))


def _one_dimensional(tck, what):
    if np.ndim(tck.c) > 1:
        use = "__call__(x)" if what == "splev" else "integrate()"
        raise ValueError(f"Calling {what}() with BSpline objects with c.ndim > 1 is not "
                         f"allowed. Use BSpline.{use} instead.")


def _as_twin(tck):
    if isinstance(tck, BSpline):
        return tck
    return BSpline.construct_fast(tck.t, tck.c, tck.k, tck.extrapolate, tck.axis)


def _real(c):
    if np.result_type(c).kind == "c":
        raise MissingRuleError(
            "splev, splint and spalde take real coefficients (SciPy's FITPACK drops the "
            "imaginary part); evaluate complex coefficients with "
            "chainrules.scipy.interpolate.BSpline(t, c, k)")


def _spline(t, c, k, extrapolate=True):
    t = constant(t, "the knots t", "splev")
    _real(c)
    nc = len(t) - k - 1
    c = c[:nc] if np.shape(c)[0] > nc else c
    return BSpline.construct_fast(np.asarray(t, dtype=float), c, k, extrapolate, 0)


def splev(x, tck, der=0, ext=0):
    """``scipy.interpolate.splev``: ``c`` and ``x`` may be traced."""
    if _bspline_object(tck):
        _one_dimensional(tck, "splev")
        if ext != 0:
            raise ValueError(f"Extrapolation mode {ext} is not supported by BSpline.")
        return _as_twin(tck)(x, der, extrapolate=True)
    t, c, k = tck
    if _parametric(c):
        return [splev(x, (t, ci, k), der, ext) for ci in c]
    if not any_traced(c, x):
        return _si.splev(x, tck, der, ext)
    _real(c)
    _si.splev(untraced(x), (t, untraced(c), k), der, ext)      # SciPy's checks
    spline = _spline(t, widen(c), k)
    n = len(spline.t) - k - 1
    lo, hi = spline.t[k], spline.t[n]
    if ext == 3 and der == 0:
        # FITPACK returns the boundary value; its derivatives extrapolate
        x = np.where(x < lo, lo, np.where(x > hi, hi, x))
    out = spline(x, der)
    if ext == 1:
        out = np.where((x < lo) | (x > hi), 0.0, out)
    return out


def splder(tck, n=1):
    """``scipy.interpolate.splder``: the derivative's ``(t, c, k)``."""
    if _bspline_object(tck):
        return _as_twin(tck).derivative(n)
    if n < 0:
        return splantider(tck, -n)
    t, c, k = tck
    _si.splder((t, untraced(c), k), n)
    if not is_traced(c):
        return _si.splder(tck, n)
    return derivative_tck(np.asarray(t, dtype=float), widen(c), k, n)


def splantider(tck, n=1):
    """``scipy.interpolate.splantider``: the antiderivative's ``(t, c, k)``."""
    if _bspline_object(tck):
        return _as_twin(tck).antiderivative(n)
    if n < 0:
        return splder(tck, -n)
    t, c, k = tck
    if not is_traced(c):
        return _si.splantider(tck, n)
    return antiderivative_tck(np.asarray(t, dtype=float), widen(c), k, n)


def splint(a, b, tck, full_output=0):
    """``scipy.interpolate.splint``: the spline is 0 outside its base
    interval; ``c``, ``a`` and ``b`` may be traced."""
    if _bspline_object(tck):
        _one_dimensional(tck, "splint")
        return _as_twin(tck).integrate(a, b, extrapolate=False)
    t, c, k = tck
    if _parametric(c):
        return [splint(a, b, (t, ci, k), full_output) for ci in c]
    if not any_traced(c, a, b):
        return _si.splint(a, b, tck, full_output)
    out = _spline(t, widen(c), k).integrate(a, b, extrapolate=False)
    if full_output:
        return out, _si.splint(untraced(a), untraced(b), (t, untraced(c), k), 1)[1]
    return out


def spalde(x, tck):
    """``scipy.interpolate.spalde``: every derivative, 0 to k, at ``x``."""
    if _bspline_object(tck):
        tck = (tck.t, tck.c, tck.k)
    t, c, k = tck
    if _parametric(c):
        return [spalde(x, (t, ci, k)) for ci in c]
    if not any_traced(c, x):
        return _si.spalde(x, tck)
    xs = np.reshape(x, (-1,))
    if np.shape(xs)[0] > 1:
        return [spalde(xs[i], tck) for i in range(np.shape(xs)[0])]
    spline = _spline(t, widen(c), k)
    return np.stack([spline(xs[0], d) for d in range(k + 1)])


def insert(x, tck, m=1, per=0):
    """``scipy.interpolate.insert``: the knot ``x`` inserted ``m`` times;
    the new coefficients are a linear map of the old ones (read off SciPy
    on unit vectors), so ``c`` may be traced; ``x`` is a constant."""
    x = constant(x, "the inserted knot x", "insert")
    if _bspline_object(tck):
        if not is_traced(tck.c):
            b = _si.insert(x, _si.BSpline(tck.t, tck.c, tck.k), m, per)
            return BSpline.construct_fast(b.t, b.c, b.k, tck.extrapolate, tck.axis)
        t, c = _insert_map(x, tck.t, tck.c, tck.k, m, per)
        return BSpline.construct_fast(t, c, tck.k, tck.extrapolate, tck.axis)
    t, c, k = tck
    if _parametric(c):
        out = [insert(x, (t, ci, k), m, per) for ci in c]
        return out[0][0], [o[1] for o in out], k
    if not is_traced(c):
        return _si.insert(x, tck, m, per)
    _real(c)
    _enough_coefficients(t, c, k, "insert")
    t_new, c_new = _insert_map(x, np.asarray(t, dtype=float), widen(c), k, m, per)
    return t_new, c_new, k


def _enough_coefficients(t, c, k, what):
    """FITPACK reads ``len(t) - k - 1`` coefficients; SciPy's ``insert``
    does not check that ``c`` has them and reads past its end."""
    nc = len(t) - k - 1
    if np.ndim(c) == 0 or np.shape(c)[0] < nc:
        raise DomainError(
            f"scipy.interpolate.{what}: the knots t ({len(t)} of them) of degree k={k} "
            f"need {nc} coefficients, but c has shape {np.shape(c)}: FITPACK would read "
            "past the end of c, so the result and its derivative are not defined; pass "
            f"c with at least {nc} coefficients along its first axis")


def _insert_map(x, t, c, k, m, per):
    n = np.shape(c)[0]
    unit = np.eye(n)
    t_new = _si.insert(x, (t, unit[0], k), m, per)[0]
    cmap = np.stack([np.asarray(_si.insert(x, (t, unit[j], k), m, per)[1])
                     for j in range(n)], axis=1)                     # (n_new, n)
    # FITPACK leaves the entries past the n - k - 1 coefficients unset: zeros
    cmap[len(t_new) - k - 1:] = 0.0
    return t_new, np.tensordot(cmap, c, axes=([1], [0]))


def bisplev(x, y, tck, dx=0, dy=0):
    """``scipy.interpolate.bisplev``: the tensor-product spline of
    ``bisplrep`` (its coefficients ``c`` may be traced) on the grid of the
    (increasing) points ``x`` and ``y`` (traced too). As FITPACK, points
    outside the knots' base interval take the value at its edge."""
    tx, ty, c, kx, ky = tck
    if not any_traced(x, y, c):
        return _si.bisplev(x, y, tck, dx, dy)
    _real(c)
    expected = _si.bisplev(untraced(x), untraced(y), (tx, ty, untraced(c), kx, ky), dx, dy)
    tx = constant(tx, "the knots tx", "bisplev")
    ty = constant(ty, "the knots ty", "bisplev")
    nx, ny = len(tx) - kx - 1, len(ty) - ky - 1
    coef = np.reshape(widen(c)[:nx * ny], (nx, ny))

    def axis_basis(v, t, k, n, nu):
        v = v if is_traced(v) else np.asarray(v, dtype=float)
        v = np.reshape(v, (-1,))
        v = np.where(v < t[k], t[k], np.where(v > t[n], t[n], v))
        return basis_matrix(t, k, v, nu)

    z = axis_basis(x, tx, kx, nx, dx) @ coef @ axis_basis(y, ty, ky, ny, dy).T
    if np.shape(z)[0] > 1:
        return z
    if np.shape(z)[1] > 1:
        return z[0]
    return z[0, 0] if np.ndim(expected) == 0 else z


def pchip_interpolate(xi, yi, x, der=0, axis=0):
    """``scipy.interpolate.pchip_interpolate``."""
    P = PchipInterpolator(xi, yi, axis=axis)
    if der == 0:
        return P(x)
    if np.isscalar(der):
        return P.derivative(der)(x)
    return [P.derivative(nu)(x) for nu in der]


def _linear_fit(build, x, y, axis, who):
    """A spline whose coefficients are a linear map of the data: ``build(y,
    axis)`` makes SciPy's spline; on traced ``y`` the map is read off
    ``build`` on unit vectors."""
    x = constant(x, "the sample points x", who)
    ref = build(untraced(y), axis)
    if not is_traced(y):
        return BSpline.construct_fast(ref.t, ref.c, ref.k, ref.extrapolate, ref.axis)
    yt = widen(np.moveaxis(y, axis % np.ndim(y), 0))
    eye = np.eye(np.shape(yt)[0])
    try:
        cmap = build(eye, 0).c
    except ValueError:  # a SciPy that fits 1-D data only (before 1.16): column by column
        cmap = np.stack([build(eye[:, j], 0).c for j in range(eye.shape[1])], axis=-1)
    c = np.tensordot(cmap, yt, axes=([1], [0]))
    return BSpline.construct_fast(ref.t, c, ref.k, ref.extrapolate, ref.axis)


def make_lsq_spline(x, y, t, k=3, w=None, axis=0, check_finite=True, *, method="qr"):
    """``scipy.interpolate.make_lsq_spline`` with traced ``y`` (the knots
    and weights are constants)."""
    t = constant(t, "the knots t", "make_lsq_spline")
    w = None if w is None else constant(w, "the weights w", "make_lsq_spline")
    return _linear_fit(lambda v, ax: _si.make_lsq_spline(
        x, v, t, k, w, ax, check_finite, method=method), x, y, axis, "make_lsq_spline")


def make_smoothing_spline(x, y, w=None, lam=None, *, axis=0):
    """``scipy.interpolate.make_smoothing_spline`` with traced ``y`` and a
    given ``lam`` (the weights are constants)."""
    w = None if w is None else constant(w, "the weights w", "make_smoothing_spline")
    if is_traced(y) and lam is None:
        raise MissingRuleError(
            "make_smoothing_spline with traced y and lam=None chooses lam from y by "
            "generalized cross-validation, and that choice has no rule here; pass lam "
            "(for instance the one SciPy chooses on chainrules.stop_gradient(y)), and the "
            "spline is then linear in y")
    lam = None if lam is None else constant(lam, "lam", "make_smoothing_spline")
    # (SciPy takes axis= from 1.16 on: along axis 0 it is left out)
    return _linear_fit(lambda v, ax: (_si.make_smoothing_spline(x, v, w, lam) if ax == 0 else
                                      _si.make_smoothing_spline(x, v, w, lam, axis=ax)),
                       x, y, axis, "make_smoothing_spline")
