"""Specs for the rules of rules/scipy_fft.py: the fast Hankel transforms
(the other transforms of scipy.fft are compositions of NumPy's FFT rules,
checked in tests/rules/test_scipy_fft.py)."""

from hypothesis import strategies as st

from chainrules.testing import strategies as crs
from chainrules.testing.specs import RuleSpec
from chainrules.rules import scipy_fft

try:
    import scipy.fft  # noqa: F401  (SciPy computes the transforms)
except ImportError:  # pragma: no cover
    scipy = None


def _hankel(draw, dtype):
    """An array of one to three axes (transformed along the last, of 1 to 9
    points) and the transform's parameters: ``dln``, ``mu``, ``offset`` and
    ``bias`` (0 half of the time, SciPy's default)."""
    shape = draw(crs.shapes(1, 3, max_side=9))
    a = draw(crs.arrays(dtype, shape, "real"))
    dln = draw(st.sampled_from([0.05, 0.1, 0.3]))
    mu = draw(st.sampled_from([-0.5, 0.0, 1.5]))
    offset = draw(st.sampled_from([0.0, 0.2]))
    bias = draw(st.sampled_from([0.0, 0.0, 0.3, -0.2]))
    return (a, dln, mu, offset, bias), {}


SPECS = []
if scipy is not None:
    SPECS = [
        RuleSpec(scipy_fft.fht_last, _hankel, ("float64", "float32"), wrt=(0,)),
        RuleSpec(scipy_fft.ifht_last, _hankel, ("float64", "float32"), wrt=(0,)),
    ]
