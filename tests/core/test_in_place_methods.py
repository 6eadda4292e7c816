"""ndarray methods that write in place and that chainrules does not record
are refused on traced values with UntraceableError naming the out-of-place
spelling; the input is untouched (``x.fill(v)`` and ``x.put(...)`` are
recorded writes: tests/core/test_writes.py, tests/core/test_writes_views.py)."""

import numpy as np
import pytest

import chainrules as cr


@pytest.mark.parametrize("call,hint", [
    ("x.sort()", "np.sort"),
    ("x.partition(1)", "np.partition"),
    ("x.resize((3,))", "np.resize"),
    ("x.itemset(0, 1.0)", "index_update"),
    ("x.setfield(1.0, np.float64)", "out of place"),
])
def test_in_place_method_refused(call, hint):
    def f(x):
        exec(call, {"np": np, "x": x})
        return np.sum(x)

    x = np.array([0.5, 1.5, 2.0])
    with pytest.raises(cr.UntraceableError, match=f"in-place method.*{hint}"):
        cr.grad(f)(x)
    np.testing.assert_array_equal(x, [0.5, 1.5, 2.0])
