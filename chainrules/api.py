"""The public differentiation API: grad, value_and_grad, vjp, jvp, hvp.

Every function here traces the user's function once on a fresh ``Tape``,
then runs one sweep of the engine. Arguments and outputs may be pytrees
(tuples, lists, dicts, dataclasses) of arrays and scalars.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable, Literal, ParamSpec, Protocol, Sequence, TypeVar, overload

import numpy as np

from . import pytree
from .transformed import Transformed
from . import fp_warnings
from .arguments import (_INEXACT_SCALARS, _SEEDS, NO_GRADIENTS, _may_share_memory,
                        check_tangent, collect_cotangent_batches, collect_cotangents,
                        function_name, gradient_seed, leaf_cotangent, like_output,
                        normalize_argnums, scalar_output_dtype, trace_arg, trace_args,
                        unaliased, unwrap_level, user_arrays, zero_like_value)
from .arrays import ones_like_value, zeros_like_value
from .errors import NonDifferentiableInputError, TangentShapeError
from .fp_warnings import at_user_line
from .fused_sweeps import fuse
from .graph import _NO_REPLAYS, Tape
from .rule import node_ids
from .tangents import ZERO, Structural
from .copies import stop_gradient
from .staging import Staged
from .tracing import Traced, untraced

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "grad_and_hvp",
           "stop_gradient", "VjpFunction"]

P = ParamSpec("P")
R = TypeVar("R")

# NumPy's ufuncs are typed with overloads (scalar first, then arrays); a type
# checker that gives a ParamSpec the first overload only (mypy) would reject
# ``grad(np.sin)(x)`` for an array ``x``, so a ufunc keeps no signature here.


class VjpFunction(Protocol):
    """The ``f_vjp`` that ``vjp`` returns: ``f_vjp(cotangent)`` gives one
    cotangent per primal; ``f_vjp.many(cotangents)`` a batch of them."""

    def __call__(self, cotangent: Any, /) -> tuple[Any, ...]: ...

    def many(self, cotangents: Any, /) -> tuple[Any, ...]: ...


@overload
def value_and_grad(f: np.ufunc, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable[..., tuple[Any, Any]]: ...


@overload
def value_and_grad(f: Callable[P, R], argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable[P, tuple[R, Any]]: ...


def value_and_grad(f: Callable[P, R], argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable[P, tuple[R, Any]]:
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
    return Transformed(_value_and_grad_call(f, argnums, has_aux, holomorphic),
                       value_and_grad, f, (),
                       dict(argnums=argnums, has_aux=has_aux, holomorphic=holomorphic),
                       redirects=_REDIRECTS)


def _check_holomorphic(args, nums, fname):
    """Refuse a real input of a holomorphic derivative."""
    for a in nums:
        for leaf in pytree.flatten(args[a])[0]:
            if np.result_type(untraced(leaf)).kind != "c":
                raise NonDifferentiableInputError(
                    f"{fname}: holomorphic=True needs complex inputs, got "
                    f"{np.result_type(untraced(leaf))}; cast with x.astype(complex)")


def _split_aux(out, fname):
    """``(value, aux)`` of the output of a function declared ``has_aux``."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{fname} was declared has_aux=True and must "
                        "return a pair (value, aux)")
    return out[0], out[1]


#: NumPy's settings of floating-point errors (a context variable), which a
#: gradient call redirects itself, in its own frame, as ``at_user_line`` does
#: (``fp_warnings``). A NumPy without that variable (before 2.0): the call is
#: wrapped by ``at_user_line`` instead, and an unset variable stands for it
_REDIRECTS = fp_warnings._SETTINGS is not None
_FP = fp_warnings._SETTINGS if _REDIRECTS else contextvars.ContextVar("chainrules_unused",
                                                                      default=None)
#: at_user_line's switch: the settings met last time and their redirected form
_SWITCH = fp_warnings._AT_USER_LINE
#: NumPy scalar types of a real floating dtype: a scalar output of one of them
#: has its own dtype as the seed's (``scalar_output_dtype``'s common output)
_REAL_SCALARS = frozenset((np.float16, np.float32, np.float64, np.longdouble))
_new = object.__new__
_ndarray = np.ndarray
_NODE0 = node_ids(0)


def _value_and_grad_call(f, argnums, has_aux, holomorphic, with_value=True):
    """The function ``value_and_grad`` returns, before ``Transformed`` wraps
    it; ``with_value=False``: the one ``grad`` returns (the gradient, with
    ``aux`` after it with ``has_aux``). It redirects NumPy's floating-point
    warnings itself (what ``at_user_line`` does; ``Transformed`` is told
    so)."""
    nums, single = normalize_argnums(argnums)
    fname = function_name(f)
    # the common call: one argument, differentiated (f(x))
    first_only = single and nums[0] in (0, -1) and not holomorphic

    def general(args, kwargs):
        """A call that the one-leaf path of ``value_and_grad_f`` does not
        take: its arguments traced as pytrees (``trace_arg``, ``trace_args``)."""
        tape = Tape()
        try:
            if first_only and len(args) == 1:
                tx, spec = trace_arg(tape, args[0], fname, nums[0])
                specs = (spec,)
                out = f(tx, **kwargs)
            else:
                if holomorphic:
                    _check_holomorphic(args, nums, fname)
                targs, specs = trace_args(tape, args, nums, fname)
                out = f(*targs, **kwargs)
            aux = None
            if has_aux:
                out, aux = _split_aux(out, fname)
            dtype = scalar_output_dtype(out, tape, fname, holomorphic)
        finally:
            tape.close()
        if type(out) is Traced and out.tape is tape:
            value = out.value
            fuse(tape, (out.node,))
            seed = gradient_seed(value if type(value) is not Traced else untraced(value), dtype)
            # (Tape.backward of one unbatched direction, without its frame)
            grads = tape._reverse([out.node], [seed], None, None, None, False, None)[0]
        else:
            value = unwrap_level(out, tape)
            grads = NO_GRADIENTS
        tape.free()
        g = (collect_cotangents(specs[0], grads) if single else
             tuple(collect_cotangents(s, grads) for s in specs))
        if not with_value:  # grad
            return (g, unwrap_level(aux, tape)) if has_aux else g
        if type(value) is np.ndarray:  # f may return (a view of) its input
            value = unaliased(value, user_arrays(args))
        if has_aux:
            value = (value, unwrap_level(aux, tape))
        return value, g

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        # at_user_line's redirect of NumPy's settings, in this frame: the
        # settings met last time have their redirected form ready
        seen, redirected = _SWITCH.last
        if _FP.get() is seen and redirected is not None:
            token = _FP.set(redirected)
        else:
            token = _SWITCH.token() if _REDIRECTS else None
        try:
            # one inexact array or scalar argument, the common call: traced
            # as trace_arg's fast path traces it, and then general's work
            # without the pytree walk, the argument's spec and the frames of
            # scalar_output_dtype, gradient_seed and collect_cotangents
            v = None
            if first_only and len(args) == 1:
                arg = args[0]
                ta = type(arg)
                if ta is _ndarray:
                    if arg.dtype.kind in "fc":
                        v, scalar = arg, False
                elif ta is float:
                    v, scalar = np.float64(arg), True
                elif ta in _INEXACT_SCALARS:
                    v, scalar = arg, True
                elif ta is complex:
                    v, scalar = np.complex128(arg), True
                elif ta is Staged:
                    # cr.jit's recording: a staged array or NumPy scalar is a
                    # leaf as its value is (trace_arg's general path)
                    sv = arg.value
                    tv = type(sv)
                    if tv is _ndarray:
                        if sv.dtype.kind in "fc":
                            v, scalar = arg, False
                    elif tv in _INEXACT_SCALARS:
                        v, scalar = arg, True
            if v is None:
                return general(args, kwargs)
            tape = Tape(v)  # v its leaf, node 0
            nid = _NODE0
            tx = _new(Traced)
            tx.value = v
            tx.node = nid
            tx.tape = tape
            try:
                out = f(tx, **kwargs) if kwargs else f(tx)
                aux = None
                if has_aux:
                    out, aux = _split_aux(out, fname)
                ours = type(out) is Traced and out.tape is tape
                if ours and type(out.value) in _REAL_SCALARS:  # the common output
                    dtype = out.value.dtype
                    seed = _SEEDS.get(dtype)
                else:
                    dtype = scalar_output_dtype(out, tape, fname)
                    seed = None
            finally:
                if tape.refused is None and tape.converted is None:
                    tape.active = False  # (close, without its call)
                else:
                    tape.close()
            if ours:
                value = out.value
                node = out.node
                fuse(tape, (node,))
                if seed is None:
                    seed = gradient_seed(value if type(value) is not Traced else untraced(value),
                                         dtype)
                c = tape._reverse([node], [seed], None, None, None, False,
                                  None)[0]._store.get(nid, ZERO)
                # free(), without the call: the sweep consumed the tape and
                # dropped the rules it ran, these are the others
                tape.rules = [None] * len(tape.rules)
                tape.replays = _NO_REPLAYS
            else:
                value = unwrap_level(out, tape)
                c = ZERO
                tape.free()
            if type(c) is _ndarray and not scalar:
                # leaf_cotangent of an array input's array, without the call: a
                # read-only one (the broadcast cotangent of a sum) copied
                g = c if c.flags.writeable else c.copy()
            else:
                g = leaf_cotangent(c, arg, scalar)
            if not with_value:  # grad
                return (g, unwrap_level(aux, tape)) if has_aux else g
            if type(value) is _ndarray and ta is _ndarray and _may_share_memory(value,
                                                                                    arg):
                value = value.copy()  # f returned (a view of) its input
            if has_aux:
                value = (value, unwrap_level(aux, tape))
            return value, g
        finally:
            if token is not None:
                _FP.reset(token)

    return value_and_grad_f


@overload
def grad(f: np.ufunc, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable[..., Any]: ...


@overload
def grad(f: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable[P, Any]: ...


def grad(f: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable[P, Any]:
    """Return a function computing the gradient of scalar-valued ``f``.

    >>> import numpy as np, chainrules as cr
    >>> float(cr.grad(lambda x: np.sin(x) * x)(0.0))
    0.0
    """
    return Transformed(_value_and_grad_call(f, argnums, has_aux, holomorphic, False), grad, f,
                       (), dict(argnums=argnums, has_aux=has_aux, holomorphic=holomorphic),
                       redirects=_REDIRECTS)


@overload
def vjp(f: Callable[..., R], *primals: Any,
        has_aux: Literal[False] = False) -> tuple[R, VjpFunction]: ...


@overload
def vjp(f: Callable[..., Any], *primals: Any,
        has_aux: Literal[True]) -> tuple[Any, VjpFunction, Any]: ...


@at_user_line
def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``out, f_vjp = vjp(f, *primals)``; ``f_vjp(cotangent)`` returns a tuple
    with one cotangent per primal. ``f_vjp`` may be called many times;
    ``f_vjp.many(cotangents)`` takes a batch (a leading axis of directions on
    every leaf) in one sweep and returns batches.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> out, f_vjp = cr.vjp(np.sin, np.array([0.0, np.pi]))
    >>> np.round(f_vjp(np.ones(2))[0], 6)
    array([ 1., -1.])
    """
    fname = function_name(f)
    tape = Tape()
    try:
        # the recording outlives this call (f_vjp): it keeps private copies of
        # the inputs, so the caller may mutate its arrays afterwards
        targs, specs = trace_args(tape, primals, range(len(primals)), fname,
                                   private=True)
        out = f(*targs)
        aux = None
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{fname} was declared has_aux=True and must "
                                "return a pair (value, aux)")
            out, aux = out
    finally:
        tape.close()
    leaves, td = pytree.flatten(out)
    value = pytree.unflatten(td, [unwrap_level(v, tape) for v in leaves])
    fuse(tape, [o.node for o in leaves if type(o) is Traced and o.tape is tape])

    @at_user_line
    def f_vjp(cotangent):
        cleaves = check_tangent(cotangent, out, fname, "cotangent", "output", "vjp")
        nodes, seeds = [], []
        for o, c in zip(leaves, cleaves):
            if type(o) is Traced and o.tape is tape and not isinstance(c, Structural):
                nodes.append(o.node)
                seeds.append(c)
        grads = tape.backward(nodes, seeds, retain_graph=True) if nodes else NO_GRADIENTS
        users = user_arrays(cotangent)
        return tuple(collect_cotangents(s, grads, users) for s in specs)

    @at_user_line
    def many(cotangents):
        """``f_vjp`` of a batch of cotangents (every leaf with a leading axis
        of directions) in one reverse sweep; each result leaf has that axis."""
        cleaves, k = check_tangent(cotangents, out, fname, "cotangent", "output",
                                   "vjp (f_vjp.many)", batch=True)
        if k is None:
            raise TangentShapeError(f"vjp of {fname}: f_vjp.many needs at least one batch "
                                    "of cotangents as an array (its leading axis is the "
                                    "number of directions)")
        nodes, seeds = [], []
        for o, c in zip(leaves, cleaves):
            if type(o) is Traced and o.tape is tape and not isinstance(c, Structural):
                nodes.append(o.node)
                seeds.append(c)
        grads = tape.backward(nodes, seeds, retain_graph=True, batch=k) if nodes \
            else NO_GRADIENTS
        users = user_arrays(cotangents)
        return tuple(collect_cotangent_batches(s, grads, k, users) for s in specs)

    f_vjp.many = many  # type: ignore[attr-defined]
    if has_aux:
        return value, f_vjp, unwrap_level(aux, tape)
    return value, f_vjp


@at_user_line
def jvp(f: Callable[..., R], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[R, Any]:
    """Forward mode: ``(f(*primals), J @ tangents)``.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> out, t = cr.jvp(np.exp, (np.array([0.0, 1.0]),), (np.array([1.0, 0.5]),))
    >>> np.round(t, 6)
    array([1.      , 1.359141])
    """
    fname = function_name(f)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TangentShapeError(f"jvp of {fname}: {len(primals)} primals but "
                                f"{len(tangents)} tangents")
    tape = Tape()
    try:
        targs, specs = trace_args(tape, primals, range(len(primals)), fname)
        out = f(*targs)
    finally:
        tape.close()
    seeds = {}
    for spec, p, t in zip(specs, primals, tangents):
        tl = check_tangent(t, p, fname)
        for nid, tv in zip(spec.ids, tl):
            if nid is not None and not isinstance(tv, Structural):
                seeds[nid] = tv
    leaves, td = pytree.flatten(out)
    fuse(tape, [o.node for o in leaves if type(o) is Traced and o.tape is tape])
    tans = tape.forward(seeds)
    users = user_arrays(primals, tangents)
    outs, touts = [], []
    for o in leaves:
        if type(o) is Traced and o.tape is tape:
            t = tans[o.node]
            v = o.value
            if t is None:
                t = zeros_like_value(untraced(v))
            outs.append(unaliased(v, users))
            touts.append(like_output(unaliased(t, users), v))
        else:
            outs.append(unaliased(o, users))
            touts.append(zero_like_value(o))
    tape.free()
    return pytree.unflatten(td, outs), pytree.unflatten(td, touts)


def _hvp_fast(f, x, v, fname=None, want_grad=True):
    """``(gradient or None, Hessian times v)`` (``grad_and_hvp`` and ``hvp``
    call it under ``at_user_line``: ``_hvp_at_user_line``)."""
    if type(x) is _ndarray and type(v) is _ndarray and x.dtype.kind in "fc" and (
            v.shape == x.shape and v.dtype == x.dtype):
        return _hvp_one_array(f, x, v, fname, want_grad)
    if fname is None:
        fname = function_name(f)
    tape = Tape()
    try:
        tx, spec = trace_arg(tape, x, fname, 0)
        out = f(tx)
        dtype = scalar_output_dtype(out, tape, fname)
    finally:
        tape.close()
    if not (type(out) is Traced and out.tape is tape):
        check_tangent(v, x, fname, entry="hvp")
        return collect_cotangents(spec, NO_GRADIENTS), collect_cotangents(spec, NO_GRADIENTS)
    seeds = {}
    for nid, tv in zip(spec.ids, check_tangent(v, x, fname, entry="hvp")):
        if nid is not None and not isinstance(tv, Structural):
            seeds[nid] = tv
    fuse(tape, (out.node,), second_order=True)
    tans = tape.forward(seeds, needed=tape.tangent_demand([out.node]))
    value = out.value
    seed = gradient_seed(value if type(value) is not Traced else untraced(value), dtype)
    g, hv = tape.backward_with_tangents([out.node], [seed], [ZERO], tans,
                                        retain_graph=False, leaf_cotangents=want_grad)
    tape.free()
    users = user_arrays(x, v)
    # hvp discards the gradient: no zero arrays are made for it
    grads = collect_cotangents(spec, g, users) if want_grad else None
    return grads, collect_cotangents(spec, hv, users)


def _hvp_one_array(f, x, v, fname, want_grad):
    """``_hvp_fast`` of an inexact array ``x`` and a direction ``v`` of its
    shape and dtype, the common call: what the general path does (x as the
    tape's node 0, ``v`` as its tangent, as ``trace_arg`` and
    ``check_tangent`` take them), without the argument's spec, the frames of
    ``trace_arg``, ``check_tangent``, ``scalar_output_dtype`` (for the common
    output) and ``collect_cotangents``, and ``f``'s name unless an error
    needs it."""
    tape = Tape(x)  # x its leaf, node 0
    tx = _new(Traced)
    tx.value = x
    tx.node = _NODE0
    tx.tape = tape
    try:
        out = f(tx)
        ours = type(out) is Traced and out.tape is tape
        if ours and type(out.value) in _REAL_SCALARS:  # the common output
            dtype = out.value.dtype
        else:
            dtype = scalar_output_dtype(out, tape, function_name(f) if fname is None else fname)
    finally:
        tape.close()
    if not ours:  # collect_cotangents of no gradients, twice
        return leaf_cotangent(ZERO, x, False), leaf_cotangent(ZERO, x, False)
    node = out.node
    fuse(tape, (node,), second_order=True)
    tans = tape.forward({_NODE0: v}, needed=tape.tangent_demand([node]))
    value = out.value
    seed = gradient_seed(value if type(value) is not Traced else untraced(value), dtype)
    g, hv = tape.backward_with_tangents([node], [seed], [ZERO], tans,
                                        retain_graph=False, leaf_cotangents=want_grad)
    tape.free()
    users = (x, v)
    # hvp discards the gradient: no zero arrays are made for it
    grads = unaliased(leaf_cotangent(g.get(_NODE0), x, False), users) if want_grad else None
    return grads, unaliased(leaf_cotangent(hv.get(_NODE0), x, False), users)


_hvp_at_user_line = at_user_line(_hvp_fast)


def grad_and_hvp(f: Callable[[Any], Any], x: Any, v: Any) -> tuple[Any, Any]:
    """``(gradient of f at x, Hessian of f at x times v)`` from one
    forward-over-reverse sweep.

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> g, hv = cr.grad_and_hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.ones(2))
    >>> g, hv
    (array([ 3., 12.]), array([ 6., 12.]))
    """
    return _hvp_at_user_line(f, x, v)


def hvp(f: Callable[[Any], Any], x: Any, v: Any) -> Any:
    """The Hessian of scalar ``f`` at ``x`` applied to ``v``
    (forward-over-reverse).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> cr.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    return _hvp_at_user_line(f, x, v, None, False)[1]
