"""Differentiable versions of SciPy's Python-level functions.

SciPy's ufuncs (``scipy.special.expit``, ``erf``, ``gammaln``, ...) are
reached through NumPy's protocols like any NumPy ufunc, so plain calls work.
Python-level SciPy functions such as ``scipy.special.logsumexp`` or
``scipy.linalg.expm`` convert their inputs with ``np.asarray``, which no
protocol can intercept; call the versions here instead::

    from chainrules.scipy import special, linalg, stats
    special.logsumexp(x, axis=0)
    linalg.expm(a)
    stats.norm.logpdf(x, loc=mu, scale=sigma)
    optimize.rosen(x)
"""

from . import linalg, special  # noqa: F401
from . import integrate, optimize, signal, stats  # noqa: F401
