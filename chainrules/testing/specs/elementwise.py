"""Specs for rules/elementwise.py: one line per function, with the domain
that keeps it smooth (away from poles and branch cuts)."""

import numpy as np

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

R = ("float64", "float32")
C = ("float64", "float32", "complex128")
# arctan and arcsinh have branch cuts on the imaginary axis beyond +-i (and
# branch points at +-i): complex samples keep |Im z| <= 0.85
_INSIDE_I = (-1.2, 1.2)


def unary(domain="real", scale=1.0, complex_domain=None):
    """One array argument in ``domain`` (``complex_domain`` for complex
    dtypes, whose real and imaginary parts are each drawn from it scaled by
    1/sqrt(2))."""
    def sample(draw, dtype):
        dom = complex_domain if complex_domain is not None and np.dtype(
            dtype).kind == "c" else domain
        x = draw(crs.arrays(dtype, draw(crs.shapes()), dom))
        return (x if scale == 1.0 else (x * scale).astype(dtype),), {}
    return sample


def _with_nans(draw, dtype):
    """An array with NaNs at random places (in the real and imaginary parts
    independently for complex), replaced by ``nan=0.5``."""
    shape = draw(crs.shapes())
    x = draw(crs.arrays(dtype, shape))
    hole = draw(crs.arrays("float64", shape)) > 1.0
    if x.dtype.kind == "c":
        hole_im = draw(crs.arrays("float64", shape)) < -1.0
        x = np.where(hole, np.nan, x.real) + 1j * np.where(hole_im, np.nan, x.imag)
    else:
        x = np.where(hole, np.nan, x)
    return (np.asarray(x).astype(dtype),), {"nan": 0.5}


SPECS = [
    RuleSpec(np.exp, unary(), C),
    RuleSpec(np.exp2, unary(), C),
    RuleSpec(np.expm1, unary(), C),
    RuleSpec(np.log, unary("positive"), C),
    RuleSpec(np.log2, unary("positive"), C),
    RuleSpec(np.log10, unary("positive"), C),
    RuleSpec(np.log1p, unary("unit"), C),
    RuleSpec(np.sin, unary(), C),
    RuleSpec(np.cos, unary(), C),
    RuleSpec(np.tan, unary("unit"), C),
    RuleSpec(np.arcsin, unary("unit"), C),
    RuleSpec(np.arccos, unary("unit"), C),
    RuleSpec(np.arctan, unary(complex_domain=_INSIDE_I), C),
    RuleSpec(np.sinh, unary(), C),
    RuleSpec(np.cosh, unary(), C),
    RuleSpec(np.tanh, unary(), C),
    RuleSpec(np.arcsinh, unary(complex_domain=_INSIDE_I), C),
    RuleSpec(np.arccosh, unary("gt1"), C),
    RuleSpec(np.arctanh, unary("unit"), C),
    RuleSpec(np.deg2rad, unary(), R),
    RuleSpec(np.radians, unary(), R),
    RuleSpec(np.rad2deg, unary(), R),
    RuleSpec(np.degrees, unary(), R),
    RuleSpec(np.sinc, unary(), C),
    RuleSpec(np.sinc, unary("real", 0.02), C, name="np.sinc-near-zero"),
    RuleSpec(np.nan_to_num, unary(), C),
    RuleSpec(np.nan_to_num, _with_nans, C, name="np.nan_to_num-nans"),
]
