"""Frames are read only to word errors and to name the user's line; where
they cannot be read, the same typed error is raised and anomaly mode still
names the op."""

import sys

import numpy as np
import pytest

import chainrules as cr
from chainrules import anomaly


def _no_frames(monkeypatch):
    def refuse(depth=0):
        raise ValueError("call stack is not deep enough")
    monkeypatch.setattr(sys, "_getframe", refuse)


def test_conversion_error_without_frames(monkeypatch):
    _no_frames(monkeypatch)
    with pytest.raises(cr.UntraceableError, match="converting to a plain array"):
        cr.grad(lambda x: np.sum(np.asarray(x)))(np.ones(2))


def test_conversion_error_inside_scipy_names_the_twin_with_frames():
    special = pytest.importorskip("scipy.special")
    with pytest.raises(cr.UntraceableError, match=r"inside scipy\.special.*chainrules"):
        cr.grad(lambda x: special.logsumexp(x))(np.ones(2))


def test_conversion_error_inside_scipy_without_frames(monkeypatch):
    special = pytest.importorskip("scipy.special")
    _no_frames(monkeypatch)
    with pytest.raises(cr.UntraceableError, match="converting to a plain array"):
        cr.grad(lambda x: special.logsumexp(x))(np.ones(2))


def test_anomaly_without_frames_still_names_the_op(monkeypatch):
    assert anomaly.user_frame() is not None
    _no_frames(monkeypatch)
    assert anomaly.user_frame() is None
    with cr.detect_anomaly(), np.errstate(divide="ignore"):
        with pytest.raises(cr.NumericalInstabilityError, match="log"):
            cr.grad(lambda x: np.sum(np.log(x)))(np.array([0.0, 1.0]))


# A stand-in for SciPy's compiled loops that convert the function's value
# with float() and go on when that fails (the garbage collector, running
# while the error is pending, reports it as "ignored" and clears it): its
# module name is SciPy's, so the refusal is the one SciPy's code meets.
_DROPPING = {"__name__": "scipy.optimize._dropping"}
exec("""
def solve(fun, x0):
    total = 0.0
    for k in range(3):
        try:
            total += float(fun(x0 + k))
        except TypeError:       # the error dropped: a made-up value instead
            total += -1.0
    return total
""", _DROPPING)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacobian", "hvp", "jvp",
                                       "vjp"])
def test_a_refusal_dropped_by_scipys_code_still_reaches_the_caller(transform):
    def f(p):
        return p * _DROPPING["solve"](lambda x: x * p[0], 1.0)

    x = np.array([2.0])
    call = {"grad": lambda: cr.grad(lambda p: np.sum(f(p)))(x),
            "value_and_grad": lambda: cr.value_and_grad(lambda p: np.sum(f(p)))(x),
            "jacobian": lambda: cr.jacobian(f)(x),
            "hvp": lambda: cr.hvp(lambda p: np.sum(f(p)), x, x),
            "jvp": lambda: cr.jvp(f, (x,), (x,)),
            "vjp": lambda: cr.vjp(f, x)}[transform]
    with pytest.raises(cr.UntraceableError, match=r"inside scipy\.optimize\._dropping"):
        call()
    # the recording is clean afterwards: a plain call works
    assert cr.grad(lambda p: np.sum(p * p))(x) == 4.0


def test_a_refusal_on_its_way_to_the_caller_is_not_raised_again():
    exec("def convert(v):\n    return float(v)\n", _DROPPING)
    with pytest.raises(cr.UntraceableError, match=r"_dropping\.convert") as info:
        cr.grad(lambda p: _DROPPING["convert"](np.sum(p)) * p[0])(np.array([2.0]))
    assert info.value.__context__ is None and info.value.__cause__ is None
