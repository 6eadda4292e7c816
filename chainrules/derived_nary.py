"""Elementwise rules of three or more arguments, from their partials.

``scalar_rule(sc.betainc, da, db, dx, second=(daa, dab, dax, dbb, dbx, dxx))``
registers ``z = f(a, b, x)`` (broadcasting) from one function per partial
derivative, each of ``(*args, z)``, and the upper triangle of the matrix of
second partials in row-major order. The pullback, pushforward and
``pullback_with_tangents`` are derived here, as for the unary and binary
rules in ``chainrules.derived``. A partial is evaluated only for the
arguments that are traced, so a partial that raises (an order or shape
argument without a closed-form derivative) raises only when that argument is
differentiated.
"""

import numpy as np

from .broadcast import (CastCotangents, expand_batched, narrower_inputs, unbroadcast,
                        unbroadcast_batched)
from .derived_common import PYTHON_NUMBERS, plus, times, widened
from .errors import HvpNotSupported
from .rule import ReverseRule
from .tangents import ZERO, Structural

__all__ = ["NaryScalarRule", "nary_maker"]


def _call(d, args):
    return d(*args) if callable(d) else d


class NarySpec:
    """The partials of one n-ary elementwise operation."""

    __slots__ = ("op", "name", "d", "d2")

    def __init__(self, op, name, partials, second):
        n = len(partials)
        self.op, self.name, self.d = op, name, tuple(partials)
        if second is None:
            self.d2 = None
        else:
            want = n * (n + 1) // 2
            if len(second) != want:
                raise TypeError(f"scalar_rule({name}): second= needs the {want} entries of "
                                "the upper triangle of the second partials, row by row")
            it = iter(second)
            self.d2 = {}
            for i in range(n):
                for j in range(i, n):
                    self.d2[i, j] = self.d2[j, i] = next(it)


class NaryScalarRule(ReverseRule):
    """``z = f(*args)`` elementwise with broadcasting."""

    __slots__ = ("ids", "args", "shapes", "zshape", "spec", "dv")

    def __init__(self, ids, args, z, spec):
        self.ids = ids
        self.args = tuple(args) + (z,)
        self.shapes = tuple(np.shape(a) for a in args)
        self.zshape = np.shape(z)
        self.spec = spec
        self.dv = {}

    @property
    def name(self):
        return self.spec.name

    def inputs(self):
        return tuple(i for i in self.ids if i is not None)

    def _traced(self):
        return [k for k, i in enumerate(self.ids) if i is not None]

    def _d(self, k):
        d = self.dv.get(k)
        if d is None:
            d = self.dv[k] = _call(self.spec.d[k], self.args)
        return d

    def _unbroadcast(self, c, k):
        return c if isinstance(c, Structural) else unbroadcast(c, self.shapes[k])

    def pullback(self, g):
        return [(self.ids[k], self._unbroadcast(times(g, self._d(k)), k))
                for k in self._traced()]

    def pushforward(self, tangents):
        t = ZERO
        for k, td in zip(self._traced(), tangents):
            if not isinstance(td, Structural):
                t = plus(t, times(td, self._d(k)))
        if isinstance(t, Structural) or np.shape(t) == self.zshape:
            return t
        return np.broadcast_to(t, self.zshape)

    def pullback_with_tangents(self, g, gd, tangents):
        return self._with_tangents(g, gd, tangents, False)

    def _with_tangents(self, g, gd, tangents, batched):
        """``pullback_with_tangents``; ``batched``: ``gd`` and the tangents
        are batches of directions (``g`` is shared)."""
        traced = self._traced()
        on = [k for k, td in zip(traced, tangents) if not isinstance(td, Structural)]
        tan = dict(zip(traced, tangents))
        has_g = not isinstance(g, Structural)
        if has_g and on and self.spec.d2 is None:
            raise HvpNotSupported(f"{self.spec.name} was registered without second=")
        lift = self._lift if batched else (lambda t, j: t)
        unbroadcast_d = self._unbroadcast_batched if batched else self._unbroadcast
        out = []
        for k in traced:
            d = self._d(k)
            c = times(g, d)
            cd = times(gd, d)
            if has_g:
                for j in on:
                    cd = plus(cd, times(times(g, _call(self.spec.d2[k, j], self.args)),
                                        lift(tan[j], j)))
            out.append((self.ids[k], self._unbroadcast(c, k), unbroadcast_d(cd, k)))
        return out

    # -- batches of directions: a leading axis on every tangent and on the
    # cotangent's tangent (the partials broadcast against it; a batched
    # tangent of a narrower argument gets ones after its batch axis first)
    batched = True

    def _lift(self, t, k):
        return expand_batched(t, self.shapes[k], len(self.zshape))

    def _unbroadcast_batched(self, c, k):
        return c if isinstance(c, Structural) else unbroadcast_batched(c, self.shapes[k])

    def pullback_batched(self, G):
        return [(self.ids[k], self._unbroadcast_batched(times(G, self._d(k)), k))
                for k in self._traced()]

    def pushforward_batched(self, tangents):
        t = ZERO
        for k, td in zip(self._traced(), tangents):
            if not isinstance(td, Structural):
                t = plus(t, times(self._lift(td, k), self._d(k)))
        if isinstance(t, Structural) or np.shape(t)[1:] == self.zshape:
            return t
        return np.broadcast_to(t, np.shape(t)[:1] + self.zshape)

    def pullback_with_tangents_batched(self, g, GD, tangents):
        return self._with_tangents(g, GD, tangents, True)


def nary_maker(spec):
    """The registry maker for ``spec``: computes ``z`` and records the rule
    (cotangents of traced inputs narrower than ``z`` are cast back)."""
    op = spec.op

    def maker(ids, *args, **kwargs):
        z = op(*args, **kwargs) if kwargs else op(*args)
        # the partials read float32 arguments beside float64 ones in the
        # output's precision (``derived_common.widened``)
        zdt = z.dtype
        rule = NaryScalarRule(ids, tuple(a if type(a) in PYTHON_NUMBERS else widened(a, zdt)
                                         for a in args), z, spec)
        narrow = narrower_inputs(ids, args, z)
        return z, (CastCotangents(rule, narrow, z.dtype) if narrow else rule)

    return maker
