"""Differentiable ``scipy.optimize``: SciPy's solvers with SciPy's names,
signatures and result objects, whose solutions are differentiated by the
implicit function theorem, and the Rosenbrock test functions.

The solvers (``root`` with every method, ``fsolve``, ``root_scalar``,
``brentq``, ``brenth``, ``ridder``, ``bisect``, ``toms748``, ``newton``,
``fixed_point``, ``minimize``, ``least_squares``, ``curve_fit``) run SciPy
itself on plain values. The solution ``x*(p)`` of ``F(x, p) = 0`` (the
function itself for root finders, ``g(x) - x`` for ``fixed_point``, the
objective's gradient for minimizers and fits) is differentiated at the
solution, never through the solver's iterations: the pullback is one linear
solve with ``dF/dx`` transposed, then a ``vjp`` of ``F`` in ``p``, both by
chainrules' own derivatives of the user's function
(``chainrules.rules.scipy_optimize``). Parameters reach the solution through
``args`` (every leaf of a nested argument) or as values being differentiated
that the function closes over; second derivatives (``chainrules.hvp``,
``hessian``, ``grad`` of ``grad``) work too. A solution SciPy reports as not
converged, or one where ``dF/dx`` is singular, raises
``chainrules.NumericalInstabilityError``; a minimizer at an active bound or
constraint raises ``chainrules.DomainError``. Without anything being
differentiated each function is SciPy's, unchanged.

>>> import numpy as np, chainrules as cr
>>> from chainrules.scipy import optimize
>>> cube_root = lambda p: optimize.brentq(lambda x, p: x**3 - p, 0.0, 10.0, args=(p,))
>>> round(float(cr.grad(cube_root)(8.0)), 6)  # d/dp p^(1/3) = 1/12 at p = 8
0.083333

The Rosenbrock functions (``rosen``, ``rosen_der``, ``rosen_hess``,
``rosen_hess_prod``) are written with NumPy operations, so every level of
derivative works (``cr.grad(rosen)`` is ``rosen_der``).
"""

from ._minimize import curve_fit, least_squares, minimize
from ._rosen import rosen, rosen_der, rosen_hess, rosen_hess_prod
from ._roots import (bisect, brenth, brentq, fixed_point, fsolve, newton, ridder, root,
                     root_scalar, toms748)

__all__ = ["rosen", "rosen_der", "rosen_hess", "rosen_hess_prod", "root", "fsolve",
           "root_scalar", "brentq", "brenth", "ridder", "bisect", "toms748", "newton",
           "fixed_point", "minimize", "least_squares", "curve_fit"]
