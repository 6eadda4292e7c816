"""Operations without a derivative.

They return plain (untraced) values, their arguments get ``NoTangent``,
and calling them never disturbs the trace of their inputs: ``x`` stays
traced, so ``np.sum(x[np.argmax(x)] * np.floor(x))`` differentiates through
``x`` and treats ``argmax`` and ``floor`` as constants.

* index-valued: argmax, argmin, argsort, argpartition, argwhere, nonzero, flatnonzero,
  searchsorted, digitize, count_nonzero;
* piecewise constant (zero derivative almost everywhere, so a constant
  output is the derivative): floor, ceil, round/around, rint, trunc, fix,
  sign, floor_divide;
* boolean: comparisons, logical_and/or/not/xor, isnan/isinf/isfinite,
  isposinf/isneginf, signbit, isclose/allclose/array_equal/array_equiv,
  any/all;
* shape and type queries: np.shape, np.ndim, np.size, np.result_type,
  iscomplexobj, isrealobj, common_type, min_scalar_type, can_cast;
* ``zeros_like``/``ones_like``/``empty_like``/``full_like``: plain arrays
  of the traced value's shape and dtype (a traced ``fill_value`` raises:
  use ``np.zeros_like(x) + v`` or ``np.broadcast_to(v, x.shape)``).

``x.astype(int)`` and ``x.astype(bool)`` are handled in chainrules.tracing.
"""

import operator

import numpy as np

from chainrules.derived_common import f64_operands
from chainrules.errors import AutodiffError
from chainrules.registry import non_differentiable, register

_NONDIFF = (
    # indices
    np.argmax, np.argmin, np.argsort, np.argpartition, np.argwhere, np.nonzero,
    np.flatnonzero, np.searchsorted, np.digitize, np.count_nonzero,
    # piecewise constant
    np.floor, np.ceil, np.round, np.around, np.rint, np.trunc, np.fix, np.sign,
    np.floor_divide,
    # boolean
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.isnan, np.isinf, np.isfinite, np.isposinf, np.isneginf, np.signbit,
    np.isclose, np.allclose, np.array_equal, np.array_equiv, np.any, np.all,
    # shape and type queries
    np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj,
    np.common_type, np.min_scalar_type, np.can_cast,
    # new arrays of the same shape and dtype
    np.zeros_like, np.ones_like, np.empty_like,
)

for _f in _NONDIFF:
    non_differentiable(_f)

#: comparisons, and the comparison with the operands swapped
_COMPARISONS = {np.less: (operator.lt, operator.gt), np.less_equal: (operator.le, operator.ge),
                np.greater: (operator.gt, operator.lt),
                np.greater_equal: (operator.ge, operator.le),
                np.equal: (operator.eq, operator.eq), np.not_equal: (operator.ne, operator.ne)}


def _comparison(op, compare, swapped):
    def comparison_maker(ids, *args, **kwargs):
        if not kwargs and len(args) == 2:
            x, y = args
            tx = type(x)
            if f64_operands(x, tx, y, type(y)):
                # NumPy's scalar comparison, the float64 scalar on the left:
                # the ufunc's result, a NumPy bool
                return (compare(x, y) if tx is np.float64 else swapped(y, x)), None
        return op(*args, **kwargs), None

    comparison_maker._nondiff = True  # type: ignore[attr-defined]
    register(op)(comparison_maker)


for _f, (_compare, _swapped) in _COMPARISONS.items():
    _comparison(_f, _compare, _swapped)


@register(np.full_like)
def _full_like_maker(ids, a, fill_value, *args, **kwargs):
    if any(i is not None for i in ids[1:]):
        raise AutodiffError(
            "numpy.full_like with a traced fill_value would drop its derivative; "
            "use np.zeros_like(a) + fill_value or np.broadcast_to(fill_value, a.shape)")
    return np.full_like(a, fill_value, *args, **kwargs), None


_full_like_maker._nondiff = True
