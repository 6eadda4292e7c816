"""Discrete distributions of ``chainrules.scipy.stats``: the count ``k`` is a
constant (the pmf is defined on the integers only), as is binom's ``n``;
``mu``, ``p`` and nbinom's (real) ``n`` are differentiated. See _rv.py for
the masking. The cdfs of poisson, binom and nbinom go through
``gammaincc``/``betainc``; geom's and bernoulli's are closed forms.
"""

import numpy as np

from ._base import INF, apply_where, plain
from ._rv import DiscreteDistribution

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

__all__ = ["poisson", "binom", "nbinom", "geom", "bernoulli"]


def _ones_like(k, v):
    """``v`` broadcast against the constant ``k``."""
    return np.zeros_like(k) + v


class poisson_gen(DiscreteDistribution):
    """Poisson with mean ``mu``: log pmf(k) = k log mu - log k! - mu;
    cdf(k) = gammaincc(k + 1, mu), sf(k) = gammainc(k + 1, mu)."""

    name = "poisson"
    shapes = ("mu",)

    def _shape_ok(self, mu):
        return [mu >= 0]

    def _logpmf(self, k, mu):
        return sc.xlogy(k, mu) - sc.gammaln(k + 1) - mu

    def _cdf(self, k, mu):
        return sc.gammaincc(k + 1, mu)

    def _sf(self, k, mu):
        return sc.gammainc(k + 1, mu)


poisson = poisson_gen()


class binom_gen(DiscreteDistribution):
    """Binomial with ``n`` trials (an integer constant) and success probability
    ``p``: log pmf(k) = log C(n, k) + k log p + (n - k) log1p(-p);
    cdf(k) = betainc(n - k, k + 1, 1 - p), sf(k) = betainc(k + 1, n - k, p)."""

    name = "binom"
    shapes = ("n", "p")
    integer_shapes = ("n",)

    def _shape_ok(self, n, p):
        with np.errstate(invalid="ignore"):
            return [(n >= 0) & (n == np.round(n)), (p >= 0) & (p <= 1)]

    def _support(self, n, p):
        return 0, n

    def _logpmf(self, k, n, p):
        combiln = sc.gammaln(n + 1) - (sc.gammaln(k + 1) + sc.gammaln(n - k + 1))
        return combiln + sc.xlogy(k, p) + sc.xlog1py(n - k, -p)

    def _cdf(self, k, n, p):
        return sc.betainc(n - k, k + 1, 1.0 - p)

    def _sf(self, k, n, p):
        return sc.betainc(k + 1, n - k, p)


binom = binom_gen()


class bernoulli_gen(DiscreteDistribution):
    """Bernoulli(p) on {0, 1}: pmf(1) = p, pmf(0) = 1 - p; cdf(0) = 1 - p;
    entropy = entr(p) + entr(1 - p)."""

    name = "bernoulli"
    shapes = ("p",)
    methods = DiscreteDistribution.methods + ("entropy",)

    def _shape_ok(self, p):
        return [(p >= 0) & (p <= 1)]

    def _support(self, p):
        return 0, 1

    def _pmf(self, k, p):
        # exactly p or 1 - p (linear in p)
        return np.where(k == 1, p, 1.0 - p)

    def _logpmf(self, k, p):
        return sc.xlogy(k, p) + sc.xlog1py(1 - k, -p)

    def _cdf(self, k, p):
        return _ones_like(k, 1.0 - p)

    def _logcdf(self, k, p):
        return _ones_like(k, np.log1p(-p))

    def _sf(self, k, p):
        return _ones_like(k, p)

    def _logsf(self, k, p):
        return _ones_like(k, np.log(p))

    def _entropy(self, p):
        return sc.entr(p) + sc.entr(1 - p)

    entropy = DiscreteDistribution.closed_form_entropy


bernoulli = bernoulli_gen()


class geom_gen(DiscreteDistribution):
    """Geometric (trials up to the first success) on k >= 1:
    pmf(k) = (1 - p)^(k-1) p; sf(k) = (1 - p)^k = exp(k log1p(-p));
    entropy = -log p - log1p(-p) (1 - p) / p."""

    name = "geom"
    shapes = ("p",)
    k0 = 1.0
    methods = DiscreteDistribution.methods + ("entropy",)

    def _shape_ok(self, p):
        return [(p <= 1) & (p > 0)]

    def _support(self, p):
        return 1, INF

    def _pmf(self, k, p):
        return np.power(1 - p, k - 1) * p

    def _logpmf(self, k, p):
        return sc.xlog1py(k - 1, -p) + np.log(p)

    def _cdf(self, k, p):
        return -np.expm1(np.log1p(-p) * k)

    def _logsf(self, k, p):
        return k * np.log1p(-p)

    def _sf(self, k, p):
        return np.exp(self._logsf(k, p))

    def _entropy(self, p):
        return -np.log(p) - np.log1p(-p) * (1.0 - p) / p

    entropy = DiscreteDistribution.closed_form_entropy


geom = geom_gen()


class nbinom_gen(DiscreteDistribution):
    """Negative binomial: failures before the ``n``-th success (``n`` > 0 real,
    differentiated): log pmf(k) = log Gamma(n + k) - log Gamma(k + 1)
    - log Gamma(n) + n log p + k log1p(-p); cdf(k) = betainc(n, k + 1, p),
    sf(k) = betainc(k + 1, n, 1 - p)."""

    name = "nbinom"
    shapes = ("n", "p")

    def _shape_ok(self, n, p):
        return [n > 0, (p > 0) & (p <= 1)]

    def _logpmf(self, k, n, p):
        coeff = sc.gammaln(n + k) - sc.gammaln(k + 1) - sc.gammaln(n)
        return coeff + n * np.log(p) + sc.xlog1py(k, -p)

    def _cdf(self, k, n, p):
        return sc.betainc(n, k + 1, p)

    def _sf(self, k, n, p):
        return sc.betainc(k + 1, n, 1.0 - p)

    def _logcdf(self, k, n, p):
        # as SciPy: log1p(-sf) where the cdf exceeds 1/2, log(cdf) below
        big = self._cdf(plain(k), plain(n), plain(p)) > 0.5
        return apply_where(big, (k, n, p),
                           lambda k, n, p: np.log1p(-self._sf(k, n, p)),
                           lambda k, n, p: np.log(self._cdf(k, n, p)), 0.5, 0.5)


nbinom = nbinom_gen()
