"""The public differentiation API: grad, value_and_grad, vjp, jvp, hvp.

Every function here traces the user's function once on a fresh ``Tape``,
then runs one sweep of the engine. Arguments and outputs may be pytrees
(tuples, lists, dicts, dataclasses) of arrays and scalars.
"""

import functools
import numbers

import numpy as np

from . import pytree
from .arrays import is_array, ones_like_value, shape_of, zeros_like_value
from .errors import (ComplexOutputError, HvpNotSupported, NonDifferentiableInputError,
                     NonScalarOutputError, TangentShapeError)
from .graph import Tape
from .tangents import NOTANGENT, ZERO, Structural
from .tracing import Traced, stop_gradient, untraced

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "grad_and_hvp",
           "stop_gradient"]


def _fname(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def _is_inexact(v):
    if isinstance(v, Traced):
        return True
    if isinstance(v, np.ndarray) or isinstance(v, np.generic) or is_array(v):
        return v.dtype.kind in "fc"
    return isinstance(v, (float, complex)) and not isinstance(v, bool)


def _as_primal(v):
    if isinstance(v, (np.ndarray, np.generic, Traced)):
        return v
    if isinstance(v, float):
        return np.float64(v)
    if isinstance(v, complex):
        return np.complex128(v)
    return v


class _Spec:
    """How the differentiated argument was traced: its tree and leaf nodes."""

    __slots__ = ("treedef", "leaves", "ids", "scalar")

    def __init__(self, treedef, leaves, ids, scalar):
        self.treedef = treedef
        self.leaves = leaves
        self.ids = ids
        self.scalar = scalar


def _private(v):
    """A copy of a user's array that a recording may keep: mutating the
    caller's array later cannot change what the recording computes."""
    if type(v) is np.ndarray:
        return v.copy()
    if type(v) is Traced or isinstance(v, np.generic) or not hasattr(v, "__array_function__"):
        return v
    copy = getattr(v, "copy", None)  # lazy for dask (a new array object)
    return copy() if copy is not None else np.copy(v)


def _trace_arg(tape, arg, fname, argnum, private=False):
    leaves, td = pytree.flatten(arg)
    if private:
        leaves = [_private(leaf) for leaf in leaves]
    if td is pytree.LEAF and not _is_inexact(arg):
        raise NonDifferentiableInputError(
            f"{fname}: argument {argnum} has type {type(arg).__name__}"
            + (f" and dtype {arg.dtype}" if hasattr(arg, "dtype") else "")
            + "; only float and complex values can be differentiated. Pass a float "
              "(for example x.astype(float) or 3.0 instead of 3), or leave the "
              "argument out of argnums.")
    traced, ids, scal = [], [], []
    for leaf in leaves:
        if _is_inexact(leaf):
            v = _as_primal(leaf)
            nid = tape.leaf(v)
            traced.append(Traced(v, nid, tape))
            ids.append(nid)
        else:
            traced.append(leaf)
            ids.append(None)
        scal.append(not (isinstance(leaf, Traced) or is_array(leaf)))
    return pytree.unflatten(td, traced), _Spec(td, leaves, ids, scal)


class ArgnumsError(ValueError, IndexError):
    """``argnums`` names an argument the function was not called with."""


def _trace_args(tape, args, argnums, fname, private=False):
    args = list(args)
    specs = []
    for a in argnums:
        if a >= len(args) or a < -len(args):
            raise ArgnumsError(
                f"{fname}: argnums {a} is out of range: the function was called with "
                f"{len(args)} positional argument(s), so argnums must be in "
                f"[{-len(args)}, {len(args) - 1}]")
        args[a], spec = _trace_arg(tape, args[a], fname, a, private)
        specs.append(spec)
    return args, specs


def _leaf_cotangent(c, leaf, scalar):
    """The cotangent of one input leaf in the form the user gets it: the
    input's own kind (a NumPy scalar for a Python or NumPy scalar input, an
    array for an array input, 0-d included) and dtype, whatever ``f`` did."""
    if isinstance(c, Structural):
        if not _is_inexact(leaf):
            return NOTANGENT
        c = zeros_like_value(untraced(leaf))
    tc = type(c)
    if tc is np.ndarray:
        if scalar:
            return c[()]
        if not c.flags.writeable:
            # a broadcast view (the cotangent of a sum): the caller gets an
            # ordinary array it can write to
            c = c.copy()
    elif isinstance(c, np.generic) and not scalar:
        c = np.asarray(c)
    elif tc is not Traced and hasattr(c, "rechunk"):
        # a chunked lazy array (dask): the gradient keeps its input's chunks
        # (the broadcast cotangent of a reduction is a single chunk otherwise)
        chunks = getattr(leaf, "chunks", None)
        if chunks is not None and c.chunks != chunks:
            c = c.rechunk(chunks)
    return c


def _collect(spec, grads, users=()):
    """The input cotangents as a tree like the input. ``users``: arrays the
    caller passed in (seeds, tangents); a result that shares memory with one
    of them is copied, so the caller never gets an alias of its own array."""
    out = []
    for leaf, nid, scalar in zip(spec.leaves, spec.ids, spec.scalar):
        if nid is None:
            out.append(NOTANGENT)
        else:
            out.append(_fresh(_leaf_cotangent(grads.get(nid), leaf, scalar), users))
    return pytree.unflatten(spec.treedef, out)


def _fresh(v, users):
    """``v``, copied when it shares memory with one of the ``users`` arrays."""
    if users and type(v) is np.ndarray:
        for u in users:
            if type(u) is np.ndarray and np.may_share_memory(v, u):
                return v.copy()
    return v


def _user_arrays(*trees):
    out = []
    for t in trees:
        out.extend(leaf for leaf in pytree.flatten(t)[0] if type(leaf) is np.ndarray)
    return out


def _unwrap_level(tree, tape):
    """Remove this tape's tracing from every leaf of ``tree``."""
    def strip(v):
        if type(v) is Traced and v.tape is tape:
            return v.value
        return v
    if type(tree) is Traced:
        return strip(tree)
    return pytree.tree_map(strip, tree)


def _normalize_argnums(argnums):
    if isinstance(argnums, numbers.Integral):
        return (int(argnums),), True
    return tuple(int(a) for a in argnums), False


def _scalar_output(out, tape, fname, holomorphic=False):
    shape = getattr(out, "shape", None)
    if shape is None:
        if isinstance(out, (int, float, complex, np.generic)):
            shape = ()
        else:
            raise NonScalarOutputError(
                f"grad of {fname}: the function returned {type(out).__name__}, not a "
                "scalar; return a single number (use has_aux=True to return more)")
    if shape != () and any(d != 1 for d in shape):
        # one element (shape (1,), (1, 1)) is accepted, as in autograd and
        # PyTorch: the gradient of that element
        raise NonScalarOutputError(
            f"grad of {fname}: the output has shape {shape}; grad needs a scalar "
            "(or one-element) output. Reduce it (np.sum), or use chainrules.vjp / "
            "chainrules.jacobian for vector outputs.")
    dtype = getattr(out, "dtype", None)
    if dtype is None:
        dtype = np.result_type(out)
    if holomorphic:
        return np.dtype(np.complex128) if dtype.kind != "c" else dtype
    if dtype.kind == "c":
        raise ComplexOutputError(
            f"grad of {fname}: the output is complex ({dtype}); differentiate a real "
            "quantity (np.real, np.abs), pass holomorphic=True for a complex "
            "derivative of a holomorphic function, or use chainrules.vjp")
    return dtype


def value_and_grad(f, argnums=0, has_aux=False, holomorphic=False):
    """Return a function computing ``(f(*args), gradient)``.

    The gradient has the structure of ``args[argnums]`` (a tuple of them when
    ``argnums`` is a tuple). With ``has_aux=True``, ``f`` returns
    ``(value, aux)`` and the result is ``((value, aux), gradient)``.
    With ``holomorphic=True``, ``f`` maps complex inputs to a complex scalar
    and the result is the complex derivative ``f'(z)``; the inputs must be
    complex.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> v, g = cr.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    >>> float(v), g
    (5.0, array([2., 4.]))
    """
    nums, single = _normalize_argnums(argnums)
    fname = _fname(f)

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        tape = Tape()
        try:
            if holomorphic:
                for a in nums:
                    for leaf in pytree.flatten(args[a])[0]:
                        if np.result_type(untraced(leaf)).kind != "c":
                            raise NonDifferentiableInputError(
                                f"{fname}: holomorphic=True needs complex inputs, got "
                                f"{np.result_type(untraced(leaf))}; cast with "
                                "x.astype(complex)")
            targs, specs = _trace_args(tape, args, nums, fname)
            out = f(*targs, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise TypeError(f"{fname} was declared has_aux=True and must "
                                    "return a pair (value, aux)")
                out, aux = out
            dtype = _scalar_output(out, tape, fname, holomorphic)
        finally:
            tape.active = False
        if type(out) is Traced and out.tape is tape:
            grads = tape.backward([out.node], [ones_like_value(untraced(out), dtype)])
        else:
            grads = _EMPTY
        tape.free()
        g = tuple(_collect(s, grads) for s in specs)
        value = _unwrap_level(out, tape)
        if type(value) is np.ndarray:  # f may return (a view of) its input
            value = _fresh(value, _user_arrays(args))
        if has_aux:
            value = (value, _unwrap_level(aux, tape))
        return value, (g[0] if single else g)

    return value_and_grad_f


class _Empty:
    def get(self, node, default=ZERO):
        return default


_EMPTY = _Empty()


def grad(f, argnums=0, has_aux=False, holomorphic=False):
    """Return a function computing the gradient of scalar-valued ``f``.

    >>> import numpy as np, chainrules as cr
    >>> float(cr.grad(lambda x: np.sin(x) * x)(0.0))
    0.0
    """
    vg = value_and_grad(f, argnums, has_aux, holomorphic)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return grad_f


def _out_leaves(out, tape):
    leaves, td = pytree.flatten(out)
    return leaves, td


def vjp(f, *primals, has_aux=False):
    """``out, f_vjp = vjp(f, *primals)``; ``f_vjp(cotangent)`` returns a tuple
    with one cotangent per primal. ``f_vjp`` may be called many times.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> out, f_vjp = cr.vjp(np.sin, np.array([0.0, np.pi]))
    >>> np.round(f_vjp(np.ones(2))[0], 6)
    array([ 1., -1.])
    """
    fname = _fname(f)
    tape = Tape()
    try:
        # the recording outlives this call (f_vjp): it keeps private copies of
        # the inputs, so the caller may mutate its arrays afterwards
        targs, specs = _trace_args(tape, primals, range(len(primals)), fname,
                                   private=True)
        out = f(*targs)
        aux = None
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{fname} was declared has_aux=True and must "
                                "return a pair (value, aux)")
            out, aux = out
    finally:
        tape.active = False
    leaves, td = pytree.flatten(out)
    value = pytree.unflatten(td, [_unwrap_level(v, tape) for v in leaves])

    def f_vjp(cotangent):
        cleaves = _check_tangent(cotangent, out, fname, "cotangent", "output", "vjp")
        nodes, seeds = [], []
        for o, c in zip(leaves, cleaves):
            if type(o) is Traced and o.tape is tape and not isinstance(c, Structural):
                nodes.append(o.node)
                seeds.append(c)
        grads = tape.backward(nodes, seeds, retain_graph=True) if nodes else _EMPTY
        users = _user_arrays(cotangent)
        return tuple(_collect(s, grads, users) for s in specs)

    if has_aux:
        return value, f_vjp, _unwrap_level(aux, tape)
    return value, f_vjp


def _value_dtype(v):
    v = untraced(v)
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return dt
    if isinstance(v, bool):
        return np.dtype(bool)
    if isinstance(v, (int, float, complex)):
        return np.result_type(v)
    return None


def _check_tangent(t, p, fname, what="tangent", of="primal", entry="jvp"):
    """The leaves of tangent tree ``t`` for primal tree ``p``, checked and
    converted: the same structure and shapes, a dtype that can belong to the
    primal (a complex tangent for a real primal raises ``TangentShapeError``:
    dropping its imaginary part would be a silently wrong answer), cast to the
    primal's dtype (Python floats, NumPy scalars and float32 tangents of
    float64 primals included)."""
    pl, ptd = pytree.flatten(p)
    tl, ttd = pytree.flatten(t)
    if ptd != ttd:
        raise TangentShapeError(f"{entry} of {fname}: {what} structure {ttd} does not "
                                f"match {of} structure {ptd}")
    out = []
    for a, b in zip(pl, tl):
        if b is None or isinstance(b, Structural):
            out.append(ZERO if b is None else b)
            continue
        if shape_of(a) != shape_of(b):
            raise TangentShapeError(f"{entry} of {fname}: {what} of shape {shape_of(b)} "
                                    f"for a{'n' if of[0] in 'aeiou' else ''} {of} of "
                                    f"shape {shape_of(a)}")
        pdt = _value_dtype(a)
        if pdt is None or pdt.kind not in "fc":
            out.append(b)  # an integer or constant leaf: its tangent is ignored
            continue
        tdt = _value_dtype(b)
        if tdt is None or tdt.kind not in "biufc":
            raise TangentShapeError(f"{entry} of {fname}: a {what} of type "
                                    f"{type(b).__name__} for a{'n' if of[0] in 'aeiou' else ''}"
                                    f" {of} of dtype {pdt}; pass a number or an array")
        if tdt.kind == "c" and pdt.kind != "c":
            raise TangentShapeError(
                f"{entry} of {fname}: a complex {what} ({tdt}) for a real {of} ({pdt}); "
                f"a {what} has the primal's kind. Split a complex direction into its "
                "real and imaginary parts and apply them separately")
        if type(b) is Traced or (type(b) is np.ndarray and tdt == pdt):
            pass
        elif type(b) is not np.ndarray and is_array(b):  # dask and other array types
            b = b if tdt == pdt else b.astype(pdt)
        else:
            b = np.asarray(b, dtype=pdt)
        out.append(b)
    return out


def jvp(f, primals, tangents):
    """Forward mode: ``(f(*primals), J @ tangents)``.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> out, t = cr.jvp(np.exp, (np.array([0.0, 1.0]),), (np.array([1.0, 0.5]),))
    >>> np.round(t, 6)
    array([1.      , 1.359141])
    """
    fname = _fname(f)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TangentShapeError(f"jvp of {fname}: {len(primals)} primals but "
                                f"{len(tangents)} tangents")
    tape = Tape()
    try:
        targs, specs = _trace_args(tape, primals, range(len(primals)), fname)
        out = f(*targs)
    finally:
        tape.active = False
    seeds = {}
    for spec, p, t in zip(specs, primals, tangents):
        tl = _check_tangent(t, p, fname)
        for nid, tv in zip(spec.ids, tl):
            if nid is not None and not isinstance(tv, Structural):
                seeds[nid] = tv
    tans = tape.forward(seeds)
    leaves, td = pytree.flatten(out)
    users = _user_arrays(primals, tangents)
    outs, touts = [], []
    for o in leaves:
        if type(o) is Traced and o.tape is tape:
            t = tans[o.node]
            v = o.value
            if t is None:
                t = zeros_like_value(untraced(v))
            outs.append(_fresh(v, users))
            touts.append(_like_output(_fresh(t, users), v))
        else:
            outs.append(_fresh(o, users))
            touts.append(_zero_like_value(o))
    tape.free()
    return pytree.unflatten(td, outs), pytree.unflatten(td, touts)


def _like_output(t, v):
    """A tangent in the output's own kind: a NumPy scalar for a NumPy scalar
    output, an array for an array output (0-d included)."""
    if type(t) is np.ndarray:
        if t.ndim == 0 and isinstance(v, np.generic):
            return t[()]
    elif isinstance(t, np.generic) and type(v) is np.ndarray:
        return np.asarray(t)
    return t


def _zero_like_value(o):
    v = untraced(o)
    if _is_inexact(v):
        z = zeros_like_value(v)
        return z[()] if not is_array(v) else z
    return NOTANGENT


def _hvp_fast(f, x, v, fname, want_grad=True):
    tape = Tape()
    try:
        (tx,), (spec,) = _trace_args(tape, (x,), (0,), fname)
        out = f(tx)
        dtype = _scalar_output(out, tape, fname)
    finally:
        tape.active = False
    if not (type(out) is Traced and out.tape is tape):
        _check_tangent(v, x, fname, entry="hvp")
        return _collect(spec, _EMPTY), _collect(spec, _EMPTY)
    seeds = {}
    for nid, tv in zip(spec.ids, _check_tangent(v, x, fname, entry="hvp")):
        if nid is not None and not isinstance(tv, Structural):
            seeds[nid] = tv
    tans = tape.forward(seeds, needed=tape.tangent_demand([out.node]))
    g, hv = tape.backward_with_tangents([out.node], [ones_like_value(untraced(out), dtype)],
                                        [ZERO], tans,
                                        retain_graph=False, leaf_cotangents=want_grad)
    tape.free()
    users = _user_arrays(x, v)
    return _collect(spec, g, users), _collect(spec, hv, users)


def grad_and_hvp(f, x, v, _want_grad=True):
    """``(gradient of f at x, Hessian of f at x times v)`` from one
    forward-over-reverse sweep.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> g, hv = cr.grad_and_hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.ones(2))
    >>> g, hv
    (array([ 3., 12.]), array([ 6., 12.]))
    """
    fname = _fname(f)
    try:
        return _hvp_fast(f, x, v, fname, _want_grad)
    except HvpNotSupported:
        # some rule has no hand-written pullback_with_tangents: differentiate
        # the pullbacks themselves (forward mode over the reverse sweep)
        g, hv = jvp(grad(f), (x,), (v,))
        return g, hv


def hvp(f, x, v):
    """The Hessian of scalar ``f`` at ``x`` applied to ``v``
    (forward-over-reverse).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> cr.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    return grad_and_hvp(f, x, v, _want_grad=False)[1]
