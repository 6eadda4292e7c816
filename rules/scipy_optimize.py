"""Solutions of equations differentiated by the implicit function theorem
(the rule behind ``chainrules.scipy.optimize``'s root finders, minimizers
and fits; loaded with ``chainrules.scipy``).

``implicit_solution(*params, _spec=spec)`` is the solution ``x*`` of
``F(x, params) = 0`` found by ``spec.solve`` on plain values (SciPy's
solver). Its derivative is never that of the solver's iterations: at the
solution, ``dF = J dx + F_p dp = 0`` with ``J = dF/dx``, so the pullback of
a cotangent ``g`` is one linear solve ``J^T lam = g`` and one ``vjp`` of
``F`` in ``params``: ``-F_p^T lam``. ``J`` and the ``vjp`` are chainrules'
own derivatives of ``F``, the user's function evaluated on plain values.

The pullback is written with differentiable operations, so second order
(HVPs, ``grad`` of ``grad``) works by replay: when the rule is made again
on traced ``params``, the solution is made traced too, as
``x* + (d - stop(d))`` with ``d = -J^{-1} F(x*, params)``: its value is
``x*`` exactly and its derivative ``-J^{-1} F_p``, the implicit function
theorem's. The pullback then differentiates through ``J(x*, p)`` and
``F_p(x*, p)`` as functions of both.

A singular (or numerically singular) ``J`` at the solution has no
derivative: ``NumericalInstabilityError`` names the solver.
"""

import numpy as np

from chainrules.api import stop_gradient, vjp
from chainrules.errors import NumericalInstabilityError
from chainrules.jacobians import jacobian
from chainrules.primitives import primitive
from chainrules.registry import rrule
from chainrules.tracing import is_traced, untraced

from ._util import on_demand_family

_family_loaded = on_demand_family()

__all__ = ["ImplicitSpec", "implicit_solution", "RCOND"]

#: ``J`` at the solution is refused as singular when its smallest singular
#: value is below this times its largest
RCOND = 1e-12


class ImplicitSpec:
    """What ``implicit_solution`` solves. ``residual(x, *params)``: ``F``,
    any differentiable NumPy code (``x`` has the solution's shape; the
    result may have any shape with as many entries as ``x``).
    ``solve(*plain_params)``: the solution (an array of float64) for
    plain parameters, by SciPy. ``name``: the entry point, for messages.
    The last solve is kept (``last``), so that the entry point can read
    SciPy's result object and a replay does not solve again."""

    __slots__ = ("residual", "solve", "name", "last")

    def __init__(self, residual, solve, name):
        self.residual, self.solve, self.name = residual, solve, name
        self.last = None

    def solution(self, params):
        """``solve(*params)`` (plain params), remembered for equal params."""
        last = self.last
        if last is not None and len(last[0]) == len(params) and all(
                _same(a, b) for a, b in zip(last[0], params)):
            return last[1]
        x = np.asarray(self.solve(*params), dtype=float)
        self.last = ([np.array(p, copy=True) for p in params], x)
        return x

    def jacobian(self, x, params):
        """``dF/dx`` at ``(x, params)`` as an ``n x n`` matrix (traced when
        ``x`` or ``params`` are)."""
        n = int(np.size(x))
        j = jacobian(lambda z: self.residual(z, *params))(x)
        m = int(np.size(j)) // max(n, 1) if n else 0
        if m != n:
            raise ValueError(f"{self.name}: the function returns {m} values for {n} "
                             "unknowns; the solution is differentiated as a root of as "
                             "many equations as unknowns")
        return np.reshape(j, (n, n))


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.all(a == b))


def implicit_solution(*params, _spec):
    """The solution of ``_spec``'s equation for the parameters ``params``."""
    return _spec.solution([np.asarray(untraced(p)) for p in params])


implicit_solution = primitive(implicit_solution)


def _check_regular(jac, spec):
    s = np.linalg.svd(np.asarray(jac, dtype=float), compute_uv=False)
    if s.size and (not np.all(np.isfinite(s)) or s[-1] <= RCOND * s[0] or s[0] == 0):
        raise NumericalInstabilityError(
            f"{spec.name}: the Jacobian of the equations in the unknowns is singular at "
            f"the solution (singular values {s.max():.3g} to {s.min():.3g}), so the "
            "solution does not depend smoothly on the parameters (a double root, a flat "
            "minimum, an unidentifiable fit parameter); no derivative is returned rather "
            "than a wrong one. Reformulate so that the solution is isolated")


@rrule(implicit_solution)
def _implicit_rule(*params, _spec):
    plain = [np.asarray(untraced(p)) for p in params]
    x = _spec.solution(plain)
    jac = _spec.jacobian(x, plain)
    _check_regular(jac, _spec)
    if any(is_traced(p) for p in params):
        # made again on traced values (second order, nested differentiation):
        # the solution carries the implicit function theorem's derivative
        d = -np.linalg.solve(jac, np.ravel(_spec.residual(x, *params)))
        d = np.reshape(d, np.shape(x))
        x = x + (d - stop_gradient(d))

    def implicit_pullback(g):
        jt = jac
        if is_traced(x) or is_traced(g) or any(is_traced(p) for p in params):
            jt = _spec.jacobian(x, params)
        lam = np.linalg.solve(np.transpose(jt), np.ravel(g))
        out, f_vjp = vjp(lambda *p: _spec.residual(x, *p), *params)
        cots = f_vjp(np.reshape(-lam, np.shape(out)))
        return tuple(cots)

    return x, implicit_pullback


_family_loaded()
