"""Specs for rules/complex.py: the non-holomorphic functions, on real and
complex inputs (away from 0, where abs and angle have no derivative)."""

import numpy as np

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

C = ("float64", "float32", "complex128")


def unary(domain="real", **kwargs):
    def sample(draw, dtype):
        return (draw(crs.arrays(dtype, draw(crs.shapes()), domain)),), dict(kwargs)
    return sample


SPECS = [
    RuleSpec(np.real, unary(), C),
    RuleSpec(np.real, unary(), C, call=lambda x: x.real, name="np.real-attribute"),
    RuleSpec(np.imag, unary(), C),
    RuleSpec(np.imag, unary(), C, call=lambda x: x.imag, name="np.imag-attribute"),
    RuleSpec(np.conjugate, unary(), C),
    RuleSpec(np.conjugate, unary(), C, call=lambda x: x.conj(), name="np.conjugate-method"),
    RuleSpec(np.angle, unary("nonzero"), C),
    RuleSpec(np.angle, unary("nonzero", deg=True), C, name="np.angle-deg"),
    RuleSpec(np.absolute, unary("nonzero"), C),
    RuleSpec(np.absolute, unary("nonzero"), C, call=lambda x: abs(x), name="np.absolute-operator"),
    RuleSpec(np.absolute, unary("nonzero"), ("complex128",),
             call=lambda z: np.abs(z) ** 2, name="np.absolute-squared"),
]
