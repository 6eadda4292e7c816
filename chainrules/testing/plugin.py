"""pytest plugin (entry point ``chainrules``): hypothesis profiles and fixtures.

Profiles:

* ``ci`` (alias ``chainrules``): derandomized, 12 examples, no deadline and
  no database: never flaky. Loaded by default when no other profile is
  chosen (``--hypothesis-profile`` or ``CHAINRULES_HYPOTHESIS_PROFILE``).
* ``thorough``: 300 random examples, for long local runs
  (``pytest --hypothesis-profile thorough``).

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
import os
import zlib

import pytest
from hypothesis import HealthCheck, settings

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large,
             HealthCheck.differing_executors, HealthCheck.filter_too_much]

settings.register_profile(
    "ci", derandomize=True, max_examples=12, deadline=None, print_blob=True,
    database=None, suppress_health_check=_SUPPRESS)
settings.register_profile("chainrules", parent=settings.get_profile("ci"))
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


def _blas_threads(config):
    value = config.getoption("chainrules_blas_threads", None)
    if value is None:
        value = config.getini("chainrules_blas_threads")
    if value in (None, ""):
        value = os.environ.get("CHAINRULES_BLAS_THREADS")
    return None if value in (None, "") else int(value)


def pytest_configure(config):
    chosen = None
    try:
        chosen = config.getoption("hypothesis_profile")
    except ValueError:
        pass
    if not chosen:
        settings.load_profile(os.environ.get("CHAINRULES_HYPOTHESIS_PROFILE", "ci"))
    n = _blas_threads(config)
    if n is not None:
        limit_blas_threads(n)


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
