"""``np.fft``: every transform is linear, so each rule is its transpose.

With the pairing ``Re(sum(c * t))`` of docs/guide/complex.md the transpose (not the
adjoint) is what a pullback needs:

* the DFT matrix is symmetric, so the transpose of ``fft`` is ``fft`` and that
  of ``ifft`` is ``ifft``, with the same ``norm`` (the scale is a symmetric
  factor too); ``n``/``s`` padding transposes to truncation and back;
* ``rfft`` keeps the first ``n//2 + 1`` outputs of ``fft`` of a real input:
  its transpose zero-pads the cotangent to ``n`` and takes the real part of
  its ``fft``;
* ``irfft`` reads the Hermitian half-spectrum, counting the entries other than
  0 and ``n/2`` twice: its transpose is ``conj(rfft(g))`` with the dual
  normalization, weighted 1 at frequency 0 (and ``n/2`` for even ``n``) and 2
  elsewhere;
* ``fftshift`` and ``ifftshift`` are permutations, each the other's transpose.

The n-dimensional transforms are products of 1-D ones along their axes.
"""

import inspect

import numpy as np

from chainrules.derived import LinearRule
from chainrules.errors import MissingRuleError
from chainrules.registry import op_name, register
from chainrules.staging import plain_array

_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _fit(g, axis, length):
    """Truncate or zero-pad ``g`` along ``axis`` to ``length``."""
    n = g.shape[axis]
    if n == length:
        return g
    if n > length:
        idx = [slice(None)] * g.ndim
        idx[axis] = slice(0, length)
        return g[tuple(idx)]
    widths = [(0, 0)] * g.ndim
    widths[axis] = (0, length - n)
    return np.pad(g, widths)


def _fit_all(g, shape, axes):
    for ax in axes:
        g = _fit(g, ax, shape[ax])
    return g


def _axes_n(shape, s, axes):
    """NumPy's defaults for (s, axes) of the n-dimensional transforms."""
    nd = len(shape)
    if axes is None:
        axes = tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    axes = tuple(a % nd for a in axes)
    if s is None:
        s = tuple(shape[a] for a in axes)
    return tuple(s), axes


def transform_rule(op, transpose):
    """Register a transform, linear in its first argument, as a
    ``chainrules.derived.LinearRule`` (what the public ``linear_rule``
    makes), with two things a transform needs beyond it: for a real input
    the cotangent is the real part of the transpose (the pairing is
    ``Re(sum(c * t))``), so real inputs get real cotangents; and its batched
    forms depend on the call's axes (counted from the end, so a leading
    batch axis is never transformed)."""

    def real_transpose(g, shape, *args, **kwargs):
        return np.real(transpose(g, shape, *args, **kwargs))

    real_transpose.__name__ = real_transpose.__qualname__ = transpose.__name__ + "_real"

    def fft_maker(ids, x, *args, **kwargs):
        if any(i is not None for i in ids[1:]):
            raise MissingRuleError(f"{op_name(op)} is differentiated in its array "
                                   "argument only; n/s/axes/norm must not be traced")
        y = op(x, *args, **kwargs)
        tr = transpose if x.dtype.kind == "c" else real_transpose
        # (a staged value of an ndarray too: the plan sweeps a batch of
        # directions as eager code does, not one direction at a time)
        forms = _batched_forms(op, tr, x, args, kwargs) if plain_array(x) else None
        return y, LinearRule(ids[0], op, tr, x.shape, args, kwargs, forms)

    register(op)(fft_maker)
    return op


def _from_the_end(op, ndim, args, kwargs):
    """The call's arguments as keywords with its axes counted from the end
    (all of them named), so that a leading batch axis is never transformed;
    None when they cannot be bound."""
    try:
        sig = inspect.signature(op)
        bound = sig.bind(None, *args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    kw = dict(bound.arguments)
    kw.pop(next(iter(sig.parameters)))
    if kw.get("out") is None:
        kw.pop("out", None)
    if "axis" in kw:
        kw["axis"] = kw["axis"] % ndim - ndim
    if "axes" in kw:
        axes = kw["axes"]
        if axes is None:
            s = kw.get("s")
            axes = range(ndim - len(s), ndim) if s is not None else range(ndim)
        elif np.ndim(axes) == 0:
            axes = (axes,)
        kw["axes"] = tuple(a % ndim - ndim for a in axes)
    return kw


def _batched_forms(op, transpose, x, args, kwargs):
    """``(op_b, transpose_b)`` of a transform on batches of directions: the
    same transform over the same trailing axes."""
    kw = _from_the_end(op, x.ndim, args, kwargs)
    if kw is None:
        return None
    shape = tuple(x.shape)

    def op_b(t, *a, **k):
        return op(t, **kw)

    def transpose_b(g, xshape, *a, **k):
        return transpose(g, (np.shape(g)[0],) + shape, **kw)

    return op_b, transpose_b


# -- 1-D ------------------------------------------------------------------------
def _fft_transpose(g, shape, n=None, axis=-1, norm=None, out=None):
    return _fit(np.fft.fft(g, axis=axis, norm=norm), axis, shape[axis])


def _ifft_transpose(g, shape, n=None, axis=-1, norm=None, out=None):
    return _fit(np.fft.ifft(g, axis=axis, norm=norm), axis, shape[axis])


def _rfft_transpose(g, shape, n=None, axis=-1, norm=None, out=None):
    n = shape[axis] if n is None else n
    full = _fit(g, axis, n)
    return _fit(np.real(np.fft.fft(full, axis=axis, norm=norm)), axis, shape[axis])


def _half_weights(n, m, axis, ndim, dtype):
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0 and m > n // 2:
        w[n // 2] = 1.0
    shape = [1] * ndim
    shape[axis] = m
    return w.reshape(shape).astype(np.finfo(dtype).dtype)


def _irfft_transpose(g, shape, n=None, axis=-1, norm=None, out=None):
    axis = axis % len(shape)
    n = 2 * (shape[axis] - 1) if n is None else n
    h = np.conjugate(np.fft.rfft(g, n=n, axis=axis, norm=_DUAL[norm]))
    h = h * _half_weights(n, h.shape[axis], axis, h.ndim, g.dtype)
    return _fit(h, axis, shape[axis])


transform_rule(np.fft.fft, _fft_transpose)
transform_rule(np.fft.ifft, _ifft_transpose)
transform_rule(np.fft.rfft, _rfft_transpose)
transform_rule(np.fft.irfft, _irfft_transpose)


# -- n-D ------------------------------------------------------------------------
def _fftn_transpose(g, shape, s=None, axes=None, norm=None, out=None):
    s, axes = _axes_n(shape, s, axes)
    return _fit_all(np.fft.fftn(g, axes=axes, norm=norm), shape, axes)


def _ifftn_transpose(g, shape, s=None, axes=None, norm=None, out=None):
    s, axes = _axes_n(shape, s, axes)
    return _fit_all(np.fft.ifftn(g, axes=axes, norm=norm), shape, axes)


def _fft2_transpose(g, shape, s=None, axes=(-2, -1), norm=None, out=None):
    return _fftn_transpose(g, shape, s, axes, norm)


def _ifft2_transpose(g, shape, s=None, axes=(-2, -1), norm=None, out=None):
    return _ifftn_transpose(g, shape, s, axes, norm)


def _rfftn_transpose(g, shape, s=None, axes=None, norm=None, out=None):
    s, axes = _axes_n(shape, s, axes)
    full = _fit(g, axes[-1], s[-1])
    h = np.real(np.fft.fftn(full, axes=axes, norm=norm))
    return _fit_all(h, shape, axes)


def _irfftn_transpose(g, shape, s=None, axes=None, norm=None, out=None):
    nd = len(shape)
    if axes is None:
        axes = tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    axes = tuple(a % nd for a in axes)
    if s is None:
        s = tuple(shape[a] for a in axes[:-1]) + (2 * (shape[axes[-1]] - 1),)
    h = np.conjugate(np.fft.rfftn(g, s=s, axes=axes, norm=_DUAL[norm]))
    h = h * _half_weights(s[-1], h.shape[axes[-1]], axes[-1], h.ndim, g.dtype)
    return _fit_all(h, shape, axes)


def _rfft2_transpose(g, shape, s=None, axes=(-2, -1), norm=None, out=None):
    return _rfftn_transpose(g, shape, s, axes, norm)


def _irfft2_transpose(g, shape, s=None, axes=(-2, -1), norm=None, out=None):
    return _irfftn_transpose(g, shape, s, axes, norm)


transform_rule(np.fft.fftn, _fftn_transpose)
transform_rule(np.fft.ifftn, _ifftn_transpose)
transform_rule(np.fft.fft2, _fft2_transpose)
transform_rule(np.fft.ifft2, _ifft2_transpose)
transform_rule(np.fft.rfftn, _rfftn_transpose)
transform_rule(np.fft.irfftn, _irfftn_transpose)
transform_rule(np.fft.rfft2, _rfft2_transpose)
transform_rule(np.fft.irfft2, _irfft2_transpose)

# -- shifts -----------------------------------------------------------------------
def _fftshift_transpose(g, shape, axes=None):
    return np.fft.ifftshift(g, axes)


def _ifftshift_transpose(g, shape, axes=None):
    return np.fft.fftshift(g, axes)


transform_rule(np.fft.fftshift, _fftshift_transpose)
transform_rule(np.fft.ifftshift, _ifftshift_transpose)
