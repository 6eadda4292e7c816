"""``CheckedRecording``: one op recorded once on a tape and swept by the
engine's own sweeps (one direction, or a batch of them), with a check hook
that inspects every rule's raw results (cotangents and tangents exactly as
the rule returns them, before the engine projects them), and the choice of
the differentiated arguments."""

import numpy as np

from chainrules import pytree
from chainrules.graph import MULTI, Select, Tape
from chainrules.sweep_batch import batched_rule
from chainrules.registry import ClosureRule
from chainrules.rule import rule_name
from chainrules.tangents import NOTANGENT, ZERO, NoTangent, Structural
from chainrules.tracing import Traced, untraced

from .numerics import copy_arrays, has_inexact, inexact, mutated, random_leaf


class CheckedRecording:
    """``fun(*primals)`` traced once; the engine's sweeps over it, checking
    every rule's raw output (shape, dtype, kind) before the engine projects
    it. (Not ``jacobians.Recording``, the entry points' recording of a
    user's function.)"""

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
            tape.close()
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
        outs = [None] * len(tape.dtypes[i])  # the outputs' dtypes
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

    # sweeps: the engine's own, with the raw results checked before it projects them
    def _outputs_and_seeds(self, w_leaves):
        outs, seeds = [], []
        for nid, w in zip(self.out_nodes, w_leaves):
            if nid is not None and w is not None and not isinstance(w, Structural):
                outs.append(nid)
                seeds.append(w)
        return outs, seeds

    def _check_results(self, where, role="cotangent"):
        """A sweep's ``check`` hook: the kind (shape, dtype) of every raw
        result of a rule; the tangents of cotangents too, when present."""
        def check(tape, i, g, results):
            rule = tape.rules[i]
            self._check_closure_ints(rule, g)
            for item in results:
                nid = item[0]
                for k, c in enumerate(item[1:]):
                    if c is None or isinstance(c, Structural) or tape.shapes[nid] is MULTI:
                        continue
                    self.check_tangent(c, nid, rule, where if k == 0 else
                                       f"{where} (tangent of the cotangent)", role)
        return check

    def _check_pushforward(self, tape, i, t):
        rule = tape.rules[i]
        if tape.shapes[i] is not MULTI and not isinstance(rule, Select):
            self.check_tangent(t, i, rule, "the pushforward", "tangent")

    def _per_leaf(self, grads):
        return [NOTANGENT if nid is None else grads.get(nid) for nid in self.leaf_ids]

    def backward(self, w_leaves):
        """The engine's reverse sweep: the cotangent of every primal leaf."""
        outs, seeds = self._outputs_and_seeds(w_leaves)
        grads = self.tape.backward(outs, seeds, retain_graph=True,
                                   check=self._check_results("the pullback"))
        return self._per_leaf(grads)

    def check_unmutated_cotangents(self):
        """No pullback writes into the cotangent it is given: each rule is
        called with a random cotangent, compared after with a copy."""
        tape = self.tape
        rng = np.random.default_rng(7)
        for i, rule in self.rules():
            outs = self.outputs_of(i)
            if outs is None:
                g = random_leaf(np.zeros(tape.shapes[i], tape.dtypes[i]), rng)
            else:
                g = tuple(ZERO if o is None else random_leaf(np.zeros(o[0], o[1]), rng)
                          for o in outs)
            snap = copy_arrays(g)
            rule.pullback(g)
            if mutated(g, snap) is not None:
                self.ctx.fail(f"the pullback of rule {rule_name(rule)} modified the "
                              "cotangent it was given (an in-place update); compute "
                              "a new array instead")

    def forward(self, u_leaves):
        """The engine's forward sweep: ``(tangent of every output leaf, node
        tangents)``."""
        seeds = {nid: u for nid, u in zip(self.leaf_ids, u_leaves)
                 if nid is not None and not isinstance(u, Structural)}
        tans = self.tape.forward(seeds, check=self._check_pushforward)
        outs = []
        for nid, v in zip(self.out_nodes, self.out_values):
            if nid is not None and tans[nid] is not None:
                outs.append(tans[nid])
            elif inexact(v):
                outs.append(np.zeros(np.shape(v), np.asarray(v).dtype))
            else:
                outs.append(NOTANGENT)
        return outs, tans

    def backward_with_tangents(self, w_leaves, tans, out_tangents=False,
                               leaf_cotangents=True):
        """The engine's reverse sweep carrying tangents: ``(cotangents, their
        tangents)`` per primal leaf, for the seed ``w`` (held constant). With
        ``out_tangents``, a rule that asks for it (``takes_output_tangent``)
        gets its output's tangent from ``tans``, as the engine's HVP sweep
        passes it; without, it computes it itself: the checker runs both.
        ``leaf_cotangents=False`` is the HVP sweep proper: first-order
        cotangents nothing reads are skipped (``skip=``)."""
        outs, seeds = self._outputs_and_seeds(w_leaves)
        g, gd = self.tape.backward_with_tangents(
            outs, seeds, [ZERO] * len(outs), tans, retain_graph=True,
            check=self._check_results("pullback_with_tangents"),
            leaf_cotangents=leaf_cotangents, out_tangents=out_tangents)
        return self._per_leaf(g), self._per_leaf(gd)


    # the same sweeps carrying every direction at once (a leading batch axis)
    def batched_rules(self):
        """Whether every rule of the recording takes batches itself (else
        the engine loops over the directions for some of them)."""
        return all(batched_rule(r) for _, r in self.rules())

    def _stack_outputs(self, w_dirs):
        outs, seeds = [], []
        for pos, nid in enumerate(self.out_nodes):
            ws = [w[pos] for w in w_dirs]
            if nid is None or any(w is None or isinstance(w, Structural) for w in ws):
                continue
            outs.append(nid)
            seeds.append(np.stack([np.asarray(w) for w in ws]))
        return outs, seeds

    def _unstack(self, grads, k):
        """Per direction, the leaves' values of a batched ``Gradients``."""
        per = [[] for _ in range(k)]
        for nid in self.leaf_ids:
            v = NOTANGENT if nid is None else grads.get(nid)
            for j in range(k):
                per[j].append(v if isinstance(v, Structural) else v[j])
        return per

    def backward_batch(self, w_dirs):
        """``backward`` of every direction of ``w_dirs`` in one batched sweep."""
        outs, seeds = self._stack_outputs(w_dirs)
        grads = self.tape.backward(outs, seeds, retain_graph=True, batch=len(w_dirs))
        return self._unstack(grads, len(w_dirs))

    def forward_batch(self, u_dirs):
        """The forward sweep of every direction of ``u_dirs`` in one batch:
        the node tangents, batched."""
        seeds = {}
        for pos, nid in enumerate(self.leaf_ids):
            us = [u[pos] for u in u_dirs]
            if nid is not None and not any(isinstance(u, Structural) for u in us):
                seeds[nid] = np.stack([np.asarray(u) for u in us])
        return self.tape.forward(seeds, batch=len(u_dirs))

    def output_tangents(self, tans, k):
        """Per direction, the output leaves' tangents of a batched forward sweep."""
        per = [[] for _ in range(k)]
        for nid, v in zip(self.out_nodes, self.out_values):
            t = None if nid is None else tans[nid]
            for j in range(k):
                if t is not None:
                    per[j].append(t[j])
                elif inexact(v):
                    per[j].append(np.zeros(np.shape(v), np.asarray(v).dtype))
                else:
                    per[j].append(NOTANGENT)
        return per

    def hvp_batch(self, w_leaves, tans, k):
        """The tangents of the leaves' cotangents for a batch of forward
        tangents (``forward_batch``) and one seed ``w``."""
        outs, seeds = self._outputs_and_seeds(w_leaves)
        _, gd = self.tape.backward_with_tangents(
            outs, seeds, [ZERO] * len(outs), tans, retain_graph=True, leaf_cotangents=False,
            batch=k)
        return self._unstack(gd, k)


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
