"""Compiled kernels for hot plans: a fused region's program as one loop.

A fused region (``fused_sweeps``) evaluates its derivative program
(``elementwise_expr.Program``) with NumPy, one pass over memory per
operation, each with its temporary array. In a staged plan (``cr.jit``) the
program is one step, replayed many times on arrays of the same shapes. When
numba is installed (the optional extra ``chainrules[numba]``), such a step
becomes *hot* once the time spent in it has repaid a compile
(``COMPILE_SECONDS``, or ``CACHED_SECONDS`` when the kernel is on disk
already, plus ``INIT_SECONDS`` for a process's first): the program is then written as one loop over the elements
(``kernel_source``), every operation on registers, every result written
once, and compiled with numba. After a few timed calls the kernel is kept
only if it beats the NumPy program (``MIN_GAIN``); otherwise the region runs
with NumPy as before. Large regions run over blocks of elements on the
threads of ``elementwise_threads`` (the compiled loop releases the GIL).

Exact by construction where it can be: each operation is computed in the
dtypes NumPy's loop for it uses (``Expr.loop``; weak Python constants cast
as NumPy casts them), ``+ - * /`` and ``sqrt`` round as NumPy's do, no
``fastmath`` (no reassociation, no fused multiply-add), and ``x ** 2``,
``x ** 0.5``, ``x ** -1`` as NumPy's fast paths compute them. Transcendental
functions come from the compiler's math library rather than NumPy's own, and
may differ in the last bits (``tests/core/test_kernels.py`` states the
bound). A kernel runs only where it means the same as the program: real
float, integer and bool values of the dtypes the program was built for, each
either of the region's full shape or one element broadcast (a 0-d value, a
NumPy scalar, a uniform cotangent); any other call runs the NumPy program.
A kernel also reports whether any operation made a NaN or an infinity; the
call then runs the NumPy program again, which raises or warns exactly as
NumPy does (``np.errstate``, ``fp_warnings``), so a kernel never changes
which warnings a user sees. Under a floating-point mode that traps underflow
the NumPy program runs.

State: the mode is per context (``fusion(kernels=...)``), defaulting to
``CHAINRULES_KERNELS`` (read at the process's first replay: ``0`` turns
kernels off, ``always`` compiles every region at its first replay) and to
whether numba imports. Until a program is hot, its calls are timed and
nothing else (``_Warm``): the inputs are looked at when the time spent
would repay a compile, and a program whose kernel lost to NumPy, or that
no kernel can express, runs NumPy from then on. The compiled kernels and the per-region timings are global to the
process (the same code serves every context; ``stats()`` shows them). The
generated sources, and numba's compiled code beside them, are cached on
disk (``cache_dir()``): a second process loads them instead of compiling.
``clear_cache()`` empties that folder.
"""

import contextvars
import os
import queue
import threading
import time

import numpy as np

from . import elementwise_threads as et
from .kernel_cache import cache_dir, clear_cache, is_cached, module as _module
from .kernel_source import NotCompilable, kernel_source
from .plan_buffers import Keep
from .plan_stages import PREPARING

__all__ = ["run", "available", "mode", "set_mode", "reset_mode", "cache_dir",
           "clear_cache", "stats", "kernel_source"]

#: what compiling a kernel is taken to cost (measured with
#: ``benchmarks/kernels.py``, 2 cores): a new kernel 0.15 to 0.45 s, one
#: whose compiled code numba cached on disk 5 to 10 ms, and the first kernel
#: of a process another 0.7 s or more (numba's import and set-up). A region
#: is compiled once the NumPy program has spent that long in it.
COMPILE_SECONDS = 0.3
CACHED_SECONDS = 0.01
INIT_SECONDS = 0.7
#: calls of a region before it may be compiled, whatever its time
MIN_CALLS = 4
#: a kernel is kept when the NumPy program's mean time is at least this many
#: times the kernel's (median of ``PROBE_CALLS`` timed calls)
MIN_GAIN = 1.15
PROBE_CALLS = 3
#: the least elements times summed operation costs for a kernel to be split
#: over threads (a hand-over costs about 10 to 20 µs on a small machine, and
#: a compiled loop runs about ten times as fast as the NumPy program the
#: same figure is counted for). Measured on 2 idle cores, a Rosenbrock HVP
#: region (cost 15.7): 1e5 elements 70 µs on one thread against 135 on two,
#: 3e5 170 against 182, 1e6 586 against 391
MIN_WORK = 5_000_000

_switch = contextvars.ContextVar("chainrules_kernels", default=None)
_numba = None  # None: not looked for yet; False: not importable
_ready = False  # whether a kernel has been compiled in this process (numba set up)
_lock = threading.Lock()


# -- the switch ---------------------------------------------------------------------------
def available():
    """Whether numba imports (looked for once, at the first compile)."""
    global _numba
    if _numba is None:
        try:
            import numba
        except Exception:  # noqa: BLE001 - missing, or broken against this NumPy
            _numba = False
        else:
            _numba = numba
    return _numba is not False


def _from_environment():
    v = os.environ.get("CHAINRULES_KERNELS", "").strip().lower()
    return "off" if v in ("0", "off", "false", "no") else "always" if v == "always" else "auto"


_ENV_MODE = None  # CHAINRULES_KERNELS, read once, at the first replay of the process


def _env_mode():
    global _ENV_MODE
    _ENV_MODE = _from_environment()
    return _ENV_MODE


_MODES = {True: "auto", False: "off", "auto": "auto", "off": "off", "always": "always"}


def mode():
    """How hot regions of plans are compiled in this context: ``"auto"``
    (when they have repaid a compile and measure faster), ``"off"``, or
    ``"always"`` (at their first replay, kept whatever their speed: for
    tests of the kernels themselves)."""
    m = _switch.get()
    return (_ENV_MODE or _env_mode()) if m is None else m


def set_mode(m):
    """Set the mode for this context (True, False, "auto", "off", "always",
    or None for the default); returns the token to reset it with."""
    if m is not None and (not isinstance(m, (bool, str)) or m not in _MODES):
        raise ValueError(f"kernels must be True, False, 'auto', 'off', 'always' or None, "
                         f"not {m!r}")
    return _switch.set(None if m is None else _MODES[m])


def reset_mode(token):
    _switch.reset(token)


class _Region:
    """One program on inputs of one pattern and full shape: its timings and
    its kernel (None: not compiled yet; False: NumPy from now on)."""

    __slots__ = ("program", "pattern", "shape", "layout", "calls", "numpy_seconds",
                 "kernel", "source", "probes", "reason", "kernel_seconds", "cost", "lock",
                 "runs", "recent", "scatter", "cached")

    def __init__(self, program, pattern, shape, layout="C", scatter=None):
        self.program, self.pattern, self.shape, self.layout = program, pattern, shape, layout
        self.scatter = scatter
        self.cached = None  # whether numba's code for the source is on disk (looked once)
        self.recent = []  # the NumPy program's last few times (the probes' baseline)
        self.calls, self.numpy_seconds = 0, 0.0
        self.runs = 0  # the calls a kernel answered
        self.kernel, self.source, self.reason = None, None, None
        self.probes = []
        self.kernel_seconds = None
        self.cost = sum(et._COST.get("where" if fn is None else getattr(fn, "__name__", ""),
                                     et._OTHER) for _, fn, *_ in program.steps)
        self.lock = threading.Lock()


_regions = {}


def _classify(program, env):
    """``(pattern, full shape, inputs)`` of a call a kernel can take, else None."""
    full = None
    for _, name, dt in program.variables:
        v = env.get(name)
        if type(v) is np.ndarray and v.ndim:
            if full is None or v.shape == full:
                full = v.shape
            else:
                try:
                    full = np.broadcast_shapes(full, v.shape)
                except ValueError:
                    return None
    if full is None or 0 in full:
        return None
    pattern, inputs = [], []
    for _, name, dt in program.variables:
        v = env.get(name)
        if type(v) is np.ndarray:
            if v.dtype != dt:
                return None
            if v.shape == full and any(v.strides):
                pattern.append("a")
                inputs.append(v)
            elif v.size == 1 or not any(v.strides):  # one value, broadcast
                pattern.append("s")
                inputs.append(v.reshape(-1)[0])
            else:
                return None
        elif isinstance(v, np.generic) and v.dtype == dt:
            pattern.append("s")
            inputs.append(v)
        else:
            return None
    arrays = [v for v, kind in zip(inputs, pattern) if kind == "a"]
    if not arrays:
        return None
    # one run of elements in one order for every array (or strided, N-d)
    layout = ("C" if len(full) == 1 or all(a.flags.c_contiguous for a in arrays) else
              "F" if all(a.flags.f_contiguous for a in arrays) else "N")
    return tuple(pattern), full, inputs, layout


def _flat(arrays, layout):
    """The arrays as the kernel takes them: 1-d runs in ``layout``'s order
    (``"C"``, ``"F"``), or as they are (``"N"``: strided)."""
    if layout == "N" or arrays[0].ndim == 1:
        return arrays
    return [a.reshape(-1, order=layout) for a in arrays]


def _layout(region):
    """How the kernel takes its arrays: a scatter over more than one
    dimension (``kernel_grid``) takes them as they are."""
    scatter = region.scatter
    return "N" if scatter is not None and scatter.ndim > 1 else region.layout


def _call(region, inputs, n, env, keep=None):
    """The kernel on ``inputs``: the program's results, or None when it made
    a NaN or an infinity (the NumPy program then runs)."""
    program, layout = region.program, _layout(region)
    arrays = [v for v, kind in zip(inputs, region.pattern) if kind == "a"]
    flat = _flat(arrays, layout)
    it = iter(flat)
    args = [next(it) if kind == "a" else v for v, kind in zip(inputs, region.pattern)]
    order = "F" if layout == "F" else "C"
    made, outs = {}, []
    skip = () if region.scatter is None else region.scatter.skip
    for j, k in enumerate(program.outs):
        if program.kinds[j] == "step" and k not in made and j not in skip:
            made[k] = (np.empty(region.shape, program.dtypes[j], order=order) if keep is None
                       else keep.empty(j, region.shape, program.dtypes[j], order))
            outs.append(made[k] if layout == "N" else made[k].reshape(-1, order=order))
    size = flat[0].shape[0]  # (N-d: blocks along the first axis)
    per = flat[0].size // max(size, 1)
    kernel = region.kernel
    work = size * per * region.cost
    t = 1 if n < 2 or work < MIN_WORK or size < 2 else min(n, size) if MIN_WORK <= 0 \
        else min(n, size, int(work // MIN_WORK))
    if region.scatter is not None:
        d = region.scatter.call(kernel, size, t, args, outs, env)
        if d is None:
            return None
    elif t < 2:
        if kernel(0, size, *args, *outs):
            return None
    elif _threaded(kernel, size, t, args + outs):
        return None
    res = []
    for j, k in enumerate(program.outs):
        kind = program.kinds[j]
        if region.scatter is not None and j in skip:
            res.append(d if j == skip[0] and region.scatter.gives else None)
        elif kind == "step":
            res.append(made[k])
        elif kind == "var":  # the value given (``run`` puts it in)
            res.append(None)
        else:
            res.append(program.consts[k])
    return res


def _threaded(kernel, size, t, args):
    cuts = [size * j // t for j in range(t + 1)]
    return any(on_threads(kernel, [(cuts[j], cuts[j + 1], *args) for j in range(t)]))


def on_threads(fn, calls):
    """``[fn(*a) for a in calls]``, the first call on this thread and the
    others on ``elementwise_threads``' workers (the compiled loops release
    the GIL), in this context."""
    done = queue.SimpleQueue()
    et._ensure(len(calls) - 1)
    for j in range(1, len(calls)):
        et._jobs.put((contextvars.copy_context(), _indexed, (fn, j, calls[j]), done))
    results, error = [None] * len(calls), None
    try:
        results[0] = fn(*calls[0])
    except BaseException as exc:  # pragma: no cover - a kernel raises nothing
        error = exc
    for _ in range(len(calls) - 1):
        ok, value = done.get()
        if not ok:
            error = error or value
        else:
            results[value[0]] = value[1]
    if error is not None:
        raise error
    return results


def _indexed(fn, j, args):
    return j, fn(*args)


def _compile(region, inputs):
    """Make ``region.kernel`` (False with a reason when it cannot be)."""
    if not available():
        region.kernel, region.reason = False, "numba is not installed"
        return
    source = region.source
    if source is None:
        try:
            source = region.source = kernel_source(region.program, region.pattern,
                                                   _ndim(region), region.scatter)
        except NotCompilable as exc:
            region.kernel, region.reason = False, f"not expressible: {exc}"
            return
    try:
        kernel, _ = _module(source)
        # the first call compiles for the argument types of the calls to
        # come: on no element
        layout = _layout(region)
        arrays = _flat([v[:1] for v, kind in zip(inputs, region.pattern) if kind == "a"],
                       layout)
        it = iter(arrays)
        args = [next(it) if kind == "a" else v for v, kind in zip(inputs, region.pattern)]
        shape = (1,) + region.shape[1:] if layout == "N" else (1,)
        outs = [np.empty(shape, dt) for dt in _step_out_dtypes(region.program,
                                                               region.scatter)]
        if region.scatter is None:
            kernel(0, 0, *args, *outs)
        else:
            region.scatter.warm(kernel, args, outs)
    except Exception as exc:  # noqa: BLE001 - a compiler's refusal: NumPy runs it
        region.kernel, region.reason = False, f"{type(exc).__name__}: {exc}"[:300]
        return
    region.kernel = kernel
    global _ready
    _ready = True


def _ndim(region):
    return len(region.shape) if _layout(region) == "N" else 1


def _step_out_dtypes(program, scatter=None):
    seen, dts = set(), []
    skip = () if scatter is None else scatter.skip
    for j, k in enumerate(program.outs):
        if program.kinds[j] == "step" and k not in seen and j not in skip:
            seen.add(k)
            dts.append(program.dtypes[j])
    return dts


class _Warm:
    """A program's calls before it is hot: the NumPy program timed, and
    nothing else looked at (a call costs two clock reads). ``state``:
    ``"cold"``, ``"hot"`` (its regions are tracked by pattern and shape,
    ``_Region``) or ``"off"`` (NumPy from now on: its kernel lost to NumPy,
    or the program cannot be one)."""

    __slots__ = ("program", "state", "calls", "seconds", "recent", "need")

    def __init__(self, program):
        self.program, self.state = program, "cold"
        self.calls, self.seconds, self.recent = 0, 0.0, []
        # the time after which it is looked at again: a kernel on disk
        # already costs a load, a new one a compile (known once looked at)
        self.need = CACHED_SECONDS


_warm = {}


def run(program, env, n, scatter=None, kept=None):
    """``elementwise_threads.run(program, env, n)``, by a compiled kernel
    once the region is hot (a plan's replay calls this). ``scatter``: a
    ``kernel_scatter.Scatter``, whose NumPy path (``scatter.numpy``) is the
    program's then. ``kept``: ``(store, step, private)``, the arrays a
    plan keeps between replays for the results at positions ``private``
    (``plan_buffers``; no store: none)."""
    keep = None if kept is None or kept[0] is None else Keep(*kept)
    if keep is not None:
        def numpy_run(program, env, n):
            if scatter is None:
                return et.run(program, env, n, keep)
            return scatter.numpy(program, env, n, keep)
    else:
        numpy_run = et.run if scatter is None else scatter.numpy
    m = _switch.get()
    if m is None:
        m = _ENV_MODE or _env_mode()
    if m == "off" or _numba is False or PREPARING.get():
        # (a plan with pass stages left: its programs are not yet its own)
        return numpy_run(program, env, n)
    if m == "auto":
        key = (id(program), scatter)
        w = _warm.get(key)
        if w is None or w.program is not program:
            if len(_warm) > 4096:
                _warm.clear()
            w = _warm[key] = _Warm(program)
        state = w.state
        if state == "off":
            return numpy_run(program, env, n)
        if state == "cold":
            t0 = time.perf_counter()
            out = numpy_run(program, env, n)
            spent = time.perf_counter() - t0
            w.calls += 1
            w.seconds += spent
            if len(w.recent) < PROBE_CALLS:
                w.recent.append(spent)
            else:
                w.recent = w.recent[1:] + [spent]
            if w.calls >= MIN_CALLS and w.seconds >= w.need:
                _heat(w, program, env, scatter)
            return out
    return _run_regions(program, env, n, scatter, numpy_run, m, keep)


def _heat(w, program, env, scatter):
    """A cold program that has spent ``w.need`` in NumPy: its region for
    this call's inputs, compiled once the time repays it (else a longer
    wait), or "off" when no kernel can take these inputs."""
    found = _classify(program, env)
    if found is None or (scatter is not None and not scatter.fits(program, found[1])):
        w.state = "off"
        return
    pattern, full, inputs, layout = found
    region = _region(program, pattern, full, layout, scatter)
    region.calls, region.numpy_seconds, region.recent = w.calls, w.seconds, list(w.recent)
    if region.source is None:
        try:
            region.source = kernel_source(program, pattern, _ndim(region), scatter)
        except NotCompilable as exc:
            region.kernel, region.reason = False, f"not expressible: {exc}"
            w.state = "off"
            return
    if region.cached is None:  # (a hash and a folder listing: once per region)
        region.cached = is_cached(region.source)
    need = (CACHED_SECONDS if region.cached else COMPILE_SECONDS) + (
        0.0 if _ready else INIT_SECONDS)
    if w.seconds < need:
        w.need = need
        return
    with region.lock:
        if region.kernel is None:
            _compile(region, inputs)
    w.state = "off" if region.kernel is False else "hot"


def _region(program, pattern, full, layout, scatter):
    key = (id(program), pattern, full, layout, scatter)
    region = _regions.get(key)
    if region is None or region.program is not program:
        if len(_regions) > 4096:
            _regions.clear()
        region = _regions[key] = _Region(program, pattern, full, layout, scatter)
    return region


def _run_regions(program, env, n, scatter, numpy_run, m, keep=None):
    """``run`` for a hot program, or any program in the "always" mode: by
    the region of the call's inputs."""
    found = _classify(program, env)
    if found is None or (scatter is not None and not scatter.fits(program, found[1])):
        return numpy_run(program, env, n)
    pattern, full, inputs, layout = found
    region = _region(program, pattern, full, layout, scatter)
    kernel = region.kernel
    if kernel is False:
        return numpy_run(program, env, n)
    if kernel is None:
        t0 = time.perf_counter()
        out = numpy_run(program, env, n)
        spent = time.perf_counter() - t0
        region.numpy_seconds += spent
        region.calls += 1
        region.recent = region.recent[-(PROBE_CALLS - 1):] + [spent]
        if m == "always":
            with region.lock:
                if region.kernel is None:
                    _compile(region, inputs)
                    region.probes = [0.0] * PROBE_CALLS  # kept, whatever its speed
        elif region.calls >= MIN_CALLS and region.numpy_seconds >= CACHED_SECONDS:
            # (a hot program's inputs of another pattern or shape)
            if region.source is None:
                try:
                    region.source = kernel_source(program, pattern, _ndim(region),
                                                  scatter)
                except NotCompilable as exc:
                    region.kernel, region.reason = False, f"not expressible: {exc}"
                    return out
            if region.cached is None:
                region.cached = is_cached(region.source)
            need = (CACHED_SECONDS if region.cached else COMPILE_SECONDS) + (
                0.0 if _ready else INIT_SECONDS)
            if region.numpy_seconds >= need:
                with region.lock:
                    if region.kernel is None:
                        _compile(region, inputs)
        return out
    if np.geterr()["under"] != "ignore":
        return numpy_run(program, env, n)
    if len(region.probes) < PROBE_CALLS:
        t0 = time.perf_counter()
        out = _call(region, inputs, n, env, keep)
        region.probes.append(time.perf_counter() - t0)
        if len(region.probes) == PROBE_CALLS:
            region.kernel_seconds = sorted(region.probes)[PROBE_CALLS // 2]
            # (the NumPy program's recent calls: its first ones run cold)
            base = sorted(region.recent)[len(region.recent) // 2]
            if base < MIN_GAIN * region.kernel_seconds:
                region.kernel, region.reason = False, (
                    f"slower than NumPy: {region.kernel_seconds * 1e6:.0f} µs against "
                    f"{base * 1e6:.0f} µs")
                if m == "auto":
                    w = _warm.get((id(program), scatter))
                    if w is not None and w.program is program:
                        w.state = "off"
    else:
        out = _call(region, inputs, n, env, keep)
    if out is None:  # a NaN or infinity was made: NumPy's own warnings and values
        return numpy_run(program, env, n)
    region.runs += 1
    for j, kind in enumerate(program.kinds):
        if kind == "var":
            out[j] = env[program.reads[j][0]]
    return out


class _InMode:
    """``run`` in the kernel mode of the context that made it: the chunks of
    a chunked array (dask) run on the scheduler's threads, which do not
    carry that context. Pickles (a distributed scheduler)."""

    __slots__ = ("mode",)

    def __init__(self, mode):
        self.mode = mode

    def __getstate__(self):
        return self.mode

    def __setstate__(self, state):
        self.mode = state

    def __call__(self, program, env, n):
        token = _switch.set(self.mode)
        try:
            return run(program, env, n)
        finally:
            _switch.reset(token)


def chunk_runner():
    """What each chunk of a chunked array runs a region's program with: the
    NumPy program when kernels are off here, else ``run`` in this mode (a
    hot program compiled, as in plans)."""
    m = mode()
    return et.run if m == "off" or _numba is False else _InMode(m)


def stats():
    """Per region seen by plans: its size, calls, NumPy and kernel times,
    and whether it runs compiled (with the reason when it does not)."""
    rows = []
    for region in list(_regions.values()):
        rows.append({
            "steps": len(region.program.steps), "shape": region.shape,
            "layout": region.layout,
            "pattern": "".join(region.pattern), "calls": region.calls,
            "numpy_us": (region.numpy_seconds / region.calls * 1e6 if region.calls
                         else None),
            "kernel_us": (None if region.kernel_seconds is None
                          else region.kernel_seconds * 1e6),
            "compiled": bool(region.kernel), "kernel_calls": region.runs,
            "reason": region.reason})
    return rows


def _forget():
    """Drop the per-region state (tests)."""
    _regions.clear()
    _warm.clear()


et.replay = run
et.chunk_runner = chunk_runner
