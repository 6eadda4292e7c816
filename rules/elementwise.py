"""Elementwise functions of one argument, one line each.

Each line gives ``f'`` and ``f''`` as functions of the input ``x`` and the
output ``y`` (whichever is cheaper); ``scalar_rule`` derives the pullback,
the pushforward and the HVP term. All of them are holomorphic, so complex
inputs need nothing more (the branch cuts are NumPy's principal ones and
the derivatives below are written to agree with them, e.g. ``arccosh``).
Constants are Python floats, so float32 stays float32. Behaviour at the
edge of a domain follows the policy in ``rules/arithmetic.py``: infinite
derivatives are ``inf``, never NaN.
"""

import math

import numpy as np

from chainrules.derived import scalar_rule
from chainrules.errors import MissingRuleError
from chainrules.registry import register
from chainrules.rule import ReverseRule
from chainrules.staging import plain_array
from chainrules.tangents import ZERO, Structural
from chainrules.tracing import is_traced, untraced

from .arithmetic import make_piecewise

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_PI = math.pi

scalar_rule(np.exp, lambda x, y: y, second=lambda x, y: y, second_ratio=1, saves="y")
scalar_rule(np.exp2, lambda x, y: _LN2 * y, second=lambda x, y: (_LN2 * _LN2) * y, saves="y")
scalar_rule(np.expm1, lambda x, y: y + 1, second=lambda x, y: y + 1, second_ratio=1, saves="y")
scalar_rule(np.log, lambda x, y: 1 / x, second=lambda x, y: -1 / (x * x),
            second_ratio=lambda x, y: -1 / x, saves="x")
scalar_rule(np.log2, lambda x, y: 1 / (_LN2 * x), second=lambda x, y: -1 / (_LN2 * x * x),
            saves="x")
scalar_rule(np.log10, lambda x, y: 1 / (_LN10 * x),
            second=lambda x, y: -1 / (_LN10 * x * x), saves="x")
scalar_rule(np.log1p, lambda x, y: 1 / (1 + x), second=lambda x, y: -1 / ((1 + x) * (1 + x)),
            saves="x")

scalar_rule(np.sin, lambda x, y: np.cos(x), second=lambda x, y: -y, saves="xy")
scalar_rule(np.cos, lambda x, y: -np.sin(x), second=lambda x, y: -y, saves="xy")
scalar_rule(np.tan, lambda x, y: 1 + y * y, second=lambda x, y: 2 * y * (1 + y * y),
            second_ratio=lambda x, y: 2 * y, saves="y")
scalar_rule(np.arcsin, lambda x, y: 1 / np.sqrt(1 - x * x),
            second=lambda x, y: x / np.sqrt(1 - x * x) ** 3, saves="x")
scalar_rule(np.arccos, lambda x, y: -1 / np.sqrt(1 - x * x),
            second=lambda x, y: -x / np.sqrt(1 - x * x) ** 3, saves="x")
scalar_rule(np.arctan, lambda x, y: 1 / (1 + x * x),
            second=lambda x, y: -2 * x / ((1 + x * x) * (1 + x * x)), saves="x")

scalar_rule(np.sinh, lambda x, y: np.cosh(x), second=lambda x, y: y, saves="xy")
scalar_rule(np.cosh, lambda x, y: np.sinh(x), second=lambda x, y: y, saves="xy")
scalar_rule(np.tanh, lambda x, y: 1 - y * y, second=lambda x, y: -2 * y * (1 - y * y),
            second_ratio=lambda x, y: -2 * y, saves="y")
scalar_rule(np.arcsinh, lambda x, y: 1 / np.sqrt(x * x + 1),
            second=lambda x, y: -x / np.sqrt(x * x + 1) ** 3, saves="x")
# 1/(sqrt(x-1) sqrt(x+1)), not 1/sqrt(x*x-1): the same for real x > 1, and the
# right branch of NumPy's principal arccosh for complex x
scalar_rule(np.arccosh, lambda x, y: 1 / (np.sqrt(x - 1) * np.sqrt(x + 1)),
            second=lambda x, y: -x / (np.sqrt(x - 1) * np.sqrt(x + 1)) ** 3, saves="x")
scalar_rule(np.arctanh, lambda x, y: 1 / (1 - x * x),
            second=lambda x, y: 2 * x / ((1 - x * x) * (1 - x * x)), saves="x")

_D2R = _PI / 180.0
_R2D = 180.0 / _PI
scalar_rule(np.deg2rad, _D2R, second=0)
scalar_rule(np.radians, _D2R, second=0)
scalar_rule(np.rad2deg, _R2D, second=0)
scalar_rule(np.degrees, _R2D, second=0)


# -- sinc ------------------------------------------------------------------------
# sinc(x) = sin(pi x) / (pi x). Away from 0: sinc' = (cos(pi x) - sinc) / x and
# sinc'' = -pi^2 sinc - 2 (cos(pi x) - sinc) / x^2; both cancel badly near 0,
# where the Taylor series in u = pi x is used instead (|u| < 0.1: the next
# terms are below 1e-16 relative).
_SINC_SMALL = 0.1 / _PI


def _sinc_d(x, y):
    small = np.abs(x) < _SINC_SMALL
    xs = np.where(small, 1, x)
    u = _PI * x
    u2 = u * u
    series = _PI * u * (-1 / 3 + u2 * (1 / 30 + u2 * (-1 / 840 + u2 / 45360)))
    return np.where(small, series, (np.cos(_PI * xs) - y) / xs)


def _sinc_d2(x, y):
    small = np.abs(x) < _SINC_SMALL
    xs = np.where(small, 1, x)
    u = _PI * x
    u2 = u * u
    series = (_PI * _PI) * (-1 / 3 + u2 * (1 / 10 + u2 * (-1 / 168 + u2 / 6480)))
    return np.where(small, series, -(_PI * _PI) * y - 2 * (np.cos(_PI * xs) - y) / (xs * xs))


scalar_rule(np.sinc, _sinc_d, second=_sinc_d2, saves="xy")


# -- nan_to_num ----------------------------------------------------------------------
class PartsMaskRule(ReverseRule):
    """``z = a * Re(x) + 1j * b * Im(x)`` with constant masks ``a``, ``b``:
    complex ``nan_to_num`` where the real and imaginary parts are replaced at
    different places (an R-linear, not C-linear, map). Under the pairing
    ``Re(sum(c * t))`` its transpose is ``c = a * Re(g) + 1j * b * Im(g)``."""

    __slots__ = ("x_id", "a", "b")
    linear = True
    name = "numpy.nan_to_num"

    def __init__(self, x_id, a, b):
        self.x_id = x_id
        self.a = a
        self.b = b

    def inputs(self):
        return (self.x_id,)

    def _apply(self, v):
        return self.a * np.real(v) + 1j * (self.b * np.imag(v))

    def pullback(self, g):
        if isinstance(g, Structural):
            return []
        return [(self.x_id, self._apply(g))]

    def pushforward(self, tangents):
        t = tangents[0]
        return t if isinstance(t, Structural) else self._apply(t)

    # batches of directions: the masks broadcast over the leading batch axis
    batched = True
    pullback_batched = pullback
    pushforward_batched = pushforward

    def pullback_with_tangents_batched(self, g, GD, tangents):
        c = ZERO if isinstance(g, Structural) else self._apply(g)
        cd = ZERO if isinstance(GD, Structural) else self._apply(GD)
        return [(self.x_id, c, cd)]


@register(np.nan_to_num)
def nan_to_num_maker(ids, x, *args, **kwargs):
    """Derivative 1 where ``x`` is finite, 0 where it was replaced (NaN,
    +-inf); for complex ``x`` per real and imaginary part."""
    if any(i is not None for i in ids[1:]) or any(
            is_traced(v) for v in kwargs.values()):
        raise MissingRuleError("np.nan_to_num is differentiated in x only; pass the "
                               "replacement values (nan=, posinf=, neginf=) as constants")
    # never in place on a traced primal
    if args:
        args = (True,) + tuple(args[1:])
    elif "copy" in kwargs:
        kwargs = dict(kwargs, copy=True)
    out = np.nan_to_num(x, *args, **kwargs)
    xv = untraced(x)
    if ids[0] is None:
        return out, None
    if getattr(xv, "dtype", np.dtype(float)).kind == "c":
        a, b = np.isfinite(np.real(xv)), np.isfinite(np.imag(xv))
        # (parts replaced at the same places, the usual case, take one mask;
        # a staged value's plan guards that decision)
        if not plain_array(a) or not np.array_equal(a, b):
            return out, PartsMaskRule(ids[0], a, b)
        w = a
    else:
        w = np.isfinite(xv)
    if not hasattr(w, "shape"):
        w = np.asarray(w)
    return out, make_piecewise(np.nan_to_num, ids[:1], (x,), out, (w,))
