"""Differentiable ``scipy.stats`` distributions (same names, signatures,
keywords, defaults and broadcasting as SciPy); requires SciPy.

SciPy's distribution methods convert their inputs with ``np.asarray``, so a
traced value cannot pass through them. The methods here are compositions of
NumPy calls and ``scipy.special`` ufuncs, differentiable to any order with
respect to ``x`` and every continuous parameter::

    from chainrules.scipy import stats
    stats.norm.logpdf(x, loc=mu, scale=sigma)
    stats.gamma(a, scale=2.0).logpdf(x)          # frozen
    stats.multivariate_normal.logpdf(x, mean, cov)

continuous: norm, t, gamma, beta, chi2, expon, laplace, logistic, cauchy,
lognorm, uniform, invgamma (pdf, logpdf, cdf, logcdf, sf, logsf, entropy);
discrete: poisson, binom, nbinom, geom, bernoulli (pmf, logpmf, cdf, logcdf,
sf, logsf; entropy for geom and bernoulli), the counts k held constant;
multivariate: multivariate_normal, dirichlet (logpdf, pdf, entropy).

``rvs`` calls SciPy on plain parameters and raises ``UntraceableError`` for a
traced one (use reparameterised sampling, ``loc + scale * eps``).
Parameters outside their domain give nan and points outside the support
0 / -inf as in SciPy, with finite gradients at the other elements. Results
keep float32 (SciPy returns float64). The cdfs written with ``gammainc``,
``gammaincc`` and ``betainc`` (gamma, chi2, invgamma, beta, t, poisson, binom,
nbinom) are differentiable as far as those ufuncs have rules.
"""

from ._continuous import cauchy, expon, laplace, logistic, lognorm, norm, t, uniform  # noqa: F401
from ._gamma_beta import beta, chi2, gamma, invgamma  # noqa: F401
from ._discrete import bernoulli, binom, geom, nbinom, poisson  # noqa: F401
from ._multivariate import dirichlet, multivariate_normal  # noqa: F401

__all__ = ["norm", "t", "gamma", "beta", "chi2", "expon", "laplace", "logistic", "cauchy",
           "lognorm", "uniform", "invgamma", "poisson", "binom", "nbinom", "geom",
           "bernoulli", "multivariate_normal", "dirichlet"]
