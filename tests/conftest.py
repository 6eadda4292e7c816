"""Test configuration. Tiers and hypothesis profiles come from chainrules'
pytest plugin (``chainrules/testing/plugin.py``): the default run is the
fast tier (``chainrules_tier = "fast"`` in pyproject.toml: profile ``fast``,
a sample of the spec sweeps, no ``slow`` tests); ``--full`` runs everything.
Nothing here imports the peers or builds the sweep: running one file with
``-x`` costs only that file."""

# pytester: the plugin's own tests run small pytest sessions
pytest_plugins = ["pytester"]


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def without_joined_products():
    """The plan passes that rewrite matrix products off for a module: a sum
    of products computed as one product (``chainrules.plan_join``), and
    products sharing a right operand as one product or reading it copied
    into rows (``chainrules.plan_batch``). They sum in another order by
    design, within the bounds ``tests/core/test_plan_join.py`` and
    ``test_plan_batch.py`` check, where a module checks staged results
    against eager ones bit for bit."""
    from chainrules import plan_batch, plan_join

    with pytest.MonkeyPatch.context() as m:
        m.setattr(plan_join, "MIN_TERMS", 10 ** 9)
        m.setattr(plan_batch, "MIN_TERMS", 10 ** 9)
        yield
