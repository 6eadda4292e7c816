"""Minimizers and fits: ``minimize``, ``least_squares`` and ``curve_fit``,
differentiated by the implicit function theorem applied to the optimality
condition (the gradient of the objective in the unknowns is zero)."""

import copy
import inspect

import numpy as np
import scipy.optimize as _so

from chainrules.api import grad
from chainrules.errors import MissingRuleError
from chainrules.jacobians import hessian, jacobian
from chainrules.tracing import is_traced, untraced

from ._problem import (Problem, _untraced_tree, active, as_args, fname, not_converged,
                       plain_array, plain_helper, solution)

__all__ = ["minimize", "least_squares", "curve_fit"]


def _at_bound(x, lb, ub):
    x = np.asarray(untraced(x), dtype=float)
    lb = np.broadcast_to(np.asarray(lb, dtype=float), x.shape)
    ub = np.broadcast_to(np.asarray(ub, dtype=float), x.shape)
    tol = 1e-8 * (1.0 + np.abs(x))
    return bool(np.any((np.isfinite(lb) & (x <= lb + tol)) | (np.isfinite(ub) & (x >= ub - tol))))


def _bounds_arrays(bounds, n):
    """``(lb, ub)`` of ``minimize``'s bounds: a ``Bounds`` or ``(lo, hi)`` pairs."""
    if isinstance(bounds, _so.Bounds):
        return np.asarray(bounds.lb, dtype=float), np.asarray(bounds.ub, dtype=float)
    pairs = list(bounds)
    lb = [-np.inf if lo is None else float(lo) for lo, _ in pairs]
    ub = [np.inf if hi is None else float(hi) for _, hi in pairs]
    return np.asarray(lb), np.asarray(ub)


def _check_constraints(constraints, x, name):
    """Refuse a solution where a constraint is active (equality constraints
    always are); inactive inequality constraints leave it interior."""
    cons = constraints if isinstance(constraints, (list, tuple)) else [constraints]
    xp = np.asarray(untraced(x), dtype=float)
    for c in cons:
        if isinstance(c, dict):
            if c.get("type") == "eq":
                active(name, "an equality constraint")
            v = np.asarray(untraced(c["fun"](xp, *c.get("args", ()))), dtype=float)
            if np.any(v <= 1e-8 * (1.0 + np.abs(v))):
                active(name, "an active inequality constraint")
            continue
        if isinstance(c, _so.LinearConstraint):
            v = np.asarray(c.A, dtype=float) @ xp
        elif isinstance(c, _so.NonlinearConstraint):
            v = np.asarray(untraced(c.fun(xp)), dtype=float)
        else:
            raise MissingRuleError(f"{name}: constraints of type {type(c).__name__} are not "
                                   "differentiated")
        if _at_bound(np.atleast_1d(v), c.lb, c.ub):
            active(name, "an active constraint")


def minimize(fun, x0, args=(), method=None, jac=None, hess=None, hessp=None, bounds=None,
             constraints=(), tol=None, callback=None, options=None):
    """``scipy.optimize.minimize`` (every method), differentiable in ``args``
    and in the values being differentiated that ``fun`` closes over, through
    the optimality condition ``grad_x fun(x*, p) = 0``. ``.x`` and ``.fun``
    are traced, the other fields are SciPy's. ``jac``, ``hess`` and
    ``hessp`` only guide the solver (chainrules differentiates ``fun``
    itself; with ``jac=True`` the first of ``fun``'s two results).

    Bounds and constraints: an interior solution (no bound, no inequality
    constraint active) is differentiated as an unconstrained one; a
    solution at an active bound, at an active inequality constraint, or with
    an equality constraint raises ``DomainError`` (the active set is not
    differentiated). A solution SciPy reports as not converged, or where
    the Hessian of ``fun`` is singular, raises ``NumericalInstabilityError``.
    The derivative is as accurate as the solution: pass a small ``tol``."""
    args = as_args(args)
    name = f"chainrules.scipy.optimize.minimize ({fname(fun)}, method {method!r})"
    x0p = plain_array(x0)
    prob = Problem(fun, x0p, args, name)
    if not prob.traced:
        return _so.minimize(fun, x0, args=args, method=method, jac=jac, hess=hess,
                            hessp=hessp, bounds=bounds, constraints=constraints, tol=tol,
                            callback=callback, options=options)
    if isinstance(constraints, (list, tuple)):
        cons_plain = [_plain_constraint(c) for c in constraints]
    else:
        cons_plain = _plain_constraint(constraints)
    user = {k: (plain_helper(h, prob.plain_args) if callable(h) else h)
            for k, h in (("jac", jac), ("hess", hess), ("hessp", hessp))}
    meth = method.lower() if isinstance(method, str) else None

    def run(params=None):
        def plain(x):
            return prob.plain(x, params)

        def plain_value(x):
            return np.reshape(plain(x)[0] if jac is True else plain(x), ())

        helpers = dict(user)
        if jac is None and (meth in _USE_GRADIENT or method is None):
            # chainrules' exact gradient instead of SciPy's finite differences
            helpers["jac"] = grad(plain_value)
        if hess is None and hessp is None and meth in _NEED_HESSIAN:
            helpers["hess"] = hessian(plain_value)
        res = prob.scipy(_so.minimize, plain, x0p, method=method, bounds=bounds,
                         constraints=cons_plain, tol=tol, callback=callback, options=options,
                         **helpers)
        if not res.success:
            not_converged(name, res.message)
        if bounds is not None:
            lb, ub = _bounds_arrays(bounds, res.x.size)
            if _at_bound(res.x, lb, ub):
                active(name, "an active bound")
        if constraints:
            _check_constraints(constraints, res.x, name)
        return res

    res = run()

    def objective(x, params):
        out = prob.call(x, params)
        # a size-1 array is a scalar to SciPy, and here
        return np.reshape(out[0] if jac is True else out, ())

    def residual(x, *params):
        return grad(lambda z: objective(z, params))(x)

    x = solution(prob, residual, lambda *pp: run(pp).x, res.x)
    out = copy.copy(res)
    out.x = x
    out.fun = objective(x, prob.params)
    return out


#: the methods of minimize that use a gradient, and those that need a Hessian
_USE_GRADIENT = ("cg", "bfgs", "newton-cg", "l-bfgs-b", "tnc", "slsqp", "dogleg", "trust-ncg",
                 "trust-krylov", "trust-exact", "trust-constr")
_NEED_HESSIAN = ("dogleg", "trust-ncg", "trust-krylov", "trust-exact")


def _plain_constraint(c):
    if isinstance(c, dict):
        c = dict(c)
        for k in ("fun", "jac"):
            if callable(c.get(k)):
                c[k] = plain_helper(c[k], ())
        return c
    return c


#: SciPy's robust losses rho(z) of least_squares, z the squared residual
_LOSSES = {
    "linear": lambda z: z,
    "soft_l1": lambda z: 2.0 * (np.sqrt(1.0 + z) - 1.0),
    "huber": lambda z: np.where(z <= 1.0, z, 2.0 * np.sqrt(np.maximum(z, 1.0)) - 1.0),
    "cauchy": lambda z: np.log1p(z),
    "arctan": lambda z: np.arctan(z),
}


def least_squares(fun, x0, jac="2-point", bounds=(-np.inf, np.inf), method="trf", ftol=1e-08,
                  xtol=1e-08, gtol=1e-08, x_scale=1.0, loss="linear", f_scale=1.0,
                  diff_step=None, tr_solver="exact", tr_options=None, jac_sparsity=None,
                  max_nfev=None, verbose=0, args=(), kwargs=None):
    """``scipy.optimize.least_squares``, differentiable in ``args``,
    ``kwargs`` and the values being differentiated that ``fun`` closes
    over, through the optimality condition of the cost ``0.5 sum
    f_scale^2 rho((f / f_scale)^2)`` (SciPy's losses by name; a callable
    loss raises ``MissingRuleError``). ``.x``, ``.fun`` and ``.cost`` are
    traced. A solution at an active bound raises ``DomainError``; one SciPy
    reports as failed (``status <= 0``), or with a singular Hessian of the
    cost, ``NumericalInstabilityError``."""
    args = as_args(args)
    kwargs = {} if kwargs is None else dict(kwargs)
    tr_options = {} if tr_options is None else tr_options
    name = f"chainrules.scipy.optimize.least_squares ({fname(fun)}, method {method!r})"
    x0p = plain_array(x0)
    keys = list(kwargs)

    def fun_kw(x, *a):
        return fun(x, *a[:len(args)], **dict(zip(keys, a[len(args):])))

    prob = Problem(fun_kw, x0p, args + tuple(kwargs[k] for k in keys), name)
    kw = dict(bounds=bounds, method=method, ftol=ftol, xtol=xtol, gtol=gtol, x_scale=x_scale,
              f_scale=f_scale, diff_step=diff_step, tr_solver=tr_solver,
              tr_options=tr_options, jac_sparsity=jac_sparsity, max_nfev=max_nfev,
              verbose=verbose)
    if not prob.traced:
        return _so.least_squares(fun, x0, jac=jac, loss=loss, args=args, kwargs=kwargs, **kw)
    if loss not in _LOSSES:
        raise MissingRuleError(f"{name}: a callable loss is not differentiated; use one of "
                               f"SciPy's losses by name ({', '.join(_LOSSES)})")
    helper = jac
    if callable(jac):
        def helper(x, *a):
            return _plain_jac(jac, x, prob.plain_args)

    def run(params=None):
        res = prob.scipy(_so.least_squares, lambda x: prob.plain(x, params), x0p, jac=helper,
                         loss=loss, **kw)
        if res.status <= 0:
            not_converged(name, res.message)
        if np.any(res.active_mask != 0):
            active(name, "an active bound")
        return res

    res = run()
    rho = _LOSSES[loss]
    c2 = float(f_scale) ** 2

    def cost(x, params):
        r = np.ravel(prob.call(x, params))
        return 0.5 * c2 * np.sum(rho(r * r / c2))

    def residual(x, *params):
        return grad(lambda z: cost(z, params))(x)

    x = solution(prob, residual, lambda *pp: run(pp).x, res.x)
    out = copy.copy(res)
    out.x = x
    out.fun = prob.call(x, prob.params)
    out.cost = cost(x, prob.params)
    return out


def _plain_jac(jac, x, plain_args):
    j = jac(x, *plain_args)
    return untraced(j) if is_traced(j) else j


def _nparams(f, p0):
    if p0 is not None:
        return int(np.size(untraced(p0)))
    params = list(inspect.signature(f).parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params) or len(params) < 2:
        raise ValueError("Unable to determine number of fit parameters.")
    return len(params) - 1


def curve_fit(f, xdata, ydata, p0=None, sigma=None, absolute_sigma=False, check_finite=None,
              bounds=(-np.inf, np.inf), method=None, jac=None, *, full_output=False,
              nan_policy=None, **kwargs):
    """``scipy.optimize.curve_fit``, differentiable in ``xdata``, ``ydata``,
    ``sigma`` and the values being differentiated that ``f`` closes over:
    ``popt`` minimizes ``sum(((f(xdata, *p) - ydata) / sigma)^2)`` (for a
    2-D ``sigma``, the residuals whitened by its Cholesky factor), and is
    differentiated through that optimality condition. ``pcov`` is computed
    from ``popt`` with chainrules' Jacobian of the model (differentiable;
    equal to SciPy's up to SciPy's finite-difference Jacobian). A fit SciPy
    reports as failed raises ``NumericalInstabilityError``; one at an active
    bound, ``DomainError``. ``p0`` only starts the fit."""
    name = f"chainrules.scipy.optimize.curve_fit ({fname(f)})"
    n = _nparams(f, p0)
    start = np.ones(n) if p0 is None else np.ravel(plain_array(p0)).astype(float)
    two_d = sigma is not None and np.ndim(sigma) == 2
    # the values being differentiated that the model closes over: trailing
    # arguments of the model, after xdata, ydata and sigma
    model_prob = Problem(f, _untraced_tree(xdata), tuple(float(v) for v in start), name)
    model, captured = model_prob.conv, model_prob.captured

    def whitened(p, xd, yd, sg, cap):
        r = np.ravel(model(xd, *[p[k] for k in range(n)], *cap) - yd)
        if sg is None:
            return r
        if two_d:
            return np.linalg.solve(np.linalg.cholesky(sg), r)
        return r / np.ravel(sg)

    def chi2(p, xd, yd, sg, *cap):
        r = whitened(p, xd, yd, sg, cap)
        return 0.5 * np.sum(r * r)

    prob = Problem(chi2, start, (xdata, ydata, sigma) + tuple(captured), name)
    kw = dict(absolute_sigma=absolute_sigma, check_finite=check_finite, bounds=bounds,
              method=method, nan_policy=nan_policy, **kwargs)
    if not prob.traced:
        return _so.curve_fit(f, xdata, ydata, p0=p0, sigma=sigma, jac=jac,
                             full_output=full_output, **kw)
    jac_helper = (lambda x, *p: _plain_jac(jac, x, p)) if callable(jac) else jac

    def run(params=None):
        xd, yd, sg, *cap = prob.args_of(None if params is None else list(params))
        xd, yd = _untraced_tree(xd), untraced(yd)
        sg = None if sg is None else untraced(sg)
        cap = [untraced(c) for c in cap]
        try:
            out = model_prob.scipy(_so.curve_fit, lambda x, *p: model_prob.strict(x, *p, *cap),
                                   xd, yd, p0=start, sigma=sg, jac=jac_helper,
                                   full_output=True, **kw)
        except RuntimeError as e:
            not_converged(name, str(e))
        if out[4] not in (1, 2, 3, 4):
            not_converged(name, out[3])
        lb, ub = _bounds_pair(bounds)
        if _at_bound(out[0], lb, ub):
            active(name, "an active bound")
        return out

    first = run()

    def residual(p, *params):
        return grad(lambda z: prob.call(z, params))(p)

    popt = solution(prob, residual, lambda *pp: run(pp)[0], first[0])
    xd, yd, sg, *cap = prob.args_of(prob.params)
    r = whitened(popt, xd, yd, sg, cap)
    jr = jacobian(lambda p: whitened(p, xd, yd, sg, cap))(popt)
    m = int(np.size(r))
    if m > n or absolute_sigma:
        pcov = np.linalg.inv(np.transpose(jr) @ jr)
        if not absolute_sigma:
            pcov = pcov * (np.sum(r * r) / (m - n))
    else:
        pcov = np.full((n, n), np.inf)
    if full_output:
        return popt, pcov, first[2], first[3], first[4]
    return popt, pcov


def _bounds_pair(bounds):
    if isinstance(bounds, _so.Bounds):
        return bounds.lb, bounds.ub
    return bounds
