"""Gaussian-process regression: fit the kernel hyperparameters by maximum
marginal likelihood, then Laplace error bars from the Hessian.

Model: y = f(t) + noise, f ~ GP(0, k) with the RBF kernel
    k(t, t') = s2 * exp(-(t - t')^2 / (2 l^2)),   noise ~ N(0, n2),
so y ~ N(0, K + n2 I). The negative log marginal likelihood of
theta = (log l, log s2, log n2) is

    NLL(theta) = -chainrules.scipy.stats.multivariate_normal.logpdf(y, 0, K + n2 I),

plain NumPy through the differentiable twin of scipy.stats (a Cholesky
factor inside). ``cr.value_and_grad`` gives scipy.optimize.minimize its
``jac=True`` objective; ``cr.hessian`` at the optimum gives the Laplace
approximation of the posterior of theta (flat prior): cov = H^-1, whose
diagonal square roots are the error bars printed below. The gradient is
checked once against central finite differences.

Run: ``python examples/gaussian_process.py`` (``--quick``: fewer points).
"""

import argparse

import numpy as np
from scipy.optimize import minimize

import chainrules as cr
from chainrules.scipy import stats


def kernel(theta, t):
    """K + n2 I for theta = (log l, log s2, log n2)."""
    log_l, log_s2, log_n2 = theta[0], theta[1], theta[2]
    d2 = (t[:, None] - t[None, :]) ** 2
    K = np.exp(log_s2) * np.exp(-0.5 * d2 * np.exp(-2.0 * log_l))
    return K + np.exp(log_n2) * np.eye(len(t))


def nll(theta, t, y):
    return -stats.multivariate_normal.logpdf(y, np.zeros(len(t)), kernel(theta, t))


def main(quick=False):
    rng = np.random.default_rng(0)
    n = 30 if quick else 60
    t = np.sort(rng.uniform(-4.0, 4.0, n))
    true = np.array([np.log(0.9), np.log(1.5), np.log(0.1)])
    y = rng.multivariate_normal(np.zeros(n), kernel(true, t))

    objective = cr.value_and_grad(nll)
    theta0 = np.zeros(3)

    # the gradient once against central finite differences
    _, g = objective(theta0, t, y)
    h = 1e-6
    fd = np.array([(nll(theta0 + h * e, t, y) - nll(theta0 - h * e, t, y)) / (2 * h)
                   for e in np.eye(3)])
    print("gradient at theta0:", g)
    print("finite differences:", fd)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-6), (g, fd)

    res = minimize(objective, theta0, args=(t, y), jac=True, method="L-BFGS-B")
    print(f"L-BFGS-B: {res.nit} iterations, NLL {res.fun:.6f}, |grad| "
          f"{np.linalg.norm(res.jac):.2e}")
    assert res.success, res.message

    H = cr.hessian(nll)(res.x, t, y)
    assert np.allclose(H, H.T, rtol=1e-8, atol=1e-10)
    evals = np.linalg.eigvalsh(H)
    assert np.all(evals > 0), evals            # a minimum: positive definite
    err = np.sqrt(np.diag(np.linalg.inv(H)))
    names = ("log lengthscale", "log signal var", "log noise var")
    print(f"{'hyperparameter':>16}  {'estimate':>9}  {'+-':>6}  {'true':>7}")
    for name, est, e, tr in zip(names, res.x, err, true):
        print(f"{name:>16}  {est:9.4f}  {e:6.3f}  {tr:7.4f}")
    # the estimates should be within a few Laplace standard errors of the truth
    assert np.all(np.abs(res.x - true) < 4 * err + 0.5), (res.x, true, err)
    return res.x, err


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer data points")
    main(quick=parser.parse_args().quick)
