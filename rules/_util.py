"""Small helpers shared by the rule modules."""

import functools
import threading

import numpy as np

from chainrules.arrays import is_array, ndim_of, shape_of  # noqa: F401  (re-exported)
from chainrules.registry import mark_builtins, registered_ops
from chainrules.tracing import untraced


def on_demand_family():
    """Called at the top of a rule family that ``import chainrules`` does not
    load (SciPy's linalg, signal and integrate are slow to import; the
    family loads with ``chainrules.scipy`` or ``chainrules.rules.load_all``).
    Returns the function to call at its end, which marks the operations the
    family registered in between as built-in (``registry.builtin_ops``)."""
    before = registered_ops()
    return lambda: mark_builtins(since=before)


def normalize_axis(axis, ndim):
    """``axis`` (None, int or tuple, possibly negative) as a sorted tuple.
    A 0-d array has no axis to reduce: NumPy's reductions accept ``axis`` 0
    and -1 on it and reduce over nothing, so the tuple is empty."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if ndim == 0:
        for a in axes:
            if a not in (0, -1):
                raise np.exceptions.AxisError(a, 0)
        return ()
    return tuple(sorted(a % ndim for a in axes))


def array_value(x):
    """The value of ``x`` with every level of tracing removed, as an array of
    its own type: an ndarray stays an ndarray, a dask or other NEP-18 array
    stays lazy, a NumPy or Python scalar becomes a 0-d ndarray. Rules use it
    where they need the primal's data (masks, weights); never ``np.asarray``,
    which would compute a lazy array."""
    v = untraced(x)
    return v if is_array(v) else np.asarray(v)


def array_like(v):
    """A traced value or array as it is (never converted: a traced value must
    not reach np.asarray), anything else (lists, scalars) as an ndarray. The
    first step of every composition in rules/composites*.py."""
    return v if hasattr(v, "shape") and hasattr(v, "dtype") else np.asarray(v)


def no_derivative(op, what):
    """A partial for ``chainrules.derived.scalar_rule`` that raises
    ``MissingRuleError``: ``op`` has no closed-form derivative with respect to
    ``what`` (an order or shape argument). It runs only when that argument is
    traced, so holding it constant differentiates the others."""
    def partial(*args):
        from chainrules.errors import MissingRuleError

        raise MissingRuleError(f"{op}: no derivative with respect to {what} (no closed "
                               "form); pass it as a constant (a plain number or array, or "
                               "chainrules.stop_gradient(value))")
    return partial


def conj(x):
    """``x`` conjugated when it is complex, else ``x`` itself (no pass)."""
    return np.conjugate(x) if x.dtype.kind == "c" else x


def on_plain_values(op):
    """``op`` called on its arguments with every level of tracing removed: a
    composition for operations whose results carry no derivative (indices,
    counts, booleans, step functions)."""
    def plain(*args, **kwargs):
        return op(*untraced(list(args)), **untraced(kwargs))
    plain.__name__ = f"{getattr(op, '__name__', 'op')}_of_plain_values"
    return plain


def in_dtype_of(d, ref):
    """``d`` in the dtype of ``ref`` (a rule's output): SciPy's ufuncs whose
    first loop is float64 compute a float32 array with float64 scalars, and
    float32 must stay float32."""
    dt = np.result_type(ref)
    return d if np.result_type(d) == dt else d.astype(dt)


def real_only(x, what):
    """Raise ``MissingRuleError`` for complex ``x``: the derivative of
    ``scipy.special.<what>`` is written for real arguments only."""
    if np.iscomplexobj(x):
        from chainrules.errors import MissingRuleError

        raise MissingRuleError(f"scipy.special.{what}: no derivative at complex arguments "
                               "(the formula holds for real arguments only)")


_GLOBAL_RNG_LOCK = threading.RLock()
_FIXED_STATES = {}  # bit generator type -> the global RandomState's state seeded with 0


def fixed_global_rng(fn):
    """``fn`` called with NumPy's global random state (the one the legacy
    ``np.random.*`` functions draw from) set to one fixed state, and given
    back as it was afterwards. For SciPy functions that draw from it:
    ``scipy.sparse.linalg.onenormest`` starts from random sign vectors, and
    ``scipy.linalg.logm`` and ``expm_multiply`` choose their scaling and
    degree from its estimates, so that two calls at the same input may
    differ in the last bits. Through this wrapper the result is a function
    of the input alone (a staged replay computes what an eager call does),
    and the caller's random stream is left where it was. Calls through it
    hold one lock; another thread drawing from ``np.random`` meanwhile
    draws from the fixed state."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with _GLOBAL_RNG_LOCK:
            saved = np.random.get_state(legacy=False)
            kind = saved["bit_generator"]
            fixed = _FIXED_STATES.get(kind)
            if fixed is None:
                bg = type(np.random.get_bit_generator())(0)
                fixed = _FIXED_STATES[kind] = np.random.RandomState(bg).get_state(
                    legacy=False)
            np.random.set_state(fixed)
            try:
                return fn(*args, **kwargs)
            finally:
                np.random.set_state(saved)
    return call
