"""Python's operators on staged values: ``+ - * / **``, ``abs()`` and the
in-place operators, which ``staging`` installs into ``Staged``
(``install``).

They compute as the eager code's operators do, which is not always the
ufunc they stand for: on NumPy scalars Python's operators are NumPy's scalar
arithmetic (a complex product or ``abs()`` differs from the ufunc's loop by
an ulp at times; ``**`` in about one float64 case in twenty for exponents 3
and 1.5), and an array's ``**`` of a scalar takes NumPy's fast paths. The
plan then makes the operator's call, so that its replays compute what eager
code does.
"""

import operator

import numpy as np

from .staging_tables import _OPERATOR_FUNCTIONS, _OPERATORS

_ndarray = np.ndarray
_generic = np.generic
_NUMBERS = (bool, int, float, complex)

#: ``staging.Staged``, ``staging._written``, ``staging._ufunc_call`` and
#: ``staging._PLAIN`` (``install``: this module is below ``staging``, which
#: imports it)
Staged = _written = _ufunc_call = _PLAIN = None


def _operator(rec, ufunc, op, x, y):
    """``x op y`` with a Python operator (``Staged``'s ``+ - * / **``): on
    NumPy scalars computed as the operator computes it (NumPy's scalar
    arithmetic, which eager code meets: a complex product differs from the
    ufunc's by an ulp at times), the plan writing the operator; on arrays
    the ufunc, as an array's operator calls it."""
    cx = x.value if type(x) is Staged and x.rec is rec else x
    cy = y.value if type(y) is Staged and y.rec is rec else y
    tx, ty = type(cx), type(cy)
    if op == "**" and tx is _ndarray and type(x) is Staged and x.rec is rec and (
            ty in _NUMBERS or isinstance(cy, _generic)):
        # an array's ** of a scalar is not np.power's loop: NumPy takes fast
        # paths for the exponents -1, 0, 0.5, 1 and 2 (reciprocal, ones,
        # sqrt, copy, square), which differ from it for complex values. The
        # plan calls the operator, as eager code does
        value = operator.pow(cx, cy)
        if type(value) is _ndarray or isinstance(value, _generic):  # (0-d: a scalar)
            i = rec.n
            rec.n = i + 1
            out = Staged(value, i, rec)
            rec.meta[i] = (out._dtype, out._shape)
            if type(value) is not _ndarray:
                rec.scalars[i] = out._dtype
            rec.steps.append(("call", operator.pow, (x.ref, y.ref if type(y) is Staged else y),
                              {}, out.ref))
            return out
    if not (isinstance(cx, _generic) and (isinstance(cy, _generic) or ty in _NUMBERS)
            or isinstance(cy, _generic) and tx in _NUMBERS) \
            or type(x) is Staged and x.rec is not rec or type(y) is Staged and y.rec is not rec:
        if (type(x) is Staged and x.rec is rec or type(x) in _PLAIN) and (
                type(y) is Staged and y.rec is rec or type(y) in _PLAIN):
            # what NumPy's dispatch would call (``Staged.__array_ufunc__``
            # of a call without keywords), without its search for overrides
            return _ufunc_call(rec, ufunc, (x, y))
        return ufunc(x, y)  # (NumPy's dispatch: another type may take it)
    value = _OPERATOR_FUNCTIONS[op](cx, cy)
    if not isinstance(value, _generic):  # (a Python value: as NumPy's call records it)
        return ufunc(x, y)
    i = rec.n
    rec.n = i + 1
    out = Staged(value, i, rec)
    rec.meta[i] = (out._dtype, out._shape)
    rec.scalars[i] = out._dtype
    rec.steps.append(("call", ufunc, (x.ref if type(x) is Staged else x,
                                      y.ref if type(y) is Staged else y), {}, out.ref, op))
    return out


def _abs(self):
    v = self.value
    if not (isinstance(v, _generic) and v.dtype.kind == "c"):
        return np.absolute(self)
    # (a complex NumPy scalar's abs() is not the ufunc's to an ulp)
    rec = self.rec
    value = abs(v)
    i = rec.n
    rec.n = i + 1
    out = Staged(value, i, rec)
    rec.meta[i] = (out._dtype, out._shape)
    rec.scalars[i] = out._dtype
    rec.steps.append(("call", np.absolute, (self.ref,), {}, out.ref, "abs({0})"))
    return out


def _inplace(self, ufunc, other):
    """``self op= other``: NumPy's, written into the staged array; a NumPy
    scalar is immutable, so Python rebinds the name to ``self op other``,
    Python's operator."""
    if type(self.value) is _ndarray:
        return ufunc(self, other, out=self)
    op = _OPERATORS.get(ufunc, "**" if ufunc is np.power else None)
    if op is not None:
        return _operator(self.rec, ufunc, op, self, other)
    return ufunc(self, other)


def _ipow(self, other):
    rec, v = self.rec, self.value
    c = other.value if type(other) is Staged and other.rec is rec else other
    if type(v) is _ndarray and (type(c) in _NUMBERS or isinstance(c, _generic)):
        # NumPy's in-place ** of a scalar (its fast paths, as for **)
        if _written(rec, self, "**="):
            rec.steps.append(("call", operator.ipow, (
                self.ref, other.ref if type(other) is Staged else other), {}, None))
        operator.ipow(v, c)
        return self
    return _inplace(self, np.power, other)


def _operators(ufunc, op):
    def method(self, other):
        return _operator(self.rec, ufunc, op, self, other)

    def reflected(self, other):
        return _operator(self.rec, ufunc, op, other, self)

    def in_place(self, other):
        return _inplace(self, ufunc, other)

    return method, reflected, in_place


def install(staged, written, ufunc_call, plain):
    """Install the operators into the class ``staged`` (``staging.Staged``);
    ``written``: ``staging._written``, the check of a write; ``ufunc_call``:
    ``staging._ufunc_call``, the record of a ufunc's call; ``plain``: the
    types of plain operands."""
    global Staged, _written, _ufunc_call, _PLAIN
    Staged, _written, _ufunc_call, _PLAIN = staged, written, ufunc_call, plain
    for name, ufunc, op in [("add", np.add, "+"), ("sub", np.subtract, "-"),
                            ("mul", np.multiply, "*"), ("truediv", np.true_divide, "/"),
                            ("pow", np.power, "**"), ("floordiv", np.floor_divide, None),
                            ("mod", np.remainder, None), ("matmul", np.matmul, None)]:
        method, reflected, in_place = _operators(ufunc, op)
        if op is not None:
            setattr(staged, f"__{name}__", method)
            setattr(staged, f"__r{name}__", reflected)
        setattr(staged, f"__i{name}__", in_place)
    staged.__ipow__ = _ipow
    staged.__abs__ = _abs
