"""Differentiable ``odeint``, ``solve_ivp``, ``trapezoid``, ``simpson`` and
``cumulative_trapezoid`` (same signatures as ``scipy.integrate``); requires SciPy.
``quad``, ``quad_vec`` and ``dblquad`` are in ``chainrules.scipy._quad``.

``odeint`` and ``solve_ivp`` are differentiable with respect to the initial
state, the parameters passed through ``args``, the values being
differentiated that the right-hand side closes over (``def rhs(y, t):
return -k * y`` with ``k`` traced) and the time points (``t`` for
``odeint``; ``t_span[0]`` and ``t_eval`` for ``solve_ivp``). Reverse mode
integrates forward sensitivities (the solution's derivatives along every
differentiated value, in one forward solve) for small systems, and the
adjoint system backwards for larger ones; forward mode integrates the
variational equation (see rules/scipy_integrate.py). The right-hand side is
plain NumPy code: it is differentiated by chainrules itself. Closed-over
values are found by evaluating it once at the initial point
(``chainrules.capture.closure_convert``) and become trailing parameters,
differentiated like ``args``. Derivatives are those of the exact ODE
solution, computed to the solver tolerances you pass (``rtol``/``atol``),
which also govern the derivative's solve. Second derivatives
(``chainrules.hvp``, ``hessian``, ``hessian_operator``) are those of the
same solves carried forward over reverse, in the initial state, ``args``
and the closed-over values; in the time points, and by nesting ``grad`` in
``grad``, they raise ``HvpNotSupported`` (pass the times as constants, use
``chainrules.hvp``).
"""

import numpy as np

from chainrules import pytree
from chainrules.capture import closure_convert
from chainrules.rules.scipy_integrate import OdeSpec, ode_solve
from chainrules.rules.scipy_integrate_plans import plain_cells as _plain_cells
from chainrules.tracing import is_traced, untraced

try:
    import scipy.integrate as _si
except ImportError:  # pragma: no cover
    _si = None

from ._quad import dblquad, quad, quad_vec  # noqa: E402  (the quadrature twins)

__all__ = ["odeint", "solve_ivp", "trapezoid", "simpson", "cumulative_trapezoid", "quad",
           "quad_vec", "dblquad"]


def _any_traced(*xs):
    return any(is_traced(x) for x in xs)


def _name(func, solver):
    fname = getattr(func, "__qualname__", None) or getattr(func, "__name__", "func")
    return f"the right-hand side {fname} of chainrules.scipy.integrate.{solver}"


def _flat_args(func, args):
    """``(func, args)`` with ``args`` flattened to its pytree leaves, so that
    the leaves inside a nested argument (a list of ``(W, b)`` pairs) are
    differentiated; ``func`` then rebuilds the arguments it was written for.
    Arguments that are leaves already are passed as they are. Also returns
    the arguments' structure (None for leaves)."""
    leaves, td = pytree.flatten(list(args))
    if len(leaves) == len(args) and all(pytree.is_leaf(a) for a in args):
        return func, tuple(args), None

    def flat_func(a, b, *flat):
        return func(a, b, *pytree.unflatten(td, list(flat)))
    return flat_func, tuple(leaves), td


def _origin(func, args_td, nargs, args):
    """``OdeSpec.origin``: the user's function (the one a pytree state's
    wrapper was made for) and how the twin wrapped it: the state's and the
    arguments' structures and how many closed-over values became arguments.
    The staged derivatives of the right-hand side are kept across solves
    under it."""
    user, state = getattr(func, "_chainrules_ode_origin", (func, None))
    return user, (state, args_td, len(args) - nargs)


def _closure_args(func, y0, t0, args, tfirst, name):
    """``(func, args)`` with the values being differentiated that ``func``
    uses without receiving them (closures, globals) appended to ``args``:
    ``func`` is evaluated once at the initial point on plain values to find
    them, and then takes them as trailing arguments."""
    y = np.asarray(untraced(y0))
    y = np.ravel(y if y.dtype.kind in "fc" else y.astype(float))
    s = np.ravel(np.asarray(untraced(t0), dtype=float))[0]
    first = (s, y) if tfirst else (y, s)
    func, captured = closure_convert(
        func, *first, *args, name=name,
        unseen="it did not use at the initial point, where chainrules evaluates it to "
               "find them; pass such a value in args")
    return func, tuple(args) + tuple(captured)


class _FlatState:
    """A state given as a pytree (a dict of arrays, a list of pairs) as the
    one vector SciPy's solvers integrate: ``func`` sees and returns the tree,
    the solution is one array per leaf with the time axis added."""

    def __init__(self, y0):
        leaves, self.td = pytree.flatten(y0)
        self.shapes = [np.shape(leaf) for leaf in leaves]
        ends = np.cumsum([int(np.prod(s, dtype=int)) for s in self.shapes])
        self.bounds = list(zip([0] + [int(e) for e in ends[:-1]], [int(e) for e in ends]))
        self.y0 = np.concatenate([np.ravel(leaf) for leaf in leaves])

    def tree(self, v):
        return pytree.unflatten(self.td, [np.reshape(v[a:b], s)
                                          for (a, b), s in zip(self.bounds, self.shapes)])

    def vector(self, tree):
        leaves, td = pytree.flatten(tree)
        if td != self.td:
            raise ValueError(f"the right-hand side returned a {td} for a state {self.td}: "
                             "return the derivative with the state's structure")
        return np.concatenate([np.ravel(leaf) for leaf in leaves])

    def wrap(self, func, tfirst):
        if tfirst:
            def flat_func(t, y, *args):
                return self.vector(func(t, self.tree(y), *args))
        else:
            def flat_func(y, t, *args):
                return self.vector(func(self.tree(y), t, *args))
        # the function whose derivatives' plans are kept across solves (_origin)
        flat_func._chainrules_ode_origin = (func, (self.td, tuple(self.shapes)))
        return flat_func

    def solution(self, ys, time_last):
        """The solution ``ys`` (time by state, or state by time) per leaf."""
        if time_last:
            return pytree.unflatten(self.td, [np.reshape(ys[a:b], s + (np.shape(ys)[1],))
                                              for (a, b), s in zip(self.bounds, self.shapes)])
        return pytree.unflatten(self.td, [np.reshape(ys[:, a:b], (np.shape(ys)[0],) + s)
                                          for (a, b), s in zip(self.bounds, self.shapes)])


def _state(y0):
    """A ``_FlatState`` for a pytree state, None for an array (or a scalar)."""
    return None if pytree.flatten(y0)[1] is pytree.LEAF else _FlatState(y0)


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None,
           rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0,
           mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False):
    """``scipy.integrate.odeint``, differentiable in ``y0``, ``t``, ``args``
    (every leaf of a nested argument too: a list of ``(W, b)`` pairs) and the
    values being differentiated that ``func`` closes over. ``y0`` may be a
    pytree (a dict of arrays, ...): ``func`` then takes and returns that
    structure, and the solution is the structure with a leading time axis
    on every leaf."""
    state = _state(y0)
    if state is not None:
        if Dfun is not None:
            raise ValueError("odeint: Dfun applies to an array state; a pytree state "
                             "(y0) takes none")
        out = odeint(state.wrap(func, tfirst), state.y0, t, args, None, col_deriv,
                     full_output, ml, mu, rtol, atol, tcrit, h0, hmax, hmin, ixpr, mxstep,
                     mxhnil, mxordn, mxords, printmessg, tfirst)
        if full_output:
            return state.solution(out[0], False), out[1]
        return state.solution(out, False)
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    name = _name(func, "odeint")
    user = func
    func, args, args_td = _flat_args(func, args)
    nargs = len(args)
    wrapped = func
    func, args = _closure_args(func, y0, t, args, tfirst, name)
    kw = dict(Dfun=Dfun, col_deriv=col_deriv, ml=ml, mu=mu, rtol=rtol, atol=atol,
              tcrit=tcrit, h0=h0, hmax=hmax, hmin=hmin, ixpr=ixpr, mxstep=mxstep,
              mxhnil=mxhnil, mxordn=mxordn, mxords=mxords, printmessg=printmessg)
    if not _any_traced(y0, t, *args):
        return _si.odeint(func, y0, t, args=args, full_output=full_output, tfirst=tfirst, **kw)
    # the solver only sees plain arrays; Dfun (a Jacobian of the original
    # system) does not apply to the augmented systems of the derivative
    opts = {k: v for k, v in kw.items() if k in ("rtol", "atol", "tcrit", "h0", "hmax", "hmin",
                                                  "mxstep", "mxordn", "mxords")}
    spec = OdeSpec(func, tfirst, "odeint", opts, "chainrules.scipy.integrate.odeint",
                   origin=_origin(user, args_td, nargs, args),
                   plain=wrapped if len(args) == nargs else _plain_cells(wrapped, args[nargs:]))
    ys = ode_solve(y0, t, *args, _spec=spec)
    if full_output:
        return ys, {"message": "integrated by scipy.integrate.odeint (derivative by "
                               "forward sensitivities or the adjoint method)"}
    return ys


class OdeResult(dict):
    """The result of ``solve_ivp`` (attribute access like SciPy's)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
              vectorized=False, args=None, **options):
    """``scipy.integrate.solve_ivp``, differentiable in ``y0``, ``args``,
    ``t_span[0]``, ``t_eval`` and the values being differentiated that
    ``fun`` closes over. Without ``t_eval`` the solution is differentiated
    at the solver's own time points, held fixed. ``y0`` may be a pytree:
    ``fun`` then takes and returns that structure, and ``sol.y`` is the
    structure with a trailing time axis on every leaf."""
    state = _state(y0)
    if state is not None:
        sol = solve_ivp(state.wrap(fun, True), t_span, state.y0, method, t_eval,
                        dense_output, events, vectorized, args, **options)
        sol = OdeResult(sol)
        sol["y"] = state.solution(sol["y"], True)
        return sol
    params = () if args is None else tuple(args)
    name = _name(fun, "solve_ivp")
    user = fun
    fun, params, args_td = _flat_args(fun, params)
    nargs = len(params)
    t0 = t_span[0]
    wrapped = fun
    fun, params = _closure_args(fun, y0, t0, params, True, name)
    args = None if args is None and not params else params
    if not _any_traced(y0, t0, t_eval, *params):
        return _si.solve_ivp(fun, t_span, y0, method=method, t_eval=t_eval,
                             dense_output=dense_output, events=events, vectorized=vectorized,
                             args=args, **options)
    if dense_output or events is not None:
        from chainrules.errors import MissingRuleError

        raise MissingRuleError("chainrules.scipy.integrate.solve_ivp: dense_output and "
                               "events are not differentiated; pass t_eval")
    if t_eval is None:
        from chainrules.tracing import untraced as stop_gradient

        plain = _si.solve_ivp(fun, (float(stop_gradient(t0)), float(stop_gradient(t_span[1]))),
                              np.asarray(stop_gradient(y0), float), method=method,
                              args=tuple(stop_gradient(list(params))) if params else None,
                              **options)
        t_eval = plain.t
    spec = OdeSpec(fun, True, method, options, "chainrules.scipy.integrate.solve_ivp",
                   origin=_origin(user, args_td, nargs, params),
                   plain=(wrapped if len(params) == nargs
                          else _plain_cells(wrapped, params[nargs:])))
    times = np.concatenate([np.reshape(t0, (1,)), t_eval])
    ys = ode_solve(y0, times, *params, _spec=spec)
    return OdeResult(t=t_eval, y=np.transpose(ys[1:]), success=True, status=0,
                     message="The solver successfully reached the end of the integration "
                             "interval.", sol=None, t_events=None, y_events=None)


def _along(y, axis):
    return np.moveaxis(y, axis, -1)


def _spacing(x, dx):
    return dx if x is None else x[..., 1:] - x[..., :-1]


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``scipy.integrate.trapezoid`` (differentiable in y, x and dx)."""
    if not _any_traced(y, x, dx):
        return _si.trapezoid(y, x=x, dx=dx, axis=axis)
    yy = _along(y, axis)
    d = _spacing(None if x is None else (_along(x, axis) if np.ndim(x) > 1
                                                       else x), dx)
    return np.sum((yy[..., 1:] + yy[..., :-1]) * d, axis=-1) * 0.5


def cumulative_trapezoid(y, x=None, dx=1.0, axis=-1, initial=None):
    """``scipy.integrate.cumulative_trapezoid`` (differentiable in y, x, dx)."""
    if not _any_traced(y, x, dx):
        return _si.cumulative_trapezoid(y, x=x, dx=dx, axis=axis, initial=initial)
    yy = _along(y, axis)
    d = _spacing(None if x is None else (_along(x, axis) if np.ndim(x) > 1
                                                       else x), dx)
    c = np.cumsum((yy[..., 1:] + yy[..., :-1]) * d, axis=-1) * 0.5
    if initial is not None:
        if np.ndim(initial) != 0:
            raise ValueError("`initial` must be `None` or a scalar.")
        c = np.concatenate([np.zeros(c.shape[:-1] + (1,), c.dtype) + initial, c], axis=-1)
    return np.moveaxis(c, -1, axis)


def simpson(y, *, x=None, dx=1.0, axis=-1):
    """``scipy.integrate.simpson``: linear in ``y`` (differentiable); the
    sample points ``x``/``dx`` are held constant."""
    if is_traced(x) or is_traced(dx):
        from chainrules.errors import MissingRuleError

        raise MissingRuleError("chainrules.scipy.integrate.simpson is differentiated in y "
                               "only; use trapezoid to differentiate the sample points")
    if not is_traced(y):
        return _si.simpson(y, x=x, dx=dx, axis=axis)
    yy = _along(y, axis)
    n = yy.shape[-1]
    xx = None if x is None else (np.asarray(x) if np.ndim(x) == 1 else _along(np.asarray(x), axis))
    basis = np.eye(n)
    if xx is not None and xx.ndim > 1:
        w = _si.simpson(basis, x=xx[..., None, :], dx=dx, axis=-1)
    else:
        w = _si.simpson(basis, x=xx, dx=dx, axis=-1)   # w[k] = integral of e_k
    return np.sum(yy * w.astype(yy.dtype if yy.dtype.kind in "fc" else float), axis=-1)
