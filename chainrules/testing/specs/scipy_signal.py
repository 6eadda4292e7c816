"""Specs for rules/scipy_signal.py: the full N-D convolution (both inputs,
shapes of either order, 1-D to 2-D, size-1 axes) and the constant filter."""

import numpy as np
from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec

SPECS = []

try:
    from chainrules.rules import scipy_signal as _sg
except ImportError:  # pragma: no cover
    _sg = None


if _sg is not None and hasattr(_sg, "conv_full"):
    def _conv_args(draw, dtype):
        nd = draw(st.integers(1, 2))
        s1 = tuple(draw(st.integers(1, 4)) for _ in range(nd))
        s2 = tuple(draw(st.integers(1, 3)) for _ in range(nd))
        method = draw(st.sampled_from(["direct", "fft"]))
        return (draw(crs.arrays(dtype, s1)), draw(crs.arrays(dtype, s2))), {"method": method}

    def _lfilter_args(draw, dtype):
        shape = (draw(st.integers(1, 3)), draw(st.integers(1, 5)))
        axis = draw(st.sampled_from([0, -1]))
        b = np.array([0.3, -0.2, 0.1])[:draw(st.integers(1, 3))]
        a = np.array([1.0, -0.4])
        return (draw(crs.arrays(dtype, shape)), b, a, axis), {}

    SPECS += [
        RuleSpec(_sg.conv_full, _conv_args, ("float64", "float32", "complex128"),
                 name="scipy.signal.convolve"),
        RuleSpec(_sg.lfilter_x, _lfilter_args, ("float64", "float32"), wrt=(0,),
                 name="scipy.signal.lfilter"),
    ]
