"""The ndarray methods and attributes of a traced value (``x.sum()``,
``x.reshape(...)``, ``x.T``, ...) and the operators without a fast path of
their own (``//``, ``%``, ``divmod``, ``-x``, ``abs``, comparisons), each the
NumPy function it stands for, so that they dispatch through NumPy's
protocols like ``np.sum(x)``, and the array-API namespace of a traced value.
``ArrayMethods`` is a mixin of ``chainrules.tracing.Traced``."""

import sys

import numpy as np

#: where SciPy keeps its copy of array_api_compat's NumPy namespace (it moved
#: from scipy._lib to scipy._external in SciPy 1.18)
_SCIPY_COMPAT_NUMPY = ("scipy._external.array_api_compat.numpy",
                       "scipy._lib.array_api_compat.numpy")


class ArrayMethods:
    """ndarray methods as NumPy function calls (a mixin of ``Traced``)."""

    __slots__ = ()

    # -- operators as NumPy calls (+, -, *, /, ** and @ have fast paths in
    # chainrules.tracing) ---------------------------------------------------------
    def __floordiv__(self, other):
        return np.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return np.floor_divide(other, self)

    def __mod__(self, other):
        return np.remainder(self, other)

    def __rmod__(self, other):
        return np.remainder(other, self)

    def __divmod__(self, other):
        return np.divmod(self, other)

    def __rdivmod__(self, other):
        return np.divmod(other, self)

    def __neg__(self):
        return np.negative(self)

    def __abs__(self):
        return np.absolute(self)

    def __eq__(self, other):
        return np.equal(self, other)

    def __ne__(self, other):
        return np.not_equal(self, other)

    def __lt__(self, other):
        return np.less(self, other)

    def __le__(self, other):
        return np.less_equal(self, other)

    def __gt__(self, other):
        return np.greater(self, other)

    def __ge__(self, other):
        return np.greater_equal(self, other)

    __hash__ = None  # mutable, compared elementwise, as ndarray

    def __array_namespace__(self, api_version=None):
        # NumPy's namespace, whose functions reach chainrules through NumPy's
        # protocols: array-API code (SciPy under SCIPY_ARRAY_API=1) then calls
        # NumPy on traced values. The namespace object is the one SciPy's
        # array_api_compat gives plain ndarrays, so traced and plain
        # arguments of one call agree on it
        for name in _SCIPY_COMPAT_NUMPY:
            compat = sys.modules.get(name)
            if compat is not None:
                return compat
        return np

    # -- attributes ------------------------------------------------------------------
    @property
    def T(self):
        return np.transpose(self)

    @property
    def mT(self):
        return np.swapaxes(self, -1, -2)

    @property
    def real(self):
        return np.real(self)

    @property
    def imag(self):
        return np.imag(self)

    # -- methods -----------------------------------------------------------------
    def sum(self, *args, **kwargs):
        return np.sum(self, *args, **kwargs)

    def mean(self, *args, **kwargs):
        return np.mean(self, *args, **kwargs)

    def prod(self, *args, **kwargs):
        return np.prod(self, *args, **kwargs)

    def max(self, *args, **kwargs):
        return np.max(self, *args, **kwargs)

    def min(self, *args, **kwargs):
        return np.min(self, *args, **kwargs)

    def var(self, *args, **kwargs):
        return np.var(self, *args, **kwargs)

    def std(self, *args, **kwargs):
        return np.std(self, *args, **kwargs)

    def cumsum(self, *args, **kwargs):
        return np.cumsum(self, *args, **kwargs)

    def cumprod(self, *args, **kwargs):
        return np.cumprod(self, *args, **kwargs)

    def ptp(self, *args, **kwargs):
        return np.ptp(self, *args, **kwargs)

    def argmax(self, *args, **kwargs):
        return np.argmax(self, *args, **kwargs)

    def argmin(self, *args, **kwargs):
        return np.argmin(self, *args, **kwargs)

    def argsort(self, *args, **kwargs):
        return np.argsort(self, *args, **kwargs)

    def nonzero(self):
        return np.nonzero(self)

    def any(self, *args, **kwargs):
        return np.any(self, *args, **kwargs)

    def all(self, *args, **kwargs):
        return np.all(self, *args, **kwargs)

    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return np.reshape(self, shape, **kwargs)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return np.transpose(self, axes or None)

    def swapaxes(self, a, b):
        return np.swapaxes(self, a, b)

    def ravel(self, order="C"):
        return np.ravel(self, order)

    def flatten(self, order="C"):
        return np.ravel(self, order).copy()  # a copy, as NumPy's (ravel may be a view)

    def squeeze(self, axis=None):
        return np.squeeze(self, axis)

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis)

    def take(self, indices, axis=None, mode="raise"):
        return np.take(self, indices, axis, mode=mode)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1):
        return np.trace(self, offset, axis1, axis2)

    def dot(self, other):
        return np.dot(self, other)

    def conj(self):
        return np.conjugate(self)

    conjugate = conj

    def clip(self, min=None, max=None):
        return np.clip(self, min, max)

    def round(self, decimals=0):
        return np.round(self, decimals)


def _binary(ufunc):
    def op(self, other):
        return ufunc(self, other)

    def rop(self, other):
        return ufunc(other, self)

    return op, rop


class ArithmeticOperators:
    """``+ - * / ** @``, the bitwise operators and shifts as NumPy calls, for
    array types whose operators have no fast path of their own (a staged
    value of ``cr.jit``: ``chainrules.staging.Staged``)."""

    __slots__ = ()

    def __pos__(self):
        return np.positive(self)

    def __invert__(self):
        return np.invert(self)


for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("pow", np.power), ("matmul", np.matmul),
                      ("and", np.bitwise_and), ("or", np.bitwise_or),
                      ("xor", np.bitwise_xor), ("lshift", np.left_shift),
                      ("rshift", np.right_shift)]:
    _op, _rop = _binary(_ufunc)
    setattr(ArithmeticOperators, f"__{_name}__", _op)
    setattr(ArithmeticOperators, f"__r{_name}__", _rop)
del _name, _ufunc, _op, _rop
