"""Closure capture: the traced values of enclosing differentiations that a
sub-computation uses without receiving them as arguments.

A checkpointed segment, or an ODE right-hand side, is a function that
chainrules runs again later (in the backward sweep, inside the solver) and
records as *one* operation. A value it closes over that is traced on an
enclosing tape (``W`` in ``lambda x: np.tanh(W @ x)`` while differentiating
with respect to ``W``) must become an input of that operation, or its
derivative would be lost. Nothing here reads bytecode, source, closures or
frames: the values are found by running the function.

While a ``Capture`` runs a function (``Capture.run``), every operation
reaching ``tracing.dispatch`` first lets it convert its arguments: a traced
value of an *enclosing* tape (one whose level is below the capture's
``bound``) is replaced by the value standing for it (``Capture.lift``),
remembered per node. The operators' fast paths leave for ``dispatch`` while
a capture runs (``tracing.set_capture_bound``), so ``np.tanh(W)`` on a
closed-over ``W`` alone is converted too. What a capture does with a value
met for the first time is its mode:

* ``LEAVES`` (a checkpointed segment's first run): a value of the tape
  whose values it captures (``outer``) becomes a leaf of the segment's own
  tape, and is remembered in ``captured``; values of lower tapes stay
  constants there, as usual; a value of a higher tape than ``outer`` means
  ``outer`` was too low (``rise``: the caller runs the segment again).
* ``PLAIN`` (``closure_convert``'s first run): any enclosing value is
  captured and replaced by its plain value.
* ``FIXED`` (re-runs): the values are known; an enclosing one not met
  before, at or above ``level``, is an error (the function used a value
  its first run did not).

Captures nest: a capture made inside another's run has it as ``parent``,
which converts a value first (a segment inside a segment sees the outer
segment's leaf for ``W``, not ``W``). A rule that re-runs its function later
keeps the capture in effect when it was recorded, as the parent of the
re-run's capture.
"""

import threading

from . import pytree
from .errors import UntraceableError
from .graph import Tape
from .tracing import CAPTURE, Traced, holds_traced, set_capture_bound, untraced

__all__ = ["Capture", "LEAVES", "PLAIN", "FIXED", "current", "converted", "closure_convert"]

LEAVES, PLAIN, FIXED = "leaves", "plain", "fixed"

# the bounds of the captures running in any thread; the fast paths divert
# operations on tapes below the highest one
_bounds = {}
_lock = threading.Lock()


def current():
    """The capture running in this context (innermost), or None."""
    return CAPTURE.get()


def converted(values):
    """``values`` (a list) with the traced values of enclosing tapes
    replaced by what the running capture lets stand for them: what an entry
    point that records a rule itself (``checkpoint``) does with its
    arguments, as ``dispatch`` does for an operation's."""
    cap = CAPTURE.get()
    return values if cap is None else list(cap._conv(values))


def next_level():
    """A level above every tape that exists now (tapes made later are higher)."""
    return Tape().level


class Capture:
    """Converts the traced values of enclosing tapes met by a function it runs.

    ``bound``: tapes below this level are enclosing. ``tape``: the
    sub-computation's own tape (``LEAVES`` mode makes its leaves there).
    ``outer``: the tape whose values ``LEAVES`` captures (None: the first
    enclosing tape met). ``level``: in ``FIXED`` mode, unknown values at or
    above it are refused. ``view``: applied to a captured value before it
    becomes a leaf. ``memo`` maps ``(level, node)`` of an enclosing value to
    the value standing for it."""

    __slots__ = ("bound", "tape", "outer", "level", "mode", "parent", "memo", "captured",
                 "view", "mark", "rise", "name", "unseen")

    def __init__(self, bound, mode=FIXED, parent=None, tape=None, outer=None, level=None,
                 view=None, name="the function", unseen=None):
        self.bound = bound
        self.mode = mode
        self.parent = parent
        self.tape = tape
        self.outer = outer
        self.level = outer.level if outer is not None else level
        self.view = view
        self.name = name
        # the end of the message for an unknown value in FIXED mode
        self.unseen = unseen or ("its first run did not use; chainrules runs it again, "
                                 "and it must use the same values each time")
        self.memo = {}
        self.captured = []
        self.rise = None
        # nodes of ``outer`` from this index on were made during the run, by
        # code the capture did not see (another thread): refused as inputs
        self.mark = len(outer) if outer is not None and mode is LEAVES else None

    def bind(self, v, stand_in):
        """Let ``stand_in`` stand for the enclosing traced value ``v``
        (first binding wins); returns ``stand_in``."""
        self.memo.setdefault((v.tape.level, v.node), stand_in)
        return stand_in

    # -- running -----------------------------------------------------------------
    def run(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` under this capture, with its result's
        leaves converted too (a value returned unchanged is used as well).
        Afterwards the capture only converts the values it knows."""
        token = CAPTURE.set(self)
        _enter(self.bound)
        try:
            out = fn(*args, **kwargs)
            leaves, td = pytree.flatten(out)
            conv = [self._conv(o) for o in leaves]
            if any(c is not o for c, o in zip(conv, leaves)):
                out = pytree.unflatten(td, conv)
            return out
        finally:
            _exit(self.bound)
            CAPTURE.reset(token)
            if self.mode is LEAVES:
                self.mode = FIXED

    def convert(self, args, kwargs):
        """An operation's arguments with enclosing traced values converted."""
        args = self._conv(args)
        if kwargs:
            kwargs = {k: self._conv(v) for k, v in kwargs.items()}
        return args, kwargs

    def _conv(self, x):
        tx = type(x)
        if tx is Traced:
            return self.lift(x) if x.tape.level < self.bound else x
        if tx is tuple or tx is list:
            new = [self._conv(b) for b in x]
            if all(n is b for n, b in zip(new, x)):
                return x
            return tx(new)
        return x

    # -- one value ---------------------------------------------------------------
    def lift(self, v):
        """The value standing for ``v``, a traced value of an enclosing tape."""
        fresh_ok = False
        p = self.parent
        if p is not None and v.tape.level < p.bound:
            w = p.lift(v)
            if w is not v:  # the parent's stand-in, a value of its own run
                if type(w) is not Traced or w.tape.level >= self.bound:
                    return w
                v, fresh_ok = w, True
        got = self.memo.get((v.tape.level, v.node))
        if got is not None:
            return got
        return self._miss(v, fresh_ok)

    def _miss(self, v, fresh_ok):
        tape = v.tape
        if self.mode is PLAIN:
            self.captured.append(v)
            return self.bind(v, untraced(v))
        if self.mode is LEAVES and tape.active:
            if self.outer is None:
                self.outer, self.level = tape, tape.level
            elif tape.level > self.level:
                if self.rise is None or tape.level > self.rise.level:
                    self.rise = tape
                return v
            if tape is not self.outer:
                return v  # a lower tape's value: a constant here, as usual
            if self.mark is not None and not fresh_ok and v.node >= self.mark:
                raise UntraceableError(
                    f"{self.name} uses a value being differentiated that was computed "
                    "while it ran, where chainrules cannot see it (in another thread, "
                    "for example); compute it inside the function, or before it runs")
            value = v.value if self.view is None else self.view(v.value)
            self.captured.append(v)
            return self.bind(v, Traced(value, self.tape.leaf(value), self.tape))
        if self.mode is FIXED and self.level is not None and tape.level >= self.level:
            raise UntraceableError(f"{self.name} used a value being differentiated (a "
                                   f"closure or a global) that {self.unseen}")
        return v


def _enter(bound):
    with _lock:
        _bounds[bound] = _bounds.get(bound, 0) + 1
        set_capture_bound(max(_bounds))


def _exit(bound):
    with _lock:
        n = _bounds[bound] - 1
        if n:
            _bounds[bound] = n
        else:
            del _bounds[bound]
        set_capture_bound(max(_bounds, default=0))


def closure_convert(fn, *example_args, name=None, unseen=None):
    """``(converted, captured)``: the traced values of enclosing
    differentiations that ``fn`` uses without receiving them (found by
    running ``fn(*example_args)`` once on plain values), and a function
    ``converted(*args, *values)`` that runs ``fn(*args)`` with ``values``
    standing for them, one each, in the order of ``captured``.

    This is how a rule that evaluates a user's function on values of its
    own (an ODE solver's right-hand side, on plain arrays and on a ``vjp``'s
    traced ones) makes the closed-over values explicit inputs, so that it
    can differentiate them like its arguments. A later call that meets an
    enclosing traced value the first run did not raises ``UntraceableError``
    (``name`` and ``unseen`` word its message), as does a result that is
    traced on an enclosing tape in spite of the conversion.
    """
    name = name or getattr(fn, "__qualname__", None) or repr(fn)
    unseen = unseen or "it did not use when it was first run"
    parent = current()
    bound = next_level()
    cap = Capture(bound, PLAIN, parent, name=name)
    _check_result(cap.run(fn, *untraced(list(example_args))), bound, name, unseen)
    captured = list(cap.captured)
    keys = [(c.tape.level, c.node) for c in captured]
    n = len(keys)

    def converted(*args):
        # arguments traced on enclosing tapes (a rule's pullback, differentiated
        # again by an outer differentiation, calls fn on its traced inputs):
        # fn computes on those tapes, up to the highest one, legitimately
        floor = 1 + max((lv for a in pytree.flatten(list(args))[0] for lv in _levels(a)
                         if lv < bound), default=-1)
        if not n:  # nothing to stand in for: only the result is checked
            return _check_result(fn(*args), bound, name, unseen, floor)
        sub = Capture(bound, FIXED, parent, level=floor, name=name, unseen=unseen)
        sub.memo.update(zip(keys, args[len(args) - n:]))
        return _check_result(sub.run(fn, *args[:len(args) - n]), bound, name, unseen, floor)

    converted.__name__ = getattr(fn, "__name__", "converted")
    converted.__qualname__ = name
    return converted, captured


def _levels(x):
    """The levels of the tapes ``x`` is traced on (a traced value of one tape
    may hold one of a lower tape)."""
    while type(x) is Traced:
        yield x.tape.level
        x = x.value


def _check_result(out, bound, name, unseen, floor=0):
    """``out``, refused if it is traced on an enclosing tape (at or above
    ``floor``, the tapes of the arguments being below it): it depends on a
    value being differentiated that was not converted, and a rule computing
    with it would drop that derivative or fail deep inside NumPy."""
    if holds_traced(out) or not pytree.is_leaf(out):
        for o in pytree.flatten(out)[0]:
            if type(o) is Traced and floor <= o.tape.level < bound:
                raise UntraceableError(
                    f"{name} returned a result that depends on a value being "
                    f"differentiated (a closure or a global) that {unseen}, or that "
                    "chainrules could not follow (computed in another thread)")
    return out
