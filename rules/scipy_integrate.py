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

* Reverse mode (adjoint method): with ``a(s) = dL/dy(s)``, integrate
  ``[y, a, g_p]' = [f, -a^T f_y, -a^T f_p]`` backwards from ``t[-1]`` to
  ``t[0]`` with SciPy's own solver, interval by interval, adding the output
  cotangent ``g[i]`` to ``a`` at each ``t[i]`` and restarting ``y`` from the
  saved forward solution at the outputs and at ``CHECKPOINTS`` evenly spaced
  times. Memory is independent of the number of solver steps.
  The vector-Jacobian products ``a^T f_y`` and ``a^T f_p`` of the user's NumPy
  right-hand side come from ``chainrules.vjp``. Time points:
  ``dL/dt[i] = g[i] . f(y(t[i]), t[i])`` for ``i >= 1`` and
  ``dL/dt[0] = -a(t[0]) . f(y0, t[0])``.
* Forward mode: the variational equation ``z' = f_y z + f_p p'`` integrated
  alongside ``y`` (``chainrules.jvp`` of the right-hand side), with
  ``z(t[0]) = y0' - f(y0, t[0]) t[0]'``; the output tangent at ``t[i]`` adds
  ``f(y(t[i]), t[i]) t[i]'``.
* Second order is not supported (``HvpNotSupported``): the adjoint solve runs
  on plain values inside SciPy.
"""

import numpy as np

from chainrules.errors import HvpNotSupported
from chainrules.registry import register
from chainrules.rule import ReverseRule
from chainrules.tangents import is_zero
from chainrules.primitives import primitive
from chainrules.tracing import is_traced

from ._util import on_demand_family

try:
    import scipy.integrate as si
except ImportError:  # pragma: no cover - SciPy is an optional extra
    si = None

_family_loaded = on_demand_family()

__all__ = ["ode_solve", "OdeSpec"]

_NO_HVP = ("{name}: second derivatives (HVP, grad of grad) through an ODE solution are "
           "not supported: the adjoint system is solved by SciPy on plain values. Use "
           "finite differences of chainrules.grad for the Hessian-vector product, or "
           "differentiate a fixed-step solver written in NumPy")


class OdeSpec:
    """What ``ode_solve`` integrates: the user's right-hand side, the calling
    convention (``tfirst``), the solver (``"odeint"`` or a ``solve_ivp``
    method) and its options."""

    __slots__ = ("func", "tfirst", "solver", "opts", "name")

    def __init__(self, func, tfirst, solver, opts, name):
        self.func, self.tfirst, self.solver, self.opts, self.name = \
            func, tfirst, solver, dict(opts), name

    def f(self, y, s, params):
        return self.func(s, y, *params) if self.tfirst else self.func(y, s, *params)

    def integrate(self, rhs, z0, times):
        """Solve ``z' = rhs(z, s)`` at ``times`` (rows), with the user's solver."""
        times = np.asarray(times, dtype=float)
        if self.solver == "odeint":
            opts = {k: v for k, v in self.opts.items() if v is not None}
            return si.odeint(rhs, z0, times, **opts)
        out = np.empty((len(times), z0.size))
        out[0] = z0
        if times[-1] == times[0]:  # monotonic times, all equal: every row is z0
            out[1:] = z0
        else:
            sol = si.solve_ivp(lambda s, z: rhs(z, s), (times[0], times[-1]), z0,
                               method=self.solver, t_eval=times, **self.opts)
            if not sol.success:
                raise RuntimeError(f"{self.name}: solve_ivp failed: {sol.message}")
            out[:] = sol.y.T
        return out


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
    def rhs(y, s):
        return np.asarray(spec.f(y, s, params), dtype=float)

    tm, pos = _grid(t)
    return spec.integrate(rhs, np.asarray(y0, dtype=float), tm), tm, pos


def _ode_solve_impl(y0, t, *params, _spec):
    return _solve_all(y0, t, params, _spec)[0][_grid(t)[1]]


ode_solve = primitive(_ode_solve_impl)
ode_solve.__name__ = "ode_solve"


def _diff_param(p):
    return hasattr(p, "dtype") and np.asarray(p).dtype.kind == "f" or isinstance(p, float)


class OdeRule(ReverseRule):
    """The adjoint (reverse) and variational (forward) rule of ``ode_solve``."""

    __slots__ = ("ids", "y0", "t", "params", "ys", "spec", "grid")

    def __init__(self, ids, y0, t, params, ys, spec, grid):
        self.ids, self.y0, self.t, self.params, self.ys, self.spec = \
            ids, y0, t, params, ys, spec
        self.grid = grid  # (merged times, index of each t in them, solution there)

    @property
    def name(self):
        return self.spec.name

    def inputs(self):
        return tuple(i for i in self.ids if i is not None)

    def _pidx(self):
        """Positions (in params) of the traced floating parameters."""
        return [k for k, i in enumerate(self.ids[2:]) if i is not None]

    def _f_vjp(self, y, s, a, pidx):
        """(a^T f_y, [a^T f_p for traced p], f) at (y, s)."""
        params = list(self.params)

        def f_of(yy, *ps):
            full = list(params)
            for k, v in zip(pidx, ps):
                full[k] = v
            return self.spec.f(yy, s, full)

        from chainrules.api import vjp

        out, back = vjp(f_of, y, *[params[k] for k in pidx])
        cots = back(a)
        return cots[0], cots[1:], np.asarray(out, dtype=float)

    def pullback(self, g):
        if is_traced(g):
            raise HvpNotSupported(_NO_HVP.format(name=self.name))
        g = np.asarray(g, dtype=float)
        ts = np.asarray(self.t, dtype=float)
        ys = self.ys
        n = ys.shape[1]
        pidx = self._pidx()
        shapes = [np.shape(self.params[k]) for k in pidx]
        sizes = [int(np.prod(s)) for s in shapes]
        npar = sum(sizes)

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
        gt = np.zeros(len(ts))
        for i in range(1, len(ts)):
            gt[i] = g[i] @ np.asarray(self.spec.f(ys[i], ts[i], self.params), dtype=float)
        for k in range(len(tm) - 1, 0, -1):
            if tm[k] != tm[k - 1]:
                z = self.spec.integrate(aug, np.concatenate([yall[k], a, gp]),
                                        tm[k - 1:k + 1][::-1])
                a, gp = z[-1, n:2 * n], z[-1, 2 * n:]
            a = a + gm[k - 1]
        f0 = np.asarray(self.spec.f(ys[0], ts[0], self.params), dtype=float)
        gt[0] = -a @ f0
        gy0 = a + g[0]
        out = []
        if self.ids[0] is not None:
            out.append((self.ids[0], np.reshape(gy0, np.shape(self.y0)).astype(
                np.result_type(self.y0, np.float64))))
        if self.ids[1] is not None:
            out.append((self.ids[1], np.reshape(gt, np.shape(self.t))))
        off = 0
        for k, shp, sz in zip(pidx, shapes, sizes):
            c = np.reshape(gp[off:off + sz], shp)
            off += sz
            out.append((self.ids[2 + k], c if shp else float(c)))
        return out

    def pushforward(self, tangents):
        it = iter(tangents)
        full = [next(it) if i is not None else None for i in self.ids]
        if any(is_traced(t) for t in full if t is not None and not is_zero(t)):
            raise HvpNotSupported(_NO_HVP.format(name=self.name))
        ts = np.asarray(self.t, dtype=float)
        n = self.ys.shape[1]

        def val(t, like):
            return np.zeros(np.shape(like)) if t is None or is_zero(t) else np.asarray(t, float)

        dy0 = val(full[0], self.y0).ravel()
        dt = val(full[1], self.t).ravel()
        pidx = [k for k in self._pidx() if not is_zero(full[2 + k])]
        dps = [val(full[2 + k], self.params[k]) for k in pidx]
        f0 = np.asarray(self.spec.f(self.ys[0], ts[0], self.params), dtype=float)
        from chainrules.api import jvp

        def aug(z, s):
            y, dz = z[:n], z[n:]
            params = list(self.params)

            def f_of(yy, *ps):
                p2 = list(params)
                for k, v in zip(pidx, ps):
                    p2[k] = v
                return self.spec.f(yy, s, p2)

            fy, tz = jvp(f_of, (y, *[params[k] for k in pidx]), (dz, *dps))
            return np.concatenate([np.asarray(fy, float), np.asarray(tz, float).ravel()])

        tm, pos, _ = self.grid
        z = self.spec.integrate(aug, np.concatenate([self.ys[0], dy0 - f0 * dt[0]]), tm)
        out = z[pos, n:].copy()
        out[0] = dy0
        for i in range(1, len(ts)):
            if dt[i]:
                out[i] += np.asarray(self.spec.f(self.ys[i], ts[i], self.params), float) * dt[i]
        return out

    def pullback_with_tangents(self, cotangent, cotangent_tangent, tangents):
        raise HvpNotSupported(_NO_HVP.format(name=self.name))


def _ode_maker(ids, y0, t, *params, _spec):
    if any(is_traced(v) for v in (y0, t) + params):
        raise HvpNotSupported(_NO_HVP.format(name=_spec.name))
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
