"""Rules derived from one definition.

Most operations need only their partial derivatives (``scalar_rule``), the
adjoint of a linear map (``linear_rule``) or the two adjoints of a bilinear
map (``bilinear_rule``); from that one definition these helpers derive the
pullback, the pushforward and ``pullback_with_tangents``, so the same maths
is never written three times. ``unbroadcast`` is the one place where a
cotangent is summed back to the shape of a broadcast argument.
"""

import dis

import numpy as np

from .arrays import shape_of, uniform_array, uniform_value
from .broadcast import CastCotangents, narrower_inputs, unbroadcast  # noqa: F401  (re-exported)
from .errors import HvpNotSupported
from .registry import op_name, register
from .rule import ReverseRule
from .tangents import ZERO, Structural

__all__ = ["scalar_rule", "linear_rule", "bilinear_rule", "unbroadcast"]


def _broadcast_tangent(t, shape):
    if t.shape != shape:
        return np.broadcast_to(t, shape)
    return t


def _reads(fn, names):
    """Which of ``names`` the function reads (its parameters, positionally)."""
    if not callable(fn):
        return set()
    code = getattr(fn, "__code__", None)
    if code is None:
        return set(names)
    params = code.co_varnames[:code.co_argcount]
    if code.co_flags & 0x04:  # *args: cannot tell
        return set(names)
    used = {ins.argval for ins in dis.get_instructions(code)
            if ins.opname.startswith("LOAD_") and isinstance(ins.argval, str)}
    used |= set(code.co_cellvars)
    return {names[i] for i, p in enumerate(params) if i < len(names) and p in used}


def _call(d, *args):
    return d(*args) if callable(d) else d


def _is_zero_const(d):
    """A second partial given as the constant 0 (``None``, unknown, is not)."""
    return d is not None and not callable(d) and np.all(np.equal(d, 0))


def _times(g, d):
    """``g * d`` where ``d`` may be a constant partial (1, -1, 0). A uniform
    ``g`` (zero strides: the cotangent of a sum) times a constant stays
    uniform, at no cost."""
    if isinstance(g, Structural):
        return ZERO
    if type(d) is int or type(d) is float:
        if d == 1:
            return g
        if d == 0:
            return ZERO
        return _scale(g, d)
    return g * d


def _scale(g, c):
    """``g * c`` for a scalar ``c``; a uniform ``g`` stays uniform."""
    u = uniform_value(g)
    if u is not None:
        return uniform_array(u * c, g.shape)
    return g * c


def _plus(a, b):
    if isinstance(a, Structural):
        return b
    if isinstance(b, Structural):
        return a
    return a + b


def _signed_sum(a, da, b, db):
    """``a * da + b * db`` for constant partials, without a pass for a sign."""
    if da == 1:
        if db == 1:
            return a + b
        if db == -1:
            return a - b
    elif da == -1 and db == 1:
        return b - a
    return _plus(_times(a, da), _times(b, db))


# -- unary ---------------------------------------------------------------------
class _UnarySpec:
    __slots__ = ("op", "d", "d2", "save_x", "save_y", "name", "const", "linear", "dk",
                 "dfn")

    def __init__(self):
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
            d = self.dval = _call(self.spec.d, self.x, self.y)
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
            return [(self.x_id, _times(g, spec.d))]
        d = self.dval
        if d is None:
            c = self._factored(g)
            if c is not None:
                return [(self.x_id, c)]
            d = spec.d(self.x, self.y)
        return [(self.x_id, g * d)]

    def pushforward(self, tangents):
        return _times(tangents[0], self._d())

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        spec = self.spec
        c = None if skip else self._factored(g)
        if c is None:
            c = ZERO if skip else _times(g, self._d())
        cd = ZERO if isinstance(gd, Structural) else _times(gd, self._d())
        xd = tangents[0]
        if not isinstance(xd, Structural) and not isinstance(g, Structural):
            if spec.d2 is None:
                raise HvpNotSupported(f"{spec.name} was registered without second=")
            cd = _plus(cd, _times(_times(g, _call(spec.d2, self.x, self.y)), xd))
        return [(self.x_id, c, cd)]


# -- binary --------------------------------------------------------------------
class _BinarySpec:
    __slots__ = ("op", "dx", "dy", "dxx", "dxy", "dyy", "reads_x", "reads_y", "name",
                 "linear")


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
            d = self.dxv = _call(self.spec.dx, self.x, self.y, self.z)
        return d

    def _dy(self):
        d = self.dyv
        if d is None:
            d = self.dyv = _call(self.spec.dy, self.x, self.y, self.z)
        return d

    def pullback(self, g):
        spec, x, y, z = self.spec, self.x, self.y, self.z
        out = []
        if self.x_id is not None:
            out.append((self.x_id, unbroadcast(_times(g, _call(spec.dx, x, y, z)), self.xshape)))
        if self.y_id is not None:
            out.append((self.y_id, unbroadcast(_times(g, _call(spec.dy, x, y, z)), self.yshape)))
        return out

    def _tangents(self, tangents):
        if self.x_id is None:
            return ZERO, tangents[0]
        if self.y_id is None:
            return tangents[0], ZERO
        return tangents

    def pushforward(self, tangents):
        xd, yd = self._tangents(tangents)
        if self.spec.linear and not isinstance(xd, Structural) and not isinstance(
                yd, Structural):
            # x + y, x - y: one pass
            t = _signed_sum(xd, self.spec.dx, yd, self.spec.dy)
            return _broadcast_tangent(t, self.zshape)
        t = ZERO
        if not isinstance(xd, Structural):
            t = _times(xd, self._dx())
        if not isinstance(yd, Structural):
            t = _plus(t, _times(yd, self._dy()))
        if isinstance(t, Structural):
            return t
        return _broadcast_tangent(t, self.zshape)

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        spec, x, y, z = self.spec, self.x, self.y, self.z
        xd, yd = self._tangents(tangents)
        has_g = not isinstance(g, Structural)
        xd_on = has_g and not isinstance(xd, Structural)
        yd_on = has_g and not isinstance(yd, Structural)
        if (xd_on or yd_on) and spec.dxx is None:
            raise HvpNotSupported(f"{spec.name} was registered without second=")
        out = []
        dxy = _call(spec.dxy, x, y, z) if (xd_on or yd_on) and spec.dxy is not None else 0
        if self.x_id is not None:
            d = self._dx()
            c = ZERO if self.x_id in skip else _times(g, d)
            cd = _times(gd, d)
            if xd_on:
                cd = _plus(cd, _times(_times(g, _call(spec.dxx, x, y, z)), xd))
            if yd_on:
                cd = _plus(cd, _times(_times(g, dxy), yd))
            out.append((self.x_id, unbroadcast(c, self.xshape),
                        cd if isinstance(cd, Structural) else unbroadcast(cd, self.xshape)))
        if self.y_id is not None:
            d = self._dy()
            c = ZERO if self.y_id in skip else _times(g, d)
            cd = _times(gd, d)
            if xd_on:
                cd = _plus(cd, _times(_times(g, dxy), xd))
            if yd_on:
                cd = _plus(cd, _times(_times(g, _call(spec.dyy, x, y, z)), yd))
            out.append((self.y_id, unbroadcast(c, self.yshape),
                        cd if isinstance(cd, Structural) else unbroadcast(cd, self.yshape)))
        return out


def scalar_rule(op, *partials, second=None, types=()):
    """Register an elementwise rule from partial derivatives.

    Unary: ``scalar_rule(np.tanh, lambda x, y: 1 - y**2,
    second=lambda x, y: -2 * y * (1 - y**2))`` where ``x`` is the input and
    ``y`` the output. Binary: ``scalar_rule(np.arctan2, dx, dy,
    second=(dxx, dxy, dyy))`` with each function of ``(x, y, z)``, ``z`` the
    output. Three or more arguments: one partial per argument, each of
    ``(*args, z)``, and ``second=`` the upper triangle of the second
    partials row by row (``chainrules.derived_nary``). A partial may be a
    constant (``1``, ``-1``, ``0``). Arguments a
    partial does not read are not saved, so ``tanh`` keeps only its output.
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
        spec = _UnarySpec()
        spec.op, spec.d, spec.d2, spec.name = op, partials[0], second, name
        spec.const = not callable(spec.d)
        spec.linear = spec.const and _is_zero_const(second)
        reads = _reads(spec.d, ("x", "y")) | _reads(spec.d2, ("x", "y"))
        save_x, save_y = "x" in reads, "y" in reads

        def unary_maker(ids, x, **kwargs):
            y = op(x, **kwargs) if kwargs else op(x)
            rule = UnaryScalarRule(ids[0], x if save_x else None, y if save_y else None,
                                   spec)
            xdt, ydt = x.dtype, y.dtype
            if xdt is not ydt and xdt != ydt:
                # real to complex (scipy.special.wofz), float32 to float64: the
                # input's cotangent takes its own dtype
                rule = CastCotangents(rule, {ids[0]: xdt}, ydt)
            return y, rule

        register(op, *types)(unary_maker)
        return op
    if len(partials) == 2:
        spec = _BinarySpec()
        spec.op, spec.name = op, name
        spec.dx, spec.dy = partials
        if second is None:
            spec.dxx = spec.dxy = spec.dyy = None
        else:
            spec.dxx, spec.dxy, spec.dyy = second
        spec.linear = (not callable(spec.dx) and not callable(spec.dy)
                       and all(_is_zero_const(d) for d in (spec.dxx, spec.dxy, spec.dyy)))
        fns = (spec.dx, spec.dy, spec.dxx, spec.dxy, spec.dyy)
        reads = set().union(*(_reads(f, ("x", "y", "z")) for f in fns))
        save_x, save_y, save_z = "x" in reads, "y" in reads, "z" in reads

        dx_const = not callable(spec.dx) and spec.dxx == 0 and spec.dxy == 0
        dy_const = not callable(spec.dy) and spec.dyy == 0 and spec.dxy == 0

        def binary_maker(ids, x, y, **kwargs):
            z = op(x, y, **kwargs) if kwargs else op(x, y)
            xi, yi = ids
            # x + c, c - x, ...: one traced side with a constant partial and no
            # broadcasting is a plain (signed) identity
            if yi is None and dx_const and x.shape == z.shape:
                rule = ConstPartialRule(xi, spec.dx, spec.name)
            elif xi is None and dy_const and y.shape == z.shape:
                rule = ConstPartialRule(yi, spec.dy, spec.name)
            else:
                # traced values always have .shape; constants' shapes are not needed
                rule = BinaryScalarRule(
                    xi, yi, x if save_x else None, y if save_y else None,
                    z if save_z else None, None if xi is None else x.shape,
                    None if yi is None else y.shape, z.shape, spec)
            return z, _cast_mixed(xi, x, yi, y, z, rule)

        register(op, *types)(binary_maker)
        return op
    if len(partials) >= 3:
        from .derived_nary import NarySpec, nary_maker

        register(op, *types)(nary_maker(NarySpec(op, name, partials, second)))
        return op
    raise TypeError("scalar_rule takes one partial per argument")


class ConstPartialRule(ReverseRule):
    """z = f(x, c) whose partial in x is a constant (x + c, c - x): linear."""

    __slots__ = ("x_id", "d", "name")
    linear = True

    def __init__(self, x_id, d, name):
        self.x_id = x_id
        self.d = d
        self.name = name

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, _times(g, self.d))]

    def pushforward(self, tangents):
        return _times(tangents[0], self.d)

    cot_skippable = True

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        return [(self.x_id, ZERO if skip else _times(g, self.d), _times(gd, self.d))]


class ScaleRule(ReverseRule):
    """z = c * x for a constant real scalar c (elementwise bilinear ops)."""

    __slots__ = ("x_id", "c", "name")
    linear = True

    def __init__(self, x_id, c, name):
        self.x_id = x_id
        self.c = c
        self.name = name

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        return [(self.x_id, _scale(g, self.c))]

    def pushforward(self, tangents):
        t = tangents[0]
        return t if isinstance(t, Structural) else t * self.c

    cot_skippable = True

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        c = self.c
        return [(self.x_id, ZERO if skip or isinstance(g, Structural) else _scale(g, c),
                 gd if isinstance(gd, Structural) else _scale(gd, c))]


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

    def _twice(self, g):
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
            cd = _plus(cd, d + d)
        return [(self.x_id, c, cd)]


def _cast_mixed(xi, x, yi, y, z, rule):
    """``rule``, or ``rule`` wrapped so that traced inputs narrower than the
    output (float32 with a float64 array, real with complex) get cotangents
    of their own dtype from the rule itself."""
    zdt = z.dtype
    narrow = None
    if xi is not None:
        dt = x.dtype
        if dt is not zdt and dt != zdt:
            narrow = {xi: dt}
    if yi is not None:
        dt = y.dtype
        if dt is not zdt and dt != zdt:
            narrow = narrow or {}
            narrow[yi] = dt
    return rule if narrow is None else CastCotangents(rule, narrow, zdt)


# -- linear --------------------------------------------------------------------
class LinearRule(ReverseRule):
    """y = op(x, *static) linear in x; the pullback is ``transpose``."""

    __slots__ = ("x_id", "op", "transpose", "shape", "args", "kwargs")
    linear = True

    def __init__(self, x_id, op, transpose, shape, args, kwargs):
        self.x_id = x_id
        self.op = op
        self.transpose = transpose
        self.shape = shape
        self.args = args
        self.kwargs = kwargs

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


def linear_rule(op, transpose, types=()):
    """Register ``op(x, *static, **kw)``, linear in its first argument.

    ``transpose(g, x_shape, *static, **kw)`` returns the cotangent of ``x``.
    The other arguments must not be traced (they are static: axes, shapes).

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
        return y, LinearRule(ids[0], op, transpose, shape_of(x), args, kwargs)

    register(op, *types)(linear_maker)
    return op


# -- bilinear ------------------------------------------------------------------
class BilinearRule(ReverseRule):
    """z = op(x, y, *static), linear in each of x and y."""

    __slots__ = ("x_id", "y_id", "x", "y", "op", "tx", "ty", "xshape", "yshape",
                 "args", "kwargs")

    def __init__(self, x_id, y_id, x, y, op, tx, ty, xshape, yshape, args, kwargs):
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
        out = []
        if self.x_id is not None:
            out.append((self.x_id, self._gx(g, self.y)))
        if self.y_id is not None:
            out.append((self.y_id, self._gy(g, self.x)))
        return out

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
            t = _plus(t, self.op(self.x, yd, *self.args, **self.kwargs))
        return t

    #: the engine may pass ``skip``: inputs whose first-order cotangent is not
    #: wanted (leaves during ``hvp``), saving a contraction per such input
    cot_skippable = True

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        xd, yd = self._split(tangents)
        has_g = not isinstance(g, Structural)
        has_gd = not isinstance(gd, Structural)
        out = []
        if self.x_id is not None:
            c = self._gx(g, self.y) if has_g and self.x_id not in skip else ZERO
            cd = self._gx(gd, self.y) if has_gd else ZERO
            if has_g and not isinstance(yd, Structural):
                cd = _plus(cd, self._gx(g, yd))
            out.append((self.x_id, c, cd))
        if self.y_id is not None:
            c = self._gy(g, self.x) if has_g and self.y_id not in skip else ZERO
            cd = self._gy(gd, self.x) if has_gd else ZERO
            if has_g and not isinstance(xd, Structural):
                cd = _plus(cd, self._gy(g, xd))
            out.append((self.y_id, c, cd))
        return out


_SCALARS = (float, int, np.float64, np.float32)


def bilinear_rule(op, transpose_x, transpose_y, types=(), elementwise=False):
    """Register ``z = op(x, y, *static, **kw)``, bilinear in ``(x, y)``.

    ``transpose_x(g, y, x_shape, *static, **kw)`` is the cotangent of ``x``
    and ``transpose_y(g, x, y_shape, *static, **kw)`` that of ``y``. The
    pushforward and the second-order terms follow from bilinearity.
    ``elementwise=True`` (for ``multiply``) records ``x * c`` with a constant
    real scalar ``c`` as a cheaper scaling rule.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> outer = cr.primitive(lambda x, y: np.multiply.outer(x, y))
    >>> _ = cr.bilinear_rule(outer, lambda g, y, x_shape: g @ y,
    ...                      lambda g, x, y_shape: x @ g)
    >>> cr.grad(lambda x: np.sum(outer(x, np.array([1.0, 2.0]))))(np.ones(3))
    array([3., 3., 3.])
    """

    def bilinear_maker(ids, x, y, *args, **kwargs):
        z = op(x, y, *args, **kwargs)
        xi, yi = ids
        if elementwise and not args and not kwargs and (
                (yi is None and type(y) in _SCALARS) or (xi is None and type(x) in _SCALARS)):
            rule = ScaleRule(xi, y, op_name(op)) if yi is None else ScaleRule(yi, x, op_name(op))
        elif elementwise and xi is not None and xi == yi and x is y and not args and not kwargs:
            rule = SelfProductRule(xi, x, op_name(op))
        else:
            # x is needed only for the cotangent of y, and y only for that of x
            rule = BilinearRule(xi, yi, None if yi is None else x,
                                None if xi is None else y, op, transpose_x, transpose_y,
                                None if xi is None else x.shape,
                                None if yi is None else y.shape, args, kwargs)
        return z, _cast_mixed(xi, x, yi, y, z, rule)

    register(op, *types)(bilinear_maker)
    return op
