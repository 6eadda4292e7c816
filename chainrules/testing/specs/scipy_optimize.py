"""Specs for rules/scipy_optimize.py: the solution of an equation,
differentiated by the implicit function theorem. Two problems, solved
tightly by SciPy so that finite differences of the whole solve check the
rule: an elementwise equation ``x + a tanh(x) = b`` (a diagonal Jacobian)
and a coupled system ``M x + 0.1 x^3 = b`` (a full one), with the
parameters drawn where the Jacobian is regular. Second order runs the rule
again on traced parameters (the solution then carries the implicit
function theorem's derivative)."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

SPECS = []

try:
    import scipy.optimize as _so

    from chainrules.rules import scipy_optimize as _ro
except ImportError:  # pragma: no cover
    _ro = None


def _elementwise(x, a, b):
    return x + a * np.tanh(x) - b


def _coupled(x, m, b):
    return m @ x + 0.1 * x ** 3 - b


def _solver(residual):
    def solve(*params):
        n = np.shape(params[-1])
        res = _so.root(lambda x: residual(x, *params), np.zeros(n), method="hybr",
                       tol=1e-14)
        return res.x
    return solve


if _ro is not None:
    _ELEMENTWISE = _ro.ImplicitSpec(_elementwise, _solver(_elementwise),
                                    "scipy.optimize.root (elementwise)")
    _COUPLED = _ro.ImplicitSpec(_coupled, _solver(_coupled), "scipy.optimize.root (coupled)")

    def _elementwise_args(draw, dtype):
        n = draw(st.integers(1, 4))
        a = draw(crs.arrays(dtype, (n,), (0.1, 1.0)))
        b = draw(crs.arrays(dtype, (n,), (-1.5, 1.5)))
        return (a, b), {"_spec": _ELEMENTWISE}

    def _coupled_args(draw, dtype):
        n = draw(st.integers(1, 3))
        # diagonally dominant, positive diagonal: M + 0.3 diag(x^2) is regular
        off = draw(crs.arrays(dtype, (n, n), (-0.3, 0.3)))
        m = off + np.eye(n, dtype=dtype) * (1.0 + 0.3 * n)
        b = draw(crs.arrays(dtype, (n,), (-1.0, 1.0)))
        return (m, b), {"_spec": _COUPLED}

    SPECS += [
        RuleSpec(_ro.implicit_solution, _elementwise_args, ("float64",), rtol=1e-5,
                 atol=1e-6, name="scipy.optimize.implicit_solution-elementwise"),
        RuleSpec(_ro.implicit_solution, _coupled_args, ("float64",), rtol=1e-5, atol=1e-6,
                 name="scipy.optimize.implicit_solution-coupled"),
    ]
