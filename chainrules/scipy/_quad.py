"""Differentiable ``quad``, ``quad_vec`` and ``dblquad`` (same signatures and
results as ``scipy.integrate``); re-exported by ``chainrules.scipy.integrate``.

The integral is differentiable in the limits ``a`` and ``b`` (the integrand
at the limit, by the fundamental theorem of calculus; refused with
``DomainError`` for an infinite limit), in the parameters passed through
``args`` (every leaf of a nested argument) and in the values being
differentiated that the integrand closes over. The integrand is plain NumPy
code: SciPy calls it with floats for the value, and chainrules
differentiates it for the derivatives, which are integrals of the
integrand's derivative solved with the same ``epsabs``, ``epsrel``, ``limit``
and ``points`` by ``scipy.integrate.quad`` (one entry) or ``quad_vec`` (see
rules/scipy_quad.py).
Second derivatives (``hvp``, ``hessian``, ``grad`` of ``grad``) work: the
derivative's integrals are differentiated again the same way.
"""

import inspect
import warnings

import numpy as np

from chainrules import pytree
from chainrules.capture import closure_convert
from chainrules.errors import MissingRuleError
from chainrules.rules.scipy_integrate_plans import plain_cells
from chainrules.rules.scipy_quad import QuadSpec, integral
from chainrules.tracing import holds_traced, is_traced, untraced
from chainrules.user_code import user_stacklevel

try:
    import scipy.integrate as _si
except ImportError:  # pragma: no cover
    _si = None

__all__ = ["quad", "quad_vec", "dblquad"]


def _name(func, twin):
    fname = getattr(func, "__qualname__", None) or getattr(func, "__name__", "func")
    return f"the integrand {fname} of chainrules.scipy.integrate.{twin}"


def _inside(a, b):
    """A point of the interval where the integrand is evaluated once to find
    the values it closes over: the midpoint, or one unit in from a finite
    limit of an infinite interval, or 0 when both are infinite."""
    a, b = float(untraced(a)), float(untraced(b))
    if np.isfinite(a) and np.isfinite(b):
        return 0.5 * (a + b)
    if np.isfinite(a):
        return a + (1.0 if b > a else -1.0)
    if np.isfinite(b):
        return b + (1.0 if a > b else -1.0)
    return 0.0


def _flat_args(func, args):
    """``(func, leaves, structure)``: ``func(x, *leaves)`` calls the user's
    integrand with ``args`` rebuilt from the leaves of its pytree (of that
    structure; None for leaves), so that the leaves inside a nested argument
    are differentiated."""
    leaves, td = pytree.flatten(list(args))
    if len(leaves) == len(args) and all(pytree.is_leaf(a) for a in args):
        return func, tuple(args), None

    def flat_func(x, *flat):
        return func(x, *pytree.unflatten(td, list(flat)))
    return flat_func, tuple(leaves), td


def _parameters(func, a, b, args, twin):
    """``(func, params, origin, plain)``: the integrand taking the leaves of
    ``args`` and then the closed-over values being differentiated (found by
    evaluating it once inside the interval, on plain values), those values,
    ``QuadSpec.origin`` (the user's integrand and how it was wrapped: the
    arguments' structure, how many closed-over values became parameters;
    its derivatives' plans are kept across integrals under it), and the
    integrand for the value's solve (``_on_plain_values``)."""
    name = _name(func, twin)
    user = func
    flat, leaves, td = _flat_args(func, args)
    func, captured = closure_convert(
        flat, _inside(a, b), *leaves, name=name,
        unseen=f"it did not use at x = {_inside(a, b)}, where chainrules evaluates it to "
               "find them; pass such a value in args")
    return (func, tuple(leaves) + tuple(captured), (user, (td, len(captured))),
            _on_plain_values(func, flat, captured))


def _on_plain_values(converted, func, captured):
    """``converted`` (the closure conversion of ``func``) for SciPy's solve
    of the value, on plain values: ``func`` itself, or a copy whose cells
    hold the values passed for the ``captured`` ones
    (``scipy_integrate_plans.plain_cells``), without the conversion's
    capture at every point. A result still traced (a value being
    differentiated that ``func`` did not use where it was first evaluated)
    is computed again by ``converted``, which raises naming it."""
    plain = func if not captured else plain_cells(func, captured)
    if plain is None:
        return converted

    def value_integrand(x, *args):
        out = plain(x, *args)
        return converted(x, *args) if holds_traced(out) else out

    return value_integrand


def _at_user_line(call, *args, **kwargs):
    """``call(*args, **kwargs)`` (SciPy's integrator on plain values), its
    warnings (``IntegrationWarning``) issued again at the user's line, where
    SciPy called directly would issue them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call(*args, **kwargs)
    level = user_stacklevel()
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=level)
    return out


def _traced(*xs):
    return any(is_traced(x) for x in xs)


def _as_args(args):
    return args if isinstance(args, tuple) else (args,)


def quad(func, a, b, args=(), full_output=0, epsabs=1.49e-8, epsrel=1.49e-8, limit=50,
         points=None, weight=None, wvar=None, wopts=None, maxp1=50, limlst=50,
         complex_func=False):
    """``scipy.integrate.quad``, differentiable in ``a``, ``b``, ``args`` and
    the values being differentiated that ``func`` closes over.

    The value, its error estimate, ``full_output``'s extra results and the
    ``IntegrationWarning`` of a result that did not converge are SciPy's
    own (the value is computed by ``scipy.integrate.quad`` on plain values).
    ``d/db = func(b)``, ``d/da = -func(a)``; an infinite limit has no
    derivative (``DomainError`` if it is differentiated). The derivative in
    the parameters is the integral of ``func``'s derivative, computed with
    the same ``epsabs``, ``epsrel``, ``limit`` and ``points`` by
    ``scipy.integrate.quad`` (one parameter entry) or ``quad_vec`` (several):
    its error (2-norm over the parameters' entries) is estimated at most ``max(epsabs, epsrel * |derivative|)``, and an
    ``IntegrationWarning`` says when it is not. ``weight`` and
    ``complex_func`` are not differentiated (``MissingRuleError``).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> from chainrules.scipy.integrate import quad
    >>> f = lambda p: quad(lambda x, p: np.exp(-p * x**2), 0.0, np.inf, args=(p,))[0]
    >>> round(float(cr.grad(f)(1.0)), 8)     # d/dp sqrt(pi / p) / 2 at p = 1
    -0.44311346
    """
    kw = dict(full_output=full_output, epsabs=epsabs, epsrel=epsrel, limit=limit,
              points=points, weight=weight, wvar=wvar, wopts=wopts, maxp1=maxp1,
              limlst=limlst, complex_func=complex_func)
    return _quad(func, a, b, _as_args(args), kw)


def _quad(func, a, b, args, kw, staged=True):
    """``quad``, its options in ``kw``; ``staged=False``: the derivatives'
    integrands are evaluated eagerly (``QuadSpec.staged``)."""
    fn, params, origin, on_plain = _parameters(func, a, b, args, "quad")
    if not _traced(a, b, *params):
        # (the plain form of the integrand raises, naming it, for a value
        # being differentiated that it uses elsewhere than where it was
        # first evaluated)
        return _si.quad(on_plain, a, b, args=params, **kw)
    if kw["weight"] is not None or kw["complex_func"]:
        raise MissingRuleError(
            "chainrules.scipy.integrate.quad: weighted integrals (weight=) and complex "
            "integrands (complex_func=True) are not differentiated; write the weight into "
            "the integrand, and integrate real and imaginary parts separately")
    plain = _at_user_line(_si.quad, on_plain, float(untraced(a)), float(untraced(b)),
                          args=untraced(params), **kw)
    spec = QuadSpec(fn, False, {k: kw[k] for k in ("epsabs", "epsrel", "limit", "points")},
                    "chainrules.scipy.integrate.quad", origin=origin, staged=staged)
    value = integral(a, b, *params, _spec=spec, _value=np.float64(plain[0]))
    return (value,) + tuple(plain[1:])


def quad_vec(f, a, b, epsabs=1e-200, epsrel=1e-8, norm="2", cache_size=100e6, limit=10000,
             workers=1, points=None, quadrature=None, full_output=False, *, args=()):
    """``scipy.integrate.quad_vec``, differentiable in ``a``, ``b``, ``args``
    and the values being differentiated that ``f`` closes over (as
    ``quad``). The value and its error estimate are SciPy's; the derivatives
    are integrals of ``f``'s derivative, solved with the same ``epsabs``,
    ``epsrel``, ``limit`` and ``points`` (by ``quad_vec``, 2-norm error; by
    ``quad`` for one entry)."""
    args = _as_args(args) if args else ()
    kw = dict(epsabs=epsabs, epsrel=epsrel, norm=norm, cache_size=cache_size, limit=limit,
              workers=workers, points=points, quadrature=quadrature, full_output=full_output)
    fn, params, origin, on_plain = _parameters(f, a, b, args, "quad_vec")
    if not _traced(a, b, *params):
        return _si.quad_vec(on_plain, a, b, args=params, **kw)
    plain = _at_user_line(_si.quad_vec, on_plain, float(untraced(a)), float(untraced(b)),
                          args=untraced(params), **kw)
    spec = QuadSpec(fn, True, dict(epsabs=epsabs, epsrel=epsrel, limit=limit, points=points),
                    "chainrules.scipy.integrate.quad_vec", origin=origin)
    value = integral(a, b, *params, _spec=spec, _value=np.asarray(plain[0], dtype=float))
    return (value,) + tuple(plain[1:])


def dblquad(func, a, b, gfun, hfun, args=(), epsabs=1.49e-8, epsrel=1.49e-8):
    """``scipy.integrate.dblquad``: the integral of ``func(y, x, *args)`` for
    ``y`` from ``gfun(x)`` to ``hfun(x)`` and ``x`` from ``a`` to ``b``,
    differentiable in ``a``, ``b``, ``args`` and the values being
    differentiated that ``func``, ``gfun`` and ``hfun`` close over (a
    callable limit's parameters too). Computed as SciPy does, an outer
    ``quad`` of inner ``quad``s with the same tolerances; each is
    differentiated as ``quad`` is, so the inner limits contribute the
    integrand on the curves ``gfun`` and ``hfun``."""
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)

    def inner(x, *params):
        lo = gfun(x) if callable(gfun) else gfun
        hi = hfun(x) if callable(hfun) else hfun
        return quad(func, lo, hi, args=(x,) + tuple(params), epsabs=epsabs,
                    epsrel=epsrel)[0]

    inner.__qualname__ = getattr(func, "__qualname__", "func")
    fn, params, _, _ = _parameters(inner, a, b, args, "dblquad")
    if not _traced(a, b, *params):
        return _si.dblquad(func, a, b, gfun, hfun, args=args, epsabs=epsabs, epsrel=epsrel)
    # the outer integrand solves an integral at each point: its derivatives
    # are evaluated eagerly (the inner integrals' own are staged)
    kw = {k: p.default for k, p in inspect.signature(quad).parameters.items()
          if p.default is not p.empty and k != "args"}
    out = _quad(fn, a, b, params, dict(kw, epsabs=epsabs, epsrel=epsrel), staged=False)
    return out[0], out[1]
