"""``rv_continuous`` and ``rv_discrete`` for the twins: the public methods
(pdf, logpdf, cdf, ... with loc, scale, masks and broadcasting as SciPy's)
around each distribution's standard-form maths."""

import numpy as np

from chainrules.tracing import untraced

from ._base import (INF, NAN, Base, apply_where, arg, assemble, broadcast_shape, finish,
                    log_of, plain, safe, target_dtype)

__all__ = ["ContinuousDistribution", "DiscreteDistribution"]


def _quiet():
    """As SciPy: no warnings for the infinities and nans of legitimate values
    (log of a cdf that underflows, inf - inf at x = inf); the masks keep them
    out of every derivative."""
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


# -- continuous ----------------------------------------------------------------------------
class ContinuousDistribution(Base):
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
        with _quiet():
            val = self._pdf(self._at(c, inside), *c.shapes) / c.scale
        return finish(assemble(inside, val, np.where(c.bad, NAN, 0.0)), c.dtype, c.shape)

    def logpdf(self, x, *args, **kwds):
        """Log of the density: ``_logpdf((x - loc) / scale) - log(scale)``."""
        c = self._setup(x, args, kwds, "logpdf")
        inside = self._pdf_inside(c)
        with _quiet():
            val = self._logpdf(self._at(c, inside), *c.shapes) - log_of(c.scale)
        return finish(assemble(inside, val, np.where(c.bad, NAN, -INF)), c.dtype, c.shape)

    def _tail(self, x, args, kwds, method, f, edge_lo, edge_hi):
        c = self._setup(x, args, kwds, method)
        inside, above = self._cdf_masks(c)
        with _quiet():
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
        with _quiet():
            val = self._entropy(*safe_shapes) + log_of(safe(scale, scale_ok, 1.0))
        shape = broadcast_shape(loc, scale, *shapes)
        return finish(assemble(good, val, np.full(shape, NAN)),
                      target_dtype(loc, scale, *shapes), shape)


class _Call:
    __slots__ = ("dtype", "shape", "shapes", "scale", "z", "zv", "good", "bad", "k")


# -- discrete ------------------------------------------------------------------------------
class DiscreteDistribution(Base):
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
        # 0.5: inside every domain here (a probability, a mean, a count)
        c.shapes = tuple(safe(s, ok, 0.5) for s, ok in zip(shapes, oks))
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
        with _quiet():
            val = np.clip(self._pmf(self._kat(c, inside), *c.shapes), 0.0, 1.0)
        return finish(assemble(inside, val, np.where(c.bad, NAN, 0.0)), c.dtype, c.shape)

    def logpmf(self, k, *args, **kwds):
        """Log of the probability mass (-inf off the support)."""
        c = self._setup(k, args, kwds, "logpmf")
        a, b = c.zv
        with np.errstate(invalid="ignore"):
            inside = c.good & (c.k >= a) & (c.k <= b) & (np.floor(c.k) == c.k)
        with _quiet():
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
        with _quiet():
            val = np.clip(self._cdf(self._kat(c, inside), *c.shapes), 0.0, 1.0)
        fill = np.where(c.bad, NAN, np.where(above & ~np.isneginf(c.k), 1.0, 0.0))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def logcdf(self, k, *args, **kwds):
        """log P(K <= k)."""
        c = self._setup(k, args, kwds, "logcdf")
        inside, above, _ = self._masks(c)
        with _quiet():
            val = self._logcdf(self._kat(c, inside), *c.shapes)
        # as SciPy: k at or above the support's end gives 0 even for bad parameters
        fill = np.where(above, 0.0, np.where(c.bad, NAN, -INF))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def sf(self, k, *args, **kwds):
        """P(K > k) = 1 - cdf."""
        c = self._setup(k, args, kwds, "sf")
        inside, _, below = self._masks(c)
        inside = inside & np.isfinite(c.k)
        with _quiet():
            val = np.clip(self._sf(self._kat(c, inside), *c.shapes), 0.0, 1.0)
        fill = np.where(c.bad, NAN, np.where(c.good & (below | np.isneginf(c.k)), 1.0, 0.0))
        return finish(assemble(inside, val, fill), c.dtype, c.shape)

    def logsf(self, k, *args, **kwds):
        """log P(K > k)."""
        c = self._setup(k, args, kwds, "logsf")
        inside, _, below = self._masks(c)
        with _quiet():
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
        with _quiet():
            val = self._entropy(*[safe(s, ok, 0.5) for s, ok in zip(shapes, oks)])
        shape = broadcast_shape(loc, *shapes)
        return finish(assemble(good, val, np.full(shape, NAN)), target_dtype(*shapes), shape)
