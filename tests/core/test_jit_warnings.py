"""NumPy's floating-point warnings under ``cr.jit``: a replay that meets a
warning the user's settings show is abandoned and the call runs eagerly, so
the warnings are an eager call's (the operation's line for the function's
own operations, the transformation's call for its sweeps) and so are the
results; settings that do not warn keep the call staged."""

import threading
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.pytree import flatten

RUNS = []


def logsum(x):
    RUNS.append(1)
    return np.sum(np.log(x) * x)  # LOG LINE


LOG_LINE = next(i for i, line in enumerate(open(__file__), 1) if "# LOG LINE" in line
                and "next(" not in line)
GOOD = np.array([0.5, 1.0, 2.0])
BAD = np.array([0.0, 1.0, 2.0])
NEG = np.array([-1.0, 1.0, 2.0])

TRANSFORMS = {
    "plain": lambda f: f,
    "grad": cr.grad,
    "value_and_grad": cr.value_and_grad,
    "hvp": lambda f: (lambda x: cr.hvp(f, x, np.ones_like(x))),
}


def _call(fn, x):
    return fn(x)  # CALL LINE


def _warned(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run()
    return out, [(str(w.message), w.category, w.filename, w.lineno) for w in caught
                 if issubclass(w.category, RuntimeWarning)]


def _staged(name):
    j = cr.jit(TRANSFORMS[name](logsum))
    for _ in range(3):  # recorded, checked, replayed
        j(GOOD)
    j.plan(GOOD).prepare()  # (every stage of the plan's passes run)
    assert j.cache_info()["plans"] == 1
    return j


def _same(a, b):
    la, lb = flatten(a)[0], flatten(b)[0]
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("x", [BAD, NEG], ids=["zero", "negative"])
def test_a_replay_warns_as_an_eager_call(name, x):
    j = _staged(name)
    eager = TRANSFORMS[name](logsum)
    want, want_warnings = _warned(lambda: _call(eager, x))
    got, got_warnings = _warned(lambda: _call(j, x))
    _same(got, want)
    assert want_warnings
    if name == "hvp" and x is NEG:
        # the HVP needs 1 / x, not log(x): the replay computes no log and
        # meets no warning (eager warns about the log)
        assert got_warnings == []
    else:
        assert got_warnings == want_warnings
        # the function's own log names its line, as eagerly
        assert any(line == LOG_LINE and "in log" in msg for msg, _, _, line in got_warnings)
    # still staged: the next clean call replays (no Python run of logsum)
    del RUNS[:]
    _same(j(GOOD), eager(GOOD))
    assert len(RUNS) == 1  # (the eager call just above)


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_ignored_warnings_keep_the_call_staged(name):
    j = _staged(name)
    eager = TRANSFORMS[name](logsum)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = eager(BAD)
        del RUNS[:]
        got, seen = _warned(lambda: j(BAD))
    assert not RUNS and not seen
    _same(got, want)


def test_raise_and_error_filters_keep_their_meaning():
    j = _staged("grad")
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            j(BAD)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            j(BAD)
    calls = []
    with np.errstate(divide="call", call=lambda kind, flag: calls.append(kind)):
        del RUNS[:]
        g = j(BAD)
    assert calls and not RUNS  # the user's callback: the replay runs, and calls it
    with np.errstate(all="ignore"):
        _same(g, cr.grad(logsum)(BAD))
    # the settings are the user's again afterwards
    assert np.geterrcall() is None and np.geterr()["divide"] == "warn"


def test_under_an_enclosing_transformation_warnings_name_the_call():
    # a jitted function inside cr.grad: the enclosing transformation's
    # redirection re-issues the replay's warnings at the user's line
    j = cr.jit(logsum)
    for _ in range(3):
        j(GOOD)
    g, seen = _warned(lambda: cr.grad(lambda x: j(x))(BAD))
    assert seen and all(fn == __file__ for _, _, fn, _ in seen)
    with np.errstate(all="ignore"):
        _same(g, cr.grad(logsum)(BAD))


def test_threads_warn_independently():
    j = _staged("value_and_grad")
    out = {}

    def worker(k, x, ignore):
        if ignore:
            with np.errstate(all="ignore"):
                out[k] = _warned(lambda: j(x))
        else:
            out[k] = _warned(lambda: j(x))

    threads = [threading.Thread(target=worker, args=(k, x, k % 2 == 1))
               for k, x in enumerate([BAD, BAD, NEG, NEG, GOOD, GOOD])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eager = cr.value_and_grad(logsum)
    for k, x in enumerate([BAD, BAD, NEG, NEG, GOOD, GOOD]):
        got, seen = out[k]
        with np.errstate(all="ignore"):
            _same(got, eager(x))
        if k % 2 == 1 or k >= 4:
            assert not seen
        else:
            assert any(line == LOG_LINE for _, _, _, line in seen)
