"""The machinery shared by the ``chainrules.scipy.stats`` distributions.

A distribution is written in its standard form (``loc=0, scale=1``), as in
SciPy: ``_logpdf(z, *shapes)``, ``_cdf(z, *shapes)``, ... on
``z = (x - loc) / scale``. The public methods wrap that maths the way
``scipy.stats.rv_continuous`` / ``rv_discrete`` do: parameters outside their
domain give nan, points outside the support give 0 (pdf, cdf), -inf (logpdf,
logcdf) or 1 (cdf above the support), and everything broadcasts.

Every branch is an ``np.where`` on masks computed from the plain values, and
every argument is made safe before the maths runs on it ("double where"):
``np.where(mask, f(x), c)`` differentiates ``f`` at the masked points too,
so ``f`` gets ``np.where(mask, x, inside_point)``, never a value at which its
derivative is infinite or nan. Gradients inside the support therefore stay
finite when other elements are outside it.

Dtypes follow the inputs (float32 stays float32; SciPy returns float64);
0-d results are NumPy scalars, as in SciPy.
"""

import inspect
import math

import numpy as np

from chainrules.errors import UntraceableError
from chainrules.rules._util import array_value
from chainrules.tracing import is_traced, untraced

__all__ = ["ContinuousDistribution", "DiscreteDistribution", "Frozen", "apply_where", "arg",
           "safe", "finish", "lazyselect", "log_of", "plain", "refuse_traced", "target_dtype"]

NAN = float("nan")
INF = float("inf")


def arg(v):
    """Lists and tuples as arrays; everything else (traced values, arrays of
    any library, Python scalars, which NumPy 2 keeps weakly typed) as is."""
    return np.asarray(v) if isinstance(v, (list, tuple)) else v


def plain(v):
    """The value of ``v`` without its trace (masks are computed on it)."""
    return array_value(v) if hasattr(v, "shape") or is_traced(v) else v


def _all_true(mask):
    if isinstance(mask, (bool, np.bool_)):
        return bool(mask)
    return type(mask) is np.ndarray and bool(mask.all())


def _all_false(mask):
    if isinstance(mask, (bool, np.bool_)):
        return not mask
    return type(mask) is np.ndarray and not mask.any()


def safe(v, ok, fill):
    """``v`` where ``ok``, ``fill`` elsewhere: the inner ``where`` of the double
    where (nothing is recorded when every element is ``ok``)."""
    if _all_true(ok):
        return v
    return np.where(ok, v, fill)


def apply_where(cond, args, f1, f2, fill1=1.0, fill2=1.0):
    """``f1(*args)`` where the plain mask ``cond`` holds, ``f2(*args)``
    elsewhere; each branch sees its arguments made safe (``fill1``/``fill2``,
    a value or one per argument, at the other branch's points), so neither
    leaks a nan derivative. A
    branch that no element takes is not evaluated."""
    if _all_true(cond):
        return f1(*args)
    if _all_false(cond):
        return f2(*args)
    other = np.logical_not(cond)
    n = len(args)
    fill1 = fill1 if isinstance(fill1, tuple) else (fill1,) * n
    fill2 = fill2 if isinstance(fill2, tuple) else (fill2,) * n
    return np.where(cond, f1(*[safe(a, cond, f) for a, f in zip(args, fill1)]),
                    f2(*[safe(a, other, f) for a, f in zip(args, fill2)]))


def lazyselect(conds, funcs, args, default, fill=1.0):
    """``np.select(conds, [f(*args) for f in funcs], default)`` evaluating only
    the branches some element takes, each on arguments made safe (``fill``)
    at the points it does not own."""
    out = default
    for cond, f in reversed(list(zip(conds, funcs))):
        if _all_false(cond):
            continue
        val = f(*[safe(a, cond, fill) for a in args])
        out = val if _all_true(cond) else np.where(cond, val, out)
    return out


def log_of(v):
    """``log(v)``, a Python float for Python scalars (weakly typed)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
        return math.log(v)
    return np.log(v)


def target_dtype(*values):
    """The floating dtype of the result: NumPy's promotion of the arguments
    with Python scalars weak (float32 arrays and Python floats give float32)."""
    kinds = []
    for v in values:
        if v is None:
            continue
        if is_traced(v) or hasattr(v, "dtype"):
            kinds.append(np.dtype(plain(v).dtype))
        else:
            kinds.append(v)
    dt = np.result_type(*kinds, 0.0)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def finish(out, dtype, shape=None):
    """Cast to ``dtype``, broadcast to ``shape`` and return 0-d plain results
    as NumPy scalars (as SciPy does)."""
    if not (is_traced(out) or hasattr(out, "dtype")):
        out = np.asarray(out, dtype)
    if shape is not None and np.shape(plain(out)) != tuple(shape):
        out = np.broadcast_to(out, shape)
    if plain(out).dtype != dtype:
        out = out.astype(dtype)
    if type(out) is np.ndarray and out.ndim == 0:
        return out[()]
    return out


def assemble(inside, val, fill):
    """``val`` where ``inside``, the plain array ``fill`` elsewhere (the outer
    ``where``)."""
    if _all_true(inside):
        return val
    return np.where(inside, val, fill)


def broadcast_shape(*values):
    return np.broadcast_shapes(*(np.shape(plain(v)) for v in values if v is not None))


def refuse_traced(where, values, how):
    """Sampling has no derivative: raise when a parameter is traced."""
    from chainrules import pytree

    leaves = pytree.flatten(list(values))[0] if values else []
    if any(is_traced(v) for v in leaves):
        raise UntraceableError(
            f"{where} draws random samples, which carry no derivative with respect to "
            f"the distribution's parameters; use reparameterised sampling instead: {how}")


class _Base:
    """Signature binding, frozen objects and ``rvs`` for one distribution."""

    name = ""
    shapes = ()
    _extra = ()          # (name, default) after the shapes: loc, scale
    methods = ()
    reparam = "draw the noise with plain parameters and transform it"

    def __init__(self):
        params = [inspect.Parameter(s, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                  for s in self.shapes]
        params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                   for n, d in self._extra]
        self._sig = inspect.Signature(params)

    def _bind(self, args, kwds, method):
        try:
            b = self._sig.bind(*args, **kwds)
        except TypeError as e:
            raise TypeError(f"chainrules.scipy.stats.{self.name}.{method}(): {e}") from None
        b.apply_defaults()
        vals = b.arguments
        shapes = tuple(arg(vals[s]) for s in self.shapes)
        return shapes, tuple(arg(vals[n]) for n, _ in self._extra)

    def __call__(self, *args, **kwds):
        """The frozen distribution: ``norm(loc, scale).logpdf(x)``."""
        self._bind(args, kwds, "__call__")
        return Frozen(self, args, kwds)

    def rvs(self, *args, **kwds):
        """``scipy.stats.<dist>.rvs`` on plain parameters (not differentiated)."""
        refuse_traced(f"chainrules.scipy.stats.{self.name}.rvs",
                      list(args) + list(kwds.values()), self.reparam)
        import scipy.stats

        return getattr(scipy.stats, self.name).rvs(*args, **kwds)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"chainrules.scipy.stats.{self.name} has no differentiable {name!r}; "
            f"available: {', '.join(self.methods + ('rvs',))}")

    def __repr__(self):
        return f"<chainrules.scipy.stats.{self.name}>"


class Frozen:
    """A distribution with its parameters fixed, as ``scipy.stats.norm(0, 2)``."""

    def __init__(self, dist, args, kwds):
        self.dist, self.args, self.kwds = dist, tuple(args), dict(kwds)

    def __getattr__(self, name):
        if name.startswith("_") or name not in self.dist.methods + ("rvs",):
            raise AttributeError(name)
        method = getattr(self.dist, name)
        if name == "entropy":
            return lambda: method(*self.args, **self.kwds)
        if name == "rvs":
            return lambda size=None, random_state=None: method(
                *self.args, size=size, random_state=random_state, **self.kwds)
        return lambda x: method(x, *self.args, **self.kwds)

    def __repr__(self):
        return f"<frozen chainrules.scipy.stats.{self.dist.name}>"


# -- continuous ----------------------------------------------------------------------------
class ContinuousDistribution(_Base):
    """A twin of ``scipy.stats.rv_continuous``: subclasses give the standard
    form's maths (``_logpdf``/``_pdf``, ``_cdf``, ``_sf``, ... and
    ``_entropy``), its support ``(a, b)``, an interior point ``z0`` of it
    and whether the pdf's support is open."""

    _extra = (("loc", 0), ("scale", 1))
    methods = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "entropy")
    a, b = -INF, INF
    z0 = 0.0
    open_pdf_support = False
    reparam = ("loc + scale * eps, with eps drawn from the standard distribution "
               "(scipy.stats.<dist>.rvs(size=...) with loc=0, scale=1)")

    def __init__(self):
        super().__init__()
        self.reparam = self.reparam.replace("<dist>", self.name)

    def _shape_ok(self, *shapes):
        """One mask per shape parameter: where it is inside its domain."""
        return [s > 0 for s in shapes]

    # default maths, as in SciPy
    def _pdf(self, z, *s):
        return np.exp(self._logpdf(z, *s))

    def _logpdf(self, z, *s):
        return np.log(self._pdf(z, *s))

    def _sf(self, z, *s):
        return 1.0 - self._cdf(z, *s)

    def _median(self, *s):
        """The standard form's median, on plain shape values (SciPy's ppf)."""
        import scipy.stats

        return getattr(scipy.stats, self.name).ppf(0.5, *s)

    def _logcdf(self, z, *s):
        # as SciPy: log(cdf) below the median, log1p(-sf) above it
        fills = (self.z0,) + (1.0,) * len(s)
        return apply_where(plain(z) < self._median(*[plain(v) for v in s]), (z,) + s,
                           lambda z, *s: np.log(self._cdf(z, *s)),
                           lambda z, *s: np.log1p(-self._sf(z, *s)), fills, fills)

    def _logsf(self, z, *s):
        # as SciPy: log(sf) above the median, log1p(-cdf) below it
        fills = (self.z0,) + (1.0,) * len(s)
        return apply_where(plain(z) > self._median(*[plain(v) for v in s]), (z,) + s,
                           lambda z, *s: np.log(self._sf(z, *s)),
                           lambda z, *s: np.log1p(-self._cdf(z, *s)), fills, fills)

    def _setup(self, x, args, kwds, method):
        shapes, (loc, scale) = self._bind(args, kwds, method)
        x = arg(x)
        pshapes = [plain(s) for s in shapes]
        oks = self._shape_ok(*pshapes)
        pscale = plain(scale)
        scale_ok = pscale > 0
        good = scale_ok
        for ok in oks:
            good = good & ok
        c = _Call()
        c.dtype = target_dtype(x, loc, scale, *shapes)
        c.shape = broadcast_shape(x, loc, scale, *shapes)
        c.shapes = tuple(safe(s, ok, 1.0) for s, ok in zip(shapes, oks))
        c.scale = safe(scale, scale_ok, 1.0)
        c.z = (x - loc) / c.scale
        c.zv = plain(c.z)
        c.good = good
        c.bad = np.logical_not(good) | np.isnan(c.zv)
        return c

    def _at(self, c, inside):
        return safe(c.z, inside, self.z0)

    def _pdf_inside(self, c):
        zv = c.zv
        with np.errstate(invalid="ignore"):
            if self.open_pdf_support:
                return c.good & (self.a < zv) & (zv < self.b)
            return c.good & (self.a <= zv) & (zv <= self.b)

    def _cdf_masks(self, c):
        zv = c.zv
        with np.errstate(invalid="ignore"):
            inside = c.good & (self.a < zv) & (zv < self.b)
            return inside, c.good & (zv >= self.b)

    def pdf(self, x, *args, **kwds):
        """Probability density at ``x``: ``_pdf((x - loc) / scale) / scale``."""
        c = self._setup(x, args, kwds, "pdf")
        inside = self._pdf_inside(c)
        val = self._pdf(self._at(c, inside), *c.shapes) / c.scale
        return finish(assemble(inside, val, np.where(c.bad, NAN, 0.0)), c.dtype, c.shape)

    def logpdf(self, x, *args, **kwds):
        """Log of the density: ``_logpdf((x - loc) / scale) - log(scale)``."""
        c = self._setup(x, args, kwds, "logpdf")
        inside = self._pdf_inside(c)
        val = self._logpdf(self._at(c, inside), *c.shapes) - log_of(c.scale)
        return finish(assemble(inside, val, np.where(c.bad, NAN, -INF)), c.dtype, c.shape)

    def _tail(self, x, args, kwds, method, f, edge_lo, edge_hi):
        c = self._setup(x, args, kwds, method)
        inside, above = self._cdf_masks(c)
        val = f(self._at(c, inside), *c.shapes)
        fill = np.where(c.bad, NAN, np.where(above, edge_hi, edge_lo))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def cdf(self, x, *args, **kwds):
        """Cumulative distribution function P(X <= x)."""
        return self._tail(x, args, kwds, "cdf", self._cdf, 0.0, 1.0)

    def logcdf(self, x, *args, **kwds):
        """log P(X <= x)."""
        return self._tail(x, args, kwds, "logcdf", self._logcdf, -INF, 0.0)

    def sf(self, x, *args, **kwds):
        """Survival function P(X > x) = 1 - cdf."""
        return self._tail(x, args, kwds, "sf", self._sf, 1.0, 0.0)

    def logsf(self, x, *args, **kwds):
        """log P(X > x)."""
        return self._tail(x, args, kwds, "logsf", self._logsf, 0.0, -INF)

    def entropy(self, *args, **kwds):
        """Differential entropy: ``_entropy(*shapes) + log(scale)``."""
        shapes, (loc, scale) = self._bind(args, kwds, "entropy")
        pshapes = [plain(s) for s in shapes]
        oks = self._shape_ok(*pshapes)
        pscale, ploc = plain(scale), plain(loc)
        scale_ok = pscale > 0
        good = scale_ok & (ploc == ploc)
        for ok in oks:
            good = good & ok
        safe_shapes = [safe(s, ok, 1.0) for s, ok in zip(shapes, oks)]
        val = self._entropy(*safe_shapes) + log_of(safe(scale, scale_ok, 1.0))
        shape = broadcast_shape(loc, scale, *shapes)
        return finish(assemble(good, val, np.full(shape, NAN)),
                      target_dtype(loc, scale, *shapes), shape)


class _Call:
    __slots__ = ("dtype", "shape", "shapes", "scale", "z", "zv", "good", "bad", "k")


# -- discrete ------------------------------------------------------------------------------
class DiscreteDistribution(_Base):
    """A twin of ``scipy.stats.rv_discrete``: ``k`` (and integer shapes such as
    binom's ``n``) are constants; the continuous parameters are differentiated.
    Subclasses give ``_logpmf``/``_pmf``, ``_cdf``, ``_sf`` on ``floor(k)``,
    the support ``_support(*shapes)`` and ``_shape_ok``."""

    _extra = (("loc", 0),)
    methods = ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf")
    integer_shapes = ()   # names of the shapes held constant (binom n)
    k0 = 0.0              # a point of the support
    reparam = ("there is no reparameterisation of a discrete draw; use a score-function "
               "(REINFORCE) estimator or a continuous relaxation")

    def _support(self, *shapes):
        return 0, INF

    def _pmf(self, k, *s):
        return np.exp(self._logpmf(k, *s))

    def _logcdf(self, k, *s):
        return np.log(self._cdf(k, *s))

    def _logsf(self, k, *s):
        return np.log(self._sf(k, *s))

    def _setup(self, k, args, kwds, method):
        shapes, (loc,) = self._bind(args, kwds, method)
        shapes = tuple(untraced(s) if n in self.integer_shapes else s
                       for n, s in zip(self.shapes, shapes))
        pshapes = [plain(s) for s in shapes]
        oks = self._shape_ok(*pshapes)
        good = True
        for ok in oks:
            good = good & ok
        c = _Call()
        cont = [s for n, s in zip(self.shapes, shapes) if n not in self.integer_shapes]
        c.dtype = target_dtype(*cont) if cont else np.dtype(np.float64)
        c.shape = broadcast_shape(plain(k), plain(loc), *shapes)
        c.shapes = tuple(safe(s, ok, 1.0) for s, ok in zip(shapes, oks))
        c.k = (plain(arg(k)) - plain(loc)) + 0.0   # a float constant
        c.good = good
        c.bad = np.logical_not(good) | np.isnan(c.k)
        c.zv = self._support(*pshapes)
        return c

    def _kat(self, c, inside):
        return np.where(inside, np.floor(c.k), self.k0)

    def pmf(self, k, *args, **kwds):
        """Probability mass at ``k`` (0 off the integers of the support)."""
        c = self._setup(k, args, kwds, "pmf")
        a, b = c.zv
        with np.errstate(invalid="ignore"):
            inside = c.good & (c.k >= a) & (c.k <= b) & (np.floor(c.k) == c.k)
        val = np.clip(self._pmf(self._kat(c, inside), *c.shapes), 0.0, 1.0)
        return finish(assemble(inside, val, np.where(c.bad, NAN, 0.0)), c.dtype, c.shape)

    def logpmf(self, k, *args, **kwds):
        """Log of the probability mass (-inf off the support)."""
        c = self._setup(k, args, kwds, "logpmf")
        a, b = c.zv
        with np.errstate(invalid="ignore"):
            inside = c.good & (c.k >= a) & (c.k <= b) & (np.floor(c.k) == c.k)
        val = self._logpmf(self._kat(c, inside), *c.shapes)
        return finish(assemble(inside, val, np.where(c.bad, NAN, -INF)), c.dtype, c.shape)

    def _masks(self, c):
        a, b = c.zv
        with np.errstate(invalid="ignore"):
            inside = c.good & (c.k >= a) & (c.k < b)
            return inside, c.k >= b, c.k < a

    def cdf(self, k, *args, **kwds):
        """P(K <= k), a step function of ``k``."""
        c = self._setup(k, args, kwds, "cdf")
        inside, above, _ = self._masks(c)
        inside = inside & np.isfinite(c.k)
        val = np.clip(self._cdf(self._kat(c, inside), *c.shapes), 0.0, 1.0)
        fill = np.where(c.bad, NAN, np.where(above & ~np.isneginf(c.k), 1.0, 0.0))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def logcdf(self, k, *args, **kwds):
        """log P(K <= k)."""
        c = self._setup(k, args, kwds, "logcdf")
        inside, above, _ = self._masks(c)
        val = self._logcdf(self._kat(c, inside), *c.shapes)
        # as SciPy: k at or above the support's end gives 0 even for bad parameters
        fill = np.where(above, 0.0, np.where(c.bad, NAN, -INF))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def sf(self, k, *args, **kwds):
        """P(K > k) = 1 - cdf."""
        c = self._setup(k, args, kwds, "sf")
        inside, _, below = self._masks(c)
        inside = inside & np.isfinite(c.k)
        val = np.clip(self._sf(self._kat(c, inside), *c.shapes), 0.0, 1.0)
        fill = np.where(c.bad, NAN, np.where(c.good & (below | np.isneginf(c.k)), 1.0, 0.0))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def logsf(self, k, *args, **kwds):
        """log P(K > k)."""
        c = self._setup(k, args, kwds, "logsf")
        inside, _, below = self._masks(c)
        val = self._logsf(self._kat(c, inside), *c.shapes)
        fill = np.where(c.bad, NAN, np.where(c.good & below, 0.0, -INF))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def closed_form_entropy(self, *args, **kwds):
        """Entropy -sum_k pmf(k) log pmf(k), for the distributions with a closed
        form (their ``entropy``)."""
        shapes, (loc,) = self._bind(args, kwds, "entropy")
        oks = self._shape_ok(*[plain(s) for s in shapes])
        ploc = plain(loc)
        good = ploc == ploc
        for ok in oks:
            good = good & ok
        val = self._entropy(*[safe(s, ok, 0.5) for s, ok in zip(shapes, oks)])
        shape = broadcast_shape(loc, *shapes)
        return finish(assemble(good, val, np.full(shape, NAN)), target_dtype(*shapes), shape)
