"""SciPy's OpenBLAS pool at one thread around the rule library's SciPy calls
(``rules/_scipy_blas_pool.py``): the limit holds inside, the user's number
comes back after (nested calls, errors, threads), the switch turns it off,
and derivatives are the same either way."""

import os
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

import chainrules as cr

pytest.importorskip("scipy.linalg")
from chainrules.rules import _scipy_blas_pool as bp  # noqa: E402
from chainrules.scipy import linalg as csl  # noqa: E402


@pytest.fixture
def pool():
    """SciPy's own pool, set to two threads for the test and given back as
    it was."""
    p = bp.separate_pool()
    if p is None:
        pytest.skip("SciPy's BLAS is not an OpenBLAS of its own here")
    before = p.get()
    p.put(2)
    old = bp.set_enabled(True)
    yield p
    bp.set_enabled(old)
    p.put(before)


def _probe(p):
    """A module with one function that reports SciPy's thread count."""
    seen = []
    mod = types.SimpleNamespace(count=lambda: seen.append(p.get()) or p.get(), K=3)
    return bp.LimitedNamespace(mod), seen


def test_one_thread_inside_and_restored_after(pool):
    ns, seen = _probe(pool)
    assert ns.count() == 1
    assert pool.get() == 2
    assert ns.K == 3                       # attributes that are not functions as they are
    assert ns.count is ns.count            # one wrapper per function


def test_nested_calls_restore_once(pool):
    ns, seen = _probe(pool)
    outer = bp.one_thread(lambda: (ns.count(), pool.get())[1])
    assert outer() == 1
    assert seen == [1]
    assert pool.get() == 2


def test_error_restores(pool):
    def boom():
        assert pool.get() == 1
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        bp.one_thread(boom)()
    assert pool.get() == 2


def test_switched_off_keeps_the_users_number(pool):
    ns, seen = _probe(pool)
    assert bp.set_enabled(False) is True
    assert ns.count() == 2
    bp.set_enabled(True)
    assert ns.count() == 1
    assert seen == [2, 1]


def test_a_user_setting_of_one_stays(pool):
    pool.put(1)
    ns, seen = _probe(pool)
    assert ns.count() == 1
    assert pool.get() == 1


def test_threads_share_one_limit(pool):
    """Two threads whose calls overlap: the second enters while the first
    is inside, the first leaves first; the user's 2 comes back only when
    both have left."""
    inside, second_entered = threading.Event(), threading.Event()
    first_left, second_done = threading.Event(), threading.Event()
    seen = {}

    def first():
        inside.set()
        assert second_entered.wait(10)
        seen["first"] = pool.get()

    def second():
        assert inside.wait(10)
        second_entered.set()
        assert first_left.wait(10)
        seen["second, after the first left"] = pool.get()

    t1 = threading.Thread(target=lambda: (bp.one_thread(first)(), first_left.set()))
    t2 = threading.Thread(target=lambda: (bp.one_thread(second)(), second_done.set()))
    t1.start()
    t2.start()
    t1.join(20)
    t2.join(20)
    assert second_done.is_set()
    assert seen == {"first": 1, "second, after the first left": 1}
    assert pool.get() == 2


def test_no_separate_pool_is_a_plain_call(monkeypatch):
    monkeypatch.setattr(bp, "separate_pool", lambda: None)
    entered = []
    monkeypatch.setattr(bp, "_enter", lambda p: entered.append(p))
    assert bp.one_thread(lambda x: x + 1)(2) == 3
    assert entered == []


def test_owned_by(tmp_path):
    pkg = tmp_path / "scipy"
    (pkg / "linalg").mkdir(parents=True)
    (tmp_path / "scipy.libs").mkdir()
    init = pkg / "__init__.py"
    init.write_text("")
    mod = types.SimpleNamespace(__file__=str(init))
    assert bp._owned_by(str(tmp_path / "scipy.libs" / "libscipy_openblas-x.so"), mod)
    assert bp._owned_by(str(pkg / ".dylibs" / "libscipy_openblas.dylib"), mod)
    assert not bp._owned_by(str(tmp_path / "numpy.libs" / "libscipy_openblas64_-y.so"), mod)
    assert not bp._owned_by(str(tmp_path / "scipy2" / "libopenblas.so"), mod)


def _gp(theta, D, y, eye):
    K = np.exp(2 * theta[1]) * np.exp(D * (-0.5 * np.exp(-2 * theta[0]))) + 0.1 * eye
    L = np.linalg.cholesky(K)
    a = csl.solve_triangular(L, y, lower=True)
    return 0.5 * np.sum(a * a) + np.sum(np.log(np.diagonal(L)))


def _gp_data(n=80):
    rng = np.random.default_rng(3)
    P = rng.uniform(0, 3, (n, 2))
    D = np.sum((P[:, None, :] - P[None, :, :]) ** 2, axis=-1)
    return D, np.sin(P[:, 0]) + 0.1 * rng.standard_normal(n), np.eye(n)


def test_rules_call_scipy_at_one_thread(pool, monkeypatch):
    """The Cholesky and triangular-solve rules' SciPy calls (forward,
    pullback, HVP) run inside the limit, and SciPy's pool is at one thread
    there; the gradient and HVP are those computed with the limit off."""
    D, y, eye = _gp_data()
    theta, v = np.array([0.1, -0.2]), np.array([0.7, -0.4])
    f = (lambda th: _gp(th, D, y, eye))
    bp.set_enabled(False)
    g_off, h_off = cr.grad(f)(theta), cr.hvp(f, theta, v)
    bp.set_enabled(True)
    counts = []
    enter = bp._enter
    monkeypatch.setattr(bp, "_enter", lambda p: (enter(p), counts.append(p.get())))
    g_on, h_on = cr.grad(f)(theta), cr.hvp(f, theta, v)
    assert len(counts) >= 4 and set(counts) == {1}
    assert pool.get() == 2
    np.testing.assert_allclose(g_on, g_off, rtol=1e-12)
    np.testing.assert_allclose(h_on, h_off, rtol=1e-12)
    # and they are the derivatives: central differences of the plain function
    h = 1e-6
    fd = [(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g_on, fd, rtol=1e-6)


def test_environment_switch():
    code = ("from chainrules.rules import _scipy_blas_pool as bp; "
            "print(bp.enabled())")
    env = dict(os.environ, CHAINRULES_SCIPY_BLAS_THREADS="keep")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False"]


def test_found_alike_with_and_without_threadpoolctl():
    """The libraries in /proc/self/maps (Linux) are those threadpoolctl
    lists, where it is installed; either way SciPy's is among them."""
    import scipy

    if not sys.platform.startswith("linux"):
        pytest.skip("the /proc/self/maps lookup is Linux's")
    mapped = {os.path.realpath(p) for p in bp._paths_in_proc_maps()}
    tpc = bp._paths_by_threadpoolctl()
    if tpc is not None:
        assert {os.path.realpath(p) for p in tpc} == mapped
    p = bp.separate_pool()
    if p is None:
        assert not any(bp._owned_by(q, scipy) for q in mapped)
    else:
        assert os.path.realpath(p.path) in mapped
        assert bp._owned_by(p.path, scipy)
