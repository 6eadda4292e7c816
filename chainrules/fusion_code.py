"""The derivative code of a fused region: the chain rule through a connected
region of elementwise rules, written once as expressions (``elementwise_expr``)
and evaluated as one program per sweep.

A region is described member by member (``Member``): the kind of rule, its
partials as expressions over its own values (``x{k}``, ``y{k}``, ``z{k}``),
and where each traced input comes from (another member, or input ``j`` of
the region). From that this module writes, for the kinds of sweep:

* ``pullback``: the cotangent of every region input, from the root's
  cotangent ``g``;
* ``pullback_with_tangents``: those and their tangents, from ``g``, its
  tangent ``gd`` and the tangents ``t{j}`` of the region inputs (the
  tangents of the members are written inside, never stored);
* ``pushforward``: the root's tangent from the ``t{j}``.

The algebra keeps every product in the form ``scalar * array``: scalar
factors (constant partials, a uniform cotangent) are multiplied together
first, so ``100 * (x - a**2)**2`` pulls a sum's cotangent back as
``(g * 200) * d`` in one pass over the data, where the rules one by one make
three. Structural zeros (a missing tangent, a zero partial) are ``None`` and
drop their terms, as the rules' own ``times`` and ``plus`` do. Products are
reassociated only among scalars, and a negative scalar factor of a sum's term
becomes a subtraction; the results equal the rules' own to a few units in the
last place (``tests/core/test_fusion.py`` states the bound).
"""

import math

import numpy as np

from . import elementwise_expr as ee

__all__ = ["Member", "RegionCode"]

_mul = np.multiply
_add = np.add
_sub = np.subtract
_SCALAR_OPS = frozenset(("multiply", "add", "subtract", "negative", "divide"))


class Member:
    """One rule of a region, as the code needs it.

    ``kind``: ``"unary"``, ``"binary"`` or ``"const"`` (a constant partial);
    ``sources``: per traced argument place (``"x"``, ``"y"``) where its value
    comes from: ``("member", k)``, ``("input", j)`` or None (a constant
    argument); ``partials``: ``{field: Expr or None}`` (unary ``d, d2``;
    binary ``dx, dy, dxx, dxy, dyy``; const ``d``)."""

    __slots__ = ("kind", "sources", "partials")

    def __init__(self, kind, sources, partials):
        self.kind = kind
        self.sources = sources
        self.partials = partials


class _Algebra:
    """Products and sums of expressions with structural zeros (None) and
    scalar factors kept in front. ``scalars``: ids of the variables bound to
    scalars (a uniform cotangent)."""

    def __init__(self, scalars=()):
        self.scalars = set(scalars)
        self.memo = {}

    def scalarish(self, e):
        r = self.memo.get(id(e))
        if r is None:
            r = self.memo[id(e)] = (e.op == "const" or id(e) in self.scalars or (
                e.op in _SCALAR_OPS and all(self.scalarish(a) for a in e.args)))
        return r

    def split(self, e):
        """``(scalar factor or None for one, array factor or None)``."""
        if self.scalarish(e):
            return e, None
        if e.op == "multiply":
            a, b = e.args
            if self.scalarish(a):
                return a, b
            if self.scalarish(b):  # (products commute exactly)
                return b, a
        elif e.op == "negative":  # -a is (-1) a exactly: the sign joins the scalars
            s, p = self.split(e.args[0])
            return self.smul(ee.constant(-1), s), p
        elif (e.op == "divide" and self._weak(e.args[0]) and e.args[0].value in (1, -1)
              and e.args[1].dtype is not None and e.args[1].dtype.kind == "f"):
            # -1 / a is -(1 / a) exactly: the sign joins the scalars
            return (None if e.args[0].value == 1 else ee.constant(-1),
                    ee.apply(np.reciprocal, (e.args[1],)) if e.args[0].value == -1 else e)
        return None, e

    @staticmethod
    def _weak(e):
        return e.op == "const" and type(e.value) in (int, float, complex)

    def smul(self, a, b):
        """The product of two scalar factors (None: one), its constants
        folded into one (kept last: ``g * c``)."""
        if a is None or self._one(a):
            return b
        if b is None or self._one(b):
            return a
        ca, va = self._coefficient(a)
        cb, vb = self._coefficient(b)
        c = ca if cb is None else cb if ca is None else ee.constant(ca.value * cb.value)
        v = va if vb is None else vb if va is None else ee.apply(_mul, (va, vb))
        if c is not None and self._one(c):
            c = None
        if v is None:
            return c if c is not None else ee.constant(1)
        return v if c is None else ee.apply(_mul, (v, c))

    @staticmethod
    def _coefficient(s):
        """A scalar factor as ``(constant or None, the rest or None)``."""
        if s.op == "const":
            return s, None
        if s.op == "multiply" and s.args[1].op == "const":
            return s.args[1], s.args[0]
        return None, s

    def _one(self, e):
        return self._weak(e) and e.value == 1

    def mul(self, a, b):
        if a is None or b is None:
            return None
        for e in (a, b):
            if self._weak(e):
                if e.value == 0:
                    return None  # as the rules' times(g, 0): a structural zero
        sa, pa = self.split(a)
        sb, pb = self.split(b)
        s = self.smul(sa, sb)
        if s is not None and self._one(s):
            s = None
        if pa is None and pb is None:
            return s if s is not None else ee.constant(1)
        if s is not None:
            s, pa, pb = self._fold(s, pa, pb)
        p = pa if pb is None else pb if pa is None else ee.apply(_mul, (pa, pb))
        return p if s is None else ee.apply(_mul, (s, p))

    def _fold(self, s, pa, pb):
        """A constant scalar factor ``s``, a power of two, taken into the
        numerator of an array factor ``c / y`` (``c`` a constant, ``y``
        real): ``2 * (0.5 / y)`` is ``1.0 / y``, one pass over the data
        less. Scaling by a power of two is exact, so both are the same
        number unless ``c / y`` is subnormal (where ``1.0 / y`` is the more
        accurate). Returns ``(s or None, pa, pb)``."""
        if not (self._weak(s) and type(s.value) in (int, float) and s.value
                and math.isfinite(s.value) and math.frexp(s.value)[0] in (0.5, -0.5)):
            return s, pa, pb
        for k, f in enumerate((pa, pb)):
            if (f is not None and f.op == "divide" and self._weak(f.args[0])
                    and type(f.args[0].value) in (int, float)
                    and f.args[1].dtype is not None and f.args[1].dtype.kind == "f"):
                c = s.value * f.args[0].value
                if not math.isfinite(c):
                    break
                f = ee.apply(np.divide, (ee.constant(float(c)), f.args[1]))
                return (None, f, pb) if k == 0 else (None, pa, f)
        return s, pa, pb

    def add(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        sb, pb = self.split(b)
        if pb is not None and sb is not None and self._negative(sb):
            return ee.apply(_sub, (a, self.mul(ee.constant(-sb.value), pb)))
        sa, pa = self.split(a)
        if sa is not None and sb is not None and pa is not None and pb is not None:
            if sa is sb:
                return self.mul(sa, self.add(pa, pb))  # s a + s b: one pass less
            (ca, va), (cb, vb) = self._coefficient(sa), self._coefficient(sb)
            if (va is vb and ca is not None and cb is not None and self._weak(ca)
                    and self._weak(cb) and cb.value == -ca.value):
                return self.mul(sa, ee.apply(_sub, (pa, pb)))  # s a - s b
        if pa is not None and sa is not None and self._negative(sa):
            return ee.apply(_sub, (b, self.mul(ee.constant(-sa.value), pa)))
        return ee.apply(_add, (a, b))

    def _negative(self, s):
        return self._weak(s) and type(s.value) is not complex and s.value < 0


def _member_values(names):
    """The members' values among a program's variables, as (name, member,
    role): ``x3`` is member 3's ``x``."""
    return tuple((n, int(n[1:]), n[0]) for n in sorted(names) if n[0] in "xyz")


class RegionCode:
    """The derivative programs of one region shape (members, region inputs,
    dtype), made on demand per variant and kept: ``program(mode, variant)``
    returns ``(expressions, names)``, the expressions in the order the rule
    returns them (None where structurally zero) and the variables they read.
    """

    def __init__(self, members, n_inputs, dtype):
        self.members = members
        self.n_inputs = n_inputs
        self.dtype = np.dtype(dtype)
        self.programs = {}
        # hoisted subexpressions of the members' values, by index
        self._primals, self._hoisted = [], {}

    def program(self, mode, variant, hoist=True):
        """``(which results are structurally zero, the Program of the
        others, the members' values it reads as (name, member, role), the
        hoisted values it reads: None or (names, indices, the Program that
        computes them, the members' values that one reads))``.

        A subexpression that reads the members' values only (a partial,
        ``1 - y**2``) is hoisted out of the program: the rule computes it
        once and keeps it (``primal(index)``) for every later sweep, as the
        derived rules keep their first partial. ``hoist=False``: the
        program computes them itself (for values evaluated lazily, where a
        kept value is a graph recomputed by every evaluation)."""
        key = (mode, variant, hoist)
        p = self.programs.get(key)
        if p is None:
            exprs = self._write(mode, variant)
            live = [e for e in exprs if e is not None]
            live, hoisted = self._hoist(live) if hoist else (live, None)
            program = ee.Program(live)
            p = self.programs[key] = (tuple(e is None for e in exprs), program,
                                      _member_values(program.names), hoisted)
        return p

    def _hoist(self, exprs):
        """``exprs`` with their largest subexpressions of members' values
        only replaced by variables ``h{index}``; and those variables."""
        primal = {}

        def is_primal(e):
            r = primal.get(id(e))
            if r is None:
                if e.op == "var":
                    r = e.value[0] in "xyz"
                elif e.op == "const":
                    r = True
                else:
                    r = all([is_primal(a) for a in e.args])
                primal[id(e)] = r
            return r

        used, memo = {}, {}

        def swap(e):
            out = memo.get(id(e))
            if out is not None:
                return out
            if e.op in ("var", "const"):
                out = e
            elif is_primal(e):
                k = self._hoisted.get(id(e))
                if k is None:
                    k = self._hoisted[id(e)] = len(self._primals)
                    self._primals.append(e)
                out = ee.placeholder(f"h{k}", e.dtype)
                used[k] = e
            else:
                args = [swap(a) for a in e.args]
                out = e if all(a is b for a, b in zip(args, e.args)) else ee.rebuild(e, args)
            memo[id(e)] = out
            return out

        live = [swap(e) for e in exprs]
        if not used:
            return live, None
        # one program for all of them: what they share is computed once
        ks = tuple(sorted(used))
        prog = ee.Program(tuple(used[k] for k in ks))
        return live, (tuple(f"h{k}" for k in ks), ks, prog, _member_values(prog.names))

    def _var(self, name):
        return ee.placeholder(name, self.dtype)

    def _tangents(self, alg, has_t):
        """The tangent of every member (None: structurally zero), from the
        region inputs' tangents ``t{j}`` (where ``has_t[j]``)."""
        tin = [self._var(f"t{j}") if has_t[j] else None for j in range(self.n_inputs)]
        tm = []

        def of(src):
            if src is None:
                return None
            return tm[src[1]] if src[0] == "member" else tin[src[1]]

        for m in self.members:
            p = m.partials
            if m.kind == "binary":
                sx, sy = m.sources
                t = alg.add(alg.mul(of(sx), p["dx"]), alg.mul(of(sy), p["dy"]))
            else:
                t = alg.mul(of(m.sources[0]), p["d"])
            tm.append(t)
        return tm, of

    def _write(self, mode, variant):
        if mode == "pushforward":
            alg = _Algebra()
            tm, _ = self._tangents(alg, variant)
            return (tm[-1],)
        if mode == "pullback":
            # variant: False, True (a uniform cotangent, bound to a scalar),
            # or "one" (the uniform cotangent 1, a constant)
            uniform = variant
            g = ee.constant(1) if variant == "one" else self._var("g")
            alg = _Algebra((id(g),) if uniform else ())
            cots, _ = self._reverse(alg, g, None, None)
            return tuple(cots)
        # pullback_with_tangents: variant = (uniform g, has gd, has t per input, skip mask)
        uniform, has_gd, has_t, skip = variant
        g = self._var("g")
        alg = _Algebra((id(g),) if uniform else ())
        gd = self._var("gd") if has_gd else None
        tm, of = self._tangents(alg, has_t)
        cots, dots = self._reverse(alg, g, gd, of)
        return tuple(None if skip[j] else cots[j] for j in range(self.n_inputs)) + tuple(dots)

    def _reverse(self, alg, g, gd, of):
        """The region inputs' cotangents (and, with ``of``, their tangents)."""
        n = len(self.members)
        cm, dm = [None] * n, [None] * n
        cm[-1], dm[-1] = g, gd
        cin, din = [None] * self.n_inputs, [None] * self.n_inputs

        def send(src, c, d):
            if src[0] == "member":
                cm[src[1]] = alg.add(cm[src[1]], c)
                dm[src[1]] = alg.add(dm[src[1]], d)
            else:
                cin[src[1]] = alg.add(cin[src[1]], c)
                din[src[1]] = alg.add(din[src[1]], d)

        for k in range(n - 1, -1, -1):
            m, c, d = self.members[k], cm[k], dm[k]
            if c is None and d is None:
                continue
            p = m.partials
            if m.kind == "binary":
                sx, sy = m.sources
                tx = None if of is None else of(sx)
                ty = None if of is None else of(sy)
                for src, first, own, cross, town, tcross in (
                        (sx, p["dx"], p["dxx"], p["dxy"], tx, ty),
                        (sy, p["dy"], p["dyy"], p["dxy"], ty, tx)):
                    if src is None:
                        continue
                    dd = None
                    if of is not None:
                        dd = alg.add(alg.add(alg.mul(d, first),
                                             alg.mul(alg.mul(c, own), town)),
                                     alg.mul(alg.mul(c, cross), tcross))
                    send(src, alg.mul(c, first), dd)
            else:
                src = m.sources[0]
                dd = None
                if of is not None:
                    dd = alg.mul(d, p["d"])
                    if m.kind == "unary":
                        dd = alg.add(dd, alg.mul(alg.mul(c, p["d2"]), of(src)))
                send(src, alg.mul(c, p["d"]), dd)
        return cin, (din if of is not None else None)
