"""Interpolation on grids and scattered points, ``RegularGridInterpolator``,
``interpn`` and ``griddata``, with traced data values and query points
(the grid and the sample points are constants).

SciPy's own object (or call) runs on the values first: it checks the
arguments, raises SciPy's errors for points out of bounds and gives the
result's dtype. The result is then computed from the traced values.

* linear on a grid: the cell of each query is found on its value, SciPy's
  way (``[g[i], g[i+1])``, the last cell closed), and the corners are
  weighted by differentiable products of the fractional distances; at a
  grid line the derivative in the query is that of the cell above it.
* nearest: a gather of the data (derivative 0 in the query).
* the grid's spline methods (slinear, cubic, quintic, and their legacy
  forms): the tensor product of 1-D interpolating splines on SciPy's knots;
  each axis' coefficient map is read off SciPy's 1-D solver and the basis
  (or its derivative of order ``nu``) is evaluated by de Boor's recursion
  at the query.
* pchip: Pchip along the last axis, then along each earlier one at each
  query point, as SciPy does; its slopes are differentiated on the branch
  the values are on. SciPy solves the same system iteratively
  (``gcrotmk``, to a relative tolerance of 1e-5 by default), so its values
  agree to its solver's tolerance; here the solve is direct (for plain
  values too, so that a traced call and a plain one agree), and equals
  SciPy's with ``solver=scipy.sparse.linalg.spsolve``.
* griddata linear: barycentric coordinates in the Delaunay simplex found on
  the query's value, affine in the query and linear in the data; nearest:
  a gather; 1-D data: ``interp1d``'s twin, as SciPy does.
"""

import itertools

import numpy as np
import scipy.interpolate as _si
from scipy.spatial import Delaunay, cKDTree

from chainrules.errors import MissingRuleError
from chainrules.tracing import is_traced, untraced

from ._bspline import basis_matrix
from ._cubic import PchipInterpolator, hermite_coefficients, pchip_slopes
from ._interp1d import interp1d
from ._ppoly import _column, any_traced, constant, interval_index, widen

__all__ = ["RegularGridInterpolator", "interpn", "griddata"]

_SPLINE_DEGREES = {"slinear": 1, "cubic": 3, "quintic": 5,
                   # SciPy's former evaluation, one axis after the other: the
                   # same tensor-product interpolant
                   "slinear_legacy": 1, "cubic_legacy": 3, "quintic_legacy": 5}


def _as_float(v):
    if np.result_type(v).kind in "fc":
        return v
    return v.astype(np.float64)


def _coordinates(xi, ndim):
    """SciPy's ``_ndim_coords_from_arrays``: a tuple of coordinate arrays
    (broadcast together) or an array whose last axis holds the coordinates."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        shape = np.broadcast_shapes(*[np.shape(p) for p in xi])
        parts = [p if is_traced(p) else np.asarray(p, dtype=float) for p in xi]
        return np.stack([np.broadcast_to(p, shape) for p in parts], axis=-1)
    xi = xi if is_traced(xi) else np.asarray(xi, dtype=float)
    if np.ndim(xi) == 1:
        return np.reshape(xi, (-1, 1) if ndim is None else (-1, ndim))
    return xi


def _ref_grid(ref):
    """SciPy's grid, ascending (a private attribute since SciPy 1.16, the
    public one before)."""
    g = getattr(ref, "_grid", None)
    return ref.grid if g is None else g


def _ref_values(ref):
    v = getattr(ref, "_values", None)
    return ref.values if v is None else v


class RegularGridInterpolator:
    """``scipy.interpolate.RegularGridInterpolator``: ``values`` and the
    query points may be traced. Every method (linear, nearest, slinear,
    cubic, quintic, their legacy forms, pchip); derivatives ``nu`` for the
    spline methods."""

    def __init__(self, points, values, method="linear", bounds_error=True,
                 fill_value=np.nan, *, solver=None, solver_args=None):
        points = tuple(constant(p, "the grid points", "RegularGridInterpolator")
                       for p in points)
        constant(fill_value, "fill_value", "RegularGridInterpolator")
        ref = _si.RegularGridInterpolator(points, untraced(values), method, bounds_error,
                                          fill_value, solver=solver, solver_args=solver_args)
        self._ref = ref
        self.method, self.bounds_error, self.fill_value = method, bounds_error, ref.fill_value
        self.grid = ref.grid
        if is_traced(values):
            values = _as_float(values)
            if ref._descending_dimensions:
                values = np.flip(values, axis=ref._descending_dimensions)
            self._values = values
        else:
            self._values = _ref_values(ref)
        self.values = self._values

    def __call__(self, xi, method=None, *, nu=None):
        method = self.method if method is None else method
        spline = method in _SPLINE_DEGREES
        if not any_traced(self._values, xi) and not spline:
            return self._ref(xi, method, nu=nu)
        expected = self._ref(untraced(xi), method, nu=nu)   # SciPy's checks and dtype
        grid, values = _ref_grid(self._ref), self._values
        nd = len(grid)
        xi = _coordinates(xi, nd)
        shape = np.shape(xi)[:-1]
        q = np.reshape(xi, (-1, nd))
        cols = [q[:, d] for d in range(nd)]
        rest = np.shape(values)[nd:]
        if method in _SPLINE_DEGREES:
            out = self._spline(cols, _SPLINE_DEGREES[method], nu)
        elif method == "pchip":
            out = self._pchip(cols)
        else:
            out = self._local(cols, method)
        qv = untraced(q)
        dims = 1 + len(rest)
        if not self.bounds_error and self.fill_value is not None:
            outside = np.zeros(qv.shape[0], dtype=bool)
            for d, g in enumerate(grid):
                outside |= (qv[:, d] < g[0]) | (qv[:, d] > g[-1])
            out = np.where(_column(outside, dims), self.fill_value, out)
        nans = np.any(np.isnan(qv), axis=-1)
        if nans.any():
            out = np.where(_column(nans, dims), np.nan, out)
        out = np.reshape(out, shape + rest)
        if np.result_type(out) != expected.dtype:
            out = out.astype(expected.dtype)
        return out

    def _local(self, cols, method):
        grid, values = _ref_grid(self._ref), self._values
        rest = np.ndim(values) - len(grid)
        lows, highs, fracs = [], [], []
        for g, x in zip(grid, cols):
            n = len(g)
            if n == 1:
                i = np.zeros(np.shape(x), dtype=np.intp)
                lows.append(i), highs.append(i), fracs.append(0 * x)
                continue
            i = np.clip(np.searchsorted(g, x, side="right") - 1, 0, n - 2)
            lows.append(i), highs.append(i + 1)
            fracs.append((x - g[i]) / (g[i + 1] - g[i]))
        if method == "nearest":
            fv = [untraced(f) for f in fracs]
            idx = tuple(np.where(np.isnan(f) | (f <= 0.5), i, j)
                        for i, j, f in zip(lows, highs, fv))
            return values[idx] + _column(0 * sum(fracs), 1 + rest)
        out = 0
        for corner in itertools.product((0, 1), repeat=len(grid)):
            idx = tuple(h if c else lo for c, lo, h in zip(corner, lows, highs))
            weight = 1
            for c, f in zip(corner, fracs):
                weight = weight * (f if c else 1 - f)
            out = out + values[idx] * _column(weight, 1 + rest)
        return out

    def _pchip(self, cols):
        """SciPy's pchip on a grid: Pchip along the last axis at every query,
        then along each earlier axis, per query point, through the values
        found so far (each point's own slopes: Pchip is not linear in the
        data)."""
        grid, values = _ref_grid(self._ref), self._values
        nd = len(grid)
        values = widen(values)
        last = PchipInterpolator(grid[-1], np.moveaxis(values, nd - 1, 0), axis=0,
                                 extrapolate=True)
        cur = last(cols[-1])                          # (m, n_0 .. n_{nd-2}, ...)
        m = np.shape(cur)[0]
        for d in range(nd - 2, -1, -1):
            g, x = grid[d], cols[d]
            yd = np.moveaxis(cur, d + 1, 0)           # (n_d, m, ...)
            c = hermite_coefficients(g, yd, pchip_slopes(g, yd))
            i = interval_index(g, x)
            cg = c[:, i, np.arange(m)]                # (4, m, ...): each point's piece
            dx = _column(x - g[i], np.ndim(cg) - 1)
            cur = ((cg[0] * dx + cg[1]) * dx + cg[2]) * dx + cg[3]
        return cur

    def _spline(self, cols, k, nu=None):
        grid, values = _ref_grid(self._ref), self._values
        # SciPy's knots: not-a-knot along each axis, as its 1-D interpolant's
        knots = [_si.make_interp_spline(g, np.zeros(len(g)), k).t for g in grid]
        coef = values.astype(np.complex128 if np.result_type(values).kind == "c"
                             else np.float64)
        for d, (g, t) in enumerate(zip(grid, knots)):
            cmap = _si.make_interp_spline(g, np.eye(len(g)), k, t=t).c
            coef = np.moveaxis(np.tensordot(cmap, coef, axes=([1], [d])), 0, d)
        out = None
        nus = (0,) * len(grid) if nu is None else tuple(nu)
        for d, (x, t) in enumerate(zip(cols, knots)):
            basis = basis_matrix(t, k, x, nus[d])                    # (nq, n)
            if out is None:
                out = np.tensordot(basis, coef, axes=([1], [0]))   # (nq, ...)
            else:
                b = np.reshape(basis, np.shape(basis) + (1,) * (np.ndim(out) - 2))
                out = np.sum(b * out, axis=1)
        return out


def interpn(points, values, xi, method="linear", bounds_error=True, fill_value=np.nan):
    """``scipy.interpolate.interpn``: ``values`` and ``xi`` may be traced."""
    if not any_traced(values, xi):
        return _si.interpn(points, values, xi, method, bounds_error, fill_value)
    _si.interpn(points, untraced(values), untraced(xi), method, bounds_error, fill_value)
    return RegularGridInterpolator(points, values, method, bounds_error, fill_value)(xi)


def _rescale(points, xi):
    offset = np.mean(points, axis=0)
    scale = np.ptp(points, axis=0)
    scale[~(scale > 0)] = 1.0
    return (points - offset) / scale, (xi - offset) / scale


def griddata(points, values, xi, method="linear", fill_value=np.nan, rescale=False):
    """``scipy.interpolate.griddata`` with traced ``values`` and ``xi``
    (methods linear and nearest in any dimension; in 1-D also cubic)."""
    if not any_traced(values, xi):
        return _si.griddata(points, values, xi, method, fill_value, rescale)
    if isinstance(points, tuple):
        points = tuple(constant(p, "the sample points", "griddata") for p in points)
    else:
        points = constant(points, "the sample points", "griddata")
    constant(fill_value, "fill_value", "griddata")
    expected = _si.griddata(points, untraced(values), untraced(xi), method, fill_value,
                            rescale)
    pts = _si._ndgriddata._ndim_coords_from_arrays(points)
    ndim = pts.ndim if pts.ndim < 2 else pts.shape[-1]
    if ndim == 1 and method in ("nearest", "linear", "cubic"):
        pts = pts.ravel()
        if isinstance(xi, tuple):
            xi = xi[0]
        fill = "extrapolate" if method == "nearest" else fill_value
        out = interp1d(pts, values, kind=method, axis=0, bounds_error=False, fill_value=fill)(xi)
    elif method in ("nearest", "linear"):
        out = _scattered(pts, values, xi, method, fill_value, rescale)
    else:
        raise MissingRuleError(
            f"griddata(method={method!r}) in {ndim} dimensions with traced values or "
            "query points has no rule here (Clough-Tocher's gradients come from an "
            "iterative solve); use method 'linear' or 'nearest'")
    if np.result_type(out) != expected.dtype:
        out = out.astype(expected.dtype)
    return out


def _scattered(pts, values, xi, method, fill_value, rescale):
    ndim = pts.shape[1]
    xi = _coordinates(xi, ndim)
    shape = np.shape(xi)[:-1]
    q = np.reshape(xi, (-1, ndim))
    values = _as_float(values)
    rest = np.shape(values)[1:]
    if rescale:
        pts, q = _rescale(pts, q)
    qv = untraced(q)
    dims = 1 + len(rest)
    if method == "nearest":
        _, i = cKDTree(pts).query(qv)
        out = values[i] + _column(0 * np.sum(q, axis=1), dims)
        return np.reshape(out, shape + rest)
    tri = Delaunay(pts)
    s = tri.find_simplex(qv)
    inside = s >= 0
    s = np.where(inside, s, 0)
    T = tri.transform[s]                                        # (nq, d+1, d)
    b = np.sum(T[:, :ndim, :] * (q - T[:, ndim, :])[:, None, :], axis=-1)
    bary = np.concatenate([b, 1 - np.sum(b, axis=1, keepdims=True)], axis=1)
    corner = values[tri.simplices[s]]                           # (nq, d+1, ...)
    out = np.sum(corner * np.reshape(bary, np.shape(bary) + (1,) * (dims - 1)), axis=1)
    out = np.where(_column(inside, dims), out, fill_value)
    return np.reshape(out, shape + rest)
