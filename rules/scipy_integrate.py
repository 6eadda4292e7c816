"""ODE solutions differentiated by the adjoint method (registered only when
SciPy is installed); the public twins are ``chainrules.scipy.integrate.odeint``
and ``solve_ivp``.

``ode_solve(y0, t, *params, _spec=...)`` is one operation: the solution of
``y' = f(y, s, *params)`` from ``y(t[0]) = y0``, sampled at every ``t[i]``
(shape ``(len(t), n)``), computed by SciPy's ``odeint`` or ``solve_ivp``.
``params`` are the leaves of the user's ``args`` followed by the values
being differentiated that the right-hand side closes over: the twins find
those with ``chainrules.capture.closure_convert``, and ``f`` then takes them
as trailing arguments, so they are differentiated exactly as ``args`` are.

* Reverse mode, small systems (forward sensitivities): when the state has
  ``n`` entries and ``m`` scalars are differentiated (the entries of ``y0``,
  or ``t[0]`` alone, and of the traced parameters) with ``n (1 + m)`` at most
  ``SENSITIVITY_MAX_STATE``, the sensitivities ``Z = dy/d(inputs)`` (n x m)
  are integrated with ``y`` in one forward solve, ``Z' = f_y Z + f_p P``,
  and the cotangents are ``sum_i Z(t[i])^T g[i]``. The solver's state is
  ``[y, Z^T]`` (each direction's ``n`` entries together), and its
  right-hand side ``[f, f_y Z + f_p P]`` is one traced evaluation of the
  user's and one batched forward sweep of its ``m`` directions (no copies
  of the inputs: nothing else sees them), staged as one plan that takes
  ``y``, ``Z^T``, the time, the parameters and their directions as flat
  arguments (``sensitivity_rhs``), so a step is one replay. An implicit
  solver's Jacobian needs ``[f_y, f_p]`` itself, one reverse sweep of ``n``
  directions (``rhs_jacobian``). The sensitivities
  are kept, so further pullbacks of the same solution are sums only. This
  needs no restart at each output time, which is what makes the adjoint
  slow on small systems with many outputs.
* Reverse mode, larger systems (adjoint method): with ``a(s) = dL/dy(s)``, integrate
  ``[y, a, g_p]' = [f, -a^T f_y, -a^T f_p]`` backwards from ``t[-1]`` to
  ``t[0]`` with SciPy's own solver, interval by interval, adding the output
  cotangent ``g[i]`` to ``a`` at each ``t[i]`` and restarting ``y`` from the
  saved forward solution at the outputs and at ``CHECKPOINTS`` evenly spaced
  times. Memory is independent of the number of solver steps.
  The vector-Jacobian products ``a^T f_y`` and ``a^T f_p`` of the user's NumPy
  right-hand side come from ``chainrules.vjp``. Time points:
  ``dL/dt[i] = g[i] . f(y(t[i]), t[i])`` for ``i >= 1`` and
  ``dL/dt[0] = -a(t[0]) . f(y0, t[0])`` (in the sensitivity method,
  ``t[0]`` moves the start along ``-f(y0, t[0])``).
* The augmented systems are solved with the user's solver and tolerances.
  Implicit solvers get the sensitivity system's Jacobian: ``f_y`` on the
  block of each direction, exactly, and the ``n`` columns of ``y`` (second
  derivatives of ``f``) by differences, rather than differencing all
  ``n (1 + m)`` columns (dropping those ``y`` columns instead makes SciPy's
  BDF and Radau take many times more steps). A derivative's solve that the
  solver does not complete raises ``NumericalInstabilityError``; the adjoint
  method, which integrates ``y`` backwards, fails that way on stiff systems.
* Forward mode: the variational equation ``z' = f_y z + f_p p'`` integrated
  alongside ``y`` (``chainrules.jvp`` of the right-hand side), with
  ``z(t[0]) = y0' - f(y0, t[0]) t[0]'``; the output tangent at ``t[i]`` adds
  ``f(y(t[i]), t[i]) t[i]'``.
* Second order (``pullback_with_tangents``, the HVP sweep of
  ``chainrules.hvp``, ``hessian``, ``hessian_operator``): the tangent of the
  first-order solve, in rules/scipy_integrate_second.py: below
  ``SENSITIVITY_MAX_STATE`` the sensitivities integrated with their
  tangents in one forward solve, above it the adjoint system integrated
  backwards with its tangent system, the state's tangent restarted from the
  variational solution (``_flow``, the pushforward's). Not supported
  (``HvpNotSupported``, naming what works): second derivatives in the time
  points, and nested differentiation (grad of grad), where an outer
  differentiation traces the inputs of these plain-value solves.
"""

import numpy as np

from chainrules.api import vjp
from chainrules.arguments import trace_args
from chainrules.errors import HvpNotSupported, NumericalInstabilityError
from chainrules.graph import Tape
from chainrules.registry import register
from chainrules.rule import ReverseRule
from chainrules.tangents import is_zero
from chainrules.primitives import primitive
from chainrules.tracing import Traced, holds_traced, is_traced

from ._util import on_demand_family
from .scipy_integrate_plans import staged
from .scipy_integrate_second import NO_NESTED, as_vector, ode_pullback_with_tangents, rhs_of

try:
    import scipy.integrate as si
except ImportError:  # pragma: no cover - SciPy is an optional extra
    si = None

_family_loaded = on_demand_family()

__all__ = ["ode_solve", "OdeSpec", "SENSITIVITY_MAX_STATE"]

#: ``OdeSpec.integrate``'s default: the system is the user's own, with the
#: user's Jacobian options
USER_JACOBIAN = object()

#: what ``odeint(full_output=True)`` reports when it completed (times all
#: equal: nothing to do); anything else is a failure
_ODEINT_DONE = ("Integration successful.", "Nothing was done; the integration time was 0.")

#: the ``solve_ivp`` methods that use a Jacobian
_IMPLICIT = ("BDF", "Radau", "LSODA")

#: reverse mode integrates forward sensitivities (see above) when the state
#: with its sensitivities, ``n (1 + m)`` numbers, is at most this long; above
#: it, the adjoint method. Below it the sensitivities cost one forward solve
#: of a short augmented state, with one Jacobian product of the right-hand
#: side per step (one traced evaluation, ``m`` forward directions), where
#: the adjoint restarts its solver at every output time and checkpoint; above
#: it the state and the dense Jacobian an implicit solver factorises grow as
#: ``n m`` and ``(n m)^2``.
SENSITIVITY_MAX_STATE = 256


class OdeSpec:
    """What ``ode_solve`` integrates: the user's right-hand side, the calling
    convention (``tfirst``), the solver (``"odeint"`` or a ``solve_ivp``
    method) and its options. ``sensitivity_max`` overrides
    ``SENSITIVITY_MAX_STATE`` (0: always the adjoint method). ``origin``:
    ``(the user's function, a hashable of how ``func`` wraps it)``, under
    which (with ``tfirst``) the staged derivatives of ``func`` are kept
    across solves (rules/scipy_integrate_plans.py); None keeps them for
    this solve only.
    ``plain``: the function ``func`` converts closures for, when it captured
    none, or a copy of it whose cells hold the captured values passed after
    its arguments (``scipy_integrate_plans.plain_cells``): the forward
    solve on plain values calls it without the capture's checks, which only
    a traced result needs."""

    __slots__ = ("func", "tfirst", "solver", "opts", "name", "sensitivity_max", "plans",
                 "origin", "plain")

    def __init__(self, func, tfirst, solver, opts, name, sensitivity_max=None, origin=None,
                 plain=None):
        self.func, self.tfirst, self.solver, self.opts, self.name = \
            func, tfirst, solver, dict(opts), name
        self.sensitivity_max = sensitivity_max
        self.origin = None if origin is None else (origin[0], (origin[1], tfirst))
        self.plain = plain
        self.plans = {}  # this solve's staged derivatives of the right-hand side

    def f(self, y, s, params):
        return self.func(s, y, *params) if self.tfirst else self.func(y, s, *params)

    def integrate(self, rhs, z0, times, jac=USER_JACOBIAN, **override):
        """Solve ``z' = rhs(z, s)`` at ``times`` (rows), with the user's solver.
        ``jac``: ``USER_JACOBIAN`` (the user's options as given: the system is
        the user's), else the Jacobian ``jac(z, s)`` of an augmented system or
        None; the user's Jacobian options (of the original system) are then
        dropped. ``override``: options replacing the user's (``atol`` per entry
        of an augmented state)."""
        times = np.asarray(times, dtype=float)
        opts = {k: v for k, v in {**self.opts, **override}.items() if v is not None}
        if jac is not USER_JACOBIAN:
            for k in ("Dfun", "jac", "jac_sparsity", "lband", "uband", "ml", "mu"):
                opts.pop(k, None)
        if self.solver == "odeint":
            if jac is USER_JACOBIAN:
                return si.odeint(rhs, z0, times, **opts)
            out, info = si.odeint(rhs, z0, times, Dfun=jac, full_output=True, **opts)
            if info["message"] not in _ODEINT_DONE:
                self._failed(info["message"])
            return out
        if jac not in (None, USER_JACOBIAN) and self.solver in _IMPLICIT:
            opts["jac"] = lambda s, z: jac(z, s)
        out = np.empty((len(times), z0.size))
        out[0] = z0
        if times[-1] == times[0]:  # monotonic times, all equal: every row is z0
            out[1:] = z0
        else:
            sol = si.solve_ivp(lambda s, z: rhs(z, s), (times[0], times[-1]), z0,
                               method=self.solver, t_eval=times, **opts)
            if not sol.success:
                if jac is not USER_JACOBIAN:
                    self._failed(sol.message)
                raise RuntimeError(f"{self.name}: solve_ivp failed: {sol.message}")
            out[:] = sol.y.T
        return out

    def _failed(self, message):
        """A derivative's solve that SciPy did not complete: refused, rather
        than the derivative made of its partial result."""
        raise NumericalInstabilityError(
            f"{self.name}: the solver ({self.solver}) failed on the system that gives "
            f"the derivative ({message}); no derivative is returned rather than a wrong "
            "one. The adjoint method integrates the state backwards, which diverges on "
            "stiff systems: differentiate fewer values at once (forward sensitivities "
            "are used while the state times the differentiated values is at most "
            "chainrules.rules.scipy_integrate.SENSITIVITY_MAX_STATE), or change the "
            "tolerances or the method")


#: the forward solution is also kept at this many evenly spaced checkpoints, from
#: which the backward (adjoint) solve restarts ``y``: integrating a contracting
#: system backwards over a long horizon amplifies errors, and restarting bounds
#: that, with memory still independent of the number of solver steps
CHECKPOINTS = 16


def _grid(t):
    """Output times merged with the checkpoints: (times, index of each t)."""
    t = np.asarray(t, dtype=float)
    steps = np.diff(np.ravel(t))
    if not (np.all(steps >= 0) or np.all(steps <= 0)):
        # as SciPy's odeint: the solution starts from t[0], so t[0] must be
        # the first time in the direction of integration
        raise ValueError("The values in t must be monotonically increasing or "
                         "monotonically decreasing; repeated values are allowed.")
    if t.size < 2 or t[-1] == t[0]:
        return t, np.arange(t.size)
    grid = np.linspace(t[0], t[-1], CHECKPOINTS + 1)
    merged = np.unique(np.concatenate([t, grid]))
    if t[-1] < t[0]:
        merged = merged[::-1]
        pos = len(merged) - 1 - np.searchsorted(merged[::-1], t)
    else:
        pos = np.searchsorted(merged, t)
    return merged, pos


def _solve_all(y0, t, params, spec):
    plain = spec.plain

    def rhs(y, s):
        if plain is not None:
            out = plain(s, y, *params) if spec.tfirst else plain(y, s, *params)
            if type(out) is np.ndarray or type(out) in (list, tuple) and not holds_traced(out):
                return np.asarray(out, dtype=float)
        # a traced result (a value being differentiated that the function
        # did not use at the initial point) raises there, naming it
        return np.asarray(spec.f(y, s, params), dtype=float)

    tm, pos = _grid(t)
    return spec.integrate(rhs, np.asarray(y0, dtype=float), tm), tm, pos


def _ode_solve_impl(y0, t, *params, _spec):
    return _solve_all(y0, t, params, _spec)[0][_grid(t)[1]]


ode_solve = primitive(_ode_solve_impl)
ode_solve.__name__ = "ode_solve"


def _diff_param(p):
    return hasattr(p, "dtype") and np.asarray(p).dtype.kind == "f" or isinstance(p, float)



def rhs_jacobian(spec, y, s, params, pidx, seeds=None):
    """``(f, J)`` at ``(y, s)`` on plain values: ``J = [f_y, f_p]`` has a row
    per entry of ``f`` and a column per entry of ``y``, then of each
    ``params[k]`` for ``k`` in ``pidx``. One traced evaluation of the
    right-hand side (traced again at every point: it may branch on values)
    and one reverse sweep of all its output directions at once (``seeds``,
    the identity of that size, may be passed in)."""
    out, rows = staged(spec, ("jacobian", tuple(pidx)), _jacobian_of)(y, s, params, seeds)
    n = np.size(out)
    if len(rows) == 1:
        return np.asarray(out, dtype=float), np.asarray(rows[0], dtype=float)
    jac = np.concatenate([np.reshape(np.asarray(r, dtype=float), (n, -1)) for r in rows],
                         axis=1)
    return np.asarray(out, dtype=float), jac


def _jacobian_of(spec, pidx):
    def rhs_jacobian_rows(y, s, params, seeds):
        f_of = rhs_of(spec, params, pidx, s)
        out, back = vjp(f_of, y, *[params[k] for k in pidx])
        n = np.size(out)
        return out, back.many(np.eye(n) if seeds is None else seeds)

    return rhs_jacobian_rows


def _sensitivity_rhs_of(spec, pidx):
    def sensitivity_rhs(y, zs, s, *params):
        tape = Tape()
        ps = [params[k] for k in pidx]
        try:
            targs, specs = trace_args(tape, (y, *ps), range(1 + len(pidx)), spec.name)
            out = rhs_of(spec, params, pidx, s)(*targs)
        finally:
            tape.active = False
        if not (type(out) is Traced and out.tape is tape):  # f independent of y and p
            return np.concatenate((out, np.zeros(np.shape(zs))), axis=None)
        m = len(zs)
        seeds = {specs[0].ids[0]: zs}
        for a, d in zip(specs[1:], unit_directions(m, [getattr(p, "shape", ()) for p in ps])):
            seeds[a.ids[0]] = d
        dz = tape.forward(seeds, batch=m)[out.node]
        tape.free()
        if dz is None:
            dz = np.zeros(np.shape(zs))
        return np.concatenate((out.value, dz), axis=None)

    return sensitivity_rhs


def unit_directions(m, shapes):
    """The differentiated parameters' directions in the sensitivity system,
    one batch (``(m,) + shape``) per parameter: the unit directions after
    the ``m - (their entries)`` leading ones (of ``y0``, or ``t[0]``),
    entry by entry. They depend on shapes alone, so a staged plan holds
    them as constants."""
    eye = np.eye(m)
    off = m - sum(int(np.prod(shape, dtype=int)) for shape in shapes)
    out = []
    for shape in shapes:
        size = int(np.prod(shape, dtype=int))
        out.append(np.reshape(eye[:, off:off + size], (m,) + tuple(shape)))
        off += size
    return out


def sensitivity_rhs(spec, y, zs, s, params, pidx):
    """The right-hand side of the sensitivity system (``sensitivities``):
    ``[f, f_y Z + f_p P]`` at ``y`` and ``Z`` (``zs``: ``Z^T``, a row per
    direction), flat, where ``P`` holds the parameters' unit directions
    (``unit_directions``). One traced evaluation of the right-hand side and
    one forward sweep of its ``m`` directions, staged as one plan with the
    products the solver needs: a step replays one plan and runs no Python
    of its own. Its arguments are arrays and numbers (no containers), which
    a replay compares without a key."""
    return staged(spec, ("sensitivity", pidx), _sensitivity_rhs_of)(y, zs, s, *params)


def _vjp_of(spec, pidx):
    def rhs_vjp(y, s, params, a):
        out, back = vjp(rhs_of(spec, params, pidx, s), y, *[params[k] for k in pidx])
        return out, back(a)

    return rhs_vjp


def sensitivities(spec, y0, times, params, pidx, lead):
    """``Z(times)`` (len(times) x n x m), the derivatives of ``y(times)``
    along ``m`` directions: ``Z' = f_y Z + f_p P``, integrated with ``y`` in
    one solve of the user's solver and tolerances (an array ``atol`` is
    repeated for every direction). The first directions start at ``lead``
    (n x those directions: ``y0``'s identity, or ``t[0]``'s ``-f``) with
    ``P = 0``; each entry of the parameters at ``pidx`` is one more, from
    ``Z = 0`` with ``P`` its unit direction."""
    n, nl = np.shape(lead)
    pidx = tuple(pidx)
    npar = sum(int(np.prod(np.shape(params[k]), dtype=int)) for k in pidx)
    m = nl + npar
    z0 = np.concatenate([lead, np.zeros((n, npar))], axis=1)
    dp = np.concatenate([np.zeros((npar, nl)), np.eye(npar)], axis=1)
    seeds = np.eye(n)

    # the state is [y, Z^T.ravel()]: each direction's n entries together, so
    # that a step reads Z^T as a view and writes f_y Z + f_p dp as it comes
    def aug(z, s):
        return sensitivity_rhs(spec, z[:n], z[n:].reshape(m, n), s, params, pidx)

    def aug_of(z, fj):
        """``aug`` from the Jacobian ``fj`` at ``z`` (the implicit solvers'
        Jacobian below differences these, all from ``rhs_jacobian``)."""
        f, jm = fj
        dz = jm[:, :n] @ np.reshape(z[n:], (m, n)).T + jm[:, n:] @ dp
        return np.concatenate([f, np.ravel(dz.T)])

    def jac(z, s):
        """The augmented system's Jacobian: the sensitivities' block is
        ``f_y`` on each direction, exactly; the columns of ``y`` (which hold
        second derivatives) are differenced, ``n`` evaluations."""
        fj = rhs_jacobian(spec, z[:n], s, params, pidx, seeds)
        base = aug_of(z, fj)
        out = np.empty((z.size, z.size))
        out[:, n:] = 0.0
        out[n:, n:] = np.kron(np.eye(m), fj[1][:, :n])
        y = z[:n]
        scale = np.maximum(np.abs(y), 1e-6 * np.max(np.abs(y)) + 1e-12)
        for j in range(n):
            zj = np.array(z, dtype=float)
            zj[j] += np.sqrt(np.finfo(float).eps) * scale[j]
            out[:, j] = (aug_of(zj, rhs_jacobian(spec, zj[:n], s, params, pidx, seeds))
                         - base) / (zj[j] - z[j])
        return out

    atol = spec.opts.get("atol")
    over = {} if atol is None or np.ndim(atol) == 0 else {
        "atol": np.concatenate([np.ravel(atol), np.tile(np.ravel(atol), m)])}
    z = spec.integrate(aug, np.concatenate([np.asarray(y0, dtype=float),
                                            np.ravel(np.transpose(z0))]), times, jac, **over)
    return np.transpose(np.reshape(z[:, n:], (len(times), m, n)), (0, 2, 1))


class OdeRule(ReverseRule):
    """The adjoint (reverse) and variational (forward) rule of ``ode_solve``."""

    __slots__ = ("ids", "y0", "t", "params", "ys", "spec", "grid", "sens")

    def __init__(self, ids, y0, t, params, ys, spec, grid):
        self.ids, self.y0, self.t, self.params, self.ys, self.spec = \
            ids, y0, t, params, ys, spec
        self.grid = grid  # (merged times, index of each t in them, solution there)
        self.sens = None  # the forward sensitivities at t, once computed

    @property
    def name(self):
        return self.spec.name

    def inputs(self):
        return tuple(i for i in self.ids if i is not None)

    def _pidx(self):
        """Positions (in params) of the traced floating parameters."""
        return [k for k, i in enumerate(self.ids[2:]) if i is not None]

    def _f(self, y, s):
        """f(y, s) on plain values, as one float vector."""
        return np.asarray(as_vector(self.spec.f(y, s, self.params)), dtype=float)

    def _f_vjp(self, y, s, a, pidx):
        """(a^T f_y, [a^T f_p for traced p], f) at (y, s)."""
        out, cots = staged(self.spec, ("vjp", tuple(pidx)), _vjp_of)(
            y, s, list(self.params), a)
        return cots[0], cots[1:], np.asarray(out, dtype=float)

    def pullback(self, g):
        if is_traced(g):
            raise HvpNotSupported(NO_NESTED.format(name=self.name))
        g = np.asarray(g, dtype=float)
        n = self.ys.shape[1]
        pidx = self._pidx()
        npar = sum(int(np.prod(np.shape(self.params[k]), dtype=int)) for k in pidx)
        m = (n if self.ids[0] is not None else int(self.ids[1] is not None)) + npar
        limit = self.spec.sensitivity_max
        limit = SENSITIVITY_MAX_STATE if limit is None else limit
        if n * (1 + m) <= limit:
            a, gt0, gp = self._pull_sensitivities(g, pidx)
        else:
            a, gt0, gp = self._pull_adjoint(g, pidx, npar)
        return self._cotangents(g, a, gt0, gp, pidx)

    def _pull_sensitivities(self, g, pidx):
        """(a, dL/dt[0], dL/dparams) from the forward sensitivities, where
        ``a = sum_{i >= 1} (dy(t[i])/dy0)^T g[i]`` (None if y0 is constant)."""
        n = self.ys.shape[1]
        f0 = self._f(self.ys[0], float(np.ravel(self.t)[0]))
        if self.ids[0] is not None:
            lead = np.eye(n)                 # a column per entry of y0
        elif self.ids[1] is not None:
            lead = -f0[:, None]              # moving t[0] starts y along -f0
        else:
            lead = np.zeros((n, 0))
        if self.sens is None:
            tm, pos, _ = self.grid
            self.sens = sensitivities(self.spec, self.ys[0], tm, self.params, pidx, lead)[pos]
        cols = np.einsum("inm,in->m", self.sens[1:], g[1:])
        if self.ids[0] is not None:
            return cols[:n], -cols[:n] @ f0, cols[n:]
        return None, (cols[0] if lead.shape[1] else 0.0), cols[lead.shape[1]:]

    def _pull_adjoint(self, g, pidx, npar):
        """(a(t[0]) without g[0], dL/dt[0], dL/dparams) by the adjoint method."""
        n = self.ys.shape[1]

        def aug(z, s):
            y, a = z[:n], z[n:2 * n]
            gy, gps, fy = self._f_vjp(y, s, a, pidx)
            parts = [fy, -np.asarray(gy, dtype=float).ravel()]
            parts += [-np.asarray(gp, dtype=float).ravel() for gp in gps]
            return np.concatenate(parts)

        tm, pos, yall = self.grid
        gm = np.zeros((len(tm), n))
        np.add.at(gm, pos[1:], g[1:])        # a excludes g[0], which is y0's own
        a = gm[-1].copy()
        gp = np.zeros(npar)
        atol = self.spec.opts.get("atol")    # an array is y's; a and gp get its least
        over = {} if atol is None or np.ndim(atol) == 0 else {"atol": np.concatenate(
            [np.ravel(atol), np.full(n + npar, np.min(atol))])}
        for k in range(len(tm) - 1, 0, -1):
            if tm[k] != tm[k - 1]:
                z = self.spec.integrate(aug, np.concatenate([yall[k], a, gp]),
                                        tm[k - 1:k + 1][::-1], None, **over)
                a, gp = z[-1, n:2 * n], z[-1, 2 * n:]
            a = a + gm[k - 1]
        f0 = self._f(self.ys[0], float(np.ravel(self.t)[0]))
        return a, -a @ f0, gp

    def _cotangents(self, g, a, gt0, gp, pidx):
        """The pairs (input, cotangent) from ``a`` (y0's, without g[0]),
        dL/dt[0] and the parameters' cotangents ``gp`` (one vector)."""
        ts = np.asarray(self.t, dtype=float)
        out = []
        if self.ids[0] is not None:
            out.append((self.ids[0], np.reshape(a + g[0], np.shape(self.y0)).astype(
                np.result_type(self.y0, np.float64))))
        if self.ids[1] is not None:
            gt = np.zeros(len(ts))
            gt[0] = gt0
            for i in range(1, len(ts)):
                gt[i] = g[i] @ self._f(self.ys[i], ts[i])
            out.append((self.ids[1], np.reshape(gt, np.shape(self.t))))
        off = 0
        for k in pidx:
            shp = np.shape(self.params[k])
            sz = int(np.prod(shp, dtype=int))
            c = np.reshape(gp[off:off + sz], shp)
            off += sz
            out.append((self.ids[2 + k], c if shp else float(c)))
        return out

    def pushforward(self, tangents):
        it = iter(tangents)
        full = [next(it) if i is not None else None for i in self.ids]
        if any(is_traced(t) for t in full if t is not None and not is_zero(t)):
            raise HvpNotSupported(NO_NESTED.format(name=self.name))
        ts = np.asarray(self.t, dtype=float)

        def val(t, like):
            return np.zeros(np.shape(like)) if t is None or is_zero(t) else np.asarray(t, float)

        dy0 = val(full[0], self.y0).ravel()
        dt = val(full[1], self.t).ravel()
        pidx = [k for k in self._pidx() if not is_zero(full[2 + k])]
        dps = [val(full[2 + k], self.params[k]) for k in pidx]
        f0 = np.asarray(self.spec.f(self.ys[0], ts[0], self.params), dtype=float)
        out = self._flow(dy0 - f0 * dt[0], pidx, dps)[self.grid[1]]
        out[0] = dy0
        for i in range(1, len(ts)):
            if dt[i]:
                out[i] += np.asarray(self.spec.f(self.ys[i], ts[i], self.params), float) * dt[i]
        return out

    def _flow(self, dz0, pidx, dps):
        """The variational solution ``z' = f_y z + f_p p'`` from ``z(t[0]) =
        dz0`` on the rule's grid (times fixed; ``dps`` the directions of
        ``params[pidx]``), integrated alongside ``y`` with ``chainrules.jvp``
        of the right-hand side: rows of the grid by ``n``. The user's Jacobian
        options (of ``y`` alone) do not apply to the doubled system."""
        from chainrules.api import jvp

        n = self.ys.shape[1]
        params = list(self.params)

        def aug(z, s):
            f_of = rhs_of(self.spec, params, pidx, s)
            fy, tz = jvp(f_of, (z[:n], *[params[k] for k in pidx]), (z[n:], *dps))
            return np.concatenate([np.asarray(fy, float), np.asarray(tz, float).ravel()])

        atol = self.spec.opts.get("atol")   # an array is y's, and z's alike
        over = {} if atol is None or np.ndim(atol) == 0 else {
            "atol": np.concatenate([np.ravel(atol), np.ravel(atol)])}
        z = self.spec.integrate(aug, np.concatenate([self.ys[0], dz0]), self.grid[0], None,
                                **over)
        return z[:, n:].copy()

    def pullback_with_tangents(self, cotangent, cotangent_tangent, tangents):
        limit = self.spec.sensitivity_max
        limit = SENSITIVITY_MAX_STATE if limit is None else limit
        return ode_pullback_with_tangents(self, cotangent, cotangent_tangent, tangents, limit)


def _ode_maker(ids, y0, t, *params, _spec):
    if any(is_traced(v) for v in (y0, t) + params):
        raise HvpNotSupported(NO_NESTED.format(name=_spec.name))
    yall, tm, pos = _solve_all(y0, t, params, _spec)
    ys = yall[pos]
    ids = list(ids)
    for k, p in enumerate(params):  # integer/bool parameters get no derivative
        if ids[2 + k] is not None and not _diff_param(p):
            ids[2 + k] = None
    if ids[1] is not None and np.asarray(t).dtype.kind != "f":
        ids[1] = None
    return ys, OdeRule(tuple(ids), y0, t, params, ys, _spec, (tm, pos, yall))


if si is not None:
    register(ode_solve)(_ode_maker)

_family_loaded()
