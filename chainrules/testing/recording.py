"""``Recording``: one op recorded once on a tape, with the raw sweeps the
checkers inspect (cotangents and tangents exactly as the rule returns them,
before the engine would project them), and the choice of the differentiated
arguments."""

import numpy as np

from chainrules import pytree
from chainrules.graph import MULTI, Select, Tape
from chainrules.registry import ClosureRule
from chainrules.rule import rule_name
from chainrules.tangents import NOTANGENT, ZERO, NoTangent, Structural
from chainrules.tracing import Traced, untraced

from .numerics import copy_arrays, has_inexact, inexact, mutated


class Recording:
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
                if inexact(leaf):
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
            snap = copy_arrays(g)
            pairs = rule.pullback(g)
            if mutated(g, snap) is not None:
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
            elif inexact(v):
                outs.append(np.zeros(np.shape(v), np.asarray(v).dtype))
            else:
                outs.append(NOTANGENT)
        return outs, tans

    def backward_with_tangents(self, w_leaves, tans, out_tangents=False):
        """Raw reverse sweep carrying tangents: ``(cotangents, their tangents)``
        per primal leaf, for the seed ``w`` (held constant). With
        ``out_tangents``, a rule that asks for it (``takes_output_tangent``)
        gets its output's tangent from ``tans``, as the engine's HVP sweep
        passes it; without, it computes it itself: the checker runs both."""
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
            if out_tangents and getattr(rule, "takes_output_tangent", False) \
                    and tans[i] is not None:
                triples = rule.pullback_with_tangents(g, gd, ts, out_tangent=tans[i])
            else:
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


def by_node(pairs, k=1):
    out = {}
    for item in pairs:
        nid, v = item[0], item[k]
        if v is None or isinstance(v, Structural):
            out.setdefault(nid, ZERO)
            continue
        prev = out.get(nid)
        out[nid] = v if prev is None or isinstance(prev, Structural) else prev + v
    return out


def diff_positions(args, wrt, who, desc):
    """Positions of the differentiated arguments: ``wrt`` or every positional
    argument holding float/complex values."""
    if wrt is None:
        idx = [i for i, a in enumerate(args) if has_inexact(a)]
    else:
        wrt = (wrt,) if isinstance(wrt, int) else tuple(wrt)
        if any(not -len(args) <= int(i) < len(args) for i in wrt):
            raise ValueError(f"{who}: wrt={wrt} is out of range for {len(args)} "
                             f"positional arguments in {desc}")
        idx = sorted({int(i) % len(args) for i in wrt})
        bad = [i for i in idx if not has_inexact(args[i])]
        if bad:
            raise ValueError(f"{who}: wrt={wrt} names argument(s) {bad} that hold no "
                             f"float or complex value in {desc}")
    if not idx:
        raise ValueError(f"{who}: no float or complex positional argument to "
                         f"differentiate in {desc}")
    return idx
