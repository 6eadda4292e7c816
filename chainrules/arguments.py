"""How the entry points take arguments and give back results.

Tracing a differentiated argument (a pytree of arrays and scalars) onto a
tape as leaf nodes (``trace_args``, ``ArgSpec``), private copies for
recordings that outlive the call, the scalar-output check of ``grad``,
checking and converting tangents (``check_tangent``), and returning
cotangents and tangents in the kind of the input or output they belong to
(a NumPy scalar for a scalar, an array for an array, never an alias of an
array the caller passed in). Shared by ``chainrules.api`` and
``chainrules.jacobians``.
"""

import numbers

import numpy as np

from . import pytree
from .arrays import is_array, ones_like_value, shape_of, zeros_like_value
from .guards import is_plain_subclass, refuse_subclass
from .errors import (ComplexOutputError, NonDifferentiableInputError, NonScalarOutputError,
                     TangentShapeError)
from .tangents import NOTANGENT, ZERO, Structural
from .staging import Staged
from .copies import private_copy
from .tracing import Traced, snapshot, untraced


def function_name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def is_inexact(v):
    if isinstance(v, Traced):
        return True
    if isinstance(v, np.ndarray) or isinstance(v, np.generic) or is_array(v):
        return v.dtype.kind in "fc"
    return isinstance(v, (float, complex)) and not isinstance(v, bool)


def as_primal(v):
    if isinstance(v, (np.ndarray, np.generic, Traced)):
        return v
    if isinstance(v, float):
        return np.float64(v)
    if isinstance(v, complex):
        return np.complex128(v)
    return v


class ArgSpec:
    """How the differentiated argument was traced: its tree and leaf nodes."""

    __slots__ = ("treedef", "leaves", "ids", "scalar")

    def __init__(self, treedef, leaves, ids, scalar):
        self.treedef = treedef
        self.leaves = leaves
        self.ids = ids
        self.scalar = scalar


def plain_leaf(leaf, where):
    """An input leaf as chainrules computes with it: an ndarray subclass that
    is an ndarray in all but name (``np.memmap``) as a plain ndarray view;
    any other subclass refused (``NonDifferentiableInputError``)."""
    t = type(leaf)
    if t is np.ndarray or not isinstance(leaf, np.ndarray):
        return leaf
    if is_plain_subclass(t):
        return leaf.view(np.ndarray)
    refuse_subclass(t, where)


#: NumPy scalar types of an inexact dtype: an argument of one of them is
#: one leaf, taken as it is (``trace_arg``'s fast path)
_INEXACT_SCALARS = frozenset(t for t in (np.float16, np.float32, np.float64, np.longdouble,
                                         np.complex64, np.complex128, np.clongdouble))
_LEAF = pytree.LEAF
_new = object.__new__


def _one_leaf(tape, leaf, v, scalar):
    """``trace_arg`` of an argument that is one inexact leaf: ``leaf`` as the
    caller passed it (or its private copy), ``v`` its primal value."""
    nid = tape.leaf(v)
    t = _new(Traced)
    t.value = v
    t.node = nid
    t.tape = tape
    spec = _new(ArgSpec)
    spec.treedef = _LEAF
    spec.leaves = [leaf]
    spec.ids = [nid]
    spec.scalar = [scalar]
    return t, spec


def trace_arg(tape, arg, fname, argnum, private=False):
    """``arg`` traced onto ``tape`` as leaf nodes, and its ``ArgSpec``."""
    ta = type(arg)
    # the common arguments, one inexact array or scalar, without a pytree
    # walk; the same result as the general path below
    if ta is np.ndarray:
        if arg.dtype.kind in "fc":
            if private:
                arg = arg.copy()
            return _one_leaf(tape, arg, arg, False)
    elif ta is float:
        return _one_leaf(tape, arg, np.float64(arg), True)
    elif ta in _INEXACT_SCALARS:
        return _one_leaf(tape, arg, arg, True)
    elif ta is complex:
        return _one_leaf(tape, arg, np.complex128(arg), True)
    leaves, td = pytree.flatten(arg)
    leaves = [plain_leaf(leaf, f"{fname}: argument {argnum}") for leaf in leaves]
    if private:
        leaves = [private_copy(leaf) for leaf in leaves]
    if td is pytree.LEAF and not is_inexact(arg):
        module = (type(arg).__module__ or "").split(".")[0]
        if module in ("pandas", "xarray", "polars"):
            raise NonDifferentiableInputError(
                f"{fname}: argument {argnum} is a {module} {type(arg).__name__}; "
                "chainrules differentiates NumPy arrays: pass its values, "
                f"x.to_numpy(), and rebuild the {type(arg).__name__} from the result "
                "if you need one")
        raise NonDifferentiableInputError(
            f"{fname}: argument {argnum} has type {type(arg).__name__}"
            + (f" and dtype {arg.dtype}" if hasattr(arg, "dtype") else "")
            + "; only float and complex values can be differentiated. Pass a float "
              "(for example x.astype(float) or 3.0 instead of 3), or leave the "
              "argument out of argnums.")
    traced, ids, scal = [], [], []
    for leaf in leaves:
        if is_inexact(leaf):
            v = as_primal(leaf)
            if type(v) is Traced:
                # a value of an enclosing differentiation: the recording holds
                # what it is now, whatever a later write rebinds the object to
                v = snapshot(v)
            nid = tape.leaf(v)
            traced.append(Traced(v, nid, tape))
            ids.append(nid)
        else:
            traced.append(leaf)
            ids.append(None)
        # (a staged leaf, cr.jit's, is what its value is)
        scal.append(type(leaf.value) is not np.ndarray if type(leaf) is Staged else
                    not (isinstance(leaf, Traced) or is_array(leaf)))
    return pytree.unflatten(td, traced), ArgSpec(td, leaves, ids, scal)


class ArgnumsError(ValueError, IndexError):
    """``argnums`` names an argument the function was not called with."""


def trace_args(tape, args, argnums, fname, private=False):
    args = list(args)
    specs = []
    for a in argnums:
        if a >= len(args) or a < -len(args):
            raise ArgnumsError(
                f"{fname}: argnums {a} is out of range: the function was called with "
                f"{len(args)} positional argument(s), so argnums must be in "
                f"[{-len(args)}, {len(args) - 1}]")
        args[a], spec = trace_arg(tape, args[a], fname, a, private)
        specs.append(spec)
    return args, specs


def leaf_cotangent(c, leaf, scalar):
    """The cotangent of one input leaf in the form the user gets it: the
    input's own kind (a NumPy scalar for a Python or NumPy scalar input, an
    array for an array input, 0-d included) and dtype, whatever ``f`` did."""
    tc = type(c)
    if tc is not np.ndarray and isinstance(c, Structural):
        if not is_inexact(leaf):
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
    elif tc is Staged:
        # a staged value (cr.jit) takes the same form, by recorded calls
        v = c.value
        if scalar and type(v) is np.ndarray:
            return c[()]
        if not scalar and isinstance(v, np.generic):
            c = np.copy(c)  # (a 0-d array: np.reshape keeps a scalar)
    elif tc is not Traced and hasattr(c, "rechunk"):
        # a chunked lazy array (dask): the gradient keeps its input's chunks
        # (the broadcast cotangent of a reduction is a single chunk otherwise)
        chunks = getattr(leaf, "chunks", None)
        if chunks is not None and c.chunks != chunks:
            c = c.rechunk(chunks)
    return c


def collect_cotangents(spec, grads, users=()):
    """The input cotangents as a tree like the input. ``users``: arrays the
    caller passed in (seeds, tangents); a result that shares memory with one
    of them is copied, so the caller never gets an alias of its own array."""
    if spec.treedef is _LEAF:  # one leaf: no tree to rebuild
        nid = spec.ids[0]
        if nid is None:
            return NOTANGENT
        c = leaf_cotangent(grads.get(nid), spec.leaves[0], spec.scalar[0])
        return unaliased(c, users) if users else c
    out = []
    for leaf, nid, scalar in zip(spec.leaves, spec.ids, spec.scalar):
        if nid is None:
            out.append(NOTANGENT)
        else:
            out.append(unaliased(leaf_cotangent(grads.get(nid), leaf, scalar), users))
    return pytree.unflatten(spec.treedef, out)


def collect_cotangent_batches(spec, grads, k, users=()):
    """``collect_cotangents`` of a batched sweep: every leaf's cotangents
    with a leading axis of ``k`` directions (zeros where structurally
    zero)."""
    out = []
    for leaf, nid in zip(spec.leaves, spec.ids):
        if nid is None:
            out.append(NOTANGENT)
            continue
        v = grads.get(nid)
        if isinstance(v, Structural):
            v = np.zeros((k,) + tuple(shape_of(leaf)), value_dtype(leaf))
        out.append(unaliased(v, users))
    return pytree.unflatten(spec.treedef, out)


#: ``np.may_share_memory`` of two ndarrays, without NumPy's dispatch through
#: ``__array_function__`` (which plain ndarrays never override)
_may_share_memory = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def unaliased(v, users):
    """``v``, copied when it shares memory with one of the ``users`` arrays."""
    if users and type(v) is np.ndarray:
        for u in users:
            if type(u) is np.ndarray and _may_share_memory(v, u):
                return v.copy()
    return v


def user_arrays(*trees):
    out = []
    for t in trees:
        if type(t) is np.ndarray:  # a leaf
            out.append(t)
            continue
        out.extend(leaf for leaf in pytree.flatten(t)[0] if type(leaf) is np.ndarray)
    return out


def unwrap_level(tree, tape):
    """Remove this tape's tracing from every leaf of ``tree``."""
    def strip(v):
        if type(v) is Traced and v.tape is tape:
            return v.value
        return v
    if type(tree) is Traced:
        return strip(tree)
    return pytree.tree_map(strip, tree)


def normalize_argnums(argnums):
    if isinstance(argnums, numbers.Integral):
        return (int(argnums),), True
    return tuple(int(a) for a in argnums), False


def scalar_output_dtype(out, tape, fname, holomorphic=False):
    """The dtype of ``grad``'s seed for the output ``out`` of ``f`` (the
    output's own; complex with ``holomorphic``), or a typed error for an
    output that is not a real scalar."""
    if type(out) is Traced and not holomorphic:
        v = out.value
        if type(v) in _INEXACT_SCALARS and v.dtype.kind == "f":  # the common output
            return v.dtype
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


#: dtype -> the seed of a scalar output of that dtype, a read-only 0-d array
#: of one (the sweeps never write into a seed, nor rules into a cotangent;
#: ``leaf_cotangent`` copies a read-only cotangent before a user gets it)
_SEEDS: dict = {}


def gradient_seed(v, dtype):
    """The seed of a gradient for the output value ``v`` (untraced):
    ``ones_like_value(v, dtype)``; for a NumPy scalar or 0-d array output,
    one read-only 0-d array per dtype, made once."""
    tv = type(v)
    if tv in _INEXACT_SCALARS or tv is np.ndarray and v.shape == ():
        seed = _SEEDS.get(dtype)
        if seed is None:
            seed = np.array(1, dtype)
            seed.flags.writeable = False
            _SEEDS[dtype] = seed
        return seed
    return ones_like_value(v, dtype)


class NoGradients:
    def get(self, node, default=ZERO):
        return default


NO_GRADIENTS = NoGradients()


def value_dtype(v):
    v = untraced(v)
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return dt
    if isinstance(v, bool):
        return np.dtype(bool)
    if isinstance(v, (int, float, complex)):
        return np.result_type(v)
    return None


def check_tangent(t, p, fname, what="tangent", of="primal", entry="jvp", batch=False):
    """The leaves of tangent tree ``t`` for primal tree ``p``, checked and
    converted: the same structure and shapes, a dtype that can belong to the
    primal (a complex tangent for a real primal raises ``TangentShapeError``:
    dropping its imaginary part would be a silently wrong answer), cast to the
    primal's dtype (Python floats, NumPy scalars and float32 tangents of
    float64 primals included). ``batch``: every leaf of ``t`` is a batch of
    directions, one leading axis (of one length throughout) before the
    primal's shape; returns ``(leaves, number of directions or None)``."""
    if type(t) is np.ndarray and type(p) is np.ndarray and not batch:
        # the common pair, arrays of one shape and inexact dtype: as they are
        if t.shape == p.shape and t.dtype == p.dtype and p.dtype.kind in "fc":
            return [t]
    pl, ptd = pytree.flatten(p)
    tl, ttd = pytree.flatten(t)
    if ptd != ttd:
        raise TangentShapeError(f"{entry} of {fname}: {what} structure {ttd} does not "
                                f"match {of} structure {ptd}")
    out = []
    k = None
    for a, b in zip(pl, tl):
        if b is None or isinstance(b, Structural):
            out.append(ZERO if b is None else b)
            continue
        if batch:
            bs = shape_of(b)
            if len(bs) != len(shape_of(a)) + 1 or bs[1:] != shape_of(a) or (
                    k is not None and bs[0] != k):
                raise TangentShapeError(
                    f"{entry} of {fname}: a batch of {what}s of shape {bs} for a"
                    f"{'n' if of[0] in 'aeiou' else ''} {of} of shape {shape_of(a)}; a batch "
                    f"has one leading axis of directions (of one length for every "
                    f"leaf), then the {of}'s shape")
            k = bs[0]
        elif shape_of(a) != shape_of(b):
            raise TangentShapeError(f"{entry} of {fname}: {what} of shape {shape_of(b)} "
                                    f"for a{'n' if of[0] in 'aeiou' else ''} {of} of "
                                    f"shape {shape_of(a)}")
        pdt = value_dtype(a)
        if pdt is None or pdt.kind not in "fc":
            out.append(b)  # an integer or constant leaf: its tangent is ignored
            continue
        tdt = value_dtype(b)
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
    return (out, k) if batch else out


def like_output(t, v):
    """A tangent in the output's own kind: a NumPy scalar for a NumPy scalar
    output, an array for an array output (0-d included)."""
    if type(t) is np.ndarray:
        if t.ndim == 0 and isinstance(v, np.generic):
            return t[()]
    elif isinstance(t, np.generic) and type(v) is np.ndarray:
        return np.asarray(t)
    return t


def zero_like_value(o):
    v = untraced(o)
    if is_inexact(v):
        z = zeros_like_value(v)
        return z[()] if not is_array(v) else z
    return NOTANGENT
