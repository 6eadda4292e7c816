"""Rules derived from one definition.

Most operations need only their partial derivatives (``scalar_rule``), the
adjoint of a linear map (``linear_rule``) or the two adjoints of a bilinear
map (``bilinear_rule``); from that one definition these helpers derive the
pullback, the pushforward and ``pullback_with_tangents``, so the same maths
is never written three times. ``unbroadcast`` is the one place where a
cotangent is summed back to the shape of a broadcast argument.

This module owns ``scalar_rule`` (one, two and, through ``derived_nary``,
more arguments); ``linear_rule`` and ``bilinear_rule`` live in
``derived_linear`` and are re-exported here, and the helpers both use in
``derived_common``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence, TypeVar

import numpy as np

from .arrays import uniform_value
from .broadcast import (CastCotangents, expand_batched, narrower_inputs,  # noqa: F401
                        unbroadcast, unbroadcast_batched)
from .derived_common import (PYTHON_NUMBERS, SCALAR_OPERATORS, UNARY_SCALAR_OPERATORS,
                             broadcast_tangent, call_partial, cast_mixed, f64_operands, first_times_sum,
                             is_zero_const, NotKept, plus, plus_second, product, replayed,
                             saved_values, signed_sum, times, widened)
from .derived_linear import (BilinearRule, ConstPartialRule,  # noqa: F401  (re-exported)
                             LinearRule, SelfProductRule, bilinear_rule, linear_rule)
from .errors import HvpNotSupported
from .registry import op_name, register
from .rule import ReverseRule
from .staging import plain_array
from .tangents import ZERO, Structural

_ndarray = np.ndarray
_new = object.__new__
_f64 = np.float64
#: NumPy's scalar types of inexact dtypes
_INEXACT_SCALARS = frozenset((np.float16, np.float32, np.float64, np.longdouble, np.complex64,
                              np.complex128, np.clongdouble))
#: the types of cotangents whose ``shape`` is their own (ndarrays, NumPy scalars)
_OF_SHAPE = _INEXACT_SCALARS | {_ndarray}

__all__ = ["scalar_rule", "linear_rule", "bilinear_rule", "unbroadcast"]

_Op = TypeVar("_Op", bound=Callable[..., Any])


# -- unary ---------------------------------------------------------------------
class _UnarySpec:
    __slots__ = ("op", "d", "d2", "ratio", "saves", "name", "const", "linear", "dk",
                 "dfn")

    def __init__(self):
        # optional second_ratio: f''/f' as a function of (x, y), so that the
        # tangent of a cotangent, gd f' + g f'' xd, is f' (gd + g r xd): the
        # cached first partial scales one fused sum
        self.ratio = None
        # optional factored partial d(x, y) == dk * dfn(x, y) with a scalar dk
        # that scales exactly (a power of two): a uniform cotangent u then
        # pulls back as dfn(x, y) * (u * dk), bit for bit g * d, one pass
        # less (x ** 2: d = 2 * x, dfn is x itself, no pass at all)
        self.dk = self.dfn = None


class UnaryScalarRule(ReverseRule):
    """y = f(x) elementwise, from ``d(x, y) = f'(x)`` and ``d2(x, y) = f''(x)``."""

    __slots__ = ("x_id", "x", "y", "spec", "dval")

    def __init__(self, x_id, x, y, spec):
        self.x_id = x_id
        self.x = x
        self.y = y
        self.spec = spec
        self.dval = None

    @property
    def name(self):
        return self.spec.name

    @property
    def linear(self):
        # a constant partial with no second derivative (negative, x ** 1)
        return self.spec.linear

    #: the engine may pass ``skip`` (see ``Tape.backward_with_tangents``)
    cot_skippable = True

    def inputs(self):
        return (self.x_id,)

    def _d(self):
        # the partial depends on the primal only: computed once, reused by the
        # tangent sweep and the reverse sweep with tangents (and across HVPs)
        d = self.dval
        if d is None:
            d = self.dval = call_partial(self.spec.d, self.x, self.y)
        return d

    def _factored(self, g):
        """``g * d`` for a uniform ``g`` and a factored partial, else None."""
        spec = self.spec
        if spec.dk is not None and self.dval is None:
            u = uniform_value(g)
            if u is not None:
                return spec.dfn(self.x, self.y) * (u * spec.dk)
        return None

    def pullback(self, g):
        spec = self.spec
        if spec.const:
            return [(self.x_id, times(g, spec.d))]
        d = self.dval
        if d is None:
            if spec.dk is not None and type(g) is not _f64:  # (a scalar is never uniform)
                c = self._factored(g)
                if c is not None:
                    return [(self.x_id, c)]
            d = spec.d(self.x, self.y)
        if type(g) is np.ndarray:
            return [(self.x_id, g * d if g.ndim else product(g, d))]
        if type(g) is _f64 and type(d) is _f64:  # times' product, without the call
            return [(self.x_id, g * d)]
        return [(self.x_id, times(g, d))]

    def pushforward(self, tangents):
        return times(tangents[0], self._d())

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        spec = self.spec
        c = None if skip else self._factored(g)
        if c is None:
            c = ZERO if skip else times(g, self._d())
        xd = tangents[0]
        # (an ndarray's path, and a staged value's: its bits are eager's)
        if (spec.ratio is not None and plain_array(g) and plain_array(xd)
                and g.shape == xd.shape):
            cd = first_times_sum(self._d(), gd, g, call_partial(spec.ratio, self.x, self.y),
                                 xd)
            if cd is not None:
                return [(self.x_id, c, cd)]
        cd = ZERO if isinstance(gd, Structural) else times(gd, self._d())
        if not isinstance(xd, Structural) and not isinstance(g, Structural):
            if spec.d2 is None:
                raise HvpNotSupported(f"{spec.name} was registered without second=")
            cd = plus_second(cd, g, call_partial(spec.d2, self.x, self.y), xd)
        return [(self.x_id, c, cd)]

    # batches: elementwise products broadcast over the leading batch axis
    batched = True

    def pullback_batched(self, G):
        spec = self.spec
        if spec.const:
            return [(self.x_id, times(G, spec.d))]
        d = self.dval
        if d is None:
            d = call_partial(spec.d, self.x, self.y)
        return [(self.x_id, times(G, d))]

    pushforward_batched = pushforward
    # g is unbatched and the tangents batched: the fused one-shape path of
    # pullback_with_tangents never applies (its shapes differ), the rest
    # broadcasts
    pullback_with_tangents_batched = pullback_with_tangents


# -- binary --------------------------------------------------------------------
class _BinarySpec:
    __slots__ = ("op", "dx", "dy", "dxx", "dxy", "dyy", "saves", "name", "linear")


class BinaryScalarRule(ReverseRule):
    """z = f(x, y) elementwise with broadcasting, from its partials."""

    __slots__ = ("x_id", "y_id", "x", "y", "z", "xshape", "yshape", "zshape", "spec",
                 "dxv", "dyv")

    def __init__(self, x_id, y_id, x, y, z, xshape, yshape, zshape, spec):
        self.dxv = self.dyv = None
        self.x_id = x_id
        self.y_id = y_id
        self.x = x
        self.y = y
        self.z = z
        self.xshape = xshape
        self.yshape = yshape
        self.zshape = zshape
        self.spec = spec

    @property
    def name(self):
        return self.spec.name

    @property
    def linear(self):
        # constant partials, zero second derivatives (add, subtract)
        return self.spec.linear

    cot_skippable = True

    def inputs(self):
        if self.x_id is None:
            return (self.y_id,)
        if self.y_id is None:
            return (self.x_id,)
        return (self.x_id, self.y_id)

    def _dx(self):
        d = self.dxv
        if d is None:
            d = self.dxv = call_partial(self.spec.dx, self.x, self.y, self.z)
        return d

    def _dy(self):
        d = self.dyv
        if d is None:
            d = self.dyv = call_partial(self.spec.dy, self.x, self.y, self.z)
        return d

    def pullback(self, g):
        spec, x, y, z = self.spec, self.x, self.y, self.z
        out = []
        # a float64 scalar g (a 0-d output: 0-d inputs) times a float64
        # scalar partial is times' product, of shape (): nothing to sum
        scalar = type(g) is _f64
        if self.x_id is not None:
            d = call_partial(spec.dx, x, y, z)
            if scalar and type(d) is _f64:
                c = g * d
            else:
                c = times(g, d)
                if not (type(c) in _OF_SHAPE and c.shape == self.xshape):  # nothing to sum
                    c = unbroadcast(c, self.xshape)
            out.append((self.x_id, c))
        if self.y_id is not None:
            d = call_partial(spec.dy, x, y, z)
            if scalar and type(d) is _f64:
                c = g * d
            else:
                c = times(g, d)
                if not (type(c) in _OF_SHAPE and c.shape == self.yshape):
                    c = unbroadcast(c, self.yshape)
            out.append((self.y_id, c))
        return out

    def _tangents(self, tangents):
        if self.x_id is None:
            return ZERO, tangents[0]
        if self.y_id is None:
            return tangents[0], ZERO
        return tangents

    def pushforward(self, tangents):
        return self._push(*self._tangents(tangents), self.zshape)

    def _push(self, xd, yd, zshape):
        if self.spec.linear and not isinstance(xd, Structural) and not isinstance(
                yd, Structural):
            # x + y, x - y: one pass
            t = signed_sum(xd, self.spec.dx, yd, self.spec.dy)
            return broadcast_tangent(t, zshape)
        t = ZERO
        if not isinstance(xd, Structural):
            t = times(xd, self._dx())
        if not isinstance(yd, Structural):
            t = plus(t, times(yd, self._dy()))
        if isinstance(t, Structural):
            return t
        return broadcast_tangent(t, zshape)

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        return self._with_tangents(g, gd, tangents, skip, False)

    def _with_tangents(self, g, gd, tangents, skip, batched):
        """``pullback_with_tangents``; ``batched``: ``gd`` and the tangents
        are batches of directions (``g`` is shared)."""
        spec, x, y, z = self.spec, self.x, self.y, self.z
        xd, yd = self._expanded(tangents) if batched else self._tangents(tangents)
        unbroadcast_d = unbroadcast_batched if batched else unbroadcast
        has_g = not isinstance(g, Structural)
        xd_on = has_g and not isinstance(xd, Structural)
        yd_on = has_g and not isinstance(yd, Structural)
        if (xd_on or yd_on) and spec.dxx is None:
            raise HvpNotSupported(f"{spec.name} was registered without second=")
        out = []
        dxy = call_partial(spec.dxy, x, y, z) if (xd_on or yd_on) and spec.dxy is not None else 0
        if self.x_id is not None:
            d = self._dx()
            c = ZERO if self.x_id in skip else times(g, d)
            cd = times(gd, d)
            if xd_on:
                cd = plus_second(cd, g, call_partial(spec.dxx, x, y, z), xd)
            if yd_on:
                cd = plus_second(cd, g, dxy, yd)
            out.append((self.x_id, unbroadcast(c, self.xshape),
                        cd if isinstance(cd, Structural) else unbroadcast_d(cd, self.xshape)))
        if self.y_id is not None:
            d = self._dy()
            c = ZERO if self.y_id in skip else times(g, d)
            cd = times(gd, d)
            if xd_on:
                cd = plus_second(cd, g, dxy, xd)
            if yd_on:
                cd = plus_second(cd, g, call_partial(spec.dyy, x, y, z), yd)
            out.append((self.y_id, unbroadcast(c, self.yshape),
                        cd if isinstance(cd, Structural) else unbroadcast_d(cd, self.yshape)))
        return out

    # batches: cotangents keep their batch axis when summed back to an
    # input's shape, tangents of inputs with fewer axes than the output get
    # ones after the batch axis so that they broadcast as their slices would
    batched = True

    def pullback_batched(self, G):
        spec, x, y, z = self.spec, self.x, self.y, self.z
        out = []
        if self.x_id is not None:
            out.append((self.x_id, unbroadcast_batched(
                times(G, call_partial(spec.dx, x, y, z)), self.xshape)))
        if self.y_id is not None:
            out.append((self.y_id, unbroadcast_batched(
                times(G, call_partial(spec.dy, x, y, z)), self.yshape)))
        return out

    def _expanded(self, tangents):
        xd, yd = self._tangents(tangents)
        n = len(self.zshape)
        if self.x_id is not None:
            xd = expand_batched(xd, self.xshape, n)
        if self.y_id is not None:
            yd = expand_batched(yd, self.yshape, n)
        return xd, yd

    def pushforward_batched(self, tangents):
        xd, yd = self._expanded(tangents)
        k = (xd if not isinstance(xd, Structural) else yd).shape[0]
        return self._push(xd, yd, (k,) + self.zshape)

    def pullback_with_tangents_batched(self, g, GD, tangents, skip=()):
        return self._with_tangents(g, GD, tangents, skip, True)


def scalar_rule(op: _Op, *partials: Callable[..., Any] | complex, second: Any = None,
                types: Sequence[Any] = (),
                second_ratio: Callable[..., Any] | complex | None = None,
                saves: str | Iterable[str] | None = None) -> _Op:
    """Register an elementwise rule from partial derivatives.

    Unary: ``scalar_rule(np.tanh, lambda x, y: 1 - y**2,
    second=lambda x, y: -2 * y * (1 - y**2))`` where ``x`` is the input and
    ``y`` the output. Binary: ``scalar_rule(np.arctan2, dx, dy,
    second=(dxx, dxy, dyy))`` with each function of ``(x, y, z)``, ``z`` the
    output. Three or more arguments: one partial per argument, each of
    ``(*args, z)``, and ``second=`` the upper triangle of the second
    partials row by row (``chainrules.derived_nary``). A partial may be a
    constant (``1``, ``-1``, ``0``).

    ``saves`` declares which values the partials read, by their place:
    ``"x"`` and ``"y"`` (input, output) for a unary rule, ``"x"``, ``"y"``,
    ``"z"`` (inputs, output) for a binary one, whatever the partials call
    their parameters (``saves="y"`` for tanh keeps only its output). The rule
    keeps only those; undeclared, it keeps every value (none when every
    partial is a constant), which is always right and costs memory. A
    partial reading a value not declared fails with a TypeError on ``None``
    at its first derivative; ``chainrules.testing.check_saves`` checks a
    declaration.
    A unary rule may also give ``second_ratio(x, y) = f''(x) / f'(x)`` where
    that is cheaper than ``f''`` (``-2 * y`` for tanh, ``1`` for exp): Hessian
    sweeps then scale one sum by the first partial they already hold.
    Holomorphic complex functions need nothing more: cotangents follow the
    convention of the manual's complex-numbers guide (docs/guide/complex.md).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> def softsign(x):
    ...     return x / (1 + np.abs(x))
    >>> softsign = cr.primitive(softsign)
    >>> _ = cr.scalar_rule(softsign, lambda x, y: 1 / (1 + np.abs(x)) ** 2,
    ...                    second=lambda x, y: -2 * np.sign(x) / (1 + np.abs(x)) ** 3)
    >>> cr.grad(lambda x: np.sum(softsign(x)))(np.array([0.0, 1.0]))
    array([1.  , 0.25])
    """
    name = op_name(op)
    if len(partials) == 1:
        _unary_scalar_rule(op, name, partials[0], second, second_ratio, saves, types)
        return op
    if len(partials) == 2:
        _binary_scalar_rule(op, name, partials, second, saves, types)
        return op
    if len(partials) >= 3:
        if saves is not None:
            raise TypeError(f"scalar_rule({name}): a rule of three or more arguments keeps "
                            "every value; saves= applies to one and two arguments")
        from .derived_nary import NarySpec, nary_maker

        spec = NarySpec(op, name, partials, second)
        maker = nary_maker(spec)
        register(op, *types)(maker if spec.d2 is not None else replayed(maker))
        return op
    raise TypeError("scalar_rule takes one partial per argument")


def _unary_scalar_rule(op, name, d, second, second_ratio, saves, types):
    """``scalar_rule`` of one argument: registers a maker of
    ``UnaryScalarRule`` (with a cast wrapper for a wider output)."""
    spec = _UnarySpec()
    spec.op, spec.d, spec.d2, spec.name = op, d, second, name
    spec.ratio = second_ratio
    if second is None and second_ratio is not None:
        d, ratio = spec.d, second_ratio
        spec.d2 = lambda x, y: call_partial(d, x, y) * call_partial(ratio, x, y)
    spec.const = not callable(spec.d)
    spec.linear = spec.const and is_zero_const(spec.d2)
    spec.saves = saved_values(name, ("x", "y"), (spec.d, spec.d2, second_ratio), saves)
    save_x, save_y = "x" in spec.saves, "y" in spec.saves
    # what the rule holds in place of a value it does not keep
    no_x, no_y = NotKept(name, "x"), NotKept(name, "y")

    scalar_op = UNARY_SCALAR_OPERATORS.get(op)

    def unary_maker(ids, x, **kwargs):
        if kwargs:
            y = op(x, **kwargs)
        elif scalar_op is not None and type(x) is _f64:
            y = scalar_op(x)  # NumPy's scalar arithmetic: the ufunc's result
        else:
            y = op(x)
        # (float64 scalars in and out: one dtype, without reading it)
        if (type(x) is _f64 and type(y) is _f64) or (xdt := x.dtype) is (ydt := y.dtype) or (
                xdt == ydt):
            # UnaryScalarRule(...), without the calls of its constructor
            rule = _new(UnaryScalarRule)
            rule.x_id = ids[0]
            rule.x = x if save_x else no_x
            rule.y = y if save_y else no_y
            rule.spec = spec
            rule.dval = None
            return y, rule
        # real to complex (scipy.special.wofz), float32 to float64: the
        # partials read x in the output's precision, and the input's
        # cotangent takes its own dtype
        rule = UnaryScalarRule(ids[0], widened(x, ydt) if save_x else no_x,
                               y if save_y else no_y, spec)
        return y, CastCotangents(rule, {ids[0]: xdt}, ydt)

    unary_maker.spec = spec
    register(op, *types)(unary_maker if spec.d2 is not None else replayed(unary_maker))


def _binary_scalar_rule(op, name, partials, second, saves, types):
    """``scalar_rule`` of two arguments: registers a maker of
    ``BinaryScalarRule`` (``ConstPartialRule`` for one traced side with a
    constant partial and no broadcasting)."""
    spec = _BinarySpec()
    spec.op, spec.name = op, name
    spec.dx, spec.dy = partials
    if second is None:
        spec.dxx = spec.dxy = spec.dyy = None
    else:
        spec.dxx, spec.dxy, spec.dyy = second
    spec.linear = (not callable(spec.dx) and not callable(spec.dy)
                   and all(is_zero_const(d) for d in (spec.dxx, spec.dxy, spec.dyy)))
    spec.saves = saved_values(name, ("x", "y", "z"),
                              (spec.dx, spec.dy, spec.dxx, spec.dxy, spec.dyy), saves)
    save_x, save_y, save_z = "x" in spec.saves, "y" in spec.saves, "z" in spec.saves
    no_x, no_y, no_z = NotKept(name, "x"), NotKept(name, "y"), NotKept(name, "z")

    dx_const = not callable(spec.dx) and spec.dxx == 0 and spec.dxy == 0
    dy_const = not callable(spec.dy) and spec.dyy == 0 and spec.dxy == 0

    scalar_op = SCALAR_OPERATORS.get(op)

    def binary_maker(ids, x, y, **kwargs):
        # float64 scalars: NumPy's scalar arithmetic gives the ufunc's
        # result, a float64 scalar, so every shape is () and the dtypes are
        # one: the rules below, without reading them
        f64 = (scalar_op is not None and not kwargs and (type(x) is _f64 or type(y) is _f64)
               and f64_operands(x, type(x), y, type(y)))
        if f64:
            z = scalar_op(x, y)
        else:
            z = op(x, y, **kwargs) if kwargs else op(x, y)
        xi, yi = ids
        # x + c, c - x, ...: one traced side with a constant partial and no
        # broadcasting is a plain (signed) identity
        if yi is None and dx_const and (f64 or x.shape == z.shape):
            rule = ConstPartialRule(xi, spec.dx, spec.name)
        elif xi is None and dy_const and (f64 or y.shape == z.shape):
            rule = ConstPartialRule(yi, spec.dy, spec.name)
        elif f64:
            return z, BinaryScalarRule(xi, yi, x if save_x else no_x, y if save_y else no_y,
                                       z if save_z else no_z, None if xi is None else (),
                                       None if yi is None else (), (), spec)
        else:
            # the values the partials read: a float32 operand beside float64
            # ones (a constant np.float32(0.7), a traced float32 array) in
            # the output's precision, or 1 / y would carry float32's error
            # (a NumPy scalar of the output's own type, as in x * y of two
            # float64 scalars, is in its precision already)
            zdt = z.dtype
            tz = type(z) if type(z) in _INEXACT_SCALARS else None
            px, py = x, y
            tx, ty = type(x), type(y)
            if not ((tx is _ndarray and x.dtype is zdt) or tx is tz or tx in PYTHON_NUMBERS):
                px = widened(x, zdt)
            if not ((ty is _ndarray and y.dtype is zdt) or ty is tz or ty in PYTHON_NUMBERS):
                py = widened(y, zdt)
            # traced values always have .shape; constants' shapes are not needed
            rule = BinaryScalarRule(
                xi, yi, px if save_x else no_x, py if save_y else no_y,
                z if save_z else no_z, None if xi is None else x.shape,
                None if yi is None else y.shape, z.shape, spec)
        if f64:
            return z, rule
        zdt = z.dtype
        if (xi is None or x.dtype is zdt) and (yi is None or y.dtype is zdt):
            return z, rule  # one dtype throughout, the common case: no call
        return z, cast_mixed(xi, x, yi, y, z, rule)

    binary_maker.spec = spec
    register(op, *types)(binary_maker if spec.dxx is not None else replayed(binary_maker))
