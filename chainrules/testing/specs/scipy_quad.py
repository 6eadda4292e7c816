"""Specs for rules/scipy_quad.py: the definite integral of a smooth
parametric integrand, solved tightly so that finite differences of the
integral agree with the rule: a scalar integrand (``quad``) and an array one
(``quad_vec``), every argument at once (the limits, in either order, and the
parameters), the parameters alone, the limits alone, and an integrand that
ignores one of its parameters (its derivative is a structural zero). Second
order is the ``jvp`` of the pullback, whose integrals are this operation
again."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

SPECS = []

try:
    from chainrules.rules import scipy_quad as _sq
except ImportError:  # pragma: no cover
    _sq = None


def _scalar(x, p, c):
    return c * np.sum(np.exp(-p * x * x) * np.cos(p * x))


def _vector(x, p, c):
    return c * np.exp(-p * x * x) + np.sin(c * x)


def _ignores_c(x, p, c):
    return np.sum(np.cos(p * x) / (1.0 + x * x))


if _sq is not None and hasattr(_sq, "integral"):
    _TIGHT = {"epsabs": 1e-10, "epsrel": 1e-9, "limit": 100}
    _SCALAR = _sq.QuadSpec(_scalar, False, _TIGHT, "scipy.integrate.quad")
    _VECTOR = _sq.QuadSpec(_vector, True, _TIGHT, "scipy.integrate.quad_vec")
    _IGNORES = _sq.QuadSpec(_ignores_c, False, _TIGHT, "scipy.integrate.quad")

    def _quad_args(draw, dtype, specs=(_SCALAR, _VECTOR)):
        n = draw(st.integers(1, 3))
        a = float(draw(crs.arrays(dtype, (), (-1.0, 0.5))))
        b = a + float(draw(crs.arrays(dtype, (), (0.2, 1.5))))
        if draw(st.booleans()):
            a, b = b, a   # the integral from the larger limit is the negative
        p = draw(crs.arrays(dtype, (n,), (0.3, 1.5)))
        c = draw(crs.arrays(dtype, (), (0.5, 1.5)))
        spec = specs[0] if draw(st.booleans()) else specs[1]
        return (np.asarray(a, dtype), np.asarray(b, dtype), p, c), {"_spec": spec}

    def _ignoring(draw, dtype):
        return _quad_args(draw, dtype, (_IGNORES, _IGNORES))

    # float64 only: float32 finite differences cannot resolve these integrals
    # (float32 parameters are checked through the twins, in tests/rules/test_scipy_quad.py)
    _DT = ("float64",)
    SPECS += [
        RuleSpec(_sq.integral, _quad_args, _DT, rtol=1e-5, atol=1e-6,
                 name="scipy.integrate.integral"),
        RuleSpec(_sq.integral, _quad_args, _DT, rtol=1e-5, atol=1e-6, wrt=(2, 3),
                 name="scipy.integrate.integral-wrt-params"),
        RuleSpec(_sq.integral, _quad_args, _DT, rtol=1e-5, atol=1e-6, wrt=(0, 1),
                 name="scipy.integrate.integral-wrt-limits"),
        RuleSpec(_sq.integral, _ignoring, ("float64",), rtol=1e-5, atol=1e-6,
                 name="scipy.integrate.integral-unused-param"),
    ]
