"""Differentiable ``scipy.linalg`` functions (same signatures as SciPy);
requires SciPy. See rules/scipy_linalg.py and rules/scipy_linalg_solvers.py
for what each derivative is and where it is defined.

``logm`` calls SciPy's at one fixed state of ``np.random`` (SciPy's norm
estimates draw from it to choose the scaling, so that two of its calls at
one input may differ in the last bits) and leaves the caller's random
stream where it was: its result is a function of the input."""

from chainrules.rules import scipy_linalg as _impl
from chainrules.rules import scipy_linalg_compose as _compose
from chainrules.rules import scipy_linalg_schur as _schur
from chainrules.rules import scipy_linalg_solvers as _solvers

_MODULES = (_impl, _solvers, _compose, _schur)
__all__ = (list(_impl.__all__) + [n for n in _solvers.__all__ if n != "checked_sylvester"]
           + list(_compose.__all__) + list(_schur.__all__))


def __getattr__(name):
    if name in __all__:
        for mod in _MODULES:
            if hasattr(mod, name):
                return getattr(mod, name)
        raise ImportError(f"chainrules.scipy.linalg.{name} needs SciPy: "
                          "pip install 'chainrules[scipy]'")
    raise AttributeError(name)
