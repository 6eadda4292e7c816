"""Gradient of a loss through an ODE solution, three ways, as the number of
solver steps grows.

The system: ``y' = tanh(W y + theta) - 0.5 y`` in 100 dimensions (``W`` fixed,
random, scaled to spectral radius ~1), loss ``sum(y(T)^2)``, gradient with
respect to the 100 parameters ``theta``. The horizon ``T`` grows, so every
solver takes more steps:

* ``adjoint``: ``chainrules.scipy.integrate.odeint`` (LSODA, rtol 1e-8), whose
  gradient is one backward adjoint solve (memory independent of the steps);
* ``finite differences``: central differences of SciPy's ``odeint`` (2 x 100
  solves);
* ``naive RK4``: a fixed-step RK4 solver (h = 0.01) written in NumPy and
  differentiated by chainrules through every step (memory grows with steps).

Time is wall clock of one gradient; peak memory is tracemalloc's peak during
it.

A second table times a small system fitted at many outputs: the damped
oscillator ``y'' = -k y - c y'`` (2 states), 50 output times on [0, 10],
squared error against data, gradient with respect to ``(k, c)`` at rtol
1e-6, through ``odeint`` (``args``), ``odeint`` with ``k, c`` closed over,
and ``solve_ivp`` (RK45). Each is differentiated by the two reverse methods
of ``rules/scipy_integrate.py``: forward sensitivities (the default for
small systems) and the adjoint method (forced with ``SENSITIVITY_MAX_STATE =
0``; the only reverse method before the sensitivities). Columns: the
evaluations of the right-hand side's derivative (a ``vjp`` per adjoint
step, a Jacobian per sensitivity step), milliseconds of one
``value_and_grad`` (wall clock and process CPU time, minimum of repeats)
and the largest relative difference from central differences of SciPy's
``odeint`` at rtol 1e-10.

``python benchmarks/ode_adjoint.py [--quick]`` prints both Markdown tables.
"""

import sys
import time
import tracemalloc

import numpy as np
from scipy.integrate import odeint as sp_odeint

import chainrules as cr
from chainrules.rules import scipy_integrate as ode_rules
from chainrules.scipy.integrate import odeint, solve_ivp

N = 100
H = 0.01
RTOL, ATOL = 1e-8, 1e-10


def _system(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(N, N)) / np.sqrt(N)
    return w, rng.normal(size=N) * 0.5, rng.normal(size=N) * 0.1


W, Y0, THETA = _system()


def rhs(y, t, theta):
    return np.tanh(W @ y + theta) - 0.5 * y


def grad_adjoint(theta, horizon):
    return cr.grad(lambda th: np.sum(odeint(rhs, Y0, np.array([0.0, horizon]), args=(th,),
                                            rtol=RTOL, atol=ATOL)[-1] ** 2))(theta)


def _plain_loss(theta, horizon):
    return np.sum(sp_odeint(rhs, Y0, [0.0, horizon], args=(theta,), rtol=RTOL,
                            atol=ATOL)[-1] ** 2)


def grad_fd(theta, horizon, h=1e-5):
    g = np.zeros_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        g[i] = (_plain_loss(theta + e, horizon) - _plain_loss(theta - e, horizon)) / (2 * h)
    return g


def rk4_loss(theta, horizon):
    y = Y0
    steps = int(round(horizon / H))
    for k in range(steps):
        t = k * H
        k1 = rhs(y, t, theta)
        k2 = rhs(y + 0.5 * H * k1, t + 0.5 * H, theta)
        k3 = rhs(y + 0.5 * H * k2, t + 0.5 * H, theta)
        k4 = rhs(y + H * k3, t + H, theta)
        y = y + (H / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(y ** 2)


def grad_rk4(theta, horizon):
    return cr.grad(rk4_loss)(theta, horizon)


def measure(fn, *args):
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn(*args)
    dt = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, dt, peak / 2 ** 20


def main(quick=False):
    horizons = (1.0, 4.0) if quick else (1.0, 4.0, 16.0)
    rows = []
    for horizon in horizons:
        ga, ta, ma = measure(grad_adjoint, THETA, horizon)
        gf, tf, mf = measure(grad_fd, THETA, horizon)
        gr, tr, mr = measure(grad_rk4, THETA, horizon)
        steps = int(round(horizon / H))
        err_fd = np.max(np.abs(ga - gf)) / np.max(np.abs(gf))
        err_rk = np.max(np.abs(ga - gr)) / np.max(np.abs(gf))
        rows.append((horizon, steps, ta, ma, tf, mf, tr, mr, err_fd, err_rk))
    print("| T | RK4 steps | adjoint s | adjoint MiB | FD s | FD MiB | naive RK4 s | "
          "naive RK4 MiB | adjoint vs FD | adjoint vs RK4 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]:g} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | "
              f"{r[6]:.2f} | {r[7]:.1f} | {r[8]:.1e} | {r[9]:.1e} |")
    print()
    small = small_state(repeats=3 if quick else 7)
    return rows, small


# -- a small system at many output times ------------------------------------------
T_OSC = np.linspace(0.0, 10.0, 50)
Y0_OSC = np.array([1.0, 0.0])
P_OSC = np.array([1.5, 0.5])
DATA_OSC = sp_odeint(lambda y, t: [y[1], -2 * y[0] - 0.3 * y[1]], Y0_OSC, T_OSC, rtol=1e-6)


def osc(y, t, k, c):
    return np.stack([y[1], -k * y[0] - c * y[1]])


def osc_odeint(p):
    return np.sum((odeint(osc, Y0_OSC, T_OSC, args=(p[0], p[1]), rtol=1e-6) - DATA_OSC) ** 2)


def osc_closure(p):
    def rhs(y, t):
        return np.stack([y[1], -p[0] * y[0] - p[1] * y[1]])
    return np.sum((odeint(rhs, Y0_OSC, T_OSC, rtol=1e-6) - DATA_OSC) ** 2)


def osc_solve_ivp(p):
    sol = solve_ivp(lambda t, y, k, c: osc(y, t, k, c), (0.0, 10.0), Y0_OSC, t_eval=T_OSC[1:],
                    args=(p[0], p[1]), rtol=1e-6)
    return np.sum((sol.y.T - DATA_OSC[1:]) ** 2)


def osc_fd(h=1e-5):
    """Central differences of SciPy's odeint at rtol 1e-10."""
    def plain(p):
        ys = sp_odeint(osc, Y0_OSC, T_OSC, args=(p[0], p[1]), rtol=1e-10, atol=1e-12)
        return np.sum((ys - DATA_OSC) ** 2)
    return np.array([(plain(P_OSC + h * e) - plain(P_OSC - h * e)) / (2 * h)
                     for e in np.eye(2)])


class _Counted:
    """Counts the derivative evaluations of the right-hand side."""

    NAMES = ("rhs_jacobian", "sensitivity_rhs")

    def __enter__(self):
        self.n = 0
        self.saved = [getattr(ode_rules, k) for k in self.NAMES] + [ode_rules.OdeRule._f_vjp]

        def counting(fn):
            def counted(*a):
                self.n += 1
                return fn(*a)
            return counted
        for k, fn in zip(self.NAMES, self.saved):
            setattr(ode_rules, k, counting(fn))
        ode_rules.OdeRule._f_vjp = counting(self.saved[-1])
        return self

    def __exit__(self, *exc):
        for k, fn in zip(self.NAMES, self.saved):
            setattr(ode_rules, k, fn)
        ode_rules.OdeRule._f_vjp = self.saved[-1]


def time_small(loss, limit, repeats):
    """(derivative evaluations, wall ms, CPU ms, gradient) of value_and_grad(loss)."""
    saved = ode_rules.SENSITIVITY_MAX_STATE
    ode_rules.SENSITIVITY_MAX_STATE = limit
    try:
        vg = cr.value_and_grad(loss)
        with _Counted() as counted:
            g = vg(P_OSC)[1]
        wall, cpu = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            vg(P_OSC)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - t0)
        return counted.n, min(wall) * 1e3, min(cpu) * 1e3, g
    finally:
        ode_rules.SENSITIVITY_MAX_STATE = saved


def small_state(repeats=7):
    fd = osc_fd()
    rows = []
    for name, loss in (("odeint", osc_odeint), ("odeint, closure", osc_closure),
                       ("solve_ivp (RK45)", osc_solve_ivp)):
        for method, limit in (("adjoint", 0), ("sensitivities", ode_rules.SENSITIVITY_MAX_STATE)):
            n, wall, cpu, g = time_small(loss, limit, repeats)
            rows.append((name, method, n, wall, cpu, np.max(np.abs(g - fd) / np.abs(fd))))
    print("| problem | reverse method | derivative evaluations | wall ms | CPU ms | vs FD |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | {r[5]:.1e} |")
    return rows


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
