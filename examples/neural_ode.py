"""Fit the parameters of an ODE to noisy observations with
``chainrules.scipy.integrate.odeint`` and its adjoint gradient.

The model is a small "neural" vector field ``y' = W2 tanh(W1 y + b1)`` whose
parameters are fitted, with SciPy's L-BFGS-B, to samples of a damped
oscillator. The gradient of the squared error with respect to every weight
comes from one backward (adjoint) ODE solve, whatever the number of solver
steps. Run ``python examples/neural_ode.py`` (``--quick`` for a short run);
the fit is plotted when matplotlib is installed.
"""

import sys

import numpy as np
from scipy.optimize import minimize

import chainrules as cr
from chainrules.scipy.integrate import odeint


def truth(y, t):
    return np.array([y[1], -y[0] - 0.3 * y[1]])


def field(y, t, w1, b1, w2):
    return w2 @ np.tanh(w1 @ y + b1)


def main(quick=False, seed=0):
    rng = np.random.default_rng(seed)
    hidden = 8
    t = np.linspace(0.0, 4.0 if quick else 8.0, 20 if quick else 40)
    y0 = np.array([1.0, 0.0])
    from scipy.integrate import odeint as sp_odeint

    data = sp_odeint(truth, y0, t) + 0.01 * rng.normal(size=(len(t), 2))
    shapes = [(hidden, 2), (hidden,), (2, hidden)]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(theta):
        out, off = [], 0
        for s, n in zip(shapes, sizes):
            out.append(np.reshape(theta[off:off + n], s))
            off += n
        return out

    def loss(theta):
        w1, b1, w2 = unpack(theta)
        pred = odeint(field, y0, t, args=(w1, b1, w2), rtol=1e-6, atol=1e-8)
        return np.mean((pred - data) ** 2)

    value_and_grad = cr.value_and_grad(loss)

    def fun(theta):
        v, g = value_and_grad(theta)
        return float(v), np.asarray(g, dtype=float)

    theta0 = 0.3 * rng.normal(size=sum(sizes))
    first = fun(theta0)[0]
    res = minimize(fun, theta0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 15 if quick else 200})
    print(f"loss {first:.4g} -> {res.fun:.4g} in {res.nit} iterations")
    if not quick:
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            return first, res.fun
        w1, b1, w2 = unpack(res.x)
        fit = sp_odeint(field, y0, t, args=(w1, b1, w2))
        plt.plot(t, data, "o", t, fit, "-")
        plt.xlabel("t")
        plt.savefig("neural_ode.png")
        print("saved neural_ode.png")
    return first, res.fun


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
