"""``scipy.fft`` on traced values, and the uarray backend that sends SciPy's
calls there.

SciPy's transforms dispatch through uarray: ``scipy.fft.fft(x)`` asks each
backend of the domain ``"numpy.scipy.fft"`` in turn (the one of a
``set_backend`` block, then the global one unless it was set to be tried
last, then the registered ones; SciPy's own is global and tried last), and a
backend's ``__ua_function__`` returns ``NotImplemented`` to pass the call on.
``BACKEND`` handles the calls whose array argument holds traced values and
passes every other call on, so plain calls reach SciPy's implementation
unchanged. It is registered when ``scipy.fft`` is imported (``install()``
watches for that import; no SciPy module is imported for it), or at once
when ``scipy.fft`` is already loaded.

Each transform here has SciPy's signature and computes with NumPy calls that
have rules: ``np.fft``'s rules for the FFTs (the Hermitian ones as
conjugated real FFTs with the opposite normalization), and
``rules/scipy_fft_r2r.py`` for the DCT and DST. Their derivatives of any
order come from those rules. The fast Hankel transforms ``fht`` and ``ifht``
are rules of their own: each is linear in its array along the last axis,
``A = c W P C W a`` with ``W`` the diagonal power-law bias ``exp(-bias (j - j_c)
dln)``, ``c = exp(-bias offset)``, ``C`` the circular convolution by the
transform's coefficients and ``P`` the reversal, and ``P C`` is a Hankel
matrix (entry ``(j, k)`` depends on ``j + k`` only), so each transform is its
own transpose: the pullback is the same call on the cotangent. SciPy's
working precision is kept: float16 is computed as float32, integers and
booleans as float64, float32 stays float32 (complex64 spectra; a biased
Hankel transform is float64, as SciPy's). ``overwrite_x`` and ``workers``
change neither the result nor its derivative and are ignored; the input is
never written to.
"""

import operator

import numpy as np

from chainrules.tracing import holds_traced, is_traced, nested_array

from ._when_imported import when_imported
from .scipy_fft_r2r import real_transform_last

#: the normalization of the transform run the other way: an inverse DCT or
#: DST is the forward transform of the inverse type normalized so, and the
#: Hermitian FFTs are the real FFTs run the other way, normalized so
_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


# -- arguments, as SciPy reads them -----------------------------------------------
def _array(x):
    """The traced array ``x`` stands for (a list or tuple holding traced
    values becomes one array)."""
    return x if is_traced(x) else nested_array(x)


def _working(x):
    """``x`` in SciPy's working precision: float16 as float32, integers and
    booleans as float64, floats and complex numbers as they are."""
    if x.dtype == np.float16:
        return x.astype(np.float32)
    if x.dtype.kind not in "fc":
        return x.astype(np.float64)
    return x


def _prepare(x, norm, plan=None, real=False):
    """``(array, working array, norm)`` after SciPy's checks of ``plan``,
    ``norm`` and (``real``) that ``x`` is real."""
    if plan is not None:
        raise NotImplementedError("Passing a precomputed plan is not yet supported by "
                                  "scipy.fft functions")
    if norm not in _DUAL:
        raise ValueError(f'Invalid norm value {norm!r}, should be "backward", "ortho" '
                         'or "forward"')
    x = _array(x)
    if real and x.dtype.kind == "c":
        raise TypeError("x must be a real sequence")
    return x, _working(x), norm


def _complex_of(dtype):
    return np.result_type(dtype, np.complex64)


def _real_of(dtype):
    return np.finfo(dtype).dtype


def _in_dtype(y, dtype):
    """``y`` as ``dtype`` (NumPy 1.x's FFTs compute single precision in double,
    where SciPy returns single precision; NumPy 2 keeps it: no cast)."""
    return y if y.dtype == dtype else y.astype(dtype)


def _conj(x):
    return np.conjugate(x) if x.dtype.kind == "c" else x


def _points(n):
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    return n


def _axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _ints(v, name):
    try:
        return [operator.index(v)] if np.ndim(v) == 0 else [operator.index(a) for a in v]
    except TypeError:
        raise ValueError(f"{name} must be a scalar or iterable of integers") from None


def _shape_axes(shape, s, axes):
    """SciPy's ``(s, axes)`` of an n-dimensional transform of an array of
    ``shape``: lists of ints, ``-1`` in ``s`` read as the input's length,
    ``axes`` defaulting to the last ``len(s)`` axes or to all of them."""
    ndim = len(shape)
    if axes is not None:
        axes = [a + ndim if a < 0 else a for a in _ints(axes, "axes")]
        if any(a >= ndim or a < 0 for a in axes):
            raise ValueError("axes exceeds dimensionality of input")
        if len(set(axes)) != len(axes):
            raise ValueError("all axes must be unique")
    if s is not None:
        s = _ints(s, "shape")
        if axes and len(axes) != len(s):
            raise ValueError("when given, axes and shape arguments have to be of the "
                             "same length")
        if axes is None:
            if len(s) > ndim:
                raise ValueError("shape requires more axes than are present")
            axes = list(range(ndim - len(s), ndim))
        s = [shape[a] if n == -1 else n for n, a in zip(s, axes)]
    elif axes is None:
        s, axes = list(shape), list(range(ndim))
    else:
        s = [shape[a] for a in axes]
    if any(n < 1 for n in s):
        raise ValueError(f"invalid number of data points ({s}) specified")
    return s, axes


def _fit(x, axis, n):
    """``x`` truncated or zero-padded to ``n`` entries along ``axis``."""
    m = x.shape[axis]
    if m > n:
        return x[(slice(None),) * axis + (slice(0, n),)]
    if m < n:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, n - m)
        return np.pad(x, widths)
    return x


# -- the FFTs -----------------------------------------------------------------------
def _one_axis(x, n, axis, norm, plan, real=False):
    """The checked arguments of a 1-D transform: ``(x, n, axis, norm)``."""
    _, x, norm = _prepare(x, norm, plan, real)
    axis = _axis(axis, x.ndim)
    return x, _points(x.shape[axis] if n is None else n), axis, norm


def _c2c(op, x, n, axis, norm, plan):
    x, n, axis, norm = _one_axis(x, n, axis, norm, plan)
    return _in_dtype(op(x, n, axis, norm), _complex_of(x.dtype))


def _r2c(x, n, axis, norm, plan, hermitian=False):
    """``rfft`` (``ihfft``: conjugated, normalized the other way)."""
    x, n, axis, norm = _one_axis(x, n, axis, norm, plan, real=True)
    if hermitian:
        return _conj(_in_dtype(np.fft.rfft(x, n, axis, _DUAL[norm]), _complex_of(x.dtype)))
    return _in_dtype(np.fft.rfft(x, n, axis, norm), _complex_of(x.dtype))


def _c2r(x, n, axis, norm, plan, hermitian=False):
    """``irfft`` (``hfft``: of ``conj(x)``, normalized the other way); ``n``
    defaults to ``2 (m - 1)`` for ``m`` input points."""
    _, x, norm = _prepare(x, norm, plan)
    axis = _axis(axis, x.ndim)
    if n is None:
        n = 2 * (x.shape[axis] - 1)
        if n < 1:
            raise ValueError(f"Invalid number of data points ({n}) specified")
    _points(n)
    if hermitian:
        x, norm = _conj(x), _DUAL[norm]
    return _in_dtype(np.fft.irfft(x, n, axis, norm), _real_of(x.dtype))


def fft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _c2c(np.fft.fft, x, n, axis, norm, plan)


def ifft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _c2c(np.fft.ifft, x, n, axis, norm, plan)


def rfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _r2c(x, n, axis, norm, plan)


def irfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _c2r(x, n, axis, norm, plan)


def hfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _c2r(x, n, axis, norm, plan, hermitian=True)


def ihfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _r2c(x, n, axis, norm, plan, hermitian=True)


def _c2cn(op, x, s, axes, norm, plan):
    x0, x, norm = _prepare(x, norm, plan)
    s, axes = _shape_axes(x.shape, s, axes)
    if not axes:  # SciPy returns its input when there is no axis to transform
        return x0
    return _in_dtype(op(x, s, axes, norm), _complex_of(x.dtype))


def _r2cn(x, s, axes, norm, plan, hermitian=False):
    """``rfftn`` (``ihfftn``: conjugated, normalized the other way)."""
    _, x, norm = _prepare(x, norm, plan, real=True)
    s, axes = _shape_axes(x.shape, s, axes)
    if not axes:
        raise ValueError("at least 1 axis must be transformed")
    if hermitian:
        return _conj(_in_dtype(np.fft.rfftn(x, s, axes, _DUAL[norm]), _complex_of(x.dtype)))
    return _in_dtype(np.fft.rfftn(x, s, axes, norm), _complex_of(x.dtype))


def _c2rn(x, s, axes, norm, plan, hermitian=False):
    """``irfftn`` (``hfftn``: of ``conj(x)``, normalized the other way); the
    last axis's output length defaults to ``2 (m - 1)``."""
    _, x, norm = _prepare(x, norm, plan)
    given = s is not None
    s, axes = _shape_axes(x.shape, s, axes)
    if not axes:
        raise ValueError("at least 1 axis must be transformed")
    if not given:
        # (SciPy's n-dimensional transforms give one point for one input point)
        s[-1] = max(2 * (x.shape[axes[-1]] - 1), 1)
    if hermitian:
        x, norm = _conj(x), _DUAL[norm]
    return _in_dtype(np.fft.irfftn(x, s, axes, norm), _real_of(x.dtype))


def fftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _c2cn(np.fft.fftn, x, s, axes, norm, plan)


def ifftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _c2cn(np.fft.ifftn, x, s, axes, norm, plan)


def fft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
         plan=None):
    return _c2cn(np.fft.fftn, x, s, axes, norm, plan)


def ifft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    return _c2cn(np.fft.ifftn, x, s, axes, norm, plan)


def rfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _r2cn(x, s, axes, norm, plan)


def rfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    return _r2cn(x, s, axes, norm, plan)


def irfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    return _c2rn(x, s, axes, norm, plan)


def irfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    return _c2rn(x, s, axes, norm, plan)


def hfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return _c2rn(x, s, axes, norm, plan, hermitian=True)


def hfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    return _c2rn(x, s, axes, norm, plan, hermitian=True)


def ihfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    return _r2cn(x, s, axes, norm, plan, hermitian=True)


def ihfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    return _r2cn(x, s, axes, norm, plan, hermitian=True)


# -- the DCT and DST ------------------------------------------------------------------
#: the inverse of a type is the transform of this type, normalized the other way
_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def _r2r(kind, inverse, x, type, s, axes, norm, orthogonalize, one_axis=False):
    """A DCT or DST along ``axes`` (``one_axis``: ``s`` and ``axes`` are the
    1-D transform's ``n`` and ``axis``), each axis in turn, as SciPy computes
    it: a complex input's real and imaginary parts are transformed apart,
    and SciPy then reads ``orthogonalize`` as its default (it passes it on for
    real inputs only)."""
    x0, x, norm = _prepare(x, norm)
    if one_axis:
        axis = _axis(axes, x.ndim)
        s, axes = [_points(x.shape[axis] if s is None else s)], [axis]
    else:
        s, axes = _shape_axes(x.shape, s, axes)
        if not axes:
            return x0
    if type not in _INVERSE_TYPE:
        raise ValueError(f"invalid {kind.upper()} type")
    if inverse:
        type, norm = _INVERSE_TYPE[type], _DUAL[norm]
    for axis, n in zip(axes, s):
        x = _fit(x, axis, n)

    def along_axes(part, orthogonalize):
        for axis in axes:
            last = np.moveaxis(part, axis, -1)
            part = np.moveaxis(real_transform_last(kind, type, last, norm, orthogonalize),
                               -1, axis)
        return part

    if x.dtype.kind == "c":
        y = along_axes(np.real(x), None) + 1j * along_axes(np.imag(x), None)
    else:
        y = along_axes(x, orthogonalize)
    return _in_dtype(y, x.dtype)


def dct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None):
    return _r2r("dct", False, x, type, n, axis, norm, orthogonalize, one_axis=True)


def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    return _r2r("dct", True, x, type, n, axis, norm, orthogonalize, one_axis=True)


def dst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None):
    return _r2r("dst", False, x, type, n, axis, norm, orthogonalize, one_axis=True)


def idst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    return _r2r("dst", True, x, type, n, axis, norm, orthogonalize, one_axis=True)


def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
         orthogonalize=None):
    return _r2r("dct", False, x, type, s, axes, norm, orthogonalize)


def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None):
    return _r2r("dct", True, x, type, s, axes, norm, orthogonalize)


def dstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    return _r2r("dst", False, x, type, s, axes, norm, orthogonalize)


def idstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None):
    return _r2r("dst", True, x, type, s, axes, norm, orthogonalize)


# -- the fast Hankel transform ------------------------------------------------------
def fht_last(a, dln, mu, offset=0.0, bias=0.0):
    """``scipy.fft.fht`` (along the last axis), one operation in the precision
    of ``a``: SciPy computes it (this module's backend passes plain values on;
    SciPy's float32 transform with a bias is float64, from its weights)."""
    from scipy import fft

    return _in_dtype(fft.fht(a, dln, mu, offset=offset, bias=bias), a.dtype)


def ifht_last(A, dln, mu, offset=0.0, bias=0.0):
    """``scipy.fft.ifht`` (along the last axis), one operation in the precision
    of ``A``."""
    from scipy import fft

    return _in_dtype(fft.ifht(A, dln, mu, offset=offset, bias=bias), A.dtype)


def _self_transpose(op):
    """The pullback of a transform whose matrix is symmetric: ``op`` again."""
    def transpose(g, shape, *args, **kwargs):
        return op(g, *args, **kwargs)

    transpose.__name__ = transpose.__qualname__ = f"{op.__name__}_transpose"
    return transpose


def _register_fht(f):
    from chainrules.derived import linear_rule
    from chainrules.primitives import primitive

    op = primitive(f)
    linear_rule(op, _self_transpose(op), batched=(op, _self_transpose(op)))
    return op


fht_last = _register_fht(fht_last)
ifht_last = _register_fht(ifht_last)


def _hankel(op, a, dln, mu, offset, bias):
    """``op`` on the traced ``a`` in SciPy's working precision (float64 with a
    bias, whose weights are float64), or SciPy's error for complex input."""
    a = _working(_array(a))
    if a.dtype.kind == "c":
        raise TypeError("x must be a real sequence")
    if bias != 0 and a.dtype != np.float64:
        a = a.astype(np.float64)
    return op(a, dln, mu, offset, bias)


def fht(a, dln, mu, offset=0.0, bias=0.0):
    return _hankel(fht_last, a, dln, mu, offset, bias)


def ifht(A, dln, mu, offset=0.0, bias=0.0):
    return _hankel(ifht_last, A, dln, mu, offset, bias)


def fftshift(x, axes=None):
    return np.fft.fftshift(_array(x), axes)


def ifftshift(x, axes=None):
    return np.fft.ifftshift(_array(x), axes)


#: every transform of scipy.fft that has a traced version, by name
TRANSFORMS = {f.__name__: f for f in (
    fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn,
    hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn,
    dct, idct, dctn, idctn, dst, idst, dstn, idstn, fftshift, ifftshift, fht, ifht)}


#: the name of the array argument where it is not ``x``
_ARRAY_ARGUMENT = {"fht": "a", "ifht": "A"}


# -- the backend ----------------------------------------------------------------------
class TracedBackend:
    """A backend of ``scipy.fft`` (uarray's protocol) for traced values:
    calls whose array argument holds traced values run the transform of
    this module; every other call, and every function of ``scipy.fft``
    without a traced version (``fhtoffset``), is passed on to the next
    backend (SciPy's own, unchanged)."""

    __ua_domain__ = "numpy.scipy.fft"

    @staticmethod
    def __ua_function__(method, args, kwargs):
        transform = TRANSFORMS.get(getattr(method, "__name__", None))
        if transform is None:
            return NotImplemented
        name = method.__name__
        if name in _ARRAY_ARGUMENT:
            # a traced parameter of fht reaches its rule, which refuses it
            traced = holds_traced(args) or holds_traced(tuple(kwargs.values()))
        else:
            traced = holds_traced(args[0] if args else kwargs.get("x"))
        if not traced:
            return NotImplemented
        return transform(*args, **kwargs)

    def __repr__(self):
        return "<chainrules' scipy.fft backend for traced values>"


BACKEND = TracedBackend()
_registered = []


def _register(module):
    """Register ``BACKEND`` with ``module`` (``scipy.fft``), once."""
    if not _registered:
        module.register_backend(BACKEND)
        _registered.append(module)


def install():
    """Make calls of ``scipy.fft`` on traced values differentiable: register
    ``BACKEND`` now when ``scipy.fft`` is loaded, else once it is imported
    (importing nothing from SciPy now)."""
    if not _registered:
        when_imported("scipy.fft", _register, "its scipy.fft backend")


install()
