"""Tangent types and tangent algebra.

Two structural tangents:

* ``ZeroTangent()``: the derivative exists and is zero. Adding it is free,
  scaling it gives itself. Rules return it for an input that does not
  influence the output; the engine skips it without allocating anything.
* ``NoTangent()``: no derivative exists, because the value is not
  differentiable in kind: integer and boolean arguments, indices, shapes,
  random seeds. Use it for *arguments*; use ``ZeroTangent`` for real-valued
  arguments whose derivative happens to be zero.

Both add as zero (``NoTangent() + b`` is ``b``, as the engine accumulates
them); two structural zeros add to ``NoTangent()`` when either is one.

The algebra (``add``, ``scale``, ``inner``, ``zeros_like``, ``random_like``,
``to_vector``/``from_vector``) is dispatched per value type with
multipledispatch: ndarrays, Python and NumPy scalars (real and complex), and
pytrees (tuple, list, dict, dataclass). ``inner`` is the real dual pairing
``Re(sum(a * b))`` used throughout (see the complex convention in the
docs/guide/complex.md): ``<J^T w, u> == <w, J u>``.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, TypeVar

import numpy as np
from multipledispatch import Dispatcher
from numpy.typing import NDArray

from . import pytree

__all__ = ["Structural", "ZeroTangent", "NoTangent", "add", "scale", "inner", "zeros_like",
           "random_like", "to_vector", "from_vector", "is_zero"]


_S = TypeVar("_S", bound="Structural")
_T = TypeVar("_T")


class Structural:
    """The base of the structural tangents ``ZeroTangent`` and ``NoTangent``
    (one instance each)."""

    __slots__ = ()
    __array_ufunc__ = None  # make ndarray binary operators defer to us

    def __new__(cls):
        inst = cls.__dict__.get("_singleton")
        if inst is None:
            inst = object.__new__(cls)
            cls._singleton = inst
        return inst

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __reduce__(self) -> tuple[type[Structural], tuple[()]]:
        return (type(self), ())

    def __bool__(self) -> bool:
        return False

    # both structural zeros subtract and scale as zero: x - z is x, z - x is
    # -x, a scaled zero is itself
    def __sub__(self, other: Any) -> Any:
        return -other if not isinstance(other, Structural) else self

    def __rsub__(self, other: _T) -> _T:
        return other

    def __mul__(self: _S, other: object) -> _S:
        return self

    __rmul__ = __mul__

    def __neg__(self: _S) -> _S:
        return self

    def __pos__(self: _S) -> _S:
        return self


class ZeroTangent(Structural):
    """A tangent that is structurally zero. Arithmetic with it is free.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> z = cr.ZeroTangent()
    >>> z + np.ones(2), z is cr.ZeroTangent()
    (array([1., 1.]), True)
    """

    __slots__ = ()

    def __add__(self, other: _T) -> _T:
        return other

    __radd__ = __add__

    __truediv__ = Structural.__mul__
    __matmul__ = Structural.__mul__
    __rmatmul__ = Structural.__mul__


class NoTangent(Structural):
    """The value has no derivative (integers, booleans, indices).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> cr.grad(lambda p: np.sum(p["x"]))({"x": np.ones(2), "n": np.arange(2)})
    {'x': array([1., 1.]), 'n': NoTangent()}
    """

    __slots__ = ()

    # adding acts as zero, as the engine accumulates it (a value added to
    # "no derivative" is that value); anything else keeps "no derivative"
    def __add__(self, other: Any) -> Any:
        return other if not isinstance(other, ZeroTangent) else self

    __radd__ = __add__



ZERO = ZeroTangent()
NOTANGENT = NoTangent()


def is_zero(t: object) -> bool:
    """True for ``ZeroTangent()``, ``NoTangent()`` and ``None``."""
    return t is None or isinstance(t, Structural)


def _is_tree(x):
    return not pytree.is_leaf(x)


# -- add -----------------------------------------------------------------------
add = Dispatcher("add")


@add.register(ZeroTangent, object)
def _add_zero_left(a, b):
    return b


@add.register(object, ZeroTangent)
def _add_zero_right(a, b):
    return a


@add.register(ZeroTangent, ZeroTangent)
def _add_zero_zero(a, b):
    return a


@add.register(NoTangent, object)
def _add_no_left(a, b):
    return b


@add.register(object, NoTangent)
def _add_no_right(a, b):
    return a


@add.register(NoTangent, ZeroTangent)
@add.register(ZeroTangent, NoTangent)
@add.register(NoTangent, NoTangent)
def _add_no(a, b):
    return NOTANGENT


@add.register(object, object)
def _add_default(a, b):
    if _is_tree(a) or _is_tree(b):
        return pytree.tree_map(add, a, b)
    return a + b


# -- scale ---------------------------------------------------------------------
scale = Dispatcher("scale")


@scale.register(Structural, object)
def _scale_structural(t, s):
    return t


@scale.register(object, object)
def _scale_default(t, s):
    if _is_tree(t):
        return pytree.tree_map(lambda leaf: scale(leaf, s), t)
    return t * s


# -- inner: the real dual pairing ---------------------------------------------
inner = Dispatcher("inner")


@inner.register(Structural, Structural)
@inner.register(Structural, object)
@inner.register(object, Structural)
def _inner_structural(a, b):
    return 0.0


@inner.register(object, object)
def _inner_default(a, b):
    if _is_tree(a) or _is_tree(b):
        la, _ = pytree.flatten(a)
        lb, _ = pytree.flatten(b)
        return float(sum(inner(x, y) for x, y in zip(la, lb)))
    prod = np.multiply(a, b)
    return float(np.sum(np.real(prod)))


# -- zeros_like ----------------------------------------------------------------
zeros_like = Dispatcher("zeros_like")


@zeros_like.register(np.ndarray)
def _zeros_array(x):
    if x.dtype.kind in "fc":
        return np.zeros_like(x)
    return NOTANGENT


@zeros_like.register(numbers.Number)
def _zeros_number(x):
    if isinstance(x, (bool, np.bool_, numbers.Integral)):
        return NOTANGENT
    return type(x)(0)


@zeros_like.register(object)
def _zeros_default(x):
    if _is_tree(x):
        return pytree.tree_map(zeros_like, x)
    return NOTANGENT


# -- random_like ---------------------------------------------------------------
random_like = Dispatcher("random_like")


@random_like.register(np.ndarray, object)
def _random_array(x, rng):
    if x.dtype.kind == "f":
        return rng.standard_normal(x.shape).astype(x.dtype)
    if x.dtype.kind == "c":
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return NOTANGENT


@random_like.register(numbers.Number, object)
def _random_number(x, rng):
    if isinstance(x, (bool, np.bool_, numbers.Integral)):
        return NOTANGENT
    if isinstance(x, (complex, np.complexfloating)):
        return type(x)(complex(rng.standard_normal(), rng.standard_normal()))
    return type(x)(rng.standard_normal())


@random_like.register(object, object)
def _random_default(x, rng):
    if _is_tree(x):
        return pytree.tree_map(lambda leaf: random_like(leaf, rng), x)
    return NOTANGENT


# -- flatten to / from a real vector -------------------------------------------
def to_vector(t: Any) -> tuple[NDArray[np.float64], Callable[[NDArray[Any]], Any]]:
    """Flatten a tangent (array, scalar or pytree) into a real 1-D vector.

    Complex entries contribute their real and imaginary parts, so the result
    is always a real float64 vector. Structural tangents contribute nothing.
    Returns ``(vector, rebuild)``; ``rebuild(vector)`` gives the tangent back.
    """
    leaves, td = pytree.flatten(t)
    parts: list[NDArray[Any]] = []
    specs: list[tuple[Any, Any]] = []
    for leaf in leaves:
        if isinstance(leaf, Structural) or leaf is None:
            specs.append((None, leaf))
            continue
        a = np.asarray(leaf)
        spec = (a.shape, a.dtype, isinstance(leaf, np.ndarray))
        specs.append((spec, leaf))
        flat = a.reshape(-1)
        if a.dtype.kind == "c":
            parts.append(flat.real.astype(np.float64))
            parts.append(flat.imag.astype(np.float64))
        else:
            parts.append(flat.astype(np.float64))
    vec = np.concatenate(parts) if parts else np.zeros(0)

    def rebuild(v):
        out, pos = [], 0
        for spec, orig in specs:
            if spec is None:
                out.append(orig)
                continue
            shape, dtype, is_array = spec
            n = int(np.prod(shape, dtype=np.int64))
            if dtype.kind == "c":
                val = (v[pos:pos + n] + 1j * v[pos + n:pos + 2 * n]).astype(dtype)
                pos += 2 * n
            else:
                val = v[pos:pos + n].astype(dtype)
                pos += n
            val = val.reshape(shape)
            out.append(val if is_array else val[()])
        return pytree.unflatten(td, out)

    return vec, rebuild


def from_vector(vector: NDArray[Any], like: Any) -> Any:
    """Inverse of ``to_vector`` with the structure of ``like``."""
    return to_vector(like)[1](vector)
