"""Elementwise programs run block by block, and by several threads.

A fused region's program (``fused_sweeps``) is elementwise, so its values
split along an axis into blocks that are independent. ``run(program,
env)`` cuts them so when it pays (``_split``), each block writing its part
of every result into one array made beforehand:

- Over large arrays, blocks of about ``BLOCK_BYTES`` per array keep the
  program's intermediates in a core's cache from one pass to the next;
  whole, every pass streams them through memory.
- NumPy's ufuncs use one core. With enough work, worker threads evaluate
  runs of consecutive blocks while the calling thread evaluates the first.
  NumPy releases the GIL inside its loops, so the blocks' passes run at
  once; only the Python step between two passes is serial.

Values of a chunked array type (dask) go to ``elementwise_chunks``: one
task per chunk, which runs the program here on the chunk's NumPy blocks.

How many threads: ``fusion(threads=n)`` in a context (thread, task), else
``CHAINRULES_NUM_THREADS``, else the first of ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` that is set (the count a
user gives BLAS, so that a run limited to one BLAS thread is limited here
too), else the cores this process may use. A program is split over
threads only when its passes are long enough to repay handing blocks over
(``MIN_WORK``) and costly enough not to be bound by memory bandwidth
(``MIN_COST``, which a second core does not add to), or run in blocks that
stay in cache. The workers are daemon threads of one pool shared by the
process (its only global state), started when first needed; the sweeps
never run BLAS while a program runs, so they do not compete with BLAS's
own threads.

A worker runs its block in a copy of the caller's context, so NumPy's
floating-point settings (``np.errstate``) are the caller's: an error
raised there (``"raise"``) is raised in the caller, and the messages that
chainrules re-issues at the user's line (``fp_warnings``) are collected and
re-issued by the caller, once each.
"""

import contextvars
import math
import operator
import os
import queue
import threading

import numpy as np

from . import elementwise_chunks
from .arrays import computes_eagerly
from .opaque import opaque_as

__all__ = ["run", "threads", "set_threads", "reset_threads"]

#: the least work a program's average pass must have for threads to pay:
#: elements times the pass's cost relative to a multiply (``_COST``). Each
#: pass of a block costs a hand-over of the GIL between the threads (about
#: 10 µs on a small virtual machine), and passes of cheap arithmetic over
#: large arrays are limited by memory bandwidth, which a second core does
#: not add to; measured with ``benchmarks/threaded_passes.py``
MIN_WORK = 200_000
#: the least mean cost of a program's passes: passes of cheap arithmetic
#: (a mean near 1) are limited by memory bandwidth at every size where the
#: hand-over is repaid, and measured no faster split (0.97 to 1.08 at 1e6)
MIN_COST = 1.5

#: the bytes per array of a block when a program runs block by block: its
#: intermediates then stay in a core's cache between passes instead of
#: streaming from memory. Measured one thread, float64, Rosenbrock and
#: softplus HVP programs (blocks of 32768 to 262144 elements against the
#: program whole): 1 MiB best, a program of 1e6 elements 0.68 to 0.98 of
#: its time whole, of 4e6 elements 0.57 to 0.82
BLOCK_BYTES = 1 << 20
#: the least bytes per array for a program to run block by block: each
#: block repeats the program's Python steps, which smaller values do not
#: repay (5e5 float64 elements: 0.95 to 1.3 of the time whole)
MIN_BLOCKED = 6_000_000
#: the least intermediate arrays a program makes for it to run block by
#: block: what stays in cache is those arrays (a Rosenbrock gradient's
#: program, two of them, measured 1.1 to 1.2 times slower blocked at 1e6
#: float64 elements; its HVP's, eight, 0.81)
MIN_BETWEEN = 3

#: the time of a pass relative to a multiply's (measured at 1e5 float64
#: elements); ufuncs not named cost ``_OTHER``
_COST = {"add": 1.0, "subtract": 1.0, "multiply": 1.0, "negative": 0.8, "positive": 0.8,
         "square": 0.7, "absolute": 0.7, "conjugate": 0.8, "maximum": 1.1, "minimum": 1.1,
         "fmax": 1.1, "fmin": 1.1, "greater": 1.0, "less": 1.0, "greater_equal": 1.0,
         "less_equal": 1.0, "equal": 1.0, "not_equal": 1.0, "logical_and": 1.0,
         "logical_or": 1.0, "logical_not": 1.0, "divide": 1.3, "true_divide": 1.3,
         "sign": 2.3, "reciprocal": 2.6, "sqrt": 4.5, "exp": 3.2, "log": 3.2,
         "log1p": 4.1, "expm1": 4.6, "cosh": 3.8, "sinh": 4.6, "arctan": 4.9,
         "tanh": 6.5, "sin": 36.0, "cos": 38.0, "power": 8.8}
_OTHER = 4.0
_costs = {}

_count = contextvars.ContextVar("chainrules_threads", default=None)
_default = None


def _from_environment():
    for var in ("CHAINRULES_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v:
            try:
                return max(1, int(v.split(",")[0]))
            except ValueError:
                continue
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - no affinity on this OS
        return max(1, os.cpu_count() or 1)


def threads():
    """How many threads a program may use in this context."""
    global _default
    n = _count.get()
    if n is None:
        if _default is None:
            _default = _from_environment()
        n = _default
    return n


def set_threads(n):
    """Set the count for this context; returns the token to reset it with."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"threads must be a positive int or None, not {n!r}")
    return _count.set(n)


def reset_threads(token):
    """Undo the ``set_threads`` that returned ``token``."""
    _count.reset(token)


# -- the pool ---------------------------------------------------------------------------
_jobs = queue.SimpleQueue()
_started = 0
_lock = threading.Lock()


def _worker():
    while True:
        ctx, fn, args, done = _jobs.get()
        try:
            done.put((True, ctx.run(fn, *args)))
        except BaseException as exc:  # handed to the caller, raised there
            done.put((False, exc))


def _forget_workers():
    """In a forked child: the parent's workers are not there."""
    global _started, _jobs, _lock
    _started, _jobs, _lock = 0, queue.SimpleQueue(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def _ensure(n):
    """At least ``n`` workers running."""
    global _started
    if _started >= n:
        return
    with _lock:
        while _started < n:
            threading.Thread(target=_worker, name=f"chainrules-elementwise-{_started}",
                             daemon=True).start()
            _started += 1


class _Collect:
    """An ``np.errstate(call=...)`` writer that keeps the messages."""

    __slots__ = ("messages",)

    def __init__(self):
        self.messages = []

    def write(self, message):
        self.messages.append(message)


def _blocks(program, envs, intos, collect):
    """Run ``program`` on each block in turn, each reusing the previous
    one's intermediates (a fresh allocation per block would be returned to
    the system and faulted in again); the first block's results."""
    if collect is not None:
        with np.errstate(call=collect):
            return _blocks(program, envs, intos, None)
    scratch = []
    first = program(envs[0], False, into=intos[0], scratch=scratch)
    for e, into in zip(envs[1:], intos[1:]):
        program(e, False, into=into, scratch=scratch)
    return first


# -- splitting ----------------------------------------------------------------------------
def _mean_cost(program):
    """The mean cost of ``program``'s passes relative to a multiply (cached)."""
    hit = _costs.get(id(program))
    if hit is None or hit[0] is not program:
        if len(_costs) > 4096:
            _costs.clear()
        steps = program.steps
        total = 0.0
        for _, fn, *_rest in steps:
            name = "where" if fn is None else "power" if fn is operator.pow else fn.__name__
            total += _COST.get(name, _OTHER)
        hit = _costs[id(program)] = (program, total / max(len(steps), 1))
    return hit[1]


def _passes_between(program, env):
    """How many of ``program``'s passes over arrays of ``env`` make an
    intermediate (an array only later passes read): what running it block
    by block keeps in cache. Steps on scalars alone (a uniform cotangent
    times a constant) are not passes."""
    outs = set(program.outs)
    arrays = set()
    for k, name, _ in program.variables:
        v = env.get(name)
        if type(v) is np.ndarray and v.ndim:
            arrays.add(k)
    count = 0
    for k, _, args, *_ in program.steps:
        if not arrays.isdisjoint(args):
            arrays.add(k)
            if k not in outs:
                count += 1
    return count


def _split(shape, n, cost, itemsize=8, between=0):
    """``(axis, [(lo, hi), ...], threads)``: the blocks of the broadcast
    ``shape`` and how many threads share them (each a run of consecutive
    blocks), or None to run the program whole on the calling thread.
    Threads: up to ``n`` when the passes repay handing blocks over
    (``MIN_WORK``) and are bound by the core rather than by memory
    (``MIN_COST``, or blocks in cache). Blocks of about ``BLOCK_BYTES`` per
    array when the values are of ``MIN_BLOCKED`` bytes or more and the
    program makes ``MIN_BETWEEN`` intermediate arrays or more (``between``),
    so that they stay in cache."""
    size = math.prod(shape)
    per = max(1, BLOCK_BYTES // itemsize)  # the elements of a cache block
    blocked = between >= MIN_BETWEEN and size * itemsize >= MIN_BLOCKED
    # blocks in cache make even cheap passes bound by the core, not memory
    threaded = n >= 2 and (cost >= MIN_COST or blocked) and size * cost >= MIN_WORK
    t = (n if MIN_WORK <= 0 else min(n, int(2 * size * cost // MIN_WORK))) if threaded else 1
    parts = max(t, -(-size // per)) if blocked else t
    if parts < 2:
        return None
    last = len(shape) - 1
    for axis, s in enumerate(shape):
        if s < 2 * t:  # no room for blocks of two or more per thread
            continue
        step = -(-s // parts)
        if blocked and axis < last and size // s * step > 2 * per:
            continue  # blocks along this axis too large for the cache: an inner one
        blocks = [(lo, min(lo + step, s)) for lo in range(0, s, step)]
        if len(blocks) < 2:
            return None
        return axis, blocks, min(t, len(blocks))
    return None


def _index(ndim, full_ndim, axis, lo, hi):
    """The index of block ``lo:hi`` along ``axis`` of the broadcast shape for
    a value of ``ndim`` dimensions (aligned to the right)."""
    a = axis - (full_ndim - ndim)
    return (slice(None),) * a + (slice(lo, hi),)


#: what a plan's replay calls for a region's program (``kernels.run``,
#: which compiles hot ones; installed when ``kernels`` is imported)
replay = None
#: ``chunk_runner()``: what each chunk of a chunked array runs a program
#: with, in this context's kernel mode (``kernels.chunk_runner``; None:
#: ``run``)
chunk_runner = None


def run(program, env, n=None, keep=None):
    """``program(env, False)``, block by block (by up to ``n`` threads,
    default ``threads()``) when every value is a NumPy value of the dtype
    its variable was built for and the data is large enough (``_split``).
    ``keep``: a plan's ``plan_buffers.Keep`` (a replay on NumPy arrays of
    those dtypes): the results it names go into the arrays it keeps, the
    intermediates of a whole run into its scratch list."""
    if n is None:
        n = threads()
    shapes = []
    for v in env.values():
        if type(v) is np.ndarray:
            shapes.append(v.shape)
        elif not isinstance(v, np.generic):  # dask and other arrays
            if computes_eagerly(v):
                # staged values (cr.jit): the whole program is one step of
                # the plan, run on the replay's arrays as here on NumPy's
                # (by a compiled kernel once hot: ``kernels`` installs it)
                return opaque_as(replay or run, run, program, env, n)
            out = elementwise_chunks.run(program, env,
                                         run if chunk_runner is None else chunk_runner())
            return program(env, False) if out is None else out
    if not shapes:
        return program(env, False)
    full = shapes[0] if all(s == shapes[0] for s in shapes) else np.broadcast_shapes(*shapes)
    size = math.prod(full)
    # (16: the widest itemsize) nothing to cut: too small to block, and to
    # thread (``_split``'s own test, on the program's cost at most)
    if keep is None and size * 16 < MIN_BLOCKED and (
            n < 2 or size * _mean_cost(program) < MIN_WORK):
        return program(env, False)
    # the results' buffers take the dtypes the expressions were built for:
    # only values of those dtypes (what NumPy would then compute) are split,
    # so that no result is cast into its buffer
    for _, name, dt in program.variables:
        if getattr(env.get(name), "dtype", None) != dt:
            return program(env, False)
    if size * 16 < MIN_BLOCKED and (n < 2 or size * _mean_cost(program) < MIN_WORK):
        return _whole(program, env, keep)
    itemsize = max([dt.itemsize for dt in program.dtypes if dt is not None]
                   + [dt.itemsize for _, _, dt in program.variables], default=8)
    between = _passes_between(program, env) if size * itemsize >= MIN_BLOCKED else 0
    split = _split(full, n, _mean_cost(program), itemsize, between)
    if split is None:
        return _whole(program, env, keep)
    axis, blocks, t = split
    nd, extent = len(full), full[axis]
    # the values along the axis: sliced per block; the rest (broadcast along
    # it, scalars) go whole to every block
    sliced = set()
    for name, v in env.items():
        if type(v) is np.ndarray:
            a = axis - (nd - v.ndim)
            if a >= 0 and v.shape[a] == extent:
                sliced.add(name)
    results = []
    for reads, kind, dtype in zip(program.reads, program.kinds, program.dtypes):
        if kind == "var":  # a value given: itself, whole
            results.append(env[reads[0]])
        elif kind == "step" and not sliced.isdisjoint(reads):
            shape = np.broadcast_shapes(*(np.shape(env[r]) for r in reads))
            results.append(np.empty(shape, dtype) if keep is None else
                           keep.empty(len(results), shape, dtype))
        else:  # the same in every block (a constant, or of whole values only)
            results.append(None)
    envs, intos = [], []
    for lo, hi in blocks:
        e = dict(env)
        for name in sliced:
            v = env[name]
            e[name] = v[_index(v.ndim, nd, axis, lo, hi)]
        envs.append(e)
        intos.append([None if r is None or kind == "var" else
                      r[_index(r.ndim, nd, axis, lo, hi)]
                      for r, kind in zip(results, program.kinds)])
    # thread j runs the j-th run of consecutive blocks; the caller the first
    cuts = [len(blocks) * j // t for j in range(t + 1)]
    redirect = _redirected()
    collect = _Collect() if redirect is not None else None
    done = queue.SimpleQueue()
    if t > 1:
        _ensure(t - 1)
    for j in range(1, t):
        lo, hi = cuts[j], cuts[j + 1]
        _jobs.put((contextvars.copy_context(), _blocks,
                   (program, envs[lo:hi], intos[lo:hi], collect), done))
    error = None
    try:
        first = _blocks(program, envs[:cuts[1]], intos[:cuts[1]], collect)
    except BaseException as exc:
        error, first = exc, None
    for _ in range(t - 1):
        ok, value = done.get()
        if not ok and error is None:
            error = value
    if collect is not None:
        seen = set()
        for message in collect.messages:
            if message not in seen:
                seen.add(message)
                redirect.write(message)
    if error is not None:
        raise error
    return [first[i] if r is None else r for i, r in enumerate(results)]


def _whole(program, env, keep):
    """``program(env, False)`` in one run; with ``keep``, its results that
    ``keep`` names into the arrays kept for them and its intermediates
    from ``keep``'s scratch list."""
    if keep is None or keep.fresh():
        return program(env, False)
    into = []
    for j, (reads, kind, dtype) in enumerate(zip(program.reads, program.kinds,
                                                  program.dtypes)):
        if kind == "step" and j in keep.private:
            shape = np.broadcast_shapes(*(np.shape(env[r]) for r in reads))
            into.append(keep.empty(j, shape, dtype))
        else:
            into.append(None)
    out = program(env, False, into=into, scratch=keep.scratch)
    keep.settle()
    return out


def _redirected():
    """The writer of the caller's ``np.errstate(call=...)`` when NumPy logs
    to one (the mode ``fp_warnings`` sets), else None."""
    call = np.geterrcall()
    if call is None or not hasattr(call, "write"):
        return None
    if "log" not in np.geterr().values():
        return None
    return call
