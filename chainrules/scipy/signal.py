"""Differentiable ``convolve``, ``correlate``, ``fftconvolve`` (modes full,
same, valid; N-D; both inputs differentiable) and ``lfilter`` (constant
filter ``b``, ``a``; ``x`` differentiable), with the signatures of
``scipy.signal``; requires SciPy. See rules/scipy_signal.py."""

import numpy as np

from chainrules.errors import MissingRuleError
from chainrules.rules.scipy_signal import conv_full, lfilter_x
from chainrules.tracing import is_traced

try:
    import scipy.signal as _ss
except ImportError:  # pragma: no cover
    _ss = None

__all__ = ["convolve", "correlate", "fftconvolve", "lfilter"]


def _crop(full, mode, s1, s2):
    """SciPy's ``same`` (centred, shape of in1) and ``valid`` (centred, shape
    ``|s1 - s2| + 1``) windows of the full result."""
    if mode == "full":
        return full
    if mode == "same":
        shape = s1
    elif mode == "valid":
        if not (all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))):
            raise ValueError("For 'valid' mode, one must be at least as large as the other "
                             "in every dimension")
        shape = tuple(abs(a - b) + 1 for a, b in zip(s1, s2))
    else:
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    start = [(f - n) // 2 for f, n in zip(full.shape, shape)]
    return full[tuple(slice(s, s + n) for s, n in zip(start, shape))]


def _check(in1, in2, name):
    if np.ndim(in1) != np.ndim(in2):
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality")
    if np.ndim(in1) == 0:
        return in1 * in2


def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve``."""
    if not (is_traced(in1) or is_traced(in2)):
        return _ss.convolve(in1, in2, mode=mode, method=method)
    scalar = _check(in1, in2, "convolve")
    if scalar is not None:
        return scalar
    full = conv_full(in1, in2, method=method)
    return _crop(full, mode, np.shape(in1), np.shape(in2))


def fftconvolve(in1, in2, mode="full", axes=None):
    """``scipy.signal.fftconvolve`` (over all axes)."""
    if not (is_traced(in1) or is_traced(in2)):
        return _ss.fftconvolve(in1, in2, mode=mode, axes=axes)
    if axes is not None and sorted(np.atleast_1d(axes) % max(np.ndim(in1), 1)) != \
            list(range(np.ndim(in1))):
        raise MissingRuleError("chainrules.scipy.signal.fftconvolve differentiates the "
                               "convolution over all axes (axes=None)")
    scalar = _check(in1, in2, "fftconvolve")
    if scalar is not None:
        return scalar
    full = conv_full(in1, in2, method="fft")
    return _crop(full, mode, np.shape(in1), np.shape(in2))


def correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate``: the convolution with ``in2`` flipped and
    conjugated."""
    if not (is_traced(in1) or is_traced(in2)):
        return _ss.correlate(in1, in2, mode=mode, method=method)
    if np.ndim(in1) == 0 and np.ndim(in2) == 0:
        return in1 * (np.conjugate(in2) if np.result_type(in2).kind == "c" else in2)
    _check(in1, in2, "correlate")
    s1, s2 = np.shape(in1), np.shape(in2)
    rev = np.flip(np.conjugate(in2) if np.result_type(in2).kind == "c" else in2)
    if mode == "valid" and all(a <= b for a, b in zip(s1, s2)) and s1 != s2:
        # SciPy swaps the inputs so the larger comes first: the result is the
        # correlation of in2 with in1, reversed and conjugated
        rev1 = np.flip(np.conjugate(in1) if np.result_type(in1).kind == "c" else in1)
        full = conv_full(in2, rev1, method=method)
        out = _crop(full, mode, s2, s1)
        out = np.flip(out)
        return np.conjugate(out) if np.result_type(out).kind == "c" else out
    full = conv_full(in1, rev, method=method)
    return _crop(full, mode, s1, s2)


def lfilter(b, a, x, axis=-1, zi=None):
    """``scipy.signal.lfilter`` differentiable in ``x`` (``b`` and ``a``
    are constants; without ``zi``)."""
    if not (is_traced(b) or is_traced(a) or is_traced(x) or is_traced(zi)):
        return _ss.lfilter(b, a, x, axis=axis, zi=zi)
    if is_traced(b) or is_traced(a):
        raise MissingRuleError("chainrules.scipy.signal.lfilter differentiates x only: the "
                               "filter coefficients b and a must be constants "
                               "(chainrules.stop_gradient)")
    if zi is not None:
        raise MissingRuleError("chainrules.scipy.signal.lfilter: initial conditions zi are "
                               "not supported when differentiating; filter without zi")
    return lfilter_x(x, np.asarray(b), np.asarray(a), axis)
