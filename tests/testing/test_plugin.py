"""The pytest plugin: profiles, tiers and fixtures."""

import json

import numpy as np
import pytest
from hypothesis import settings

from chainrules.testing.plugin import limit_blas_threads


def test_profiles():
    assert settings.get_profile("full").max_examples == 12
    assert settings.get_profile("ci").max_examples == 12
    assert settings.get_profile("chainrules").max_examples == 12
    assert settings.get_profile("fast").max_examples == 3
    assert settings.get_profile("thorough").max_examples == 300
    for name in ("full", "fast"):
        p = settings.get_profile(name)
        assert p.derandomize and p.deadline is None and p.database is None


_TIERED = """
import json, os
import pytest
from hypothesis import given, settings, strategies as st
from chainrules.testing.specs import family_specs

RUNS = {}
SPECS = family_specs("arithmetic")[:8] + family_specs("elementwise")[:1]


def _count(name):
    RUNS[name] = RUNS.get(name, 0) + 1


@given(st.integers())
def test_profile_count(x):
    _count("profile")


@settings(max_examples=40)
@given(st.integers())
def test_own_count(x):
    _count("own")


@settings(max_examples=2)
@given(st.integers())
def test_few_own(x):
    _count("few")


@pytest.mark.slow
def test_slow():
    _count("slow")


@pytest.mark.parametrize("case", [(s, "float64") for s in SPECS])
def test_sampled(case):
    _count("sampled-" + ("elementwise" if case[0] is SPECS[-1] else "arithmetic"))


@pytest.mark.every_case
@pytest.mark.parametrize("spec", SPECS)
def test_every(spec):
    _count("every")


def test_zz_report():
    with open(os.environ["RUNS_FILE"], "w") as fh:
        json.dump(RUNS, fh)
"""


@pytest.fixture
def outer_profile():
    """The session's hypothesis profile, loaded again after an in-process
    pytest run (which loads its tier's profile)."""
    saved = settings.default
    yield
    settings.register_profile("chainrules-outer-session", parent=saved)
    settings.load_profile("chainrules-outer-session")
    assert settings.default.max_examples == saved.max_examples


@pytest.mark.parametrize("full", [False, True], ids=["fast", "full"])
def test_tiers(pytester, monkeypatch, outer_profile, full):
    pytester.makeini("[pytest]\nchainrules_tier = fast\n")
    pytester.makepyfile(test_tiered=_TIERED)
    runs = pytester.path / "runs.json"
    monkeypatch.setenv("RUNS_FILE", str(runs))
    monkeypatch.delenv("CHAINRULES_HYPOTHESIS_PROFILE", raising=False)
    result = pytester.runpytest_inprocess(*(["--full"] if full else []), "-p",
                                          "no:cacheprovider", "-rs")
    out = result.parseoutcomes()
    got = json.loads(runs.read_text())
    if full:
        result.stdout.fnmatch_lines(["chainrules: full tier*"])
        assert got == {"profile": 12, "own": 40, "few": 2, "slow": 1,
                       "sampled-arithmetic": 8, "sampled-elementwise": 1, "every": 9}
        assert out["passed"] == 23 and "deselected" not in out
    else:
        result.stdout.fnmatch_lines(["chainrules: fast tier*--full runs everything"])
        # a quarter of the own 40 examples; the profile's 3 elsewhere; the
        # spec cases: a quarter of each family's (at least one), all when
        # marked every_case
        assert got == {"profile": 3, "own": 10, "few": 2,
                       "sampled-arithmetic": 2, "sampled-elementwise": 1, "every": 9}
        assert out["passed"] == 16 and out["skipped"] == 1 and out["deselected"] == 6
        result.stdout.fnmatch_lines(["*slow: the full tier runs it (pytest --full)*"])


def test_tier_ini_is_checked(pytester):
    pytester.makeini("[pytest]\nchainrules_tier = quick\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    # refused while configuring, before any profile is loaded: in-process is safe
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*chainrules_tier must be 'fast' or 'full', not 'quick'*"])


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
