"""Generic property checkers for rules (ours and yours).

``check_rrule(op, *args, **kwargs)`` checks, at one point:

* the primal through the traced path equals the plain call (shape, dtype,
  values);
* the pullback against finite differences along several random directions:
  ``<J^T w, u>`` (rule) against ``<w, J u>`` (finite differences in float64);
* the adjoint identity ``<w, J u> == <J^T w, u>`` between the pushforward
  and the pullback, which needs no finite differences and so holds to
  rounding;
* every cotangent a rule returns has its primal's shape, dtype and
  real/complex kind, inspected *raw*, before the engine would project it;
  integer and bool arguments of closure rules get ``NoTangent()``;
* ``ZeroTangent()`` and all-zero cotangents give zero cotangents;
* calling the pullback twice gives the same answer, the pullback does not
  modify its cotangent, and no input is mutated.

``check_frule`` (alias ``check_jvp``) checks the pushforward against finite
differences; ``check_hvp`` checks ``pullback_with_tangents`` against finite
differences of the gradient, its symmetry ``<u, H v> == <v, H u>`` and its
consistency with the pullback; ``check_rule`` runs any subset of these on
one recording; ``check_grads(f, *args, order=2)`` checks whole functions in
both modes up to ``order`` by nesting ``chainrules.vjp`` / ``chainrules.jvp``.

Positional arguments holding float or complex values (arrays, scalars or
pytrees of them) are differentiated; everything else is constant. Every
checker returns a ``CheckReport`` (truthy) and raises ``CheckFailure`` with
the op, the argument shapes and dtypes, the direction, both numbers and the
relative error. Names start with ``check_`` so pytest never collects them.

Tolerances: finite differences are computed in float64 with an error
estimate (``chainrules.testing.fd``); a comparison passes when
``|rule - fd| <= rtol * scale + 10 * fd_error + atol * |w| |u|`` where
``scale`` is the size of the quantities compared (``|J^T w| |u|`` and
``|w| |J u|``, so ill-conditioned problems get proportionally more room)
and ``rtol`` comes from the lowest precision among inputs and outputs
(``default_rtol``). Identities that need no finite differences use the much
tighter ``adjoint_rtol``.
"""

import dataclasses
import math

import numpy as np

import chainrules as cr
from chainrules import pytree
from chainrules.errors import AutodiffError, HvpNotSupported
from chainrules.graph import MULTI, Select, Tape
from chainrules.registry import ClosureRule, op_name
from chainrules.rule import ReverseRule, rule_name
from chainrules.tangents import NOTANGENT, ZERO, NoTangent, Structural
from chainrules.tracing import Traced, untraced

from .fd import fd_jvp, upcast

__all__ = ["check_rrule", "check_frule", "check_jvp", "check_hvp", "check_rule",
           "check_grads", "check_nondiff", "CheckFailure",
           "FiniteDifferenceUnreliable", "CheckReport", "default_rtol",
           "adjoint_rtol", "finite_difference"]


class CheckFailure(AssertionError):
    """A rule failed a property check."""


class FiniteDifferenceUnreliable(CheckFailure):
    """Finite differences cannot resolve the derivative at this point (a kink,
    a jump or a singularity nearby), so the rule cannot be judged there."""


# -- tolerances -----------------------------------------------------------------
def _eps(dtype):
    return float(np.finfo(np.dtype(dtype)).eps)


def default_rtol(dtype):
    """Relative tolerance of comparisons against finite differences for a
    computation in ``dtype``: 1e-9 for float64/complex128, 1e-4 for
    float32/complex64, ~0.1 for float16."""
    return max(1e-9, 16.0 * _eps(dtype) ** 0.75)


def adjoint_rtol(dtype):
    """Relative tolerance of identities that hold to rounding (adjoint
    identity, HVP symmetry, primal): ~1e-12 for float64, 1e-4 for float32."""
    return min(default_rtol(dtype), 4096.0 * _eps(dtype))


# -- small helpers ------------------------------------------------------------------
def _inexact(x):
    if x is None or isinstance(x, (bool, np.bool_, Structural)):
        return False
    if isinstance(x, Traced):
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "fc"
    return isinstance(x, (float, complex))


def _integral(x):
    if isinstance(x, (bool, int, np.bool_, np.integer)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "biu"


def _has_inexact(a):
    return any(_inexact(leaf) for leaf in pytree.flatten(a)[0])


def _as64(x):
    a = np.asarray(x)
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _usable(x):
    return _inexact(x) and not isinstance(x, Traced)


def _inner(a_leaves, b_leaves):
    """Real pairing Re(sum(a * b)) over matching leaves, in float64."""
    s = 0.0
    for a, b in zip(a_leaves, b_leaves):
        if _usable(a) and _usable(b):
            s += float(np.sum(np.real(_as64(a) * _as64(b))))
    return s


def _norm(leaves):
    s = 0.0
    for a in leaves:
        if _usable(a):
            s += float(np.sum(np.abs(_as64(a)) ** 2))
    return math.sqrt(s)


def _diff_norm(a_leaves, b_leaves):
    s = 0.0
    for a, b in zip(a_leaves, b_leaves):
        ua, ub = _usable(a), _usable(b)
        if ua and ub:
            s += float(np.sum(np.abs(_as64(a) - _as64(b)) ** 2))
        elif ua:
            s += float(np.sum(np.abs(_as64(a)) ** 2))
        elif ub:
            s += float(np.sum(np.abs(_as64(b)) ** 2))
    return math.sqrt(s)


def _random_leaf(x, rng):
    if not _inexact(x):
        return NOTANGENT
    v = untraced(x)
    a = np.asarray(v)
    if a.dtype.kind == "c":
        r = (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)) / math.sqrt(2)
    else:
        r = rng.standard_normal(a.shape)
    r = r.astype(a.dtype)
    return r if isinstance(v, np.ndarray) else r[()]


def _copy_arrays(tree):
    leaves, _ = pytree.flatten(tree)
    return [np.array(leaf, copy=True) if isinstance(leaf, np.ndarray) else None
            for leaf in leaves]


def _mutated(tree, snap):
    leaves, _ = pytree.flatten(tree)
    for i, (leaf, s) in enumerate(zip(leaves, snap)):
        if s is not None and (leaf.shape != s.shape or not np.array_equal(
                leaf, s, equal_nan=True)):
            return i
    return None


def _fmt_value(a):
    if isinstance(a, (float, np.floating)):
        return f"{float(a):.17g}"
    return repr(a)


def _summary(leaves):
    parts = []
    for leaf in leaves:
        if not _usable(leaf):
            continue
        a = np.asarray(leaf)
        if a.size <= 6:
            parts.append(np.array2string(a, precision=4, separator=", "))
        else:
            parts.append(f"<{a.dtype} array {a.shape}, norm {np.linalg.norm(a):.4g}>")
    return "; ".join(parts) or "-"


def _describe_value(a, depth=0):
    if isinstance(a, np.ndarray):
        return f"{a.dtype}{list(a.shape)}"
    if isinstance(a, np.generic):
        return f"{a.dtype}({a!r})"
    if isinstance(a, (list, tuple)) and depth < 2:
        inner = ", ".join(_describe_value(b, depth + 1) for b in a[:6])
        more = ", ..." if len(a) > 6 else ""
        return f"[{inner}{more}]" if isinstance(a, list) else f"({inner}{more})"
    if isinstance(a, dict) and depth < 2:
        return "{" + ", ".join(f"{k!r}: {_describe_value(v, depth + 1)}"
                               for k, v in list(a.items())[:6]) + "}"
    r = repr(a)
    return r if len(r) <= 40 else r[:37] + "..."


def _op_label(op):
    if op is None:
        return "f"
    name = getattr(op, "__name__", "")
    if name == "<lambda>":
        return "lambda"
    return op_name(op).replace("numpy.", "np.")


def describe(op, args, kwargs):
    """``np.sin(float64[2, 3], axis=0)``: the op and its arguments' kinds."""
    parts = [_describe_value(a) for a in args]
    parts += [f"{k}={_describe_value(v)}" for k, v in kwargs.items()]
    return f"{_op_label(op)}({', '.join(parts)})"


def _lowest_precision(leaves):
    best = None
    for leaf in leaves:
        if _inexact(leaf):
            dt = np.asarray(untraced(leaf)).dtype
            if best is None or _eps(dt) > _eps(best):
                best = dt
    return best if best is not None else np.dtype(np.float64)


# -- the report ---------------------------------------------------------------------
@dataclasses.dataclass
class CheckReport:
    """What a checker verified. Truthy, so ``assert check_rrule(...)`` works.

    name:     the op (or function) checked
    modes:    the modes checked, e.g. ["rrule", "frule", "hvp"]
    checks:   number of numerical comparisons made
    worst:    worst relative error seen (error / size of the compared values)
    worst_at: which comparison gave it
    """

    name: str
    modes: list = dataclasses.field(default_factory=list)
    checks: int = 0
    worst: float = 0.0
    worst_at: str = ""

    def __bool__(self):
        return True

    def record(self, what, rel):
        self.checks += 1
        if rel > self.worst or not self.worst_at:
            self.worst = max(rel, self.worst)
            self.worst_at = what

    def add_mode(self, mode):
        if mode not in self.modes:
            self.modes.append(mode)

    def merge(self, other):
        for m in other.modes:
            self.add_mode(m)
        self.checks += other.checks
        if other.worst > self.worst:
            self.worst, self.worst_at = other.worst, other.worst_at
        return self

    def __repr__(self):
        return (f"CheckReport({self.name}: {'+'.join(self.modes)}, {self.checks} checks, "
                f"worst relative error {self.worst:.2g})")


class _Context:
    """Tolerances and reporting shared by the comparisons of one check."""

    def __init__(self, desc, dtype, rtol, atol, report):
        self.desc = desc
        self.dtype = np.dtype(dtype)
        base = default_rtol(self.dtype)
        self.rtol = base if rtol is None else float(rtol)
        self.adj = adjoint_rtol(self.dtype) * max(1.0, self.rtol / base)
        self.atol = 0.0 if atol is None else float(atol)
        self.report = report

    def fail(self, msg):
        raise CheckFailure(f"{msg}\n  in {self.desc}")

    def scalar(self, what, a, b, scale, tol, where, labels=("rule", "finite differences")):
        err = abs(a - b)
        rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
        self.report.record(what, rel)
        if not err <= tol:
            where = where() if callable(where) else where
            self.fail(
                f"{what} failed\n  {where}\n"
                f"  {labels[0]}: {_fmt_value(a)}\n  {labels[1]}: {_fmt_value(b)}\n"
                f"  abs err {err:.3g}, relative error {rel:.3g} (of scale {scale:.3g}), "
                f"tolerance {tol:.3g} (rtol {self.rtol:.2g}, dtype {self.dtype})")

    def vector(self, what, a_leaves, b_leaves, tol_extra, where,
               labels=("rule", "finite differences"), rtol=None):
        rtol = self.rtol if rtol is None else rtol
        na, nb = _norm(a_leaves), _norm(b_leaves)
        err = _diff_norm(a_leaves, b_leaves)
        scale = max(na, nb)
        tol = rtol * scale + tol_extra
        rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
        self.report.record(what, rel)
        if not err <= tol:
            where = where() if callable(where) else where
            worst = ""
            for a, b in zip(a_leaves, b_leaves):
                if _usable(a) and _usable(b):
                    d = np.abs(_as64(a) - _as64(b))
                    if d.size:
                        i = np.unravel_index(int(np.argmax(d)), d.shape)
                        worst = (f"\n  worst entry {tuple(int(j) for j in i)}: "
                                 f"{labels[0]} {_fmt_value(np.asarray(a)[i])}, "
                                 f"{labels[1]} {_fmt_value(np.asarray(b)[i])}")
                        break
            self.fail(
                f"{what} failed\n  {where}\n"
                f"  {labels[0]}: {_summary(a_leaves)}\n  {labels[1]}: {_summary(b_leaves)}"
                f"{worst}\n  |difference| {err:.3g}, relative error {rel:.3g} "
                f"(norms {na:.3g} vs {nb:.3g}), tolerance {tol:.3g} "
                f"(rtol {rtol:.2g}, dtype {self.dtype})")

    def fd_reliable(self, fd, fd_leaves, where):
        size = _norm(fd_leaves)
        if fd.truncation > 1e-6 * size + 100.0 * fd.roundoff:
            where = where() if callable(where) else where
            raise FiniteDifferenceUnreliable(
                f"finite differences cannot resolve the derivative {where}: the "
                f"estimated truncation error {fd.truncation:.3g} is large against a "
                f"derivative of norm {size:.3g} (step {fd.step:.3g}); the input is "
                "probably at or near a kink, jump or singularity. Sample inputs away "
                "from non-differentiable points (see the domains of "
                f"chainrules.testing.strategies).\n  in {self.desc}")


# -- recording a function on a private tape, with raw sweeps --------------------------
class _Recording:
    """``fun(*primals)`` traced once; sweeps that check every rule's raw output
    (shape, dtype, kind) before projecting it as the engine would."""

    def __init__(self, fun, primals, ctx, op=None, int_positions=()):
        self.ctx = ctx
        self.op = op
        self.int_positions = tuple(int_positions)
        tape = self.tape = Tape()
        self.leaf_ids = []
        self.leaves = []
        self.defs = []
        traced = []
        for p in primals:
            leaves, td = pytree.flatten(p)
            self.defs.append((td, len(leaves)))
            tl = []
            for leaf in leaves:
                self.leaves.append(leaf)
                if _inexact(leaf):
                    v = leaf
                    if isinstance(v, float):
                        v = np.float64(v)
                    elif isinstance(v, complex):
                        v = np.complex128(v)
                    nid = tape.leaf(v)
                    tl.append(Traced(v, nid, tape))
                    self.leaf_ids.append(nid)
                else:
                    tl.append(leaf)
                    self.leaf_ids.append(None)
            traced.append(pytree.unflatten(td, tl))
        try:
            out = fun(*traced)
        finally:
            tape.active = False
        leaves, self.out_def = pytree.flatten(out)
        self.out_nodes = [leaf.node if type(leaf) is Traced and leaf.tape is tape else None
                          for leaf in leaves]
        self.out_values = [leaf.value if type(leaf) is Traced and leaf.tape is tape
                           else leaf for leaf in leaves]
        self.escaped = [type(leaf) is Traced for leaf in leaves]
        self.output = pytree.unflatten(self.out_def, self.out_values)

    # structure helpers
    def unflatten_primals(self, leaves):
        out, pos = [], 0
        for td, n in self.defs:
            out.append(pytree.unflatten(td, list(leaves[pos:pos + n])))
            pos += n
        return tuple(out)

    def rules(self):
        return [(i, r) for i, r in enumerate(self.tape.rules)
                if r is not None and not isinstance(r, Select)]

    def outputs_of(self, i):
        """(shape, dtype) per output of node ``i`` (None for outputs without a
        derivative of a multi-output node)."""
        tape = self.tape
        if tape.shapes[i] is not MULTI:
            return None
        outs = [None] * tape.dtypes[i]
        for j, r in enumerate(tape.rules):
            if isinstance(r, Select) and r.parent == i:
                outs[r.k] = (tape.shapes[j], tape.dtypes[j])
        return outs

    # raw kind check
    def check_tangent(self, c, nid, rule, where, role="cotangent"):
        shape, dtype = self.tape.shapes[nid], self.tape.dtypes[nid]
        if shape is MULTI:
            return
        name = rule_name(rule)
        what = "an input" if role == "cotangent" else "its output"
        if isinstance(c, Traced):
            c = untraced(c)
        if isinstance(c, (bool, np.bool_)):
            self.ctx.fail(f"{where} of rule {name} returned a bool {role} for {what} of "
                          f"dtype {dtype}")
        if isinstance(c, (int, float, complex)) and not isinstance(c, np.generic):
            if shape != ():
                self.ctx.fail(f"{where} of rule {name} returned the Python number {c!r} "
                              f"as the {role} of {what} of shape {shape}; return an "
                              "array of that shape")
            if isinstance(c, complex) and dtype.kind != "c":
                self.ctx.fail(f"{where} of rule {name} returned a complex {role} for "
                              f"{what} of real dtype {dtype}; take np.real of it")
            return
        cs, cd = getattr(c, "shape", None), getattr(c, "dtype", None)
        if cs is None or cd is None:
            self.ctx.fail(f"{where} of rule {name} returned a {type(c).__name__} as the "
                          f"{role} of {what} (shape {shape}, dtype {dtype}); return an "
                          "array, ZeroTangent() or NoTangent()")
        if tuple(cs) != tuple(shape):
            hint = ""
            try:
                if np.broadcast_shapes(cs, shape) == tuple(cs):
                    hint = ("; the input was broadcast: sum the cotangent back with "
                            "chainrules.unbroadcast(g, x.shape)")
            except ValueError:
                pass
            self.ctx.fail(f"{where} of rule {name} returned a {role} of shape "
                          f"{tuple(cs)} for {what} of shape {tuple(shape)}{hint}")
        if cd != dtype:
            if cd.kind == "c" and dtype.kind != "c":
                hint = ("a complex value for a real primal: take np.real of it (the "
                        "pairing of cotangent c and tangent t is Re(sum(c * t)))")
            elif cd.kind != "c" and dtype.kind == "c":
                hint = ("a real value for a complex primal: the imaginary part is "
                        "missing")
            elif cd.kind not in "fc":
                hint = "an integer/bool value: tangents are float or complex"
            else:
                hint = (f"{dtype} must stay {dtype}: compute in the primal's dtype "
                        "(cast constants with x.dtype, avoid np.float64 scalars)")
            self.ctx.fail(f"{where} of rule {name} returned a {role} of dtype {cd} for "
                          f"{what} of dtype {dtype}: {hint}")

    def _check_closure_ints(self, rule, g):
        if not self.int_positions or type(rule) is not ClosureRule or rule.op is not self.op:
            return
        res = rule.pb(g)
        if not isinstance(res, (tuple, list)):
            res = (res,)
        for i in self.int_positions:
            if i < len(res) and not isinstance(res[i], NoTangent):
                self.ctx.fail(
                    f"the pullback of rule {rule_name(rule)} returned {type(res[i]).__name__}"
                    f" for argument {i}, which is an integer/bool value: return "
                    "NoTangent() for arguments without a derivative")

    # sweeps
    def _seed(self, w_leaves):
        n = len(self.tape.rules)
        cots = [None] * n
        for nid, w in zip(self.out_nodes, w_leaves):
            if nid is None or w is None or isinstance(w, Structural):
                continue
            cots[nid] = w if cots[nid] is None else cots[nid] + w
        return cots

    def _accumulate(self, buf, nid, c, rule, where, role="cotangent"):
        tape = self.tape
        if tape.shapes[nid] is MULTI:
            k, ck = c
            if ck is None or isinstance(ck, Structural):
                return
            slots = buf[nid]
            if slots is None:
                slots = buf[nid] = [None] * tape.dtypes[nid]
            slots[k] = ck if slots[k] is None else slots[k] + ck
            return
        if c is None or isinstance(c, Structural):
            return
        self.check_tangent(c, nid, rule, where, role)
        c = tape._project(c, nid, rule)
        buf[nid] = c if buf[nid] is None else buf[nid] + c

    def backward(self, w_leaves):
        """Raw reverse sweep: the cotangent of every primal leaf."""
        tape = self.tape
        cots = self._seed(w_leaves)
        for i in range(len(tape.rules) - 1, -1, -1):
            g, rule = cots[i], tape.rules[i]
            if g is None or rule is None:
                continue
            cots[i] = None
            if tape.shapes[i] is MULTI:
                g = tuple(ZERO if t is None else t for t in g)
            snap = _copy_arrays(g)
            pairs = rule.pullback(g)
            if _mutated(g, snap) is not None:
                self.ctx.fail(f"the pullback of rule {rule_name(rule)} modified the "
                              "cotangent it was given (an in-place update); compute "
                              "a new array instead")
            self._check_closure_ints(rule, g)
            for nid, c in pairs:
                self._accumulate(cots, nid, c, rule, "the pullback")
        return [NOTANGENT if nid is None else (ZERO if cots[nid] is None else cots[nid])
                for nid in self.leaf_ids]

    def forward(self, u_leaves):
        """Raw forward sweep: ``(tangent of every output leaf, node tangents)``."""
        tape = self.tape
        tans = [None] * len(tape.rules)
        for nid, u in zip(self.leaf_ids, u_leaves):
            if nid is not None and not isinstance(u, Structural):
                tans[nid] = u
        for i, rule in enumerate(tape.rules):
            if rule is None:
                continue
            ts = [tans[j] for j in rule.inputs()]
            if all(t is None for t in ts):
                continue
            ts = tuple(ZERO if t is None else t for t in ts)
            t = tape._pushforward(rule, ts, i)
            if t is None or isinstance(t, Structural):
                continue
            if tape.shapes[i] is not MULTI and not isinstance(rule, Select):
                self.check_tangent(t, i, rule, "the pushforward", "tangent")
            tans[i] = t
        outs = []
        for nid, v in zip(self.out_nodes, self.out_values):
            if nid is not None and tans[nid] is not None:
                outs.append(tans[nid])
            elif _inexact(v):
                outs.append(np.zeros(np.shape(v), np.asarray(v).dtype))
            else:
                outs.append(NOTANGENT)
        return outs, tans

    def backward_with_tangents(self, w_leaves, tans):
        """Raw reverse sweep carrying tangents: ``(cotangents, their tangents)``
        per primal leaf, for the seed ``w`` (held constant)."""
        tape = self.tape
        n = len(tape.rules)
        cots = self._seed(w_leaves)
        dots = [None] * n
        for i in range(n - 1, -1, -1):
            g, gd, rule = cots[i], dots[i], tape.rules[i]
            if (g is None and gd is None) or rule is None:
                continue
            cots[i] = dots[i] = None
            if tape.shapes[i] is MULTI:
                g = ZERO if g is None else tuple(ZERO if t is None else t for t in g)
                gd = ZERO if gd is None else tuple(ZERO if t is None else t for t in gd)
            else:
                g = ZERO if g is None else g
                gd = ZERO if gd is None else gd
            ts = tuple(ZERO if tans[j] is None else tans[j] for j in rule.inputs())
            triples = rule.pullback_with_tangents(g, gd, ts)
            for nid, c, cd in triples:
                self._accumulate(cots, nid, c, rule, "pullback_with_tangents")
                if cd is not None:
                    self._accumulate(dots, nid, cd, rule,
                                     "pullback_with_tangents (tangent of the cotangent)")

        def leafs(buf):
            return [NOTANGENT if nid is None else (ZERO if buf[nid] is None else buf[nid])
                    for nid in self.leaf_ids]

        return leafs(cots), leafs(dots)


def _by_node(pairs, k=1):
    out = {}
    for item in pairs:
        nid, v = item[0], item[k]
        if v is None or isinstance(v, Structural):
            out.setdefault(nid, ZERO)
            continue
        prev = out.get(nid)
        out[nid] = v if prev is None or isinstance(prev, Structural) else prev + v
    return out


def _diff_positions(args, wrt, who, desc):
    """Positions of the differentiated arguments: ``wrt`` or every positional
    argument holding float/complex values."""
    if wrt is None:
        idx = [i for i, a in enumerate(args) if _has_inexact(a)]
    else:
        wrt = (wrt,) if isinstance(wrt, int) else tuple(wrt)
        if any(not -len(args) <= int(i) < len(args) for i in wrt):
            raise ValueError(f"{who}: wrt={wrt} is out of range for {len(args)} "
                             f"positional arguments in {desc}")
        idx = sorted({int(i) % len(args) for i in wrt})
        bad = [i for i in idx if not _has_inexact(args[i])]
        if bad:
            raise ValueError(f"{who}: wrt={wrt} names argument(s) {bad} that hold no "
                             f"float or complex value in {desc}")
    if not idx:
        raise ValueError(f"{who}: no float or complex positional argument to "
                         f"differentiate in {desc}")
    return idx


# -- the checker of one op at one point ------------------------------------------------
class _RuleCheck:
    def __init__(self, op, args, kwargs, call=None, rtol=None, atol=None, rng=None,
                 directions=3, who="check_rrule", wrt=None):
        self.op = op
        self.f = call if call is not None else op
        self.args = args
        self.kwargs = kwargs
        self.desc = describe(op, args, kwargs)
        self.idx = _diff_positions(args, wrt, who, self.desc)
        self.primals = tuple(args[i] for i in self.idx)
        self.snap = _copy_arrays((args, kwargs))
        self.rng = np.random.default_rng(0) if rng is None else rng
        self.directions = max(1, int(directions))
        self.report = CheckReport(_op_label(op))
        f, idx, kw = self.f, self.idx, kwargs

        def fun(*d):
            full = list(args)
            for i, v in zip(idx, d):
                full[i] = v
            return f(*full, **kw)

        self.fun = fun
        expected = f(*args, **kwargs)
        self.check_unmutated("the plain call")
        int_pos = [i for i, a in enumerate(args) if _integral(a)] if call is None else []
        ctx = _Context(self.desc, np.float64, None, None, self.report)
        self.rec = _Recording(fun, self.primals, ctx, op, int_pos)
        self.check_unmutated("the traced call")
        dtype = _lowest_precision(self.rec.leaves + self.rec.out_values)
        self.ctx = ctx = _Context(self.desc, dtype, rtol, atol, self.report)
        self.rec.ctx = ctx
        self._check_primal(expected)
        self.p_leaves = self.rec.leaves
        self.us = [[_random_leaf(x, self.rng) for x in self.p_leaves]
                   for _ in range(self.directions)]
        self.ws = [[_random_leaf(y, self.rng) for y in self.rec.out_values]
                   for _ in range(self.directions)]
        self._fd = {}
        self._ct = {}
        self._ju = {}

    # -- basic properties
    def check_unmutated(self, when):
        i = _mutated((self.args, self.kwargs), self.snap)
        if i is not None:
            raise CheckFailure(f"{when} mutated an input (argument leaf {i}) of "
                               f"{self.desc}; rules must not write into their inputs")

    def _check_primal(self, expected):
        ctx = self.ctx
        if any(self.rec.escaped[j] and self.rec.out_nodes[j] is None
               for j in range(len(self.rec.escaped))):
            ctx.fail("the traced call returned a traced value of another tape")
        exp_leaves = pytree.flatten(expected)[0]
        got = self.rec.out_values
        if len(exp_leaves) != len(got):
            ctx.fail(f"the traced call returned {len(got)} values, the plain call "
                     f"{len(exp_leaves)}")
        for k, (a, b) in enumerate(zip(got, exp_leaves)):
            sa, sb = np.shape(a), np.shape(b)
            if sa != sb:
                ctx.fail(f"primal output {k}: shape {sa} through the rule, {sb} from the "
                         "plain call")
            da, db = np.result_type(a), np.result_type(b)
            if da != db:
                ctx.fail(f"primal output {k}: dtype {da} through the rule, {db} from the "
                         "plain call (float32 must stay float32)")
            if _inexact(b) and not np.all(np.isfinite(b)):
                ctx.fail(f"primal output {k} of the plain call is not finite ({b!r}): "
                         "sample inputs inside the op's domain")
            if _inexact(b):
                self.ctx.vector(f"primal output {k} vs the plain call", [a], [b],
                                ctx.atol * math.sqrt(max(1, np.size(b))),
                                "at the sampled point", ("rule", "plain call"),
                                rtol=ctx.adj)
            elif not np.array_equal(np.asarray(a), np.asarray(b)):
                ctx.fail(f"primal output {k} differs from the plain call: {a!r} vs {b!r}")

    def where(self, k):
        return (f"along direction #{k}: u = {_summary(self.us[k])}; "
                f"w = {_summary(self.ws[k])}")

    def fd(self, k):
        if k not in self._fd:
            r = fd_jvp(self.fun, upcast(self.primals),
                       self.rec.unflatten_primals(self.us[k]))
            leaves = pytree.flatten(r.value)[0]
            self.ctx.fd_reliable(r, leaves, lambda: self.where(k))
            self._fd[k] = (r, leaves)
        return self._fd[k]

    def cotangent(self, k):
        if k not in self._ct:
            self._ct[k] = self.rec.backward(self.ws[k])
        return self._ct[k]

    def pushforward(self, k):
        if k not in self._ju:
            self._ju[k] = self.rec.forward(self.us[k])[0]
        return self._ju[k]

    # -- modes
    def rrule(self, adjoint=True):
        ctx = self.ctx
        self.report.add_mode("rrule")
        for k in range(self.directions):
            u, w = self.us[k], self.ws[k]
            ct = self.cotangent(k)
            self.check_unmutated("the pullback")
            r, fdl = self.fd(k)
            a, b = _inner(ct, u), _inner(w, fdl)
            nw, nu = _norm(w), _norm(u)
            scale = max(_norm(ct) * nu, nw * _norm(fdl))
            tol = ctx.rtol * scale + 10.0 * nw * r.error + ctx.atol * nw * nu
            ctx.scalar("pullback vs finite differences: <J^T w, u> vs <w, J u>",
                       a, b, scale, tol, lambda: self.where(k))
            if adjoint:
                try:
                    ju = self.pushforward(k)
                except AutodiffError as e:
                    raise CheckFailure(
                        f"the pushforward (forward mode) failed, so the adjoint identity "
                        f"cannot be checked: {type(e).__name__}: {e}\n  in {self.desc}\n"
                        "  (pass adjoint=False to check the reverse mode alone)") from e
                c = _inner(w, ju)
                scale2 = max(_norm(ct) * nu, nw * _norm(ju))
                ctx.scalar("adjoint identity <w, J u> == <J^T w, u>", c, a, scale2,
                           ctx.adj * scale2 + ctx.atol * nw * nu, lambda: self.where(k),
                           ("pushforward", "pullback"))
        # the pullback again gives the same answer
        again = self.rec.backward(self.ws[0])
        for c1, c2 in zip(self.cotangent(0), again):
            if _usable(c1) and not np.array_equal(np.asarray(c1), np.asarray(c2),
                                                  equal_nan=True):
                ctx.fail("calling the pullback twice gave different cotangents (does it "
                         "modify saved values in place?)")
        self._zero_cotangents()
        self.check_unmutated("the pullback")

    def _zero_cotangents(self):
        """Zero cotangents give zero cotangents. Structural zeros are tried
        where the engine passes them: whole for rules marked ``linear`` (the
        default ``pullback_with_tangents`` calls ``pullback(ZeroTangent())``),
        per output for rules with several outputs."""
        ctx, rec = self.ctx, self.rec
        for i, rule in rec.rules():
            outs = rec.outputs_of(i)
            if outs is None:
                shape, dtype = rec.tape.shapes[i], rec.tape.dtypes[i]
                structural, zeros = ZERO, np.zeros(shape, dtype)
            else:
                structural = tuple(ZERO for _ in outs)
                zeros = tuple(ZERO if o is None else np.zeros(o[0], o[1]) for o in outs)
            trials = [(zeros, "an all-zero array")]
            if getattr(rule, "linear", False) and type(rule).pullback_with_tangents is \
                    ReverseRule.pullback_with_tangents:
                trials.append((structural, "ZeroTangent()"))
            for g, label in trials:
                try:
                    pairs = rule.pullback(g)
                except Exception as e:  # noqa: BLE001 - reported with context
                    ctx.fail(f"the pullback of rule {rule_name(rule)} raised "
                             f"{type(e).__name__} for the cotangent {label}: {e}. "
                             "Rules must accept structural zeros (return ZeroTangent() "
                             "or zeros)")
                for nid, c in pairs:
                    if rec.tape.shapes[nid] is MULTI:
                        c = c[1]
                    if c is None or isinstance(c, Structural):
                        continue
                    rec.check_tangent(c, nid, rule, f"the pullback (of {label})")
                    a = np.asarray(untraced(c))
                    if np.any(a != 0):
                        ctx.fail(f"the pullback of rule {rule_name(rule)} returned a "
                                 f"nonzero cotangent for the cotangent {label}")
            if outs is not None:
                # one output at a time: ZeroTangent() and zeros must agree
                live = [o for o in outs if o is not None]
                if len(live) < 2:
                    continue
                for k, o in enumerate(outs):
                    if o is None:
                        continue
                    rnd = [ZERO if p is None else _random_leaf(np.zeros(p[0], p[1]),
                                                               self.rng) for p in outs]
                    g1 = tuple(ZERO if j == k else r for j, r in enumerate(rnd))
                    g2 = tuple(np.zeros(o[0], o[1]) if j == k else r
                               for j, r in enumerate(rnd))
                    try:
                        c1 = _by_node(rule.pullback(g1))
                    except Exception as e:  # noqa: BLE001 - reported with context
                        ctx.fail(f"the pullback of rule {rule_name(rule)} raised "
                                 f"{type(e).__name__} when output {k} of its {len(outs)} "
                                 f"outputs had the cotangent ZeroTangent() (unused output): "
                                 f"{e}. Multi-output rules must accept structural zeros")
                    c2 = _by_node(rule.pullback(g2))
                    for nid in set(c1) | set(c2):
                        ctx.vector(f"pullback with output {k} as ZeroTangent() vs zeros",
                                   [c1.get(nid, ZERO)], [c2.get(nid, ZERO)], 0.0,
                                   f"rule {rule_name(rule)}",
                                   ("ZeroTangent()", "zeros"), rtol=ctx.adj)

    def frule(self):
        ctx = self.ctx
        self.report.add_mode("frule")
        for k in range(self.directions):
            ju = self.pushforward(k)
            self.check_unmutated("the pushforward")
            r, fdl = self.fd(k)
            ctx.vector("pushforward vs finite differences: J u", ju, fdl,
                       10.0 * r.error + ctx.atol * _norm(self.us[k]), lambda: self.where(k))

    def hvp(self, fast=None):
        """``fast``: None accepts the nested fallback when a rule has no
        ``pullback_with_tangents``; True requires the fast path."""
        ctx, rec = self.ctx, self.rec
        v = self.us[0]
        u = self.us[1] if self.directions > 1 else [_random_leaf(x, self.rng)
                                                     for x in self.p_leaves]
        w = self.ws[0]
        try:
            g, hv = rec.backward_with_tangents(w, rec.forward(v)[1])
            _, hu = rec.backward_with_tangents(w, rec.forward(u)[1])
            mode = "hvp"
        except HvpNotSupported as e:
            if fast:
                raise CheckFailure(f"pullback_with_tangents is not supported: {e}\n"
                                   f"  in {self.desc}") from e
            hv, hu = self._nested_hvp(w, v), self._nested_hvp(w, u)
            g = None
            mode = "hvp(nested)"
        self.report.add_mode(mode)
        self.check_unmutated("the HVP")
        if g is not None:
            ctx.vector("pullback_with_tangents cotangent vs pullback", g,
                       self.cotangent(0), 0.0, "for the seed w of direction #0",
                       ("pullback_with_tangents", "pullback"), rtol=ctx.adj)
            self._hvp_consistency()
        nu, nv = _norm(u), _norm(v)
        a, b = _inner(u, hv), _inner(v, hu)
        scale = max(nu * _norm(hv), nv * _norm(hu))
        ctx.scalar("HVP symmetry <u, H v> == <v, H u>", a, b, scale,
                   ctx.adj * scale + ctx.atol * nu * nv,
                   lambda: f"u = {_summary(u)}; v = {_summary(v)}", ("<u, H v>", "<v, H u>"))
        grad_fun = self._gradient_function(w)
        r = fd_jvp(grad_fun, upcast(self.primals), rec.unflatten_primals(v))
        fdl = pytree.flatten(r.value)[0]
        def where():
            return f"along v = {_summary(v)} with output cotangent w = {_summary(w)}"

        ctx.fd_reliable(r, fdl, where)
        ctx.vector("HVP vs finite differences of the gradient", hv, fdl,
                   10.0 * r.error + ctx.atol * nv, where)

    def _gradient_function(self, w):
        fun = self.fun

        def gradient(*p):
            return cr.vjp(fun, *p)[1](pytree.unflatten(self.rec.out_def, w))

        return gradient

    def _nested_hvp(self, w, v):
        grad_fun = self._gradient_function(w)
        _, hv = cr.jvp(grad_fun, self.primals, self.rec.unflatten_primals(v))
        return pytree.flatten(hv)[0]

    def _hvp_consistency(self):
        """pullback_with_tangents agrees with pullback where no second-order
        term is involved."""
        ctx, rec = self.ctx, self.rec
        tape = rec.tape
        for i, rule in rec.rules():
            outs = rec.outputs_of(i)

            def rand_out():
                if outs is None:
                    return _random_leaf(np.zeros(tape.shapes[i], tape.dtypes[i]), self.rng)
                return tuple(ZERO if o is None else _random_leaf(np.zeros(o[0], o[1]),
                                                                 self.rng) for o in outs)

            ins = rule.inputs()
            ts = tuple(_random_leaf(np.zeros(tape.shapes[j], tape.dtypes[j]), self.rng)
                       if tape.shapes[j] is not MULTI else ZERO for j in ins)
            g, gd = rand_out(), rand_out()
            pb_g, pb_gd = _by_node(rule.pullback(g)), _by_node(rule.pullback(gd))
            name = rule_name(rule)
            cases = (
                ("pullback_with_tangents(g, ZeroTangent(), t) cotangent vs pullback(g)",
                 rule.pullback_with_tangents(g, ZERO, ts), 1, pb_g),
                ("pullback_with_tangents(ZeroTangent(), gd, t) tangent vs pullback(gd)",
                 rule.pullback_with_tangents(ZERO, gd, ts), 2, pb_gd),
                ("pullback_with_tangents(g, gd, zero tangents) tangent vs pullback(gd)",
                 rule.pullback_with_tangents(g, gd, tuple(ZERO for _ in ins)), 2, pb_gd),
            )
            for what, triples, pos, ref in cases:
                got = _by_node(triples, pos)
                for nid in set(got) | set(ref):
                    if tape.shapes[nid] is MULTI:
                        continue
                    ctx.vector(what, [got.get(nid, ZERO)], [ref.get(nid, ZERO)], 0.0,
                               f"rule {name}, input node {int(nid)}",
                               ("pullback_with_tangents", "pullback"), rtol=ctx.adj)
            zc = _by_node(rule.pullback_with_tangents(ZERO, gd, ts), 1)
            for nid, c in zc.items():
                if not isinstance(c, Structural) and np.any(
                        np.asarray(untraced(c)) != 0):
                    ctx.fail(f"pullback_with_tangents of rule {name} returned a nonzero "
                             "cotangent for the cotangent ZeroTangent()")


# -- public checkers -----------------------------------------------------------------
_COMMON = """
    Common keyword arguments (everything else is passed to the op):

    call:      how to apply the op when it is not ``op(*args, **kwargs)``, for
               operators and methods, e.g. ``call=lambda x, i: x[i]``
    wrt:       positions of the arguments to differentiate (default: every
               positional argument holding float or complex values)
    rtol/atol: override the tolerances derived from the dtype
    rng:       a NumPy ``Generator`` for the random directions
    op_kwargs: keyword arguments for the op whose names clash with the
               checker's own (``rtol``, ``atol``, ...)
"""


def _merge_kwargs(kwargs, op_kwargs):
    if op_kwargs:
        kwargs = dict(kwargs)
        kwargs.update(op_kwargs)
    return kwargs


def check_rule(op, *args, call=None, rtol=None, atol=None, rng=None, directions=3,
               modes=("rrule", "frule", "hvp"), hvp_fast=None, wrt=None, op_kwargs=None,
               **kwargs):
    """Run the checks of ``modes`` (any of "rrule", "frule", "hvp", or
    "nondiff") on ``op`` at ``args`` from one recording, sharing the finite
    differences. Returns a ``CheckReport``. ``hvp_fast=True`` fails when a
    rule has no ``pullback_with_tangents`` instead of accepting the nested
    fallback.
    """
    kwargs = _merge_kwargs(kwargs, op_kwargs)
    modes = set(modes)
    if "nondiff" in modes:
        return check_nondiff(op, *args, call=call, op_kwargs=kwargs)
    c = _RuleCheck(op, args, kwargs, call, rtol, atol, rng, directions, "check_rule", wrt)
    if "rrule" in modes:
        c.rrule()
    if "frule" in modes:
        c.frule()
    if "hvp" in modes:
        c.hvp(fast=hvp_fast)
    c.check_unmutated("the checks")
    return c.report


def check_rrule(op, *args, call=None, rtol=None, rng=None, atol=None, directions=3,
                adjoint=True, wrt=None, op_kwargs=None, **kwargs):
    """Check the reverse rule of ``op`` at ``args`` (see the module docstring):
    primal, pullback vs finite differences along ``directions`` random
    directions, adjoint identity with the pushforward (``adjoint=False`` skips
    it, for rules without a forward mode), raw cotangent kinds, structural
    zeros, repeatability, no mutation.

    >>> import numpy as np
    >>> bool(check_rrule(np.sin, np.array([0.1, 0.2])))
    True
    """
    c = _RuleCheck(op, args, _merge_kwargs(kwargs, op_kwargs), call, rtol, atol, rng,
                   directions, "check_rrule", wrt)
    c.rrule(adjoint=adjoint)
    return c.report


def check_frule(op, *args, call=None, rtol=None, rng=None, atol=None, directions=3,
                wrt=None, op_kwargs=None, **kwargs):
    """Check the pushforward (forward mode) of ``op`` at ``args`` against finite
    differences, and the kind of every tangent a rule returns.

    >>> import numpy as np
    >>> bool(check_frule(np.exp, np.array([0.1, 0.2])))
    True
    """
    c = _RuleCheck(op, args, _merge_kwargs(kwargs, op_kwargs), call, rtol, atol,
                   np.random.default_rng(1) if rng is None else rng, directions,
                   "check_frule", wrt)
    c.frule()
    return c.report


check_jvp = check_frule


def check_hvp(op, *args, call=None, rtol=None, rng=None, atol=None, fast=None, wrt=None,
              op_kwargs=None, **kwargs):
    """Check the Hessian-vector product of ``s(x) = <w, op(x)>``:
    ``pullback_with_tangents`` against finite differences of the gradient,
    the symmetry ``<u, H v> == <v, H u>``, and its consistency with the
    pullback. ``fast=True`` fails when a rule has no ``pullback_with_tangents``
    (by default the nested forward-over-reverse fallback is checked instead).

    >>> import numpy as np
    >>> bool(check_hvp(np.tanh, np.array([0.1, 0.2])))
    True
    """
    c = _RuleCheck(op, args, _merge_kwargs(kwargs, op_kwargs), call, rtol, atol,
                   np.random.default_rng(2) if rng is None else rng, 2, "check_hvp", wrt)
    c.hvp(fast=fast)
    return c.report


for _f in (check_rule, check_rrule, check_frule, check_hvp):
    _f.__doc__ += _COMMON


def check_nondiff(op, *args, call=None, op_kwargs=None, **kwargs):
    """Check an operation registered as non-differentiable: on traced inputs
    it returns plain (untraced) values equal to the plain call, and it does not
    mutate its inputs."""
    kwargs = _merge_kwargs(kwargs, op_kwargs)
    f = call if call is not None else op
    desc = describe(op, args, kwargs)
    report = CheckReport(_op_label(op), ["nondiff"])
    snap = _copy_arrays((args, kwargs))
    expected = f(*args, **kwargs)
    idx = [i for i, a in enumerate(args) if _has_inexact(a)]
    if not idx:
        raise ValueError(f"check_nondiff: no float argument to trace in {desc}")

    def fun(*d):
        full = list(args)
        for i, v in zip(idx, d):
            full[i] = v
        return f(*full, **kwargs)

    ctx = _Context(desc, np.float64, None, None, report)
    rec = _Recording(fun, tuple(args[i] for i in idx), ctx)
    if any(rec.escaped):
        ctx.fail(f"{_op_label(op)} returned a traced value; a non-differentiable "
                 "operation must return plain values")
    exp_leaves = pytree.flatten(expected)[0]
    if len(exp_leaves) != len(rec.out_values):
        ctx.fail("the traced call returned a different structure than the plain call")
    for a, b in zip(rec.out_values, exp_leaves):
        try:
            np.testing.assert_equal(a, b)
        except AssertionError as e:
            ctx.fail(f"the traced call differs from the plain call: {e}")
    report.record("nondiff output", 0.0)
    if _mutated((args, kwargs), snap) is not None:
        ctx.fail("the call mutated an input")
    return report


# -- whole functions -------------------------------------------------------------------
def check_grads(f, *args, order=2, modes=("fwd", "rev"), rtol=None, atol=None,
                rng=None, directions=2, **kwargs):
    """Check the derivatives of a whole function ``f`` up to ``order``.

    Order 1: the vjp (``chainrules.vjp``) and the jvp (``chainrules.jvp``)
    against finite differences along ``directions`` random directions, and
    the adjoint identity between them. Order ``n``: the same checks on the
    functions ``x -> vjp(f, x)(w)`` and ``x -> jvp(f, x, u)`` at order
    ``n - 1`` (so order 2 covers grad-of-grad, jvp-of-grad, grad-of-jvp and
    jvp-of-jvp). ``modes`` is a subset of ("fwd", "rev").

    >>> import numpy as np
    >>> bool(check_grads(lambda x: np.sum(np.tanh(x) ** 2), np.array([0.3, -0.5])))
    True
    """
    modes = tuple(modes)
    if not set(modes) <= {"fwd", "rev"} or not modes:
        raise ValueError(f"modes must be a non-empty subset of ('fwd', 'rev'), got {modes}")
    rng = np.random.default_rng(3) if rng is None else rng
    desc = describe(f, args, kwargs)
    idx = [i for i, a in enumerate(args) if _has_inexact(a)]
    if not idx:
        raise ValueError(f"check_grads: no float or complex argument in {desc}")
    snap = _copy_arrays((args, kwargs))
    report = CheckReport(_op_label(f))

    def fun(*d):
        full = list(args)
        for i, v in zip(idx, d):
            full[i] = v
        return f(*full, **kwargs)

    _grads_level(fun, tuple(args[i] for i in idx), order, modes, desc, "", rtol, atol,
                 rng, directions, report)
    if _mutated((args, kwargs), snap) is not None:
        raise CheckFailure(f"{desc} mutated an input")
    return report


def _grads_level(fun, primals, order, modes, desc, path, rtol, atol, rng, directions,
                 report):
    label = f"{path} of {desc}" if path else desc
    p_leaves, _ = pytree.flatten(primals)
    out = fun(*primals)
    o_leaves, o_def = pytree.flatten(out)
    dtype = _lowest_precision(p_leaves + o_leaves)
    ctx = _Context(label, dtype, rtol, atol, report)
    for m in modes:
        report.add_mode(("vjp" if m == "rev" else "jvp") + f"(order {_depth(path) + 1})")

    def unflat_p(leaves):
        return pytree.unflatten(pytree.flatten(primals)[1], leaves)

    if "rev" in modes:
        _, f_vjp = cr.vjp(fun, *primals)
    for k in range(directions):
        u = [_random_leaf(x, rng) for x in p_leaves]
        w = [_random_leaf(y, rng) for y in o_leaves]
        def where(k=k, u=u, w=w):
            return f"along direction #{k}: u = {_summary(u)}; w = {_summary(w)}"

        r = fd_jvp(fun, upcast(primals), unflat_p(u))
        fdl = pytree.flatten(r.value)[0]
        ctx.fd_reliable(r, fdl, where)
        nu, nw = _norm(u), _norm(w)
        if "rev" in modes:
            ct = pytree.flatten(f_vjp(pytree.unflatten(o_def, w)))[0]
            a, b = _inner(ct, u), _inner(w, fdl)
            scale = max(_norm(ct) * nu, nw * _norm(fdl))
            ctx.scalar("vjp vs finite differences: <J^T w, u> vs <w, J u>", a, b, scale,
                       ctx.rtol * scale + 10 * nw * r.error + ctx.atol * nu * nw, where)
        if "fwd" in modes:
            _, ju = cr.jvp(fun, primals, unflat_p(u))
            jul = pytree.flatten(ju)[0]
            ctx.vector("jvp vs finite differences: J u", jul, fdl,
                       10 * r.error + ctx.atol * nu, where)
            if "rev" in modes:
                c = _inner(w, jul)
                scale2 = max(_norm(ct) * nu, nw * _norm(jul))
                ctx.scalar("adjoint identity <w, J u> == <J^T w, u>", c, a, scale2,
                           ctx.adj * scale2 + ctx.atol * nu * nw, where, ("jvp", "vjp"))
    if order > 1:
        if "rev" in modes:
            w = pytree.unflatten(o_def, [_random_leaf(y, rng) for y in o_leaves])

            def vjp_fun(*p):
                return cr.vjp(fun, *p)[1](w)

            _grads_level(vjp_fun, primals, order - 1, modes, desc,
                         (path + " ." if path else "") + "vjp", rtol, atol, rng,
                         directions, report)
        if "fwd" in modes:
            u = unflat_p([_random_leaf(x, rng) for x in p_leaves])

            def jvp_fun(*p):
                return cr.jvp(fun, p, u)[1]

            _grads_level(jvp_fun, primals, order - 1, modes, desc,
                         (path + " ." if path else "") + "jvp", rtol, atol, rng,
                         directions, report)


def _depth(path):
    return 0 if not path else path.count(".") + 1


# -- compatibility ---------------------------------------------------------------------
def finite_difference(f, x, u, h=None):
    """Directional derivative of ``f`` (taking a list of arrays) at ``x`` along
    ``u`` (lists of arrays), by ``chainrules.testing.fd.fd_jvp``."""
    return fd_jvp(lambda *xs: f(list(xs)), tuple(x), tuple(u), step=h).value


def to_vec(t):
    from chainrules.tangents import to_vector

    return to_vector(t)[0]
