"""Every public Python-level function of the SciPy modules chainrules covers
(and every method of the covered scipy.stats distributions) has a twin, a
rule, traces as it is, or is justified in chainrules.testing.scipy_audit; the
functions said to trace as they are do, and the tables name no function that
is covered or absent."""

import numpy as np
import pytest

import chainrules as cr

pytest.importorskip("scipy")
import scipy.integrate as si  # noqa: E402
import scipy.signal as ss  # noqa: E402
import scipy.special as sc  # noqa: E402

from chainrules.testing import scipy_audit  # noqa: E402


@pytest.fixture(scope="module")
def status():
    return {f"{m}.{n}": s for m, n, s in scipy_audit.audit_rows()}


def test_no_public_scipy_function_is_left_uncovered():
    assert scipy_audit.uncovered() == []


def test_the_audit_sees_each_kind(status):
    assert status["scipy.linalg.expm"] == "twin"
    assert status["scipy.linalg.solve_lyapunov"] == "twin"   # alias of a twin
    assert status["scipy.special.sinc"] == "rule"
    assert status["scipy.special.jvp"] == "as is"
    assert status["scipy.spatial.distance.pdist"] == "twin"
    assert status["scipy.spatial.distance.hamming"] == "justified"
    assert status["scipy.stats.norm.logpdf"] == "twin"
    assert status["scipy.stats.norm.ppf"] == "justified"
    assert "scipy.special.erf" not in status            # ufuncs: their own section
    assert sum(s == "twin" for s in status.values()) > 150


def test_the_tables_are_not_stale(status):
    """A justified or traced-as-is name has no twin or rule (a twin added
    later makes its reason stale: remove it from the table). A name absent
    from the installed SciPy is allowed: SciPy adds and removes functions
    between the releases the project supports (1.15 to 1.18)."""
    for name in scipy_audit.JUSTIFIED:
        assert status.get(name, "justified") == "justified", name
    for name in scipy_audit.AS_IS:
        assert status.get(name, "as is") == "as is", name
    stats_missing = {n.rsplit(".", 1)[1] for n, s in status.items()
                     if n.startswith("scipy.stats.") and s == "justified"}
    present = {n.rsplit(".", 1)[1] for n in status if n.startswith("scipy.stats.")}
    assert stats_missing <= set(scipy_audit.STATS_JUSTIFIED)
    # the rest of the table: methods this SciPy's distributions do not have
    assert not (set(scipy_audit.STATS_JUSTIFIED) - stats_missing) & present


def test_reasons_are_one_short_line():
    reasons = list(scipy_audit.JUSTIFIED.values()) + list(scipy_audit.AS_IS.values()) \
        + list(scipy_audit.STATS_JUSTIFIED.values())
    assert all(r and "\n" not in r and len(r) <= 200 for r in reasons)


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


AS_IS_PROBES = {
    "scipy.special.jvp": lambda x: sc.jvp(1.5, x, 2),
    "scipy.special.yvp": lambda x: sc.yvp(1.5, x, 1),
    "scipy.special.ivp": lambda x: sc.ivp(1.5, x, 1),
    "scipy.special.kvp": lambda x: sc.kvp(1.5, x, 1),
    "scipy.special.zeta": lambda x: sc.zeta(2.5, x),
    "scipy.special.assoc_laguerre": lambda x: sc.assoc_laguerre(x, 2, 0.5),
    "scipy.signal.gausspulse": lambda x: ss.gausspulse(x, fc=0.5),
    "scipy.integrate.fixed_quad": lambda x: si.fixed_quad(lambda t: np.sin(x * t), 0.0, x)[0],
    "scipy.special.h1vp": lambda x: np.real(sc.h1vp(1.5, x)),
    "scipy.special.h2vp": lambda x: np.imag(sc.h2vp(1.5, x, 2)),
}


def test_as_is_probes_cover_the_table():
    # a probe beyond the table: a function that traces as it is only in some
    # of the SciPy releases the project supports (fixed_quad before 1.18)
    assert set(scipy_audit.AS_IS) <= set(AS_IS_PROBES)
    assert set(AS_IS_PROBES) - set(scipy_audit.AS_IS) <= {"scipy.integrate.fixed_quad"}


@pytest.mark.parametrize("name", sorted(AS_IS_PROBES))
def test_functions_said_to_trace_as_they_are_do(name):
    if name not in scipy_audit.AS_IS:
        pytest.skip(f"{name} does not trace as it is in this SciPy")
    f = AS_IS_PROBES[name]
    for x in (0.7, 1.9):
        assert cr.grad(f)(x) == pytest.approx(_fd(f, x), rel=1e-7, abs=1e-9)


def test_the_stated_missing_rules_are_missing():
    with pytest.raises(cr.MissingRuleError, match="_lambertw"):
        cr.grad(lambda x: np.real(sc.lambertw(x)))(1.2)
    with pytest.raises(cr.MissingRuleError, match="_riemann_zeta"):
        cr.grad(lambda x: sc.zeta(x))(2.5)
    with pytest.raises(cr.UntraceableError, match="spherical"):
        cr.grad(lambda x: sc.spherical_jn(1, x))(1.2)
