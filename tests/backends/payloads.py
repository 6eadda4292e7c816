"""Array payloads other than ndarray, for the backend sweeps.

``Refusing`` is a small NEP-18 array, like CuPy's: it wraps an ndarray,
forwards ``__array_ufunc__`` and ``__array_function__`` to NumPy on the
wrapped data (re-wrapping the results), and refuses implicit conversion
(``__array__`` raises), so any ``np.asarray`` of a payload inside the engine
or a rule fails loudly instead of silently computing on the host.
"""

import numpy as np


class ImplicitConversionError(TypeError):
    pass


def _unwrap(v):
    if type(v) is Refusing:
        return v.data
    if type(v) in (list, tuple):
        return type(v)(_unwrap(x) for x in v)
    if type(v) is dict:
        return {k: _unwrap(x) for k, x in v.items()}
    return v


def _wrap(v):
    if type(v) is np.ndarray or isinstance(v, np.generic) and v.dtype.kind in "fc":
        return Refusing(v)  # 0-d results stay arrays, as CuPy's do
    if isinstance(v, tuple):
        vals = [_wrap(x) for x in v]
        return type(v)(*vals) if hasattr(v, "_fields") else type(v)(vals)
    if type(v) is list:
        return [_wrap(x) for x in v]
    return v


class Refusing:
    """An ndarray stand-in that refuses ``np.asarray``."""

    __slots__ = ("data",)
    __array_priority__ = 50

    def __init__(self, data):
        self.data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        raise ImplicitConversionError(
            "Refusing payload converted implicitly to a NumPy array (np.asarray)")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = tuple(_unwrap(o) for o in kwargs["out"])
        res = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        return _wrap(res)

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # attributes and methods that rules use
    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    T = property(lambda self: Refusing(self.data.T))
    mT = property(lambda self: Refusing(np.swapaxes(self.data, -1, -2)))
    real = property(lambda self: Refusing(self.data.real))
    imag = property(lambda self: Refusing(self.data.imag))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return _wrap(self.data[_unwrap(index)])

    def __setitem__(self, index, value):
        self.data[_unwrap(index)] = _unwrap(value)

    def __bool__(self):
        raise ImplicitConversionError("bool() of a Refusing payload")

    def __float__(self):
        raise ImplicitConversionError("float() of a Refusing payload")

    def astype(self, dtype, copy=True):
        return Refusing(self.data.astype(dtype, copy=copy))

    def copy(self):
        return Refusing(self.data.copy())

    def reshape(self, *shape, **kw):
        return Refusing(self.data.reshape(*shape, **kw))

    def transpose(self, *axes):
        return Refusing(self.data.transpose(*axes))

    def conj(self):
        return Refusing(self.data.conj())

    conjugate = conj

    def sum(self, *a, **k):
        return _wrap(self.data.sum(*a, **k))

    def any(self, *a, **k):
        return _wrap(self.data.any(*a, **k))

    def all(self, *a, **k):
        return _wrap(self.data.all(*a, **k))

    def __repr__(self):
        return f"Refusing({self.data!r})"


def _binary(name):
    def op(self, other):
        return getattr(np, name)(self, other)

    def rop(self, other):
        return getattr(np, name)(other, self)

    return op, rop


for _py, _np in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                 ("truediv", "true_divide"), ("pow", "power"), ("matmul", "matmul"),
                 ("floordiv", "floor_divide"), ("mod", "remainder"),
                 ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor")]:
    _op, _rop = _binary(_np)
    setattr(Refusing, f"__{_py}__", _op)
    setattr(Refusing, f"__r{_py}__", _rop)
for _py, _np in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                 ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")]:
    setattr(Refusing, f"__{_py}__", _binary(_np)[0])
Refusing.__neg__ = lambda self: np.negative(self)
Refusing.__invert__ = lambda self: np.invert(self)
Refusing.__abs__ = lambda self: np.absolute(self)
Refusing.__hash__ = None


def to_refusing(x):
    return Refusing(x) if type(x) is np.ndarray else x


def to_numpy(x):
    if type(x) is Refusing:
        return x.data
    if hasattr(x, "compute") and hasattr(x, "dask"):
        return np.asarray(x.compute())
    return x
