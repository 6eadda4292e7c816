"""Differentiable ``expm``, ``sqrtm``, ``logm``, ``solve_triangular``,
``cho_factor``/``cho_solve`` and ``lu_factor``/``lu_solve`` (same signatures
as ``scipy.linalg``); requires SciPy."""

from chainrules.rules import scipy_linalg as _impl

__all__ = list(_impl.__all__)


def __getattr__(name):
    if name in __all__:
        try:
            return getattr(_impl, name)
        except AttributeError:
            raise ImportError(f"chainrules.scipy.linalg.{name} needs SciPy: "
                              "pip install 'chainrules[scipy]'") from None
    raise AttributeError(name)
