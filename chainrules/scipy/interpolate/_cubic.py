"""Cubic interpolants of ``scipy.interpolate`` as piecewise polynomials
with traced data values: ``CubicHermiteSpline``, ``CubicSpline``,
``PchipInterpolator``, ``Akima1DInterpolator``.

Each is the cubic Hermite polynomial of the values ``y`` and the slopes
``s`` at the breakpoints. ``CubicSpline``'s slopes solve a tridiagonal
system whose matrix depends on ``x`` only and whose right-hand side is
linear in ``y`` (plus the prescribed boundary derivatives): it is solved
with the differentiable banded solve (periodic data: a cyclic system, a
rank-one correction of a banded one). Two or three points (SciPy's
special cases) use the slope map read off SciPy's own solver run once on
the unit vectors, applied with a differentiable product.
``PchipInterpolator`` and ``Akima1DInterpolator`` choose their slopes
nonlinearly; they are written here with NumPy operations that carry
derivatives, and their branches (a zero slope where the secants change
sign, Akima's mean where its weights vanish) are picked on the values:
at the points where the branch changes the derivative is one-sided, the
branch the values are on.
"""

import functools

import numpy as np
import scipy.interpolate as _si
import scipy.linalg as _sl

from chainrules.errors import MissingRuleError
from chainrules.scipy.linalg import solve_banded
from chainrules.tracing import holds_traced, is_traced, untraced

from ._ppoly import PPoly, _column, any_traced, constant
from ._ppoly import widen as _widen

__all__ = ["CubicHermiteSpline", "CubicSpline", "PchipInterpolator",
           "Akima1DInterpolator"]


def hermite_coefficients(x, y, s):
    """Coefficients (4, n-1, ...) of the cubic Hermite interpolant of
    values ``y`` and slopes ``s`` (both along axis 0)."""
    h = _column(np.diff(x), np.ndim(y))
    secant = (y[1:] - y[:-1]) / h
    c0 = (s[:-1] + s[1:] - 2 * secant) / (h * h)
    c1 = (3 * secant - 2 * s[:-1] - s[1:]) / h
    return np.stack([c0, c1, s[:-1], y[:-1]])


def _set_from(obj, ref, c):
    obj._set(c, ref.x, ref.extrapolate, ref.axis)


class CubicHermiteSpline(PPoly):
    """``scipy.interpolate.CubicHermiteSpline``: values ``y`` and slopes
    ``dydx`` may be traced."""

    def __init__(self, x, y, dydx, axis=0, extrapolate=None):
        x = constant(x, "the sample points x", "CubicHermiteSpline")
        ref = _si.CubicHermiteSpline(x, untraced(y), untraced(dydx), axis, extrapolate)
        if not any_traced(y, dydx):
            return _set_from(self, ref, ref.c)
        yt = _widen(np.moveaxis(y, axis % np.ndim(y), 0))
        st = _widen(np.moveaxis(dydx, axis % np.ndim(dydx), 0))
        _set_from(self, ref, hermite_coefficients(ref.x, yt, st))


def _homogeneous(bc_type, rest):
    """The boundary conditions with every prescribed derivative value 0
    (shape ``rest``); None when there is no nonzero value (the map is then
    linear)."""
    if isinstance(bc_type, str):
        return bc_type, False
    ends, affine = [], False
    for end in bc_type:
        if isinstance(end, str):
            ends.append(end)
        else:
            order, value = end
            if is_traced(value):
                constant(value, "a boundary derivative value", "CubicSpline")
            affine = affine or bool(np.any(np.asarray(value) != 0))
            ends.append((order, np.zeros(rest)))
    return tuple(ends), affine


def _periodic_basis(n, periodic):
    """Unit data vectors (columns); for periodic data the first is
    ``e_0 + e_{n-1}``, the data's first and last values being one."""
    if not periodic:
        return np.eye(n)
    basis = np.eye(n)[:, :n - 1]
    basis[n - 1, 0] = 1.0
    return basis


def _coordinates(yt, periodic):
    """The data in the basis of ``_periodic_basis``: for periodic data the
    first coordinate is the mean of the first and last values (equal on
    valid data; the mean makes the map symmetric in them)."""
    if not periodic:
        return yt
    return np.concatenate([(0.5 * (yt[:1] + yt[-1:])), yt[1:-1]], axis=0)


def _slopes_of(spline):
    """The slopes at every breakpoint of a cubic PPoly (SciPy's)."""
    c, h = spline.c, np.diff(spline.x)
    hh = _column(h[-1:], c.ndim - 1)[0]
    last = c[2, -1] + 2 * c[1, -1] * hh + 3 * c[0, -1] * hh * hh
    return np.concatenate([c[2], last[None]], axis=0)


def _ends(bc_type):
    """The two end conditions: "not-a-knot" or ``(order, value)``."""
    ends = (bc_type, bc_type) if isinstance(bc_type, str) else tuple(bc_type)
    named = {"clamped": (1, 0.0), "natural": (2, 0.0)}
    return tuple(named.get(e, e) if isinstance(e, str) else
                 (e[0], e[1] if is_traced(e[1]) else np.asarray(e[1])) for e in ends)


def banded_slopes(x, yt, bc_type):
    """The slopes of the cubic spline through ``yt`` (non-periodic, four
    points or more) from its tridiagonal system: row ``i`` of the interior
    says that the second derivative is continuous at ``x[i]``; the end rows
    say not-a-knot (the third derivative continuous at ``x[1]``, ``x[-2]``)
    or prescribe the first or second derivative. The matrix depends on
    ``x`` only; the right-hand side is linear in the data, and the solve is
    the differentiable banded solve."""
    n, rest = len(x), np.shape(yt)[1:]
    nd = np.ndim(yt)
    h = np.diff(x)
    hc = _column(h, nd)
    m = (yt[1:] - yt[:-1]) / hc
    ab = np.zeros((3, n))
    ab[1, 1:-1] = 2 * (h[:-1] + h[1:])
    ab[0, 2:] = h[:-1]
    ab[2, :-2] = h[1:]
    rhs = 3 * (hc[1:] * m[:-1] + hc[:-1] * m[1:])
    start, end = _ends(bc_type)
    if isinstance(start, str):
        d = x[2] - x[0]
        ab[1, 0], ab[0, 1] = h[1], d
        first = ((h[0] + 2 * d) * h[1] * m[0] + h[0] ** 2 * m[1]) / d
    elif start[0] == 1:
        ab[1, 0], ab[0, 1] = 1.0, 0.0
        first = start[1] + 0 * m[0]
    else:
        ab[1, 0], ab[0, 1] = 2 * h[0], h[0]
        first = -0.5 * start[1] * h[0] ** 2 + 3 * (yt[1] - yt[0])
    if isinstance(end, str):
        d = x[-1] - x[-3]
        ab[1, -1], ab[2, -2] = h[-2], d
        last = (h[-1] ** 2 * m[-2] + (2 * d + h[-1]) * h[-2] * m[-1]) / d
    elif end[0] == 1:
        ab[1, -1], ab[2, -2] = 1.0, 0.0
        last = end[1] + 0 * m[-1]
    else:
        ab[1, -1], ab[2, -2] = 2 * h[-1], h[-1]
        last = 0.5 * end[1] * h[-1] ** 2 + 3 * (yt[-1] - yt[-2])
    b = np.concatenate([first[None], rhs, last[None]], axis=0)
    s = solve_banded((1, 1), ab, np.reshape(b, (n, -1)))
    return np.reshape(s, (n,) + rest)


def periodic_slopes(x, yt):
    """The slopes of the periodic cubic spline (``yt[0] == yt[-1]``, four
    points or more): the second derivative is continuous at every point,
    the first and last being one, a cyclic tridiagonal system. The cyclic
    corners are a rank-one correction of a tridiagonal matrix
    (Sherman-Morrison): two banded solves, one of them on constants."""
    nd = np.ndim(yt)
    h = np.diff(x)
    N = len(h)
    hc = _column(h, nd)
    m = (yt[1:] - yt[:-1]) / hc
    left = np.roll(np.arange(N), 1)                   # the interval before each point
    diag = 2 * (h[left] + h)
    rhs = 3 * (hc * m[left] + hc[left] * m)
    alpha, beta = h[0], h[N - 2]                      # A[0, N-1] and A[N-1, 0]
    gamma = -diag[0]
    ab = np.zeros((3, N))
    ab[0, 1:] = h[left][:-1]                          # A[j-1, j] = h of row j-1's left
    ab[1] = diag
    ab[2, :-1] = h[1:]                                # A[j+1, j] = h_{j+1}
    ab[1, 0] -= gamma
    ab[1, -1] -= alpha * beta / gamma
    u = np.zeros(N)
    u[0], u[-1] = gamma, beta
    z = _sl.solve_banded((1, 1), ab, u)               # constants
    yv = solve_banded((1, 1), ab, np.reshape(rhs, (N, -1)))
    vy = yv[0] + (alpha / gamma) * yv[-1]
    vz = z[0] + (alpha / gamma) * z[-1]
    s = yv - _column(z, 2) * (vy / (1 + vz))
    s = np.reshape(s, np.shape(rhs))
    return np.concatenate([s, s[:1]], axis=0)


class CubicSpline(CubicHermiteSpline):
    """``scipy.interpolate.CubicSpline`` (every ``bc_type``); the data
    ``y``, the query points and (with four points or more, not periodic)
    prescribed boundary derivatives may be traced. Its slopes solve a banded
    system (``banded_slopes``, ``periodic_slopes``); fewer than four points
    use SciPy's slope map instead."""

    def __init__(self, x, y, axis=0, bc_type="not-a-knot", extrapolate=None):
        x = constant(x, "the sample points x", "CubicSpline")
        ref = _si.CubicSpline(x, untraced(y), axis, untraced(bc_type), extrapolate)
        if not (is_traced(y) or holds_traced(bc_type)):
            return _set_from(self, ref, ref.c)
        yt = _widen(np.moveaxis(y, axis % np.ndim(y), 0))
        n, rest = np.shape(yt)[0], np.shape(yt)[1:]
        periodic = bc_type == "periodic" or (not isinstance(bc_type, str) and any(
            isinstance(e, str) and e == "periodic" for e in bc_type))
        if n >= 4 and not periodic and 0 not in rest:
            return _set_from(self, ref, hermite_coefficients(
                ref.x, yt, banded_slopes(ref.x, yt, bc_type)))
        if n >= 4 and periodic and 0 not in rest:
            # the first and last values are one: each counts for half
            ends = 0.5 * (yt[:1] + yt[-1:])
            ys = np.concatenate([ends, yt[1:-1], ends], axis=0)
            return _set_from(self, ref, hermite_coefficients(
                ref.x, ys, periodic_slopes(ref.x, ys)))
        basis = _periodic_basis(n, periodic)
        hom, affine = _homogeneous(bc_type, (basis.shape[1],))
        slope_map = _slopes_of(_si.CubicSpline(x, basis, 0, hom))   # (n, nb)
        s = np.tensordot(slope_map, _coordinates(yt, periodic), axes=([1], [0]))
        if affine:
            s = s + _slopes_of(_si.CubicSpline(x, np.zeros((n,) + rest), 0, bc_type))
        _set_from(self, ref, hermite_coefficients(ref.x, yt, s))


def _pchip_end(h0, h1, m0, m1):
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    dv, m0v, m1v = untraced(d), untraced(m0), untraced(m1)
    zero = np.sign(dv) != np.sign(m0v)
    three = ~zero & (np.sign(m0v) != np.sign(m1v)) & (np.abs(dv) > 3.0 * np.abs(m0v))
    return np.where(zero, 0.0, np.where(three, 3.0 * m0, d))


def pchip_slopes(x, yt):
    h = _column(np.diff(x), np.ndim(yt))
    m = (yt[1:] - yt[:-1]) / h
    if np.shape(yt)[0] == 2:
        return np.concatenate([m, m], axis=0)
    mv = untraced(m)
    flat = (np.sign(mv[1:]) != np.sign(mv[:-1])) | (mv[1:] == 0) | (mv[:-1] == 0)
    w1 = 2 * h[1:] + h[:-1]
    w2 = h[1:] + 2 * h[:-1]
    # 1 / (the weighted harmonic mean) on safe denominators: where a secant is
    # 0 the slope is 0 and this branch is not taken
    one = np.ones_like(mv[1:])
    m_lo = np.where(flat, one, m[:-1])
    m_hi = np.where(flat, one, m[1:])
    inner = np.where(flat, 0.0, (w1 + w2) / (w1 / m_lo + w2 / m_hi))
    first = _pchip_end(h[0], h[1], m[0], m[1])
    last = _pchip_end(h[-1], h[-2], m[-1], m[-2])
    return np.concatenate([first[None], inner, last[None]], axis=0)


class PchipInterpolator(CubicHermiteSpline):
    """``scipy.interpolate.PchipInterpolator`` with traced ``y``: the
    slopes are differentiated where they are smooth in ``y``; at data where
    neighbouring secants change sign or vanish the slope is 0 and its
    derivative is taken as 0 (one-sided: the values' branch)."""

    def __init__(self, x, y, axis=0, extrapolate=None):
        x = constant(x, "the sample points x", "PchipInterpolator")
        ref = _si.PchipInterpolator(x, untraced(y), axis, extrapolate)
        if not is_traced(y):
            return _set_from(self, ref, ref.c)
        yt = _widen(np.moveaxis(y, axis % np.ndim(y), 0))
        _set_from(self, ref, hermite_coefficients(ref.x, yt, pchip_slopes(ref.x, yt)))


def akima_slopes(x, yt, method):
    h = _column(np.diff(x), np.ndim(yt))
    sec = (yt[1:] - yt[:-1]) / h
    if np.shape(yt)[0] == 2:
        return np.concatenate([sec, sec], axis=0)
    l1 = 2 * sec[:1] - sec[1:2]
    l0 = 2 * l1 - sec[:1]
    r1 = 2 * sec[-1:] - sec[-2:-1]
    r2 = 2 * r1 - sec[-1:]
    m = np.concatenate([l0, l1, sec, r1, r2], axis=0)
    dm = np.abs(m[1:] - m[:-1])
    if method == "makima":
        pm = np.abs(m[1:] + m[:-1])
        f1 = dm[2:] + 0.5 * pm[2:]
        f2 = dm[:-2] + 0.5 * pm[:-2]
    else:
        f1, f2 = dm[2:], dm[:-2]
    f12 = f1 + f2
    f12v = untraced(f12)
    mmax = np.max(f12v) if f12v.size else -np.inf
    defined = f12v > 1e-9 * mmax
    mean = 0.5 * (m[3:] + m[:-3])
    safe = np.where(defined, f12, 1.0)
    weighted = m[1:-2] + np.where(defined, f2, 0.0) / safe * (m[2:-1] - m[1:-2])
    return np.where(defined, weighted, mean)


@functools.cache
def _two_point_akima_is_curved():
    """Whether the installed SciPy's Akima interpolant through two points
    is not their straight line (SciPy before 1.16): asked once."""
    c = _si.Akima1DInterpolator(np.array([0.0, 1.0]), np.array([0.0, 1.0])).c
    return bool(np.any(c[:2] != 0))


class Akima1DInterpolator(CubicHermiteSpline):
    """``scipy.interpolate.Akima1DInterpolator`` (``method`` "akima" or
    "makima") with traced ``y``. Its slopes are weighted by absolute
    differences of secants: where two secants are equal the weight has a
    kink and its derivative is one-sided (NumPy's ``abs`` policy); where
    the weights vanish the slope is the mean of the neighbouring secants."""

    def __init__(self, x, y, axis=0, *, method="akima", extrapolate=None):
        x = constant(x, "the sample points x", "Akima1DInterpolator")
        ref = _si.Akima1DInterpolator(x, untraced(y), axis, method=method,
                                      extrapolate=extrapolate)
        if not is_traced(y):
            return _set_from(self, ref, ref.c)
        if len(ref.x) == 2 and _two_point_akima_is_curved():
            raise MissingRuleError(
                "Akima1DInterpolator through two points: this SciPy (before 1.16) builds "
                "a curved piece there, which chainrules does not reproduce (SciPy 1.16 "
                "and later build the straight line); pass three points or more, or "
                "upgrade SciPy")
        yt = _widen(np.moveaxis(y, axis % np.ndim(y), 0))
        _set_from(self, ref, hermite_coefficients(ref.x, yt, akima_slopes(ref.x, yt, method)))
