"""Specs for ``chainrules.scipy.spatial.distance`` (compositions: the
checkers test each distance as a whole): the distances between two vectors,
``pdist`` and ``cdist`` for every metric, with the weights ``w``, the
variances ``V`` and the inverse covariance ``VI`` differentiated too, and
both directions of ``squareform``.

The points stay away from every kink of the distances (``separated_points``):
no equal coordinates, no zero coordinates, no coordinates of opposite sign
(braycurtis' ``|u + v|``) and no ties between the largest coordinate
differences (chebyshev); for cosine and correlation, away from parallel
pairs (``_angular_points``), and for SciPy's default ``V`` and ``VI``, from
degenerate covariances (``_spread_points``). The behaviour at the kinks is
tested in tests/rules/test_scipy_spatial.py.
"""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

try:
    from chainrules.scipy.spatial import distance as cd
except ImportError:  # pragma: no cover - SciPy is an optional extra
    cd = None

F = ("float64", "float32")
#: fewest coordinates for the angular distances: their vectors (centred for
#: correlation) then span three dimensions, where near-parallel pairs are rare
MIN_DIM = {"cosine": 3, "correlation": 4}

#: metric -> the parameter a spec may pass and differentiate ("w", "V", "VI")
METRICS = {"braycurtis": "w", "canberra": "w", "chebyshev": "w", "cityblock": "w",
           "correlation": "w", "cosine": "w", "euclidean": "w", "mahalanobis": "VI",
           "minkowski": "w", "seuclidean": "V", "sqeuclidean": "w"}
#: minkowski's exponents: below 1, the kinks' neighbours, and the maximum
P_VALUES = (0.7, 1.0, 1.5, 2.0, 3.0, np.inf)


@st.composite
def separated_points(draw, dtype, m, n):
    """``m`` points in ``n`` dimensions (an ``(m, n)`` array, ``m <= 4``) away
    from the kinks of every distance: in each coordinate the points share one
    sign, have magnitudes of at least 0.4 and differ by at least 0.25; one
    coordinate, drawn, is spread wider (differences of at least 1.35 against
    at most 0.95), so the largest coordinate difference of every pair is
    unique by a margin far beyond the finite-difference steps."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    wide = rng.integers(n)
    x = np.empty((m, n))
    for c in range(n):
        step = 1.4 if c == wide else 0.3
        x[:, c] = 0.4 + step * rng.permutation(m) + rng.uniform(0.0, 0.05, m)
    return (x * rng.choice([-1.0, 1.0], size=n)).astype(dtype)


#: well-spread designs of four points in one and two dimensions
_DESIGNS = {1: [[-1.5], [-0.5], [0.5], [1.5]], 2: [[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0],
                                                   [-1.0, -1.0]]}


def _spread_points(draw, dtype, n):
    """Four points in ``n <= 2`` dimensions whose covariance is well
    conditioned (a square's corners, moved by up to 0.3 and mapped by a well
    conditioned matrix): SciPy's default ``VI``, the inverse covariance of
    the points, stays moderate."""
    x = np.asarray(_DESIGNS[n]) + 0.3 * draw(crs.arrays("float64", (4, n), (-1.0, 1.0)))
    a = draw(crs.well_conditioned_matrices("float64", n))
    return (x @ a + draw(crs.arrays("float64", (n,), "real"))).astype(dtype)


def _angular_points(draw, dtype, m, n, centered):
    """``m`` points in ``n`` dimensions whose pairs are at least 18 degrees
    from parallel or antiparallel (cosine or correlation at most 0.95 in
    absolute value): near there the derivative of the angular distances is
    small against float32 rounding. Redrawn a few times, then rejected."""
    from hypothesis import assume

    for _ in range(5):
        x = draw(crs.arrays("float64", (m, n), "real"))
        c = x - x.mean(axis=1, keepdims=True) if centered else x
        c = c / np.linalg.norm(c, axis=1, keepdims=True)
        cos = np.abs(c @ c.T)[np.triu_indices(m, 1)]
        if np.all(cos < 0.95):
            return x.astype(dtype)
    assume(False)


def _points(draw, dtype, metric, m, n):
    if metric in MIN_DIM:
        return _angular_points(draw, dtype, m, n, metric == "correlation")
    return draw(separated_points(dtype, m, n))


def _param(draw, dtype, metric, n):
    """The metric's differentiable parameter, or None (SciPy's default) half
    of the time for the optional ones."""
    kind = METRICS[metric]
    if kind == "VI":
        return draw(crs.spd_matrices(dtype, n))
    if kind == "V" or draw(st.booleans()):
        return draw(crs.arrays(dtype, (n,), "positive"))
    return None


def _kwargs(draw, metric):
    return {"p": draw(st.sampled_from(P_VALUES))} if metric == "minkowski" else {}


def _vector_spec(metric):
    fn = getattr(cd, metric)
    kind = METRICS[metric]

    def sample(draw, dtype):
        n = draw(st.integers(MIN_DIM.get(metric, 1), 5))
        u, v = _points(draw, dtype, metric, 2, n)
        extra = _param(draw, dtype, metric, n)
        args = (u, v) if extra is None else (u, v, extra)
        return args, _kwargs(draw, metric)

    if kind == "w":
        call = lambda u, v, w=None, **kw: fn(u, v, w=w, **kw)  # noqa: E731
    else:
        call = fn
    return RuleSpec(fn, sample, F, call=call,
                    name=f"chainrules.scipy.spatial.distance.{metric}")


def _pairwise_spec(metric, which):
    fn = getattr(cd, which)
    kind = METRICS[metric]

    def sample(draw, dtype):
        n = draw(st.integers(MIN_DIM.get(metric, 1), max(3, MIN_DIM.get(metric, 1))))
        rows = draw(st.integers(1 if which == "pdist" else 2, 4))
        split = draw(st.integers(1, rows - 1)) if which == "cdist" else 0
        if kind == "w":
            x = _points(draw, dtype, metric, rows, n)
        else:
            # with SciPy's defaults (V, VI from the points) the distances of
            # n + 1 points are constant (two points: sqrt(2 n) for seuclidean;
            # a simplex is affinely any other for mahalanobis): n + 2 points
            n, split = min(n, 2), 2
            x = _spread_points(draw, dtype, n)
        points = (x,) if which == "pdist" else (x[:split], x[split:])
        extra = _param(draw, dtype, metric, n)
        if kind != "w" and draw(st.booleans()):
            extra = None   # V and VI from the points, as SciPy computes them
        return points + ((extra,) if extra is not None else ()), _kwargs(draw, metric)

    def call(*args, **kw):
        points = args[:1] if which == "pdist" else args[:2]
        rest = args[len(points):]
        if rest:
            kw = dict(kw, **{kind: rest[0]})
        return fn(*points, metric, **kw)

    return RuleSpec(fn, sample, F, call=call,
                    name=f"chainrules.scipy.spatial.distance.{which}[{metric}]")


def _to_matrix(draw, dtype):
    d = draw(st.integers(2, 4))
    return (draw(crs.arrays(dtype, (d * (d - 1) // 2,), "positive")),), {}


def _to_vector(draw, dtype):
    d = draw(st.integers(1, 4))
    a = draw(crs.arrays(dtype, (d, d), "positive"))
    return (a,), {"checks": False}   # the finite differences leave the symmetric matrices


SPECS = []
if cd is not None:
    SPECS = ([_vector_spec(m) for m in METRICS]
             + [_pairwise_spec(m, w) for w in ("pdist", "cdist") for m in METRICS]
             + [RuleSpec(cd.squareform, _to_matrix, F,
                         name="chainrules.scipy.spatial.distance.squareform[tomatrix]"),
                RuleSpec(cd.squareform, _to_vector, F,
                         name="chainrules.scipy.spatial.distance.squareform[tovector]")])
