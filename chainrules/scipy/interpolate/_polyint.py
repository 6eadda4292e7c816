"""Polynomial interpolation through every point, ``KroghInterpolator``,
``BarycentricInterpolator``, ``krogh_interpolate`` and
``barycentric_interpolate``, with traced data values and query points
(the nodes are constants).

Both interpolants are linear in the data. Krogh's Newton coefficients are
the linear map of the data read off SciPy on unit vectors, and the Newton
form is evaluated with differentiable arithmetic. The barycentric
interpolant is evaluated as ``sum_j w_j y_j l_j(x) / sum_j w_j l_j(x)``
with ``l_j(x)`` the product of ``x - x_k`` over the other nodes: the same
polynomial as SciPy's ``sum_j w_j y_j / (x - x_j)`` over
``sum_j w_j / (x - x_j)``, with no division by ``x - x_j``, so that it and
its derivatives of every order are exact at the nodes too. Derivatives
of the interpolants (``derivative``, ``derivatives``, ``der``) are
computed on plain values only.
"""

import numpy as np
import scipy.interpolate as _si

from chainrules.errors import MissingRuleError
from chainrules.tracing import is_traced, untraced

from ._ppoly import _column, any_traced, constant, to_axis, widen

__all__ = ["KroghInterpolator", "BarycentricInterpolator", "krogh_interpolate",
           "barycentric_interpolate"]


def _plain_only(who):
    raise MissingRuleError(
        f"{who} of traced data or query points has no rule here; differentiate the "
        "interpolant's values (its call) instead, for instance with chainrules.grad of "
        "the call")


class _Polynomial:
    """Shared parts: SciPy's object on the values (checks, dtype, axis)."""

    def _setup(self, ref, yi, axis):
        self._ref = ref
        self.xi = np.asarray(ref.xi, dtype=float)
        self._axis = ref._y_axis
        if yi is not None and is_traced(yi):
            self._yt = widen(np.moveaxis(yi, axis % np.ndim(yi), 0))
        else:
            self._yt = None if yi is None else np.moveaxis(
                np.asarray(yi), axis % np.ndim(yi), 0)

    def _finish(self, out, x, expected):
        shape = np.shape(x)
        out = np.reshape(out, shape + np.shape(self._yt)[1:])
        out = to_axis(out, len(shape), self._axis)
        return out if np.result_type(out) == expected.dtype else out.astype(expected.dtype)

    def __call__(self, x):
        expected = self._ref(untraced(x))
        if not any_traced(self._yt, x):
            return expected
        x = x if is_traced(x) else np.asarray(x, dtype=float)
        flat = np.reshape(x, (-1,))
        return self._finish(self._evaluate(flat), x, expected)

    def derivative(self, x, der=1):
        if any_traced(self._yt, x):
            _plain_only(f"{type(self).__name__}.derivative")
        return self._ref.derivative(x, der)

    def derivatives(self, x, der=None):
        if any_traced(self._yt, x):
            _plain_only(f"{type(self).__name__}.derivatives")
        return self._ref.derivatives(x, der)


class KroghInterpolator(_Polynomial):
    """``scipy.interpolate.KroghInterpolator`` (repeated nodes take
    derivatives): ``yi`` and the query points may be traced."""

    def __init__(self, xi, yi, axis=0):
        xi = constant(xi, "the nodes xi", "KroghInterpolator")
        ref = _si.KroghInterpolator(xi, untraced(yi), axis)
        self._setup(ref, yi, axis)
        n = len(self.xi)
        if is_traced(yi):
            cmap = _si.KroghInterpolator(xi, np.eye(n)).c[:n]          # (n, n)
            self.c = np.tensordot(cmap, self._yt, axes=([1], [0]))
        else:
            self.c = np.reshape(ref.c[:n], (n,) + np.shape(self._yt)[1:])

    def _evaluate(self, x):
        nd = np.ndim(self.c)
        out = self.c[0] + 0 * _column(x, nd)
        product = 1
        for k in range(1, len(self.xi)):
            product = product * (x - self.xi[k - 1])
            out = out + _column(product, nd) * self.c[k]
        return out

    def __call__(self, x):
        expected = self._ref(untraced(x))
        if not any_traced(self.c, x):
            return expected
        x = x if is_traced(x) else np.asarray(x, dtype=float)
        return self._finish(self._evaluate(np.reshape(x, (-1,))), x, expected)


class BarycentricInterpolator(_Polynomial):
    """``scipy.interpolate.BarycentricInterpolator``: ``yi`` and the query
    points may be traced (the nodes and weights are constants)."""

    def __init__(self, xi, yi=None, axis=0, *, wi=None, rng=None, random_state=None):
        xi = constant(xi, "the nodes xi", "BarycentricInterpolator")
        kw = {} if random_state is None else {"random_state": random_state}
        ref = _si.BarycentricInterpolator(xi, untraced(yi), axis, wi=wi, rng=rng, **kw)
        self._setup(ref, yi, axis)
        self.wi = ref.wi

    def set_yi(self, yi, axis=None):
        if is_traced(yi):
            raise MissingRuleError("BarycentricInterpolator.set_yi with traced values: "
                                   "make a new BarycentricInterpolator(xi, yi) instead")
        self._ref.set_yi(yi, axis)
        self._setup(self._ref, yi, self._ref._y_axis if axis is None else axis)

    def _evaluate(self, x):
        nd = np.ndim(self._yt)
        d = _column(x, 2) - self.xi                                  # (m, n)
        ones = np.ones_like(d[:, :1])
        before = np.cumprod(np.concatenate([ones, d[:, :-1]], axis=1), axis=1)
        after = np.flip(np.cumprod(np.concatenate(
            [ones, np.flip(d[:, 1:], axis=1)], axis=1), axis=1), axis=1)
        others = before * after * self.wi                            # w_j l_j(x)
        num = np.tensordot(others, self._yt, axes=([1], [0]))        # (m, ...)
        den = np.sum(others, axis=1)
        return num / _column(den, nd)


def krogh_interpolate(xi, yi, x, der=0, axis=0):
    """``scipy.interpolate.krogh_interpolate``."""
    P = KroghInterpolator(xi, yi, axis=axis)
    if der == 0:
        return P(x)
    if np.isscalar(der):
        return P.derivative(x, der=der)
    return P.derivatives(x, der=np.amax(der) + 1)[der]


def barycentric_interpolate(xi, yi, x, axis=0, *, der=0, rng=None):
    """``scipy.interpolate.barycentric_interpolate``."""
    P = BarycentricInterpolator(xi, yi, axis=axis, rng=rng)
    if der == 0:
        return P(x)
    if np.isscalar(der):
        return P.derivative(x, der=der)
    return P.derivatives(x, der=np.amax(der) + 1)[der]
