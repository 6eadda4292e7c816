"""Generic property checkers for rules.

``check_rrule(op, *args, **kwargs)`` checks, at one point:

* the primal through the traced path equals the plain call;
* the pullback against finite differences along a random direction
  (``<w, J u>`` by a 4th-order central stencil in float64 vs ``<J^T w, u>``);
* the pushforward against the pullback (adjoint identity, to rounding);
* every cotangent has its primal's shape, dtype and real/complex kind;
* the inputs are not mutated.

``check_hvp(op, *args, **kwargs)`` checks the Hessian-vector product of
``s(x) = <w, op(x)>`` against finite differences of its gradient, and its
symmetry ``<u, H v> == <v, H u>``.

Positional arguments of an inexact dtype are differentiated; the others are
constants. Names start with ``check_`` so pytest never collects them.
"""

import numpy as np

import chainrules as cr
from chainrules import pytree
from chainrules.tangents import _Structural, inner, random_like

__all__ = ["check_rrule", "check_frule", "check_hvp", "CheckFailure",
           "finite_difference", "default_rtol"]


class CheckFailure(AssertionError):
    """A rule failed a property check."""


def default_rtol(dtype):
    dtype = np.dtype(dtype)
    if dtype in (np.float32, np.complex64):
        return 2e-3
    return 1e-6


def _is_diff(a):
    return isinstance(a, (np.ndarray, np.generic, float, complex)) and not isinstance(
        a, bool) and np.asarray(a).dtype.kind in "fc"


def _upcast(a):
    a = np.asarray(a)
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def finite_difference(f, x, u, h=None):
    """Directional derivative of ``f`` at ``x`` along ``u`` (4th-order central
    differences). ``x``, ``u`` are lists of arrays; ``f`` returns a pytree."""
    if h is None:
        scale = max(1.0, max((float(np.max(np.abs(a))) for a in x if np.size(a)),
                             default=1.0))
        h = 1e-3 * scale

    def at(t):
        return f([a + t * b for a, b in zip(x, u)])

    fp2, fp1, fm1, fm2 = at(2 * h), at(h), at(-h), at(-2 * h)
    return pytree.tree_map(
        lambda a, b, c, d: (-np.asarray(a) + 8 * np.asarray(b) - 8 * np.asarray(c)
                            + np.asarray(d)) / (12 * h), fp2, fp1, fm1, fm2)


def _describe(op, args, kwargs):
    from chainrules.registry import op_name

    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append(f"array{a.shape}:{a.dtype}")
        else:
            parts.append(repr(a) if not hasattr(a, "dtype") else f"{type(a).__name__}:{a.dtype}")
    kw = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    name = op_name(op) if not getattr(op, "__name__", "") == "<lambda>" else "lambda"
    return f"{name}({', '.join(parts)}{', ' if kw else ''}{kw})"


def _close(a, b, rtol, scale, what, desc):
    err = abs(a - b)
    tol = rtol * max(abs(a), abs(b), scale)
    if not err <= tol:
        raise CheckFailure(f"{what} failed for {desc}: {a!r} vs {b!r} "
                           f"(abs err {err:.3g}, tol {tol:.3g}, rel err "
                           f"{err / max(abs(a), abs(b), 1e-300):.3g})")


def _split(args):
    idx = [i for i, a in enumerate(args) if _is_diff(a)]
    return idx


def _merge(args, idx, vals):
    out = list(args)
    for i, v in zip(idx, vals):
        out[i] = v
    return out


def _snapshot(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else None for a in args]


def _check_unmutated(args, snap, desc):
    for a, s in zip(args, snap):
        if s is not None and not np.array_equal(a, s, equal_nan=True):
            raise CheckFailure(f"the rule mutated an input: {desc}")


def _check_kinds(cots, primals, desc):
    for c, p in zip(cots, primals):
        if isinstance(c, _Structural):
            continue
        p = np.asarray(p)
        if np.shape(c) != p.shape:
            raise CheckFailure(f"cotangent of shape {np.shape(c)} for a primal of shape "
                               f"{p.shape}: {desc}")
        cd = np.asarray(c).dtype
        if cd != p.dtype:
            raise CheckFailure(f"cotangent dtype {cd} for a primal of dtype {p.dtype}: {desc}")


def check_rrule(op, *args, call=None, rtol=None, rng=None, **kwargs):
    """Check the reverse rule (and the adjoint identity) of ``op`` at ``args``."""
    f = call or op
    rng = np.random.default_rng(0) if rng is None else rng
    desc = _describe(op, args, kwargs)
    idx = _split(args)
    if not idx:
        raise ValueError(f"check_rrule: no differentiable argument in {desc}")
    snap = _snapshot(args)
    dtype = np.result_type(*[args[i] for i in idx])
    rtol = default_rtol(dtype) if rtol is None else rtol
    primals = [args[i] for i in idx]

    def g(*d):
        return f(*_merge(args, idx, d), **kwargs)

    expected = f(*args, **kwargs)
    out, f_vjp = cr.vjp(g, *primals)
    for a, b in zip(pytree.flatten(out)[0], pytree.flatten(expected)[0]):
        if not np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True):
            raise CheckFailure(f"primal mismatch for {desc}: {a!r} vs {b!r}")
    w = random_like(out, rng)
    u = [random_like(np.asarray(p) if not isinstance(p, np.ndarray) else p, rng)
         for p in primals]
    cots = f_vjp(w)
    _check_kinds(cots, primals, desc)
    _check_unmutated(args, snap, desc)
    lhs = sum(inner(c, ui) for c, ui in zip(cots, u))
    # pullback vs finite differences, in float64
    args64 = [_upcast(a) for a in primals]

    def f64(x):
        return g(*[xi if np.ndim(p) else xi[()] for xi, p in zip(x, primals)])

    fd = finite_difference(f64, args64, [_upcast(ui) for ui in u])
    rhs = inner(pytree.tree_map(_upcast, w), fd)
    scale = sum(float(np.linalg.norm(np.ravel(np.asarray(c)))) * float(
        np.linalg.norm(np.ravel(ui))) for c, ui in zip(cots, u)
        if not isinstance(c, _Structural)) * 1e-3
    _close(lhs, rhs, max(rtol, 1e-6), scale, "pullback vs finite differences", desc)
    # pushforward vs pullback (adjoint identity)
    _, ju = cr.jvp(g, primals, u)
    adj = inner(w, ju)
    _close(adj, lhs, rtol if dtype not in (np.float64, np.complex128) else 1e-9,
           scale, "adjoint identity <w, J u> == <J^T w, u>", desc)
    # calling the pullback twice gives the same answer
    cots2 = f_vjp(w)
    for c1, c2 in zip(cots, cots2):
        if not isinstance(c1, _Structural) and not np.array_equal(np.asarray(c1),
                                                                  np.asarray(c2)):
            raise CheckFailure(f"calling the pullback twice differs: {desc}")
    return True


def check_frule(op, *args, call=None, rtol=None, rng=None, **kwargs):
    """Check the pushforward of ``op`` at ``args`` against finite differences."""
    f = call or op
    rng = np.random.default_rng(1) if rng is None else rng
    desc = _describe(op, args, kwargs)
    idx = _split(args)
    primals = [args[i] for i in idx]
    dtype = np.result_type(*primals)
    rtol = default_rtol(dtype) if rtol is None else rtol

    def g(*d):
        return f(*_merge(args, idx, d), **kwargs)

    u = [random_like(np.asarray(p) if not isinstance(p, np.ndarray) else p, rng)
         for p in primals]
    out, ju = cr.jvp(g, primals, u)
    w = random_like(out, rng)
    fd = finite_difference(lambda x: g(*[xi if np.ndim(p) else xi[()]
                                         for xi, p in zip(x, primals)]),
                           [_upcast(a) for a in primals], [_upcast(ui) for ui in u])
    a, b = inner(w, ju), inner(pytree.tree_map(_upcast, w), fd)
    scale = float(np.linalg.norm(np.ravel(np.asarray(w)))) * 1e-3
    _close(a, b, max(rtol, 1e-6), scale, "pushforward vs finite differences", desc)
    return True


def check_hvp(op, *args, call=None, rtol=None, rng=None, **kwargs):
    """Check the HVP of ``s(x) = <w, op(x)>`` against finite differences of
    its gradient, and its symmetry."""
    f = call or op
    rng = np.random.default_rng(2) if rng is None else rng
    desc = _describe(op, args, kwargs)
    idx = _split(args)
    primals = tuple(args[i] for i in idx)
    dtype = np.result_type(*primals)
    rtol = default_rtol(dtype) if rtol is None else rtol
    w = random_like(f(*args, **kwargs), rng)

    def s(d):
        y = f(*_merge(args, idx, d), **kwargs)
        terms = [np.sum(np.real(a * b)) for a, b in zip(pytree.flatten(y)[0],
                                                        pytree.flatten(w)[0])
                 if not isinstance(b, _Structural)]
        return sum(terms[1:], terms[0])

    u = tuple(random_like(np.asarray(p) if not isinstance(p, np.ndarray) else p, rng)
              for p in primals)
    v = tuple(random_like(np.asarray(p) if not isinstance(p, np.ndarray) else p, rng)
              for p in primals)
    hv = cr.hvp(s, primals, v)
    hu = cr.hvp(s, primals, u)
    a, b = inner(u, hv), inner(v, hu)
    scale = float(np.linalg.norm(to_vec(hv))) * float(np.linalg.norm(to_vec(u))) * 1e-3
    _close(a, b, rtol if dtype not in (np.float64, np.complex128) else 1e-8, scale,
           "HVP symmetry <u, H v> == <v, H u>", desc)
    grad_s = cr.grad(s)
    gnorm = float(np.linalg.norm(to_vec(grad_s(primals))))
    scale = max(scale, 1e-6 * gnorm * float(np.linalg.norm(to_vec(u))))
    p64 = [_upcast(p) for p in primals]
    fd = finite_difference(
        lambda x: grad_s(tuple(xi if np.ndim(p) else xi[()] for xi, p in zip(x, primals))),
        p64, [_upcast(vi) for vi in v])
    a, b = inner(u, hv), inner(tuple(_upcast(ui) for ui in u), fd)
    _close(a, b, max(rtol, 1e-5), scale, "HVP vs finite differences of the gradient", desc)
    return True


def to_vec(t):
    from chainrules.tangents import to_vector

    return to_vector(t)[0]
