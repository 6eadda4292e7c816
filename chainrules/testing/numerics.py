"""Numbers for the checkers: tolerances by precision, inner products and
norms over pytrees of arrays, random directions, snapshots of inputs (to
detect mutation), and finite differences of list-valued functions."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import DTypeLike

from chainrules import pytree
from chainrules.tangents import NOTANGENT, Structural
from chainrules.tracing import Traced, untraced

from .fd import fd_jvp


def eps(dtype: Any) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def default_rtol(dtype: DTypeLike) -> float:
    """Relative tolerance of comparisons against finite differences for a
    computation in ``dtype``: 1e-9 for float64/complex128, 1e-4 for
    float32/complex64, ~0.1 for float16."""
    return max(1e-9, 16.0 * eps(dtype) ** 0.75)


def adjoint_rtol(dtype: DTypeLike) -> float:
    """Relative tolerance of identities that hold to rounding (adjoint
    identity, HVP symmetry, primal): ~1e-12 for float64, 1e-4 for float32."""
    return min(default_rtol(dtype), 4096.0 * eps(dtype))


# -- small helpers ------------------------------------------------------------------
def inexact(x):
    if x is None or isinstance(x, (bool, np.bool_, Structural)):
        return False
    if isinstance(x, Traced):
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "fc"
    return isinstance(x, (float, complex))


def integral(x):
    if isinstance(x, (bool, int, np.bool_, np.integer)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "biu"


def has_inexact(a):
    return any(inexact(leaf) for leaf in pytree.flatten(a)[0])


def as64(x):
    a = np.asarray(x)
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def usable(x):
    return inexact(x) and not isinstance(x, Traced)


def inner(a_leaves, b_leaves):
    """Real pairing Re(sum(a * b)) over matching leaves, in float64."""
    s = 0.0
    for a, b in zip(a_leaves, b_leaves):
        if usable(a) and usable(b):
            s += float(np.sum(np.real(as64(a) * as64(b))))
    return s


def norm(leaves):
    s = 0.0
    for a in leaves:
        if usable(a):
            s += float(np.sum(np.abs(as64(a)) ** 2))
    return math.sqrt(s)


def diff_norm(a_leaves, b_leaves):
    s = 0.0
    for a, b in zip(a_leaves, b_leaves):
        ua, ub = usable(a), usable(b)
        if ua and ub:
            s += float(np.sum(np.abs(as64(a) - as64(b)) ** 2))
        elif ua:
            s += float(np.sum(np.abs(as64(a)) ** 2))
        elif ub:
            s += float(np.sum(np.abs(as64(b)) ** 2))
    return math.sqrt(s)


def random_leaf(x, rng):
    if not inexact(x):
        return NOTANGENT
    v = untraced(x)
    a = np.asarray(v)
    if a.dtype.kind == "c":
        r = (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)) / math.sqrt(2)
    else:
        r = rng.standard_normal(a.shape)
    r = r.astype(a.dtype)
    return r if isinstance(v, np.ndarray) else r[()]


def copy_arrays(tree):
    leaves, _ = pytree.flatten(tree)
    return [np.array(leaf, copy=True) if isinstance(leaf, np.ndarray) else None
            for leaf in leaves]


def mutated(tree, snap):
    leaves, _ = pytree.flatten(tree)
    for i, (leaf, s) in enumerate(zip(leaves, snap)):
        if s is not None and (leaf.shape != s.shape or not np.array_equal(
                leaf, s, equal_nan=True)):
            return i
    return None


# -- finite differences of list-valued functions -----------------------------------
def finite_difference(f: Callable[[list[Any]], Any], x: Sequence[Any], u: Sequence[Any],
                      h: float | None = None) -> Any:
    """Directional derivative of ``f`` (taking a list of arrays) at ``x`` along
    ``u`` (lists of arrays), by ``chainrules.testing.fd.fd_jvp``."""
    return fd_jvp(lambda *xs: f(list(xs)), tuple(x), tuple(u), step=h).value


def to_vec(t):
    from chainrules.tangents import to_vector

    return to_vector(t)[0]
