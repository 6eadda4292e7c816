"""The passes of a staged plan, spread over its first replays.

A plan's recorded steps run as they are at its first replay (the purity
check: the same calls as the recording, so the eager call they are
compared with is the recording's computation). Each later replay first
runs the next *stage* of the plan's passes on the steps, then replays the
result: the regions' passes (``jit``'s joins, batches, absorptions, chain
fusions and merges, in the order it gives them), then the base passes
(``plan_passes``: scalar buffers, constant folding, common subexpressions,
dead steps), then the kept arrays' analysis (``plan_buffers``). No call
pays all the passes of a long plan, and a signature called twice pays
none. Every stage gives a complete plan of the same results: a replay
between two stages runs NumPy on the arguments as the finished plan does
(fused regions compute as the eager fused sweeps do, within their bound).

``Stages.finished`` runs what is left at once (writing the plan's code,
looking at its steps). Threads replaying one plan share its stages: a
stage's result is installed only over the state it started from, so a
slower thread never undoes a later stage.
"""

import contextvars
import threading

from .plan_buffers import Kept
from .plan_passes import common_subexpressions, fold_constants, forward_scalar_buffers, \
    live_steps
from .staging import Ref

__all__ = ["Stages", "State", "PREPARING"]

_LOCK = threading.Lock()

#: whether the replay running is of a plan with stages left: its fused
#: regions' programs are not the ones its later replays run, so they run
#: as NumPy programs (``kernels`` neither times them nor compiles them)
PREPARING = contextvars.ContextVar("chainrules_preparing", default=False)


class State:
    """A plan's steps after ``done`` stages: ``inputs`` (value indices; the
    kept arrays' store last when ``kept``), ``outputs``, and the replay of
    these steps once made (``stepped``)."""

    __slots__ = ("steps", "inputs", "outputs", "done", "kept", "stepped")

    def __init__(self, steps, inputs, outputs, done, kept=None):
        self.steps = steps
        self.inputs = inputs
        self.outputs = outputs
        self.done = done
        self.kept = kept  # the plan's ``plan_buffers.Kept`` once it keeps arrays
        self.stepped = None


def _region_stage(fn):
    def stage(steps, inputs, outputs, kept):
        return fn(steps, outputs), inputs, outputs, kept
    return stage


def _base_stage(scalars):
    def stage(steps, inputs, outputs, kept):
        if scalars:
            steps = forward_scalar_buffers(steps, scalars)
        steps, outputs, reads = fold_constants(steps, outputs)
        steps, outputs, reads = common_subexpressions(steps, outputs, reads)
        steps = live_steps(steps, [o for o in outputs if type(o) is Ref], reads)
        return steps, inputs, outputs, kept
    return stage


def _kept_stage(finish):
    def stage(steps, inputs, outputs, kept):
        steps, store = finish(steps, inputs, outputs)
        if store is not None:
            inputs = inputs + [store]
            kept = Kept()
        return steps, inputs, outputs, kept
    return stage


class Stages:
    """The schedule of one plan's passes. ``regions``: functions
    ``(steps, outputs) -> steps``, one stage each, run first (or a function
    of no arguments giving them: made at the first stage, so that a
    signature called once does not make them); ``scalars``: the
    recording's scalar buffers (``forward_scalar_buffers``); ``finish(steps,
    inputs, outputs) -> (steps, store)``: the last stage (``store`` not
    None when the plan keeps arrays)."""

    __slots__ = ("state", "done", "_made", "_args")

    def __init__(self, steps, inputs, outputs, regions=(), scalars=None, finish=None):
        self._args = (regions, scalars, finish)
        self._made = None
        self.state = State(steps, inputs, outputs, 0)
        self.done = False  # (every stage run)

    @property
    def _stages(self):
        stages = self._made
        if stages is None:
            # (once: the region stages share what earlier ones found)
            with _LOCK:
                stages = self._made
                if stages is None:
                    regions, scalars, finish = self._args
                    if callable(regions):
                        regions = regions()
                    stages = [_region_stage(fn) for fn in regions]
                    stages.append(_base_stage(scalars))
                    if finish is not None:
                        stages.append(_kept_stage(finish))
                    self._made = stages
        return stages

    @property
    def left(self):
        """How many stages have not run."""
        return len(self._stages) - self.state.done

    def advance(self):
        """The state after one more stage (if any is left)."""
        state = self.state
        k = state.done
        stages = self._stages
        if k < len(stages):
            steps, inputs, outputs, kept = stages[k](
                state.steps, state.inputs, state.outputs, state.kept)
            new = State(steps, inputs, outputs, k + 1, kept)
            with _LOCK:
                if self.state is state:  # (else another thread ran it meanwhile)
                    self.state = new
                    if k + 1 == len(stages):
                        self.done = True
            state = self.state
        return state

    def finished(self):
        """The state after every stage."""
        while self.left > 0:
            self.advance()
        return self.state
