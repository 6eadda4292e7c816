"""``RuleCheck``: every check of one op at one point (primal, pullback,
pushforward, adjoint identity, HVP, raw cotangent kinds, zero cotangents,
repeatability, mutation), run on one ``CheckedRecording``."""

import math

import numpy as np

import chainrules as cr
from chainrules import pytree
from chainrules.errors import AutodiffError, HvpNotSupported
from chainrules.graph import MULTI
from chainrules.rule import ReverseRule, rule_name
from chainrules.sweep_batch import batched_rule
from chainrules.sweep_reverse import pullback_with_tangents_of
from chainrules.tangents import ZERO, Structural
from chainrules.tracing import untraced

from .fd import fd_jvp, maxabs, upcast
from .numerics import (as64, copy_arrays, diff_norm, eps, inexact, inner, integral, mutated,
                       norm, random_leaf, usable)
from .report import (CheckFailure, CheckReport, Context, describe, lowest_precision,
                     op_label, summary)
from .recording import CheckedRecording, by_node, diff_positions


# -- the checker of one op at one point ------------------------------------------------
class RuleCheck:
    def __init__(self, op, args, kwargs, call=None, rtol=None, atol=None, rng=None,
                 directions=3, who="check_rrule", wrt=None):
        self.op = op
        self.f = call if call is not None else op
        self.args = args
        self.kwargs = kwargs
        # the op, its arguments' kinds, and the input values (arrays of up to
        # six elements in full, larger ones by their norm), so that a failure
        # can be reproduced from its message
        self.desc = (describe(op, args, kwargs) + "\n  at inputs: "
                     + summary(pytree.flatten(list(args))[0]))
        self.idx = diff_positions(args, wrt, who, self.desc)
        self.primals = tuple(args[i] for i in self.idx)
        self.snap = copy_arrays((args, kwargs))
        self.rng = np.random.default_rng(0) if rng is None else rng
        self.directions = max(1, int(directions))
        self.report = CheckReport(op_label(op))
        self.tols = (rtol, atol)
        f, idx, kw = self.f, self.idx, kwargs

        def fun(*d):
            full = list(args)
            for i, v in zip(idx, d):
                full[i] = v
            return f(*full, **kw)

        self.fun = fun
        expected = f(*args, **kwargs)
        self.check_unmutated("the plain call")
        int_pos = [i for i, a in enumerate(args) if integral(a)] if call is None else []
        ctx = Context(self.desc, np.float64, None, None, self.report)
        self.rec = CheckedRecording(fun, self.primals, ctx, op, int_pos)
        self.check_unmutated("the traced call")
        dtype = lowest_precision(self.rec.leaves + self.rec.out_values)
        self.ctx = ctx = Context(self.desc, dtype, rtol, atol, self.report)
        self.rec.ctx = ctx
        self._check_primal(expected)
        self.p_leaves = self.rec.leaves
        self.us = [[random_leaf(x, self.rng) for x in self.p_leaves]
                   for _ in range(self.directions)]
        self.ws = [[random_leaf(y, self.rng) for y in self.rec.out_values]
                   for _ in range(self.directions)]
        self._fd = {}
        self._ct = {}
        self._ju = {}
        self._hv = {}

    # -- basic properties
    def check_unmutated(self, when):
        i = mutated((self.args, self.kwargs), self.snap)
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
            if inexact(b) and not np.all(np.isfinite(b)):
                ctx.fail(f"primal output {k} of the plain call is not finite ({b!r}): "
                         "sample inputs inside the op's domain")
            if inexact(b):
                # a composition may round in another order than NumPy's own
                # code: a few ulps of the inputs, which can be far above the
                # output's (interp's fp0 + slope (x - xp0) cancels)
                floor = 64.0 * eps(ctx.dtype) * self._input_scale()
                self.ctx.vector(f"primal output {k} vs the plain call", [a], [b],
                                (ctx.atol + floor) * math.sqrt(max(1, np.size(b))),
                                "at the sampled point", ("rule", "plain call"),
                                rtol=ctx.adj)
            elif not np.array_equal(np.asarray(a), np.asarray(b)):
                ctx.fail(f"primal output {k} differs from the plain call: {a!r} vs {b!r}")

    def _input_scale(self):
        """The largest magnitude among the differentiated inputs."""
        return maxabs([as64(x) for x in self.rec.leaves if usable(x)])

    def where(self, k):
        return (f"along direction #{k}: u = {summary(self.us[k])}; "
                f"w = {summary(self.ws[k])}")

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
        # first: a pullback writing into its cotangent would change the
        # checker's own directions in the sweeps below
        self.rec.check_unmutated_cotangents()
        for k in range(self.directions):
            u, w = self.us[k], self.ws[k]
            ct = self.cotangent(k)
            self.check_unmutated("the pullback")
            r, fdl = self.fd(k)
            a, b = inner(ct, u), inner(w, fdl)
            nw, nu = norm(w), norm(u)
            scale = max(norm(ct) * nu, nw * norm(fdl))
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
                c = inner(w, ju)
                scale2 = max(norm(ct) * nu, nw * norm(ju))
                ctx.scalar("adjoint identity <w, J u> == <J^T w, u>", c, a, scale2,
                           ctx.adj * scale2 + ctx.atol * nw * nu, lambda: self.where(k),
                           ("pushforward", "pullback"))
        # the pullback again gives the same answer
        again = self.rec.backward(self.ws[0])
        # to rounding: LAPACK-based rules (scipy.linalg.logm) may differ in
        # the last bit from call to call; a pullback that modifies what it
        # saved differs by far more
        for c1, c2 in zip(self.cotangent(0), again):
            if usable(c1) and not (
                    np.array_equal(np.asarray(c1), np.asarray(c2), equal_nan=True)
                    or diff_norm([c1], [c2]) <= ctx.adj * norm([c1])):
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
            if batched_rule(rule):
                self._batched_structural(rule, outs)
            if outs is not None:
                # one output at a time: ZeroTangent() and zeros must agree
                live = [o for o in outs if o is not None]
                if len(live) < 2:
                    continue
                for k, o in enumerate(outs):
                    if o is None:
                        continue
                    rnd = [ZERO if p is None else random_leaf(np.zeros(p[0], p[1]),
                                                               self.rng) for p in outs]
                    g1 = tuple(ZERO if j == k else r for j, r in enumerate(rnd))
                    g2 = tuple(np.zeros(o[0], o[1]) if j == k else r
                               for j, r in enumerate(rnd))
                    try:
                        c1 = by_node(rule.pullback(g1))
                    except Exception as e:  # noqa: BLE001 - reported with context
                        ctx.fail(f"the pullback of rule {rule_name(rule)} raised "
                                 f"{type(e).__name__} when output {k} of its {len(outs)} "
                                 f"outputs had the cotangent ZeroTangent() (unused output): "
                                 f"{e}. Multi-output rules must accept structural zeros")
                    c2 = by_node(rule.pullback(g2))
                    for nid in set(c1) | set(c2):
                        ctx.vector(f"pullback with output {k} as ZeroTangent() vs zeros",
                                   [c1.get(nid, ZERO)], [c2.get(nid, ZERO)], 0.0,
                                   f"rule {rule_name(rule)}",
                                   ("ZeroTangent()", "zeros"), rtol=ctx.adj)

    def _batched_structural(self, rule, outs):
        """A batched pullback takes structural zeros where the engine passes
        them (whole for rules marked ``linear``, per output for rules with
        several outputs), and gives each direction the pullback of that
        direction alone."""
        ctx, tape = self.ctx, self.rec.tape
        name = rule_name(rule)
        if getattr(rule, "linear", False) and type(rule).pullback_with_tangents is \
                ReverseRule.pullback_with_tangents:
            whole = ZERO if outs is None else tuple(ZERO for _ in outs)
            for nid, c in rule.pullback_batched(whole):
                if tape.shapes[nid] is MULTI or isinstance(c, Structural):
                    continue
                if np.any(np.asarray(untraced(c)) != 0):
                    ctx.fail(f"the batched pullback of rule {name} returned a nonzero "
                             "cotangent for the cotangent ZeroTangent()")
        if outs is None or sum(o is not None for o in outs) < 2:
            return
        for k, o in enumerate(outs):
            if o is None:
                continue
            rnd = [[ZERO if j == k or p is None else random_leaf(np.zeros(p[0], p[1]), self.rng)
                    for j, p in enumerate(outs)] for _ in range(2)]
            G = tuple(ZERO if isinstance(a, Structural) else np.stack([a, b])
                      for a, b in zip(*rnd))
            got = by_node(rule.pullback_batched(G))
            for d in range(2):
                ref = by_node(rule.pullback(tuple(rnd[d])))
                for nid in set(got) | set(ref):
                    if tape.shapes[nid] is MULTI:
                        continue
                    c = got.get(nid, ZERO)
                    ctx.vector(f"batched pullback with output {k} as ZeroTangent() vs one "
                               "direction", [c if isinstance(c, Structural) else c[d]],
                               [ref.get(nid, ZERO)], 0.0, f"rule {name}, direction #{d}",
                               ("batched", "one direction"), rtol=ctx.adj)

    def frule(self):
        ctx = self.ctx
        self.report.add_mode("frule")
        for k in range(self.directions):
            ju = self.pushforward(k)
            self.check_unmutated("the pushforward")
            r, fdl = self.fd(k)
            nu = norm(self.us[k])
            ctx.vector("pushforward vs finite differences: J u", ju, fdl,
                       ctx.rtol * self._map_scale(k) * nu + 10.0 * r.error
                       + ctx.atol * nu, lambda: self.where(k))

    def _map_scale(self, k):
        """A lower bound of the Jacobian's norm: ``|J^T w| / |w|`` from the
        pullback when the reverse mode was checked first, and ``|J u| / |u|``
        over every direction. ``J u`` can cancel to far below ``|J| |u|`` (a
        float32 dot product with a direction nearly orthogonal to the
        gradient); its rounding error is relative to ``|J| |u|``, the scale
        the reverse check measures against as well."""
        bounds = [0.0]
        ct, nw = self._ct.get(k), norm(self.ws[k])
        if ct is not None and nw > 0:
            bounds.append(norm(ct) / nw)
        for j in range(self.directions):
            nu = norm(self.us[j])
            if nu > 0:
                bounds.append(norm(self.pushforward(j)) / nu)
        return max(bounds)

    def hvp(self, fast=None):
        """``fast``: None accepts the nested fallback when a rule has no
        ``pullback_with_tangents``; True requires the fast path."""
        ctx, rec = self.ctx, self.rec
        v = self.us[0]
        u = self.us[1] if self.directions > 1 else [random_leaf(x, self.rng)
                                                     for x in self.p_leaves]
        w = self.ws[0]
        try:
            # the output's tangent given (as the engine's HVP sweep gives it) for
            # v, computed by the rule for u: the symmetry check compares both
            g, hv = rec.backward_with_tangents(w, rec.forward(v)[1], out_tangents=True)
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
            # the HVP sweep proper skips the first-order cotangents no
            # second-order term reads (skip=): the same tangents
            _, hv_skip = rec.backward_with_tangents(w, rec.forward(v)[1], out_tangents=True,
                                                    leaf_cotangents=False)
            ctx.vector("HVP sweep skipping unread cotangents vs the full sweep", hv_skip,
                       hv, 0.0, "for the seed w and direction v of direction #0",
                       ("skip=", "full"), rtol=ctx.adj)
            self._hvp_consistency()
        nu, nv = norm(u), norm(v)
        a, b = inner(u, hv), inner(v, hu)
        scale = max(nu * norm(hv), nv * norm(hu))
        # a Hessian that is zero in exact arithmetic (a p-norm over an axis of
        # length 1 is |x|) gives rounding noise, relative to the second-order
        # scale of the function rather than to the noise itself
        ctx.scalar("HVP symmetry <u, H v> == <v, H u>", a, b, scale,
                   ctx.adj * scale + ctx.atol * nu * nv,
                   lambda: f"u = {summary(u)}; v = {summary(v)}", ("<u, H v>", "<v, H u>"),
                   slack=lambda: ctx.adj * self._second_order_scale(w) * nu * nv)
        grad_fun = self._gradient_function(w)
        r = fd_jvp(grad_fun, upcast(self.primals), rec.unflatten_primals(v))
        fdl = pytree.flatten(r.value)[0]
        def where():
            return f"along v = {summary(v)} with output cotangent w = {summary(w)}"

        ctx.fd_reliable(r, fdl, where)
        ctx.vector("HVP vs finite differences of the gradient", hv, fdl,
                   10.0 * r.error + ctx.atol * nv, where,
                   slack=lambda: ctx.rtol * self._second_order_scale(w) * nv)

    def batched(self, hvp=True, forward=True):
        """A sweep carrying every direction at once gives each direction's
        result of the sweeps one at a time (to rounding): reverse, forward
        and, with ``hvp``, forward-over-reverse. Rules with batched methods
        are checked by it; the others go through the engine's
        per-direction loop, which is checked too. A batch of one direction
        (the Hessian of a size-1 or 0-d input, a last chunk of one) is
        checked as well: the engine runs the unbatched sweeps for it and
        lifts their values to a batch. ``forward`` False: the reverse sweep
        only (a rule without a forward mode). ``batched_at_small_points``
        runs it again at 0-d and size-1 inputs."""
        rec = self.rec
        k = max(2, self.directions)
        us = [self.us[j] if j < self.directions else
              [random_leaf(x, self.rng) for x in self.p_leaves] for j in range(k)]
        ws = [self.ws[j] if j < self.directions else
              [random_leaf(y, self.rng) for y in rec.out_values] for j in range(k)]
        self.report.add_mode("batched" if rec.batched_rules() else "batched(loop)")
        self._batch_vs_one(us, ws, hvp, forward)
        self._batch_vs_one(us[:1], ws[:1], hvp, forward)

    def batched_at_small_points(self, hvp=True, forward=True):
        """``batched`` again where every differentiated array is 0-d, then
        of size 1 (``chainrules.testing.small_points``): an untyped crash
        there fails the check. Returns the ``RuleCheck`` of each point run."""
        from .small_points import batched_at_small_points

        return batched_at_small_points(self, hvp, forward)

    def _batch_vs_one(self, us, ws, hvp, forward):
        """The sweeps of the directions ``us`` (forward, HVP) and ``ws``
        (reverse) as one batch vs one direction at a time (the checker's
        own directions' sweeps computed once: a batch of one reuses them)."""
        ctx, rec = self.ctx, self.rec
        k = len(us)
        # where the exact map vanishes (a 1 x 1 determinant's Hessian, the
        # Mahalanobis distance between the only two points of their sample),
        # both sides are rounding noise: the slacks measure it against the
        # scale of the function (|f| / |x|, |w| |f| / |x|^2), not the noise
        own = self.directions
        where = "direction #{} of a batch of {}"
        for j, c in enumerate(rec.backward_batch(ws)):
            one = self.cotangent(j) if j < own else rec.backward(ws[j])
            ctx.vector("batched pullback vs one direction", c, one, 0.0,
                       where.format(j, k), ("batched", "one direction"), rtol=ctx.adj,
                       slack=lambda j=j: ctx.adj * self._first_order_scale() * norm(ws[j]))
        if not forward:
            return
        tans = rec.forward_batch(us)
        for j, t in enumerate(rec.output_tangents(tans, k)):
            one = self.pushforward(j) if j < own else rec.forward(us[j])[0]
            ctx.vector("batched pushforward vs one direction", t, one, 0.0,
                       where.format(j, k), ("batched", "one direction"), rtol=ctx.adj,
                       slack=lambda j=j: ctx.adj * self._first_order_scale() * norm(us[j]))
        if not hvp:
            return
        w = self.ws[0]
        try:
            batch = rec.hvp_batch(w, tans, k)
        except HvpNotSupported:
            return
        for j, hv in enumerate(batch):
            one = self._hvp_one(j) if j < own else self._hvp_of(us[j])
            # (a spec's explicit atol: a batch rounds where one direction is exact)
            ctx.vector("batched HVP vs one direction", hv, one, self.tols[1] or 0.0,
                       where.format(j, k), ("batched", "one direction"), rtol=ctx.adj,
                       slack=lambda j=j: ctx.adj * norm(us[j]) * max(
                           self._second_order_scale(w),
                           self._first_order_scale() * norm(w) / max(norm(self.p_leaves),
                                                                     1.0)))

    def _hvp_of(self, u):
        """The HVP sweep of one direction ``u`` with the seed ``ws[0]``."""
        rec = self.rec
        return rec.backward_with_tangents(self.ws[0], rec.forward(u)[1], out_tangents=True,
                                          leaf_cotangents=False)[1]

    def _hvp_one(self, j):
        if j not in self._hv:
            self._hv[j] = self._hvp_of(self.us[j])
        return self._hv[j]

    def _first_order_scale(self):
        """``|f(x)| / max(|x|, 1)``: the size of a derivative of a function
        with this value at ``x``, against which the rounding of a Jacobian
        that vanishes in exact arithmetic is measured. Used only where a
        check fails without it."""
        return norm(self.rec.out_values) / max(norm(self.p_leaves), 1.0)

    def _second_order_scale(self, w):
        """``|J^T w| / max(|x|, 1)``: the size of a Hessian of a function
        whose gradient is ``J^T w`` at ``x`` (a derivative per unit of ``x``,
        never larger than the gradient itself), against which the rounding
        of an HVP is measured where the exact Hessian vanishes. Used only
        where a check fails without it."""
        return norm(self.rec.backward(w)) / max(norm(self.p_leaves), 1.0)

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
                    return random_leaf(np.zeros(tape.shapes[i], tape.dtypes[i]), self.rng)
                return tuple(ZERO if o is None else random_leaf(np.zeros(o[0], o[1]),
                                                                 self.rng) for o in outs)

            ins = rule.inputs()
            ts = tuple(random_leaf(np.zeros(tape.shapes[j], tape.dtypes[j]), self.rng)
                       if tape.shapes[j] is not MULTI else ZERO for j in ins)
            g, gd = rand_out(), rand_out()
            pb_g, pb_gd = by_node(rule.pullback(g)), by_node(rule.pullback(gd))
            name = rule_name(rule)
            # the engine's: a rule's own, or its replay (no pullback_with_tangents)
            pwt = pullback_with_tangents_of(tape, i, rule)
            cases = (
                ("pullback_with_tangents(g, ZeroTangent(), t) cotangent vs pullback(g)",
                 pwt(g, ZERO, ts), 1, pb_g),
                ("pullback_with_tangents(ZeroTangent(), gd, t) tangent vs pullback(gd)",
                 pwt(ZERO, gd, ts), 2, pb_gd),
                ("pullback_with_tangents(g, gd, zero tangents) tangent vs pullback(gd)",
                 pwt(g, gd, tuple(ZERO for _ in ins)), 2, pb_gd),
            )
            for what, triples, pos, ref in cases:
                got = by_node(triples, pos)
                for nid in set(got) | set(ref):
                    if tape.shapes[nid] is MULTI:
                        continue
                    ctx.vector(what, [got.get(nid, ZERO)], [ref.get(nid, ZERO)], 0.0,
                               f"rule {name}, input node {int(nid)}",
                               ("pullback_with_tangents", "pullback"), rtol=ctx.adj)
            zc = by_node(pwt(ZERO, gd, ts), 1)
            for nid, c in zc.items():
                if not isinstance(c, Structural) and np.any(
                        np.asarray(untraced(c)) != 0):
                    ctx.fail(f"pullback_with_tangents of rule {name} returned a nonzero "
                             "cotangent for the cotangent ZeroTangent()")
            if batched_rule(rule) and outs is None:
                self._batched_zero_cotangent(rule, rand_out, ts)

    def _batched_zero_cotangent(self, rule, rand_out, ts):
        """The batched ``pullback_with_tangents`` of a zero cotangent is the
        pullback of each direction's ``gd`` (no second-order term)."""
        ctx = self.ctx
        gds = [rand_out(), rand_out()]
        TS = tuple(t if isinstance(t, Structural) else np.stack([t, t]) for t in ts)
        got = by_node(rule.pullback_with_tangents_batched(ZERO, np.stack(gds), TS), 2)
        for j, gd in enumerate(gds):
            ref = by_node(rule.pullback(gd))
            for nid in set(got) | set(ref):
                g_j = got.get(nid, ZERO)
                ctx.vector("batched pullback_with_tangents(ZeroTangent(), GD, T) vs pullback",
                           [g_j if isinstance(g_j, Structural) else g_j[j]],
                           [ref.get(nid, ZERO)], 0.0,
                           f"rule {rule_name(rule)}, input node {int(nid)}, direction #{j}",
                           ("batched", "pullback"), rtol=ctx.adj)


# -- public checkers -----------------------------------------------------------------
