"""The registry sweep: every built-in spec through the generic checkers,
and a coverage audit that fails for any registered rule without a spec.

Each case records the op once and runs the checks of its modes on that
recording (``check_rule``): pullback and pushforward against float64 finite
differences, the adjoint identity, raw cotangent kinds, structural zeros,
the fast HVP path (``pullback_with_tangents``, required for built-in rules)
against finite differences of the gradient, and no mutation. Run one family
with ``-k "np.sum"``. Failing examples are not shrunk (a failure message
already names the op, the argument shapes and dtypes and the direction), so
a broken rule costs seconds, not minutes.
"""

import numpy as np
import pytest
from hypothesis import Phase, given, settings, strategies as st

from chainrules.registry import builtin_ops, op_name
from chainrules.testing import all_specs, check_rule
from chainrules.testing.specs import FAMILIES, family_specs
from chainrules.testing.plugin import limit_blas_threads

# the sweep makes thousands of tiny LAPACK calls: BLAS threads only add
# overhead there (and on a loaded 2-core machine they multiply the run time)
limit_blas_threads(1)

SPECS = all_specs()

# every rule in both tiers: the fast tier runs fewer examples of each (the
# profile's count), never fewer rules
pytestmark = pytest.mark.every_case


def _id(case):
    spec, dtype = case
    return f"{spec.label}-{dtype.name}"


def _run(case, data):
    spec, dtype = case
    if spec.skip:
        pytest.skip(spec.skip)
    args, kwargs = spec.args(data.draw, dtype)
    check_rule(spec.op, *args, call=spec.call, rtol=spec.rtol, atol=spec.atol,
               modes=spec.modes, hvp_fast=True, wrt=getattr(spec, "wrt", None),
               directions=2, op_kwargs=kwargs)


def _family_test(specs):
    cases = [(spec, np.dtype(d)) for spec in specs for d in spec.dtypes]

    # one test function per family: Hypothesis lengthens a test function's
    # settings chain by one level per call, so a single function over every
    # case of the library would reach Python's recursion limit
    @pytest.mark.parametrize("case", cases, ids=[_id(c) for c in cases])
    @settings(phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking:
    @given(data=st.data())                                           # messages show the example
    def test_rule(case, data):
        _run(case, data)

    return test_rule


for _fam in FAMILIES:
    _specs = family_specs(_fam)
    if _specs:
        globals()[f"test_rule_{_fam}"] = _family_test(_specs)
del _fam, _specs


def test_every_registered_rule_has_a_spec():
    covered = {spec.op for spec in SPECS}
    missing = sorted(op_name(op) for op in builtin_ops() if op not in covered)
    assert not missing, "registered rules without a RuleSpec: " + ", ".join(missing)
