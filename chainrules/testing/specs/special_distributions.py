"""Specs for rules/special_distributions.py (scipy.special; empty without SciPy).

Counts, sample sizes and degrees are drawn as plain ints or integer arrays
(held constant); shapes and degrees of freedom as float arrays held
constant with ``wrt=``. Each domain keeps the densities away from their
zeros and poles, so that the functions are smooth and well conditioned
there."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover
    sc = None

F = ("float64", "float32")
PROB = (0.15, 0.85)


def _shapes(draw, n):
    return draw(crs.broadcastable_shapes(n, 0, 2))


def _int(draw, values, shape):
    """A plain int from ``values``, or an integer array of ``shape``."""
    if draw(st.booleans()):
        return int(draw(st.sampled_from(values)))
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).choice(np.asarray(values, np.int64), size=shape)


def counts_then(pairs, domain=PROB, strong_n=False):
    """(k, n, x): a count pair (k < n where the binomial needs it) drawn
    from ``pairs`` (k possibly an integer array) and ``x`` in ``domain``.
    ``strong_n``: n as an int64 scalar, so that SciPy picks the loop with an
    integer n (its float32 loop of bdtr converts n with a DeprecationWarning)."""
    def sample(draw, dtype):
        sk, sx = _shapes(draw, 2)
        k, n = draw(st.sampled_from(pairs))
        kk = _int(draw, [k, max(k - 1, 0)], sk)
        return (kk, np.int64(n) if strong_n else n, draw(crs.arrays(dtype, sx, domain))), {}
    return sample


def count_then(counts, domain):
    """(k, x): an integer count and ``x`` in ``domain``."""
    def sample(draw, dtype):
        sk, sx = _shapes(draw, 2)
        return (_int(draw, counts, sk), draw(crs.arrays(dtype, sx, domain))), {}
    return sample


def unary(domain):
    # arrays, 0-d included (specs/special.py's unary scales and shifts, which
    # turns a 0-d array into a NumPy scalar: the payload sweep needs arrays)
    def sample(draw, dtype):
        return (draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), domain)),), {}
    return sample


def params_then(*domains):
    """Float arguments, one per domain (the last differentiated)."""
    def sample(draw, dtype):
        shapes = _shapes(draw, len(domains))
        return tuple(draw(crs.arrays(dtype, s, d)) for s, d in zip(shapes, domains)), {}
    return sample


def smirnov_args(draw, dtype):
    """(n, d) with d at least 0.05 from the kinks of smirnov at 1/n (its
    first derivative jumps) and 2/n (its second)."""
    n = int(draw(st.sampled_from([1, 2, 3, 5, 8])))
    d = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), (0.05, 0.95), avoid=(1 / n, 2 / n),
                        margin=0.05))
    return (n, np.clip(d, 0.02, 0.97).astype(dtype)), {}


def smirnovi_args(draw, dtype):
    """(n, p) with p in PROB, 0.05 from the images smirnov(n, 1/n) and
    smirnov(n, 2/n) of the kinks."""
    n = int(draw(st.sampled_from([1, 2, 3, 5, 8])))
    kinks = tuple(float(sc.smirnov(n, d)) for d in (1 / n, 2 / n) if d < 1)
    p = draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), PROB, avoid=kinks, margin=0.05))
    return (n, np.clip(p, 0.1, 0.9).astype(dtype)), {}


def degree_then(degrees, *domains):
    """(n, *params, x): an integer degree (plain or array), real parameters
    and ``x`` (of ``dtype``, complex included), one domain each."""
    def sample(draw, dtype):
        shapes = _shapes(draw, len(domains) + 1)
        n = _int(draw, degrees, shapes[0])
        real = np.finfo(dtype).dtype
        params = tuple(draw(crs.arrays(real, s, d)) for s, d in zip(shapes[1:-1], domains[:-1]))
        return (n,) + params + (draw(crs.arrays(dtype, shapes[-1], domains[-1])),), {}
    return sample


DEG = [0, 1, 2, 3, 4, 6]

SPECS = []
if sc is not None:
    BINOM = [(0, 3), (1, 4), (2, 6), (4, 7)]
    NBINOM = [(0, 1), (1, 3), (3, 2), (5, 4)]
    SPECS = [
        # binomial, negative binomial in p (counts constant)
        RuleSpec(sc.bdtr, counts_then(BINOM, strong_n=True), F, wrt=(2,)),
        RuleSpec(sc.bdtrc, counts_then(BINOM, strong_n=True), F, wrt=(2,)),
        RuleSpec(sc.bdtri, counts_then(BINOM, strong_n=True), F, wrt=(2,)),
        RuleSpec(sc.nbdtr, counts_then(NBINOM), F, wrt=(2,)),
        RuleSpec(sc.nbdtrc, counts_then(NBINOM), F, wrt=(2,)),
        RuleSpec(sc.nbdtri, counts_then(NBINOM), F, wrt=(2,)),
        # Poisson in m
        RuleSpec(sc.pdtr, count_then([0, 1, 2, 4], (0.5, 4.0)), F, wrt=(1,)),
        RuleSpec(sc.pdtrc, count_then([0, 1, 2, 4], (0.5, 4.0)), F, wrt=(1,)),
        RuleSpec(sc.pdtri, count_then([0, 1, 2, 4], PROB), F, wrt=(1,)),
        # chi-square, Student t, F in the point (degrees of freedom constant)
        RuleSpec(sc.chdtr, params_then((1.0, 6.0), (0.5, 6.0)), F, wrt=(1,)),
        RuleSpec(sc.chdtrc, params_then((1.0, 6.0), (0.5, 6.0)), F, wrt=(1,)),
        RuleSpec(sc.chdtri, params_then((1.0, 6.0), PROB), F, wrt=(1,)),
        RuleSpec(sc.stdtr, params_then((1.0, 10.0), "real"), F, wrt=(1,)),
        RuleSpec(sc.stdtrit, params_then((1.0, 10.0), PROB), F, wrt=(1,)),
        RuleSpec(sc.fdtr, params_then((1.0, 8.0), (1.0, 8.0), (0.3, 3.0)), F, wrt=(2,)),
        RuleSpec(sc.fdtrc, params_then((1.0, 8.0), (1.0, 8.0), (0.3, 3.0)), F, wrt=(2,)),
        RuleSpec(sc.fdtri, params_then((1.0, 8.0), (1.0, 8.0), PROB), F, wrt=(2,)),
        # gamma: in the rate a and the point x (or p), the shape b constant
        RuleSpec(sc.gdtr, params_then("positive", (0.5, 4.0), "positive"), F, wrt=(0, 2)),
        RuleSpec(sc.gdtrc, params_then("positive", (0.5, 4.0), "positive"), F, wrt=(0, 2)),
        RuleSpec(sc.gdtrix, params_then("positive", (0.5, 4.0), PROB), F, wrt=(0, 2)),
        RuleSpec(sc.gdtria, params_then(PROB, (0.5, 4.0), "positive"), F, wrt=(0, 2)),
        # noncentral t and F in the noncentrality and the point
        RuleSpec(sc.nctdtr, params_then((1.0, 10.0), (-1.0, 1.0), "real"), F, wrt=(1, 2)),
        RuleSpec(sc.ncfdtr, params_then((1.0, 8.0), (1.0, 8.0), (0.3, 3.0), (0.3, 3.0)), F,
                 wrt=(2, 3)),
        # Kolmogorov, Smirnov
        RuleSpec(sc.kolmogorov, unary((0.3, 2.5)), F),
        RuleSpec(sc.kolmogi, unary((0.1, 0.9)), F),
        RuleSpec(sc.smirnov, smirnov_args, F, wrt=(1,)),
        RuleSpec(sc.smirnovi, smirnovi_args, F, wrt=(1,)),
        RuleSpec(sc.ndtri_exp, unary((-5.0, -0.2)), F),
        # orthogonal polynomials in x (degree and parameters constant)
        RuleSpec(sc.eval_legendre, degree_then(DEG, "unit"), F, wrt=(1,)),
        # holomorphic in x: SciPy's complex loops
        RuleSpec(sc.eval_legendre, degree_then(DEG, "unit"), ("complex128",), wrt=(1,)),
        RuleSpec(sc.eval_jacobi, degree_then(DEG, "positive", "positive", "unit"),
                 ("complex128",), wrt=(3,)),
        RuleSpec(sc.eval_chebyt, degree_then(DEG, "unit"), F, wrt=(1,)),
        RuleSpec(sc.eval_chebyu, degree_then(DEG, "unit"), F, wrt=(1,)),
        RuleSpec(sc.eval_chebyc, degree_then(DEG, "real"), F, wrt=(1,)),
        RuleSpec(sc.eval_chebys, degree_then(DEG, "real"), F, wrt=(1,)),
        RuleSpec(sc.eval_sh_legendre, degree_then(DEG, (0.05, 0.95)), F, wrt=(1,)),
        RuleSpec(sc.eval_sh_chebyt, degree_then(DEG, (0.05, 0.95)), F, wrt=(1,)),
        RuleSpec(sc.eval_sh_chebyu, degree_then(DEG, (0.05, 0.95)), F, wrt=(1,)),
        RuleSpec(sc.eval_laguerre, degree_then(DEG, (0.0, 4.0)), F, wrt=(1,)),
        # integer-degree loops only: float32 x is computed in float64
        RuleSpec(sc.eval_hermite, degree_then(DEG, "real"), ("float64",), wrt=(1,)),
        RuleSpec(sc.eval_hermitenorm, degree_then(DEG, "real"), ("float64",), wrt=(1,)),
        RuleSpec(sc.eval_gegenbauer, degree_then(DEG, "positive", "unit"), F, wrt=(2,)),
        RuleSpec(sc.eval_genlaguerre, degree_then(DEG, "positive", (0.0, 4.0)), F, wrt=(2,)),
        RuleSpec(sc.eval_jacobi, degree_then(DEG, "positive", "positive", "unit"), F,
                 wrt=(3,)),
        RuleSpec(sc.eval_sh_jacobi, degree_then(DEG, (2.0, 3.0), (0.5, 1.5), (0.05, 0.95)), F,
                 wrt=(3,)),
        # np.i0 runs as scipy.special.i0 (a composition)
        RuleSpec(np.i0, unary("real"), F),
    ]
