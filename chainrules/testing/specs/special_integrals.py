"""Specs for rules/special_integrals.py (scipy.special; empty without SciPy)."""

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec
from chainrules.testing.specs.special import order_first, unary
from chainrules.testing.specs.special_elementary import args_in

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

F = ("float64", "float32")
C = ("complex128", "float64")


def _hankel(draw, dtype):
    """A real order and ``z`` with real part in [0.5, 2] (complex ``z``: imaginary
    part in [-2, 2]; the functions are holomorphic off the negative axis)."""
    z = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), "positive"))
    v = draw(crs.arrays("float64", (), (-1.5, 2.5)))
    return (float(v), z), {}


SPECS = []
if sc is not None:
    import chainrules.rules.special_integrals as si

    SPECS = [
        RuleSpec(si.iti0k0_i, unary(), F),
        RuleSpec(si.iti0k0_k, unary("positive"), F),
        RuleSpec(si.itj0y0_j, unary(), F),
        RuleSpec(si.itj0y0_y, unary("positive"), F),
        # [-2.5, 2.5]: both sides of |x| = 1, where the series gives way
        RuleSpec(si.it2i0k0_i, unary("real", scale=1.25), F),
        RuleSpec(si.it2i0k0_k, unary("positive"), F),
        RuleSpec(si.it2j0y0_j, unary("real", scale=1.25), F),
        RuleSpec(si.it2j0y0_y, unary("positive"), F),
        RuleSpec(sc.itstruve0, unary(), F),
        RuleSpec(sc.itmodstruve0, unary(), F),
        RuleSpec(sc.it2struve0, unary("nonzero"), F),
        # SciPy's itairy is accurate to about 1e-7 (its derivative to 1e-6)
        RuleSpec(si.itairy_apt, unary(), F, rtol=1e-5),
        RuleSpec(si.itairy_bpt, unary(), F, rtol=1e-5),
        RuleSpec(si.itairy_ant, unary(), F, rtol=1e-5),
        RuleSpec(si.itairy_bnt, unary(), F, rtol=1e-5),
        RuleSpec(sc.iti0k0, unary("positive"), ("float64",)),
        RuleSpec(sc.it2i0k0, unary("positive"), ("float64",)),
        RuleSpec(sc.itj0y0, unary("positive"), ("float64",)),
        RuleSpec(sc.it2j0y0, unary("positive"), ("float64",)),
        RuleSpec(sc.itairy, unary(), ("float64",), rtol=1e-5),
        # the modified Fresnel integrals at x >= 0 (SciPy's fp, fm are off below)
        RuleSpec(si.modfresnelp_f, unary("positive", shift=-0.5), F),
        RuleSpec(si.modfresnelp_k, unary(), F),
        RuleSpec(si.modfresnelm_f, unary("positive", shift=-0.5), F),
        RuleSpec(si.modfresnelm_k, unary(), F),
        RuleSpec(sc.modfresnelp, unary("positive"), ("float64",)),
        RuleSpec(sc.modfresnelm, unary("positive"), ("float64",)),
        RuleSpec(sc.hankel1, _hankel, C, wrt=(1,)),
        RuleSpec(sc.hankel2, _hankel, C, wrt=(1,)),
        RuleSpec(sc.hankel1e, _hankel, C, wrt=(1,)),
        RuleSpec(sc.hankel2e, _hankel, C, wrt=(1,)),
        RuleSpec(sc.kelvin, unary("positive"), ("float64",)),
        RuleSpec(sc.besselpoly, args_in("positive", (0.0, 2.0), (-0.5, 2.5)), F, wrt=(0,)),
    ]
