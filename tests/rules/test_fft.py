"""np.fft rules: closed-form gradients (Parseval), Hermitian weighting of
irfft, padding/truncation, second order."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_rrule

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("norm,scale", [(None, 8.0), ("ortho", 1.0), ("forward", 1 / 8)])
def test_parseval_gradient(norm, scale):
    # sum |fft(x)|^2 = scale * sum |x|^2 for real x of length 8
    x = RNG.standard_normal(8)
    g = cr.grad(lambda x: np.sum(np.abs(np.fft.fft(x, norm=norm)) ** 2))(x)
    np.testing.assert_allclose(g, 2 * scale * x, rtol=1e-12)


def test_rfft_irfft_roundtrip_gradient_is_identity_projection():
    x = RNG.standard_normal(7)
    w = RNG.standard_normal(7)
    g = cr.grad(lambda x: np.sum(w * np.fft.irfft(np.fft.rfft(x), n=7)))(x)
    np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize("n", [None, 5, 6, 9])
def test_irfft_hermitian_weights_and_lengths(n):
    a = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
    check_rrule(np.fft.irfft, a, n=n)


@pytest.mark.parametrize("s", [None, (3, 5), (2, 2)])
def test_rfftn_irfftn_padding(s):
    x = RNG.standard_normal((3, 4))
    check_rrule(np.fft.rfftn, x, s=s, axes=(0, 1))
    check_rrule(np.fft.irfftn, np.fft.rfftn(x), s=s, axes=(0, 1))


def test_fft_hvp_of_power_spectrum():
    x = RNG.standard_normal(6)
    v = RNG.standard_normal(6)
    f = lambda x: np.sum(np.abs(np.fft.rfft(x)) ** 2)  # quadratic form
    h = cr.hvp(f, x, v)
    # Hessian is 2 * R^T R with R the (real-imag stacked) rfft matrix
    r = np.fft.rfft(np.eye(6), axis=0)
    hess = 2 * np.real(r.conj().T @ r)
    np.testing.assert_allclose(h, hess @ v, rtol=1e-10)


def test_shift_transposes():
    x = RNG.standard_normal((3, 4))
    w = RNG.standard_normal((3, 4))
    g = cr.grad(lambda x: np.sum(w * np.fft.fftshift(x, axes=1)))(x)
    np.testing.assert_allclose(g, np.fft.ifftshift(w, axes=1))
