"""A user's function ``fun(x, *args)`` made explicit in the values being
differentiated that reach it (through ``args``, or closed over), and the
solution of an equation in ``x`` made one operation differentiated by the
implicit function theorem (``chainrules.rules.scipy_optimize``)."""

import numpy as np

from chainrules import pytree
from chainrules.capture import FIXED, PLAIN, Capture, current, next_level
from chainrules.errors import (DomainError, MissingRuleError, NumericalInstabilityError,
                               UntraceableError)
from chainrules.rules.scipy_optimize import ImplicitSpec, implicit_solution
from chainrules.tracing import is_traced, untraced


def as_args(args):
    """``args`` as SciPy takes it: a tuple, a single value wrapped in one."""
    return args if isinstance(args, tuple) else (args,)


def plain_array(x):
    """A plain float array of ``x`` (traced or not), for SciPy."""
    x = np.asarray(untraced(x))
    return x if x.dtype.kind in "fc" else x.astype(float)


def fname(fun):
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or "func"


class Problem:
    """``fun(x, *args)`` with the values being differentiated that reach it
    (the leaves of ``args``; closed-over values, found by evaluating it once
    at ``x_example`` on plain values) as ``params``, the inputs of the
    solution. ``plain(x)`` evaluates it on plain values (what SciPy calls),
    ``call(x, params)`` with ``params`` standing for those values."""

    def __init__(self, fun, x_example, args, name):
        self.name = name
        self.failure = None
        leaves, td = pytree.flatten(list(args))
        self.td, self.nleaves = td, len(leaves)

        def flat(x, *lv):
            return fun(x, *pytree.unflatten(td, list(lv)))

        # the values being differentiated that fun closes over: found by
        # running it once on plain values (chainrules.capture)
        self.parent = current()
        # tapes below this level are the enclosing ones (later ones are the
        # solver's helpers', the pullback's own)
        self.bound = next_level()
        first = Capture(self.bound, PLAIN, self.parent, name=name)
        first.run(flat, x_example, *untraced(list(leaves)))
        self.captured = captured = list(first.captured)
        self.keys = [(c.tape.level, c.node) for c in captured]
        self.flat = flat
        values = list(leaves) + list(captured)
        self.idx = [i for i, v in enumerate(values) if is_traced(v)]
        self.params = [values[i] for i in self.idx]
        for p in self.params:
            if np.asarray(untraced(p)).dtype.kind == "c":
                raise MissingRuleError(
                    f"{name}: a complex parameter is being differentiated; the solvers of "
                    "scipy.optimize are real, and so is their derivative: pass the real "
                    "and imaginary parts as separate real parameters")
        self.plain_values = [untraced(v) if is_traced(v) else v for v in values]
        self.plain_args = pytree.unflatten(td, self.plain_values[:len(leaves)])

    def args_of(self, params=None):
        """The arguments (``args``, rebuilt), with ``params`` (None: the
        plain values) standing for the values being differentiated."""
        if params is None:
            return self.plain_args
        return pytree.unflatten(self.td, self.values(params)[:self.nleaves])

    @property
    def traced(self):
        return bool(self.params)

    def values(self, params):
        vals = list(self.plain_values)
        for i, p in zip(self.idx, params):
            vals[i] = p
        return vals

    def conv(self, x, *vals):
        """``fun(x, *args)`` with ``vals`` standing for the leaves of ``args``
        and then for the closed-over values. Other traced values (``x``, the
        parameters of an enclosing differentiation) pass as they are, so the
        function can be evaluated on a solution traced on any tape."""
        leaves, stand = vals[:self.nleaves], vals[self.nleaves:]
        if not self.keys:
            return self.flat(x, *leaves)
        sub = Capture(next_level(), FIXED, self.parent, name=self.name)
        sub.memo.update(zip(self.keys, stand))
        return sub.run(self.flat, x, *leaves)

    def call(self, x, params):
        return self.conv(x, *self.values(params))

    def plain(self, x, params=None):
        """``fun(x)`` on plain values (the parameters ``params``, plain, or
        the problem's own), as SciPy's solver calls it. A value being
        differentiated that ``fun`` reaches without it being found at the
        starting point is refused (``UntraceableError``, re-raised by
        ``scipy`` when SciPy's compiled code replaces it)."""
        vals = self.plain_values if params is None else self.values(params)
        return self.strict(x, *vals)

    def strict(self, x, *vals):
        """``conv`` on plain values: any other value being differentiated
        that the function reaches is refused."""
        sub = Capture(self.bound, FIXED, self.parent, level=0, name=self.name,
                      unseen="it did not use at the starting point, where chainrules "
                             "evaluates it to find them; pass such a value in args")
        sub.memo.update(zip(self.keys, vals[self.nleaves:]))
        try:
            return sub.run(self.flat, x, *vals[:self.nleaves])
        except UntraceableError as e:
            self.failure = e
            raise

    def scipy(self, solver, *args, **kwargs):
        """``solver(*args, **kwargs)`` (SciPy's), with a refusal raised in
        the function it calls re-raised as it is, whatever error SciPy's
        compiled code made of it."""
        self.failure = None
        try:
            return solver(*args, **kwargs)
        except Exception as e:
            if self.failure is not None and e is not self.failure:
                raise self.failure from e
            raise


def plain_helper(fn, args):
    """A user's helper (a Jacobian, a Hessian, a constraint) as SciPy calls
    it, on plain values: it only guides the solver; the derivative of the
    solution is chainrules' own."""
    if not callable(fn):
        return fn
    return lambda x, *a: _untraced_tree(fn(x, *args))


def _untraced_tree(v):
    leaves, td = pytree.flatten(v)
    if any(is_traced(leaf) for leaf in leaves):
        return pytree.unflatten(td, [untraced(leaf) for leaf in leaves])
    return v


def solution(problem, residual, solve, first):
    """The solution ``x`` of ``residual(x, *params) = 0``, traced along the
    problem's ``params``. ``solve(*plain_params)``: SciPy's solution for
    other parameters (finite differences, checks); ``first``: the solution
    already found for the problem's own parameters."""
    spec = ImplicitSpec(residual, solve, problem.name)
    spec.last = ([np.array(untraced(p), copy=True) for p in problem.params],
                 np.asarray(first, dtype=float))
    return implicit_solution(*problem.params, _spec=spec)


def not_converged(name, message):
    raise NumericalInstabilityError(
        f"{name}: SciPy's solver did not converge ({message}); no derivative is "
        "returned for a point that is not a solution. Change the starting point, the "
        "tolerances or the method, or raise the iteration limit")


def active(name, what):
    raise DomainError(
        f"{name}: the solution is at {what}, where it depends on the parameters "
        "through the set of active constraints, which the implicit function theorem of "
        "an interior solution does not follow; chainrules differentiates interior "
        "solutions only. Differentiate with the active variables fixed (solve the "
        "reduced problem), or move the bound away from the solution")
