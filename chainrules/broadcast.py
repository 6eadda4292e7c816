"""Cotangents back to their input's shape and dtype.

``unbroadcast`` is the one place where a cotangent is summed back to the
shape of a broadcast argument; ``CastCotangents`` wraps a rule whose output
is wider than an input (float32 with float64, real to complex), so that each
input gets a cotangent of its own dtype from the rule itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arrays import shape_of
from .rule import ReverseRule
from .tangents import Structural

__all__ = ["unbroadcast", "unbroadcast_batched", "expand_batched", "CastCotangents",
           "narrower_inputs"]


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``g`` over the axes along which an argument of ``shape`` was
    broadcast, returning an array of exactly ``shape``.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> cr.unbroadcast(np.ones((2, 3)), (1, 3))
    array([[2., 2., 2.]])
    """
    if isinstance(g, Structural):
        return g
    gshape = shape_of(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    if axes:
        g = np.sum(g, axis=axes)
    if g.shape != shape:
        g = np.reshape(g, shape)
    return g


def unbroadcast_batched(g, shape):
    """``unbroadcast`` of a batch: ``g`` of shape ``(k,) + s`` where ``s`` is
    a broadcast of ``shape``; returns shape ``(k,) + shape`` (the batch axis
    is never summed)."""
    if isinstance(g, Structural):
        return g
    shape = tuple(shape)
    gshape = g.shape
    inner = len(gshape) - 1
    if gshape[1:] == shape:
        return g
    full = (gshape[0],) + (1,) * (inner - len(shape)) + shape
    g = unbroadcast(g, full)
    return g if len(full) == len(shape) + 1 else np.reshape(g, (gshape[0],) + shape)


def expand_batched(t, shape, ndim):
    """A batch ``t`` of shape ``(k,) + shape`` with ones inserted after the
    batch axis so that it broadcasts against arrays of ``ndim`` axes (the
    output of a broadcasting operation) as its slices would."""
    if isinstance(t, Structural) or len(shape) >= ndim:
        return t
    return np.reshape(t, t.shape[:1] + (1,) * (ndim - len(shape)) + tuple(shape))


class CastCotangents(ReverseRule):
    """Wrap a rule whose output has a wider dtype than some traced input
    (``float_power`` always computes in float64; ``float32 ** int64``):
    cotangents are cast back to each input's dtype, so float32 inputs get
    float32 cotangents from the rule itself, and tangents to the output's."""

    __slots__ = ("rule", "dtypes", "zdtype")

    def __init__(self, rule, dtypes, zdtype):
        self.rule = rule
        self.dtypes = dtypes
        self.zdtype = zdtype

    @property
    def name(self):
        return self.rule.name

    @property
    def linear(self):
        return self.rule.linear

    def inputs(self):
        return self.rule.inputs()

    def _cast(self, nid, c):
        dt = self.dtypes.get(nid)
        if dt is None or c is None or isinstance(c, Structural):
            return c
        cdt = getattr(c, "dtype", None)
        if cdt is None or cdt == dt:
            return c
        if cdt.kind == "c" and dt.kind != "c":
            c = np.real(c)
        return c.astype(dt)

    def pullback(self, g):
        return [(nid, self._cast(nid, c)) for nid, c in self.rule.pullback(g)]

    def pushforward(self, tangents):
        t = self.rule.pushforward(tangents)
        if t is None or isinstance(t, Structural) or getattr(t, "dtype", None) == self.zdtype:
            return t
        return t.astype(self.zdtype)

    def pullback_with_tangents(self, g, gd, tangents):
        return [(nid, self._cast(nid, c), self._cast(nid, cd))
                for nid, c, cd in self.rule.pullback_with_tangents(g, gd, tangents)]

    @property
    def batched(self):
        return getattr(self.rule, "batched", False)

    def pullback_batched(self, g):
        return [(nid, self._cast(nid, c)) for nid, c in self.rule.pullback_batched(g)]

    def pushforward_batched(self, tangents):
        t = self.rule.pushforward_batched(tangents)
        if t is None or isinstance(t, Structural) or getattr(t, "dtype", None) == self.zdtype:
            return t
        return t.astype(self.zdtype)

    def pullback_with_tangents_batched(self, g, gd, tangents):
        return [(nid, self._cast(nid, c), self._cast(nid, cd))
                for nid, c, cd in self.rule.pullback_with_tangents_batched(g, gd, tangents)]


def narrower_inputs(ids, args, z):
    """{NodeId: dtype} of the traced inputs whose dtype differs from z's."""
    out = {}
    zdt = z.dtype
    for nid, a in zip(ids, args):
        if nid is not None and type(nid) is not tuple and a.dtype != zdt:
            out[nid] = a.dtype
    return out
