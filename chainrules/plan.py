"""Staged plans: the steps a ``Recorder`` kept, as straight-line Python code.

``Plan(rec, inputs, outputs)`` removes the steps nothing reads (a step
made for its effect, a write into a staged array, and every guard stay),
and writes its code: each call step a line ``v7 = k3(v2, k4)`` whose
``k`` names are the recorded callables and constants (held by reference),
each guard a comparison that raises ``GuardFailed`` when the value differs
from the one recorded, in functions of a few lines each that end calling
the next with the values it reads (compiled one per replay: no call pays
the whole compile). Running it runs NumPy on the arguments and nothing of
the function that was recorded.
"""

import bisect
import builtins
import math
import operator
import os

import numpy as np

from .fp_warnings import eager_on_warning

from .plan_passes import (_FRESH, _OPERATOR_FNS, _defines, _is_scalar, _key,  # noqa: F401
                          _reads, _rename, _uses, common_subexpressions, fold_constants,
                          forward_scalar_buffers, live_steps)
from .plan_stages import PREPARING, Stages
from .pytree import LEAF, unflatten
from .staging import Ref, _constant

__all__ = ["Plan", "GuardFailed"]

_HERE = os.path.dirname(os.path.abspath(__file__))


class GuardFailed(Exception):
    """A guard of a plan saw another value than at recording (internal)."""

    def __init__(self, index, line):
        super().__init__(index, line)
        self.index = index
        self.line = line


def _same(a, b):
    # a guard's comparison: NaN equals NaN, values of other types are unequal
    try:
        if a == b:
            return True
        return a != a and b != b
    except Exception:  # noqa: BLE001 - arrays from tolist() of odd types
        return False


def _copy_out(a):
    return a.copy()


_NAMES = {operator.getitem: "getitem", operator.setitem: "setitem"}


def _fn_name(fn):
    n = _NAMES.get(fn)
    if n is not None:
        return n
    name = getattr(fn, "__name__", None) or type(fn).__name__
    mod = getattr(fn, "__module__", None)
    if isinstance(fn, np.ufunc):
        return f"np.{name}"
    self = getattr(fn, "__self__", None)
    if isinstance(self, np.ufunc):
        return f"np.{self.__name__}.{name}"
    if mod and mod.startswith("numpy"):
        return f"np.{name}"
    return name


class _Writer:
    """The source of a plan's function and the names it binds."""

    def __init__(self):
        self.ns = {"GuardFailed": GuardFailed, "_same": _same, "_copy_out": _copy_out,
                   "_index": operator.index}
        self.lines = []
        self.notes = []
        self.ids = {}
        self.at = 0  # the step being written
        self.read = {}  # per value, the last step that reads it
        self.made = {}  # per value, the step that binds it

    def const(self, obj, hint="k"):
        key = id(obj)
        name = self.ids.get(key)
        if name is None:
            name = f"{hint}{len(self.ids)}"
            self.ids[key] = name
            self.ns[name] = obj
        return name

    def expr(self, tpl):
        """Python source for an argument template."""
        t = type(tpl)
        if t is Ref:
            self.read[tpl.i] = self.at
            return f"v{tpl.i}"
        if tpl is None or t is bool:
            return repr(tpl)
        if t is int:
            return repr(tpl)
        if t is str:
            return repr(tpl)
        if t is tuple:
            inner = ", ".join(self.expr(x) for x in tpl)
            return f"({inner},)" if len(tpl) == 1 else f"({inner})"
        if t is list:
            return "[" + ", ".join(self.expr(x) for x in tpl) + "]"
        if t is dict and all(type(k) is str for k in tpl):
            return "{" + ", ".join(f"{k!r}: {self.expr(v)}" for k, v in tpl.items()) + "}"
        if t is slice and all(type(p) in (int, type(None)) for p in (tpl.start, tpl.stop,
                                                                       tpl.step)):
            return f"slice({tpl.start!r}, {tpl.stop!r}, {tpl.step!r})"
        return self.const(tpl)

    def bind(self, out, src, depth=0):
        """Lines binding the staged values of an output template."""
        if type(out) is Ref:
            self.made[out.i] = self.at
            self.lines.append(f"    v{out.i} = {src}")
            return
        tmp = f"_t{depth}"
        self.lines.append(f"    {tmp} = {src}")
        for j, o in enumerate(out):
            if o is not None:
                self.bind(o, f"{tmp}[{j}]", depth + 1)


def _tree_source(td, rets, w):
    """Source that builds the result's pytree from the leaves' sources."""
    if td is LEAF:
        return next(rets)
    literal = td.node_type in (tuple, list) or td.node_type is dict and all(
        type(k) in (str, int) for k in td.keys)
    kids = [_tree_source(c, rets, w) for c in td.children] if literal else []
    if td.node_type is tuple:
        return f"({', '.join(kids)},)" if len(kids) == 1 else f"({', '.join(kids)})"
    if td.node_type is list:
        return f"[{', '.join(kids)}]"
    if td.node_type is dict and all(type(k) in (str, int) for k in td.keys):
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(td.keys, kids)) + "}"
    # namedtuples, dataclasses, dict subclasses: pytree's own rebuild, of
    # the subtree's leaves
    leaves = [next(rets) for _ in range(_num_leaves(td))]
    return f"{w.const(unflatten, 'f')}({w.const(td, 'k')}, [{', '.join(leaves)}])"


def _num_leaves(td):
    return 1 if td is LEAF else sum(_num_leaves(c) for c in td.children)


_GUARD_VALUE = {"float": float, "complex": complex, "item": lambda v: v.item(),
                "tolist": lambda v: v.tolist(), "value": lambda v: v}

# the forms of a replayed step
_UNARY, _BINARY, _BINARY_RC, _BINARY_CR, _CALL, _GUARD = range(6)


def _fresh(tpl):
    """Whether an argument template must be built again at each call (it
    holds staged values, or a list or dict the callee might change)."""
    t = type(tpl)
    if t is Ref or t is list or t is dict:
        return True
    if t is tuple:
        return any(_fresh(x) for x in tpl)
    return False


def _fill(tpl, env):
    t = type(tpl)
    if t is Ref:
        return env[tpl.i]
    if t is tuple or t is list:
        return t(_fill(x, env) for x in tpl)
    if t is dict:
        return {k: _fill(v, env) for k, v in tpl.items()}
    return tpl


def _bind(out, value, env):
    if type(out) is Ref:
        env[out.i] = value
        return
    for j, o in enumerate(out):
        if o is not None:
            _bind(o, value[j], env)


_CONTAINERS = frozenset((tuple, list, dict))


def _lower_call(fn, a, k, out):
    """One call step as the 5-tuple ``(form, fn, x, y, out)`` that
    ``_Replay.run`` reads."""
    if not k and type(out) is Ref:
        n = len(a)
        if n == 1:
            if type(a[0]) is Ref:
                return (_UNARY, fn, a[0].i, None, out.i)
        elif n == 2:
            x, y = a
            tx, ty = type(x), type(y)
            if tx is Ref:
                if ty is Ref:
                    return (_BINARY, fn, x.i, y.i, out.i)
                if ty not in _CONTAINERS:
                    return (_BINARY_RC, fn, x.i, y, out.i)
            elif ty is Ref and tx not in _CONTAINERS:
                return (_BINARY_CR, fn, x, y.i, out.i)
    refs, built = [], []
    for p, x in enumerate(a):
        tx = type(x)
        if tx is Ref:
            refs.append((p, x.i))
        elif tx in _CONTAINERS and _fresh(x):
            built.append((p, x))
    krefs, kbuilt = [], []
    for key, x in k.items():
        tx = type(x)
        if tx is Ref:
            krefs.append((key, x.i))
        elif tx in _CONTAINERS and _fresh(x):
            kbuilt.append((key, x))
    return (_CALL, fn, (a, tuple(refs), tuple(built), dict(k), tuple(krefs),
                        tuple(kbuilt)), None, out)


class _Replay:
    """A plan's steps run as data: each step a tuple of its function, where
    its arguments come from (the values computed so far, or constants) and
    where its result goes. The same calls on the same values in the same
    order as the plan's code, without writing and compiling the code: a
    plan's first replays (the purity check, a function called a few times)
    run this way."""

    __slots__ = ("ops", "inputs", "outputs", "out_tree", "size")

    def __init__(self, steps, inputs, outputs, out_tree):
        ops = []
        g = 0
        size = max(inputs, default=-1)
        for step in steps:
            if step[0] == "guard":
                _, kind, ref, expected, line = step
                ops.append((_GUARD, None, ref.i, (kind, expected, g, line), None))
                size = max(size, ref.i)
                g += 1
                continue
            _, fn, a, k, out = step[:5]
            if len(step) > 5:  # a Python operator on NumPy scalars
                fn = _OPERATOR_FNS[step[5]]
            ops.append(_lower_call(fn, a, k, out))
            if type(out) is Ref:
                if out.i > size:
                    size = out.i
            elif out is not None:
                made = set()
                _defines(out, made)
                size = max(size, max(made, default=-1))
        self.ops = ops
        self.inputs = inputs
        self.size = size + 1
        self.outputs = [("r", o.i) if type(o) is Ref else
                        ("a", o) if type(o) is np.ndarray else ("c", o) for o in outputs]
        self.out_tree = out_tree

    def run(self, dynamic):
        env = [None] * self.size
        for i, v in zip(self.inputs, dynamic):
            env[i] = v
        for form, fn, x, y, o in self.ops:
            if form == _BINARY:
                env[o] = fn(env[x], env[y])
            elif form == _UNARY:
                env[o] = fn(env[x])
            elif form == _BINARY_RC:
                env[o] = fn(env[x], y)
            elif form == _BINARY_CR:
                env[o] = fn(x, env[y])
            elif form == _CALL:
                base, refs, built, kbase, krefs, kbuilt = x
                a = list(base)
                for p, i in refs:
                    a[p] = env[i]
                for p, t in built:
                    a[p] = _fill(t, env)
                if kbase:
                    kw = dict(kbase)
                    for key, i in krefs:
                        kw[key] = env[i]
                    for key, t in kbuilt:
                        kw[key] = _fill(t, env)
                    r = fn(*a, **kw)
                else:
                    r = fn(*a)
                if o is not None:
                    _bind(o, r, env)
            else:
                _check_guard(y, env[x])
        leaves = [env[v] if how == "r" else v.copy() if how == "a" else v
                  for how, v in self.outputs]
        return unflatten(self.out_tree, leaves)


def _check_guard(guard, v):
    """What the plan's code checks for a guard: raise ``GuardFailed`` when
    the value differs from the recorded one."""
    kind, expected, g, line = guard
    if kind == "bool":
        ok = (not v) is not expected
    elif kind == "int":
        ok = not int(v) != expected
    elif kind == "index":
        ok = not operator.index(v) != expected
    elif kind == "shape":
        ok = not v.shape != expected
    else:
        ok = _same(_GUARD_VALUE[kind](v), expected)
    if not ok:
        raise GuardFailed(g, line)


#: a plan's first replays run its steps through ``_Replay`` (no code to
#: write and compile); the last of ``COMPILE_AFTER`` of them also writes
#: the code's source, the next ones compile it, a segment each (no one
#: call pays both, nor the whole compile), and later replays run that.
#: Compiling a plan
#: (writing its source, ``compile``) costs about as much as 30 to 70
#: replays' extra time in ``_Replay`` (0.2 to 0.3 us per step, 6 to 15 us
#: per line to compile): a function called fewer times never pays it
#: (``benchmarks/first_call.py``)
COMPILE_AFTER = 32

#: compiled plan code by source text: plans of one structure (a function
#: staged again, signatures whose plans read alike) compile once
_CODE = {}
_CODE_SIZE = 512


def clear_code_cache():
    """Forget the compiled code of plans (kept by source text)."""
    _CODE.clear()


def _compiled(source, name):
    code = _CODE.get(source)
    if code is None:
        # a file name inside the package: the plan's frames are the
        # library's (user_code.is_internal), so that NumPy's floating-point
        # warnings of a replay under an enclosing transformation are
        # re-issued at the caller's line
        code = compile(source, os.path.join(_HERE, f"<plan {name}>"), "exec")
        if len(_CODE) >= _CODE_SIZE:
            _CODE.pop(next(iter(_CODE)))
        _CODE[source] = code
    return code


class Plan:
    """A recorded function as generated code. ``source``: the code;
    ``steps``: one line per step, for reading; ``guards``: how many.

    Its first ``COMPILE_AFTER`` replays run the steps as data (``_Replay``:
    the same calls on the same values, in the same order), the last of
    them writes the code; the next ones compile it, a segment each
    (``segments``), and from then on the code runs."""

    def __init__(self, steps, inputs, outputs, out_tree, name="plan", scalars=None,
                 prepare=(), finish=None):
        self.recorded_steps = len(steps)
        # the passes run a stage per replay from the second on
        # (``plan_stages``): a signature called once pays its recording
        # only, and its first replay (the purity check) replays the
        # recorded steps. ``prepare``: functions ``(steps, outputs) ->
        # steps``, run first (the regions' passes, ``jit``; or a function
        # of no arguments giving them);
        # ``finish(steps, inputs, outputs) -> (steps, store)`` last,
        # ``store`` the value given the replay's kept arrays
        # (``plan_buffers``), or None
        self._stages = Stages(steps, inputs, outputs, prepare, scalars, finish)
        self._name = name
        self.out_tree = out_tree
        self.checked = False
        self._written = None  # (source, namespace, segments) once written
        self._fn = None  # the compiled function
        self._compiled = 0  # how many of the code's segments are compiled
        self._replays = 0
        # (a bound method of one wrapper: no wrapper made per plan)
        self.run = self._stepped_runs

    @property
    def _parts(self):
        """``(steps, inputs, outputs, name)`` after every pass (the stages
        left run now)."""
        state = self._stages.finished()
        return state.steps, state.inputs, state.outputs, self._name

    @property
    def _kept(self):
        return self._stages.state.kept

    def prepare(self):
        """Run every stage of the plan's passes left now (its replays run
        one per call after the check); the plan then replays as its code
        will."""
        self._stages.finished()

    @property
    def num_steps(self):
        return len(self._parts[0])

    @property
    def guard_lines(self):
        return [s[4] for s in self._parts[0] if s[0] == "guard"]

    @property
    def guards(self):
        return len(self.guard_lines)

    def _first_runs(self, *dynamic):
        n = self._replays = self._replays + 1
        if n > COMPILE_AFTER:
            # one segment of the code compiled per call (no call pays the
            # whole compile); the code runs once the last one is
            if self._compile_next():
                return self._fn(*dynamic)
            return self._replay(dynamic)
        out = self._replay(dynamic, n > 1)
        if n == COMPILE_AFTER:
            self._write()  # (after the replay: a replay that raises writes nothing)
        return out

    _stepped_runs = eager_on_warning(_first_runs)

    def _replay(self, dynamic, advance=False):
        """Run the steps as data (``_Replay``), after the next stage of the
        passes if ``advance``."""
        stages = self._stages
        if stages.done:
            return self._stepped_run(stages.state, dynamic)
        state = stages.advance() if advance else stages.state
        if stages.done:
            return self._stepped_run(state, dynamic)
        token = PREPARING.set(True)  # (regions as NumPy programs: not the final ones)
        try:
            return self._stepped_run(state, dynamic)
        finally:
            PREPARING.reset(token)

    def _stepped_run(self, state, dynamic):
        stepped = state.stepped
        if stepped is None:
            stepped = state.stepped = _Replay(state.steps, state.inputs, state.outputs,
                                              self.out_tree)
        kept = state.kept
        if kept is None:
            return stepped.run(dynamic)
        store = kept.acquire()
        try:
            return stepped.run(dynamic + (store,))
        finally:
            if store is not None:
                store.busy = False

    def compile(self):
        """Write and compile the plan's code now (replays run it from now on)."""
        while self._fn is None:
            self._compile_next()

    def _compile_next(self):
        """Compile the next segment of the plan's code (``_write_source``);
        once the last one is, replays run the code. Whether they do."""
        if self._fn is not None:
            return True
        _, ns, segments = self._write()
        k = self._compiled
        if k < len(segments):
            exec(_compiled(segments[k][1], self._parts[3]), ns)
            self._compiled = k = k + 1
        if k < len(segments):
            return False
        fn = ns[segments[0][0]]
        if self._kept is not None:  # (the code takes the store after the inputs)
            fn = self._kept.wrap(fn)
        self.run = eager_on_warning(fn)
        self._fn = fn
        return True

    @property
    def source(self):
        return self._write()[0]

    @property
    def namespace(self):
        return self._write()[1]

    @property
    def segments(self):
        """How many functions the plan's code is written as (one compiled
        per call, ``SEGMENT_LINES`` lines each)."""
        return len(self._write()[2])

    def _write(self):
        if self._written is None:
            self._written = _write_source(*self._parts, self.out_tree)
        return self._written

    def __call__(self, *dynamic):
        return self.run(*dynamic)

    def __str__(self):
        source, namespace, _ = self._write()
        consts = []
        for name, obj in namespace.items():
            if name[0] in "kg" and name[1:].isdigit():
                r = repr(obj)
                consts.append(f"# {name} = {r if len(r) < 60 else r[:57] + '...'}")
            elif name[0] == "f" and name[1:].isdigit():
                consts.append(f"# {name} = {_fn_name(obj)}")
        return "\n".join(consts + [source])

    __repr__ = __str__


def _index_source(w, index):
    """Python source for a subscript's index: slices as ``a:b:c``."""
    t = type(index)
    if t is slice and all(type(p) is int or p is None
                          for p in (index.start, index.stop, index.step)):
        text = ("" if index.start is None else repr(index.start)) + ":" + (
            "" if index.stop is None else repr(index.stop))
        return text if index.step is None else f"{text}:{index.step!r}"
    if t is tuple and index:
        text = ", ".join(_index_source(w, x) for x in index)
        return text + "," if len(index) == 1 else text
    return w.expr(index)


def _write_source(steps, inputs, outputs, name, out_tree):
    """``(source, namespace, segments)`` of a plan's function: its steps
    in ``segments``, ``(function name, source)`` each, of at most
    ``SEGMENT_LINES`` lines (a step's lines are never split), each a
    function that ends calling the next with the values still read (the
    last returns the result); ``source`` is theirs, one after another."""
    w = _Writer()
    starts = []  # per step, its first line
    g = 0
    for k, step in enumerate(steps):
        starts.append(len(w.lines))
        w.at = k
        if step[0] == "guard":
            _, kind, ref, expected, line = step
            v = w.expr(ref)
            fail = f"raise GuardFailed({g}, {line!r})"
            g += 1
            if kind == "bool":
                cond = f"not {v}" if expected else f"{v}"
            elif kind in ("int", "index"):
                conv = "int" if kind == "int" else "_index"
                cond = f"{conv}({v}) != {expected!r}"
            elif kind == "shape":
                cond = f"{v}.shape != {expected!r}"
            else:
                conv = {"float": "float", "complex": "complex", "item": "",
                        "tolist": "", "value": ""}[kind]
                src = f"{v}.item()" if kind == "item" else (
                    f"{v}.tolist()" if kind == "tolist" else f"{conv}({v})" if conv else v)
                cond = f"not _same({src}, {w.const(expected, 'g')})"
            w.lines.append(f"    if {cond}: {fail}")
            continue
        _, fn, a, k, out = step[:5]
        if len(step) > 5:  # a Python operator on NumPy scalars
            if len(a) == 1:
                w.bind(out, step[5].format(w.expr(a[0])))
            elif step[5] == "**":  # (binds tighter than a literal's minus sign)
                w.bind(out, f"({w.expr(a[0])}) ** ({w.expr(a[1])})")
            else:
                w.bind(out, f"{w.expr(a[0])} {step[5]} {w.expr(a[1])}")
            continue
        if fn is operator.getitem and len(a) == 2 and not k and out is not None:
            # subscripts: what operator.getitem and setitem do, without a call
            w.bind(out, f"{w.expr(a[0])}[{_index_source(w, a[1])}]")
            continue
        if fn is operator.setitem and len(a) == 3 and not k and out is None:
            w.lines.append(f"    {w.expr(a[0])}[{_index_source(w, a[1])}] = {w.expr(a[2])}")
            continue
        if fn is _constant and len(a) == 1 and not k and out is not None:
            w.bind(out, w.expr(a[0]))
            continue
        f = w.const(fn, "f")
        parts = [w.expr(x) for x in a]
        if k:
            if all(type(key) is str and key.isidentifier() for key in k):
                parts += [f"{key}={w.expr(val)}" for key, val in k.items()]
            else:  # pragma: no cover - NumPy's keywords are identifiers
                parts.append(f"**{w.expr(k)}")
        call = f"{f}({', '.join(parts)})"
        if out is None:
            w.lines.append(f"    {call}")
        else:
            w.bind(out, call)
    rets = []
    w.at = len(steps)
    for o in outputs:
        if type(o) is Ref:
            rets.append(w.expr(o))
        elif type(o) is np.ndarray:
            # a constant result is copied: the caller may write into it
            rets.append(f"_copy_out({w.const(o)})")
        else:
            rets.append(w.expr(o))
    ret = f"    return {_tree_source(out_tree, iter(rets), w)}"
    return _segmented(w, starts, inputs, name, ret)


#: the fewest lines of one segment of a plan's code: compiling a line
#: costs 5 to 12 us, about a replayed step's NumPy calls (``compile`` of a
#: plan's segment costs about an eager call); a segment's call to the
#: next passes its live values, 0.1 to 0.2 us with a few, and the more
#: the longer the plan (the staged LSTM's 6,300 lines in 8-line segments
#: passed about 600 values at each of 626 calls, 11 ms of a 76 ms replay).
#: A plan of ``n`` lines is cut into segments of ``max(SEGMENT_LINES,
#: isqrt(n))`` lines: the compile a call pays grows as the square root of
#: the plan, its replay as the plan
SEGMENT_LINES = 8


def _segment_size(n):
    return max(SEGMENT_LINES, math.isqrt(n))


def _segmented(w, starts, inputs, name, ret):
    """``_write_source``'s result: the lines of ``w`` (step ``k``'s from
    ``starts[k]``) cut into segments."""
    lines = w.lines
    # (as many segments as ``_segment_size`` needs, of even lengths)
    most = _segment_size(len(lines))
    size = -(-len(lines) // max(1, -(-len(lines) // most)))
    cuts = [0]  # the first step of each segment
    first = 0
    for k, start in enumerate(starts):
        if start - first >= size and k > cuts[-1]:
            cuts.append(k)
            first = start
    # the values each segment gives the next: made before the cut, read at
    # or after it
    made = dict.fromkeys(inputs, -1)
    made.update(w.made)
    read = w.read
    live: list = [[] for _ in cuts]
    for i, k in made.items():
        last = read.get(i, -1)
        if last > k:
            c = bisect.bisect_right(cuts, k)
            while c < len(cuts) and cuts[c] <= last:
                live[c].append(i)
                c += 1
    names = [_free_name(name, w.ns)]
    for c in range(1, len(cuts)):
        names.append(_free_name(f"{names[0]}_{c}", w.ns))
    segments = []
    for c, cut in enumerate(cuts):
        params = inputs if c == 0 else sorted(live[c])
        head = f"def {names[c]}({', '.join(f'v{i}' for i in params)}):"
        end = starts[cuts[c + 1]] if c + 1 < len(cuts) else len(lines)
        body = lines[starts[cut]:end] if starts else []
        if c + 1 < len(cuts):
            tail = f"    return {names[c + 1]}({', '.join(f'v{i}' for i in sorted(live[c + 1]))})"
        else:
            tail = ret
        segments.append((names[c], "\n".join([head] + body + [tail])))
    return "\n".join(src for _, src in segments), w.ns, segments


_BUILTINS = frozenset(vars(builtins))


def _free_name(name, ns):
    """``name``, or it with underscores appended, not a name of ``ns`` nor
    a builtin the code may call (a function named as a constant of the
    plan, ``f1``, or ``float``)."""
    while name in ns or name in _BUILTINS:
        name += "_"
    return name
