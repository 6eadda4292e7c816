"""``scipy.signal`` convolutions and linear filtering (registered only when
SciPy is installed); the public twins are in ``chainrules.scipy.signal``.

* ``conv_full(x, y, method)``: the full N-D convolution, bilinear. Its
  transposes are full convolutions again, cropped: the cotangent of ``x`` is
  ``conv_full(g, flip(y))[Ny-1 : Ny-1+Nx]`` along every axis (and
  symmetrically for ``y``), so pullbacks are differentiable again. The
  ``same``/``valid`` modes and correlation are croppings and flips of it.
* ``lfilter_x(x, b, a, axis)``: ``scipy.signal.lfilter`` for a constant filter,
  linear in ``x``. The transpose of a causal filter is the same filter run
  backwards in time: ``flip(lfilter(b, a, flip(g)))``.
"""

import numpy as np

from chainrules.derived import bilinear_rule, linear_rule
from chainrules.primitives import primitive

from ._util import on_demand_family

try:
    import scipy.signal as ss
except ImportError:  # pragma: no cover - SciPy is an optional extra
    ss = None

_family_loaded = on_demand_family()

__all__ = ["conv_full", "lfilter_x"]


def _conv_full_impl(x, y, method="auto"):
    return ss.convolve(x, y, mode="full", method=method)


def _lfilter_impl(x, b, a, axis=-1):
    if x.dtype == np.float32 and np.asarray(b).dtype.kind != "c" and \
            np.asarray(a).dtype.kind != "c":
        b, a = np.asarray(b, np.float32), np.asarray(a, np.float32)  # float32 stays
    return ss.lfilter(b, a, x, axis=axis)


conv_full = primitive(_conv_full_impl)
conv_full.__name__ = "conv_full"
lfilter_x = primitive(_lfilter_impl)
lfilter_x.__name__ = "lfilter_x"


def _window(z, start, shape):
    return z[tuple(slice(s, s + n) for s, n in zip(start, shape))]


def _conv_transpose_x(g, y, x_shape, method="auto"):
    full = conv_full(g, np.flip(y), method=method)
    return _window(full, [n - 1 for n in np.shape(y)], x_shape)


def _conv_transpose_y(g, x, y_shape, method="auto"):
    full = conv_full(g, np.flip(x), method=method)
    return _window(full, [n - 1 for n in np.shape(x)], y_shape)


def _lfilter_transpose(g, x_shape, b, a, axis=-1):
    return np.flip(lfilter_x(np.flip(g, axis), b, a, axis), axis)


if ss is not None:
    bilinear_rule(conv_full, _conv_transpose_x, _conv_transpose_y)
    linear_rule(lfilter_x, _lfilter_transpose)

_family_loaded()
