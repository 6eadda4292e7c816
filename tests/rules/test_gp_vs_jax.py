"""A Gaussian-process marginal log-likelihood in plain NumPy (cholesky,
solve, slogdet): gradient and HVP against JAX, to 1e-10 relative."""

import numpy as np
import pytest

import chainrules as cr

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = pytest.importorskip("jax.numpy")

RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, size=(7, 2))
Y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * RNG.standard_normal(7)


def gp_nll(theta, xp, linalg):
    """Negative marginal log-likelihood of an RBF-kernel GP.

    theta = (log signal variance, log length scales (2), log noise variance).
    """
    log_sf2, log_l, log_sn2 = theta[0], theta[1:3], theta[3]
    z = X / xp.exp(log_l)
    sq = xp.sum(z * z, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2 * (z @ z.T)
    k = xp.exp(log_sf2) * xp.exp(-0.5 * d2) + xp.exp(log_sn2) * xp.eye(len(Y))
    chol = linalg.cholesky(k)
    w = linalg.solve(chol, Y)  # L^-1 y (a general solve on the triangle)
    alpha_term = xp.sum(w * w)
    sign, logdet = linalg.slogdet(k)
    return 0.5 * alpha_term + 0.5 * logdet + 0.5 * len(Y) * np.log(2 * np.pi)


def f_np(theta):
    return gp_nll(theta, np, np.linalg)


def f_jax(theta):
    return gp_nll(theta, jnp, jnp.linalg)


THETA = np.array([0.3, -0.2, 0.4, -1.5])
V = np.array([0.7, -0.4, 1.1, 0.3])


def _rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def test_value_matches_jax():
    assert abs(f_np(THETA) - float(f_jax(THETA))) <= 1e-12 * abs(f_np(THETA))


def test_gradient_matches_jax():
    g = cr.grad(f_np)(THETA)
    gj = np.asarray(jax.grad(f_jax)(THETA))
    assert _rel(g, gj) <= 1e-10


def test_hvp_matches_jax():
    hv = cr.hvp(f_np, THETA, V)
    hvj = np.asarray(jax.jvp(jax.grad(f_jax), (THETA,), (V,))[1])
    assert _rel(hv, hvj) <= 1e-10


def test_hessian_by_nested_grad_matches_jax():
    # grad of grad: the pullbacks are differentiated again
    hv = cr.grad(lambda t: np.sum(cr.grad(f_np)(t) * V))(THETA)
    hvj = np.asarray(jax.jvp(jax.grad(f_jax), (THETA,), (V,))[1])
    assert _rel(hv, hvj) <= 1e-10
