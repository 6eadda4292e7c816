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
