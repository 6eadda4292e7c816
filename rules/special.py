"""``scipy.special`` (registered only when SciPy is installed).

The ufuncs are one ``scalar_rule`` each, with their second derivatives for
HVPs. Derivatives are taken in the continuous arguments only: the order
``v`` of ``iv``/``ive`` and ``s`` of ``zeta(s, q)`` are constants (asking
for their derivative raises ``MissingRuleError``).

``polygamma``, ``logsumexp``, ``softmax`` and ``log_softmax`` are plain Python
functions in SciPy that convert their inputs with ``np.asarray``: on traced
values they raise ``UntraceableError``. Their differentiable versions live
here: ``chainrules.rules.special.logsumexp`` (same signature, ``b`` weights,
``keepdims``, ``return_sign``), ``softmax``, ``log_softmax``,
``polygamma(n, x)`` (differentiable in ``x``; ``zeta`` underneath) and
``multigammaln(a, d)`` (differentiable in ``a``; ``gammaln`` underneath).
"""

import numpy as np

from chainrules.errors import MissingRuleError
from chainrules.tracing import is_traced

from ._util import array_value, no_derivative, on_demand_family

try:
    import scipy.special as sc
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sc = None

# a family of its own once scipy.special is imported (chainrules.rules)
_family_loaded = on_demand_family()

__all__ = ["logsumexp", "softmax", "log_softmax", "polygamma", "multigammaln", "softplus"]

# Python floats, so that float32 stays float32 (NumPy 2 promotion)
_SQRT_PI = float(np.sqrt(np.pi))
_SQRT_2PI = float(np.sqrt(2 * np.pi))


def _no_derivative(what):
    return no_derivative("scipy.special", what)


def _register():
    from chainrules.derived import scalar_rule

    trigamma = _trigamma_real

    # logistic
    scalar_rule(sc.expit, lambda x, y: y * (1 - y),
                second=lambda x, y: y * (1 - y) * (1 - 2 * y),
                second_ratio=lambda x, y: 1 - 2 * y, saves="y")
    scalar_rule(sc.logit, lambda x, y: 1 / (x * (1 - x)),
                second=lambda x, y: (2 * x - 1) / (x * (1 - x)) ** 2, saves="x")
    scalar_rule(sc.log_expit, lambda x, y: sc.expit(-x),
                second=lambda x, y: -sc.expit(x) * sc.expit(-x), saves="x")
    # error functions and normal distribution
    scalar_rule(sc.erf, lambda x, y: 2 / _SQRT_PI * np.exp(-x * x),
                second=lambda x, y: -4 / _SQRT_PI * x * np.exp(-x * x), saves="x")
    scalar_rule(sc.erfc, lambda x, y: -2 / _SQRT_PI * np.exp(-x * x),
                second=lambda x, y: 4 / _SQRT_PI * x * np.exp(-x * x), saves="x")
    scalar_rule(sc.erfinv, lambda x, y: _SQRT_PI / 2 * np.exp(y * y),
                second=lambda x, y: y * (np.pi / 2) * np.exp(2 * y * y), saves="y")
    scalar_rule(sc.ndtr, lambda x, y: np.exp(-x * x / 2) / _SQRT_2PI,
                second=lambda x, y: -x * np.exp(-x * x / 2) / _SQRT_2PI, saves="x")
    scalar_rule(sc.ndtri, lambda x, y: _SQRT_2PI * np.exp(y * y / 2),
                second=lambda x, y: y * (2 * np.pi) * np.exp(y * y), saves="y")
    scalar_rule(sc.log_ndtr, lambda x, y: np.exp(-x * x / 2 - y) / _SQRT_2PI,
                second=lambda x, y: -np.exp(-x * x / 2 - y) / _SQRT_2PI * (
                    x + np.exp(-x * x / 2 - y) / _SQRT_2PI), saves="xy")
    # gamma family
    scalar_rule(sc.gammaln, lambda x, y: sc.digamma(x), second=lambda x, y: trigamma(x), saves="x")
    scalar_rule(sc.digamma, lambda x, y: trigamma(x),
                second=lambda x, y: -2 * sc.zeta(3.0, x), saves="x")
    scalar_rule(sc.gamma, lambda x, y: y * sc.digamma(x),
                second=lambda x, y: y * (sc.digamma(x) ** 2 + trigamma(x)), saves="xy")
    # scipy.special.zeta(s, q) is a Python wrapper of the ufunc _zeta
    from scipy.special import _ufuncs

    scalar_rule(_ufuncs._zeta, _no_derivative("s (the first argument of zeta)"),
                lambda s, q, z: -s * sc.zeta(s + 1, q),
                second=(_no_derivative("s"), 0,
                        lambda s, q, z: s * (s + 1) * sc.zeta(s + 2, q)), saves="xy")

    def _psi_ab(a, b):
        return sc.digamma(a + b)

    scalar_rule(sc.betaln,
                lambda a, b, z: sc.digamma(a) - _psi_ab(a, b),
                lambda a, b, z: sc.digamma(b) - _psi_ab(a, b),
                second=(lambda a, b, z: trigamma(a) - trigamma(a + b),
                        lambda a, b, z: -trigamma(a + b),
                        lambda a, b, z: trigamma(b) - trigamma(a + b)), saves="xy")
    scalar_rule(sc.beta,
                lambda a, b, z: z * (sc.digamma(a) - _psi_ab(a, b)),
                lambda a, b, z: z * (sc.digamma(b) - _psi_ab(a, b)),
                second=(lambda a, b, z: z * ((sc.digamma(a) - _psi_ab(a, b)) ** 2
                                             + trigamma(a) - trigamma(a + b)),
                        lambda a, b, z: z * ((sc.digamma(a) - _psi_ab(a, b))
                                             * (sc.digamma(b) - _psi_ab(a, b))
                                             - trigamma(a + b)),
                        lambda a, b, z: z * ((sc.digamma(b) - _psi_ab(a, b)) ** 2
                                             + trigamma(b) - trigamma(a + b))), saves="xyz")
    # x log y family
    scalar_rule(sc.xlogy, lambda x, y, z: np.log(y), lambda x, y, z: x / y,
                second=(0, lambda x, y, z: 1 / y, lambda x, y, z: -x / y ** 2), saves="xy")
    scalar_rule(sc.xlog1py, lambda x, y, z: np.log1p(y), lambda x, y, z: x / (1 + y),
                second=(0, lambda x, y, z: 1 / (1 + y), lambda x, y, z: -x / (1 + y) ** 2),
                saves="xy")
    scalar_rule(sc.entr, lambda x, y: -(np.log(x) + 1), second=lambda x, y: -1 / x, saves="x")
    scalar_rule(sc.rel_entr, lambda x, y, z: np.log(x / y) + 1, lambda x, y, z: -x / y,
                second=(lambda x, y, z: 1 / x, lambda x, y, z: -1 / y,
                        lambda x, y, z: x / y ** 2), saves="xy")
    scalar_rule(sc.kl_div, lambda x, y, z: np.log(x / y), lambda x, y, z: 1 - x / y,
                second=(lambda x, y, z: 1 / x, lambda x, y, z: -1 / y,
                        lambda x, y, z: x / y ** 2), saves="xy")

    # modified Bessel functions, derivatives in x: I_v' = (I_{v-1} + I_{v+1}) / 2;
    # for the scaled ive(v, x) = exp(-|x|) I_v(x) subtract sign(x) ive(v, x)
    def _iv_d(v, x, z):
        return (sc.iv(v - 1, x) + sc.iv(v + 1, x)) / 2

    def _iv_dd(v, x, z):
        return (sc.iv(v - 2, x) + 2 * z + sc.iv(v + 2, x)) / 4

    def _ive_d(v, x, z):
        return (sc.ive(v - 1, x) + sc.ive(v + 1, x)) / 2 - np.sign(x) * z

    def _ive_dd(v, x, z):
        s = np.sign(x)
        return ((sc.ive(v - 2, x) + 2 * z + sc.ive(v + 2, x)) / 4
                - s * (sc.ive(v - 1, x) + sc.ive(v + 1, x)) + s * s * z)

    nov = _no_derivative("the order v")
    scalar_rule(sc.iv, nov, _iv_d, second=(nov, 0, _iv_dd), saves="xyz")
    scalar_rule(sc.ive, nov, _ive_d, second=(nov, 0, _ive_dd), saves="xyz")
    scalar_rule(sc.i0, lambda x, y: sc.i1(x), second=lambda x, y: (y + sc.iv(2, x)) / 2, saves="xy")
    scalar_rule(sc.i1, lambda x, y: (sc.i0(x) + sc.iv(2, x)) / 2,
                second=lambda x, y: (3 * y + sc.iv(3, x)) / 4, saves="xy")
    scalar_rule(sc.i0e, lambda x, y: sc.i1e(x) - np.sign(x) * y,
                second=lambda x, y: _ive_dd(0, x, y), saves="xy")
    scalar_rule(sc.i1e, lambda x, y: _ive_d(1, x, y), second=lambda x, y: _ive_dd(1, x, y),
                saves="xy")

    # more of the error-function family: erfc(erfcinv(y)) = y; erfcx = exp(x^2) erfc(x);
    # Dawson's F' = 1 - 2 x F; Faddeeva w' = -2 z w + 2i / sqrt(pi) (holomorphic)
    scalar_rule(sc.erfcinv, lambda x, y: -_SQRT_PI / 2 * np.exp(y * y),
                second=lambda x, y: y * (np.pi / 2) * np.exp(2 * y * y), saves="y")
    scalar_rule(sc.erfcx, lambda x, y: 2 * x * y - 2 / _SQRT_PI,
                second=lambda x, y: (2 + 4 * x * x) * y - 4 / _SQRT_PI * x, saves="xy")
    scalar_rule(sc.dawsn, lambda x, y: 1 - 2 * x * y,
                second=lambda x, y: (4 * x * x - 2) * y - 2 * x, saves="xy")
    scalar_rule(sc.wofz, lambda x, y: -2 * x * y + 2j / _SQRT_PI,
                second=lambda x, y: (4 * x * x - 2) * y - 4j / _SQRT_PI * x, saves="xy")
    # 1/Gamma is entire: at its zeros x = -n the formula -rgamma psi is 0 * inf,
    # replaced by the limits (-1)^n n! and -2 (-1)^n n! psi(n + 1)
    scalar_rule(sc.rgamma, _rgamma_d, second=_rgamma_dd, saves="x")
    scalar_rule(sc.loggamma, lambda x, y: sc.digamma(x), second=lambda x, y: _trigamma_real(x),
                saves="x")
    from chainrules.registry import non_differentiable

    non_differentiable(sc.gammasgn)
    # Huber losses huber(delta, r), pseudo_huber(delta, r)
    scalar_rule(sc.huber, _huber_dd, _huber_dr,
                second=(lambda d, r, z: -_outside(d, r),
                        lambda d, r, z: _outside(d, r) * np.sign(r),
                        lambda d, r, z: 1 - _outside(d, r)), saves="xy")
    # with h = hypot(delta, r): d/d delta = h + delta^2/h - 2 delta = (h - delta)^2 / h and
    # d2/d delta2 = 3 t - t^3 - 2 = -(1 - t)^2 (t + 2), t = delta/h, written through
    # h - delta = r^2 / (h + delta): no cancellation where |r| << delta
    scalar_rule(sc.pseudo_huber,
                lambda d, r, z: _excess(d, r) ** 2 / _hypot(d, r),
                lambda d, r, z: d * r / _hypot(d, r),
                second=(lambda d, r, z: -((_excess(d, r) / _hypot(d, r)) ** 2)
                        * (d / _hypot(d, r) + 2),
                        lambda d, r, z: (r / _hypot(d, r)) ** 3,
                        lambda d, r, z: (d / _hypot(d, r)) ** 3), saves="xy")


def _hypot(d, r):
    return np.sqrt(d * d + r * r)


def _excess(d, r):
    """``hypot(d, r) - d`` for ``d >= 0``, as ``r^2 / (hypot(d, r) + d)``."""
    return r * r / (_hypot(d, r) + d)


def _outside(d, r):
    """1 where ``|r| > delta`` (the linear zone of the Huber loss), else 0, in
    the arguments' dtype."""
    return (np.abs(array_value(r)) > array_value(d)).astype(np.result_type(d, r))


def _huber_dr(d, r, z):
    """d huber / dr: r inside the quadratic zone, delta sign(r) outside."""
    return np.where(np.abs(r) <= d, r, d * np.sign(r))


def _huber_dd(d, r, z):
    """d huber / d delta: 0 inside, |r| - delta outside."""
    return np.where(np.abs(r) <= d, 0.0, np.abs(r) - d)


def _trigamma_real(x):
    """psi'(x) = zeta(2, x) for real x; SciPy has no complex trigamma, so the
    derivative of digamma (and the second of loggamma/gammaln) at a complex
    argument raises."""
    if np.iscomplexobj(x):
        from chainrules.errors import MissingRuleError

        raise MissingRuleError("scipy.special: the derivative of digamma (trigamma, the "
                               "second derivative of loggamma) at a complex argument is "
                               "not available in SciPy")
    return sc.zeta(2.0, x)


def _rgamma_poles(x):
    """Mask of the zeros of 1/Gamma (x = 0, -1, -2, ...) and n = -x there."""
    xv = array_value(x)
    pole = (xv <= 0) & (xv == np.round(xv)) if not np.iscomplexobj(xv) else np.zeros(
        np.shape(xv), bool)
    n = np.where(pole, -xv, 0).real
    return pole, n


def _rgamma_d(x, y):
    pole, n = _rgamma_poles(x)
    safe = np.where(pole, 0.5, x)
    at_pole = (-1.0) ** n * sc.gamma(n + 1)
    return np.where(pole, at_pole, -sc.rgamma(safe) * sc.digamma(safe))


def _rgamma_dd(x, y):
    pole, n = _rgamma_poles(x)
    safe = np.where(pole, 0.5, x)
    at_pole = -2 * (-1.0) ** n * sc.gamma(n + 1) * sc.digamma(n + 1)
    psi = sc.digamma(safe)
    return np.where(pole, at_pole, sc.rgamma(safe) * (psi * psi - _trigamma_real(safe)))


if sc is not None:
    _register()


# -- Python-level SciPy functions, as registered operations ---------------------
def _reduce_axes(shape, axis):
    nd = len(shape)
    if axis is None:
        return tuple(range(nd))
    if np.ndim(axis) == 0:
        return (axis % nd,)
    return tuple(a % nd for a in axis)


def _kept(shape, axes):
    return tuple(1 if k in axes else n for k, n in enumerate(shape))


def _logsumexp_impl(a, axis=None, b=None, keepdims=False, return_sign=False):
    """Differentiable ``scipy.special.logsumexp`` written with np.* calls."""
    axes = _reduce_axes(a.shape if b is None else np.broadcast_shapes(
        np.shape(a), np.shape(b)), axis)
    from chainrules.tracing import untraced

    av = array_value(a)
    m = np.max(av, axis=axes, keepdims=True) if av.size else av
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(a - m)
    if b is not None:
        e = b * e
    s = np.sum(e, axis=axes, keepdims=True)
    if return_sign:
        sign = np.sign(untraced(s))
        out = np.log(s * sign) + m
        if not keepdims:
            out = np.reshape(out, tuple(n for k, n in enumerate(out.shape) if k not in axes))
            sign = np.reshape(sign, out.shape)
        return out, sign
    out = np.log(s) + m
    if not keepdims:
        out = np.reshape(out, tuple(n for k, n in enumerate(out.shape) if k not in axes))
    return out


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp`` that also accepts traced values.

    Same signature and results; the maximum shift is a constant, so the
    derivative is the softmax weights (times ``b``)."""
    return _logsumexp_impl(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def softmax(x, axis=None):
    """``scipy.special.softmax`` that also accepts traced values."""
    return np.exp(x - logsumexp(x, axis=axis, keepdims=True))


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax`` that also accepts traced values."""
    return x - logsumexp(x, axis=axis, keepdims=True)


def _constant_order(value, what):
    """An integer argument (an order, a dimension) as a plain array; traced,
    it has no derivative to give."""
    if is_traced(value):
        raise MissingRuleError(f"scipy.special.{what} has no derivative in its integer "
                               "argument: pass a constant (chainrules.stop_gradient)")
    return np.asarray(value)


def _float_dtype(x):
    dt = getattr(x, "dtype", None)
    return dt if dt is not None and dt.kind == "f" else np.dtype(np.float64)


def polygamma(n, x):
    """``scipy.special.polygamma(n, x)`` that also accepts traced ``x``, by
    SciPy's formula: ``digamma(x)`` where ``n == 0``, ``(-1)**(n+1)
    gamma(n+1) zeta(n+1, x)`` elsewhere; ``n`` broadcasts against ``x``.
    Differentiable in ``x``; the order ``n`` is a constant. float32 ``x``
    stays float32."""
    n = _constant_order(n, "polygamma")
    if n.ndim == 0:
        # Python floats: a float32 x stays float32
        if n == 0:
            return sc.digamma(x)
        k = float(n)
        with np.errstate(invalid="ignore"):   # a non-integer order gives nan, as SciPy
            factor = float(np.float64(-1.0) ** (k + 1) * sc.gamma(k + 1.0))
        return factor * sc.zeta(k + 1.0, x)
    dt = _float_dtype(x)
    # the orders 0 take digamma; their zeta(1, x) = inf is replaced by zeta(2, x)
    # so that the unselected branch passes no nan derivative
    k = np.where(n == 0, 1.0, n).astype(dt)
    with np.errstate(invalid="ignore"):
        factor = ((-1.0) ** (k + 1) * sc.gamma(k + 1.0)).astype(dt)
    return np.where(n == 0, sc.digamma(x), factor * sc.zeta(k + 1, x))


def multigammaln(a, d):
    """``scipy.special.multigammaln(a, d)`` that also accepts traced ``a``:
    ``log Gamma_d(a) = d (d - 1) / 4 log(pi) + sum_{j=1..d} gammaln(a + (1 - j) / 2)``
    (integer ``d``, a constant; differentiable in ``a``, which must exceed
    ``(d - 1) / 2`` as in SciPy)."""
    d = _constant_order(d, "multigammaln")
    if d.ndim != 0 or np.floor(d) != d:
        raise ValueError("d should be a positive integer (dimension)")
    d = int(d)
    if d < 1:
        raise ValueError("multigammaln: d must be a positive integer")
    av = array_value(a)
    if np.any(av <= (d - 1) / 2):
        raise ValueError(f"multigammaln: condition a ({np.min(av)}) > (d-1)/2 ({(d - 1) / 2})"
                         " not met")
    out = d * (d - 1) / 4 * float(np.log(np.pi))
    for j in range(1, d + 1):
        out = out + sc.gammaln(a + (1 - j) / 2)
    return out


def softplus(x, **kwargs):
    """``scipy.special.softplus``: ``log(1 + exp(x))``, computed as
    ``np.logaddexp(0, x)`` (differentiable; ufunc keywords pass through)."""
    return np.logaddexp(0, x, **kwargs)

_family_loaded()
