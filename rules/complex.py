"""Complex parts and non-holomorphic functions: real, imag, conj, angle, abs.

Convention (JAX, see docs/guide/complex.md): a cotangent ``c`` pairs with a tangent
``t`` as ``Re(sum(c * t))``. For a holomorphic ``f`` the cotangent is
``g * f'(z)``; the functions here are not holomorphic and are written out:

=========== ==================== ===================================
function    tangent of output     cotangent of input (``g`` real)
=========== ==================== ===================================
``real``    ``Re(t)``             ``g``
``imag``    ``Im(t)``             ``-1j * g``
``conj``    ``conj(t)``           ``conj(g)``
``abs``     ``Re(conj(z) t)/|z|`` ``g * conj(z) / |z|``
``angle``   ``Im(t / z)``         ``-1j * g / z``
=========== ==================== ===================================

So ``grad(lambda z: abs(z)**2)(z) == 2 * conj(z)``. At ``z == 0`` ``abs``
and ``angle`` have no derivative; by the policy of ``rules/arithmetic.py``
their cotangents (and second-order terms) are 0 there, never NaN.

``np.absolute`` is registered here once for real and complex inputs: for
real ``x`` it is the piecewise-linear ``sign(x) * x`` (``abs'(0) == 0``).
"""

import numpy as np

from chainrules.derived import ConstPartialRule, linear_rule
from chainrules.registry import register
from chainrules.rule import ReverseRule
from chainrules.tangents import ZERO, Structural

from ._util import shape_of
from .arithmetic import PiecewiseLinearRule, make_piecewise, untraced_value


def _is_complex(v):
    dt = getattr(v, "dtype", None)
    return isinstance(v, complex) or (dt is not None and dt.kind == "c")


linear_rule(np.conjugate, lambda g, shape: np.conjugate(g))  # also np.conj, x.conj()


class ComplexPartRule(ReverseRule):
    """``np.real`` / ``np.imag``: linear over the reals. The cotangent has the
    input's kind: ``g + 0j`` / ``-1j * g`` for a complex input; for a real
    input ``real`` is the identity and ``imag`` is constant (zero)."""

    __slots__ = ("op", "x_id", "complex_in")
    linear = True

    def __init__(self, op, x_id, complex_in):
        self.op = op
        self.x_id = x_id
        self.complex_in = complex_in

    def inputs(self):
        return (self.x_id,)

    def pullback(self, g):
        if isinstance(g, Structural):
            return []
        if self.op is np.real:
            return [(self.x_id, g + 0j if self.complex_in else g)]
        return [(self.x_id, -1j * g if self.complex_in else ZERO)]

    def pushforward(self, tangents):
        t = tangents[0]
        if isinstance(t, Structural) or (self.op is np.imag and not self.complex_in):
            return ZERO
        return self.op(t)

    # elementwise: a batch of directions broadcasts through the same maps
    batched = True
    pullback_batched = pullback
    pushforward_batched = pushforward

    def pullback_with_tangents_batched(self, g, gd, tangents):
        return self.pullback_with_tangents(g, gd, tangents)


def _part_maker(op):
    def part_maker(ids, x):
        y = op(x)
        if ids[0] is None:
            return y, None
        return y, ComplexPartRule(op, ids[0], _is_complex(x))

    register(op)(part_maker)


_part_maker(np.real)  # also x.real
_part_maker(np.imag)  # also x.imag


class RealOfComplexRule(ReverseRule):
    """``y = f(z)`` real-valued of complex ``z``, from its gradient factor
    ``d(z)`` (cotangent ``g * d``, tangent ``Re(d * t)``) and the tangent of
    that factor ``dd(z, t)`` (for ``pullback_with_tangents``)."""

    __slots__ = ("op", "x_id", "z", "y", "scale")

    def __init__(self, op, x_id, z, y, scale=None):
        self.op = op
        self.x_id = x_id
        self.z = z
        self.y = y
        self.scale = scale

    def inputs(self):
        return (self.x_id,)

    def _scaled(self, v):
        return v if self.scale is None else self.scale * v

    # One input and one output, not linear: the engine calls the pullback
    # only with an array cotangent and the pushforward only with an array
    # tangent (structural zeros reach pullback_with_tangents alone).
    def pullback(self, g):
        return [(self.x_id, g * self._scaled(self.d()))]

    def pushforward(self, tangents):
        return self._scaled(np.real(self.d() * tangents[0]))

    def pullback_with_tangents(self, g, gd, tangents):
        t = tangents[0]
        d = self._scaled(self.d())
        c = ZERO if isinstance(g, Structural) else g * d
        cd = ZERO if isinstance(gd, Structural) else gd * d
        if not isinstance(g, Structural) and not isinstance(t, Structural):
            term = g * self._scaled(self.dd(t))
            cd = term if cd is ZERO else cd + term
        return [(self.x_id, c, cd)]

    # elementwise: a batch of directions broadcasts through d and dd
    batched = True
    pullback_batched = pullback
    pushforward_batched = pushforward
    pullback_with_tangents_batched = pullback_with_tangents


class AbsComplexRule(RealOfComplexRule):
    """``r = |z|``: ``d = conj(z) / r``; ``dd = (conj(t) - d Re(d t)) / r``."""

    __slots__ = ()

    def _r(self):
        r = self.y
        zero = r == 0
        return (np.where(zero, 1, r), zero) if np.any(zero) else (r, None)

    def d(self):
        r, _ = self._r()
        return np.conjugate(self.z) / r  # 0 where z == 0

    def dd(self, t):
        r, zero = self._r()
        d = np.conjugate(self.z) / r
        out = (np.conjugate(t) - d * np.real(d * t)) / r
        return out if zero is None else np.where(zero, 0, out)


class AngleRule(RealOfComplexRule):
    """``theta = angle(z) = Im(log z)``: ``d = -1j / z``; ``dd = 1j t / z**2``."""

    __slots__ = ()

    def _z(self):
        z = self.z
        zero = z == 0
        return (np.where(zero, 1, z), zero) if np.any(zero) else (z, None)

    def d(self):
        z, zero = self._z()
        out = -1j / z
        return out if zero is None else np.where(zero, 0, out)

    def dd(self, t):
        z, zero = self._z()
        out = 1j * t / (z * z)
        return out if zero is None else np.where(zero, 0, out)


_new = object.__new__
_f64 = np.float64
_ONE, _MINUS_ONE, _ZERO = np.float64(1.0), np.float64(-1.0), np.float64(0.0)


def _sign(x):
    """``np.sign(x)`` of a float64 scalar by comparisons: the same bits (+0.0
    for either zero, a NaN as it is), without the ufunc's call."""
    return _ONE if x > 0 else _MINUS_ONE if x < 0 else _ZERO if x == 0 else x


@register(np.absolute)  # also np.abs and abs(x)
def absolute_maker(ids, x, **kwargs):
    if type(x) is _f64 and not kwargs:
        # a float64 scalar: NumPy's scalar absolute value is the ufunc's, and
        # the shapes are ()
        y = abs(x)
        if ids[0] is None:
            return y, None
        # the cotangent g * sign(x), of shape (): the piecewise linear rule
        # below with one weight and nothing to sum, without its loop
        rule = _new(ConstPartialRule)
        rule.x_id = ids[0]
        rule.d = _sign(x)
        rule.name = "numpy.absolute"
        return y, rule
    y = np.absolute(x, **kwargs)
    if ids[0] is None:
        return y, None
    if _is_complex(x):
        return y, AbsComplexRule(np.absolute, ids[0], x, y)
    # real: sign(x) * x, with abs'(0) = sign(0) = 0; sign keeps x's dtype
    return y, PiecewiseLinearRule(np.absolute, (ids[0],), (np.sign(untraced_value(x)),),
                                  (shape_of(x),), shape_of(y))


@register(np.angle)
def angle_maker(ids, z, deg=False):
    y = np.angle(z, deg)
    if ids[0] is None:
        return y, None
    if _is_complex(z):
        return y, AngleRule(np.angle, ids[0], z, None, 180.0 / np.pi if deg else None)
    # real input: 0 or pi, locally constant
    return y, make_piecewise(np.angle, ids, (z,), y, (0,))
