"""Anomaly detection: NaN/Inf checks naming the op and the user's source line."""

import inspect

import numpy as np
import pytest

import chainrules as cr
from chainrules import anomaly
from chainrules.graph import Tape

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if marker in text:
            return start + k
    raise AssertionError(marker)


def user_loss(x):
    y = np.sin(x) * 2.0
    z = np.log(y)  # MARK-LOG
    return np.sum(z)


def user_sqrt_loss(x):
    s = np.sqrt(x)  # MARK-SQRT
    return np.sum(s * 3.0)


def test_forward_log_of_zero_points_at_user_line():
    line = _line_of(user_loss, "MARK-LOG")
    with cr.detect_anomaly():
        with pytest.raises(cr.NumericalInstabilityError) as info:
            cr.grad(user_loss)(np.array([0.0, 1.0]))
    msg = str(info.value)
    assert "numpy.log" in msg and "-inf" in msg
    assert f'{__file__}", line {line}, in user_loss' in msg
    assert "z = np.log(y)" in msg
    assert "(2,)" in msg  # argument / output shapes
    assert not cr.is_anomaly_enabled()


def test_backward_inf_names_the_pullback_and_line():
    line = _line_of(user_sqrt_loss, "MARK-SQRT")
    with cr.detect_anomaly():
        with pytest.raises(cr.NumericalInstabilityError) as info:
            cr.grad(user_sqrt_loss)(np.array([0.0, 4.0]))
    msg = str(info.value)
    assert "pullback of numpy.sqrt" in msg and "inf" in msg
    assert f"line {line}, in user_sqrt_loss" in msg
    assert "backward" in msg


def test_hvp_sweep_is_checked_too():
    with cr.detect_anomaly():
        with pytest.raises(cr.NumericalInstabilityError, match="numpy.sqrt"):
            cr.hvp(user_sqrt_loss, np.array([0.0, 4.0]), np.ones(2))


def test_off_by_default_and_free_when_off(monkeypatch):
    assert not cr.is_anomaly_enabled()
    assert not Tape().anomaly and Tape().sources == []

    def boom(*a, **k):
        raise AssertionError("anomaly machinery called while off")

    monkeypatch.setattr(anomaly, "user_frame", boom)
    monkeypatch.setattr(anomaly, "on_record", boom)
    monkeypatch.setattr(anomaly, "check_pullback", boom)
    with np.errstate(divide="ignore"):
        g = cr.grad(user_sqrt_loss)(np.array([0.0, 4.0]))
    assert np.isinf(g[0]) and g[1] == 0.75


def test_flag_and_context_restore():
    prev = cr.set_anomaly_mode(True)
    try:
        assert prev is False and cr.is_anomaly_enabled()
        assert Tape().anomaly and Tape().sources == []
        with cr.detect_anomaly(False):
            assert not cr.is_anomaly_enabled()
        assert cr.is_anomaly_enabled()
    finally:
        cr.set_anomaly_mode(False)
    with pytest.raises(RuntimeError):
        with cr.detect_anomaly():
            raise RuntimeError("inside")
    assert not cr.is_anomaly_enabled()


def test_finite_computation_passes_and_matches():
    f = lambda x: np.sum(np.tanh(x) * np.exp(x))  # noqa: E731
    x = np.array([0.1, -0.3])
    with cr.detect_anomaly():
        g = cr.grad(f)(x)
        h = cr.hvp(f, x, np.ones(2))
    # anomaly mode sweeps every rule on its own: exactly the unfused sweeps
    with cr.fusion(False):
        np.testing.assert_array_equal(g, cr.grad(f)(x))
        np.testing.assert_array_equal(h, cr.hvp(f, x, np.ones(2)))
    np.testing.assert_allclose(g, cr.grad(f)(x), rtol=1e-15)
    np.testing.assert_allclose(h, cr.hvp(f, x, np.ones(2)), rtol=1e-15)


def test_nan_input_is_reported():
    with cr.detect_anomaly():
        with pytest.raises(cr.NumericalInstabilityError, match="input"):
            cr.grad(lambda x: np.sum(x))(np.array([np.nan, 1.0]))


def test_sources_are_recorded_per_node():
    with cr.detect_anomaly():
        tape = Tape()
    from chainrules.tracing import Traced

    x = Traced(np.ones(2), tape.leaf(np.ones(2)), tape)
    y = np.exp(x)  # MARK-EXP
    assert len(tape.sources) == len(tape.rules) == 2
    assert tape.sources[0] is None
    src = tape.sources[y.node]
    assert src.filename == __file__ and "MARK-EXP" in src.line
    assert src.function == "test_sources_are_recorded_per_node"


def test_user_frame_skips_package_frames():
    def inner():
        return anomaly.user_frame()

    src = inner()
    assert src.function == "inner" and src.filename == __file__
