"""Root finders: ``root`` (every method), ``fsolve``, ``root_scalar``,
``brentq``, ``brenth``, ``ridder``, ``bisect``, ``toms748``, ``newton`` and
``fixed_point``, differentiated by the implicit function theorem."""

import copy

import numpy as np
import scipy.optimize as _so

from chainrules.tracing import untraced

from ._problem import (Problem, as_args, fname, not_converged, plain_array, plain_helper,
                       solution)

__all__ = ["root", "fsolve", "root_scalar", "brentq", "brenth", "ridder", "bisect",
           "toms748", "newton", "fixed_point"]


def _value(out, with_jac):
    """The function's value when it returns ``(value, jacobian)``."""
    return out[0] if with_jac else out


def root(fun, x0, args=(), method="hybr", jac=None, tol=None, callback=None, options=None):
    """``scipy.optimize.root``, differentiable in ``args`` and in the values
    being differentiated that ``fun`` closes over (every method). The
    solution ``.x`` (and ``.fun``) are traced; the other fields are SciPy's.
    A solution SciPy reports as not converged, or one where the Jacobian of
    ``fun`` is singular, raises ``NumericalInstabilityError``."""
    args = as_args(args)
    name = f"chainrules.scipy.optimize.root ({fname(fun)}, method {method!r})"
    x0p = plain_array(x0)
    with_jac = jac is True
    prob = Problem(fun, x0p, args, name)
    if not prob.traced:
        return _so.root(fun, x0, args=args, method=method, jac=jac, tol=tol,
                        callback=callback, options=options)
    helper = plain_helper(jac, prob.plain_args)

    def run(params=None):
        return prob.scipy(_so.root, lambda x: prob.plain(x, params), x0p, method=method,
                          jac=helper if callable(jac) else jac, tol=tol, callback=callback,
                          options=options)

    res = run()
    if not res.success:
        not_converged(name, res.message)

    def residual(x, *params):
        return _value(prob.call(x, params), with_jac)

    x = solution(prob, residual, lambda *pp: _solved(run(pp), name).x, res.x)
    out = copy.copy(res)
    out.x = x
    out.fun = residual(x, *prob.params)
    return out


def _solved(res, name):
    if not res.success:
        not_converged(name, res.message)
    return res


def fsolve(func, x0, args=(), fprime=None, full_output=0, col_deriv=0, xtol=1.49012e-08,
           maxfev=0, band=None, epsfcn=None, factor=100, diag=None):
    """``scipy.optimize.fsolve``, differentiable in ``args`` and the values
    being differentiated that ``func`` closes over. A solve that SciPy
    reports as not converged (``ier != 1``) raises
    ``NumericalInstabilityError`` instead of SciPy's warning."""
    args = as_args(args)
    name = f"chainrules.scipy.optimize.fsolve ({fname(func)})"
    x0p = plain_array(x0)
    prob = Problem(func, x0p, args, name)
    kw = dict(col_deriv=col_deriv, xtol=xtol, maxfev=maxfev, band=band, epsfcn=epsfcn,
              factor=factor, diag=diag)
    if not prob.traced:
        return _so.fsolve(func, x0, args=args, fprime=fprime, full_output=full_output, **kw)
    helper = plain_helper(fprime, prob.plain_args)

    def run(params=None):
        out = prob.scipy(_so.fsolve, lambda x: prob.plain(x, params), x0p, full_output=True,
                         fprime=None if fprime is None else (lambda x: helper(x)), **kw)
        if out[2] != 1:
            not_converged(name, out[3])
        return out

    first = run()

    def residual(x, *params):
        return prob.call(x, params)

    x = solution(prob, residual, lambda *pp: run(pp)[0], first[0])
    if full_output:
        return x, first[1], first[2], first[3]
    return x


def _scalar(x0, name):
    x = np.asarray(untraced(x0), dtype=float)
    if x.size != 1:
        raise ValueError(f"{name}: a scalar equation has one unknown, got shape {x.shape}")
    return float(x.reshape(()))


def root_scalar(f, args=(), method=None, bracket=None, fprime=None, fprime2=None, x0=None,
                x1=None, xtol=None, rtol=None, maxiter=None, options=None):
    """``scipy.optimize.root_scalar``, differentiable in ``args`` and the
    values being differentiated that ``f`` closes over: ``.root`` is
    traced. The bracket and starting points only locate the root (their
    derivative is zero). Not converged raises ``NumericalInstabilityError``."""
    args = as_args(args)
    name = f"chainrules.scipy.optimize.root_scalar ({fname(f)})"
    start = x0 if x0 is not None else (bracket[0] if bracket is not None else x1)
    xe = _scalar(0.0 if start is None else start, name)
    with_d = fprime is True
    prob = Problem(f, xe, args, name)
    plain_b = None if bracket is None else [float(untraced(b)) for b in bracket]
    kw = dict(method=method, bracket=plain_b, xtol=xtol, rtol=rtol, maxiter=maxiter,
              options=options, x0=None if x0 is None else _scalar(x0, name),
              x1=None if x1 is None else _scalar(x1, name))
    if not prob.traced:
        return _so.root_scalar(f, args=args, fprime=fprime, fprime2=fprime2, **kw)
    fp = plain_helper(fprime, prob.plain_args) if callable(fprime) else fprime
    fp2 = plain_helper(fprime2, prob.plain_args) if callable(fprime2) else fprime2

    def run(params=None):
        res = prob.scipy(_so.root_scalar, lambda x: prob.plain(x, params), fprime=fp,
                         fprime2=fp2, **kw)
        if not res.converged:
            not_converged(name, res.flag)
        return res

    res = run()

    def residual(x, *params):
        return _value(prob.call(x, params), with_d or fprime2 is True)

    r = solution(prob, residual, lambda *pp: run(pp).root, res.root)
    out = copy.copy(res)
    out.root = r
    return out


def _bracketing(solver):
    sname = solver.__name__

    def twin(f, a, b, args=(), xtol=2e-12, rtol=8.881784197001252e-16, maxiter=100,
             full_output=False, disp=True, **kw):
        args = as_args(args)
        name = f"chainrules.scipy.optimize.{sname} ({fname(f)})"
        a, b = _scalar(a, name), _scalar(b, name)
        prob = Problem(f, a, args, name)
        opts = dict(xtol=xtol, rtol=rtol, maxiter=maxiter, **kw)
        if not prob.traced:
            return solver(f, a, b, args=args, full_output=full_output, disp=disp, **opts)

        def run(params=None):
            try:
                r, info = prob.scipy(solver, lambda x: prob.plain(x, params), a, b,
                                     full_output=True, disp=False, **opts)
            except (RuntimeError, ValueError) as e:
                if "sign" in str(e):
                    raise
                not_converged(name, str(e))
            if not info.converged:
                not_converged(name, info.flag)
            return r, info

        r, info = run()

        def residual(x, *params):
            return prob.call(x, params)

        x = solution(prob, residual, lambda *pp: run(pp)[0], r)
        if full_output:
            info = copy.copy(info)
            info.root = x
            return x, info
        return x

    twin.__name__ = twin.__qualname__ = sname
    twin.__doc__ = (f"``scipy.optimize.{sname}``, differentiable in ``args`` and the "
                    "values being differentiated that ``f`` closes over (the bracket only "
                    "locates the root). Not converged raises "
                    "``NumericalInstabilityError``; a bracket without a sign change "
                    "raises SciPy's ``ValueError``.")
    return twin


brentq = _bracketing(_so.brentq)
brenth = _bracketing(_so.brenth)
ridder = _bracketing(_so.ridder)
bisect = _bracketing(_so.bisect)


def toms748(f, a, b, args=(), k=1, xtol=2e-12, rtol=8.881784197001252e-16, maxiter=100,
            full_output=False, disp=True):
    """``scipy.optimize.toms748``, differentiable as ``brentq``."""
    return _toms(f, a, b, args=args, k=k, xtol=xtol, rtol=rtol, maxiter=maxiter,
                 full_output=full_output, disp=disp)


_toms = _bracketing(_so.toms748)


def newton(func, x0, fprime=None, args=(), tol=1.48e-08, maxiter=50, fprime2=None, x1=None,
           rtol=0.0, full_output=False, disp=True):
    """``scipy.optimize.newton`` (scalar or, for an array ``x0``, elementwise),
    differentiable in ``args`` and the values being differentiated that
    ``func`` closes over. A root not converged (any element) raises
    ``NumericalInstabilityError``."""
    args = as_args(args)
    name = f"chainrules.scipy.optimize.newton ({fname(func)})"
    x0p = plain_array(x0)
    prob = Problem(func, x0p if x0p.ndim else float(x0p), args, name)
    kw = dict(tol=tol, maxiter=maxiter, x1=None if x1 is None else plain_array(x1),
              rtol=rtol)
    if not prob.traced:
        return _so.newton(func, x0, fprime=fprime, args=args, fprime2=fprime2,
                          full_output=full_output, disp=disp, **kw)
    fp = plain_helper(fprime, prob.plain_args)
    fp2 = plain_helper(fprime2, prob.plain_args)
    start = x0p if x0p.ndim else float(x0p)

    def run(params=None):
        try:
            out = prob.scipy(_so.newton, lambda x: prob.plain(x, params), start, fprime=fp,
                             fprime2=fp2, full_output=True, disp=False, **kw)
        except RuntimeError as e:
            not_converged(name, str(e))
        conv = out[1].converged if np.ndim(start) == 0 else out[1]
        if not np.all(conv):
            not_converged(name, "not every element converged")
        return out

    first = run()

    def residual(x, *params):
        return prob.call(x, params)

    x = solution(prob, residual, lambda *pp: run(pp)[0], first[0])
    if full_output:
        if np.ndim(start) == 0:
            info = copy.copy(first[1])
            info.root = x
            return x, info
        return type(first)(x, *first[1:])
    return x


def fixed_point(func, x0, args=(), xtol=1e-08, maxiter=500, method="del2"):
    """``scipy.optimize.fixed_point``, differentiable in ``args`` and the
    values being differentiated that ``func`` closes over, as the root of
    ``func(x) - x``. Not converged raises ``NumericalInstabilityError``; a
    fixed point where ``func``'s Jacobian has an eigenvalue 1 is singular
    and raises too."""
    args = as_args(args)
    name = f"chainrules.scipy.optimize.fixed_point ({fname(func)})"
    x0p = plain_array(x0)
    prob = Problem(func, x0p, args, name)
    if not prob.traced:
        return _so.fixed_point(func, x0, args=args, xtol=xtol, maxiter=maxiter, method=method)

    def run(params=None):
        try:
            return prob.scipy(_so.fixed_point, lambda x: prob.plain(x, params), x0p, xtol=xtol,
                              maxiter=maxiter, method=method)
        except RuntimeError as e:
            not_converged(name, str(e))

    def residual(x, *params):
        return prob.call(x, params) - x

    return solution(prob, residual, lambda *pp: run(pp), run())

