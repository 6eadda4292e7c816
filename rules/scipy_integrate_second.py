"""Second derivatives of ODE solutions (``ode_solve``, rules/scipy_integrate.py):
``OdeRule.pullback_with_tangents``, the tangent of the first-order solve.

The first-order pullback solves an ODE on plain values (forward
sensitivities for small systems, the adjoint system otherwise). Its
directional derivative along the inputs' tangents ``(y0', p')`` and the
cotangent's tangent ``g'`` is the solution of that ODE's tangent system,
whose right-hand side is the tangent of the first system's: the user's
``f`` is traced once per evaluation, its tangent pushed forward along the
state's and the parameters' tangents, and the pullbacks the first system
needs are taken with the engine's forward-over-reverse sweep
(``backward_with_tangents``), which also gives their tangents. Both
methods keep the first-order choice (``SENSITIVITY_MAX_STATE``):

* Small systems, forward sensitivities: ``Z = dy/d(y0, p)`` (n x m) with
  ``Z' = J [Z; P]`` (``J = [f_y, f_p]``, ``P`` the parameters' columns) has
  the tangent ``W' = f_y W + J' [Z; P]``, ``W(t[0]) = 0``, where ``J'`` is
  the tangent of ``J`` along ``(y', p')`` and ``y'`` solves the variational
  equation. ``y, Z, y', W`` are integrated in one forward solve (no restart
  at the output times), ``J`` and ``J'`` from one trace, one forward sweep
  and ``n`` reverse sweeps with tangents per evaluation. The cotangent
  ``sum_i Z(t[i])^T g[i]`` has the tangent
  ``sum_i W(t[i])^T g[i] + Z(t[i])^T g'[i]``.
* Larger systems, forward over the adjoint: backwards from ``t[N]``,
  ``y' = f``, ``a' = -f_y^T a``, ``g_p' = -f_p^T a`` (``a`` jumping by
  ``g[i]`` at each ``t[i]``) with the tangent system
  ``dy' = f_y dy + f_p p'``, ``da' = -(f_y^T da + D[f_y^T a](dy, p'))``,
  ``dg_p' = -(f_p^T da + D[f_p^T a](dy, p'))`` (``da`` jumping by ``g'[i]``).
  One evaluation is one trace of ``f``, one forward sweep and one reverse
  sweep with tangents. As at first order, ``y`` and ``dy`` restart at every
  output time and checkpoint from the forward solution and from the
  variational solution on the same grid (``OdeRule._flow``, the
  pushforward's solve), so the backward integration's errors stay bounded.
  Its states grow as ``n`` and the number of parameters, where the
  sensitivities' tangents grow as ``n m``.

The first-order cotangents returned with the tangents are the rule's own
pullback (with the sensitivities of the same solve), so that they agree
with ``grad`` to rounding.

Not supported (``HvpNotSupported``, naming what works): traced time points,
and nested differentiation (``grad`` of ``grad``, ``jvp`` of ``grad``),
where the ODE's inputs or cotangent are themselves traced by an outer
differentiation: the derivative systems are solved by SciPy on plain
values. ``chainrules.hvp``, ``hessian`` and ``hessian_operator`` take the
forward-over-reverse path above.
"""

import numpy as np

from chainrules.arguments import collect_cotangents, trace_args
from chainrules.errors import HvpNotSupported
from chainrules.graph import Tape
from chainrules.tangents import ZERO, is_zero
from chainrules.tracing import Traced, is_traced

__all__ = ["NO_NESTED", "NO_TIMES", "ode_pullback_with_tangents", "fwd_over_rev",
           "jacobian_with_tangent", "second_sensitivities"]

NO_NESTED = ("{name}: nested differentiation through an ODE solution (grad of grad, jvp "
             "of grad or of jvp: an outer differentiation tracing the ODE's inputs or "
             "its derivatives) is not supported: the derivative's systems are solved by "
             "SciPy on plain values. Second derivatives are computed forward over "
             "reverse: use chainrules.hvp, chainrules.hessian or "
             "chainrules.hessian_operator of the loss, with the time points (t of "
             "odeint; t_span[0] and t_eval of solve_ivp) as constants: second "
             "derivatives in the time points are not supported")

NO_TIMES = ("{name}: second derivatives (HVP, Hessian) in the time points are not "
            "supported; pass the time points (t of odeint; t_span[0] and t_eval of "
            "solve_ivp) as constants (chainrules.stop_gradient) to get second "
            "derivatives in the initial state and the parameters")


def rhs_of(spec, params, pidx, s):
    """The right-hand side at time ``s`` as a function of the state and the
    differentiated parameters (those at ``pidx``; the others held)."""
    def f_of(yy, *ps):
        full = list(params)
        for k, v in zip(pidx, ps):
            full[k] = v
        return as_vector(spec.f(yy, s, full))

    return f_of


def _traced_forward(fun, primals, tangents):
    """``fun`` (array inputs to one array) traced once at ``primals`` and
    swept forward along ``tangents`` (None: zero): ``(tape, specs, out,
    tangents of every node)``, or ``(None, None, out, None)`` when ``out``
    does not depend on the inputs."""
    tape = Tape()
    try:
        targs, specs = trace_args(tape, primals, range(len(primals)), "the ODE's "
                                  "right-hand side")
        out = fun(*targs)
    finally:
        tape.active = False
    if not (type(out) is Traced and out.tape is tape):
        tape.free()
        return None, None, out, None
    seeds = {spec.ids[0]: np.asarray(t, dtype=float) for spec, t in zip(specs, tangents)
             if t is not None and spec.ids[0] is not None}
    return tape, specs, out, tape.forward(seeds)


def _tangent_of(out, tans, shape):
    """The output's tangent from the forward sweep, zeros when it has none."""
    d = tans[out.node]
    return np.zeros(shape) if d is None else np.asarray(d, dtype=float)


def fwd_over_rev(fun, primals, tangents, cot, dcot):
    """``fun`` (array inputs to one array) at ``primals`` with its tangent
    along ``tangents`` (None: zero) and the pullback of ``cot`` with its
    tangent along ``tangents`` and ``dcot`` (the cotangent's tangent, None:
    zero). Returns ``(out, out', [cotangent per primal], [its tangent])``,
    plain float arrays, from one trace of ``fun`` and one forward and one
    reverse sweep with tangents."""
    tape, specs, out, tans = _traced_forward(fun, primals, tangents)
    if tape is None:  # f independent of the inputs
        zeros = [np.zeros(np.shape(p)) for p in primals]
        return np.asarray(out, dtype=float), np.zeros(np.shape(out)), zeros, list(zeros)
    dout = _tangent_of(out, tans, np.shape(out.value))
    g, gd = tape.backward_with_tangents(
        [out.node], [np.asarray(cot, dtype=float)],
        [ZERO if dcot is None else np.asarray(dcot, dtype=float)], tans, retain_graph=False)
    tape.free()
    cots = [np.asarray(collect_cotangents(s, g), dtype=float) for s in specs]
    dcots = [np.asarray(collect_cotangents(s, gd), dtype=float) for s in specs]
    return np.asarray(out.value, dtype=float), dout, cots, dcots


def as_vector(out):
    """The right-hand side's value as one vector (it may return a list)."""
    if isinstance(out, (list, tuple)):
        return np.concatenate([np.ravel(v) for v in out])
    return out if np.ndim(out) == 1 else np.ravel(out)


def _tangent_or_none(t, like):
    """A tangent as a float array, None when structurally zero."""
    if t is None or is_zero(t):
        return None
    return np.asarray(t, dtype=float).reshape(np.shape(like))


def ode_pullback_with_tangents(rule, g, gd, tangents, limit):
    """``OdeRule.pullback_with_tangents``: the triples ``(input, cotangent,
    tangent of the cotangent)`` for y0 and the traced parameters (see the
    module docstring). ``limit``: the largest sensitivity system solved
    forward (``SENSITIVITY_MAX_STATE`` or the spec's own)."""
    if rule.ids[1] is not None:
        raise HvpNotSupported(NO_TIMES.format(name=rule.name))
    if is_traced(g) or is_traced(gd) or any(is_traced(t) for t in tangents):
        raise HvpNotSupported(NO_NESTED.format(name=rule.name))
    pidx, n = rule._pidx(), rule.ys.shape[1]
    g = None if g is None or is_zero(g) else np.asarray(g, dtype=float)
    it = iter(tangents)
    full = [next(it) if i is not None else None for i in rule.ids]
    dy0 = _tangent_or_none(full[0], rule.y0)
    dps = {k: _tangent_or_none(full[2 + k], rule.params[k]) for k in pidx}
    gd = _tangent_or_none(gd, rule.ys)
    if g is None:                             # a = 0 throughout: y' does not enter
        dy0, dps = None, dict.fromkeys(pidx)
    moves = dy0 is not None or any(v is not None for v in dps.values())
    if gd is None and not moves:              # no second-order term
        return [(nid, c, None) for nid, c in _first(rule, g, pidx)]
    npar = sum(int(np.prod(np.shape(rule.params[k]), dtype=int)) for k in pidx)
    nl = n if rule.ids[0] is not None else 0
    if n * (1 + nl + npar) <= limit:
        cots, dc = _by_sensitivities(rule, g, gd, dy0, dps, pidx, moves)
    else:
        cots = _first(rule, g, pidx)
        tm = rule.grid[0]
        moving = [k for k in pidx if dps[k] is not None]
        dyall = rule._flow(np.zeros(n) if dy0 is None else dy0.ravel(), moving,
                           [dps[k] for k in moving]) if moves else np.zeros((len(tm), n))
        gz = np.zeros(rule.ys.shape)
        da, dgp = _backward(rule, gz if g is None else g, gz if gd is None else gd, dyall,
                            pidx, dps)
        dc = np.concatenate(([da + (0.0 if gd is None else gd[0])] if nl else []) + [dgp])
    dots = [np.reshape(dc[:nl], np.shape(rule.y0))] if nl else []
    off = nl
    for k in pidx:
        shp = np.shape(rule.params[k])
        sz = int(np.prod(shp, dtype=int))
        d = np.reshape(dc[off:off + sz], shp)
        off += sz
        dots.append(d if shp else float(d))
    return [(nid, c, d) for (nid, c), d in zip(cots, dots)]


def _first(rule, g, pidx):
    """The first-order pairs: the rule's pullback, or none for a zero ``g``."""
    if g is not None:
        return rule.pullback(g)
    return [(i, None) for i in rule.ids[:1] + tuple(rule.ids[2 + k] for k in pidx)
            if i is not None]


def _by_sensitivities(rule, g, gd, dy0, dps, pidx, moves):
    """(first-order pairs, tangent of the cotangents as one vector) from the
    forward sensitivities ``Z`` and their tangents ``W``: the cotangent is
    ``sum_i Z(t[i])^T g[i]``, its tangent ``sum_i W^T g[i] + Z^T g'[i]``."""
    if g is None or not moves:                # W not needed
        rule.pullback(np.zeros(rule.ys.shape))          # computes and keeps Z
        z, w = rule.sens, None
    else:
        z, w = second_sensitivities(rule, pidx, dy0, dps)
        if rule.sens is None:
            rule.sens = z                     # the first order below reads the same Z
    cots = _first(rule, g, pidx)
    dc = np.zeros(z.shape[2])
    if gd is not None:
        dc += np.einsum("inm,in->m", z[1:], gd[1:])
        if rule.ids[0] is not None:
            dc[:z.shape[1]] += gd[0]
    if w is not None:
        dc += np.einsum("inm,in->m", w[1:], g[1:])
    return cots, dc


def jacobian_with_tangent(fun, primals, tangents, n):
    """``(f, f', J, J')`` of ``fun`` (array inputs to ``n`` outputs) at
    ``primals``: ``J`` has a column per input entry, ``f'`` and ``J'`` are
    the tangents along ``tangents`` (None: zero). One trace, one forward
    sweep, ``n`` reverse sweeps carrying tangents (one per row)."""
    tape, specs, out, tans = _traced_forward(fun, primals, tangents)
    width = sum(int(np.size(p)) for p in primals)
    if tape is None:
        return (np.asarray(out, dtype=float), np.zeros(n), np.zeros((n, width)),
                np.zeros((n, width)))
    jac, djac = np.empty((n, width)), np.empty((n, width))
    for r in range(n):
        e = np.zeros(n)
        e[r] = 1.0
        gr, gdr = tape.backward_with_tangents([out.node], [e], [ZERO], tans,
                                              retain_graph=True)
        jac[r] = np.concatenate([np.ravel(collect_cotangents(s, gr)) for s in specs])
        djac[r] = np.concatenate([np.ravel(collect_cotangents(s, gdr)) for s in specs])
    dout = _tangent_of(out, tans, n)
    tape.free()
    return np.asarray(out.value, dtype=float), dout, jac, djac


def second_sensitivities(rule, pidx, dy0, dps):
    """``(Z, W)`` at the output times (each len(t) x n x m): the forward
    sensitivities ``Z' = J [Z; P]`` (``J = [f_y, f_p]``, ``P`` the parameters'
    columns) and their tangents ``W' = f_y W + J' [Z; P]`` along ``(y', p')``
    (``J'`` the tangent of ``J``), integrated with ``y`` and ``y'`` in one
    forward solve of ``2 n (1 + m)`` states."""
    n = rule.ys.shape[1]
    spec, params = rule.spec, list(rule.params)
    npar = sum(int(np.prod(np.shape(params[k]), dtype=int)) for k in pidx)
    nl = n if rule.ids[0] is not None else 0
    m = nl + npar
    p_cols = np.concatenate([np.zeros((npar, nl)), np.eye(npar)], axis=1)
    tans_p = [dps[k] for k in pidx]
    nm = n * m

    def aug(z, s):
        f_of = rhs_of(spec, params, pidx, s)
        f, df, jac, djac = jacobian_with_tangent(
            f_of, [z[:n]] + [params[k] for k in pidx], [z[n + nm:2 * n + nm]] + tans_p, n)
        zp = np.concatenate([np.reshape(z[n:n + nm], (n, m)), p_cols])
        dw = jac[:, :n] @ np.reshape(z[2 * n + nm:], (n, m)) + djac @ zp
        return np.concatenate([f, np.ravel(jac @ zp), df, np.ravel(dw)])

    z0 = np.zeros(2 * (n + nm))
    z0[:n] = rule.ys[0]
    if nl:
        z0[n:n + nm] = np.ravel(np.concatenate([np.eye(n), np.zeros((n, npar))], axis=1))
    if dy0 is not None:
        z0[n + nm:2 * n + nm] = np.ravel(dy0)
    atol = spec.opts.get("atol")
    over = {}
    if atol is not None and np.ndim(atol) != 0:
        block = np.concatenate([np.ravel(atol), np.repeat(np.ravel(atol), m)])
        over = {"atol": np.concatenate([block, block])}
    tm, pos, _ = rule.grid
    z = spec.integrate(aug, z0, tm, None, **over)[pos]
    k = len(pos)
    return (np.reshape(z[:, n:n + nm], (k, n, m)),
            np.reshape(z[:, 2 * n + nm:], (k, n, m)))


def _backward(rule, g, gd, dyall, pidx, dps):
    """``(a'(t[0]), g_p'(t[0]))``: the backward solve of the adjoint system
    and its tangent system, interval by interval over the rule's grid, with
    ``y`` and ``y'`` restarted from the forward and variational solutions
    (``dyall``, on the grid) and ``a``, ``a'`` jumping by ``g``, ``gd``."""
    n = rule.ys.shape[1]
    spec, params = rule.spec, list(rule.params)
    npar = sum(int(np.prod(np.shape(params[k]), dtype=int)) for k in pidx)
    b = 2 * n + npar                          # one block: y, a, g_p
    tans_p = [dps[k] for k in pidx]

    def aug(z, s):
        f_of = rhs_of(spec, params, pidx, s)
        y, a = z[:n], z[n:2 * n]
        dy, da = z[b:b + n], z[b + n:b + 2 * n]
        f, df, c, dc = fwd_over_rev(f_of, [y] + [params[k] for k in pidx],
                                    [dy] + tans_p, a, da)
        return np.concatenate([f] + [-np.ravel(v) for v in c]
                              + [np.ravel(df)] + [-np.ravel(v) for v in dc])

    tm, pos, yall = rule.grid
    gm, gdm = np.zeros((len(tm), n)), np.zeros((len(tm), n))
    np.add.at(gm, pos[1:], g[1:])             # a excludes g[0], which is y0's own
    np.add.at(gdm, pos[1:], gd[1:])
    a, da = gm[-1].copy(), gdm[-1].copy()
    gp, dgp = np.zeros(npar), np.zeros(npar)
    atol = spec.opts.get("atol")              # an array is y's; the rest get its least
    over = {}
    if atol is not None and np.ndim(atol) != 0:
        block = np.concatenate([np.ravel(atol), np.full(n + npar, np.min(atol))])
        over = {"atol": np.concatenate([block, block])}
    for k in range(len(tm) - 1, 0, -1):
        if tm[k] != tm[k - 1]:
            z0 = np.concatenate([yall[k], a, gp, dyall[k], da, dgp])
            z = spec.integrate(aug, z0, tm[k - 1:k + 1][::-1], None, **over)[-1]
            a, gp, da, dgp = z[n:2 * n], z[2 * n:b], z[b + n:b + 2 * n], z[b + 2 * n:]
        a, da = a + gm[k - 1], da + gdm[k - 1]
    return da, dgp
