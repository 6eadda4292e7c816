"""The registry sweep: every built-in spec through the generic checkers,
and a coverage audit that fails for any registered rule without a spec."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import chainrules as cr
from chainrules.registry import builtin_ops, op_name
from chainrules.testing import all_specs, check_frule, check_hvp, check_rrule
from chainrules.tracing import Traced

SPECS = all_specs()
CASES = [(spec, np.dtype(d)) for spec in SPECS for d in spec.dtypes]


def _id(case):
    spec, dtype = case
    return f"{spec.label}-{dtype.name}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
@given(data=st.data())
def test_rule(case, data):
    spec, dtype = case
    args, kwargs = spec.args(data.draw, dtype)
    f = spec.function()
    if "nondiff" in spec.modes:
        expected = f(*args, **kwargs)

        def probe(*xs):
            merged = [x for x in xs]
            out = f(*merged, **kwargs)
            for leaf in cr.pytree.flatten(out)[0]:
                assert not isinstance(leaf, Traced), f"{spec.label} returned a traced value"
            np.testing.assert_equal(cr.stop_gradient(out), expected)
            return np.sum(xs[0]) * 0.0

        diff = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)
                and a.dtype.kind in "fc"]
        assert diff, f"{spec.label}: nondiff spec needs a float array argument"
        cr.grad(lambda *d: probe(*[d[diff.index(i)] if i in diff else a
                                   for i, a in enumerate(args)]),
                argnums=tuple(range(len(diff))))(*[args[i] for i in diff])
        return
    kw = dict(kwargs)
    if "rrule" in spec.modes:
        check_rrule(spec.op, *args, call=spec.call, rtol=spec.rtol, **kw)
    if "frule" in spec.modes:
        check_frule(spec.op, *args, call=spec.call, rtol=spec.rtol, **kw)
    if "hvp" in spec.modes:
        check_hvp(spec.op, *args, call=spec.call, rtol=spec.rtol, **kw)


def test_every_registered_rule_has_a_spec():
    covered = {spec.op for spec in SPECS}
    missing = sorted(op_name(op) for op in builtin_ops() if op not in covered)
    assert not missing, "registered rules without a RuleSpec: " + ", ".join(missing)
