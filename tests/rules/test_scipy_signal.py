"""chainrules.scipy.signal: values equal SciPy's, gradients in both inputs
match finite differences for every mode and for N-D inputs of either size
order, lfilter's transpose, HVP, and the plain SciPy error naming the twin."""

import numpy as np
import pytest

import chainrules as cr

ss = pytest.importorskip("scipy.signal")
from chainrules.scipy import signal as cs  # noqa: E402

RNG = np.random.default_rng(0)
SHAPES = [((7,), (3,)), ((3,), (7,)), ((5, 4), (2, 3)), ((2, 2), (4, 3)), ((4, 4), (2, 5)),
          ((1,), (1,))]


def _fd_vjp(f, x, w, h=1e-6):
    out = np.zeros(x.shape, x.dtype)
    for idx in np.ndindex(*x.shape):
        for unit in ((1,) if x.dtype.kind != "c" else (1, 1j)):
            e = np.zeros(x.shape, x.dtype)
            e[idx] = h * unit
            d = np.real(np.sum(w * (f(x + e) - f(x - e)))) / (2 * h)
            out[idx] += d * (1 if unit == 1 else -1j)
    return out


@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", SHAPES)
def test_convolutions(name, mode, shapes):
    x, y = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    ref, mine = getattr(ss, name), getattr(cs, name)
    try:
        r = ref(x, y, mode=mode)
    except ValueError:   # 'valid' with neither input the larger
        with pytest.raises(ValueError):
            cr.vjp(lambda a, b: mine(a, b, mode=mode), x, y)
        return
    out, back = cr.vjp(lambda a, b: mine(a, b, mode=mode), x, y)
    np.testing.assert_allclose(out, r, atol=1e-12)
    w = RNG.normal(size=r.shape)
    gx, gy = back(w)
    np.testing.assert_allclose(gx, _fd_vjp(lambda a: ref(a, y, mode=mode), x, w), atol=1e-8)
    np.testing.assert_allclose(gy, _fd_vjp(lambda b: ref(x, b, mode=mode), y, w), atol=1e-8)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_complex_convolutions(name):
    x = RNG.normal(size=5) + 1j * RNG.normal(size=5)
    y = RNG.normal(size=3) + 1j * RNG.normal(size=3)
    ref, mine = getattr(ss, name), getattr(cs, name)
    w = RNG.normal(size=5)
    f = lambda a, b: np.real(np.sum(w * mine(a, b, mode="same")))  # noqa: E731
    gx, gy = cr.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, _fd_vjp(lambda a: ref(a, y, mode="same"), x, w), atol=1e-8)
    np.testing.assert_allclose(gy, _fd_vjp(lambda b: ref(x, b, mode="same"), y, w), atol=1e-8)


def test_convolve_hvp():
    y = RNG.normal(size=4)
    v = RNG.normal(size=6)

    def loss(x):
        return np.sum(cs.convolve(x, x * y[0], mode="same") ** 2)
    x = RNG.normal(size=6)
    h = 1e-5
    fd = (cr.grad(loss)(x + h * v) - cr.grad(loss)(x - h * v)) / (2 * h)
    np.testing.assert_allclose(cr.hvp(loss, x, v), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("axis", [0, -1])
def test_lfilter(axis):
    b, a = [0.2, 0.3, -0.1], [1.0, -0.5, 0.06]
    x, w = RNG.normal(size=(3, 6)), RNG.normal(size=(3, 6))
    out, back = cr.vjp(lambda v: cs.lfilter(b, a, v, axis=axis), x)
    np.testing.assert_allclose(out, ss.lfilter(b, a, x, axis=axis))
    np.testing.assert_allclose(back(w)[0], _fd_vjp(lambda v: ss.lfilter(b, a, v, axis=axis),
                                                   x, w), atol=1e-9)
    t = cr.jvp(lambda v: cs.lfilter(b, a, v, axis=axis), (x,), (w,))[1]
    np.testing.assert_allclose(t, ss.lfilter(b, a, w, axis=axis))   # linear in x
    with pytest.raises(cr.MissingRuleError, match="b and a must be constants"):
        cr.grad(lambda bb: np.sum(cs.lfilter(bb, a, x)))(np.array(b))


@pytest.mark.parametrize("name, call", [
    ("convolve", lambda v: ss.convolve(v, np.ones(2))),
    ("correlate", lambda v: ss.correlate(v, np.ones(2))),
    ("fftconvolve", lambda v: ss.fftconvolve(v, np.ones(2))),
    ("lfilter", lambda v: ss.lfilter([1.0], [1.0, -0.5], v)),
])
def test_plain_scipy_error_names_the_twin(name, call):
    with pytest.raises(cr.UntraceableError, match=f"chainrules.scipy.signal.{name} "):
        cr.grad(lambda v: np.sum(call(v)))(np.ones(4))
