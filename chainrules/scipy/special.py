"""Differentiable versions of ``scipy.special``'s Python-level functions:
``logsumexp``, ``softmax``, ``log_softmax``, ``polygamma``, ``multigammaln`` and
``softplus`` (same signatures as ``scipy.special``); requires SciPy. The
ufuncs (``erf``, ``gammainc``, ``jv``, ...) need no twin: call SciPy's.
"""

from chainrules.rules.special import (log_softmax, logsumexp, multigammaln,  # noqa: F401
                                      polygamma, softmax, softplus)

__all__ = ["logsumexp", "softmax", "log_softmax", "polygamma", "multigammaln", "softplus"]
