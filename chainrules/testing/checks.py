"""Generic property checkers for rules (ours and yours).

``check_rrule(op, *args, **kwargs)`` checks, at one point:

* the primal through the traced path equals the plain call (shape, dtype,
  values);
* the pullback against finite differences along several random directions:
  ``<J^T w, u>`` (rule) against ``<w, J u>`` (finite differences in float64);
* the adjoint identity ``<w, J u> == <J^T w, u>`` between the pushforward
  and the pullback, which needs no finite differences and so holds to
  rounding;
* every cotangent a rule returns has its primal's shape, dtype and
  real/complex kind, inspected *raw*, before the engine would project it;
  integer and bool arguments of closure rules get ``NoTangent()``;
* ``ZeroTangent()`` and all-zero cotangents give zero cotangents;
* calling the pullback twice gives the same answer (to rounding), the pullback does not
  modify its cotangent, and no input is mutated.

``check_frule`` (alias ``check_jvp``) checks the pushforward against finite
differences; ``check_hvp`` checks ``pullback_with_tangents`` against finite
differences of the gradient, its symmetry ``<u, H v> == <v, H u>`` and its
consistency with the pullback; ``check_rule`` runs any subset of these on
one recording; ``check_grads(f, *args, order=2)`` checks whole functions in
both modes up to ``order`` by nesting ``chainrules.vjp`` / ``chainrules.jvp``.

Positional arguments holding float or complex values (arrays, scalars or
pytrees of them) are differentiated; everything else is constant. Every
checker returns a ``CheckReport`` (truthy) and raises ``CheckFailure`` with
the op, the argument shapes and dtypes, the direction, both numbers and the
relative error. Names start with ``check_`` so pytest never collects them.

Tolerances: finite differences are computed in float64 with an error
estimate (``chainrules.testing.fd``); a comparison passes when
``|rule - fd| <= rtol * scale + 10 * fd_error + atol * |w| |u|`` where
``scale`` is the size of the quantities compared (``|J^T w| |u|`` and
``|w| |J u|``, so ill-conditioned problems get proportionally more room)
and ``rtol`` comes from the lowest precision among inputs and outputs
(``default_rtol``). Identities that need no finite differences use the much
tighter ``adjoint_rtol``.

This module holds the public checkers; their parts live beside it:
``numerics`` (tolerances, norms, directions), ``report`` (failures, reports
and the comparison context), ``recording`` (one op recorded, with the raw
sweeps) and ``rule_check`` (every check of one op at one point).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

import chainrules as cr
from chainrules import pytree

from .fd import fd_jvp, upcast
from .numerics import (adjoint_rtol, copy_arrays, default_rtol, finite_difference,
                       has_inexact, inner, mutated, norm, random_leaf)
from .report import (CheckFailure, CheckReport, Context, FiniteDifferenceUnreliable,
                     describe, lowest_precision, op_label, summary)
from .recording import CheckedRecording
from .rule_check import RuleCheck

__all__ = ["check_rrule", "check_frule", "check_jvp", "check_hvp", "check_rule",
           "check_grads", "check_nondiff", "CheckFailure",
           "FiniteDifferenceUnreliable", "CheckReport", "default_rtol",
           "adjoint_rtol", "finite_difference"]


_COMMON = """
    Common keyword arguments (everything else is passed to the op):

    call:      how to apply the op when it is not ``op(*args, **kwargs)``, for
               operators and methods, e.g. ``call=lambda x, i: x[i]``
    wrt:       positions of the arguments to differentiate (default: every
               positional argument holding float or complex values)
    rtol/atol: override the tolerances derived from the dtype
    rng:       a NumPy ``Generator`` for the random directions
    op_kwargs: keyword arguments for the op whose names clash with the
               checker's own (``rtol``, ``atol``, ...)
"""


def _merge_kwargs(kwargs, op_kwargs):
    if op_kwargs:
        kwargs = dict(kwargs)
        kwargs.update(op_kwargs)
    return kwargs


def check_rule(op: Callable[..., Any], *args: Any, call: Callable[..., Any] | None = None,
               rtol: float | None = None, atol: float | None = None,
               rng: np.random.Generator | None = None, directions: int = 3,
               modes: Iterable[str] = ("rrule", "frule", "hvp"), hvp_fast: bool | None = None,
               wrt: int | Sequence[int] | None = None,
               op_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> CheckReport:
    """Run the checks of ``modes`` (any of "rrule", "frule", "hvp", or
    "nondiff") on ``op`` at ``args`` from one recording, sharing the finite
    differences. Returns a ``CheckReport``. ``hvp_fast=True`` fails when a
    rule has no ``pullback_with_tangents`` instead of accepting the nested
    fallback.
    """
    kwargs = _merge_kwargs(kwargs, op_kwargs)
    modes = set(modes)
    if "nondiff" in modes:
        return check_nondiff(op, *args, call=call, op_kwargs=kwargs)
    c = RuleCheck(op, args, kwargs, call, rtol, atol, rng, directions, "check_rule", wrt)
    if "rrule" in modes:
        c.rrule()
    if "frule" in modes:
        c.frule()
    if "hvp" in modes:
        c.hvp(fast=hvp_fast)
    if "rrule" in modes:
        c.batched(hvp="hvp" in modes, forward="frule" in modes)
        c.batched_at_small_points(hvp="hvp" in modes, forward="frule" in modes)
    c.check_unmutated("the checks")
    return c.report


def check_rrule(op: Callable[..., Any], *args: Any, call: Callable[..., Any] | None = None,
                rtol: float | None = None, rng: np.random.Generator | None = None,
                atol: float | None = None, directions: int = 3, adjoint: bool = True,
                wrt: int | Sequence[int] | None = None,
                op_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> CheckReport:
    """Check the reverse rule of ``op`` at ``args`` (see the module docstring):
    primal, pullback vs finite differences along ``directions`` random
    directions, adjoint identity with the pushforward (``adjoint=False`` skips
    it, for rules without a forward mode), raw cotangent kinds, structural
    zeros, repeatability, no mutation, and that sweeps carrying all the
    directions as one batch agree with the sweeps of one direction.

    >>> import numpy as np
    >>> bool(check_rrule(np.sin, np.array([0.1, 0.2])))
    True
    """
    c = RuleCheck(op, args, _merge_kwargs(kwargs, op_kwargs), call, rtol, atol, rng,
                   directions, "check_rrule", wrt)
    c.rrule(adjoint=adjoint)
    c.batched(hvp=False, forward=adjoint)
    c.batched_at_small_points(hvp=False, forward=adjoint)
    return c.report


def check_frule(op: Callable[..., Any], *args: Any, call: Callable[..., Any] | None = None,
                rtol: float | None = None, rng: np.random.Generator | None = None,
                atol: float | None = None, directions: int = 3,
                wrt: int | Sequence[int] | None = None,
                op_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> CheckReport:
    """Check the pushforward (forward mode) of ``op`` at ``args`` against finite
    differences, and the kind of every tangent a rule returns.

    >>> import numpy as np
    >>> bool(check_frule(np.exp, np.array([0.1, 0.2])))
    True
    """
    c = RuleCheck(op, args, _merge_kwargs(kwargs, op_kwargs), call, rtol, atol,
                   np.random.default_rng(1) if rng is None else rng, directions,
                   "check_frule", wrt)
    c.frule()
    return c.report


check_jvp = check_frule


def check_hvp(op: Callable[..., Any], *args: Any, call: Callable[..., Any] | None = None,
              rtol: float | None = None, rng: np.random.Generator | None = None,
              atol: float | None = None, fast: bool | None = None,
              wrt: int | Sequence[int] | None = None,
              op_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> CheckReport:
    """Check the Hessian-vector product of ``s(x) = <w, op(x)>``:
    ``pullback_with_tangents`` against finite differences of the gradient,
    the symmetry ``<u, H v> == <v, H u>``, and its consistency with the
    pullback. ``fast=True`` fails when a rule has no ``pullback_with_tangents``
    (by default the nested forward-over-reverse fallback is checked instead).

    >>> import numpy as np
    >>> bool(check_hvp(np.tanh, np.array([0.1, 0.2])))
    True
    """
    c = RuleCheck(op, args, _merge_kwargs(kwargs, op_kwargs), call, rtol, atol,
                   np.random.default_rng(2) if rng is None else rng, 2, "check_hvp", wrt)
    c.hvp(fast=fast)
    return c.report


for _f in (check_rule, check_rrule, check_frule, check_hvp):
    _f.__doc__ += _COMMON  # type: ignore[operator]  # each has a docstring


def check_nondiff(op: Callable[..., Any], *args: Any, call: Callable[..., Any] | None = None,
                  op_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> CheckReport:
    """Check an operation registered as non-differentiable: on traced inputs
    it returns plain (untraced) values equal to the plain call, and it does not
    mutate its inputs."""
    kwargs = _merge_kwargs(kwargs, op_kwargs)
    f = call if call is not None else op
    desc = describe(op, args, kwargs)
    report = CheckReport(op_label(op), ["nondiff"])
    snap = copy_arrays((args, kwargs))
    expected = f(*args, **kwargs)
    idx = [i for i, a in enumerate(args) if has_inexact(a)]
    if not idx:
        raise ValueError(f"check_nondiff: no float argument to trace in {desc}")

    def fun(*d):
        full = list(args)
        for i, v in zip(idx, d):
            full[i] = v
        return f(*full, **kwargs)

    ctx = Context(desc, np.float64, None, None, report)
    rec = CheckedRecording(fun, tuple(args[i] for i in idx), ctx)
    if any(rec.escaped):
        ctx.fail(f"{op_label(op)} returned a traced value; a non-differentiable "
                 "operation must return plain values")
    exp_leaves = pytree.flatten(expected)[0]
    if len(exp_leaves) != len(rec.out_values):
        ctx.fail("the traced call returned a different structure than the plain call")
    for a, b in zip(rec.out_values, exp_leaves):
        try:
            np.testing.assert_equal(a, b)
        except AssertionError as e:
            ctx.fail(f"the traced call differs from the plain call: {e}")
    report.record("nondiff output", 0.0)
    if mutated((args, kwargs), snap) is not None:
        ctx.fail("the call mutated an input")
    return report


# -- whole functions -------------------------------------------------------------------
def check_grads(f: Callable[..., Any], *args: Any, order: int = 2,
                modes: Iterable[str] = ("fwd", "rev"), rtol: float | None = None,
                atol: float | None = None, rng: np.random.Generator | None = None,
                directions: int = 2, **kwargs: Any) -> CheckReport:
    """Check the derivatives of a whole function ``f`` up to ``order``.

    Order 1: the vjp (``chainrules.vjp``) and the jvp (``chainrules.jvp``)
    against finite differences along ``directions`` random directions, and
    the adjoint identity between them. Order ``n``: the same checks on the
    functions ``x -> vjp(f, x)(w)`` and ``x -> jvp(f, x, u)`` at order
    ``n - 1`` (so order 2 covers grad-of-grad, jvp-of-grad, grad-of-jvp and
    jvp-of-jvp). ``modes`` is a subset of ("fwd", "rev").

    >>> import numpy as np
    >>> bool(check_grads(lambda x: np.sum(np.tanh(x) ** 2), np.array([0.3, -0.5])))
    True
    """
    modes = tuple(modes)
    if not set(modes) <= {"fwd", "rev"} or not modes:
        raise ValueError(f"modes must be a non-empty subset of ('fwd', 'rev'), got {modes}")
    rng = np.random.default_rng(3) if rng is None else rng
    desc = describe(f, args, kwargs)
    idx = [i for i, a in enumerate(args) if has_inexact(a)]
    if not idx:
        raise ValueError(f"check_grads: no float or complex argument in {desc}")
    snap = copy_arrays((args, kwargs))
    report = CheckReport(op_label(f))

    def fun(*d):
        full = list(args)
        for i, v in zip(idx, d):
            full[i] = v
        return f(*full, **kwargs)

    _grads_level(fun, tuple(args[i] for i in idx), order, modes, desc, "", rtol, atol,
                 rng, directions, report)
    if mutated((args, kwargs), snap) is not None:
        raise CheckFailure(f"{desc} mutated an input")
    return report


def _grads_level(fun, primals, order, modes, desc, path, rtol, atol, rng, directions,
                 report):
    label = f"{path} of {desc}" if path else desc
    p_leaves, _ = pytree.flatten(primals)
    out = fun(*primals)
    o_leaves, o_def = pytree.flatten(out)
    dtype = lowest_precision(p_leaves + o_leaves)
    ctx = Context(label, dtype, rtol, atol, report)
    for m in modes:
        report.add_mode(("vjp" if m == "rev" else "jvp") + f"(order {_depth(path) + 1})")

    def unflat_p(leaves):
        return pytree.unflatten(pytree.flatten(primals)[1], leaves)

    if "rev" in modes:
        _, f_vjp = cr.vjp(fun, *primals)
    for k in range(directions):
        u = [random_leaf(x, rng) for x in p_leaves]
        w = [random_leaf(y, rng) for y in o_leaves]
        def where(k=k, u=u, w=w):
            return f"along direction #{k}: u = {summary(u)}; w = {summary(w)}"

        r = fd_jvp(fun, upcast(primals), unflat_p(u))
        fdl = pytree.flatten(r.value)[0]
        ctx.fd_reliable(r, fdl, where)
        nu, nw = norm(u), norm(w)
        if "rev" in modes:
            ct = pytree.flatten(f_vjp(pytree.unflatten(o_def, w)))[0]
            a, b = inner(ct, u), inner(w, fdl)
            scale = max(norm(ct) * nu, nw * norm(fdl))
            ctx.scalar("vjp vs finite differences: <J^T w, u> vs <w, J u>", a, b, scale,
                       ctx.rtol * scale + 10 * nw * r.error + ctx.atol * nu * nw, where)
        if "fwd" in modes:
            _, ju = cr.jvp(fun, primals, unflat_p(u))
            jul = pytree.flatten(ju)[0]
            ctx.vector("jvp vs finite differences: J u", jul, fdl,
                       10 * r.error + ctx.atol * nu, where)
            if "rev" in modes:
                c = inner(w, jul)
                scale2 = max(norm(ct) * nu, nw * norm(jul))
                ctx.scalar("adjoint identity <w, J u> == <J^T w, u>", c, a, scale2,
                           ctx.adj * scale2 + ctx.atol * nu * nw, where, ("jvp", "vjp"))
    if order > 1:
        if "rev" in modes:
            w = pytree.unflatten(o_def, [random_leaf(y, rng) for y in o_leaves])

            def vjp_fun(*p):
                return cr.vjp(fun, *p)[1](w)

            _grads_level(vjp_fun, primals, order - 1, modes, desc,
                         (path + " ." if path else "") + "vjp", rtol, atol, rng,
                         directions, report)
        if "fwd" in modes:
            u = unflat_p([random_leaf(x, rng) for x in p_leaves])

            def jvp_fun(*p):
                return cr.jvp(fun, p, u)[1]

            _grads_level(jvp_fun, primals, order - 1, modes, desc,
                         (path + " ." if path else "") + "jvp", rtol, atol, rng,
                         directions, report)


def _depth(path):
    return 0 if not path else path.count(".") + 1
