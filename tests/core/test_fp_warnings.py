"""NumPy's floating-point warnings raised while differentiating name the
user's line, under every transformation, and the user's own NumPy error
settings and warning filters keep their meaning."""

import threading
import warnings

import numpy as np
import pytest

import chainrules as cr


def logsum(x):
    return np.sum(np.log(x))  # LOG LINE


LOG_LINE = next(i for i, line in enumerate(open(__file__), 1) if "# LOG LINE" in line
                and "next(" not in line)
X0 = np.array([0.0, 1.0])


def _caught(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("run", [
    lambda: cr.grad(logsum)(X0),
    lambda: cr.value_and_grad(logsum)(X0),
    lambda: cr.vjp(logsum, X0),
    lambda: cr.jvp(logsum, (X0,), (np.ones(2),)),
    lambda: cr.hvp(logsum, X0, np.ones(2)),
    lambda: cr.jacobian(lambda x: logsum(x) * np.ones(2))(X0),
    lambda: cr.hessian(logsum)(X0),
    lambda: cr.linearize(logsum, X0),
    lambda: cr.hessian_operator(logsum, X0),
    lambda: cr.grad(cr.checkpoint(logsum))(X0),
], ids=["grad", "value_and_grad", "vjp", "jvp", "hvp", "jacobian", "hessian", "linearize",
        "hessian_operator", "checkpoint"])
def test_forward_warning_names_the_users_line(run):
    caught = _caught(run)
    forward = [w for w in caught if "in log" in str(w.message)]
    assert forward, [str(w.message) for w in caught]
    for w in forward:
        assert w.filename == __file__ and w.lineno == LOG_LINE
    # no warning names a file of the library
    assert all("chainrules" not in w.filename.replace(__file__, "") for w in caught), \
        [(w.filename, w.lineno) for w in caught]


def test_sweep_warning_names_the_call():
    caught = _caught(lambda: cr.grad(logsum)(X0))  # CALL LINE
    call_line = next(i for i, line in enumerate(open(__file__), 1) if "# CALL LINE" in line
                     and "next(" not in line)
    sweep = [w for w in caught if "in log" not in str(w.message)]
    assert sweep and all(w.filename == __file__ and w.lineno == call_line for w in sweep)


def test_error_filter_raises_at_the_users_line():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            cr.grad(logsum)(X0)


def test_numpy_settings_are_kept():
    before = np.geterr(), np.geterrcall()
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            cr.grad(logsum)(X0)
    with np.errstate(divide="ignore"):
        assert not [w for w in _caught(lambda: cr.grad(logsum)(X0))
                    if "divide" in str(w.message)]
    calls = []
    with np.errstate(divide="call", call=lambda kind, flag: calls.append(kind)):
        cr.grad(logsum)(X0)
    assert calls and all(k == "divide by zero" for k in calls)
    assert (np.geterr(), np.geterrcall()) == before


def test_errstate_inside_f_wins():
    def quiet(x):
        with np.errstate(divide="ignore"):
            return np.sum(np.log(x))

    caught = _caught(lambda: cr.value_and_grad(quiet)(X0))
    assert not [w for w in caught if "in log" in str(w.message)]


def test_value_and_gradient_unchanged():
    v, g = cr.value_and_grad(logsum)(np.array([2.0, 4.0]))
    assert v == pytest.approx(np.log(8.0)) and np.allclose(g, [0.5, 0.25])


def test_threads_do_not_share_the_redirect():
    """A thread that set divide='raise' keeps it while another thread is
    inside a transformation."""
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def slow(x):
        inside.set()
        done.wait(5)
        return np.sum(x)

    def other():
        inside.wait(5)
        seen["err"] = np.geterr()["divide"], np.geterrcall()
        done.set()

    t = threading.Thread(target=other)
    t.start()
    cr.grad(slow)(np.ones(2))
    t.join()
    assert seen["err"] == ("warn", None)


def test_python_numbers_at_a_pole_give_numpys_infinities():
    """A partial written with Python arithmetic (``1 / y``) meets a Python
    number at a pole or past the range of floats: the derivative is what
    NumPy gives there (an infinity, with NumPy's warning), as in the forward
    pass, not a ZeroDivisionError or OverflowError from inside the rule."""
    x = np.linspace(1.0, 2.0, 5)
    for f in (lambda x: np.sum(x / 0.0), lambda x: np.sum(x / 0),
              lambda x: np.sum(np.divide(x, 0.0))):
        caught = _caught(lambda: np.testing.assert_array_equal(cr.grad(f)(x), np.inf))
        assert any("divide by zero" in str(w.message) for w in caught)
    # the mixed second partial -1 / y**2 at y = 1e200: y**2 overflows in
    # Python; NumPy's overflow to infinity gives -0.0 (its warning ignored)
    with np.errstate(over="ignore"):
        h = cr.hvp(lambda x: np.sum(np.sin(x) / 1e200), x, np.ones(5))
    np.testing.assert_allclose(h, -np.sin(x) / 1e200, rtol=1e-15)
