"""Differentiable ``logsumexp``, ``softmax``, ``log_softmax`` and ``polygamma``
(same signatures as ``scipy.special``); requires SciPy."""

from chainrules.rules.special import log_softmax, logsumexp, polygamma, softmax  # noqa: F401

__all__ = ["logsumexp", "softmax", "log_softmax", "polygamma"]
