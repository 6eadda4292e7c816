"""Specs for rules/special_elementary.py (scipy.special; empty without SciPy)."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec
from chainrules.testing.specs.special import order_first, unary  # the shared samplers

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

F = ("float64", "float32")
FC = ("float64", "float32", "complex128")
ND = frozenset({"nondiff"})


def _real(dtype):
    """The real dtype of ``dtype`` (parameters stay real for complex ``x``)."""
    return np.dtype(dtype).type(0).real.dtype


def args_in(*domains, params=0):
    """Arguments with values in ``domains`` (names of ``crs.DOMAINS`` or
    ``(lo, hi)`` pairs), broadcasting together; the first ``params`` of them
    are real even when ``dtype`` is complex (SciPy's loops take real orders
    and parameters with a complex argument)."""
    def sample(draw, dtype):
        shapes = draw(crs.broadcastable_shapes(len(domains), 0, 2))
        out = tuple(draw(crs.arrays(_real(dtype) if k < params else dtype, s, d))
                    for k, (d, s) in enumerate(zip(domains, shapes)))
        return out, {}
    return sample


def carlson(intervals):
    """Carlson's integrals: each argument in its own interval (a random
    permutation of ``intervals``), so that no two of them are close: the
    derivative formulas divide by their differences."""
    def sample(draw, dtype):
        perm = draw(st.permutations(range(len(intervals))))
        shapes = draw(crs.broadcastable_shapes(len(intervals), 0, 2))
        return tuple(draw(crs.arrays(dtype, s, intervals[k]))
                     for k, s in zip(perm, shapes)), {}
    return sample


def _incomplete_elliptic(draw, dtype):
    """``phi`` in [-4, 4] (past +-pi/2, where F and E continue by periodicity)
    and ``m`` in [-0.8, 0.85]."""
    sp, sm = draw(crs.broadcastable_shapes(2, 0, 2))
    phi = draw(crs.arrays(dtype, sp, (-4.0, 4.0)))
    return (phi, draw(crs.arrays(dtype, sm, (-0.8, 0.85)))), {}


def _binom(draw, dtype):
    sn, sk = draw(crs.broadcastable_shapes(2, 0, 2))
    return (draw(crs.arrays(dtype, sn, (2.5, 4.5))), draw(crs.arrays(dtype, sk, (0.5, 2.0)))), {}


SPECS = []
if sc is not None:
    import chainrules.rules.special_elementary as se

    _CARLSON3 = ((0.2, 0.6), (0.9, 1.3), (1.6, 2.2))
    SPECS = [
        RuleSpec(sc.expm1, unary(), FC),
        RuleSpec(sc.log1p, unary("unit"), FC),
        RuleSpec(sc.exp2, unary(), F),
        RuleSpec(sc.exp10, unary(), F),
        RuleSpec(sc.cbrt, unary("nonzero"), F),
        # at least 0.15 away from the half-integers, where round jumps
        RuleSpec(sc.round, unary("nonint", 0.5, 1.0), F, modes=ND),
        RuleSpec(sc.powm1, args_in("positive", "real"), F),
        RuleSpec(sc.exprel, unary(), F),
        RuleSpec(sc.wrightomega, unary(), FC),
        # exponential and trigonometric integrals; complex values are drawn
        # with |Im| >= 0.35, away from the branch cuts on the negative axis
        RuleSpec(sc.erfi, unary(), FC),
        RuleSpec(sc.expi, unary("nonzero"), FC),
        RuleSpec(sc.exp1, unary("positive"), F),
        RuleSpec(sc.exp1, unary("nonzero"), ("complex128",)),
        RuleSpec(sc.expn, order_first([0, 1, 2, 3, 5]), F, wrt=(1,)),
        RuleSpec(sc.spence, unary("positive"), FC),
        RuleSpec(se.sici_si, unary(), FC),
        RuleSpec(se.sici_ci, unary("nonzero"), FC),
        RuleSpec(se.shichi_shi, unary(), FC),
        RuleSpec(se.shichi_chi, unary("nonzero"), FC),
        RuleSpec(se.fresnel_s, unary(), FC),
        RuleSpec(se.fresnel_c, unary(), FC),
        RuleSpec(sc.sici, unary("nonzero"), ("float64", "complex128")),
        RuleSpec(sc.shichi, unary("nonzero"), ("float64", "complex128")),
        RuleSpec(sc.fresnel, unary(), ("float64", "complex128")),
        RuleSpec(se.airy_ai, unary(), FC),
        RuleSpec(se.airy_aip, unary(), FC),
        RuleSpec(se.airy_bi, unary(), FC),
        RuleSpec(se.airy_bip, unary(), FC),
        RuleSpec(sc.airy, unary(), ("float64", "complex128")),
        # eAi, eAip: x > 0 (NaN for x < 0); eBi, eBip: both signs, away from
        # 0 where the scaling exp(-2/3 x^(3/2)) has an infinite second derivative
        RuleSpec(se.airye_ai, unary("positive", 0.3), F),
        RuleSpec(se.airye_aip, unary("positive", 0.3), F),
        RuleSpec(se.airye_bi, unary("nonzero"), F),
        RuleSpec(se.airye_bip, unary("nonzero"), F),
        RuleSpec(sc.airye, unary("positive"), ("float64",)),
        # hypergeometric functions, in their argument
        RuleSpec(sc.hyp0f1, args_in("positive", "real", params=1), FC, wrt=(1,)),
        RuleSpec(sc.hyp1f1, args_in("positive", "positive", "real", params=2), FC, wrt=(2,)),
        RuleSpec(sc.hyperu, args_in("positive", "positive", "positive"), F, wrt=(2,)),
        RuleSpec(sc.hyp2f1, args_in("positive", "positive", "positive", "unit", params=3), FC,
                 wrt=(3,)),
        RuleSpec(sc.wright_bessel, args_in("positive", "positive", "positive"), F, wrt=(2,)),
        RuleSpec(sc.log_wright_bessel, args_in("positive", "positive", "positive"), F,
                 wrt=(2,)),
        # Gamma ratios
        RuleSpec(sc.binom, _binom, F),
        RuleSpec(sc.poch, args_in("positive", "positive"), F),
        # Box-Cox (lambda in [-2, 2] crosses 0, where the series takes over)
        RuleSpec(sc.boxcox, args_in("positive", "real"), F),
        RuleSpec(sc.boxcox1p, args_in("unit", "real"), F),
        RuleSpec(sc.inv_boxcox, args_in("unit", "unit"), F),
        RuleSpec(sc.inv_boxcox1p, args_in("unit", "unit"), F),
        # elliptic integrals
        RuleSpec(sc.ellipk, unary("unit"), F),
        RuleSpec(sc.ellipe, unary("unit"), F),
        RuleSpec(sc.ellipkm1, unary((0.02, 1.5)), F),
        RuleSpec(sc.ellipkinc, _incomplete_elliptic, F),
        RuleSpec(sc.ellipeinc, _incomplete_elliptic, F),
        RuleSpec(sc.elliprc, args_in("positive", "positive"), F),
        RuleSpec(sc.elliprf, carlson(_CARLSON3), FC),
        RuleSpec(sc.elliprd, carlson(_CARLSON3), FC),
        RuleSpec(sc.elliprg, carlson(_CARLSON3), FC),
        RuleSpec(sc.elliprj, carlson(((0.2, 0.5), (0.8, 1.1), (1.4, 1.7), (2.0, 2.4))), FC),
        RuleSpec(sc.agm, args_in("positive", "positive"), F),
        # Bessel family, order held constant
        RuleSpec(sc.jve, order_first([0, 1, 2.5], "positive", 0.5), F, wrt=(1,)),
        RuleSpec(sc.yve, order_first([0, 1, 2.5], "positive", 0.5), F, wrt=(1,)),
        RuleSpec(sc.kn, order_first([0, 1, 2, 3], "positive", 0.3), F, wrt=(1,)),
        RuleSpec(sc.struve, order_first([0, 0.5, 1, 2.5]), F, wrt=(1,)),
        RuleSpec(sc.modstruve, order_first([0, 0.5, 1, 2.5]), F, wrt=(1,)),
        RuleSpec(sc.ber, unary(), F),
        RuleSpec(sc.bei, unary(), F),
        RuleSpec(sc.berp, unary(), F),
        RuleSpec(sc.beip, unary(), F),
        RuleSpec(sc.ker, unary("positive"), F),
        RuleSpec(sc.kei, unary("positive"), F),
        RuleSpec(sc.kerp, unary("positive"), F),
        RuleSpec(sc.keip, unary("positive"), F),
        # trigonometry in degrees, cos(x) - 1, degrees/minutes/seconds to radians
        RuleSpec(sc.sindg, unary("real", scale=200.0), F),
        RuleSpec(sc.cosdg, unary("real", scale=200.0), F),
        RuleSpec(sc.tandg, unary("unit", scale=80.0), F),
        RuleSpec(sc.cotdg, unary("unit", shift=90.0, scale=80.0), F),
        RuleSpec(sc.cosm1, unary("real"), F),
        RuleSpec(sc.radian, args_in("real", "real", "real"), F),
        # Owen's T and the Voigt profile
        RuleSpec(sc.owens_t, args_in("real", "real"), F),
        RuleSpec(sc.voigt_profile, args_in("real", "positive", "positive"), F),
    ]
