"""Triangular solves for the linear-algebra rules written with traced NumPy
calls (``tri_solve``): SciPy's differentiable ``solve_triangular``
(``rules/scipy_linalg.py``) where it applies, ``np.linalg.solve`` elsewhere.
It sits above both the generic rule helpers and the SciPy rules, which do
not need it."""

import functools

import numpy as np

from chainrules.arrays import computes_eagerly
from chainrules.tracing import untraced

from ._linalg_util import mT, scipy_takes_batches

__all__ = ["tri_solve"]


@functools.cache
def _scipy_solve_triangular():
    try:
        from .scipy_linalg import solve_triangular
    except ImportError:  # pragma: no cover - SciPy is an optional extra
        return None
    return solve_triangular


def tri_solve(low, b, trans=0):
    """``op(low)^-1 b`` for a lower-triangular ``low`` (``trans``: 0 for
    ``low``, 1 for its transpose), by a triangular solve (BLAS trsm, a third
    of the work of an inverse and a product, and more accurate).

    Traceable: on NumPy data with SciPy installed it is the differentiable
    ``scipy.linalg.solve_triangular``; otherwise ``np.linalg.solve`` (which
    dask and other NEP-18 arrays implement lazily, where SciPy would convert
    them to NumPy)."""
    solve = _scipy_solve_triangular()
    lv, bv = untraced(low), untraced(b)
    # (staged values compute eagerly: SciPy's call is one step of the plan)
    if (solve is not None and computes_eagerly(lv) and computes_eagerly(bv)
            and ((lv.ndim == 2 and bv.ndim <= 2) or scipy_takes_batches())):
        return solve(low, b, trans=trans, lower=True, check_finite=False)
    return np.linalg.solve(mT(low) if trans else low, b)
