"""``plus_second`` builds the second-order term of a pullback with tangents
in one fresh array, in place. It must give exactly the bits of the plain
expression ``plus(cd, times(times(g, d2), t))`` and never write to an array
it was given, for every kind of partial, shape and dtype."""

import itertools

import numpy as np
import pytest

from chainrules.arrays import uniform_array
from chainrules.derived_common import plus, plus_second, times
from chainrules.tangents import ZERO

rng = np.random.default_rng(3)
A = rng.standard_normal((4, 3))


def _arrays():
    return {
        "g": A.copy(),
        "g-uniform": uniform_array(np.float64(0.7), (4, 3)),
        "g-0d": np.array(1.3),
        "g-f32": A.astype(np.float32),
    }


D2 = {
    "zero": 0, "one": 1, "two": 2, "float": -0.37, "np.float64": np.float64(1.7),
    "array": rng.standard_normal((4, 3)), "row": rng.standard_normal(3),
    "complex-array": rng.standard_normal((4, 3)) + 1j,
}
T = {
    "t": rng.standard_normal((4, 3)), "t-row": rng.standard_normal(3),
    "t-f32": rng.standard_normal((4, 3)).astype(np.float32),
    "t-complex": rng.standard_normal((4, 3)) * (1 - 2j),
    "t-0d": np.array(-0.4),
}
CD = {"zero": ZERO, "cd": rng.standard_normal((4, 3)),
      "cd-complex": rng.standard_normal((4, 3)) * 1j, "cd-row": rng.standard_normal(3)}


def _copy(v):
    return v.copy() if isinstance(v, np.ndarray) else v


@pytest.mark.parametrize("gk, dk, tk, ck", list(itertools.product(
    _arrays(), D2, T, CD)))
def test_bits_and_inputs_untouched(gk, dk, tk, ck):
    g, d2, t, cd = _arrays()[gk], D2[dk], T[tk], CD[ck]
    try:
        expect = plus(cd, times(times(g, d2), t))
    except ValueError:  # shapes that do not broadcast: not a case
        pytest.skip("shapes do not broadcast")
    before = [_copy(v) for v in (g, d2, t, cd)]
    got = plus_second(cd, g, d2, t)
    if expect is ZERO:
        assert got is ZERO
    else:
        assert type(got) is type(expect)
        assert np.result_type(got) == np.result_type(expect)
        np.testing.assert_array_equal(got, expect)
    for old, new in zip(before, (g, d2, t, cd)):
        if isinstance(old, np.ndarray):
            np.testing.assert_array_equal(new, old)
    # the result is one of the arrays passed in only where the plain
    # expression returns that array itself (a zero second partial: cd)
    assert all(got is not v or expect is v for v in (g, t, cd)
               if isinstance(v, np.ndarray))
