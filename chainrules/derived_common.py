"""Helpers of the derived rules (``derived.py``, ``derived_linear.py``):
which saved values a partial reads, products with constant or callable
partials, sums of possibly structural tangents, and the cotangent casts of
inputs narrower than the output."""

import inspect
import operator
from typing import Any

import numpy as np

from .arrays import shape_of, uniform_array, uniform_value
from .broadcast import CastCotangents
from .errors import RuleError
from .registry import user_maker
from .staging import plain_array
from .rule import ReverseRule
from .tangents import ZERO, Structural

_ndarray = np.ndarray


def broadcast_tangent(t, shape):
    if t.shape != shape:
        return np.broadcast_to(t, shape)
    return t


def saved_values(name, roles, partials, saves):
    """The values (named by their place, ``roles``: ``("x", "y")`` for a
    unary rule, ``("x", "y", "z")`` for a binary one) that a rule keeps for
    its partials: the declared ``saves`` (a string of role letters or a
    collection of role names), or, undeclared, every value when any partial
    is a function and none when all are constants. Each function partial
    must accept one positional argument per role; checked here, at
    registration, so a wrong arity fails at once instead of at the first
    derivative."""
    fns = [f for f in partials if callable(f)]
    n = len(roles)
    for f in fns:
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):  # builtins without a signature
            continue
        try:
            sig.bind(*range(n))
        except TypeError:
            raise TypeError(
                f"scalar_rule({name}): the partial {getattr(f, '__name__', f)!r} must take "
                f"{n} positional arguments ({', '.join(roles)}), the "
                + ("input and the output" if n == 2 else "two inputs and the output")
            ) from None
    if saves is None:
        return frozenset(roles) if fns else frozenset()
    names = frozenset(saves)
    if not names <= frozenset(roles):
        raise TypeError(
            f"scalar_rule({name}): saves={saves!r} names {sorted(names - set(roles))}; the "
            f"values a partial can read are {', '.join(roles)} (by their place, whatever the "
            "partials call their parameters)")
    return names


class NotKept:
    """Stands in a derived rule for a value it does not keep (one its
    ``saves=`` leaves out): any use of it raises ``RuleError`` naming the
    rule and the value, so an incomplete declaration fails loudly at the
    first derivative instead of as an arithmetic error on ``None``."""

    __slots__ = ("rule", "role")

    def __init__(self, rule, role):
        self.rule = rule
        self.role = role

    def refuse(self, *args, **kwargs):
        raise RuleError(
            f"the rule of {self.rule} read its value {self.role!r}, which its scalar_rule "
            f"does not keep: add {self.role!r} to its saves= (or leave saves= out to keep "
            "every value)")

    __array_ufunc__ = __array_function__ = __array__ = refuse
    __getattr__ = __getitem__ = __iter__ = __len__ = __bool__ = refuse
    __float__ = __int__ = __complex__ = __index__ = refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = refuse
    __neg__ = __pos__ = __abs__ = __invert__ = refuse
    __hash__ = None


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
            "or", "xor", "lshift", "rshift", "divmod"):
    setattr(NotKept, f"__{_op}__", NotKept.refuse)
    setattr(NotKept, f"__r{_op}__", NotKept.refuse)
del _op


#: Python numbers (NumPy computes with them in the other operand's dtype)
#: and the NumPy scalar type each stands for alone
PYTHON_NUMBERS = {bool: np.float64, int: np.float64, float: np.float64,
                  complex: np.complex128}


#: the Python operators of NumPy's elementwise arithmetic: on two float64
#: scalars (or one and a Python number, ``f64_operands``) NumPy's scalar
#: arithmetic computes the same IEEE operation as the ufunc, and its result
#: is of the same type, without the ufunc's dispatch
SCALAR_OPERATORS: dict[Any, Any] = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv}
#: the same for one argument (a float64 scalar)
UNARY_SCALAR_OPERATORS = {np.negative: operator.neg, np.square: lambda v: v * v}
_f64 = np.float64
#: the largest magnitude of integers exactly representable in float64
_EXACT_INT = 2 ** 53


def f64_operands(x, tx, y, ty):
    """Whether ``x`` and ``y`` (of types ``tx``, ``ty``) are a NumPy float64
    scalar and another one, a Python float or an int that float64 holds
    exactly: operands that ``SCALAR_OPERATORS`` compute as the ufuncs do."""
    if tx is _f64:
        return ty is _f64 or ty is float or (ty is int and -_EXACT_INT <= y <= _EXACT_INT)
    return ty is _f64 and (tx is float or (tx is int and -_EXACT_INT <= x <= _EXACT_INT))


_F64 = np.dtype(np.float64)


def product(g, d):
    """``g * d`` for an ndarray ``g``: a 0-d float64 ``g`` times a float64
    scalar or Python number by NumPy's scalar arithmetic (the ufunc's
    product, a float64 scalar as the ufunc's result is, without its
    dispatch)."""
    td = type(d)
    if (td is _f64 or td is float or (td is int and -_EXACT_INT <= d <= _EXACT_INT)) and (
            g.dtype is _F64 and not g.shape):
        return g[()] * d
    return g * d


def call_partial(d, *args):
    """The partial ``d`` (a function of the values, or a constant) at
    ``args``. A partial written with Python arithmetic raises on a Python
    number at a pole (``1 / y`` at ``y = 0.0``) or past the range of floats
    (``y ** 2`` at ``1e200``), where NumPy, the forward pass and the fused
    programs give an infinity or NaN under the caller's ``np.errstate``:
    there it is computed again with those numbers as NumPy scalars."""
    if not callable(d):
        return d
    try:
        return d(*args)
    except (ZeroDivisionError, OverflowError):
        if not any(type(a) in PYTHON_NUMBERS for a in args):
            raise
    return d(*(PYTHON_NUMBERS[type(a)](a) if type(a) in PYTHON_NUMBERS else a
               for a in args))


def is_zero_const(d):
    """A second partial given as the constant 0 (``None``, unknown, is not)."""
    return d is not None and not callable(d) and np.all(np.equal(d, 0))


def times(g, d):
    """``g * d`` where ``d`` may be a constant partial (1, -1, 0). A uniform
    ``g`` (zero strides: the cotangent of a sum) times a constant stays
    uniform, at no cost. Only the int 0 (a rule's structural partial) gives
    the structural zero: a float zero is a user's factor, and ``g * -0.0``
    keeps its sign (and ``inf * 0.0`` its NaN), as NumPy's product does."""
    if type(g) is not _ndarray and isinstance(g, Structural):
        return ZERO
    td = type(d)
    if td is int or td is float:
        if d == 1:
            return g
        if d == 0 and td is int:
            return ZERO
        return scale(g, d)
    if td is np.float64 or td is np.float32:
        return scale(g, d)
    if type(g) is not np.ndarray:
        # a lazy uniform cotangent (``lazy_uniform``): scale d by its scalar
        # instead of reading a materialised broadcast
        u = uniform_value(g)
        if u is not None and shape_of(d) == g.shape:
            return d * u
    return g * d


def scale(g, c):
    """``g * c`` for a scalar ``c``; a uniform ``g`` stays uniform."""
    tg = type(g)
    if tg is _ndarray:  # uniform_value of an ndarray, without the call
        if g.ndim and not any(g.strides) and g.size:
            return uniform_array(g.flat[0] * c, g.shape, g)
        return g * c if g.ndim else product(g, c)
    if tg is np.float64:
        return g * c
    u = uniform_value(g)
    if u is not None:
        return uniform_array(u * c, g.shape, g)
    return g * c


def plus_second(cd, g, d2, t):
    """``plus(cd, times(times(g, d2), t))``: a pullback with tangents adds
    the second-order term ``g * d2 * t`` (``d2`` a second partial, an array
    or a constant) to the tangent of its cotangent, bit for bit as that
    expression computes it. For ndarrays the term is made in one fresh array
    of this function's making, scaled and summed in place: one allocation
    instead of three (IEEE products and sums commute, so the bits are the
    same). Arrays passed in are never written to."""
    if type(g) is not _ndarray or type(t) is not _ndarray:
        return plus(cd, times(times(g, d2), t))
    td = type(d2)
    p = None
    if td is int or td is float or td is np.float64 or td is np.float32:
        if d2 == 0:
            return cd
        if d2 == 1:
            p = g * t
        else:
            u = uniform_value(g)
            if u is not None and g.shape == t.shape:
                p = t * (u * d2)  # (u d2) t: the uniform g scaled as a scalar
    if p is None:
        p = g * d2
        if type(p) is _ndarray and p.shape == t.shape and (t.dtype is p.dtype
                                                           or t.dtype == p.dtype):
            np.multiply(p, t, out=p)
        else:
            p = p * t
    # p is a new array here (or a NumPy scalar)
    if isinstance(cd, Structural):
        return p
    if type(p) is _ndarray and type(cd) is _ndarray and p.shape == cd.shape and (
            p.dtype is cd.dtype or p.dtype == cd.dtype):
        np.add(p, cd, out=p)
        return p
    return cd + p


def first_times_sum(d, gd, g, r, xd):
    """``d * (gd + g * r * xd)``: the tangent of a unary rule's cotangent when
    its second partial is ``d * r`` (``second_ratio``), in one array of this
    function's making, like ``plus_second`` (ndarrays of one shape and dtype;
    ``r`` an array or a scalar, ``gd`` possibly structural zero), or None
    where that does not apply. Arrays passed in are never written to. A
    staged value (``cr.jit``'s recording) takes the same products and sum,
    as new values (the plan then has no write to follow), but for complex
    values: NumPy's complex product written in place takes another loop
    than into a new array (an ulp apart at times), so those are written in
    place as for an ndarray."""
    # (d and r may be ndarray subclasses: a checkpointed segment's values)
    dt = d.dtype if isinstance(d, _ndarray) or plain_array(d) else None
    if (dt is None or d.shape != g.shape or g.dtype != dt or xd.dtype != dt
            or (isinstance(r, _ndarray) and r.dtype != dt)
            or not (isinstance(gd, Structural) or (plain_array(gd)
                                                    and gd.dtype == dt))):
        return None
    p = g * xd
    if type(p) is not _ndarray and dt.kind != "c":  # staged: the same arithmetic, no writes
        if not (type(r) is int and r == 1):
            p = p * r
        if not isinstance(gd, Structural):
            p = p + gd
        return p * d
    if not (type(r) is int and r == 1):
        np.multiply(p, r, out=p)
    if not isinstance(gd, Structural):
        np.add(p, gd, out=p)
    np.multiply(p, d, out=p)
    return p


def plus(a, b):
    if isinstance(a, Structural):
        return b
    if isinstance(b, Structural):
        return a
    return a + b


def signed_sum(a, da, b, db):
    """``a * da + b * db`` for constant partials, without a pass for a sign."""
    if da == 1:
        if db == 1:
            return a + b
        if db == -1:
            return a - b
    elif da == -1 and db == 1:
        return b - a
    return plus(times(a, da), times(b, db))


def widened(v, dtype):
    """``v`` in the precision of the output ``dtype`` of an elementwise
    operation, for its partials: a float or complex value of a narrower
    dtype (float32 or complex64 beside float64 or complex128) converted
    exactly, keeping its kind (a real value beside a complex output stays
    real); any other value (integers, wider values) as it is."""
    dt = getattr(v, "dtype", None)
    if dt is None or dt.kind not in "fc" or dtype.kind not in "fc":
        return v
    target = dtype if dt.kind == dtype.kind else np.dtype(dtype.char.lower())
    if dt == target or not np.can_cast(dt, target, "safe"):
        return v
    return target.type(v) if isinstance(v, np.generic) else v.astype(target)


def cast_mixed(xi, x, yi, y, z, rule):
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


class SecondByReplay(ReverseRule):
    """A derived rule registered without ``second=``: the same rule, whose
    second order is found by replay (``chainrules.second_order``: the rule
    made again on forward-traced inputs, its pullback differentiated)."""

    __slots__ = ("rule",)
    second_order_by_replay = True

    def __init__(self, rule):
        self.rule = rule

    @property
    def name(self):
        return self.rule.name

    def inputs(self):
        return self.rule.inputs()

    def pullback(self, g):
        return self.rule.pullback(g)

    def pushforward(self, tangents):
        return self.rule.pushforward(tangents)


def replayed(maker):
    """``maker`` for a rule registered without second partials: its rules
    wrapped in ``SecondByReplay``."""

    def replayed_maker(ids, *args, **kwargs):
        out, rule = maker(ids, *args, **kwargs)
        return out, (rule if rule is None else SecondByReplay(rule))

    replayed_maker.spec = getattr(maker, "spec", None)
    return user_maker(replayed_maker)
