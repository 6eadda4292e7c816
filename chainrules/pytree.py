"""Pytrees: nested tuples, lists, dicts and dataclasses of arrays.

``flatten(tree)`` returns the leaves in a fixed order and a definition that
``unflatten`` uses to rebuild a tree of the same structure. Anything that is
not a tuple, list, dict or dataclass instance is a leaf (``None`` included):
to make a container of your own a pytree, make it a dataclass.
``tree_map(fn, tree, *rest)`` applies ``fn`` leaf by leaf, and
``ravel(tree)`` flattens every leaf into one vector (for
``scipy.optimize``) with the function that rebuilds the tree from it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

import numpy as np
from numpy.typing import NDArray

__all__ = ["flatten", "unflatten", "tree_map", "is_leaf", "ravel", "PyTree"]

#: A pytree: a leaf (an array, a scalar, ``None``, any other object), or a
#: tuple, list, dict or dataclass instance of pytrees. Python's typing cannot
#: say "a nested container of arrays" of arbitrary depth usefully, so it is
#: ``Any``; the name documents what a function takes or returns.
PyTree = Any


#: types that are leaves whatever happens: NumPy's and Python's value types,
#: whose classes cannot be changed into containers (dataclasses) later
_LEAF_TYPES = frozenset((np.ndarray, float, int, complex, bool, str, bytes, type(None),
                         np.float64, np.float32, np.float16, np.longdouble, np.complex128,
                         np.complex64, np.clongdouble, np.int64, np.int32, np.int16, np.int8,
                         np.uint64, np.uint32, np.uint16, np.uint8, np.bool_))


def _kind(x):
    t = type(x)
    if t in _LEAF_TYPES:
        return None
    if t is tuple or t is list or t is dict:
        return t
    if isinstance(x, tuple):  # namedtuple and other tuple subclasses
        return tuple
    if isinstance(x, dict):
        return dict
    if isinstance(x, list):
        return list
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses
    return None


def is_leaf(x: Any) -> bool:
    return _kind(x) is None


class _Leaf:
    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


LEAF = _Leaf()


class TreeDef:
    """The structure of a pytree, without its leaves."""

    __slots__ = ("kind", "node_type", "keys", "children")

    def __init__(self, kind: Any, node_type: type, keys: tuple[Any, ...] | None,
                 children: tuple[TreeDef | _Leaf, ...]) -> None:
        self.kind = kind
        self.node_type = node_type
        self.keys = keys
        self.children = children

    def __hash__(self) -> int:
        # dict keys are hashable: a staged plan's cache keys a call by its
        # arguments' structure
        return hash((self.kind, self.node_type, self.keys, self.children))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeDef) and self.kind == other.kind
                and self.node_type is other.node_type and self.keys == other.keys
                and self.children == other.children)

    def __repr__(self) -> str:
        return f"TreeDef({self.node_type.__name__}, {self.children})"


def flatten(tree: PyTree) -> tuple[list[Any], TreeDef | _Leaf]:
    """``(leaves, treedef)``: the leaves of ``tree`` in a fixed order (dict
    keys in insertion order, dataclass fields in declaration order) and its
    structure, for ``unflatten``."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves):
    kind = _kind(x)
    if kind is None:
        leaves.append(x)
        return LEAF
    if kind is dict:
        keys = tuple(x.keys())
        return TreeDef(dict, type(x), keys, tuple(_flatten(x[k], leaves) for k in keys))
    if kind is dataclasses:
        keys = tuple(f.name for f in dataclasses.fields(x))
        return TreeDef(kind, type(x), keys,
                       tuple(_flatten(getattr(x, k), leaves) for k in keys))
    return TreeDef(kind, type(x), None, tuple(_flatten(c, leaves) for c in x))


def unflatten(treedef: TreeDef | _Leaf, leaves: Iterable[Any]) -> PyTree:
    """The tree of structure ``treedef`` (from ``flatten``) holding ``leaves``."""
    it = iter(leaves)
    out = _unflatten(treedef, it)
    return out


def _unflatten(td, it):
    if td is LEAF:
        return next(it)
    children = [_unflatten(c, it) for c in td.children]
    if td.kind is dict:
        d = dict(zip(td.keys, children))
        return d if td.node_type is dict else td.node_type(d)
    if td.kind is dataclasses:
        obj = td.node_type.__new__(td.node_type)
        for k, v in zip(td.keys, children):
            object.__setattr__(obj, k, v)
        return obj
    if td.kind is tuple:
        if td.node_type is tuple:
            return tuple(children)
        if hasattr(td.node_type, "_fields"):  # namedtuple
            return td.node_type(*children)
        return td.node_type(children)
    return td.node_type(children) if td.node_type is not list else children


def tree_map(fn: Callable[..., Any], tree: PyTree, *rest: PyTree) -> PyTree:
    """``fn`` applied leaf by leaf to ``tree`` (and to the leaves of the
    trees ``rest``, of the same structure, as further arguments)."""
    leaves, td = flatten(tree)
    others = [flatten(r)[0] for r in rest]
    return unflatten(td, [fn(x, *ys) for x, *ys in zip(leaves, *others)])


def ravel(tree: PyTree) -> tuple[NDArray[Any], Callable[[Any], PyTree]]:
    """``(vector, unravel)``: the leaves of ``tree`` (arrays, scalars, traced
    values) flattened in ``flatten``'s order into one 1-D array of their
    common dtype, and the function that rebuilds from such a vector a tree
    of the same structure with each leaf's shape and dtype. Both directions
    are NumPy calls, so they differentiate: ``grad`` of a function of
    ``unravel(v)`` is a vector, and ``ravel`` of a traced tree is traced.

    >>> import numpy as np
    >>> v, unravel = ravel({"w": np.ones((2, 2)), "b": 0.5})
    >>> v
    array([1. , 1. , 1. , 1. , 0.5])
    >>> unravel(v)["w"].shape
    (2, 2)
    """
    leaves, td = flatten(tree)
    shapes = [np.shape(leaf) for leaf in leaves]
    dtypes = [np.result_type(leaf) for leaf in leaves]
    dtype = np.result_type(*dtypes, np.float32) if leaves else np.dtype(np.float64)
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    sizes = [int(np.prod(s)) for s in shapes]
    if leaves:
        vector = np.concatenate([np.ravel(leaf) for leaf in leaves])
        if vector.dtype != dtype:
            vector = vector.astype(dtype)
    else:
        vector = np.zeros(0, dtype)
    total = sum(sizes)

    def unravel(v):
        if np.shape(v) != (total,):
            raise ValueError(f"unravel takes a vector of {total} elements (the tree's "
                             f"leaves, flattened), got shape {np.shape(v)}")
        pieces, start = [], 0
        for shape, size, dt in zip(shapes, sizes, dtypes):
            piece = np.reshape(v[start:start + size], shape)
            start += size
            if np.result_type(piece) != dt and dt.kind in "fc":
                piece = piece.astype(dt)
            pieces.append(piece)
        return unflatten(td, pieces)

    return vector, unravel
