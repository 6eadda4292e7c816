"""The pytest plugin: profiles and fixtures."""

import numpy as np
import pytest
from hypothesis import settings

from chainrules.testing.plugin import limit_blas_threads


def test_ci_profile_is_loaded_by_default():
    if getattr(settings, "_current_profile", "ci") != "ci":
        pytest.skip("another hypothesis profile was chosen")
    current = settings.default
    assert current.derandomize and current.max_examples == 12 and current.deadline is None
    assert settings.get_profile("thorough").max_examples == 300
    assert settings.get_profile("chainrules").max_examples == 12


def test_rng_fixture_is_seeded_per_test(rng, request):
    import zlib

    again = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    assert rng.standard_normal() == again.standard_normal()


def test_check_rule_fixture(check_rule, rng):
    assert check_rule(np.sin, rng.standard_normal(3)).modes == ["rrule", "frule", "hvp",
                                                                "batched"]


def test_limit_blas_threads_is_harmless():
    assert limit_blas_threads(1) >= 0
    a = np.eye(3) * 2.0
    assert np.allclose(np.linalg.solve(a, np.ones(3)), 0.5)
