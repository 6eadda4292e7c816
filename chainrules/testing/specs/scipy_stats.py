"""Specs for ``chainrules.scipy.stats`` (compositions: every step is a
registered rule, and the checkers test each method as a whole), with x and
every continuous parameter differentiated.

Samples stay inside the support and the parameter domains, away from the
boundaries and from kinks (laplace at x = loc). Shapes of x, the shape
parameters, loc and scale are drawn to broadcast against each other.

The cdfs written with ``gammainc``, ``gammaincc`` and ``betainc`` (t, gamma,
chi2, invgamma, beta, poisson, binom, nbinom) differentiate x, loc, scale
(and mu, p); the ufuncs' shape arguments (a, df, b, nbinom's n) are held
constant here (betainc has no derivative in them; gammainc's, by its
series, is checked in tests/rules/test_special_more.py).
"""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

try:
    from chainrules.scipy import stats
except ImportError:  # pragma: no cover - SciPy is an optional extra
    stats = None

F = ("float64", "float32")
F64 = ("float64",)
_CONT_METHODS = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf")

# standard-form support sample (z) and shape-parameter ranges per distribution
_CONTINUOUS = {
    "norm": ("real", ()),
    "t": ("real", ((0.8, 8.0),)),
    "gamma": ((0.3, 3.0), ((0.6, 4.0),)),
    "beta": ((0.1, 0.9), ((0.6, 4.0), (0.6, 4.0))),
    "chi2": ((0.3, 4.0), ((1.2, 6.0),)),
    "expon": ((0.1, 3.0), ()),
    "laplace": ("real", ()),
    "logistic": ("real", ()),
    "cauchy": ("real", ()),
    "lognorm": ((0.3, 3.0), ((0.4, 1.5),)),
    "uniform": ((0.1, 0.9), ()),
    "invgamma": ((0.3, 3.0), ((0.8, 4.0),)),
}
# cdfs that go through gammainc/gammaincc/betainc
_INCOMPLETE = ("t", "gamma", "chi2", "invgamma", "beta")
_TAIL = ("cdf", "logcdf", "sf", "logsf")


def _continuous(name, method):
    zdom, shape_doms = _CONTINUOUS[name]
    ns = len(shape_doms)

    def sample(draw, dtype):
        shapes = draw(crs.broadcastable_shapes(3 + ns, 0, 2))
        zs, ps, ls, ss = shapes[0], shapes[1:1 + ns], shapes[1 + ns], shapes[2 + ns]
        loc = draw(crs.arrays("float64", ls, (-0.5, 0.5)))
        scale = draw(crs.arrays("float64", ss, (0.8, 2.0)))
        # laplace has a kink at z = 0
        z = draw(crs.arrays("float64", zs, zdom, avoid=(0.0,) if name == "laplace" else (),
                            margin=0.2))
        params = tuple(draw(crs.arrays("float64", s, d)).astype(dtype)
                       for s, d in zip(ps, shape_doms))
        x = (loc + scale * z).astype(dtype)
        if method == "entropy":
            return params + (loc.astype(dtype), scale.astype(dtype)), {}
        return (x,) + params + (loc.astype(dtype), scale.astype(dtype)), {}

    fn = getattr(getattr(stats, name), method)

    def call(*args):
        return fn(*args[:-2], loc=args[-2], scale=args[-1])

    return sample, call, fn


def _cont_spec(name, method, **kw):
    sample, call, fn = _continuous(name, method)
    return RuleSpec(fn, sample, call=call, name=f"scipy.stats.{name}.{method}", **kw)


def _cont_pending(name, method):
    """x, loc and scale differentiated; the shape parameters constant."""
    ns = len(_CONTINUOUS[name][1])
    wrt = (0, ns + 1, ns + 2)
    return _cont_spec(name, method, dtypes=F, wrt=wrt)


# -- discrete ------------------------------------------------------------------------------
def _discrete(name, method):
    def sample(draw, dtype):
        shape = draw(crs.shapes(0, 2))
        p = draw(crs.arrays("float64", draw(st.sampled_from([(), shape])), (0.1, 0.9)))
        k = np.asarray(draw(crs.arrays("float64", shape, (0.0, 6.99)))).astype(np.int64)
        if name == "poisson":
            mu = draw(crs.arrays("float64", draw(st.sampled_from([(), shape])), (0.5, 4.0)))
            return (k, mu.astype(dtype)), {}
        if name == "binom":
            # k = n is beyond the support of the tail methods (sf = 0)
            n = k + draw(st.integers(0 if method in ("pmf", "logpmf") else 1, 3))
            return (k, n, p.astype(dtype)), {}
        if name == "nbinom":
            n = draw(crs.arrays("float64", draw(st.sampled_from([(), shape])), (0.5, 4.0)))
            return (k, n.astype(dtype), p.astype(dtype)), {}
        if name == "geom":
            return (k + 1, p.astype(dtype)), {}
        # bernoulli (k = 1 is beyond the support of sf and logsf: -inf)
        return ((k % 2) * (method not in ("sf", "logsf")), p.astype(dtype)), {}

    def sample_entropy(draw, dtype):
        return (draw(crs.arrays(dtype, draw(crs.shapes(0, 2)), (0.1, 0.9))),), {}

    fn = getattr(getattr(stats, name), method)
    # geom's sf (1 - p)^k = exp(k log1p(-p)) is linear in p at k = 1: its Hessian
    # is rounding noise, judged against an absolute tolerance
    atol = 1e-7 if (name, method) == ("geom", "sf") else None
    return RuleSpec(fn, sample_entropy if method == "entropy" else sample, F, atol=atol,
                    name=f"scipy.stats.{name}.{method}")


def _discrete_pending(name, method):
    spec = _discrete(name, method)
    # nbinom's n is a shape argument of betainc: held constant
    return RuleSpec(spec.op, spec.args, F, name=spec.name,
                    wrt=(2,) if name == "nbinom" else None)


# -- multivariate --------------------------------------------------------------------------
def _mvn(kind, method):
    def sample(draw, dtype):
        d = draw(st.integers(1, 4))
        xshape = draw(st.sampled_from([(d,), (3, d), (2, 2, d)]))
        x = draw(crs.arrays(dtype, xshape))
        mean = draw(crs.arrays(dtype, (d,)))
        if kind in ("full", "allow_singular"):
            cov = draw(crs.spd_matrices(dtype, d))
        elif kind == "diag":
            cov = draw(crs.arrays(dtype, (d,), (0.5, 2.0)))
        else:
            cov = draw(crs.arrays(dtype, (), (0.5, 2.0)))
        if method == "entropy":
            return (cov,), {}
        return (x, mean, cov), {}

    fn = getattr(stats.multivariate_normal, method)
    if method == "entropy":
        # with mean=None SciPy takes a 1-D cov for a 1-dimensional distribution
        call = (lambda cov: fn(np.zeros(np.shape(cov)[-1] if np.ndim(cov) else 1), cov))
    elif kind == "allow_singular":
        call = (lambda x, m, c: fn(x, m, c, allow_singular=True))
    else:
        call = None
    return RuleSpec(fn, sample, F, call=call,
                    name=f"scipy.stats.multivariate_normal.{method}-{kind}")


def _dirichlet(method):
    def sample(draw, dtype):
        k = draw(st.integers(2, 4))
        n = draw(st.sampled_from([(), (3,)]))
        alpha = draw(crs.arrays(dtype, (k,), (0.6, 1.5)))
        if method == "entropy":
            return (alpha,), {}
        # k - 1 components (the last is 1 - sum): perturbations stay on the simplex
        w = draw(crs.arrays("float64", (k,) + n, (1.0, 2.0)))
        x = (w / np.sum(w, axis=0))[:-1]
        return (x.astype(dtype), alpha), {}

    fn = getattr(stats.dirichlet, method)
    # SciPy's simplex test (|sum(x) - 1| <= 1e-9) rejects float32 points
    return RuleSpec(fn, sample, F if method == "entropy" else F64,
                    name=f"scipy.stats.dirichlet.{method}")


SPECS = []
PENDING_SPECS = []
if stats is not None:
    for _name in _CONTINUOUS:
        for _m in _CONT_METHODS + ("entropy",):
            if _name in _INCOMPLETE and _m in _TAIL:
                PENDING_SPECS.append(_cont_pending(_name, _m))
            else:
                SPECS.append(_cont_spec(_name, _m, dtypes=F))
    for _name in ("poisson", "binom", "nbinom", "geom", "bernoulli"):
        SPECS += [_discrete(_name, "pmf"), _discrete(_name, "logpmf")]
        if _name in ("geom", "bernoulli"):
            SPECS += [_discrete(_name, m) for m in _TAIL + ("entropy",)]
        else:
            PENDING_SPECS += [_discrete_pending(_name, m) for m in _TAIL]
    for _kind in ("full", "allow_singular", "diag", "scalar"):
        SPECS += [_mvn(_kind, "logpdf"), _mvn(_kind, "pdf")]
    SPECS += [_mvn("full", "entropy"), _mvn("diag", "entropy")]
    SPECS += [_dirichlet(m) for m in ("logpdf", "pdf", "entropy")]

# the incomplete gamma/beta functions have rules in their last argument
SPECS += PENDING_SPECS
PENDING_SPECS = []
