"""The public differentiation API: grad, value_and_grad, vjp, jvp, hvp.

Every function here traces the user's function once on a fresh ``Tape``,
then runs one sweep of the engine. Arguments and outputs may be pytrees
(tuples, lists, dicts, dataclasses) of arrays and scalars.
"""

import functools
import numbers

import numpy as np

from . import pytree
from .arrays import shape_of
from .errors import (ComplexOutputError, HvpNotSupported, NonDifferentiableInputError,
                     NonScalarOutputError, TangentShapeError)
from .graph import Tape
from .tangents import NOTANGENT, ZERO, _Structural
from .tracing import Traced, stop_gradient

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "grad_and_hvp",
           "stop_gradient"]


def _fname(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def _is_inexact(v):
    if isinstance(v, Traced):
        return True
    if isinstance(v, np.ndarray) or isinstance(v, np.generic):
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


def _trace_arg(tape, arg, fname, argnum):
    leaves, td = pytree.flatten(arg)
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
        scal.append(not isinstance(leaf, (np.ndarray, Traced)))
    return pytree.unflatten(td, traced), _Spec(td, leaves, ids, scal)


def _trace_args(tape, args, argnums, fname):
    args = list(args)
    specs = []
    for a in argnums:
        if a >= len(args) or a < -len(args):
            raise IndexError(f"{fname}: argnums {a} out of range for {len(args)} arguments")
        args[a], spec = _trace_arg(tape, args[a], fname, a)
        specs.append(spec)
    return args, specs


def _leaf_cotangent(c, leaf, scalar):
    if isinstance(c, _Structural):
        if not _is_inexact(leaf):
            return NOTANGENT
        v = np.asarray(stop_gradient(leaf))
        c = np.zeros(v.shape, v.dtype)
    if type(c) is np.ndarray:
        if scalar:
            return c[()]
        if not c.flags.writeable:
            # a broadcast view (the cotangent of a sum): the caller gets an
            # ordinary array it can write to
            c = c.copy()
    return c


def _collect(spec, grads):
    out = []
    for leaf, nid, scalar in zip(spec.leaves, spec.ids, spec.scalar):
        if nid is None:
            out.append(NOTANGENT)
        else:
            out.append(_leaf_cotangent(grads.get(nid), leaf, scalar))
    return pytree.unflatten(spec.treedef, out)


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
    if shape != ():
        raise NonScalarOutputError(
            f"grad of {fname}: the output has shape {shape}, not (); grad needs a "
            "scalar output. Reduce it (np.sum), or use chainrules.vjp / "
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
                        if np.result_type(stop_gradient(leaf)).kind != "c":
                            raise NonDifferentiableInputError(
                                f"{fname}: holomorphic=True needs complex inputs, got "
                                f"{np.result_type(stop_gradient(leaf))}; cast with "
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
            grads = tape.backward([out.node], [np.ones((), dtype)])
        else:
            grads = _EMPTY
        tape.free()
        g = tuple(_collect(s, grads) for s in specs)
        value = _unwrap_level(out, tape)
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
    with one cotangent per primal. ``f_vjp`` may be called many times."""
    fname = _fname(f)
    tape = Tape()
    try:
        targs, specs = _trace_args(tape, primals, range(len(primals)), fname)
        out = f(*targs)
        aux = None
        if has_aux:
            out, aux = out
    finally:
        tape.active = False
    leaves, td = pytree.flatten(out)
    value = pytree.unflatten(td, [_unwrap_level(v, tape) for v in leaves])

    def f_vjp(cotangent):
        cleaves, ctd = pytree.flatten(cotangent)
        if ctd != td:
            raise TangentShapeError(
                f"vjp of {fname}: the cotangent's structure {ctd} does not match the "
                f"output's {td}")
        nodes, seeds = [], []
        for o, c in zip(leaves, cleaves):
            if shape_of(c) != shape_of(o):
                raise TangentShapeError(
                    f"vjp of {fname}: cotangent of shape {shape_of(c)} for an output "
                    f"of shape {shape_of(o)}")
            if type(o) is Traced and o.tape is tape:
                nodes.append(o.node)
                seeds.append(c)
        grads = tape.backward(nodes, seeds, retain_graph=True) if nodes else _EMPTY
        return tuple(_collect(s, grads) for s in specs)

    if has_aux:
        return value, f_vjp, _unwrap_level(aux, tape)
    return value, f_vjp


def _check_tangent(t, p, fname):
    pl, ptd = pytree.flatten(p)
    tl, ttd = pytree.flatten(t)
    if ptd != ttd:
        raise TangentShapeError(f"jvp of {fname}: tangent structure {ttd} does not "
                                f"match primal structure {ptd}")
    for a, b in zip(pl, tl):
        if isinstance(b, _Structural):
            continue
        if shape_of(a) != shape_of(b):
            raise TangentShapeError(f"jvp of {fname}: tangent of shape {shape_of(b)} "
                                    f"for a primal of shape {shape_of(a)}")
    return tl


def jvp(f, primals, tangents):
    """Forward mode: ``(f(*primals), J @ tangents)``."""
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
            if nid is not None and not isinstance(tv, _Structural):
                seeds[nid] = tv
    tans = tape.forward(seeds)
    leaves, td = pytree.flatten(out)
    outs, touts = [], []
    for o in leaves:
        if type(o) is Traced and o.tape is tape:
            t = tans[o.node]
            v = o.value
            if t is None:
                t = np.zeros(shape_of(v), stop_gradient(v).dtype)
            outs.append(v)
            touts.append(t)
        else:
            outs.append(o)
            touts.append(_zero_like_value(o))
    tape.free()
    return pytree.unflatten(td, outs), pytree.unflatten(td, touts)


def _zero_like_value(o):
    v = stop_gradient(o)
    if _is_inexact(v):
        return np.zeros(np.shape(v), np.result_type(v))
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
        zeros = _collect(spec, _EMPTY)
        return zeros, zeros
    seeds = {}
    for nid, tv in zip(spec.ids, _check_tangent(v, x, fname)):
        if nid is not None and not isinstance(tv, _Structural):
            seeds[nid] = tv
    tans = tape.forward(seeds, needed=tape.tangent_demand([out.node]))
    g, hv = tape.backward_with_tangents([out.node], [np.ones((), dtype)], [ZERO], tans,
                                        retain_graph=False, leaf_cotangents=want_grad)
    tape.free()
    return _collect(spec, g), _collect(spec, hv)


def grad_and_hvp(f, x, v, _want_grad=True):
    """``(gradient of f at x, Hessian of f at x times v)`` from one
    forward-over-reverse sweep."""
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
    (forward-over-reverse)."""
    return grad_and_hvp(f, x, v, _want_grad=False)[1]
