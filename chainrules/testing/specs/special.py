"""Specs for rules/special.py (scipy.special; empty without SciPy)."""

from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

try:
    import scipy.special as sc
    from scipy.special import _ufuncs
except ImportError:  # pragma: no cover
    sc = None

F = ("float64", "float32")


def unary(domain="real", shift=0.0, scale=1.0):
    def sample(draw, dtype):
        x = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), domain))
        return ((x * scale + shift).astype(dtype),), {}
    return sample


def binary(dx="positive", dy="positive"):
    def sample(draw, dtype):
        sx, sy = draw(crs.broadcastable_shapes(2, 0, 2))
        return (draw(crs.arrays(dtype, sx, dx)), draw(crs.arrays(dtype, sy, dy))), {}
    return sample


def order_first(orders, domain="positive", shift=0.0):
    def sample(draw, dtype):
        x = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), domain))
        return (draw(st.sampled_from(orders)), (x + shift).astype(dtype)), {}
    return sample


SPECS = []
if sc is not None:
    SPECS = [
        RuleSpec(sc.expit, unary(), F),
        RuleSpec(sc.logit, unary("unit", 0.5, 0.3), F),
        RuleSpec(sc.log_expit, unary(), F),
        RuleSpec(sc.erf, unary(), F),
        RuleSpec(sc.erfc, unary(), F),
        RuleSpec(sc.erfinv, unary("unit"), F),
        RuleSpec(sc.ndtr, unary(), F),
        RuleSpec(sc.ndtri, unary("unit", 0.5, 0.5), F),
        RuleSpec(sc.log_ndtr, unary(), F),
        RuleSpec(sc.gammaln, unary("positive"), F),
        RuleSpec(sc.digamma, unary("positive"), F),
        RuleSpec(sc.gamma, unary("positive"), F),
        # B(a, b)' = B (psi(a) - psi(a + b)): the difference of digammas
        # cancels, so float32 values carry ~1e-4 relative error
        RuleSpec(sc.beta, binary(), ("float64",)),
        RuleSpec(sc.beta, binary(), ("float32",), rtol=5e-4),
        RuleSpec(sc.betaln, binary(), F),
        RuleSpec(_ufuncs._zeta, order_first([2, 3, 4]), F, call=sc.zeta,
                 name="scipy.special.zeta"),
        RuleSpec(sc.xlogy, binary("real", "positive"), F),
        RuleSpec(sc.xlog1py, binary("real", "positive"), F),
        RuleSpec(sc.entr, unary("positive"), F),
        RuleSpec(sc.rel_entr, binary("positive", "gt1"), F),
        RuleSpec(sc.kl_div, binary("positive", "gt1"), F),
        RuleSpec(sc.i0, unary(), F),
        RuleSpec(sc.i1, unary(), F),
        RuleSpec(sc.i0e, unary("nonzero"), F),
        RuleSpec(sc.i1e, unary("nonzero"), F),
        RuleSpec(sc.iv, order_first([0, 1, 2, 3]), F),
        RuleSpec(sc.ive, order_first([0, 1, 2, 3]), F),
    ]
