"""pytest plugin (entry point ``chainrules``): hypothesis profiles.

* ``ci``: derandomized, bounded examples, no deadline: never flaky. Loaded
  by default when no other profile is chosen.
* ``thorough``: many random examples, for long local runs
  (``pytest --hypothesis-profile thorough``).
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=12, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.differing_executors])
settings.register_profile(
    "thorough", max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.differing_executors])


def pytest_configure(config):
    chosen = None
    try:
        chosen = config.getoption("hypothesis_profile")
    except ValueError:
        pass
    if not chosen:
        settings.load_profile(os.environ.get("CHAINRULES_HYPOTHESIS_PROFILE", "ci"))
