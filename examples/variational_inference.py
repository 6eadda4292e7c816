"""Black-box variational inference with the reparameterisation trick.

Target: a "banana" in two dimensions (a warped Gaussian, normalised, so its
log evidence is 0 and the ELBO is at most 0):

    log p(z) = norm.logpdf(z1, 0, 1.5) + norm.logpdf(z2, b (z1^2 - 1.5^2), 0.5)

Variational family: a diagonal Gaussian q(z) = N(mu, diag(sigma^2)) with
sigma = exp(rho). The ELBO

    ELBO(mu, rho) = E_q[log p(z)] + H[q]

is estimated with z = mu + sigma * eps, eps ~ N(0, I) drawn with plain values
(``scipy.stats.norm.rvs``; the reparameterised sample carries the derivative),
and H[q] is ``chainrules.scipy.stats.norm.entropy(scale=sigma)``. Adam steps
follow ``cr.grad`` of the estimate; the ELBO is printed as it climbs. With
matplotlib installed, the target's contours and samples of q are saved to a
PNG in the temporary directory (nothing is shown on screen).

Run: ``python examples/variational_inference.py`` (``--quick``: fewer steps).
"""

import argparse
import os
import tempfile

import numpy as np
import scipy.stats

import chainrules as cr
from chainrules.scipy import stats

BEND = 0.4


def log_p(z):
    """log density of the banana at the points z[..., 2]."""
    z1, z2 = z[..., 0], z[..., 1]
    return (stats.norm.logpdf(z1, 0.0, 1.5)
            + stats.norm.logpdf(z2, loc=BEND * (z1 ** 2 - 1.5 ** 2), scale=0.5))


def elbo(params, eps):
    """Monte Carlo ELBO over the rows of eps (n_samples x 2)."""
    mu, rho = params[:2], params[2:]
    sigma = np.exp(rho)
    z = mu + sigma * eps                                   # reparameterisation
    return np.mean(log_p(z)) + np.sum(stats.norm.entropy(scale=sigma))


def adam(grad_fn, x, steps, lr, rng, n_samples, report):
    m, v = np.zeros_like(x), np.zeros_like(x)
    b1, b2 = 0.9, 0.999
    for i in range(1, steps + 1):
        eps = scipy.stats.norm.rvs(size=(n_samples, 2), random_state=rng)
        g = -grad_fn(x, eps)                               # ascend the ELBO
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        x = x - lr * (m / (1 - b1 ** i)) / (np.sqrt(v / (1 - b2 ** i)) + 1e-8)
        report(i, x)
    return x


def plot(params, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    g1, g2 = np.meshgrid(np.linspace(-5, 5, 200), np.linspace(-4, 8, 200))
    dens = np.exp(log_p(np.stack([g1, g2], axis=-1)))
    rng = np.random.default_rng(1)
    q = params[:2] + np.exp(params[2:]) * rng.standard_normal((500, 2))
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.contour(g1, g2, dens, levels=8)
    ax.scatter(q[:, 0], q[:, 1], s=3, alpha=0.5, color="C1", label="samples of q")
    ax.legend()
    ax.set_xlabel("z1")
    ax.set_ylabel("z2")
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"saved {path}")


def main(quick=False):
    rng = np.random.default_rng(0)
    params = np.array([1.0, 2.0, 0.5, 0.5])                # mu1, mu2, rho1, rho2
    steps = 300 if quick else 2000
    big = scipy.stats.norm.rvs(size=(20000, 2), random_state=rng)
    start = elbo(params, big)
    print(f"step {0:5d}  ELBO {start:8.4f}")

    def report(i, x):
        if i % (steps // 6) == 0:
            print(f"step {i:5d}  ELBO {elbo(x, big[:4000]):8.4f}")

    params = adam(cr.grad(elbo), params, steps, 0.05, rng, 64, report)
    final = elbo(params, big)
    print(f"final ELBO {final:.4f} (at most log Z = 0); q: mu = {params[:2].round(3)}, "
          f"sigma = {np.exp(params[2:]).round(3)}")
    assert final > start + 0.5, (start, final)
    assert -1.0 < final < 0.02, final
    plot(params, os.path.join(tempfile.gettempdir(), "chainrules_variational_inference.png"))
    return params, final


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer Adam steps")
    main(quick=parser.parse_args().quick)
