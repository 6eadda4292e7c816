"""The gamma and beta families of ``chainrules.scipy.stats``: gamma, chi2,
invgamma and beta, written with gammaln, digamma, betaln, xlogy; their cdfs
with gammainc, gammaincc and betainc (differentiable as far as those ufuncs
have rules). The entropies switch to SciPy's asymptotic expansions where
SciPy does.
"""

import math

import numpy as np

from ._base import INF, apply_where, lazyselect, plain
from ._rv import ContinuousDistribution

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

__all__ = ["gamma", "chi2", "invgamma", "beta"]

_LOG_2PI = math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_LOG2 = math.log(2)


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
