"""Matrix-equation solvers of ``scipy.linalg``: ``solve_sylvester``,
``solve_continuous_lyapunov``, ``solve_discrete_lyapunov`` (registered only
when SciPy is installed; batched over leading axes like SciPy >= 1.14).

* ``solve_sylvester(a, b, q)``: ``X`` with ``A X + X B = Q``. Differentiating
  gives ``A X' + X' B = Q' - A' X - X B'`` (one more Sylvester solve), and the
  transpose of ``Q -> X`` is ``G -> Y`` with ``A^T Y + Y B^T = G``, so
  ``gQ = Y``, ``gA = -Y X^T``, ``gB = -X^T Y``.
* ``solve_continuous_lyapunov(a, q)`` is ``solve_sylvester(a, a^H, q)``,
  written as that composition (so the conjugate is differentiated by its rule).
* ``solve_discrete_lyapunov(a, q)``: ``X - A X A^H = Q``; its tangent solves
  the same equation with ``Q' + A' X A^H + A X A'^H`` and its transpose is the
  equation of ``A^T``.

Every derived solve (tangent and cotangent) is checked by its residual; a
singular equation (``A`` and ``-B`` sharing an eigenvalue, or ``A`` with
eigenvalues ``l_i l_j == 1`` for the discrete equation) raises
``DomainError`` naming the operation: the derivative does not exist there.
``sqrtm``'s Fréchet derivative (rules/scipy_linalg.py) is a Sylvester solve
made by ``checked_sylvester``.
"""

import numpy as np

from chainrules.errors import DomainError

from ._linalg_util import _fro, _rdt, _unbroadcast, check_residual, conj, defrule, mH, mT, plain

try:
    import scipy.linalg as sl
except ImportError:  # pragma: no cover - SciPy is an optional extra
    sl = None

__all__ = ["solve_sylvester", "solve_continuous_lyapunov", "solve_discrete_lyapunov",
           "checked_sylvester"]


def _scale(*ms):
    return sum(_fro(plain(m)) for m in ms)


def _check_separated(op, what, lam, mu, combine):
    """The equation's operator has eigenvalues ``combine(lam_i, mu_j)``; it is
    singular (no unique solution: a backward-stable solver still returns one
    with a tiny residual) when one of them is 0 to working precision."""
    if lam.shape[-1] == 0 or mu.shape[-1] == 0:
        return
    ev = combine(lam[..., :, None], mu[..., None, :])
    n = max(lam.shape[-1], mu.shape[-1])
    scale = 1 + np.max(np.abs(lam), axis=-1)[..., None, None] * \
        np.max(np.abs(mu), axis=-1)[..., None, None] if what == "discrete" else \
        np.max(np.abs(lam), axis=-1)[..., None, None] + \
        np.max(np.abs(mu), axis=-1)[..., None, None]
    eps = np.finfo(_rdt(ev.dtype)).eps
    if np.any(np.abs(ev) <= 100 * n * eps * scale) or not np.all(np.isfinite(ev)):
        eq = "X - A X A^H = Q" if what == "discrete" else "A X + X B = Q"
        raise DomainError(
            f"{op}: the equation {eq} of its derivative is singular at this input "
            "(an eigenvalue of its operator is 0), so the derivative does not exist")


def checked_sylvester(op, a, b, q):
    """``X`` with ``A X + X B = Q`` (differentiable), verified by the spectra
    of ``A`` and ``-B`` (disjoint) and by its residual; ``op`` names the
    operation whose derivative needed it."""
    ap, bp = plain(a), plain(b)
    _check_separated(op, "sylvester", np.linalg.eigvals(ap), np.linalg.eigvals(bp),
                     lambda x, y: x + y)
    x = solve_sylvester(a, b, q)
    qp, xp = plain(q), plain(x)
    resid = ap @ xp + xp @ bp - qp
    check_residual(op, "the Sylvester equation A X + X B = Q of its derivative",
                   resid, (_scale(ap) + _scale(bp)) * _scale(xp) + _scale(qp),
                   np.result_type(ap, bp, qp))
    return x


def checked_discrete(op, a, q):
    """``X`` with ``X - A X A^H = Q`` (differentiable), verified."""
    ap = plain(a)
    lam = np.linalg.eigvals(ap)
    _check_separated(op, "discrete", lam, lam, lambda x, y: 1 - x * np.conjugate(y))
    x = solve_discrete_lyapunov(a, q)
    qp, xp = plain(q), plain(x)
    resid = xp - ap @ xp @ np.conjugate(np.swapaxes(ap, -1, -2)) - qp
    check_residual(op, "the discrete Lyapunov equation X - A X A^H = Q of its derivative",
                   resid, (1 + _scale(ap) ** 2) * _scale(xp) + _scale(qp),
                   np.result_type(ap, qp))
    return x


_SYL = "scipy.linalg.solve_sylvester"
_DLYAP = "scipy.linalg.solve_discrete_lyapunov"


def _sylvester_pf(r, xds):
    a, b, q = r.xs
    ad, bd, qd = xds
    x = r.y
    return checked_sylvester(_SYL, a, b, qd - ad @ x - x @ bd)


def _sylvester_pb(r, g):
    a, b, q = r.xs
    x = r.y
    y = checked_sylvester(_SYL, mT(a), mT(b), g)
    ga = -(y @ mT(x)) if r.ids[0] is not None else None
    gb = -(mT(x) @ y) if r.ids[1] is not None else None
    return [None if ga is None else _unbroadcast(ga, a.shape),
            None if gb is None else _unbroadcast(gb, b.shape),
            _unbroadcast(y, q.shape) if r.ids[2] is not None else None]


def _dlyap_pf(r, xds):
    a, q = r.xs[0], r.xs[1]
    ad, qd = xds[0], xds[1]
    x = r.y
    rhs = qd + ad @ x @ mH(a) + a @ x @ mH(ad)
    return checked_discrete(_DLYAP, a, rhs)


def _dlyap_pb(r, g):
    a, q = r.xs[0], r.xs[1]
    x = r.y
    y = checked_discrete(_DLYAP, mT(a), g)
    out = [None, _unbroadcast(y, q.shape) if r.ids[1] is not None else None]
    if r.ids[0] is not None:
        ga = y @ conj(a) @ mT(x) + conj(mT(y) @ a @ x)
        out[0] = _unbroadcast(ga, a.shape)
    return out + [None] * (len(r.xs) - 2)


if sl is not None:
    from chainrules.tracing import primitive

    solve_sylvester = primitive(sl.solve_sylvester)
    _solve_discrete_lyapunov = primitive(sl.solve_discrete_lyapunov)

    def solve_discrete_lyapunov(a, q, method=None):
        """``scipy.linalg.solve_discrete_lyapunov`` (differentiable in a, q)."""
        return _solve_discrete_lyapunov(a, q, method=method)

    def solve_continuous_lyapunov(a, q):
        """``scipy.linalg.solve_continuous_lyapunov``: ``A X + X A^H = Q``,
        as ``solve_sylvester(a, a^H, q)`` (differentiable in a and q)."""
        if type(a) is np.ndarray and type(q) is np.ndarray:
            return sl.solve_continuous_lyapunov(a, q)
        return solve_sylvester(a, mH(a), q)

    defrule(solve_sylvester, _sylvester_pf, _sylvester_pb)
    defrule(_solve_discrete_lyapunov, _dlyap_pf, _dlyap_pb)
