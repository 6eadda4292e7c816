"""Differentiable ``scipy.fft``: every transform, with SciPy's signatures.

Unchanged code that calls ``scipy.fft`` differentiates: chainrules registers
a backend of ``scipy.fft`` (SciPy's documented extension point, the one CuPy
and pyFFTW use) that computes the calls on traced values with NumPy's FFT
rules and passes every other call on to SciPy. The functions here are the
same transforms for direct use; on plain arrays they call ``scipy.fft``.
They work whatever backend is in effect, so they are the way to
differentiate inside ``scipy.fft.set_backend(...)`` blocks that put another
backend first (SciPy's own included), or under a global backend set with
``scipy.fft.set_global_backend``: SciPy asks such a backend before
chainrules', and it refuses traced values. ``backend`` is chainrules'
backend, for ``scipy.fft.set_backend(backend)`` around such code.

``overwrite_x`` and ``workers`` are ignored on traced values (neither the
result nor its derivative depends on them; the input is never written to).
The fast Hankel transforms ``fht`` and ``ifht`` are differentiated in their
array (``dln``, ``mu``, ``offset`` and ``bias`` must be constants).
See rules/scipy_fft.py and rules/scipy_fft_r2r.py. (``import chainrules``
registers the backend once ``scipy.fft`` is imported; this module imports
``scipy.fft`` only when a function here is called on a plain array.)
"""

import importlib

from chainrules.rules import scipy_fft as _traced
from chainrules.tracing import holds_traced

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn",
           "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "dct", "idct", "dctn", "idctn", "dst", "idst", "dstn", "idstn",
           "fht", "ifht", "fftshift", "ifftshift", "backend"]

#: chainrules' backend of scipy.fft, registered with it when it is imported
backend = _traced.BACKEND
# (registered now if scipy.fft is loaded and an import hook of another
# library found it before chainrules' watcher could)
_traced.install()


def _call(name, x, *args, **kwargs):
    """``scipy.fft.<name>`` on a plain ``x``, its traced version otherwise."""
    if holds_traced(x):
        return _traced.TRANSFORMS[name](x, *args, **kwargs)
    return getattr(importlib.import_module("scipy.fft"), name)(x, *args, **kwargs)


# -- the FFTs -----------------------------------------------------------------------
def fft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.fft``."""
    return _call("fft", x, n, axis, norm, overwrite_x, workers, plan=plan)


def ifft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.ifft``."""
    return _call("ifft", x, n, axis, norm, overwrite_x, workers, plan=plan)


def fft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
         plan=None):
    """``scipy.fft.fft2``."""
    return _call("fft2", x, s, axes, norm, overwrite_x, workers, plan=plan)


def ifft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    """``scipy.fft.ifft2``."""
    return _call("ifft2", x, s, axes, norm, overwrite_x, workers, plan=plan)


def fftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.fftn``."""
    return _call("fftn", x, s, axes, norm, overwrite_x, workers, plan=plan)


def ifftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.ifftn``."""
    return _call("ifftn", x, s, axes, norm, overwrite_x, workers, plan=plan)


def rfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.rfft``."""
    return _call("rfft", x, n, axis, norm, overwrite_x, workers, plan=plan)


def irfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.irfft``."""
    return _call("irfft", x, n, axis, norm, overwrite_x, workers, plan=plan)


def rfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    """``scipy.fft.rfft2``."""
    return _call("rfft2", x, s, axes, norm, overwrite_x, workers, plan=plan)


def irfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    """``scipy.fft.irfft2``."""
    return _call("irfft2", x, s, axes, norm, overwrite_x, workers, plan=plan)


def rfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.rfftn``."""
    return _call("rfftn", x, s, axes, norm, overwrite_x, workers, plan=plan)


def irfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    """``scipy.fft.irfftn``."""
    return _call("irfftn", x, s, axes, norm, overwrite_x, workers, plan=plan)


def hfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.hfft``."""
    return _call("hfft", x, n, axis, norm, overwrite_x, workers, plan=plan)


def ihfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.ihfft``."""
    return _call("ihfft", x, n, axis, norm, overwrite_x, workers, plan=plan)


def hfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    """``scipy.fft.hfft2``."""
    return _call("hfft2", x, s, axes, norm, overwrite_x, workers, plan=plan)


def ihfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    """``scipy.fft.ihfft2``."""
    return _call("ihfft2", x, s, axes, norm, overwrite_x, workers, plan=plan)


def hfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """``scipy.fft.hfftn``."""
    return _call("hfftn", x, s, axes, norm, overwrite_x, workers, plan=plan)


def ihfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    """``scipy.fft.ihfftn``."""
    return _call("ihfftn", x, s, axes, norm, overwrite_x, workers, plan=plan)


# -- the DCT and DST ------------------------------------------------------------------
def dct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None):
    """``scipy.fft.dct``."""
    return _call("dct", x, type, n, axis, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """``scipy.fft.idct``."""
    return _call("idct", x, type, n, axis, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
         orthogonalize=None):
    """``scipy.fft.dctn``."""
    return _call("dctn", x, type, s, axes, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None):
    """``scipy.fft.idctn``."""
    return _call("idctn", x, type, s, axes, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


def dst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None):
    """``scipy.fft.dst``."""
    return _call("dst", x, type, n, axis, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


def idst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """``scipy.fft.idst``."""
    return _call("idst", x, type, n, axis, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


def dstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """``scipy.fft.dstn``."""
    return _call("dstn", x, type, s, axes, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


def idstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None):
    """``scipy.fft.idstn``."""
    return _call("idstn", x, type, s, axes, norm, overwrite_x, workers,
                 orthogonalize=orthogonalize)


# -- shifts -------------------------------------------------------------------------
def fftshift(x, axes=None):
    """``scipy.fft.fftshift``."""
    return _call("fftshift", x, axes)


def ifftshift(x, axes=None):
    """``scipy.fft.ifftshift``."""
    return _call("ifftshift", x, axes)


# -- the fast Hankel transform ----------------------------------------------------------
def _hankel(name, a, dln, mu, offset, bias):
    """``scipy.fft.<name>``, traced when any argument is (a traced parameter
    raises ``MissingRuleError``: the transforms are differentiated in ``a``)."""
    if holds_traced((a, dln, mu, offset, bias)):
        return _traced.TRANSFORMS[name](a, dln, mu, offset, bias)
    return getattr(importlib.import_module("scipy.fft"), name)(a, dln, mu, offset=offset,
                                                              bias=bias)


def fht(a, dln, mu, offset=0.0, bias=0.0):
    """``scipy.fft.fht``."""
    return _hankel("fht", a, dln, mu, offset, bias)


def ifht(A, dln, mu, offset=0.0, bias=0.0):
    """``scipy.fft.ifht``."""
    return _hankel("ifht", A, dln, mu, offset, bias)
