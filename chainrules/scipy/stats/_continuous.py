"""Location-scale families of ``chainrules.scipy.stats`` (norm, t, expon,
uniform, laplace, logistic, cauchy, lognorm), in standard form
(``z = (x - loc) / scale``; see _rv.py for the masking and broadcasting).

The formulas are SciPy's, term for term where SciPy's are accurate, so the
values agree to rounding. Differences, each more accurate than
SciPy: ``laplace.logpdf``/``logcdf``/``logsf`` are ``-|z| - log 2`` and
``log1p(-exp(-|z|) / 2)`` (SciPy takes the log of the pdf/cdf, -inf beyond
|z| ~ 745); ``t`` uses an asymptotic series for log(Gamma(a + 1/2) / Gamma(a))
at a >= 25 where SciPy's ``log(poch(a, 1/2))`` loses digits.
"""

import math

import numpy as np

from ._base import INF, apply_where, lazyselect, plain
from ._rv import ContinuousDistribution

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

__all__ = ["norm", "t", "expon", "uniform", "laplace", "logistic", "cauchy", "lognorm"]

_SQRT_2PI = float(np.sqrt(2 * np.pi))
_LOG_SQRT_2PI = float(np.log(_SQRT_2PI))
_LOG_2PI = math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_LOG2 = math.log(2)
_NORM_ENTROPY = 0.5 * (_LOG_2PI + 1)


def _lgamma_ratio_half(a):
    """log(Gamma(a + 1/2) / Gamma(a)): the difference of gammaln for a < 25,
    else the asymptotic series
    (1/2) log a - 1/(8a) + 1/(192a^3) - 1/(640a^5) + 17/(14336a^7),
    accurate to rounding there (the difference of two large gammaln is not)."""
    def direct(a):
        return sc.gammaln(a + 0.5) - sc.gammaln(a)

    def series(a):
        r = 1.0 / a
        r2 = r * r
        return 0.5 * np.log(a) - r * (0.125 - r2 * (1 / 192 - r2 * (1 / 640
                                                                    - r2 * (17 / 14336))))

    return apply_where(plain(a) >= 25, (a,), series, direct, 25.0, 1.0)


# -- normal -------------------------------------------------------------------------------
class norm_gen(ContinuousDistribution):
    """Normal: pdf(z) = exp(-z^2 / 2) / sqrt(2 pi); cdf = ndtr(z)."""

    name = "norm"

    def _pdf(self, z):
        return np.exp(-z ** 2 / 2.0) / _SQRT_2PI

    def _logpdf(self, z):
        return -z ** 2 / 2.0 - _LOG_SQRT_2PI

    def _cdf(self, z):
        return sc.ndtr(z)

    def _logcdf(self, z):
        return sc.log_ndtr(z)

    def _sf(self, z):
        return sc.ndtr(-z)

    def _logsf(self, z):
        return sc.log_ndtr(-z)

    def _entropy(self):
        return _NORM_ENTROPY


norm = norm_gen()


# -- Student t ----------------------------------------------------------------------------
def _t_logpdf(z, df):
    return (_lgamma_ratio_half(0.5 * df) - 0.5 * (np.log(df) + _LOG_PI)
            - (df + 1) / 2 * np.log1p(z * z / df))


def _t_cdf(z, df):
    """Finite df: with I the regularised incomplete beta function,
    cdf(z) = 1/2 + sign(z)/2 I(z^2/(df+z^2); 1/2, df/2) for |z| < 1, and
    h = I(df/(df+z^2); df/2, 1/2)/2, cdf = h (z < 0) or 1 - h (z > 0) beyond;
    near 0 the first order 1/2 + pdf(0) z (the incomplete beta function's
    derivative is singular at 0)."""
    zv = plain(z)

    def near(z, df):
        x2 = z * z
        return 0.5 + 0.5 * np.sign(z) * sc.betainc(0.5, df / 2, x2 / (df + x2))

    def origin(z, df):
        return 0.5 + np.exp(_t_logpdf(0.0 * z, df)) * z

    def far(z, df):
        h = 0.5 * sc.betainc(df / 2, 0.5, df / (df + z * z))
        return np.where(plain(z) > 0, 1.0 - h, h)

    with np.errstate(invalid="ignore"):
        absz = np.abs(zv)
    return apply_where(absz < 1, (z, df),
                       lambda z, df: apply_where(np.abs(plain(z)) < 1e-8, (z, df), origin, near,
                                                 (0.0, 1.0), (0.5, 1.0)),
                       far, (0.5, 1.0), (2.0, 1.0))


class t_gen(ContinuousDistribution):
    """Student's t with ``df`` degrees of freedom (``df = inf``: the normal):
    log pdf(z) = log Gamma((df+1)/2) - log Gamma(df/2) - (log df + log pi)/2
                 - (df+1)/2 log1p(z^2/df)."""

    name = "t"
    shapes = ("df",)

    def _logpdf(self, z, df):
        return apply_where(np.isposinf(plain(df)), (z, df),
                           lambda z, df: norm._logpdf(z), _t_logpdf, 0.0, 1.0)

    def _pdf(self, z, df):
        return apply_where(np.isposinf(plain(df)), (z, df),
                           lambda z, df: norm._pdf(z),
                           lambda z, df: np.exp(_t_logpdf(z, df)), 0.0, 1.0)

    def _cdf(self, z, df):
        return apply_where(np.isposinf(plain(df)), (z, df),
                           lambda z, df: sc.ndtr(z), _t_cdf, 0.0, 1.0)

    def _sf(self, z, df):
        return self._cdf(-z, df)

    def _median(self, df):
        return 0.0

    def _entropy(self, df):
        def regular(df):
            half, half1 = df / 2, (df + 1) / 2
            return (half1 * (sc.digamma(half1) - sc.digamma(half))
                    + np.log(np.sqrt(df) * sc.beta(half, 0.5)))

        def asymptotic(df):
            return (_NORM_ENTROPY + 1 / df + (df ** -2.) / 4 - (df ** -3.) / 6
                    - (df ** -4.) / 8 + 3 / 10 * (df ** -5.) + (df ** -6.) / 4)

        dfv = plain(df)
        with np.errstate(invalid="ignore"):
            conds = [np.isposinf(dfv), dfv >= 100, dfv < 100]
        return lazyselect(conds, [lambda df: np.zeros_like(plain(df)) + _NORM_ENTROPY,
                                  asymptotic, regular], (df,), 0.0, fill=100.0)


t = t_gen()


class expon_gen(ContinuousDistribution):
    """Exponential: pdf(z) = exp(-z) on z >= 0; cdf = -expm1(-z)."""

    name = "expon"
    a, b, z0 = 0.0, INF, 1.0

    def _pdf(self, z):
        return np.exp(-z)

    def _logpdf(self, z):
        return -z

    def _cdf(self, z):
        return -np.expm1(-z)

    def _sf(self, z):
        return np.exp(-z)

    def _logsf(self, z):
        return -z

    def _entropy(self):
        return 1.0

    def _median(self):
        return -math.log1p(-0.5)


expon = expon_gen()


# -- uniform ------------------------------------------------------------------------------
class uniform_gen(ContinuousDistribution):
    """Uniform on [loc, loc + scale]: pdf = 1/scale, cdf(z) = z."""

    name = "uniform"
    a, b, z0 = 0.0, 1.0, 0.5

    def _pdf(self, z):
        return np.ones_like(plain(z))

    def _logpdf(self, z):
        return np.zeros_like(plain(z))

    def _cdf(self, z):
        return z

    def _sf(self, z):
        return 1.0 - z

    def _median(self):
        return 0.5

    def _entropy(self):
        return 0.0


uniform = uniform_gen()


# -- symmetric, heavy and light tails -----------------------------------------------------
class laplace_gen(ContinuousDistribution):
    """Laplace: pdf(z) = exp(-|z|) / 2; cdf = exp(z)/2 (z <= 0), 1 - exp(-z)/2."""

    name = "laplace"

    def _pdf(self, z):
        return 0.5 * np.exp(-np.abs(z))

    def _logpdf(self, z):
        return -np.abs(z) - _LOG2

    def _cdf(self, z):
        e = 0.5 * np.exp(-np.abs(z))
        return np.where(plain(z) > 0, 1.0 - e, e)

    def _sf(self, z):
        return self._cdf(-z)

    def _logcdf(self, z):
        return np.where(plain(z) > 0, np.log1p(-0.5 * np.exp(-np.abs(z))), -np.abs(z) - _LOG2)

    def _logsf(self, z):
        return self._logcdf(-z)

    def _entropy(self):
        return _LOG2 + 1


laplace = laplace_gen()


class logistic_gen(ContinuousDistribution):
    """Logistic: log pdf(z) = -|z| - 2 log1p(exp(-|z|)); cdf = expit(z)."""

    name = "logistic"

    def _logpdf(self, z):
        y = -np.abs(z)
        return y - 2. * np.log1p(np.exp(y))

    def _cdf(self, z):
        return sc.expit(z)

    def _logcdf(self, z):
        return sc.log_expit(z)

    def _sf(self, z):
        return sc.expit(-z)

    def _logsf(self, z):
        return sc.log_expit(-z)

    def _entropy(self):
        return 2.0


logistic = logistic_gen()


class cauchy_gen(ContinuousDistribution):
    """Cauchy: pdf(z) = 1 / (pi (1 + z^2)); cdf = arctan2(1, -z) / pi."""

    name = "cauchy"

    def _pdf(self, z):
        return 1.0 / np.pi / (1.0 + z * z)

    def _logpdf(self, z):
        # log1p(z^2) for |z| < 1; 2 log|z| + log1p(1/z^2) beyond (no overflow)
        absz = np.abs(z)
        return apply_where(plain(absz) < 1, (absz,),
                           lambda u: -_LOG_PI - np.log1p(u ** 2),
                           lambda u: -_LOG_PI - (2 * np.log(u) + np.log1p((1 / u) ** 2)),
                           0.5, 2.0)

    def _cdf(self, z):
        return np.arctan2(1, -z) / np.pi

    def _sf(self, z):
        return np.arctan2(1, z) / np.pi

    def _median(self):
        return 0.0

    def _entropy(self):
        return math.log(4 * math.pi)


cauchy = cauchy_gen()


class lognorm_gen(ContinuousDistribution):
    """Log-normal with shape ``s``: log X ~ N(0, s^2);
    log pdf(z) = -log(z)^2 / (2 s^2) - log(s z sqrt(2 pi)); cdf = ndtr(log(z) / s)."""

    name = "lognorm"
    shapes = ("s",)
    a, b, z0 = 0.0, INF, 1.0
    open_pdf_support = True

    def _logpdf(self, z, s):
        return -np.log(z) ** 2 / (2 * s ** 2) - np.log(s * z * _SQRT_2PI)

    def _cdf(self, z, s):
        return sc.ndtr(np.log(z) / s)

    def _logcdf(self, z, s):
        return sc.log_ndtr(np.log(z) / s)

    def _sf(self, z, s):
        return sc.ndtr(-(np.log(z) / s))

    def _logsf(self, z, s):
        return sc.log_ndtr(-(np.log(z) / s))

    def _entropy(self, s):
        return 0.5 * (1 + _LOG_2PI + 2 * np.log(s))


lognorm = lognorm_gen()
