"""Property-based testing of your own rule with Hypothesis and chainrules.testing.

Run it as a script (``python examples/property_testing.py``) or collect it
with pytest (``python -m pytest examples/property_testing.py``): the
``test_*`` functions below are ordinary Hypothesis tests.

The rule under test is ``log1pexp`` (softplus), made an operation with
``chainrules.primitive`` and given a closure rule with ``chainrules.rrule``.
A second, deliberately wrong rule shows what a failure looks like.

The same module can be swept from the command line, which prints a table of
op, modes checked, examples, worst relative error and pass/fail:

    python -m chainrules.testing examples/my_rules.py
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
from chainrules.testing import CheckFailure, check_grads, check_rule
from chainrules.testing import strategies as crs


@cr.primitive
def log1pexp(x):
    """softplus: log(1 + exp(x))."""
    return np.logaddexp(0.0, x)


@cr.rrule(log1pexp)
def _log1pexp_rule(x):
    y = log1pexp(x)

    def log1pexp_pullback(g):
        return (g / (1 + np.exp(-x)),)   # g * sigmoid(x); NumPy calls only,
                                         # so second order works too
    return y, log1pexp_pullback


# -- Hypothesis tests --------------------------------------------------------------------
@given(st.data())
def test_log1pexp_rule(data):
    """Every mode of the rule, at arrays of any small shape, float64 and float32."""
    dtype = data.draw(crs.dtypes())
    x = data.draw(crs.arrays(dtype, data.draw(crs.shapes(0, 3)), "real"))
    report = check_rule(log1pexp, x)           # rrule + frule + hvp
    assert report.worst < (1e-9 if dtype == np.float64 else 1e-4)


@given(crs.arrays(np.float64, (3,), "real"), crs.arrays(np.float64, (3,), "positive"))
def test_a_loss_built_on_it(x, w):
    """Whole functions in both modes up to second order (grad of grad, jvp of grad)."""
    def loss(x, w):
        return np.sum(w * log1pexp(x) ** 2)

    check_grads(loss, x, w, order=2)


# -- a broken rule, and what the checker says ---------------------------------------------
@cr.primitive
def log1pexp_wrong(x):
    return np.logaddexp(0.0, x)


@cr.rrule(log1pexp_wrong)
def _log1pexp_wrong_rule(x):
    def log1pexp_wrong_pullback(g):
        return (g / (1 + np.exp(x)),)    # sign error inside the exponential
    return log1pexp_wrong(x), log1pexp_wrong_pullback


def test_the_wrong_rule_is_reported():
    try:
        check_rule(log1pexp_wrong, np.array([0.3, -1.2]))
    except CheckFailure as e:
        assert "pullback vs finite differences" in str(e)
    else:
        raise AssertionError("the checker passed a wrong rule")


if __name__ == "__main__":
    settings(max_examples=25, deadline=None)(test_log1pexp_rule)()
    settings(max_examples=10, deadline=None)(test_a_loss_built_on_it)()
    print("log1pexp: every property holds on 25 random examples")
    try:
        check_rule(log1pexp_wrong, np.array([0.3, -1.2]))
    except CheckFailure as e:
        print("\nthe wrong rule is reported:\n" + str(e))
