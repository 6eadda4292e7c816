"""Specs for rules/special.py (scipy.special; empty without SciPy)."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

try:
    import scipy.special as sc
    from scipy.special import _ufuncs
except ImportError:  # pragma: no cover
    sc = None

F = ("float64", "float32")


def unary(domain="real", shift=0.0, scale=1.0, avoid=()):
    """``avoid``: points (before ``scale`` and ``shift``) to keep 0.1 away
    from, such as a stationary point where a derivative formula cancels to
    below float32's resolution of its terms."""
    def sample(draw, dtype):
        x = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), domain, avoid=avoid))
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


def ternary_x(dx="unit", shift=0.5, scale=0.5):
    """(a, b, x) with positive shapes and x (last) differentiated."""
    def sample(draw, dtype):
        sa, sb, sx = draw(crs.broadcastable_shapes(3, 0, 2))
        x = draw(crs.arrays(dtype, sx, dx))
        return (draw(crs.arrays(dtype, sa, "positive")), draw(crs.arrays(dtype, sb, "positive")),
                (x * scale + shift).astype(dtype)), {}
    return sample


def huber_args(draw, dtype):
    """delta in [0.5, 2] and |r| in [0, 0.4] or [2.2, 3]: both zones of the
    Huber loss, away from its kink at |r| = delta."""
    sd, sr = draw(crs.broadcastable_shapes(2, 0, 2))
    r = draw(crs.arrays(dtype, sr, "real")).astype("float64")
    small = np.abs(r) < 1
    r = np.where(small, 0.4 * r, np.sign(r) * (2.2 + 0.8 * (np.abs(r) - 1)))
    return (draw(crs.arrays(dtype, sd, "positive")), r.astype(dtype)), {}


def _complex_unary(draw, dtype):
    x = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), "real"))
    return (x,), {}


def _polygamma(draw, dtype):
    shape = draw(crs.shapes(0, 2))
    if draw(st.booleans()):
        n = draw(st.integers(0, 3))
    else:   # orders broadcast against x, 0 (digamma) among them
        n = np.arange(4).reshape((4,) + (1,) * len(shape))
    return (n, draw(crs.arrays(dtype, shape, "positive"))), {}


def _multigammaln(draw, dtype):
    d = draw(st.integers(1, 4))
    x = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), "positive"))
    return ((x + (d - 1) / 2).astype(dtype), d), {}


SPECS = []
if sc is not None:
    from chainrules.rules.special import multigammaln, polygamma, softplus
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
        # i1e' = i0e - i1e (sign(x) + 1/x) and dawsn' = 1 - 2 x dawsn(x) cancel
        # at the stationary points (|x| = 1.5451, 0.9241)
        RuleSpec(sc.i1e, unary("nonzero", avoid=(-1.5451, 1.5451)), F),
        RuleSpec(sc.iv, order_first([0, 1, 2, 3]), F),
        RuleSpec(sc.ive, order_first([0, 1, 2, 3]), F),
        # Bessel functions (rules/special_bessel.py); order held constant
        RuleSpec(sc.jv, order_first([0, 1, 2.5], "positive", 0.5), F, wrt=(1,)),
        RuleSpec(sc.yv, order_first([0, 1, 2.5], "positive", 0.5), F, wrt=(1,)),
        RuleSpec(sc.yn, order_first([0, 1, 2], "positive", 0.5), F, wrt=(1,)),
        RuleSpec(sc.kv, order_first([0, 1, 2.5], "positive", 0.3), F, wrt=(1,)),
        RuleSpec(sc.kve, order_first([0, 1, 2.5], "positive", 0.3), F, wrt=(1,)),
        RuleSpec(sc.j0, unary(), F),
        RuleSpec(sc.j1, unary(), F),
        RuleSpec(sc.y0, unary("positive", 0.5), F),
        RuleSpec(sc.y1, unary("positive", 0.5), F),
        RuleSpec(sc.k0, unary("positive", 0.3), F),
        RuleSpec(sc.k1, unary("positive", 0.3), F),
        RuleSpec(sc.k0e, unary("positive", 0.3), F),
        RuleSpec(sc.k1e, unary("positive", 0.3), F),
        # incomplete gamma: P(a, x) in both arguments (the shape by its series)
        RuleSpec(sc.gammainc, binary(), F),
        RuleSpec(sc.gammaincc, binary(), F),
        RuleSpec(sc.gammaincinv, binary("positive", "unit"), F, wrt=(1,),
                 call=lambda a, y: sc.gammaincinv(a, 0.5 + 0.5 * y),
                 name="scipy.special.gammaincinv"),
        RuleSpec(sc.gammainccinv, binary("positive", "unit"), F, wrt=(1,),
                 call=lambda a, y: sc.gammainccinv(a, 0.5 + 0.5 * y),
                 name="scipy.special.gammainccinv"),
        RuleSpec(sc.betainc, ternary_x(), F, wrt=(2,)),
        RuleSpec(sc.betaincc, ternary_x(), F, wrt=(2,)),
        # the inverses are found by iteration: float32 values carry ~1e-4 error
        RuleSpec(sc.betaincinv, ternary_x(), ("float64",), wrt=(2,)),
        RuleSpec(sc.betaincinv, ternary_x(), ("float32",), wrt=(2,), rtol=3e-3),
        RuleSpec(sc.betainccinv, ternary_x(), ("float64",), wrt=(2,)),
        RuleSpec(sc.betainccinv, ternary_x(), ("float32",), wrt=(2,), rtol=3e-3),
        # error-function family, gamma extras, losses
        RuleSpec(sc.erfcinv, unary("unit", 1.0, 0.9), F),
        RuleSpec(sc.erfcx, unary(), F),
        RuleSpec(sc.dawsn, unary(avoid=(-0.9241, 0.9241)), F),
        RuleSpec(sc.wofz, _complex_unary, ("complex128", "float64")),
        RuleSpec(sc.rgamma, unary(), F),
        RuleSpec(sc.loggamma, unary("positive"), F),
        RuleSpec(sc.gammasgn, unary("nonzero", 0.0, 3.0), F, modes=frozenset({"nondiff"})),
        RuleSpec(sc.huber, huber_args, F),
        RuleSpec(sc.pseudo_huber, huber_args, F),
        RuleSpec(polygamma, _polygamma, F, name="chainrules.scipy.special.polygamma"),
        RuleSpec(multigammaln, _multigammaln, F, name="chainrules.scipy.special.multigammaln"),
        RuleSpec(softplus, unary(), F, name="chainrules.scipy.special.softplus"),
    ]
