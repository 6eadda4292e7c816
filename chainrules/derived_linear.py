"""Rules derived from a linear or bilinear definition: ``linear_rule`` (the
adjoint of a linear map) and ``bilinear_rule`` (the two adjoints of a
bilinear map), with the special cases an elementwise product records
(``ConstPartialRule`` for a constant scalar factor, ``SelfProductRule`` for
``x * x``)."""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from .arrays import shape_of, uniform_value
from .derived_common import SCALAR_OPERATORS, cast_mixed, f64_operands, plus, times
from .registry import op_name, register
from .rule import ReverseRule
from .tangents import ZERO, Structural

_new = object.__new__

_Op = TypeVar("_Op", bound=Callable[..., Any])


class ConstPartialRule(ReverseRule):
    """z = f(x, c) whose partial ``d`` in x is a constant: x + c, c - x
    (from ``scalar_rule``) and c * x for a constant real scalar c (from an
    elementwise ``bilinear_rule``). Linear."""

    __slots__ = ("x_id", "d", "name")
    linear = True

    def __init__(self, x_id, d, name):
        self.x_id = x_id
        self.d = d
        self.name = name

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, times(g, self.d))]

    def pushforward(self, tangents):
        return times(tangents[0], self.d)

    cot_skippable = True

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        return [(self.x_id, ZERO if skip else times(g, self.d), times(gd, self.d))]

    # a constant factor scales a batch as it scales one direction
    batched = True
    pullback_batched = pullback
    pushforward_batched = pushforward
    pullback_with_tangents_batched = pullback_with_tangents


class SelfProductRule(ReverseRule):
    """z = x * x, one input used twice: the two cotangents ``g * x`` of a
    product are one, ``2 g x``, computed in two passes instead of three and
    one temporary."""

    __slots__ = ("x_id", "x", "name")

    def __init__(self, x_id, x, name):
        self.x_id = x_id
        self.x = x
        self.name = name

    def inputs(self):
        return (self.x_id,)

    def _twice(self, g, batch=False):
        u = None if batch else uniform_value(g)
        if u is not None:   # a sum's cotangent: one pass, bit for bit 2 (g x)
            return self.x * (u + u)
        c = g * self.x
        if type(c) is np.ndarray:
            np.add(c, c, out=c)   # a fresh array of this rule's making
            return c
        return c + c

    def pullback(self, g):
        return [(self.x_id, self._twice(g))]

    def pushforward(self, tangents):
        t = tangents[0]
        return t if isinstance(t, Structural) else self._twice(t)

    cot_skippable = True

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        xd = tangents[0]
        has_g = not isinstance(g, Structural)
        c = self._twice(g) if has_g and not skip else ZERO
        cd = ZERO if isinstance(gd, Structural) else self._twice(gd)
        if has_g and not isinstance(xd, Structural):
            d = g * xd
            if type(d) is np.ndarray:  # a fresh array: doubled and summed in place
                np.add(d, d, out=d)
                if type(cd) is np.ndarray and cd.shape == d.shape and cd.dtype == d.dtype:
                    np.add(d, cd, out=d)
                    return [(self.x_id, c, d)]
                return [(self.x_id, c, plus(cd, d))]
            cd = plus(cd, d + d)
        return [(self.x_id, c, cd)]

    # batches: 2 g x broadcasts over the batch axis (a uniform batch is not
    # one scalar, so the uniform shortcut is off)
    batched = True

    def pullback_batched(self, g):
        return [(self.x_id, self._twice(g, True))]

    def pushforward_batched(self, tangents):
        t = tangents[0]
        return t if isinstance(t, Structural) else self._twice(t, True)

    def pullback_with_tangents_batched(self, g, gd, tangents, skip=()):
        xd = tangents[0]
        has_g = not isinstance(g, Structural)
        c = self._twice(g) if has_g and not skip else ZERO
        cd = ZERO if isinstance(gd, Structural) else self._twice(gd, True)
        if has_g and not isinstance(xd, Structural):
            cd = plus(cd, 2 * (g * xd))
        return [(self.x_id, c, cd)]


# -- linear --------------------------------------------------------------------
class LinearRule(ReverseRule):
    """y = op(x, *static) linear in x; the pullback is ``transpose``."""

    __slots__ = ("x_id", "op", "transpose", "shape", "args", "kwargs", "forms")
    linear = True

    def __init__(self, x_id, op, transpose, shape, args, kwargs, forms=None):
        self.x_id = x_id
        self.op = op
        self.transpose = transpose
        self.shape = shape
        self.args = args
        self.kwargs = kwargs
        self.forms = forms  # (op, transpose) of batches, or None

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        if isinstance(g, Structural):
            return []
        return [(self.x_id, self.transpose(g, self.shape, *self.args, **self.kwargs))]

    def pushforward(self, tangents):
        return self.op(tangents[0], *self.args, **self.kwargs)

    #: during ``hvp`` the first-order cotangent of a leaf input is not needed
    cot_skippable = True

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        cs = [] if self.x_id in skip else self.pullback(g)
        ds = self.pullback(gd)
        return [(self.x_id, cs[0][1] if cs else ZERO, ds[0][1] if ds else ZERO)]

    @property
    def batched(self):
        return self.forms is not None

    def pullback_batched(self, g):
        if isinstance(g, Structural):
            return []
        return [(self.x_id, self.forms[1](g, self.shape, *self.args, **self.kwargs))]

    def pushforward_batched(self, tangents):
        t = tangents[0]
        return t if isinstance(t, Structural) else self.forms[0](t, *self.args, **self.kwargs)

    def pullback_with_tangents_batched(self, g, gd, tangents, skip=()):
        cs = [] if self.x_id in skip else self.pullback(g)
        ds = self.pullback_batched(gd)
        return [(self.x_id, cs[0][1] if cs else ZERO, ds[0][1] if ds else ZERO)]


def linear_rule(op: _Op, transpose: Callable[..., Any], types: Sequence[Any] = (),
                batched: tuple[Callable[..., Any], Callable[..., Any]] | None = None) -> _Op:
    """Register ``op(x, *static, **kw)``, linear in its first argument.

    ``transpose(g, x_shape, *static, **kw)`` returns the cotangent of ``x``.
    The other arguments must not be traced (they are static: axes, shapes).
    ``batched``: optionally ``(op_b, transpose_b)``, the same two maps of a
    batch (a leading axis more on the tangent and on the cotangent), for
    sweeps carrying many directions at once.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> double = cr.primitive(lambda x: 2 * x)
    >>> _ = cr.linear_rule(double, lambda g, x_shape: 2 * g)
    >>> cr.grad(lambda x: np.sum(double(x)))(np.ones(2))
    array([2., 2.])
    """

    def linear_maker(ids, x, *args, **kwargs):
        if any(i is not None for i in ids[1:]):
            from .errors import MissingRuleError

            raise MissingRuleError(
                f"{op_name(op)} is differentiated in its first argument only; "
                "its other arguments must not be traced")
        y = op(x, *args, **kwargs)
        return y, LinearRule(ids[0], op, transpose, shape_of(x), args, kwargs, batched)

    register(op, *types)(linear_maker)
    return op


# -- bilinear ------------------------------------------------------------------
class BilinearRule(ReverseRule):
    """z = op(x, y, *static), linear in each of x and y."""

    __slots__ = ("x_id", "y_id", "x", "y", "op", "tx", "ty", "xshape", "yshape",
                 "args", "kwargs", "forms")

    def __init__(self, x_id, y_id, x, y, op, tx, ty, xshape, yshape, args, kwargs,
                 forms=None):
        self.forms = forms  # a BatchedBilinear, or None
        self.x_id = x_id
        self.y_id = y_id
        self.x = x
        self.y = y
        self.op = op
        self.tx = tx
        self.ty = ty
        self.xshape = xshape
        self.yshape = yshape
        self.args = args
        self.kwargs = kwargs

    def inputs(self):
        if self.x_id is None:
            return (self.y_id,)
        if self.y_id is None:
            return (self.x_id,)
        return (self.x_id, self.y_id)

    def _gx(self, g, y):
        return self.tx(g, y, self.xshape, *self.args, **self.kwargs)

    def _gy(self, g, x):
        return self.ty(g, x, self.yshape, *self.args, **self.kwargs)

    def pullback(self, g):
        # (_gx and _gy, without their calls)
        args, kwargs = self.args, self.kwargs
        if not args and not kwargs:  # no static arguments (x * y): no star-calls
            if self.y_id is None:
                return [(self.x_id, self.tx(g, self.y, self.xshape))]
            if self.x_id is None:
                return [(self.y_id, self.ty(g, self.x, self.yshape))]
            return [(self.x_id, self.tx(g, self.y, self.xshape)),
                    (self.y_id, self.ty(g, self.x, self.yshape))]
        if self.y_id is None:
            return [(self.x_id, self.tx(g, self.y, self.xshape, *args, **kwargs))]
        if self.x_id is None:
            return [(self.y_id, self.ty(g, self.x, self.yshape, *args, **kwargs))]
        return [(self.x_id, self.tx(g, self.y, self.xshape, *args, **kwargs)),
                (self.y_id, self.ty(g, self.x, self.yshape, *args, **kwargs))]

    def _split(self, tangents):
        if self.x_id is None:
            return ZERO, tangents[0]
        if self.y_id is None:
            return tangents[0], ZERO
        return tangents

    def pushforward(self, tangents):
        xd, yd = self._split(tangents)
        t = ZERO
        if not isinstance(xd, Structural):
            t = self.op(xd, self.y, *self.args, **self.kwargs)
        if not isinstance(yd, Structural):
            t = plus(t, self.op(self.x, yd, *self.args, **self.kwargs))
        return t

    #: the engine may pass ``skip``: inputs whose first-order cotangent is not
    #: wanted (leaves during ``hvp``), saving a contraction per such input
    cot_skippable = True

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        return self._with_tangents(g, gd, tangents, skip, False)

    def _with_tangents(self, g, gd, tangents, skip, batched):
        """``pullback_with_tangents``; ``batched``: ``gd`` and the tangents
        are batches of directions (``g`` is shared)."""
        xd, yd = self._split(tangents)
        has_g = not isinstance(g, Structural)
        has_gd = not isinstance(gd, Structural)
        if batched:
            f, (xs, ys) = self.forms, self._shapes()

            def gx(v, y, vb, yb):
                return f.tx(v, y, xs, ys, vb, yb)

            def gy(v, x, vb, xb):
                return f.ty(v, x, xs, ys, vb, xb)
        else:
            def gx(v, y, vb, yb):
                return self._gx(v, y)

            def gy(v, x, vb, xb):
                return self._gy(v, x)
        out = []
        if self.x_id is not None:
            c = self._gx(g, self.y) if has_g and self.x_id not in skip else ZERO
            cd = gx(gd, self.y, True, False) if has_gd else ZERO
            if has_g and not isinstance(yd, Structural):
                cd = plus(cd, gx(g, yd, False, True))
            out.append((self.x_id, c, cd))
        if self.y_id is not None:
            c = self._gy(g, self.x) if has_g and self.y_id not in skip else ZERO
            cd = gy(gd, self.x, True, False) if has_gd else ZERO
            if has_g and not isinstance(xd, Structural):
                cd = plus(cd, gy(g, xd, False, True))
            out.append((self.y_id, c, cd))
        return out

    # -- batches (when the registration gave their forms) ----------------------
    @property
    def batched(self):
        return self.forms is not None

    def _shapes(self):
        xs = self.xshape if self.xshape is not None else shape_of(self.x)
        ys = self.yshape if self.yshape is not None else shape_of(self.y)
        return xs, ys

    def pullback_batched(self, g):
        f, (xs, ys) = self.forms, self._shapes()
        out = []
        if self.x_id is not None:
            out.append((self.x_id, f.tx(g, self.y, xs, ys, True, False)))
        if self.y_id is not None:
            out.append((self.y_id, f.ty(g, self.x, xs, ys, True, False)))
        return out

    def pushforward_batched(self, tangents):
        f, (xs, ys) = self.forms, self._shapes()
        xd, yd = self._split(tangents)
        t = ZERO
        if not isinstance(xd, Structural):
            t = f.op(xd, self.y, xs, ys, True, False)
        if not isinstance(yd, Structural):
            t = plus(t, f.op(self.x, yd, xs, ys, False, True))
        return t

    def pullback_with_tangents_batched(self, g, gd, tangents, skip=()):
        return self._with_tangents(g, gd, tangents, skip, True)


class BatchedBilinear:
    """The maps of a bilinear rule on batches (a leading axis more than the
    value): ``tx(G, Y, x_shape, y_shape, g_batched, y_batched)``, the
    cotangent of x from the cotangent and y, either of which may be a batch
    (the result is a batch when either is); ``ty(G, X, x_shape, y_shape,
    g_batched, x_batched)`` likewise for y; ``op(X, Y, x_shape, y_shape,
    x_batched, y_batched)`` the operation itself with one side batched. The
    shapes are those of one direction."""

    __slots__ = ("tx", "ty", "op")

    def __init__(self, tx, ty, op):
        self.tx = tx
        self.ty = ty
        self.op = op


_SCALARS = (float, int, np.float64, np.float32)
_f64 = np.float64


def bilinear_rule(op: _Op, transpose_x: Callable[..., Any], transpose_y: Callable[..., Any],
                  types: Sequence[Any] = (), elementwise: bool = False,
                  batched: BatchedBilinear | None = None) -> _Op:
    """Register ``z = op(x, y, *static, **kw)``, bilinear in ``(x, y)``.

    ``transpose_x(g, y, x_shape, *static, **kw)`` is the cotangent of ``x``
    and ``transpose_y(g, x, y_shape, *static, **kw)`` that of ``y``. The
    pushforward and the second-order terms follow from bilinearity.
    ``elementwise=True`` (for ``multiply``) records ``x * c`` with a constant
    real scalar ``c`` as a cheaper scaling rule. ``batched``: optionally a
    ``BatchedBilinear``, the maps of batches of directions (used for calls
    without static arguments).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> outer = cr.primitive(lambda x, y: np.multiply.outer(x, y))
    >>> _ = cr.bilinear_rule(outer, lambda g, y, x_shape: g @ y,
    ...                      lambda g, x, y_shape: x @ g)
    >>> cr.grad(lambda x: np.sum(outer(x, np.array([1.0, 2.0]))))(np.ones(3))
    array([3., 3., 3.])
    """

    name = op_name(op)

    scalar_op = SCALAR_OPERATORS.get(op) if elementwise else None

    def bilinear_maker(ids, x, y, *args, **kwargs):
        # float64 scalars: NumPy's scalar arithmetic gives the ufunc's result,
        # a float64 scalar, so every shape is () and the dtypes are one
        tx, ty = type(x), type(y)
        f64 = (scalar_op is not None and (tx is _f64 or ty is _f64) and not args and not kwargs
               and f64_operands(x, tx, y, ty))
        z = scalar_op(x, y) if f64 else op(x, y, *args, **kwargs)
        xi, yi = ids
        if elementwise and not args and not kwargs and (
                (yi is None and type(y) in _SCALARS) or (xi is None and type(x) in _SCALARS)):
            rule = (ConstPartialRule(xi, y, name) if yi is None
                    else ConstPartialRule(yi, x, name))
        elif elementwise and xi is not None and xi == yi and x is y and not args and not kwargs:
            rule = SelfProductRule(xi, x, name)
        else:
            # BilinearRule(...), without the calls of its constructor; x is
            # needed only for the cotangent of y, and y only for that of x
            rule = _new(BilinearRule)
            rule.forms = None if args or kwargs else batched
            rule.x_id = xi
            rule.y_id = yi
            if yi is None:
                rule.x = rule.yshape = None
            else:
                rule.x = x
                rule.yshape = () if f64 else y.shape
            if xi is None:
                rule.y = rule.xshape = None
            else:
                rule.y = y
                rule.xshape = () if f64 else x.shape
            rule.op = op
            rule.tx = transpose_x
            rule.ty = transpose_y
            rule.args = args
            rule.kwargs = kwargs
        if f64:
            return z, rule
        zdt = z.dtype
        if (xi is None or x.dtype is zdt) and (yi is None or y.dtype is zdt):
            return z, rule  # one dtype throughout, the common case: no call
        return z, cast_mixed(xi, x, yi, y, z, rule)

    register(op, *types)(bilinear_maker)
    return op
