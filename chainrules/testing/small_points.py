"""The batched comparison at small points: after a ``RuleCheck`` at its own
point, the op is recorded again where every differentiated array is 0-d
(its first element), then where each has size 1 (its first element, every
axis of length 1), and the sweeps carrying a batch of directions (and a
batch of one: the Hessian of a 0-d or size-1 input, a last chunk of one)
are compared with the sweeps of one direction at a time.

A batched value of a 0-d node has the batch axis alone, and one of a
size-1 node broadcasts like a scalar: a rule that reads the batch axis as
the value's own, or that takes the shape of a size-1 value for a broadcast
one, is caught here and nowhere else.

What is accepted at a small point:

* the plain call (NumPy's or SciPy's function, or the spec's ``call``)
  raises or warns there, or gives no finite float value: the op takes no
  such input, the point is skipped;
* a rule refuses the point with a typed ``AutodiffError`` carrying a
  message (``refusal``): the sweeps it refuses are left out.

Anything else fails the check naming the op and the input: the traced
call, a sweep of one direction or a batched sweep raising another
exception (a ``TypeError``, ``IndexError``, ``ValueError``... from inside a
rule), a primal differing from the plain call's, a batch disagreeing with
one direction at a time.
"""

import warnings

import numpy as np

from chainrules import pytree
from chainrules.errors import AutodiffError, RuleError, TangentShapeError

from .numerics import inexact
from .report import CheckFailure, describe, summary


def refusal(e):
    """A typed refusal: an ``AutodiffError`` with a message, other than the
    engine's findings of a broken rule (``RuleError``: a rule returned what
    the protocol does not allow; ``TangentShapeError``: a tangent that does
    not fit its primal)."""
    return (isinstance(e, AutodiffError) and not isinstance(e, (RuleError, TangentShapeError))
            and bool(str(e).strip()))


def _shrunk(args, idx, shape_of_first):
    """``args`` with each float or complex array among the arguments at
    ``idx`` (pytrees included) replaced by its first element, shaped by
    ``shape_of_first(array)``; None when no array changes."""
    changed = []

    def first(a):
        if isinstance(a, np.ndarray) and a.size and a.dtype.kind in "fc":
            shape = shape_of_first(a)
            if shape != a.shape:
                changed.append(a)
                return np.array(a.reshape(-1)[0], dtype=a.dtype).reshape(shape)
        return a

    out = list(args)
    for i in idx:
        out[i] = pytree.tree_map(first, args[i])
    return tuple(out) if changed else None


#: the small points, in the order they are checked: (label, shape of the
#: first element)
POINTS = (("0-d", lambda a: ()),
          ("size-1", lambda a: (1,) * a.ndim))


def batched_at_small_points(check, hvp=True, forward=True):
    """Run ``check.batched`` (a ``RuleCheck``) at each small point the op
    takes; the comparisons count in ``check``'s report (its modes stay its
    own point's: the same sweeps at another point), and its worst error
    names the point. Returns the ``RuleCheck`` of each point run."""
    done = []
    for label, shape_of_first in POINTS:
        args = _shrunk(check.args, check.idx, shape_of_first)
        if args is None:
            continue
        c = _batched_at(check, args, label, hvp, forward)
        if c is None:
            continue
        rep = check.report
        rep.checks += c.report.checks
        if c.report.worst > rep.worst:
            rep.worst, rep.worst_at = (c.report.worst,
                                       f"{c.report.worst_at} ({label} inputs)")
        done.append(c)
    return done


def _plain_takes(check, args):
    """The plain call works at ``args`` (no exception, no warning) and gives
    finite float values."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            out = pytree.flatten(check.f(*args, **check.kwargs))[0]
        except Exception:  # noqa: BLE001 - the plain op takes no such input
            return False
    return any(inexact(v) for v in out) and all(
        np.all(np.isfinite(v)) for v in out if inexact(v))


def _batched_at(check, args, label, hvp, forward):
    """The batched comparison at ``args`` (the ``label`` point): the new
    point's ``RuleCheck``, or None when it is skipped."""
    if not _plain_takes(check, args):
        return None
    try:
        c = type(check)(check.op, args, check.kwargs,
                        check.f if check.f is not check.op else None, *check.tols,
                        check.rng, check.directions, "check_rule", list(check.idx))
        hvp, forward = one_direction_runs(c, hvp, forward)
        if forward is None:
            return None
        c.batched(hvp, forward)
    except CheckFailure as e:
        raise CheckFailure(f"at {label} inputs: {e}") from e
    except Exception as e:  # noqa: BLE001 - typed refusals pass, crashes fail
        if refusal(e):
            return None
        desc = describe(check.op, args, check.kwargs) + "\n  at inputs: " + summary(
            pytree.flatten(list(args))[0])
        raise CheckFailure(
            f"the plain call takes {label} inputs but differentiating there raised "
            f"{type(e).__name__}: {e}\n  in {desc}\n  (a rule that cannot "
            "differentiate there raises a typed chainrules.AutodiffError naming the op, "
            "the argument types and what to do)") from e
    return c


def one_direction_runs(c, hvp, forward):
    """Which sweeps of one direction run at ``c``'s point: ``(hvp,
    forward)`` narrowed to them, ``forward`` None when not even the reverse
    sweep does. They are the batched comparison's reference: a sweep a rule
    refuses with a typed error (``refusal``: no forward mode, no HVP at
    this point) is left out; any other exception propagates."""
    try:
        c.cotangent(0)
    except Exception as e:
        if refusal(e):
            return False, None
        raise
    if not forward:
        return False, False
    try:
        c.pushforward(0)
    except Exception as e:
        if refusal(e):
            return False, False
        raise
    if hvp:
        try:
            c._hvp_one(0)
        except Exception as e:
            if not refusal(e):
                raise
            hvp = False
    return hvp, True
