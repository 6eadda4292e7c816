"""Differentiable ``scipy.spatial.distance``: ``pdist``, ``cdist``,
``squareform`` and the distances between two vectors ``euclidean``,
``sqeuclidean``, ``cosine``, ``correlation``, ``minkowski``, ``cityblock``,
``chebyshev``, ``mahalanobis``, ``seuclidean``, ``braycurtis`` and
``canberra``, with SciPy's signatures, metric names (and their aliases),
keywords and errors; requires SciPy.

On plain inputs every function calls SciPy. On traced inputs the distances
are NumPy calls on the traced values, differentiable to any order with
respect to the points and to the parameters ``w``, ``V`` and ``VI`` (the
exponent ``p`` is a constant). As in SciPy, ``pdist`` and ``cdist`` without
``V`` (seuclidean) or ``VI`` (mahalanobis) compute them from the points, and
the derivative goes through them too. Results keep float32 (SciPy computes
in float64; on plain float32 inputs its result is rounded to float32, so
that both paths agree). ``pdist`` and ``cdist`` form the differences of all
pairs of points: memory is proportional to the number of pairs times the
dimension.

Where a distance is not differentiable (equal points, ties, zero vectors)
the derivative is defined as chainrules' rules define it for the NumPy
calls involved: 0 for ``|x|`` at 0 and for a norm of the zero vector (so
euclidean between equal points has derivative 0, not the nan of
``np.sqrt(np.sum(d * d))``), an even split between tied maxima (chebyshev);
a zero vector gives cosine and correlation SciPy's nan and passes no
derivative. ``chainrules.scipy.spatial._metrics`` lists every case.

Metrics without a derivative (``hamming``, ``jaccard`` and the other
boolean ones) and ``jensenshannon`` raise ``MissingRuleError`` on traced
points; a callable metric is called on each pair of traced rows, as SciPy
does. ``out=`` is refused on traced inputs (``UntraceableError``): the
result would be written into a plain array.
"""

import numpy as np

from chainrules.errors import MissingRuleError, NonDifferentiableInputError, UntraceableError
from chainrules.tracing import is_traced

from ._metrics import ROWS, plain

try:
    import scipy.spatial.distance as _sd
except ImportError:  # pragma: no cover - SciPy is an optional extra
    _sd = None

__all__ = ["pdist", "cdist", "squareform", "braycurtis", "canberra", "chebyshev",
           "cityblock", "correlation", "cosine", "euclidean", "mahalanobis", "minkowski",
           "seuclidean", "sqeuclidean"]

_ALIASES = {
    "chebyshev": ("chebychev", "cheb", "ch", "cheby"),
    "cityblock": ("c", "cb", "cblock"),
    "correlation": ("co",),
    "cosine": ("cos",),
    "euclidean": ("e", "euclid", "eu"),
    "mahalanobis": ("mah", "mahal"),
    "minkowski": ("m", "mi", "pnorm"),
    "seuclidean": ("s", "se"),
    "sqeuclidean": ("sqeuclid", "sqe"),
}
_METRIC_NAMES = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}
_METRIC_NAMES.update({name: name for name in ROWS})

#: SciPy's other metrics (with their aliases): no twin
_NO_TWIN = ("dice hamming matching ha h hamm jaccard jacc ja j jensenshannon js "
            "rogerstanimoto russellrao sokalsneath yule").split()


# -- inputs ----------------------------------------------------------------------------
def _any_traced(*values):
    return any(is_traced(v) for v in values)


def _dtype(*values):
    """The computation's dtype: float32 when every floating input is float32
    (and none is float64), float64 otherwise; integers, bools and lists
    compute in float64, as in SciPy."""
    dts = []
    for v in values:
        if v is None:
            continue
        dt = getattr(v, "dtype", None)
        if dt is not None and dt.kind == "c" and is_traced(v):
            raise NonDifferentiableInputError(
                "chainrules.scipy.spatial.distance differentiates real inputs only (got a "
                f"traced {dt} value); SciPy's distances of complex points are not "
                "holomorphic: pass the real and imaginary parts as separate real coordinates")
        dts.append(dt if dt is not None and dt.kind == "f" else np.dtype(np.float64))
    return np.result_type(*dts) if dts else np.dtype(np.float64)


def _as(v, dt):
    """A traced value as it is; anything else as an array of dtype ``dt`` (so
    that a plain float64 parameter does not promote float32 points)."""
    return v if is_traced(v) else np.asarray(v, dtype=dt)


def _scipy(result, dt):
    """SciPy's result in the dtype the traced computation has (float32 for
    float32 points; float64 results are SciPy's own objects)."""
    if dt == np.float64 or not np.issubdtype(np.result_type(result), np.floating):
        return result
    return result.astype(dt) if isinstance(result, np.ndarray) else dt.type(result)


def _refuse_out(out, name):
    if out is not None:
        raise UntraceableError(
            f"chainrules.scipy.spatial.distance.{name}: out= on traced points would drop "
            "the derivative (the distances would be written into a plain array); leave "
            "out unset and use the returned array")


def _constant(p, name):
    if is_traced(p):
        raise MissingRuleError(f"chainrules.scipy.spatial.distance.{name} differentiates "
                               "the points and w, not the exponent p: pass a constant p "
                               "(chainrules.stop_gradient)")
    if p <= 0:
        raise ValueError("p must be greater than 0")


def _weights(w, n, dt):
    if w is None:
        return None
    w = _as(w, dt)
    if np.ndim(w) != 1:
        raise ValueError("Input vector should be 1-D.")
    if np.shape(w)[0] != n:
        raise ValueError(f"Weights must have same size as input vector. "
                         f"{np.shape(w)[0]} vs. {n}")
    if np.any(plain(w) < 0):
        raise ValueError("Input weights should be all non-negative")
    return w


def _variance(V, n, dt, sample):
    if V is None:
        if sample is None:
            raise ValueError("seuclidean: the variance vector V is required")
        # SciPy's default: the variance of the points, a function of them
        m, data = sample()
        return np.var(data, axis=0, ddof=1) if m > 1 else np.ones(n, dt)
    V = _as(V, dt)
    if np.ndim(V) != 1:
        raise ValueError("Variance vector V must be one-dimensional.")
    if np.shape(V)[0] != n:
        raise ValueError("Variance vector V must be of the same dimension as the vectors "
                         "on which the distances are computed.")
    return V


def _inverse_covariance(VI, n, dt, sample):
    if VI is None:
        if sample is None:
            raise ValueError("mahalanobis: the inverse covariance matrix VI is required")
        m, data = sample()
        if m <= n:
            raise ValueError(
                f"The number of observations ({m}) is too small; the covariance matrix "
                f"is singular. For observations with {n} dimensions, at least {n + 1} "
                "observations are required.")
        # SciPy's default: inv(cov(X.T)).T, a function of the points (in the
        # points' precision: np.cov computes float32 in float64)
        return np.linalg.inv(np.atleast_2d(np.cov(data.T, dtype=dt))).T
    VI = _as(VI, dt)
    if np.shape(VI) != (n, n):
        raise ValueError(f"VI must be a {n} x {n} matrix, not of shape {np.shape(VI)}")
    return VI


def _params(name, kwargs, n, dt, sample=None):
    """The keyword arguments of metric ``name`` validated, in dtype ``dt``,
    with SciPy's defaults; ``sample() -> (rows, points)`` gives the points
    the defaults of V and VI are computed from."""
    accepted = ROWS[name][1] + (("centered",) if name == "correlation" else ())
    extra = sorted(set(kwargs) - set(accepted))
    if extra:
        raise TypeError(f"metric '{name}' takes no keyword argument {', '.join(extra)} "
                        f"(it takes {', '.join(accepted)})")
    out = {}
    if "w" in accepted:
        out["w"] = _weights(kwargs.get("w"), n, dt)
    if name == "minkowski":
        out["p"] = kwargs.get("p", 2.0)
        _constant(out["p"], name)
    if "centered" in kwargs:
        out["centered"] = kwargs["centered"]
    if name == "seuclidean":
        out["V"] = _variance(kwargs.get("V"), n, dt, sample)
    if name == "mahalanobis":
        out["VI"] = _inverse_covariance(kwargs.get("VI"), n, dt, sample)
    return out


def _metric(metric):
    """The canonical name of a metric given by name or as one of SciPy's (or
    these) distance functions, or None for any other callable."""
    if callable(metric):
        name = getattr(metric, "__name__", None)
        if name in ROWS and metric in (getattr(_sd, name), globals().get(name)):
            return name
        return None
    if not isinstance(metric, str):
        raise TypeError("2nd argument metric must be a string identifier or a function.")
    mstr = metric.lower()
    if mstr in _METRIC_NAMES:
        return _METRIC_NAMES[mstr]
    if mstr in _NO_TWIN:
        raise MissingRuleError(
            f"chainrules.scipy.spatial.distance: the metric '{metric}' has no "
            f"differentiable version (the differentiable ones are {', '.join(sorted(ROWS))});"
            " the boolean metrics are piecewise constant: compute them on "
            "chainrules.stop_gradient(X)")
    raise ValueError(f"Unknown Distance Metric: {mstr}")


def _pairs(metric, left, right, kwargs, shape, dt):
    """A callable metric on each pair of rows, as SciPy calls it."""
    values = [metric(a, b, **kwargs) for a, b in zip(left, right)]
    if not values:
        return np.zeros(shape, dt)
    return np.reshape(np.stack(values), shape)


# -- pdist, cdist, squareform ----------------------------------------------------------
def pdist(X, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.pdist``: the condensed distances between the
    rows of ``X`` (pairs ``i < j`` in row-major order)."""
    if not _any_traced(X, out, *kwargs.values()):
        res = _sd.pdist(X, metric, out=out, **kwargs)
        return res if out is not None else _scipy(res, _dtype(X))
    _refuse_out(out, "pdist")
    if np.ndim(X) != 2:
        raise ValueError(f"A 2-dimensional array must be passed. (Shape was {np.shape(X)}).")
    dt = _dtype(X, *[v for v in kwargs.values() if is_traced(v)])
    X = _as(X, dt)
    m, n = np.shape(X)
    i, j = np.triu_indices(m, 1)
    name = _metric(metric)
    if name is None:
        return _pairs(metric, [X[k] for k in i], [X[k] for k in j], kwargs, (len(i),), dt)
    params = _params(name, kwargs, n, dt, lambda: (m, X))
    return ROWS[name][0](X[i], X[j], **params)


def cdist(XA, XB, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.cdist``: the distances between each row of
    ``XA`` and each row of ``XB``, an ``(mA, mB)`` array."""
    if not _any_traced(XA, XB, out, *kwargs.values()):
        res = _sd.cdist(XA, XB, metric, out=out, **kwargs)
        return res if out is not None else _scipy(res, _dtype(XA, XB))
    _refuse_out(out, "cdist")
    if np.ndim(XA) != 2:
        raise ValueError("XA must be a 2-dimensional array.")
    if np.ndim(XB) != 2:
        raise ValueError("XB must be a 2-dimensional array.")
    if np.shape(XA)[1] != np.shape(XB)[1]:
        raise ValueError("XA and XB must have the same number of columns "
                         "(i.e. feature dimension.)")
    dt = _dtype(XA, XB, *[v for v in kwargs.values() if is_traced(v)])
    XA, XB = _as(XA, dt), _as(XB, dt)
    (mA, n), mB = np.shape(XA), np.shape(XB)[0]
    name = _metric(metric)
    if name is None:
        left = [XA[a] for a in range(mA) for _ in range(mB)]
        right = [XB[b] for _ in range(mA) for b in range(mB)]
        return _pairs(metric, left, right, kwargs, (mA, mB), dt)
    both = lambda: (mA + mB, np.concatenate([XA, XB], axis=0))  # noqa: E731
    params = _params(name, kwargs, n, dt, both)
    return ROWS[name][0](XA[:, None, :], XB[None, :, :], **params)


def squareform(X, force="no", checks=True):
    """``scipy.spatial.distance.squareform``: a condensed distance vector to
    the symmetric matrix with zero diagonal, and a square matrix to the
    vector of its upper triangle (the lower triangle is not read, so its
    derivative is 0; ``checks`` tests the plain values for symmetry). As
    in SciPy, a 0-d ``X`` is the condensed vector of one distance."""
    if not is_traced(X):
        return _sd.squareform(X, force=force, checks=checks)
    if np.ndim(X) == 0:   # SciPy reads X with np.ascontiguousarray: at least 1-d
        X = np.reshape(X, (1,))
    s = np.shape(X)
    if force.lower() == "tomatrix" and len(s) != 1:
        raise ValueError("Forcing 'tomatrix' but input X is not a distance vector.")
    if force.lower() == "tovector" and len(s) != 2:
        raise ValueError("Forcing 'tovector' but input X is not a distance matrix.")
    if len(s) == 1:
        if s[0] == 0:
            return np.zeros((1, 1), dtype=X.dtype)
        d = int(np.ceil(np.sqrt(s[0] * 2)))
        if d * (d - 1) != s[0] * 2:
            raise ValueError("Incompatible vector size. It must be a binomial coefficient "
                             "n choose 2 for some integer n >= 2.")
        # each matrix entry gathers its element of [0, X...]: the diagonal the 0
        index = np.zeros((d, d), dtype=np.intp)
        i, j = np.triu_indices(d, 1)
        index[i, j] = index[j, i] = np.arange(1, s[0] + 1)
        return np.concatenate([np.zeros(1, X.dtype), X])[index]
    if len(s) == 2:
        if s[0] != s[1]:
            raise ValueError("The matrix argument must be square.")
        if checks:
            _sd.is_valid_dm(plain(X), throw=True, name="X")
        i, j = np.triu_indices(s[0], 1)
        return X[i, j]
    raise ValueError("The first argument must be one or two dimensional array. "
                     f"A {len(s)}-dimensional array is not permitted")


# -- distances between two vectors -----------------------------------------------------
def _between(name, u, v, **params):
    """``name(u, v, **params)``: SciPy's on plain inputs, the row function of
    the metric on traced ones."""
    if not _any_traced(u, v, *params.values()):
        return _scipy(getattr(_sd, name)(u, v, **params), _dtype(u, v))
    dt = _dtype(u, v, *[p for p in params.values() if is_traced(p)])
    u, v = _as(u, dt), _as(v, dt)
    if np.ndim(u) != 1 or np.ndim(v) != 1:
        raise ValueError("Input vector should be 1-D.")
    if np.shape(u) != np.shape(v):
        raise ValueError(f"u and v must have the same length, not {np.shape(u)[0]} and "
                         f"{np.shape(v)[0]}")
    given = {k: p for k, p in params.items() if p is not None}
    kw = _params(name, given, np.shape(u)[0], dt)
    return ROWS[name][0](u, v, **kw)


def minkowski(u, v, p=2, w=None):
    """``scipy.spatial.distance.minkowski``: ``(sum w_i |u_i - v_i|**p)**(1/p)``
    (p > 0, inf included; p is a constant)."""
    return _between("minkowski", u, v, p=p, w=w)


def euclidean(u, v, w=None):
    """``scipy.spatial.distance.euclidean`` (derivative 0 where ``u == v``)."""
    return _between("euclidean", u, v, w=w)


def sqeuclidean(u, v, w=None):
    """``scipy.spatial.distance.sqeuclidean``."""
    return _between("sqeuclidean", u, v, w=w)


def seuclidean(u, v, V):
    """``scipy.spatial.distance.seuclidean``: euclidean with weights ``1 / V``
    (``V`` differentiable too)."""
    return _between("seuclidean", u, v, V=V)


def mahalanobis(u, v, VI):
    """``scipy.spatial.distance.mahalanobis``: ``sqrt((u-v) VI (u-v))``
    (``VI`` differentiable too; derivative 0 where ``u == v``)."""
    return _between("mahalanobis", u, v, VI=VI)


def cityblock(u, v, w=None):
    """``scipy.spatial.distance.cityblock``: ``sum w_i |u_i - v_i|``."""
    return _between("cityblock", u, v, w=w)


def chebyshev(u, v, w=None):
    """``scipy.spatial.distance.chebyshev``: ``max |u_i - v_i|`` over the
    coordinates with positive weight (tied maxima share the derivative)."""
    return _between("chebyshev", u, v, w=w)


def correlation(u, v, w=None, centered=True):
    """``scipy.spatial.distance.correlation``: one minus the (weighted)
    correlation, clipped to [0, 2]."""
    if centered is True:
        return _between("correlation", u, v, w=w)
    return _between("correlation", u, v, w=w, centered=centered)


def cosine(u, v, w=None):
    """``scipy.spatial.distance.cosine``: the uncentered correlation distance
    (nan for a zero vector, as in SciPy, with no derivative)."""
    return _between("cosine", u, v, w=w)


def braycurtis(u, v, w=None):
    """``scipy.spatial.distance.braycurtis``: ``sum |u - v| / sum |u + v|``."""
    return _between("braycurtis", u, v, w=w)


def canberra(u, v, w=None):
    """``scipy.spatial.distance.canberra``: ``sum |u_i - v_i| / (|u_i| + |v_i|)``
    (0/0 terms left out, as in SciPy)."""
    return _between("canberra", u, v, w=w)
