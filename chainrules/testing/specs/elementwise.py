"""Specs for rules/elementwise.py."""

import numpy as np

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec


def unary(domain="real"):
    def sample(draw, dtype):
        return (draw(crs.arrays(dtype, draw(crs.shapes()), domain)),), {}
    return sample


C = ("float64", "float32", "complex128")
SPECS = [
    RuleSpec(np.sin, unary(), C),
    RuleSpec(np.cos, unary(), C),
    RuleSpec(np.exp, unary(), C),
    RuleSpec(np.log, unary("positive"), C),
    RuleSpec(np.tanh, unary(), C),
    RuleSpec(np.sqrt, unary("positive"), C),
]
