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
``CHAINRULES_KERNELS`` (``0`` turns kernels off, ``always`` compiles every
region at its first replay) and to whether numba imports. The compiled kernels and the per-region timings are global to the
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


_MODES = {True: "auto", False: "off", "auto": "auto", "off": "off", "always": "always"}


def mode():
    """How hot regions of plans are compiled in this context: ``"auto"``
    (when they have repaid a compile and measure faster), ``"off"``, or
    ``"always"`` (at their first replay, kept whatever their speed: for
    tests of the kernels themselves)."""
    m = _switch.get()
    return _from_environment() if m is None else m


def set_mode(m):
    """Set the mode for this context (True, False, "auto", "off", "always",
    or None for the default); returns the token to reset it with."""
    if m is not None and (not isinstance(m, (bool, str)) or m not in _MODES):
        raise ValueError(f"kernels must be True, False, 'auto', 'off', 'always' or None, "
                         f"not {m!r}")
    return _switch.set(None if m is None else _MODES[m])


def reset_mode(token):
    _switch.reset(token)


# -- generating a kernel ----------------------------------------------------------------
_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "greater": ">",
          "greater_equal": ">=", "less": "<", "less_equal": "<=", "equal": "==",
          "not_equal": "!=", "bitwise_and": "&", "bitwise_or": "|"}
_CALLS = frozenset("""sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin
    arccos arctan sinh cosh tanh arcsinh arccosh arctanh floor ceil trunc rint isfinite
    isnan isinf copysign arctan2 hypot power""".split())
_FORMS = {
    "negative": "(-{0})", "positive": "(+{0})", "conjugate": "{0}", "absolute": "abs({0})",
    "fabs": "abs({0})", "square": "({0} * {0})", "reciprocal": "(1 / {0})",
    "logical_not": "({0} == 0)", "logical_and": "(({0} != 0) & ({1} != 0))",
    "logical_or": "(({0} != 0) | ({1} != 0))",
    # NumPy's: a NaN argument wins in maximum and minimum, loses in fmax, fmin
    "maximum": "({0} if ({0} > {1} or {0} != {0}) else {1})",
    "minimum": "({0} if ({0} < {1} or {0} != {0}) else {1})",
    "fmax": "({0} if ({0} > {1} or {1} != {1}) else {1})",
    "fmin": "({0} if ({0} < {1} or {1} != {1}) else {1})",
    "sign": "(1 if {0} > 0 else (-1 if {0} < 0 else (0 if {0} == 0 else {0})))",
    "where": "({1} if ({0} != 0) else {2})",
}
#: ndarray ** constant as NumPy computes it (its fast paths)
_POWERS = {2: "({0} * {0})", 0.5: "np.sqrt({0})", -1: "(1 / {0})", 1: "(+{0})"}


#: per operation, the argument positions at which a value that is not finite
#: always gives a result that is not finite (inf - inf, 0 * inf and inf / inf
#: are NaN; sqrt(-inf) and log(-inf) are NaN): a kernel need not test such
#: an argument for NaN and infinity when it tests the result
_CARRIES = {"add": (0, 1), "subtract": (0, 1), "multiply": (0, 1), "divide": (0,),
            "negative": (0,), "positive": (0,), "conjugate": (0,), "absolute": (0,),
            "fabs": (0,), "square": (0,), "sqrt": (0,), "cbrt": (0,), "log": (0,),
            "log2": (0,), "log10": (0,), "log1p": (0,), "sinh": (0,), "cosh": (0,)}
_CARRYING_POWERS = (2.0, 1.0, 0.5)  # x * x, +x, sqrt(x)


def _carried(e):
    """The arguments of node ``e`` whose being NaN or infinite makes ``e``'s
    value NaN or infinite."""
    op, args = e.op, e.args
    if op == "**":
        ex = args[1]
        if ex.op == "const" and not isinstance(ex.value, (complex, np.complexfloating)) \
                and float(ex.value) in _CARRYING_POWERS:
            positions = (0,)
        else:
            return ()
    else:
        positions = _CARRIES.get(op, ())
    loop = e.loop if len(e.loop) == len(args) else (None,) * len(args)
    return [args[p] for p in positions if loop[p] is None or loop[p].kind == "f"]


class NotCompilable(Exception):
    """A program a kernel cannot express (complex values, an operation
    without a form here)."""


def _cast_name(dt):
    if dt.kind not in "biuf" or dt == np.float16:
        raise NotCompilable(f"values of {dt}")
    return "_b" if dt.kind == "b" else f"_{dt.kind}{dt.itemsize}"


def _literal(v):
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (complex, np.complexfloating)):
        raise NotCompilable("a complex constant")
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    f = float(v)
    if f != f:
        return "np.nan"
    if f in (np.inf, -np.inf):
        return "np.inf" if f > 0 else "(-np.inf)"
    return repr(f)


def _arg(node, name, loop_dt):
    """The text of argument ``node`` (named ``name`` when not a constant)
    cast to the dtype ``loop_dt`` its operation's loop reads."""
    if node.op == "const":
        text = _literal(node.value)
        if loop_dt is None or loop_dt.kind == "b":
            return text
        return f"{_cast_name(loop_dt)}({text})"
    if loop_dt is None or node.dtype == loop_dt:
        return name
    if loop_dt.kind == "b":
        return f"({name} != 0)"
    return f"{_cast_name(loop_dt)}({name})"


def _expression(node, names):
    op, args = node.op, node.args
    loop = node.loop if len(node.loop) == len(args) else (None,) * len(args)
    texts = [_arg(a, names.get(id(a)), dt) for a, dt in zip(args, loop)]
    if op in ("**", "power", "float_power") and node.dtype.kind in "iu":
        # (NumPy raises for a negative integer exponent; a loop would not)
        raise NotCompilable("an integer power")
    if op == "**":
        base, ex = args
        if ex.op == "const" and not isinstance(ex.value, (complex, np.complexfloating)) \
                and float(ex.value) in _POWERS:
            return _POWERS[float(ex.value)].format(texts[0])
        return f"np.power({texts[0]}, {texts[1]})"
    if op == "float_power":
        return f"np.power({texts[0]}, {texts[1]})"
    if op in _INFIX:
        return f"({texts[0]} {_INFIX[op]} {texts[1]})"
    if op in _FORMS:
        return _FORMS[op].format(*texts)
    if op in _CALLS:
        return f"np.{op}({', '.join(texts)})"
    if op == "invert":
        return f"({texts[0]} == 0)" if node.dtype.kind == "b" else f"(~{texts[0]})"
    raise NotCompilable(f"the operation {op}")


def kernel_source(program, pattern, ndim=1, scatter=None):
    """The Python source of ``program``'s kernel (a function ``kernel(lo,
    hi, *inputs, *outputs)`` returning whether a NaN or infinity was made)
    for inputs given as ``pattern``: per variable, ``"a"`` an array of the
    full shape or ``"s"`` one scalar. The arrays have ``ndim`` dimensions
    (one: a flat run of elements; more: strided arrays, ``lo:hi`` along the
    first axis). ``scatter`` (a ``kernel_scatter.Scatter``, one dimension):
    two of the results summed into one array at neighbouring offsets, the
    kernel then taking ``prev`` after ``hi`` and that array last, and
    returning ``(bad, prev)``. Raises ``NotCompilable``."""
    nodes = program.nodes
    names, params, loads = {}, [], []
    index = "i" if ndim == 1 else ", ".join(f"i{d}" for d in range(ndim))
    for (k, _, dt), kind in zip(program.variables, pattern):
        _cast_name(dt)
        names[id(nodes[k])] = f"v{k}"
        if kind == "a":
            params.append(f"a{k}")
            loads.append(f"v{k} = a{k}[{index}]")
        else:
            params.append(f"v{k}")
    if "a" not in pattern:
        raise NotCompilable("no array of the region's shape")
    body, checks = [], []
    # a NaN or infinity made by a step reaches a result through the steps
    # that carry it (``_carried``): only the values that no step carries
    # (and the results) are tested, so the test costs less than the loop
    carried = {id(a) for k, *_ in program.steps for a in _carried(nodes[k])}
    results = {k for j, k in enumerate(program.outs) if program.kinds[j] == "step"}
    for k, fn, args, dying, dt, special in program.steps:
        e = nodes[k]
        name = names[id(e)] = f"t{k}"
        _cast_name(dt)
        text = _expression(e, names)
        # (a bool result stays a bool: True + True is True in NumPy's loop,
        # 2 in Python's)
        body.append(f"{name} = {_cast_name(dt)}({text})" if dt.kind != "b" else
                    f"{name} = (({text}) != 0)")
        if dt.kind == "f" and (k in results or id(e) not in carried):
            checks.append(f"(({name} - {name}) != 0)")
    outs, stores = [], []
    skip = () if scatter is None else (scatter.a, scatter.b)
    for j, k in enumerate(program.outs):
        if program.kinds[j] == "step" and f"o{k}" not in outs and j not in skip:
            outs.append(f"o{k}")
            stores.append(f"o{k}[{index}] = t{k}")
    # (the blocks sliced first, the loop from 0, the flag or-ed without a
    # branch: so LLVM vectorizes the loop; ``for i in range(lo, hi)`` with a
    # branch on the flag measured 5x slower)
    head, ret = "", "bad"
    if scatter is not None:
        if ndim != 1:
            raise NotCompilable("a scatter of more than one dimension")
        stores += scatter.stores(program)
        head, ret = "prev, ", "bad, prev"
        outs.append("d")
    slices = [f"{p} = {p}[lo:hi]" for p in params if p.startswith("a")] + [
        f"{o} = {o}[lo:hi]" for o in outs]
    check = [f"bad |= {' | '.join(checks)}"] if checks else []
    lines = ["import numpy as np", "from numba import njit", "",
             "_b = np.bool_",
             *(f"_{c}{s} = np.{t}{8 * s}" for c, t in (("f", "float"), ("i", "int"),
                                                      ("u", "uint"))
               for s in (1, 2, 4, 8) if not (c == "f" and s == 1)), "", "",
             "@njit(nogil=True, cache=CACHE, error_model='numpy')",
             f"def kernel(lo, hi, {head}{', '.join(params + outs)}):",
             *(f"    {line}" for line in slices),
             "    bad = False",
             *_loops(ndim, next(p for p in params if p.startswith("a")),
                     loads + body + stores + check),
             f"    return {ret}", ""]
    return "\n".join(lines)


def _loops(ndim, first, body):
    """The loop nest over ``ndim`` axes (the extents of array ``first``)."""
    if ndim == 1:
        return ["    for i in range(hi - lo):", *(f"        {line}" for line in body)]
    lines = ["    for i0 in range(hi - lo):"]
    for d in range(1, ndim):
        lines.append(f"{'    ' * (d + 1)}for i{d} in range({first}.shape[{d}]):")
    return lines + [f"{'    ' * (ndim + 1)}{line}" for line in body]


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


def _call(region, inputs, n):
    """The kernel on ``inputs``: the program's results, or None when it made
    a NaN or an infinity (the NumPy program then runs)."""
    program, layout = region.program, region.layout
    arrays = [v for v, kind in zip(inputs, region.pattern) if kind == "a"]
    flat = _flat(arrays, layout)
    it = iter(flat)
    args = [next(it) if kind == "a" else v for v, kind in zip(inputs, region.pattern)]
    order = "F" if layout == "F" else "C"
    made, outs = {}, []
    skip = () if region.scatter is None else (region.scatter.a, region.scatter.b)
    for j, k in enumerate(program.outs):
        if program.kinds[j] == "step" and k not in made and j not in skip:
            made[k] = np.empty(region.shape, program.dtypes[j], order=order)
            outs.append(made[k] if layout == "N" else made[k].reshape(-1, order=order))
    size = flat[0].shape[0]  # (N-d: blocks along the first axis)
    per = flat[0].size // max(size, 1)
    kernel = region.kernel
    work = size * per * region.cost
    t = 1 if n < 2 or work < MIN_WORK or size < 2 else min(n, size) if MIN_WORK <= 0 \
        else min(n, size, int(work // MIN_WORK))
    if region.scatter is not None:
        d = region.scatter.call(kernel, size, t, args, outs)
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
            res.append(d if j == skip[0] else None)
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
        arrays = _flat([v[:1] for v, kind in zip(inputs, region.pattern) if kind == "a"],
                       region.layout)
        it = iter(arrays)
        args = [next(it) if kind == "a" else v for v, kind in zip(inputs, region.pattern)]
        shape = (1,) + region.shape[1:] if region.layout == "N" else (1,)
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
    return len(region.shape) if region.layout == "N" else 1


def _step_out_dtypes(program, scatter=None):
    seen, dts = set(), []
    skip = () if scatter is None else (scatter.a, scatter.b)
    for j, k in enumerate(program.outs):
        if program.kinds[j] == "step" and k not in seen and j not in skip:
            seen.add(k)
            dts.append(program.dtypes[j])
    return dts


def run(program, env, n, scatter=None):
    """``elementwise_threads.run(program, env, n)``, by a compiled kernel
    once the region is hot (a plan's replay calls this). ``scatter``: a
    ``kernel_scatter.Scatter``, whose NumPy path (``scatter.numpy``) is the
    program's then."""
    numpy_run = et.run if scatter is None else scatter.numpy
    m = mode()
    if m == "off" or _numba is False:
        return numpy_run(program, env, n)
    found = _classify(program, env)
    if found is None or (scatter is not None and not scatter.fits(program, found[1])):
        return numpy_run(program, env, n)
    pattern, full, inputs, layout = found
    key = (id(program), pattern, full, layout, scatter)
    region = _regions.get(key)
    if region is None or region.program is not program:
        if len(_regions) > 4096:
            _regions.clear()
        region = _regions[key] = _Region(program, pattern, full, layout, scatter)
    kernel = region.kernel
    if kernel is False or np.geterr()["under"] != "ignore":
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
            if region.source is None:
                try:
                    region.source = kernel_source(program, pattern, _ndim(region),
                                                  scatter)
                except NotCompilable as exc:
                    region.kernel, region.reason = False, f"not expressible: {exc}"
                    return out
            if region.cached is None:  # (a hash and a folder listing: once per region)
                region.cached = is_cached(region.source)
            need = (CACHED_SECONDS if region.cached else COMPILE_SECONDS) + (
                0.0 if _ready else INIT_SECONDS)
            if region.numpy_seconds >= need:
                with region.lock:
                    if region.kernel is None:
                        _compile(region, inputs)
        return out
    if len(region.probes) < PROBE_CALLS:
        t0 = time.perf_counter()
        out = _call(region, inputs, n)
        region.probes.append(time.perf_counter() - t0)
        if len(region.probes) == PROBE_CALLS:
            region.kernel_seconds = sorted(region.probes)[PROBE_CALLS // 2]
            # (the NumPy program's recent calls: its first ones run cold)
            base = sorted(region.recent)[len(region.recent) // 2]
            if base < MIN_GAIN * region.kernel_seconds:
                region.kernel, region.reason = False, (
                    f"slower than NumPy: {region.kernel_seconds * 1e6:.0f} µs against "
                    f"{base * 1e6:.0f} µs")
    else:
        out = _call(region, inputs, n)
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


et.replay = run
et.chunk_runner = chunk_runner
