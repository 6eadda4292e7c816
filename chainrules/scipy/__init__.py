"""Differentiable versions of SciPy's Python-level functions.

SciPy's ufuncs (``scipy.special.expit``, ``erf``, ``gammaln``, ...) are
reached through NumPy's protocols like any NumPy ufunc, so plain calls work.
Python-level SciPy functions such as ``scipy.special.logsumexp`` or
``scipy.linalg.expm`` convert their inputs with ``np.asarray``, which no
protocol can intercept; call the versions here instead::

    from chainrules.scipy import linalg, optimize, spatial, special, stats
    special.logsumexp(x, axis=0)
    linalg.expm(a)
    stats.norm.logpdf(x, loc=mu, scale=sigma)
    optimize.rosen(x)
    spatial.distance.pdist(X, "cosine")
    interpolate.CubicSpline(x, y)(t)

``scipy.fft`` needs no twin: its transforms dispatch to a backend that
chainrules registers, so ``scipy.fft.rfft(x)`` on a traced ``x``
differentiates as it is; ``chainrules.scipy.fft`` holds the same functions
for use where another backend of ``scipy.fft`` is put first.
"""

from . import linalg, special  # noqa: F401
from . import fft, integrate, interpolate, optimize, signal, spatial, stats  # noqa: F401
from . import sparse  # noqa: F401
