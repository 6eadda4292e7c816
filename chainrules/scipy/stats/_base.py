"""Helpers shared by the ``chainrules.scipy.stats`` distributions: safe
branches (the double where), dtypes and result shapes, signature binding,
frozen objects and the refusal of traced parameters in ``rvs``.

A distribution is written in its standard form (``loc=0, scale=1``), as in
SciPy: ``_logpdf(z, *shapes)``, ``_cdf(z, *shapes)``, ... on
``z = (x - loc) / scale``. The public methods wrap that maths the way
``scipy.stats.rv_continuous`` / ``rv_discrete`` do: parameters outside their
domain give nan, points outside the support give 0 (pdf, cdf), -inf (logpdf,
logcdf) or 1 (cdf above the support), and everything broadcasts.

Every branch is an ``np.where`` on masks computed from the plain values, and
every argument is made safe before the maths runs on it ("double where"):
``np.where(mask, f(x), c)`` differentiates ``f`` at the masked points too,
so ``f`` gets ``np.where(mask, x, inside_point)``, never a value at which its
derivative is infinite or nan. Gradients inside the support therefore stay
finite when other elements are outside it.

Dtypes follow the inputs (float32 stays float32; SciPy returns float64);
0-d results are NumPy scalars, as in SciPy.
"""

import inspect
import math

import numpy as np

from chainrules.errors import UntraceableError
from chainrules.rules._util import array_value
from chainrules.staging import is_staged
from chainrules.tracing import is_traced

__all__ = ["Frozen", "apply_where", "arg", "assemble", "broadcast_shape", "safe", "finish",
           "lazyselect", "log_of", "plain", "refuse_traced", "target_dtype"]

NAN = float("nan")
INF = float("inf")


def arg(v):
    """Lists and tuples as arrays; everything else (traced values, arrays of
    any library, Python scalars, which NumPy 2 keeps weakly typed) as is."""
    return np.asarray(v) if isinstance(v, (list, tuple)) else v


def plain(v):
    """The value of ``v`` without its trace (masks are computed on it)."""
    return array_value(v) if hasattr(v, "shape") or is_traced(v) else v


def _all_true(mask):
    # decided on the data for NumPy values and staged values of them (cr.jit:
    # the plan guards the answer, and computes the branch eager code takes);
    # a lazy mask takes both branches
    v = mask.value if is_staged(mask) else mask
    if isinstance(v, (bool, np.bool_)):
        return bool(mask)
    return type(v) is np.ndarray and bool(mask.all())


def _all_false(mask):
    v = mask.value if is_staged(mask) else mask
    if isinstance(v, (bool, np.bool_)):
        return not mask
    return type(v) is np.ndarray and not mask.any()


def safe(v, ok, fill):
    """``v`` where ``ok``, ``fill`` elsewhere: the inner ``where`` of the double
    where (nothing is recorded when every element is ``ok``)."""
    if _all_true(ok):
        return v
    return np.where(ok, v, fill)


def apply_where(cond, args, f1, f2, fill1=1.0, fill2=1.0):
    """``f1(*args)`` where the plain mask ``cond`` holds, ``f2(*args)``
    elsewhere; each branch sees its arguments made safe (``fill1``/``fill2``,
    a value or one per argument, at the other branch's points), so neither
    leaks a nan derivative. A
    branch that no element takes is not evaluated."""
    if _all_true(cond):
        return f1(*args)
    if _all_false(cond):
        return f2(*args)
    other = np.logical_not(cond)
    n = len(args)
    fill1 = fill1 if isinstance(fill1, tuple) else (fill1,) * n
    fill2 = fill2 if isinstance(fill2, tuple) else (fill2,) * n
    return np.where(cond, f1(*[safe(a, cond, f) for a, f in zip(args, fill1)]),
                    f2(*[safe(a, other, f) for a, f in zip(args, fill2)]))


def lazyselect(conds, funcs, args, default, fill=1.0):
    """``np.select(conds, [f(*args) for f in funcs], default)`` evaluating only
    the branches some element takes, each on arguments made safe (``fill``)
    at the points it does not own."""
    out = default
    for cond, f in reversed(list(zip(conds, funcs))):
        if _all_false(cond):
            continue
        val = f(*[safe(a, cond, fill) for a in args])
        out = val if _all_true(cond) else np.where(cond, val, out)
    return out


def log_of(v):
    """``log(v)``, a Python float for Python scalars (weakly typed)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
        return math.log(v)
    return np.log(v)


def target_dtype(*values):
    """The floating dtype of the result: NumPy's promotion of the arguments
    with Python scalars weak (float32 arrays and Python floats give float32)."""
    kinds = []
    for v in values:
        if v is None:
            continue
        if is_traced(v) or hasattr(v, "dtype"):
            kinds.append(np.dtype(plain(v).dtype))
        else:
            kinds.append(v)
    dt = np.result_type(*kinds, 0.0)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def finish(out, dtype, shape=None):
    """Cast to ``dtype``, broadcast to ``shape`` and return 0-d plain results
    as NumPy scalars (as SciPy does)."""
    if not (is_traced(out) or hasattr(out, "dtype")):
        out = np.asarray(out, dtype)
    if shape is not None and np.shape(plain(out)) != tuple(shape):
        out = np.broadcast_to(out, shape)
    if plain(out).dtype != dtype:
        out = out.astype(dtype)
    if type(out) is np.ndarray and out.ndim == 0:
        return out[()]
    return out


def assemble(inside, val, fill):
    """``val`` where ``inside``, the plain array ``fill`` elsewhere (the outer
    ``where``)."""
    if _all_true(inside):
        return val
    return np.where(inside, val, fill)


def broadcast_shape(*values):
    return np.broadcast_shapes(*(np.shape(plain(v)) for v in values if v is not None))


def refuse_traced(where, values, how):
    """Sampling has no derivative: raise when a parameter is traced."""
    from chainrules import pytree

    leaves = pytree.flatten(list(values))[0] if values else []
    if any(is_traced(v) for v in leaves):
        raise UntraceableError(
            f"{where} draws random samples, which carry no derivative with respect to "
            f"the distribution's parameters; use reparameterised sampling instead: {how}")


class Base:
    """Signature binding, frozen objects and ``rvs`` for one distribution."""

    name = ""
    shapes = ()
    _extra = ()          # (name, default) after the shapes: loc, scale
    methods = ()
    reparam = "draw the noise with plain parameters and transform it"

    def __init__(self):
        params = [inspect.Parameter(s, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                  for s in self.shapes]
        params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                   for n, d in self._extra]
        self._sig = inspect.Signature(params)

    def _bind(self, args, kwds, method):
        try:
            b = self._sig.bind(*args, **kwds)
        except TypeError as e:
            raise TypeError(f"chainrules.scipy.stats.{self.name}.{method}(): {e}") from None
        b.apply_defaults()
        vals = b.arguments
        shapes = tuple(arg(vals[s]) for s in self.shapes)
        return shapes, tuple(arg(vals[n]) for n, _ in self._extra)

    def __call__(self, *args, **kwds):
        """The frozen distribution: ``norm(loc, scale).logpdf(x)``."""
        self._bind(args, kwds, "__call__")
        return Frozen(self, args, kwds)

    def rvs(self, *args, **kwds):
        """``scipy.stats.<dist>.rvs`` on plain parameters (not differentiated)."""
        refuse_traced(f"chainrules.scipy.stats.{self.name}.rvs",
                      list(args) + list(kwds.values()), self.reparam)
        import scipy.stats

        return getattr(scipy.stats, self.name).rvs(*args, **kwds)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"chainrules.scipy.stats.{self.name} has no differentiable {name!r}; "
            f"available: {', '.join(self.methods + ('rvs',))}")

    def __repr__(self):
        return f"<chainrules.scipy.stats.{self.name}>"


class Frozen:
    """A distribution with its parameters fixed, as ``scipy.stats.norm(0, 2)``."""

    def __init__(self, dist, args, kwds):
        self.dist, self.args, self.kwds = dist, tuple(args), dict(kwds)

    def __getattr__(self, name):
        if name.startswith("_") or name not in self.dist.methods + ("rvs",):
            raise AttributeError(name)
        method = getattr(self.dist, name)
        if name == "entropy":
            return lambda: method(*self.args, **self.kwds)
        if name == "rvs":
            return lambda size=None, random_state=None: method(
                *self.args, size=size, random_state=random_state, **self.kwds)
        return lambda x: method(x, *self.args, **self.kwds)

    def __repr__(self):
        return f"<frozen chainrules.scipy.stats.{self.dist.name}>"
