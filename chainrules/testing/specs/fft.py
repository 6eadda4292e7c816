"""Specs for rules/fft.py: every transform with n/s padding and truncation,
axes and the three normalizations."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

C = ("float64", "float32", "complex128")
R = ("float64", "float32")
NORMS = [None, "backward", "ortho", "forward"]


def one_d(real_out=False):
    def sample(draw, dtype):
        shape = draw(crs.shapes(1, 3, 2 if real_out else 1, 4))
        x = draw(crs.arrays(dtype, shape))
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        kw = {"axis": axis, "norm": draw(st.sampled_from(NORMS))}
        if draw(st.booleans()):
            kw["n"] = draw(st.integers(2 if real_out else 1, 6))
        return (x,), kw
    return sample


def n_d(two=False, real_out=False):
    def sample(draw, dtype):
        shape = draw(crs.shapes(2, 3, 2 if real_out else 1, 4))
        x = draw(crs.arrays(dtype, shape))
        kw = {"norm": draw(st.sampled_from(NORMS))}
        if two:
            axes = (-2, -1) if draw(st.booleans()) else (0, -1)
        elif draw(st.integers(0, 3)) == 0:
            # axes omitted: every axis (without s: NumPy deprecates s without axes)
            return (x,), kw
        else:
            axes = tuple(draw(st.permutations(range(len(shape))))[:draw(
                st.integers(1, len(shape)))])
        kw["axes"] = axes
        if draw(st.booleans()):
            kw["s"] = tuple(draw(st.integers(2, 5)) for _ in axes)
        return (x,), kw
    return sample


def shift(draw, dtype):
    shape = draw(crs.shapes(1, 3, 1, 4))
    x = draw(crs.arrays(dtype, shape))
    axes = draw(st.sampled_from([None, 0, -1, tuple(range(len(shape)))]))
    return (x,), {"axes": axes}


SPECS = [
    RuleSpec(np.fft.fft, one_d(), C),
    RuleSpec(np.fft.ifft, one_d(), C),
    RuleSpec(np.fft.rfft, one_d(), R),
    RuleSpec(np.fft.irfft, one_d(True), C),
    RuleSpec(np.fft.fftn, n_d(), C),
    RuleSpec(np.fft.ifftn, n_d(), C),
    RuleSpec(np.fft.fft2, n_d(True), C),
    RuleSpec(np.fft.ifft2, n_d(True), C),
    RuleSpec(np.fft.rfftn, n_d(), R),
    RuleSpec(np.fft.irfftn, n_d(real_out=True), C),
    RuleSpec(np.fft.rfft2, n_d(True), R),
    RuleSpec(np.fft.irfft2, n_d(True, True), C),
    RuleSpec(np.fft.fftshift, shift, C),
    RuleSpec(np.fft.ifftshift, shift, C),
]
