"""The DCT and DST of types 1-4 (``scipy.fft.dct``, ``dst`` and their
inverses) as NumPy FFTs of extended sequences, along the last axis of a real
array.

Every step is a NumPy call that has a rule (slicing, ``flip``,
``concatenate``, products with constant arrays, ``rfft``/``fft``/``irfft``,
``real``/``imag``), so on traced values the derivatives of any order come
from those rules: each transform is linear, and its transpose is the
composition of the transposes of its steps. Unnormalized, with ``N`` points
(SciPy's "backward" normalization):

* DCT-I ``y_k = x_0 + (-1)^k x_{N-1} + 2 sum_{n=1}^{N-2} x_n cos(pi k n/(N-1))``:
  the real FFT of the even extension ``x_0 .. x_{N-1}, x_{N-2} .. x_1``;
* DCT-II ``y_k = 2 sum_n x_n cos(pi k (2n+1)/(2N))``: the real FFT of
  ``x, flip(x)`` (length 2N) is ``exp(i pi k/(2N)) y_k``;
* DCT-III ``y_k = x_0 + 2 sum_{n>=1} x_n cos(pi n (2k+1)/(2N))``: the inverse
  real FFT (unscaled) of the half spectrum ``x_n exp(i pi n/(2N))``, whose
  Hermitian doubling gives the factor 2;
* DCT-IV ``y_k = 2 sum_n x_n cos(pi (2k+1)(2n+1)/(4N))``: twiddled FFT of
  length 2N;
* DST-I ``y_k = 2 sum_n x_n sin(pi (k+1)(n+1)/(N+1))``: minus the imaginary
  part of the real FFT of the odd extension ``0, x, 0, -flip(x)``;
* DST-II, III, IV from the DCT of the same type: ``dst2(x) =
  flip(dct2((-1)^n x))``, ``dst3(x) = (-1)^k dct3(flip(x))``, ``dst4(x) =
  (-1)^k dct4(flip(x))``.

The normalizations multiply by ``1/m`` ("forward") or ``1/sqrt(m)``
("ortho"), with ``m = 2(N-1)`` for DCT-I, ``2(N+1)`` for DST-I and ``2N``
otherwise; ``orthogonalize`` scales the first (DCT) or last (DST) entries of
the input or output by ``sqrt(2)`` so that the "ortho" matrices are
orthogonal, as SciPy does.
"""

import numpy as np


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)


def _phases(coef, n, dtype, offset=0.0):
    """``exp(i pi (coef k + offset))`` for ``k = 0 .. n-1``, as a constant in the
    complex dtype of ``dtype`` (computed in at least double precision, so a
    float32 transform gets correctly rounded constants and stays float32)."""
    work = np.result_type(dtype, np.float64)
    pi = np.arccos(work.type(-1))
    k = np.arange(n, dtype=work)
    return np.exp(1j * pi * (coef * k + offset)).astype(_complex_dtype(dtype))


def _alternating(n, dtype):
    """``(-1)^k`` for ``k = 0 .. n-1``."""
    return np.where(np.arange(n) % 2 == 0, 1, -1).astype(dtype)


def _flip(x):
    return np.flip(x, axis=-1)


def _dct1(x):
    n = x.shape[-1]
    if n < 2:
        raise RuntimeError("the DCT of type 1 needs at least 2 points (zero-length FFT "
                           "requested)")
    even = np.concatenate([x, _flip(x[..., 1:-1])], axis=-1)
    return np.real(np.fft.rfft(even, axis=-1))


def _dct2(x):
    n = x.shape[-1]
    spectrum = np.fft.rfft(np.concatenate([x, _flip(x)], axis=-1), axis=-1)[..., :n]
    return np.real(spectrum * _phases(-0.5 / n, n, x.dtype))


def _dct3(x):
    n = x.shape[-1]
    half = x * _phases(0.5 / n, n, x.dtype)
    return np.fft.irfft(half, n=2 * n, axis=-1, norm="forward")[..., :n]


def _dct4(x):
    n = x.shape[-1]
    spectrum = np.fft.fft(x * _phases(-0.5 / n, n, x.dtype), n=2 * n, axis=-1)[..., :n]
    return 2 * np.real(spectrum * _phases(-0.5 / n, n, x.dtype, offset=-0.25 / n))


def _dst1(x):
    n = x.shape[-1]
    zero = np.zeros(x.shape[:-1] + (1,), dtype=x.dtype)
    odd = np.concatenate([zero, x, zero, -_flip(x)], axis=-1)
    return -np.imag(np.fft.rfft(odd, axis=-1))[..., 1:n + 1]


def _dst2(x):
    return _flip(_dct2(x * _alternating(x.shape[-1], x.dtype)))


def _dst3(x):
    return _dct3(_flip(x)) * _alternating(x.shape[-1], x.dtype)


def _dst4(x):
    return _dct4(_flip(x)) * _alternating(x.shape[-1], x.dtype)


_KERNELS = {("dct", 1): _dct1, ("dct", 2): _dct2, ("dct", 3): _dct3, ("dct", 4): _dct4,
            ("dst", 1): _dst1, ("dst", 2): _dst2, ("dst", 3): _dst3, ("dst", 4): _dst4}


def _scale_length(kind, type, n):
    """``m`` of the normalizations: the length of the FFT the transform is."""
    if type == 1:
        return 2 * (n - 1) if kind == "dct" else 2 * (n + 1)
    return 2 * n


def _orthogonalizing_weights(kind, type, n, dtype):
    """``(w_in, w_out)``: the factors on the input and on the output that make
    the "ortho" transform orthogonal (None where there are none). The DCT-II
    output's first entry is divided by sqrt(2), so its transpose, the DCT-III,
    multiplies its first input by sqrt(2); the DST's are the last entries."""
    root2 = np.sqrt(np.dtype(dtype).type(2))
    edge = 0 if kind == "dct" else n - 1
    if kind == "dct" and type == 1:
        w_in = np.ones(n, dtype=dtype)
        w_in[[0, -1]] = root2
        return w_in, 1 / w_in
    w = np.ones(n, dtype=dtype)
    if type == 2:
        w[edge] = 1 / root2
        return None, w
    if type == 3:
        w[edge] = root2
        return w, None
    return None, None  # DCT-IV, DST-I, DST-IV: orthogonal once scaled


def real_transform_last(kind, type, x, norm, orthogonalize):
    """The DCT or DST (``kind``) of ``type`` of real ``x`` along its last axis,
    forward, with SciPy's ``norm`` ("backward" or None: unscaled) and
    ``orthogonalize`` (None: when ``norm`` is "ortho")."""
    kernel = _KERNELS[kind, type]
    n = x.shape[-1]
    if orthogonalize is None:
        orthogonalize = norm == "ortho"
    w_in, w_out = (_orthogonalizing_weights(kind, type, n, x.dtype) if orthogonalize
                   else (None, None))
    if w_in is not None:
        x = x * w_in
    y = kernel(x)
    m = x.dtype.type(_scale_length(kind, type, n))
    scale = {"ortho": 1 / np.sqrt(m), "forward": 1 / m}.get(norm)
    if scale is not None:
        w_out = np.full(n, scale, dtype=x.dtype) if w_out is None else w_out * scale
    if w_out is not None:
        y = y * w_out
    return y
