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
it. ``python benchmarks/ode_adjoint.py [--quick]`` prints a Markdown table.
"""

import sys
import time
import tracemalloc

import numpy as np
from scipy.integrate import odeint as sp_odeint

import chainrules as cr
from chainrules.scipy.integrate import odeint

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
    return rows


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
