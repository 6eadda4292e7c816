"""pytest plugin (entry point ``chainrules``): hypothesis profiles, test
tiers and fixtures.

Profiles (all derandomized, no deadline, no example database: never flaky,
except ``thorough``):

* ``full`` (aliases ``ci`` and ``chainrules``): 12 examples per test;
* ``fast``: 3 examples per test, the default tier's profile;
* ``thorough``: 300 random examples, for long local runs
  (``pytest --hypothesis-profile thorough``).

Tiers. A project chooses its default tier with the ini option
``chainrules_tier`` (``full`` unless set; chainrules' own suite sets
``fast``); the option ``--full`` runs the full tier whatever the ini says.

* ``full``: the ``full`` profile, every test, every case.
* ``fast``: the same kinds of checks on every rule family, with less of
  each: the ``fast`` profile; a test that asks for more examples than the
  profile (its own ``max_examples``) runs a quarter of them, at least the
  profile's count; tests marked ``slow``
  are skipped (the reason says ``--full``); a test parametrized over rule specs
  (``chainrules.testing.RuleSpec``, alone or in a tuple) keeps a quarter of
  the cases of each rule family (at least one), chosen by a hash of the
  case id, unless it is marked ``every_case`` (the registry sweep: every
  rule, fewer examples). A new family, spec or test file lands in both
  tiers without being named anywhere.

``--hypothesis-profile NAME`` (or ``CHAINRULES_HYPOTHESIS_PROFILE``) picks
another profile in either tier.

Fixtures:

* ``rng``: a NumPy ``Generator`` seeded from the test's node id, so every
  test gets its own reproducible stream;
* ``check_rule``: ``chainrules.testing.check_rule`` with the test's ``rng``.

Option ``--chainrules-blas-threads N`` (ini ``chainrules_blas_threads``, or
environment ``CHAINRULES_BLAS_THREADS``) limits OpenBLAS to ``N`` threads:
rule tests work on tiny arrays, where BLAS threads only add overhead (and
on a loaded machine they multiply the run time).
"""

import ctypes
import functools
import math
import os
import sys
import zlib

import pytest
from hypothesis import HealthCheck, settings

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large,
             HealthCheck.differing_executors, HealthCheck.filter_too_much]

#: examples per hypothesis test in each tier's profile
FULL_EXAMPLES = 12
FAST_EXAMPLES = 3
#: share of a spec-parametrized test's cases per family in the fast tier
FAST_SHARE = FAST_EXAMPLES / FULL_EXAMPLES

settings.register_profile(
    "full", derandomize=True, max_examples=FULL_EXAMPLES, deadline=None, print_blob=True,
    database=None, suppress_health_check=_SUPPRESS)
settings.register_profile("ci", parent=settings.get_profile("full"))
settings.register_profile("chainrules", parent=settings.get_profile("full"))
settings.register_profile(
    "fast", parent=settings.get_profile("full"), max_examples=FAST_EXAMPLES)
settings.register_profile(
    "thorough", max_examples=300, deadline=None, print_blob=True,
    suppress_health_check=_SUPPRESS)

_BLAS_SYMBOLS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
                 "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads")


def limit_blas_threads(n):
    """Limit OpenBLAS to ``n`` threads: through the environment for libraries
    not loaded yet, and through ``openblas_set_num_threads`` for the ones
    already loaded (Linux). Returns the number of libraries adjusted."""
    n = int(n)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    done = 0
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower()
                     and line.split()[-1].startswith("/")}
    except OSError:
        return done
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in _BLAS_SYMBOLS:
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                done += 1
                break
    return done


def pytest_addoption(parser):
    group = parser.getgroup("chainrules")
    group.addoption("--chainrules-blas-threads", default=None,
                    help="limit OpenBLAS to this many threads (tiny arrays run "
                         "faster single-threaded)")
    parser.addini("chainrules_blas_threads", "limit OpenBLAS to this many threads",
                  default=None)
    group.addoption("--full", action="store_true", default=False,
                    help="run the full test tier: every example (hypothesis profile "
                         "'full'), every case, the tests marked slow")
    parser.addini("chainrules_tier", "the default test tier: 'full' (default) or 'fast' "
                  "(fewer examples, a sample of the spec sweeps, no slow tests)",
                  default="full")


def _blas_threads(config):
    value = config.getoption("chainrules_blas_threads", None)
    if value is None:
        value = config.getini("chainrules_blas_threads")
    if value in (None, ""):
        value = os.environ.get("CHAINRULES_BLAS_THREADS")
    return None if value in (None, "") else int(value)


def tier(config):
    """The tier of this run: ``"full"`` or ``"fast"``."""
    if config.getoption("full", False):
        return "full"
    value = (config.getini("chainrules_tier") or "full").strip()
    if value not in ("fast", "full"):
        raise pytest.UsageError(f"chainrules_tier must be 'fast' or 'full', not {value!r}")
    return value


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: a long integration test, run in the full tier only (--full)")
    config.addinivalue_line(
        "markers", "every_case: run every parametrized case in the fast tier too "
        "(the registry sweep: every rule, fewer examples)")
    chosen = None
    try:
        chosen = config.getoption("hypothesis_profile")
    except ValueError:
        pass
    if not chosen:
        settings.load_profile(os.environ.get("CHAINRULES_HYPOTHESIS_PROFILE")
                              or tier(config))
    n = _blas_threads(config)
    if n is not None:
        limit_blas_threads(n)


def pytest_report_header(config):
    if tier(config) == "fast":
        return ("chainrules: fast tier (hypothesis profile %r, a sample of the spec "
                "sweeps, no slow tests); --full runs everything"
                % _profile_name())
    return "chainrules: full tier (hypothesis profile %r)" % _profile_name()


def _profile_name():
    # the name of the loaded profile, for the header only
    return getattr(settings, "_current_profile", None) or "?"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    if tier(config) != "fast":
        return
    skip_slow = pytest.mark.skip(reason="slow: the full tier runs it (pytest --full)")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip_slow)
    keep, drop = _sample_spec_cases(items)
    for item in keep:
        _scale_examples(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _scale_examples(item):
    """A hypothesis test that asks for more examples than the profile runs
    the fast tier's share of them, at least the profile's count."""
    fn = getattr(item, "obj", None)
    if not getattr(fn, "is_hypothesis_test", False):
        return
    fn = getattr(fn, "__func__", fn)
    own = getattr(fn, "_hypothesis_internal_use_settings", None)
    if own is None or getattr(fn, "_chainrules_scaled", False):
        return
    fn._chainrules_scaled = True
    profile = settings.default.max_examples
    if own.max_examples <= profile:
        return  # the profile's count (or fewer): nothing to scale
    scaled = max(profile, math.ceil(own.max_examples * FAST_SHARE))
    if scaled < own.max_examples:
        fn._hypothesis_internal_use_settings = settings(own, max_examples=scaled)


def _spec_of(item):
    """The ``RuleSpec`` an item is parametrized over, or None."""
    specs = sys.modules.get("chainrules.testing.specs")
    callspec = getattr(item, "callspec", None)
    if specs is None or callspec is None:
        return None
    for value in callspec.params.values():
        for v in (value if isinstance(value, tuple) else (value,)):
            if isinstance(v, specs.RuleSpec):
                return v
    return None


def _families():
    """Family of each spec, by identity, from the family modules already
    imported (a spec in a test's parameters comes from one; nothing more is
    imported here)."""
    prefix = "chainrules.testing.specs."
    return {id(spec): name[len(prefix):] for name, mod in list(sys.modules.items())
            if name.startswith(prefix) and mod is not None
            for spec in getattr(mod, "SPECS", ())}


def _sample_spec_cases(items):
    """Keep ``FAST_SHARE`` of the cases of each rule family in each test
    function parametrized over rule specs (at least one case per family);
    every case of a test marked ``every_case``."""
    groups, families = {}, None
    for item in items:
        spec = _spec_of(item)
        if spec is None or item.get_closest_marker("every_case"):
            continue
        if families is None:
            families = _families()
        fam = families.get(id(spec), getattr(spec, "label", "?"))
        key = (item.nodeid.split("[", 1)[0], fam)
        groups.setdefault(key, []).append(item)
    dropped = set()
    for group in groups.values():
        n = max(1, math.ceil(len(group) * FAST_SHARE))
        ranked = sorted(group, key=lambda it: zlib.crc32(it.nodeid.encode()))
        dropped.update(id(it) for it in ranked[n:])
    keep = [it for it in items if id(it) not in dropped]
    return keep, [it for it in items if id(it) in dropped]


def pytest_collection_finish(session):
    # libraries imported while collecting (SciPy's own OpenBLAS) are limited too
    n = _blas_threads(session.config)
    if n is not None:
        limit_blas_threads(n)


@pytest.fixture
def rng(request):
    """A NumPy Generator seeded from the test's node id (reproducible)."""
    import numpy as np

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def check_rule(rng):
    """``chainrules.testing.check_rule`` using the test's seeded ``rng``."""
    from chainrules.testing import check_rule as _check_rule

    return functools.partial(_check_rule, rng=rng)
