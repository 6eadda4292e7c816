"""The rule a fused region becomes (``fused_sweeps.fuse``): ``FusedRegion``.

Its pullback, pushforward and pullback with tangents evaluate the region's
programs (``fusion_code.RegionCode``) with NumPy, block by block and over
threads (``elementwise_threads``), or per chunk of a chunked array; the
cotangent 1 of a sum is read as a constant (``_run_one``). Values the
programs cannot take (a traced value of an outer recording, another
dtype) run the members' own rules one by one.
"""

import numpy as np

from . import elementwise_threads
from .arrays import is_array, uniform_value
from .broadcast import expand_batched, unbroadcast, unbroadcast_batched
from .derived_common import plus
from .rule import ReverseRule
from .tangents import ZERO, Structural

__all__ = ["FusedRegion"]

_ndarray = np.ndarray


def _fit(v, shape, root):
    """A region result as a cotangent or tangent of an input of ``shape``.
    Every result stands for an array of the ``root``'s shape (a member's
    cotangent times partials): broadcast to it where it came out smaller (a
    uniform cotangent times constant partials is one scalar), then summed
    over the axes along which the input was broadcast."""
    vs = np.shape(v)
    if vs == shape == root:
        return v
    if vs != root:
        v = np.broadcast_to(v, np.broadcast_shapes(vs, root))
    return unbroadcast(v, shape)


def _fit_batched(v, k, shape, root):
    """``_fit`` of a batch of ``k`` directions (a leading axis): ``(k,) +
    shape``, the batch axis never summed."""
    full = (k,) + tuple(root)
    if np.shape(v) != full:
        v = np.broadcast_to(v, np.broadcast_shapes(np.shape(v), full))
    return unbroadcast_batched(v, shape)


def _zero(v):
    """None (a rule's structural zero, see ``docs/design.md``) as ``ZERO``."""
    return ZERO if v is None else v


def _array(v):
    """An array the programs compute with: an ndarray, or another array type
    that implements NumPy's protocols (dask: the programs then run per
    chunk, or build its graph), never a traced value."""
    return type(v) is _ndarray or is_array(v)


def _eager(env):
    """Whether every value of ``env`` is a NumPy array or scalar."""
    return all(type(v) is _ndarray or isinstance(v, np.generic) for v in env.values())


def _uniform(g):
    """The one value of a uniform cotangent (a sum's), as a NumPy scalar of
    its dtype, or None."""
    u = uniform_value(g)
    if u is None or getattr(u, "dtype", None) == g.dtype:
        return u
    return g.dtype.type(u)


class FusedRegion(ReverseRule):
    """The rules of a region swept as one (see the module docstring).
    ``inputs()`` are the region's inputs; ``members`` the rules it stands
    for and ``nodes`` their NodeIds, in tape order (the root last)."""

    __slots__ = ("ins", "nodes", "members", "code", "in_shapes", "shape", "cache", "alias")

    cot_skippable = True

    def __init__(self, ins, nodes, members, code, in_shapes, shape, alias=()):
        self.ins = ins
        # (gather id, region input id): a member reads the gather, whose
        # value and tangent are the input's (``find_regions``)
        self.alias = alias
        self.nodes = nodes
        self.members = members
        self.code = code
        self.in_shapes = in_shapes
        self.shape = shape
        # the hoisted subexpressions of the members' values, computed once
        # (``RegionCode.program``)
        self.cache = {}

    @property
    def name(self):
        names = []
        for m in self.members:
            n = m.name
            if n not in names:
                names.append(n)
        return f"fused({', '.join(names)})"

    @property
    def linear(self):
        return all(m.linear for m in self.members)

    def inputs(self):
        return self.ins

    def _run(self, mode, variant, given, hoist=True):
        """The program's results (None: structurally zero), or None when the
        values are not for it: a member's value that is not an array the
        programs compute with (the rules then run one by one), a given
        value of another dtype.

        The hoisted values (``RegionCode.program``) are computed once and
        kept when every value is a NumPy one. Arrays evaluated lazily
        (dask) take the program that computes them itself: kept, they
        would be graphs that every evaluation recomputes anyway, as arrays
        of their own held beside the program's (a dask HVP at 1e8 elements
        took 1.3 times as long and 1.7 times the memory)."""
        dtype = self.code.dtype
        for v in given.values():
            if getattr(v, "dtype", None) != dtype:
                return None
        zeros, program, values, hoisted = self.code.program(mode, variant, hoist)
        bind = dict(given)
        if not self._bind(values, bind):
            return None
        if hoisted is not None:
            names, ks, prog, needs = hoisted
            cache = self.cache
            vals = [cache.get(k) for k in ks]
            if any(v is None for v in vals):
                env = {}
                if not self._bind(needs, env):
                    return None
                if not (_eager(env) and _eager(bind)):
                    return self._run(mode, variant, given, hoist=False)
                vals = elementwise_threads.run(prog, env)
                cache.update(zip(ks, vals))
            bind.update(zip(names, vals))
        vals = iter(elementwise_threads.run(program, bind))
        return [None if z else next(vals) for z in zeros]

    def _bind(self, values, env):
        """Put the members' ``values`` into ``env``; False when one is not an
        array the programs compute with."""
        members = self.members
        for name, k, role in values:
            v = getattr(members[k], role)
            if type(v) is not _ndarray and not isinstance(v, np.generic) and not is_array(v):
                return False
            env[name] = v
        return True

    # -- the sweeps ------------------------------------------------------------------
    def pullback(self, g):
        if not _array(g):
            return self._unfused_pullback(g, False)
        u = _uniform(g)
        if u is not None and u == 1 and self.code.dtype.kind == "f":
            out = self._run_one()
        else:
            out = self._run("pullback", u is not None, {"g": g if u is None else u})
        if out is None:
            return self._unfused_pullback(g, False)
        root = self.shape
        return [(j, ZERO if c is None else _fit(c, s, root))
                for j, c, s in zip(self.ins, out, self.in_shapes)]

    def _run_one(self):
        """The pullback of the uniform cotangent 1 (a sum's, in a gradient),
        which the program reads as the constant 1: scalar factors that
        fold to one (``0.5 / y`` and ``2 x``) cost no pass. Its results are
        functions of the members' values only; computed here rather than
        kept (``hoist=False``), they are arrays of this call's making,
        never a kept partial or a member's value."""
        out = self._run("pullback", "one", {}, hoist=False)
        if out is None:
            return None
        kinds = iter(self.code.program("pullback", "one", False)[1].kinds)
        dtype = self.code.dtype
        res = []
        for c in out:
            if c is not None:
                kind = next(kinds)
                if kind == "const":  # (a Python number: of the region's dtype)
                    c = dtype.type(c)
                elif kind == "var":  # a member's value: never handed on itself
                    c = c.copy()
            res.append(c)
        return res

    def pushforward(self, tangents, batched=False):
        has_t = tuple(_array(t) for t in tangents)
        out = None
        if all(h or isinstance(t, Structural) for h, t in zip(has_t, tangents)):
            out = self._run("pushforward", has_t,
                            {f"t{j}": t for j, t in enumerate(tangents) if has_t[j]})
        if out is None:
            return self._unfused_pushforward(tangents, batched)
        if out[0] is None:
            return ZERO
        return out[0] if batched else _fit(out[0], self.shape, self.shape)

    def pullback_with_tangents(self, g, gd, tangents, skip=()):
        return self._with_tangents(g, gd, tangents, skip, None)

    def _with_tangents(self, g, gd, tangents, skip, k):
        """``pullback_with_tangents``; ``k``: ``gd`` and the tangents are
        batches of ``k`` directions (``g`` is shared)."""
        has_gd = _array(gd)
        has_t = tuple(_array(t) for t in tangents)
        if (not _array(g) or not (has_gd or isinstance(gd, Structural))
                or not all(h or isinstance(t, Structural) for h, t in zip(has_t, tangents))):
            return self._unfused_with_tangents(g, gd, tangents, k)
        u = _uniform(g)
        skips = tuple(j in skip for j in self.ins)
        if k is None:
            bind = {f"t{j}": t for j, t in enumerate(tangents) if has_t[j]}
        else:
            n = len(self.shape)
            bind = {f"t{j}": expand_batched(t, s, n)
                    for j, (t, s) in enumerate(zip(tangents, self.in_shapes)) if has_t[j]}
        bind["g"] = g if u is None else u
        if has_gd:
            bind["gd"] = gd
        out = self._run("pullback_with_tangents", (u is not None, has_gd, has_t, skips), bind)
        if out is None:
            return self._unfused_with_tangents(g, gd, tangents, k)
        n, root = len(self.ins), self.shape
        return [(j, ZERO if c is None else _fit(c, s, root),
                 ZERO if d is None else _fit(d, s, root) if k is None
                 else _fit_batched(d, k, s, root))
                for j, c, d, s in zip(self.ins, out[:n], out[n:], self.in_shapes)]

    # batches of directions: the programs broadcast over a leading axis
    batched = True

    def pullback_batched(self, G):
        if not _array(G):
            return self._unfused_pullback(G, True)
        out = self._run("pullback", False, {"g": G})
        if out is None:
            return self._unfused_pullback(G, True)
        k = G.shape[0]
        return [(j, ZERO if c is None else _fit_batched(c, k, s, self.shape))
                for j, c, s in zip(self.ins, out, self.in_shapes)]

    def pushforward_batched(self, tangents):
        n = len(self.shape)
        expanded = tuple(expand_batched(t, s, n) for t, s in zip(tangents, self.in_shapes))
        k = next((t.shape[0] for t in tangents if not isinstance(t, Structural)), 0)
        t = self.pushforward(expanded, True)
        return t if isinstance(t, Structural) else _fit_batched(t, k, self.shape, self.shape)

    def pullback_with_tangents_batched(self, g, GD, tangents, skip=()):
        # (no batched value at all: no tangent to compute, only cotangents)
        k = next((t.shape[0] for t in (GD,) + tuple(tangents) if not isinstance(t, Structural)),
                 0)
        return self._with_tangents(g, GD, tangents, skip, k)

    # -- the members one by one ------------------------------------------------------
    def _member_tangents(self, tangents, batched):
        """Every node's tangent (by NodeId) from the region inputs' ``tangents``."""
        t = dict(zip(self.ins, tangents))
        for j, a in self.alias:
            t[j] = t[a]
        for nid, m in zip(self.nodes, self.members):
            ts = tuple(t.get(j, ZERO) for j in m.inputs())
            t[nid] = (ZERO if all(isinstance(a, Structural) for a in ts)
                      else m.pushforward_batched(ts) if batched else m.pushforward(ts))
        return t

    def _unfused_pushforward(self, tangents, batched):
        return self._member_tangents(tangents, batched)[self.nodes[-1]]

    def _unfused_pullback(self, g, batched):
        return [(j, c) for j, c, _ in self._unfused(g, None, None, batched)]

    def _unfused_with_tangents(self, g, gd, tangents, k):
        return self._unfused(g, gd, self._member_tangents(tangents, k is not None),
                             k is not None)

    def _unfused(self, g, gd, t, batched):
        """The members' own pullbacks (with tangents when ``t`` is given) in
        reverse order: ``(input id, cotangent, its tangent)`` triples."""
        cots = {self.nodes[-1]: (g, gd)}
        for nid, m in zip(reversed(self.nodes), reversed(self.members)):
            c, cd = cots.pop(nid, (ZERO, ZERO))
            if t is None:
                if isinstance(c, Structural):
                    continue
                res = [(j, a, ZERO) for j, a in (m.pullback_batched(c) if batched
                                                  else m.pullback(c))]
            else:
                if isinstance(c, Structural) and isinstance(cd, Structural):
                    continue
                ts = tuple(t.get(j, ZERO) for j in m.inputs())
                res = (m.pullback_with_tangents_batched(c, cd, ts) if batched
                       else m.pullback_with_tangents(c, cd, ts))
            for j, a, ad in res:
                pa, pad = cots.get(j, (ZERO, ZERO))
                cots[j] = (plus(pa, _zero(a)), plus(pad, _zero(ad)))
        for j, a in self.alias:  # a gather's cotangent is its input's
            c, cd = cots.pop(j, (ZERO, ZERO))
            pa, pad = cots.get(a, (ZERO, ZERO))
            cots[a] = (plus(pa, c), plus(pad, cd))
        return [(j,) + cots.get(j, (ZERO, ZERO)) for j in self.ins]
