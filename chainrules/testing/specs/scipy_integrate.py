"""Specs for rules/scipy_integrate.py: the ODE solution operation, on a
nonlinear right-hand side with parameters, solved tightly so that finite
differences of the solution agree with the reverse (forward sensitivities or
adjoint) and variational rules: every argument at once, the parameter array
alone (time points increasing or decreasing), the time points alone and
with the parameters (the start moves the solution), and two equal time
points; each by the sensitivities (the systems here are small) and again by
the adjoint method (``sensitivity_max=0``). Second order
(``pullback_with_tangents``) is checked in the initial state with the
parameters, time points constant (second derivatives in them raise
HvpNotSupported)."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

SPECS = []

try:
    from chainrules.rules import scipy_integrate as _si
except ImportError:  # pragma: no cover
    _si = None


def _rhs(y, t, k, c):
    return -k * y + c * np.sin(y) * np.cos(t)


if _si is not None and hasattr(_si, "ode_solve"):
    _SPEC = _si.OdeSpec(_rhs, False, "odeint", {"rtol": 1e-11, "atol": 1e-12},
                        "scipy.integrate.odeint")
    _SPEC_IVP = _si.OdeSpec(lambda t, y, k, c: _rhs(y, t, k, c), True, "DOP853",
                            {"rtol": 1e-11, "atol": 1e-12}, "scipy.integrate.solve_ivp")
    # the same two solved by the adjoint method whatever the size
    _ADJOINT = (_si.OdeSpec(_rhs, False, "odeint", _SPEC.opts, _SPEC.name, 0),
                _si.OdeSpec(_SPEC_IVP.func, True, "DOP853", _SPEC_IVP.opts, _SPEC_IVP.name,
                            0))

    def _increasing(draw, dtype, m):
        return np.cumsum(0.2 + np.abs(draw(crs.arrays(dtype, (m,)))) * 0.3) - 0.3

    def _either_way(draw, dtype, m):
        """Time points increasing or decreasing (integrated backwards)."""
        t = _increasing(draw, dtype, m)
        return t[::-1].copy() if draw(st.booleans()) else t

    def _constant(draw, dtype, m):
        # two equal time points: the solution is y0 at both, and moving either
        # time keeps the two in order (finite differences stay in SciPy's domain)
        t0 = float(draw(crs.arrays(dtype, ())))
        return np.array([t0, t0])

    def _ode_args(draw, dtype, times=_increasing, specs=(_SPEC, _SPEC_IVP)):
        n = draw(st.integers(1, 3))
        m = draw(st.integers(1, 4))
        y0 = draw(crs.arrays(dtype, (n,)))
        t = times(draw, dtype, m)
        k = draw(crs.arrays(dtype, (n,), (0.2, 1.0)))
        c = float(draw(crs.arrays(dtype, (), (-0.5, 0.5))))
        spec = specs[0] if draw(st.booleans()) else specs[1]
        return (y0, t, k, c), {"_spec": spec}

    def _ode_params(draw, dtype, specs=(_SPEC, _SPEC_IVP)):
        return _ode_args(draw, dtype, _either_way, specs)

    def _ode_constant_times(draw, dtype, specs=(_SPEC, _SPEC_IVP)):
        return _ode_args(draw, dtype, _constant, specs)

    def _adjoint(args):
        return lambda draw, dtype: args(draw, dtype, specs=_ADJOINT)

    _MODES = frozenset({"rrule", "frule"})
    # second order, with the time points constant: by the sensitivities only
    # here (the adjoint's, tested in tests/rules/test_scipy_integrate.py, costs
    # about a minute over the sweep's examples at these tolerances)
    _HVP = frozenset({"rrule", "frule", "hvp"})
    SPECS += [
        RuleSpec(_si.ode_solve, _ode_args, ("float64",), modes=_MODES,
                 rtol=1e-5, atol=1e-6, name="scipy.integrate.ode_solve"),
        # the parameter array alone (y0, t and the float c held constant)
        RuleSpec(_si.ode_solve, _ode_params, ("float64",), modes=_MODES, rtol=1e-5,
                 atol=1e-6, wrt=(2,), name="scipy.integrate.ode_solve-wrt-params"),
        RuleSpec(_si.ode_solve, _ode_params, ("float64",), modes=_HVP, rtol=1e-5,
                 atol=1e-6, wrt=(0, 2), name="scipy.integrate.ode_solve-wrt-y0-params"),
        RuleSpec(_si.ode_solve, _ode_constant_times, ("float64",), modes=_MODES,
                 rtol=1e-5, atol=1e-6, name="scipy.integrate.ode_solve-constant-times"),
        # y0 held constant: the start time moves the solution along -f(y0, t[0])
        RuleSpec(_si.ode_solve, _ode_params, ("float64",), modes=_MODES, rtol=1e-5,
                 atol=1e-6, wrt=(1,), name="scipy.integrate.ode_solve-wrt-times"),
        RuleSpec(_si.ode_solve, _ode_params, ("float64",), modes=_MODES, rtol=1e-5,
                 atol=1e-6, wrt=(1, 2), name="scipy.integrate.ode_solve-wrt-times-params"),
        # the adjoint method, used above SENSITIVITY_MAX_STATE
        RuleSpec(_si.ode_solve, _adjoint(_ode_args), ("float64",), modes=_MODES,
                 rtol=1e-5, atol=1e-6, name="scipy.integrate.ode_solve-adjoint"),
        RuleSpec(_si.ode_solve, _adjoint(_ode_params), ("float64",), modes=_MODES,
                 rtol=1e-5, atol=1e-6, wrt=(1, 2),
                 name="scipy.integrate.ode_solve-adjoint-wrt-times-params"),
        RuleSpec(_si.ode_solve, _adjoint(_ode_constant_times), ("float64",), modes=_MODES,
                 rtol=1e-5, atol=1e-6, name="scipy.integrate.ode_solve-adjoint-constant-times"),
    ]
