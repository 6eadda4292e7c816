"""Arithmetic with broadcasting: add, subtract, multiply, divide, power, ...

Every binary rule broadcasts like NumPy and accepts a constant (Python
scalar or array) on either side. Smooth operations are one ``scalar_rule``
line each (partials and second partials); operations whose derivative is
piecewise constant (maximum, clip, where, mod, copysign, real ``abs``) are
``PiecewiseLinearRule`` rules: locally ``z = sum_i w_i * a_i`` with constant
weights ``w_i`` computed from the primal values, so the rule is linear and
all three sweeps follow from the weights.

Policy at non-differentiable points
-----------------------------------
One rule for all of them: a rule never returns NaN at a valid input.
Where the derivative does not exist we return a fixed element of the
subdifferential (the "one-sided" or "symmetric" choice below); where it is
infinite (a vertical tangent at the edge of the domain) we return ``inf``,
the one-sided limit, as NumPy, JAX and PyTorch do.

* ``abs``, ``fabs``, ``copysign`` in its first argument at 0: derivative 0
  (the ``sign`` convention, ``sign(0) == 0``); for complex ``abs`` at 0 the
  cotangent is 0 as well.
* ``maximum``/``minimum``/``fmax``/``fmin`` with ties (``x == y``): the
  cotangent is split equally, 0.5 to each argument. ``fmax``/``fmin`` give
  the whole cotangent to the non-NaN argument.
* ``clip(x, lo, hi)``: ``x`` gets derivative 1 on the closed interval
  ``lo <= x <= hi`` (bounds included), a bound gets the cotangent only
  where it is strictly active. With ``lo > hi`` NumPy returns ``hi`` and so
  does the derivative. A NaN in ``x`` keeps its cotangent on ``x``.
* ``where(c, x, y)``: cotangent to ``x`` where ``c``, to ``y`` elsewhere
  (never ``0 * inf``, since it is a selection, not a product).
* ``mod``/``remainder``/``fmod``: derivative 1 in ``x``, ``-q`` in ``y``
  with ``q = (x - z) / y`` the (floored, resp. truncated) integer quotient;
  at the jumps (``x/y`` an integer) the right-continuous branch NumPy picks.
* ``hypot`` and ``arctan2`` at the origin: all (first and second)
  derivatives 0.
* ``sqrt``, ``cbrt``, ``x ** p`` with ``0 < p < 1`` at 0, ``arcsin``/
  ``arccos`` at +-1, ``log`` at 0: ``inf`` (one-sided limit).
* ``x ** p`` for a constant ``p``: ``p == 0`` gives derivative 0 everywhere
  (also at ``x == 0``), ``p == 1`` gives 1; negative bases with an integer
  exponent are differentiated in the base as usual.
* ``x ** y`` in the exponent: ``z * log(x)`` for ``x > 0`` (any ``x != 0``
  when complex), 0 where ``x == 0``. A negative real base with a *traced*
  exponent has no derivative in the exponent (the real power is defined
  only at integer exponents there): the rule raises ``DomainError`` at the
  forward call; pass the exponent as a constant (``chainrules.stop_gradient``)
  or make the base complex.

float32 stays float32: every constant is a Python number (weak under
NEP 50) and every weight is cast to the output's real dtype.
"""

import cmath
import math

import numpy as np

from chainrules.arrays import computes_eagerly, is_array, real_dtype as _real_dtype

from chainrules.broadcast import expand_batched, unbroadcast_batched
from chainrules.derived import (CastCotangents, UnaryScalarRule, bilinear_rule,  # noqa: F401
                                narrower_inputs as _narrower_inputs, scalar_rule, unbroadcast)
from chainrules.derived_common import product, widened
from chainrules.derived_linear import BatchedBilinear
from chainrules.errors import DomainError, MissingRuleError, UntraceableError  # noqa: F401
from chainrules.registry import lookup, op_name, register
from chainrules.rule import ReverseRule
from chainrules.staging import Staged, is_staged, plain_array
from chainrules.tangents import ZERO, Structural
from chainrules.tracing import Traced, untraced

from ._util import shape_of

__all__ = ["DomainError", "PiecewiseLinearRule", "piecewise_rule", "real_dtype"]


# -- piecewise-linear operations ---------------------------------------------------
def real_dtype(v):
    """The real dtype matching the dtype of ``v`` (complex128 -> float64)."""
    return _real_dtype(v.dtype)


class PiecewiseLinearRule(ReverseRule):
    """``z = sum_i w_i * a_i`` with weights that are constant around the
    primal point (selections, sign flips, integer quotients).

    ``weights[i]`` is an array broadcastable to ``z`` (``None`` for 1). The
    rule is linear, so ``pullback_with_tangents`` comes for free and every
    second derivative is zero.
    """

    __slots__ = ("op", "ids", "weights", "shapes", "zshape")
    linear = True

    def __init__(self, op, ids, weights, shapes, zshape):
        self.op = op
        self.ids = ids
        self.weights = weights
        self.shapes = shapes
        self.zshape = zshape

    def inputs(self):
        return self.ids

    def pullback(self, g):
        if isinstance(g, Structural):
            return []
        return [(nid, unbroadcast(g if w is None else g * w, s))
                for nid, w, s in zip(self.ids, self.weights, self.shapes)]

    def pushforward(self, tangents):
        t = ZERO
        for w, ti in zip(self.weights, tangents):
            if isinstance(ti, Structural):
                continue
            term = ti if w is None else ti * w
            t = term if t is ZERO else t + term
        if t is not ZERO and shape_of(t) != self.zshape:
            t = np.broadcast_to(t, self.zshape)
        return t

    # batches: the weights broadcast over the batch axis; an input with fewer
    # axes than the output gets ones after the batch axis
    batched = True

    def pullback_batched(self, g):
        if isinstance(g, Structural):
            return []
        return [(nid, unbroadcast_batched(g if w is None else g * w, s))
                for nid, w, s in zip(self.ids, self.weights, self.shapes)]

    def pushforward_batched(self, tangents):
        t = ZERO
        n = len(self.zshape)
        for w, ti, s in zip(self.weights, tangents, self.shapes):
            if isinstance(ti, Structural):
                continue
            ti = expand_batched(ti, s, n)
            term = ti if w is None else ti * w
            t = term if t is ZERO else t + term
        if t is not ZERO and shape_of(t)[1:] != tuple(self.zshape):
            t = np.broadcast_to(t, shape_of(t)[:1] + tuple(self.zshape))
        return t

    def pullback_with_tangents_batched(self, g, gd, tangents):
        # linear: no second-order term; the cotangent (shared) and its
        # batched tangent are two pullbacks, paired by input
        cots = self.pullback(g)
        dots = self.pullback_batched(gd)
        if cots and dots:  # both one pair per input, in the inputs' order
            return [(nid, c, d) for (nid, c), (_, d) in zip(cots, dots)]
        return [(nid, c, ZERO) for nid, c in cots] + [(nid, ZERO, d) for nid, d in dots]


def untraced_value(v):
    """``v`` with every level of tracing removed: ``chainrules.tracing.untraced``
    for one array or scalar, without its pytree walk (lists, tuples, dicts and
    dataclasses are returned as they are), so a plain value costs one type
    check on the hot path of the piecewise-linear rules."""
    while type(v) is Traced:
        v = v.value
    return v


def make_piecewise(op, ids, args, z, weight_fns):
    """Build a ``PiecewiseLinearRule`` for ``z = op(*args)``.

    ``weight_fns[i]`` is ``None`` (weight 1), ``0`` (no dependence), a
    weight array, or a function of the plain (untraced) ``(*args, z)``
    returning the weight. Weights are computed only for traced arguments.
    """
    plain = None
    rids, ws, shapes = [], [], []
    for i, nid in enumerate(ids):
        if nid is None:
            continue
        if type(nid) is tuple:
            raise MissingRuleError(
                f"{op_name(op)}: argument {i} is a list or tuple containing traced "
                "values; pass one array instead (np.stack(...) or np.asarray of "
                "constants)")
        fn = weight_fns[i]
        if type(fn) is int and fn == 0:
            continue
        if callable(fn):
            if plain is None:
                plain = [untraced_value(a) for a in args]
                plain.append(untraced_value(z))
            fn = fn(*plain)
        rids.append(nid)
        ws.append(fn)
        shapes.append(shape_of(args[i]))
    return PiecewiseLinearRule(op, tuple(rids), tuple(ws), tuple(shapes), shape_of(z))


def piecewise_rule(op, *weight_fns):
    """Register ``op(*args)`` whose derivative in argument ``i`` is the
    piecewise-constant ``weight_fns[i](*plain_args, z)`` (see
    ``make_piecewise``)."""

    def piecewise_maker(ids, *args, **kwargs):
        z = op(*args, **kwargs)
        return z, make_piecewise(op, ids, args, z, weight_fns)

    if len(weight_fns) == 2 and all(callable(f) for f in weight_fns):
        wx, wy = weight_fns

        def piecewise_binary_maker(ids, x, y, **kwargs):
            # the hot path (np.maximum(x, 0) is ReLU): no lists, no loops
            xi, yi = ids
            if kwargs or type(xi) is tuple or type(yi) is tuple:
                return piecewise_maker(ids, x, y, **kwargs)
            z = op(x, y)
            xv, yv, zv = untraced_value(x), untraced_value(y), untraced_value(z)
            if yi is None:
                return z, PiecewiseLinearRule(op, (xi,), (wx(xv, yv, zv),), (x.shape,),
                                              shape_of(z))
            if xi is None:
                return z, PiecewiseLinearRule(op, (yi,), (wy(xv, yv, zv),), (y.shape,),
                                              shape_of(z))
            return z, PiecewiseLinearRule(op, (xi, yi), (wx(xv, yv, zv), wy(xv, yv, zv)),
                                          (x.shape, y.shape), shape_of(z))

        register(op)(piecewise_binary_maker)
    else:
        register(op)(piecewise_maker)
    return op


def _mask(cond, z):
    """A boolean mask as a weight array of ``z``'s real dtype (of the mask's
    own array type: a dask mask stays lazy)."""
    if not hasattr(cond, "astype"):
        cond = np.asarray(cond)
    return cond.astype(real_dtype(z))


def _tie_split(win, tie, z):
    """The weight of an argument of maximum/minimum: 1 where it wins (``win``),
    0.5 on a ``tie``, else 0. Without ties (the usual case) the boolean
    mask itself is the weight: ``g * mask`` keeps ``g``'s dtype. (Decided
    on the data for an ndarray and a staged value of one, whose plan guards
    the decision; ties of a lazy array or of scalars take the weights.)"""
    if plain_array(tie) and not tie.any():
        return win
    # (the casts are explicit: np.add(bool, bool, dtype=float) is a logical
    # OR on some array libraries, not a sum)
    dt = real_dtype(z)
    return (_mask(win, z) + _mask(win | tie, z)) * dt.type(0.5)


# add and subtract: constant partials, so no multiplication and no saved values
scalar_rule(np.add, 1, 1, second=(0, 0, 0))
scalar_rule(np.subtract, 1, -1, second=(0, 0, 0))
scalar_rule(np.negative, -1, second=0)
scalar_rule(np.positive, 1, second=0)


def _multiply_tx(g, y, xshape):
    if xshape == ():
        if type(g) is _f64 and type(y) is _f64:  # float64 scalars: the product below
            return g * y
        if _same_plain(g, y):
            return _sum_of_products(g, y)
    c = product(g, y) if type(g) is np.ndarray and not g.ndim else g * y
    tc = type(c)
    if (tc is np.ndarray or tc is np.float64) and c.shape == xshape:
        return c  # nothing to unbroadcast (the common case, without the call)
    return unbroadcast(c, xshape)


def _multiply_ty(g, x, yshape):
    if yshape == ():
        if type(g) is _f64 and type(x) is _f64:  # float64 scalars: the product below
            return g * x
        if _same_plain(g, x):
            return _sum_of_products(g, x)
    c = product(g, x) if type(g) is np.ndarray and not g.ndim else g * x
    tc = type(c)
    if (tc is np.ndarray or tc is np.float64) and c.shape == yshape:
        return c
    return unbroadcast(c, yshape)


def _same_plain(g, y):
    """g and y are NumPy arrays (or staged values of them: cr.jit's plan
    then sums as eager code does) of one shape, not 0-d, and dtype, float64
    or complex128, and g is not a broadcast scalar (a sum's cotangent:
    raveling it would materialise it; ``g * y`` reads it as it is). (0-d
    factors multiply: a sum starts from +0.0, and ``0.0 + -0.0`` would lose
    the product's sign.)"""
    return (plain_array(g) and plain_array(y) and g.shape == y.shape and g.ndim != 0
            and g.dtype == y.dtype and (g.dtype == np.float64 or g.dtype == np.complex128)
            and 0 not in _strides(g))


def _strides(v):
    """An ndarray's strides, or those of a staged value's array (a
    cotangent's zero strides come from a broadcast: shapes decide them)."""
    return v.value.strides if is_staged(v) else v.strides


def _sum_of_products(g, y):
    """``np.sum(g * y)`` for the cotangent of a scalar factor, in one pass and
    without the product's temporary (einsum's own loop, not BLAS: a dot
    product would wake NumPy's BLAS threads between the rule library's SciPy
    calls). Double precision only: the sum is not pairwise."""
    return np.einsum("i,i->", np.ravel(g), np.ravel(y))


def _batched_side(v, shape, batched, ndim):
    return expand_batched(v, shape, ndim) if batched else v


def _multiply_tx_batched(g, y, xshape, yshape, g_batched, y_batched):
    """The cotangent of x in ``x * y`` for a batch: ``g`` (of the output's
    shape) or ``y`` with a leading batch axis."""
    n = max(len(xshape), len(yshape))
    return unbroadcast_batched(g * _batched_side(y, yshape, y_batched, n), xshape)


def _multiply_ty_batched(g, x, xshape, yshape, g_batched, x_batched):
    n = max(len(xshape), len(yshape))
    return unbroadcast_batched(g * _batched_side(x, xshape, x_batched, n), yshape)


def _multiply_batched(x, y, xshape, yshape, x_batched, y_batched):
    n = max(len(xshape), len(yshape))
    return (_batched_side(x, xshape, x_batched, n)
            * _batched_side(y, yshape, y_batched, n))


bilinear_rule(np.multiply, _multiply_tx, _multiply_ty, elementwise=True,
              batched=BatchedBilinear(_multiply_tx_batched, _multiply_ty_batched,
                                      _multiply_batched))

scalar_rule(
    np.true_divide,  # also np.divide and the / operator
    lambda x, y, z: 1 / y,
    lambda x, y, z: -z / y,
    second=(0, lambda x, y, z: -1 / y**2, lambda x, y, z: 2 * z / y**2),
    saves="yz",
)
scalar_rule(np.reciprocal, lambda x, y: -(y * y), second=lambda x, y: 2 * y * y * y, saves="y")
scalar_rule(np.square, lambda x, y: 2 * x, second=2, saves="x")
scalar_rule(np.sqrt, lambda x, y: 0.5 / y, second=lambda x, y: -0.25 / (y * x), saves="xy")
scalar_rule(np.cbrt, lambda x, y: 1 / (3 * (y * y)),
            second=lambda x, y: -2 / (9 * (y * y) * (y * y) * y), saves="y")


# -- power ---------------------------------------------------------------------------
def _is_complex(v):
    if isinstance(v, complex):
        return True
    dt = getattr(v, "dtype", None)
    return dt is not None and dt.kind == "c"


def _log_base(x):
    """``(mask, safe base, log of the base)``: the exponent is differentiated
    where ``x > 0`` (real) or ``x != 0`` (complex), and has derivative 0
    elsewhere. Python scalars stay Python scalars (weak under NEP 50, so a
    float32 exponent keeps float32)."""
    if type(x) is complex:
        return (True, x, cmath.log(x)) if x != 0 else (False, 1, 0)
    if type(x) in (int, float):
        return (True, x, math.log(x)) if x > 0 else (False, 1, 0)
    m = (x != 0) if _is_complex(x) else (x > 0)
    xs = np.where(m, x, 1)
    return m, xs, np.log(xs)


def _masked_power(pw, c, x, e):
    """``c * x**e`` with the convention ``0 * x**e == 0`` where ``c == 0``
    (so ``x**0`` and ``x**1`` have finite derivatives at ``x == 0``).
    The base is replaced by 1 where ``c == 0`` so that no branch of the
    where is infinite (safe for nested differentiation too)."""
    m = c == 0
    if _nowhere(m):
        return c * pw(x, e)
    return np.where(m, 0, c * pw(np.where(m, 1, x), e))


def _nowhere(m):
    """Whether the mask ``m`` is false everywhere, decided on the data where
    it is at hand (a bool, a NumPy value, a staged value: the plan guards
    the decision); a lazy mask (dask) is taken to be true somewhere."""
    if isinstance(m, (bool, np.bool_)):
        return not m
    return computes_eagerly(m) and not m.any()


def _power_partials(pw):
    def dx(x, y, z):
        return _masked_power(pw, y, x, y - 1)

    def dy(x, y, z):
        m, _, lx = _log_base(x)
        return np.where(m, z * lx, 0)

    def dxx(x, y, z):
        return _masked_power(pw, y * (y - 1), x, y - 2)

    def dxy(x, y, z):
        m, xs, lx = _log_base(x)
        return np.where(m, pw(xs, y - 1) * (1 + y * lx), 0)

    def dyy(x, y, z):
        m, _, lx = _log_base(x)
        return np.where(m, z * (lx * lx), 0)

    return dx, dy, (dxx, dxy, dyy)


class _PowerSpec:
    """Partials of ``x ** p`` for a constant scalar ``p`` (for
    ``UnaryScalarRule``)."""

    __slots__ = ("d", "d2", "ratio", "name", "const", "linear", "dk", "dfn")

    def __init__(self, p, name):
        self.name = name
        self.const = self.linear = p in (0, 1)
        # no second_ratio: (p - 1) / x is infinite at 0, where f' is 0
        self.dk = self.dfn = self.ratio = None
        if p == 0:
            self.d, self.d2 = 0, 0
        elif p == 1:
            self.d, self.d2 = 1, 0
        elif p == 2:
            self.d, self.d2 = (lambda x, y: 2 * x), 2
            # factored as 2 * x (see UnaryScalarRule._factored); scaling by 2
            # is exact, so g * (2 * x) and x * (2 * g) round alike
            self.dk, self.dfn = 2, (lambda x, y: x)
        else:
            self.d = lambda x, y: p * x ** (p - 1)
            self.d2 = lambda x, y: (p * (p - 1)) * x ** (p - 2)


_SCALAR_EXPONENTS = (int, float, np.int64, np.float64, np.float32, np.int32)
_f64 = np.float64
_power_specs = {}


def _check_base(op, x):
    xv = untraced(x)
    if not is_array(xv) or computes_eagerly(xv):
        # (a staged value too: the plan guards the answer, and the call
        # with a negative base raises as eager code does)
        negative = not _is_complex(xv) and np.any(np.less(xv, 0))
    else:
        # a lazy base: checking it would compute it; the derivative in the
        # exponent of a negative base comes out NaN there (log of a negative)
        negative = False
    if negative:
        raise DomainError(
            f"{op_name(op)}(x, y) with a traced exponent y and a negative real base "
            f"x (types {type(xv).__name__}): the power is not differentiable in the "
            "exponent there (it is real only at integer exponents). Pass the exponent "
            "as a constant (chainrules.stop_gradient(y)) if you need the derivative "
            "in the base only, or use a complex base (x.astype(complex)).")


def _register_power(op, fast_path):
    dx, dy, second = _power_partials(op)
    scalar_rule(op, dx, dy, second=second, saves="xyz")
    general = lookup(op, (np.ndarray, np.ndarray))
    name = op_name(op)

    def power_maker(ids, x, y, **kwargs):
        if ids[1] is None:
            ty = type(y)
            if ty is Staged and type(y.value) in _SCALAR_EXPONENTS:
                # a constant exponent computed from the inputs (a NumPy
                # scalar eagerly): its value, guarded, so that the recording
                # takes eager code's scalar-exponent path, not the general one
                y = type(y.value)(y.item())
                ty = type(y)
            if fast_path and not kwargs and ty in _SCALAR_EXPONENTS:
                tx = type(x)
                if y == 2 and (ty is int or ty is float) and (tx is _f64 or x.dtype.kind == "f"):
                    # as NumPy's own x ** 2, and 2x faster than pow (a float64
                    # scalar's square by scalar arithmetic: the same product)
                    z = x * x if tx is _f64 else np.square(x)
                else:
                    z = op(x, y)
                    if ty is np.float32 and z.dtype != y.dtype:
                        y = widened(y, z.dtype)  # p - 1 in float64 beside float64
                key = (type(y), y)
                spec = _power_specs.get(key)
                if spec is None:
                    if len(_power_specs) > 256:  # exponents that vary call by call
                        _power_specs.clear()
                    spec = _power_specs[key] = _PowerSpec(y, name)
                rule = UnaryScalarRule(ids[0], x if callable(spec.d) else None, None, spec)
                if type(z) is _f64 and tx is _f64 or z.dtype == x.dtype:
                    return z, rule
                return z, CastCotangents(rule, {ids[0]: x.dtype}, z.dtype)
        else:
            _check_base(op, x)
        z, rule = general(ids, x, y, **kwargs)
        narrow = _narrower_inputs(ids, (x, y), z)
        return z, (CastCotangents(rule, narrow, z.dtype) if narrow else rule)

    register(op)(power_maker)


_register_power(np.power, True)
_register_power(np.float_power, False)


# -- smooth binary functions -------------------------------------------------------
def _nonzero(r):
    """``r`` with zeros replaced by 1 (for denominators that vanish only
    where their numerators do)."""
    return np.where(r == 0, 1, r)


scalar_rule(np.hypot, lambda x, y, z: x / _nonzero(z), lambda x, y, z: y / _nonzero(z),
            second=(lambda x, y, z: y * y / _nonzero(z) ** 3,
                    lambda x, y, z: -(x * y) / _nonzero(z) ** 3,
                    lambda x, y, z: x * x / _nonzero(z) ** 3), saves="xyz")


def _r2(x, y):
    return _nonzero(x * x + y * y)


# arctan2(x1, x2) = atan(x1 / x2): here x is x1 (the "y" coordinate)
scalar_rule(np.arctan2, lambda x, y, z: y / _r2(x, y), lambda x, y, z: -x / _r2(x, y),
            second=(lambda x, y, z: -2 * x * y / _r2(x, y) ** 2,
                    lambda x, y, z: (x * x - y * y) / _r2(x, y) ** 2,
                    lambda x, y, z: 2 * x * y / _r2(x, y) ** 2), saves="xy")
scalar_rule(np.logaddexp, lambda x, y, z: np.exp(x - z), lambda x, y, z: np.exp(y - z),
            second=(lambda x, y, z: np.exp(x - z) * np.exp(y - z),
                    lambda x, y, z: -(np.exp(x - z) * np.exp(y - z)),
                    lambda x, y, z: np.exp(x - z) * np.exp(y - z)), saves="xyz")
_LN2 = 0.6931471805599453
scalar_rule(np.logaddexp2, lambda x, y, z: np.exp2(x - z), lambda x, y, z: np.exp2(y - z),
            second=(lambda x, y, z: _LN2 * np.exp2(x - z) * np.exp2(y - z),
                    lambda x, y, z: -_LN2 * np.exp2(x - z) * np.exp2(y - z),
                    lambda x, y, z: _LN2 * np.exp2(x - z) * np.exp2(y - z)), saves="xyz")


# -- piecewise-linear binary functions -------------------------------------------
piecewise_rule(np.maximum, lambda x, y, z: _tie_split(x > y, x == y, z),
               lambda x, y, z: _tie_split(y > x, x == y, z))
piecewise_rule(np.minimum, lambda x, y, z: _tie_split(x < y, x == y, z),
               lambda x, y, z: _tie_split(y < x, x == y, z))


def _fwin(a, b, better):
    """``a`` wins in fmax/fmin: better than ``b``, or ``b`` is NaN and ``a``
    is not."""
    return better(a, b) | (np.isnan(b) & ~np.isnan(a))


def _fsplit(better):
    def weight_a(a, b, z):
        return _tie_split(_fwin(a, b, better), a == b, z)

    def weight_b(a, b, z):
        return _tie_split(_fwin(b, a, better), a == b, z)

    return weight_a, weight_b


piecewise_rule(np.fmax, *_fsplit(np.greater))
piecewise_rule(np.fmin, *_fsplit(np.less))


def _quotient_weight(x, y, z):
    # z = x - q * y with q an integer, exactly the one NumPy used
    with np.errstate(divide="ignore", invalid="ignore"):
        return _mask(-np.round((x - z) / y), z)


piecewise_rule(np.remainder, None, _quotient_weight)  # also np.mod and %
piecewise_rule(np.fmod, None, _quotient_weight)
piecewise_rule(np.copysign, lambda x, y, z: _mask(np.sign(x) * np.copysign(1, y), z), 0)
piecewise_rule(np.fabs, lambda x, z: _mask(np.sign(x), z))


@register(np.where)
def where_maker(ids, cond, *xy, **kwargs):
    """``np.where(c, x, y)``: a selection; the one-argument form is
    ``nonzero`` (indices, no derivative)."""
    out = np.where(cond, *xy, **kwargs)
    if len(xy) != 2:
        return out, None

    c = untraced(cond)
    c = c.astype(bool) if hasattr(c, "astype") else np.asarray(c, dtype=bool)
    return out, make_piecewise(np.where, ids, (cond,) + xy, out,
                               (0, c, ~c if ids[2] is not None else 0))


def _as_mask(m):
    """A boolean mask as an array of its own type (Python bools as 0-d)."""
    return m if hasattr(m, "shape") else np.asarray(m)


def _absent(v):
    return v is None or v is np._NoValue


@register(np.clip)
def clip_maker(ids, a, *bounds, **kwargs):
    """``np.clip(a, lo, hi)``: bounds positional or as ``min=``/``max=``
    (``a_min=``/``a_max=``), scalars or arrays, traced or constant."""
    if kwargs.get("out") is not None:
        raise UntraceableError("np.clip(..., out=...) on a traced value would drop its "
                               "derivative; assign the result instead (y = np.clip(x, lo, hi))")
    out = np.clip(a, *bounds, **kwargs)
    lo = bounds[0] if len(bounds) > 0 else kwargs.get("min", kwargs.get("a_min"))
    hi = bounds[1] if len(bounds) > 1 else kwargs.get("max", kwargs.get("a_max"))
    has_lo, has_hi = not _absent(lo), not _absent(hi)
    xv, lov, hiv = untraced(a), untraced(lo), untraced(hi)
    # out = minimum(maximum(x, lo), hi), x kept on the closed interval; NaN stays in x
    keep_lo = ~(xv < lov) if has_lo else True
    m = np.where(keep_lo, xv, lov) if has_lo else xv
    keep_hi = ~(m > hiv) if has_hi else True
    weights = (_as_mask(keep_lo & keep_hi),
               _as_mask(~keep_lo & keep_hi) if has_lo else 0,
               _as_mask(~keep_hi) if has_hi else 0)
    return out, make_piecewise(np.clip, ids, (a,) + bounds, out, weights[:len(ids)])


# -- mixed dtypes ----------------------------------------------------------------------
def _project_mixed(op):
    """Wrap ``op``'s registered maker: when a traced input's dtype differs
    from the output's (float32 * float64 array, a real array times a complex
    one), the rule's cotangents are cast back to that input's dtype (real
    part for a real input), so every rule returns cotangents of its
    primals' kind itself."""
    inner = lookup(op, (np.ndarray, np.ndarray))

    def mixed_maker(ids, *args, **kwargs):
        z, rule = inner(ids, *args, **kwargs)
        if rule is None:
            return z, rule
        zdt = z.dtype
        for nid, a in zip(ids, args):
            if nid is not None and type(nid) is not tuple and a.dtype != zdt:
                return z, CastCotangents(rule, _narrower_inputs(ids, args, z), zdt)
        return z, rule

    register(op)(mixed_maker)


# (the scalar_rule / bilinear_rule ops get the same casting from chainrules.derived)
for _op in (np.maximum, np.minimum, np.fmax, np.fmin, np.remainder, np.fmod, np.copysign,
            np.where, np.clip):
    _project_mixed(_op)
del _op
