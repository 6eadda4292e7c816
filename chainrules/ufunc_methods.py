"""The methods of a ufunc other than a call (``np.add.reduce``,
``np.multiply.accumulate``, ``np.multiply.outer``, ``np.add.at``) on traced
values, as the NumPy functions they stand for (``Traced.__array_ufunc__``
hands them here)."""

import numpy as np

from .errors import MissingRuleError
from .guards import untraceable
from .registry import op_name

_REDUCE = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min,
           "fmax": np.nanmax, "fmin": np.nanmin}
_ACCUMULATE = {"add": np.cumsum, "multiply": np.cumprod}


def ufunc_method(ufunc, method, inputs, kwargs, writes):
    """``getattr(ufunc, method)(*inputs, **kwargs)`` on traced ``inputs``;
    ``writes`` is the write machinery (``chainrules.writes``, or None when
    it is not imported), which records ``ufunc.at``."""
    if method == "reduce" and ufunc.__name__ in _REDUCE and "where" not in kwargs \
            and "initial" not in kwargs:
        kw = dict(kwargs)
        kw.setdefault("axis", 0)
        if ufunc.__name__ in ("add", "multiply"):  # np.sum and np.prod take dtype=
            return _REDUCE[ufunc.__name__](*inputs, **kw)
        dtype = kw.pop("dtype", None)  # an extremum is exact in any dtype: cast after
        out = _REDUCE[ufunc.__name__](*inputs, **kw)
        return out if dtype is None else out.astype(dtype)
    if method == "accumulate" and ufunc.__name__ in _ACCUMULATE:
        kw = dict(kwargs)
        kw.setdefault("axis", 0)
        return _ACCUMULATE[ufunc.__name__](*inputs, **kw)
    if method == "outer" and len(inputs) == 2 and not kwargs:
        a, b = inputs
        na, nb = np.ndim(a), np.ndim(b)
        return ufunc(np.reshape(a, np.shape(a) + (1,) * nb),
                     np.reshape(b, (1,) * na + np.shape(b)))
    if method == "at":
        at = getattr(writes, "ufunc_at", None)  # chainrules/writes_buffers.py
        if at is not None:
            return at(ufunc, inputs, kwargs)
        untraceable(f"{op_name(ufunc)}.at (an in-place update)",
                     "build the result out of place, for example with "
                     "chainrules.numpy.index_add or np.where")
    raise MissingRuleError(
        f"no differentiation rule for {op_name(ufunc)}.{method} with "
        f"{len(inputs)} argument(s) and keywords {sorted(kwargs)}")
