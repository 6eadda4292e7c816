"""What a recording (``chainrules.staging``) knows of NumPy's functions:
which depend on shapes alone, which make outputs of a value-dependent
shape, which write into an argument, which ufuncs a plan writes as Python
operators on NumPy scalars; and the small functions a plan calls as steps
for methods of staged values (``astype``, ``view``, ``flatten``) and for
constants."""

import operator

import numpy as np

__all__ = ["SHAPE_FUNCTIONS", "DYNAMIC_SHAPE", "IN_PLACE"]


#: NumPy functions whose result depends on shapes and dtypes only: a Python
#: value they return is not a guard
SHAPE_FUNCTIONS = {np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj,
                   np.isrealobj, np.can_cast, np.may_share_memory,
                   np.shares_memory}

#: NumPy functions whose output shape can depend on the input values: a
#: guard on the output's shape follows them
DYNAMIC_SHAPE = {np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.compress,
                 np.extract, np.trim_zeros, np.setdiff1d, np.union1d, np.intersect1d,
                 np.setxor1d, np.delete, np.insert, np.repeat, np.resize, np.histogram,
                 np.bincount, np.unique_values, np.unique_counts, np.unique_inverse,
                 np.unique_all}

#: ufuncs that the plan writes as Python operators on real NumPy scalars:
#: NumPy's scalar arithmetic computes them as the ufunc's loop does (complex
#: products and absolute values it computes otherwise, to an ulp: there the
#: plan keeps the call that was made, the ufunc or the operator)
_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}
_OPERATOR_FUNCTIONS = {"+": operator.add, "-": operator.sub, "*": operator.mul,
                       "/": operator.truediv, "**": operator.pow}

#: unary ufuncs written as Python expressions on NumPy scalars ({} is the
#: operand): the same arithmetic
_UNARY = {np.square: "{0} * {0}", np.negative: "-{0}", np.absolute: "abs({0})",
          np.positive: "+{0}"}

#: functions whose value depends on their first argument's shape and dtype
#: only (``full_like`` with a fill value that is not staged)
_LIKE = {np.zeros_like, np.ones_like, np.full_like}
_FILLED = {np.zeros_like: np.zeros, np.ones_like: np.ones, np.full_like: np.full}

#: NumPy functions that write into an argument (its position)
IN_PLACE = {np.copyto: 0, np.put: 0, np.putmask: 0, np.place: 0, np.fill_diagonal: 0,
            np.put_along_axis: 0}


def _astype(x, dtype, casting="unsafe", copy=True):
    return x.astype(dtype, casting=casting, copy=copy)


def _view(x, *args, **kwargs):
    return x.view(*args, **kwargs)


def _flatten(x, order="C"):
    return x.flatten(order=order)


def _constant(value):
    return value
