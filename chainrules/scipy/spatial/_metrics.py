"""The distances of ``chainrules.scipy.spatial.distance`` between rows.

Each ``*_rows(a, b, **params)`` takes two arrays that broadcast against each
other, holds the coordinates on the last axis and returns the distances
over the leading axes: two vectors give a 0-d result, ``X[i]`` and ``X[j]``
the condensed distances of ``pdist``, ``XA[:, None]`` and ``XB[None]`` the
matrix of ``cdist``. They are NumPy calls on traced values, so the rules of
those calls differentiate them to any order. The parameters (``w``, ``p``,
``V``, ``VI``) arrive validated and in the computation's dtype.

Where a distance is not differentiable the derivative follows chainrules'
rules for the NumPy calls it is made of:

* ``|x|`` at 0 has derivative 0 (``np.abs``): cityblock, braycurtis and
  canberra at equal coordinates;
* a maximum shared by several coordinates splits the derivative evenly
  between them (``np.max``): chebyshev at ties;
* a norm of the zero vector has derivative 0 (``np.linalg.norm``):
  euclidean, minkowski, seuclidean and mahalanobis at equal points, where
  ``np.sqrt(np.sum(d * d))`` would give nan (sqrt's derivative is infinite
  at 0). The minkowski terms ``|d_i|**p`` likewise have derivative 0 at
  ``d_i = 0`` to every order, also for ``p < 1`` where the one-sided slopes
  are infinite;
* a ratio whose denominator is 0 (cosine and correlation of a zero vector,
  braycurtis of ``u = -v``) has SciPy's value (nan or inf) and passes no
  derivative, so masking it out leaves the other derivatives finite;
  canberra's 0/0 terms are left out of the sum, as SciPy's ``np.nansum``
  does, and pass none either.
"""

import numpy as np

from chainrules.rules._util import array_value
from chainrules.tracing import is_traced

__all__ = ["ROWS", "plain"]


def plain(v):
    """The value of ``v`` without its trace (masks are computed on it)."""
    return array_value(v) if is_traced(v) else v


def _where_zero(v):
    """The plain mask ``v == 0``, or None when no element is 0 (then nothing
    needs guarding and no ``np.where`` is recorded)."""
    zero = np.asarray(plain(v)) == 0
    return zero if zero.any() else None


def _root(s, p):
    """``s ** (1 / p)`` for ``s >= 0``: 0 with derivative 0 where ``s`` is 0
    (its derivative there is infinite); nan stays nan."""
    f = np.sqrt if p == 2 else (lambda x: x ** (1.0 / p))
    zero = _where_zero(s)
    if zero is None:
        return f(s)
    return np.where(zero, 0.0, f(np.where(zero, 1.0, s)))


def _power(a, p):
    """``a ** p`` for ``a >= 0``, with derivative 0 where ``a`` is 0 (for
    ``p < 1`` the derivative there is infinite, for ``p < 2`` the second)."""
    zero = _where_zero(a)
    if zero is None:
        return a ** p
    return np.where(zero, 0.0, np.where(zero, 1.0, a) ** p)


def _divide(num, den, root=False):
    """``num / den`` (``num / sqrt(den)`` with ``root``). Where ``den`` is 0
    the value is NumPy's (inf, or nan for 0/0) and no derivative passes, so
    the other elements' derivatives stay finite."""
    f = np.sqrt if root else (lambda x: x)
    zero = _where_zero(den)
    if zero is None:
        return num / f(den)
    with np.errstate(divide="ignore", invalid="ignore"):
        edge = plain(num) / f(plain(den))
    return np.where(zero, edge, num / f(np.where(zero, 1.0, den)))


def _pnorm(d, p, w=None):
    """``(sum_i w_i |d_i|**p) ** (1/p)`` over the last axis, as SciPy's
    ``minkowski`` (p = 1, 2 and inf written as the sum, the 2-norm and the
    maximum over the coordinates whose weight is not 0)."""
    if np.shape(d)[-1] == 0:
        return np.sum(d, axis=-1)
    if p == 2 and not is_traced(w):
        # np.linalg.norm's rule: derivative 0 at the zero vector
        return np.linalg.norm(d if w is None else np.sqrt(w) * d, axis=-1)
    ad = np.abs(d)
    if p == 1:
        return np.sum(ad if w is None else w * ad, axis=-1)
    if np.isinf(p):
        return np.max(ad if w is None else ad * (plain(w) != 0), axis=-1)
    if p == 2:
        return _root(np.sum(w * (d * d), axis=-1), 2)
    terms = _power(ad, p)
    return _root(np.sum(terms if w is None else w * terms, axis=-1), p)


def _minkowski_rows(a, b, p=2.0, w=None):
    return _pnorm(a - b, p, w)


def _euclidean_rows(a, b, w=None):
    return _pnorm(a - b, 2, w)


def _sqeuclidean_rows(a, b, w=None):
    d = a - b
    return np.sum(d * d if w is None else w * (d * d), axis=-1)


def _seuclidean_rows(a, b, V):
    # SciPy: euclidean(u, v, w=1/V)
    return _pnorm(a - b, 2, 1.0 / V)


def _cityblock_rows(a, b, w=None):
    return _pnorm(a - b, 1, w)


def _chebyshev_rows(a, b, w=None):
    return _pnorm(a - b, np.inf, w)


def _mahalanobis_rows(a, b, VI):
    d = a - b
    # SciPy: sqrt(dot(dot(d, VI), d)); a negative form (VI not positive
    # semidefinite) gives nan, as there
    return _root(np.sum(np.matmul(d, VI) * d, axis=-1), 2)


def _correlation_rows(a, b, w=None, centered=True):
    if w is not None:
        w = w / np.sum(w)
    if centered:
        a = a - (np.mean(a, axis=-1, keepdims=True) if w is None
                 else np.sum(a * w, axis=-1, keepdims=True))
        b = b - (np.mean(b, axis=-1, keepdims=True) if w is None
                 else np.sum(b * w, axis=-1, keepdims=True))
    aw, bw = (a, b) if w is None else (a * w, b * w)
    uv = np.sum(a * bw, axis=-1)
    uu = np.sum(a * aw, axis=-1)
    vv = np.sum(b * bw, axis=-1)
    # clipped to [0, 2] against rounding, as SciPy
    return np.clip(1.0 - _divide(uv, uu * vv, root=True), 0.0, 2.0)


def _cosine_rows(a, b, w=None):
    return _correlation_rows(a, b, w, centered=False)


def _braycurtis_rows(a, b, w=None):
    num, den = np.abs(a - b), np.abs(a + b)
    if w is not None:
        num, den = w * num, w * den
    return _divide(np.sum(num, axis=-1), np.sum(den, axis=-1))


def _canberra_rows(a, b, w=None):
    num, den = np.abs(a - b), np.abs(a) + np.abs(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the terms np.nansum leaves out in SciPy: 0/0, and nan or inf inputs
        drop = np.isnan(np.asarray(plain(num)) / np.asarray(plain(den)))
    if drop.any():
        num, den = np.where(drop, 0.0, num), np.where(drop, 1.0, den)
    terms = num / den
    return np.sum(terms if w is None else w * terms, axis=-1)


#: canonical metric name -> (row function, the keyword arguments pdist and
#: cdist accept for it)
ROWS = {
    "braycurtis": (_braycurtis_rows, ("w",)),
    "canberra": (_canberra_rows, ("w",)),
    "chebyshev": (_chebyshev_rows, ("w",)),
    "cityblock": (_cityblock_rows, ("w",)),
    "correlation": (_correlation_rows, ("w",)),
    "cosine": (_cosine_rows, ("w",)),
    "euclidean": (_euclidean_rows, ("w",)),
    "mahalanobis": (_mahalanobis_rows, ("VI",)),
    "minkowski": (_minkowski_rows, ("p", "w")),
    "seuclidean": (_seuclidean_rows, ("V",)),
    "sqeuclidean": (_sqeuclidean_rows, ("w",)),
}
