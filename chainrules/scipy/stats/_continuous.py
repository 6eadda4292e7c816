"""Continuous distributions of ``chainrules.scipy.stats``, in standard form
(``z = (x - loc) / scale``; see _base.py for the masking and broadcasting).

The formulas are SciPy's, term for term where SciPy's are accurate, so the
values agree to rounding; the cdfs of the gamma and beta families go through
``gammainc``/``gammaincc``/``betainc``. Differences, each more accurate than
SciPy: ``laplace.logpdf``/``logcdf``/``logsf`` are ``-|z| - log 2`` and
``log1p(-exp(-|z|) / 2)`` (SciPy takes the log of the pdf/cdf, -inf beyond
|z| ~ 745); ``t`` uses an asymptotic series for log(Gamma(a + 1/2) / Gamma(a))
at a >= 25 where SciPy's ``log(poch(a, 1/2))`` loses digits.
"""

import math

import numpy as np

from ._base import INF, ContinuousDistribution, apply_where, lazyselect, plain

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

__all__ = ["norm", "t", "gamma", "beta", "chi2", "expon", "laplace", "logistic", "cauchy",
           "lognorm", "uniform", "invgamma"]

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


# -- gamma family -------------------------------------------------------------------------
class gamma_gen(ContinuousDistribution):
    """Gamma with shape ``a``: log pdf(z) = (a-1) log z - z - log Gamma(a);
    cdf = gammainc(a, z), sf = gammaincc(a, z)."""

    name = "gamma"
    shapes = ("a",)
    a, b, z0 = 0.0, INF, 1.0

    def _logpdf(self, z, a):
        return sc.xlogy(a - 1.0, z) - z - sc.gammaln(a)

    def _cdf(self, z, a):
        return sc.gammainc(a, z)

    def _sf(self, z, a):
        return sc.gammaincc(a, z)

    def _median(self, a):
        return sc.gammaincinv(a, 0.5)

    def _entropy(self, a):
        def regular(a):
            return sc.digamma(a) * (1 - a) + a + sc.gammaln(a)

        def asymptotic(a):
            return (0.5 * (1. + _LOG_2PI + np.log(a)) - 1 / (3 * a)
                    - (a ** -2.) / 12 - (a ** -3.) / 90 + (a ** -4.) / 120)

        return apply_where(plain(a) < 250, (a,), regular, asymptotic, 1.0, 250.0)


gamma = gamma_gen()


class chi2_gen(ContinuousDistribution):
    """Chi-squared with ``df`` degrees of freedom: a gamma with shape df/2 and
    scale 2: cdf = gammainc(df/2, z/2)."""

    name = "chi2"
    shapes = ("df",)
    a, b, z0 = 0.0, INF, 1.0

    def _logpdf(self, z, df):
        return sc.xlogy(df / 2. - 1, z) - z / 2. - sc.gammaln(df / 2.) - (_LOG2 * df) / 2.

    def _cdf(self, z, df):
        return sc.gammainc(df / 2, z / 2)

    def _sf(self, z, df):
        return sc.gammaincc(df / 2, z / 2)

    def _median(self, df):
        return 2 * sc.gammaincinv(df / 2, 0.5)

    def _entropy(self, df):
        def regular(h):
            return h + _LOG2 + sc.gammaln(h) + (1 - h) * sc.digamma(h)

        def asymptotic(half_df):
            c = _LOG2 + 0.5 * (1 + _LOG_2PI)
            h = 0.5 / half_df
            return h * (-2 / 3 + h * (-1 / 3 + h * (-4 / 45 + h / 7.5))) + 0.5 * np.log(
                half_df) + c

        half_df = 0.5 * df
        return apply_where(plain(half_df) < 125, (half_df,), regular, asymptotic, 1.0, 125.0)


chi2 = chi2_gen()


class invgamma_gen(ContinuousDistribution):
    """Inverse gamma with shape ``a``: log pdf(z) = -(a+1) log z - log Gamma(a)
    - 1/z; cdf = gammaincc(a, 1/z)."""

    name = "invgamma"
    shapes = ("a",)
    a, b, z0 = 0.0, INF, 1.0
    open_pdf_support = True

    def _logpdf(self, z, a):
        return -(a + 1) * np.log(z) - sc.gammaln(a) - 1.0 / z

    def _cdf(self, z, a):
        return sc.gammaincc(a, 1.0 / z)

    def _sf(self, z, a):
        return sc.gammainc(a, 1.0 / z)

    def _median(self, a):
        return 1.0 / sc.gammainccinv(a, 0.5)

    def _entropy(self, a):
        def regular(a):
            return a - (a + 1.0) * sc.digamma(a) + sc.gammaln(a)

        def asymptotic(a):
            return ((1 - 3 * np.log(a) + _LOG2 + _LOG_PI) / 2 + 2 / 3 * a ** -1.
                    + a ** -2. / 12 - a ** -3. / 90 - a ** -4. / 120)

        return apply_where(plain(a) >= 200, (a,), asymptotic, regular, 200.0, 1.0)


invgamma = invgamma_gen()


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


# -- beta and uniform ---------------------------------------------------------------------
class beta_gen(ContinuousDistribution):
    """Beta(a, b) on [0, 1]: log pdf(z) = (a-1) log z + (b-1) log1p(-z) - log B(a, b);
    cdf = betainc(a, b, z), sf = betainc(b, a, 1 - z)."""

    name = "beta"
    shapes = ("a", "b")
    a, b, z0 = 0.0, 1.0, 0.5

    def _logpdf(self, z, a, b):
        return sc.xlog1py(b - 1.0, -z) + sc.xlogy(a - 1.0, z) - sc.betaln(a, b)

    def _cdf(self, z, a, b):
        return sc.betainc(a, b, z)

    def _sf(self, z, a, b):
        return sc.betainc(b, a, 1.0 - z)

    def _median(self, a, b):
        return sc.betaincinv(a, b, 0.5)

    def _entropy(self, a, b):
        """log B(a,b) - (a-1) psi(a) - (b-1) psi(b) + (a+b-2) psi(a+b); SciPy's
        asymptotic expansions when a or b exceeds ~5e6."""
        def regular(a, b):
            return (sc.betaln(a, b) - (a - 1) * sc.digamma(a) - (b - 1) * sc.digamma(b)
                    + (a + b - 2) * sc.digamma(a + b))

        def ab_large(a, b):
            s = a + b
            log_term = 0.5 * (_LOG_2PI + np.log(a) + np.log(b) - 3 * np.log(s) + 1)
            t1 = 110 / s + 20 * s ** -2.0 + s ** -3.0 - 2 * s ** -4.0
            t2 = -50 / a - 10 * a ** -2.0 - a ** -3.0 + a ** -4.0
            t3 = -50 / b - 10 * b ** -2.0 - b ** -3.0 + b ** -4.0
            return log_term + (t1 + t2 + t3) / 120

        def b_large(a, b):
            s = a + b
            t1 = sc.gammaln(a) - (a - 1) * sc.digamma(a)
            t2 = (- 1 / (2 * b) + 1 / (12 * b) - b ** -2.0 / 12 - b ** -3.0 / 120
                  + b ** -4.0 / 120 + b ** -5.0 / 252 - b ** -6.0 / 252 + 1 / s
                  - 1 / (12 * s) + s ** -2.0 / 6 + s ** -3.0 / 120 - s ** -4.0 / 60
                  - s ** -5.0 / 252 + s ** -6.0 / 126)
            return t1 + t2 + s * np.log1p(a / b) + np.log(b) - 2 * np.log(s)

        def a_large(a, b):
            return b_large(b, a)

        def threshold(v):
            j = np.floor(np.log10(v))
            return np.where(v != 1.0, (np.floor(v / 10 ** j) + 2) * 10 ** (7 + j), 1000)

        with np.errstate(invalid="ignore", divide="ignore"):
            av, bv = np.asarray(plain(a), float), np.asarray(plain(b), float)
            conds = [(av >= 4.96e6) & (bv >= 4.96e6),
                     (av <= 4.9e6) & (bv - av >= 1e6) & (bv >= threshold(av)),
                     (bv <= 4.9e6) & (av - bv >= 1e6) & (av >= threshold(bv)),
                     (av < 4.9e6) & (bv < 4.9e6)]
        return lazyselect(conds, [ab_large, b_large, a_large, regular], (a, b), 0.0)


beta = beta_gen()


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
