"""Staged plans: the steps a ``Recorder`` kept, as straight-line Python code.

``Plan(rec, inputs, outputs)`` removes the steps nothing reads (a step
made for its effect, a write into a staged array, and every guard stay),
and writes one function: each call step a line ``v7 = k3(v2, k4)`` whose
``k`` names are the recorded callables and constants (held by reference),
each guard a comparison that raises ``GuardFailed`` when the value differs
from the one recorded. Running it runs NumPy on the arguments and nothing
of the function that was recorded.
"""

import operator
import os

import numpy as np

from .fp_warnings import at_user_line

from .pytree import LEAF, unflatten
from .staging import Ref

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
    kids = [_tree_source(c, rets, w) for c in td.children]
    if td.node_type is tuple:
        return f"({', '.join(kids)},)" if len(kids) == 1 else f"({', '.join(kids)})"
    if td.node_type is list:
        return f"[{', '.join(kids)}]"
    if td.node_type is dict and all(type(k) in (str, int) for k in td.keys):
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(td.keys, kids)) + "}"
    # namedtuples, dataclasses, dict subclasses: pytree's own rebuild
    return f"{w.const(unflatten, 'f')}({w.const(td, 'k')}, [{', '.join(kids)}])"


def _uses(tpl, acc):
    t = type(tpl)
    if t is Ref:
        acc.add(tpl.i)
    elif t is tuple or t is list:
        for x in tpl:
            _uses(x, acc)
    elif t is dict:
        for x in tpl.values():
            _uses(x, acc)


def _defines(out, acc):
    if type(out) is Ref:
        acc.add(out.i)
    elif out is not None:
        for o in out:
            _defines(o, acc)


def _key(tpl):
    """A hashable key of an argument template (``None`` where a constant
    cannot be compared by value: it is then compared by identity)."""
    t = type(tpl)
    if t is Ref:
        return ("r", tpl.i)
    if tpl is None or t in (bool, int, float, str, complex):
        return (t, tpl)
    if t is tuple or t is list:
        return (t,) + tuple(_key(x) for x in tpl)
    if t is dict:
        return (dict,) + tuple((k, _key(v)) for k, v in tpl.items())
    if t is slice:
        return (slice, _key(tpl.start), _key(tpl.stop), _key(tpl.step))
    return ("id", id(tpl))


def _rename(tpl, alias):
    t = type(tpl)
    if t is Ref:
        j = alias.get(tpl.i)
        return tpl if j is None else Ref(j)
    if t is tuple or t is list:
        return t(_rename(x, alias) for x in tpl)
    if t is dict:
        return {k: _rename(v, alias) for k, v in tpl.items()}
    return tpl


#: NumPy functions whose result never shares memory with an argument
_FRESH = {np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.copy, np.sum,
          np.mean, np.prod, np.max, np.min, np.matmul, np.dot, np.tensordot, np.outer,
          np.where, np.concatenate, np.stack, np.cumsum, np.cumprod}


def common_subexpressions(steps, outputs):
    """The steps with each call that repeats an earlier one (the same
    function of the same arguments) replaced by the earlier result, where
    no array involved is ever written: a value written in place (and every
    value that may share its memory: a non-ufunc step's result and its
    arguments are taken to), and the results (which the caller may write
    into) keep their own steps."""
    parent = {}

    def find(i):
        while parent.get(i, i) != i:
            i = parent[i]
        return i

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    written = set()
    for o in outputs:
        _uses(o, written)
    reads = []  # per step, the values it reads (None for a guard)
    for step in steps:
        if step[0] != "call":
            reads.append(None)
            continue
        fn, args, kwargs, out = step[1:5]
        ins = set()
        _uses(args, ins)
        _uses(kwargs, ins)
        reads.append(ins)
        if out is None:  # a write: into its first argument, or out=
            if "out" in kwargs:
                _uses(kwargs["out"], written)
            elif args:
                _uses(args[0], written)
            continue
        if not (isinstance(fn, np.ufunc) and not kwargs) and fn not in _FRESH:
            made = set()
            _defines(out, made)
            for a in ins:
                for m in made:
                    union(a, m)
    dirty = {find(i) for i in written}
    seen = {}
    alias = {}
    result = []
    for step, ins in zip(steps, reads):
        if step[0] == "guard":
            j = alias.get(step[2].i) if alias else None
            result.append(step if j is None else step[:2] + (Ref(j),) + step[3:])
            continue
        if alias and not alias.keys().isdisjoint(ins):
            step = step[:2] + (_rename(step[2], alias), _rename(step[3], alias)) + step[4:]
        out = step[4]
        if type(out) is Ref and find(out.i) not in dirty:
            key = (id(step[1]), _key(step[2]), _key(step[3]), step[5:])
            prev = seen.get(key)
            if prev is not None:
                alias[out.i] = prev
                continue
            seen[key] = out.i
        result.append(step)
    return result, [_rename(o, alias) for o in outputs]


def live_steps(steps, outputs):
    """The steps the outputs need: every guard and every write, and the calls
    whose results something kept reads."""
    live = set()
    for o in outputs:
        _uses(o, live)
    kept = []
    for step in reversed(steps):
        if step[0] == "guard":
            live.add(step[2].i)
            kept.append(step)
            continue
        fn, args, kwargs, out = step[1:5]
        if out is not None:
            made = set()
            _defines(out, made)
            if not made & live:
                continue
        _uses(args, live)
        _uses(kwargs, live)
        kept.append(step)
    kept.reverse()
    return kept


class Plan:
    """A recorded function as generated code. ``source``: the code;
    ``steps``: one line per step, for reading; ``guards``: how many."""

    def __init__(self, steps, inputs, outputs, out_tree, name="plan"):
        self.recorded_steps = len(steps)
        steps, outputs = common_subexpressions(steps, outputs)
        steps = live_steps(steps, [o for o in outputs if type(o) is Ref])
        w = _Writer()
        args = ", ".join(f"v{i}" for i in inputs)
        w.lines.append(f"def {name}({args}):")
        self.guard_lines = []
        for step in steps:
            if step[0] == "guard":
                _, kind, ref, expected, line = step
                g = len(self.guard_lines)
                self.guard_lines.append(line)
                v = f"v{ref.i}"
                fail = f"raise GuardFailed({g}, {line!r})"
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
                else:
                    w.bind(out, f"{w.expr(a[0])} {step[5]} {w.expr(a[1])}")
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
        for o in outputs:
            if type(o) is Ref:
                rets.append(f"v{o.i}")
            elif type(o) is np.ndarray:
                # a constant result is copied: the caller may write into it
                rets.append(f"_copy_out({w.const(o)})")
            else:
                rets.append(w.expr(o))
        w.lines.append(f"    return {_tree_source(out_tree, iter(rets), w)}")
        self.source = "\n".join(w.lines)
        self.namespace = w.ns
        # a file name inside the package: the plan's frames are the library's
        # (user_code.is_internal), so that NumPy's floating-point warnings
        # raised in a replay are re-issued at the caller's line
        code = compile(self.source, os.path.join(_HERE, f"<plan {name}>"), "exec")
        exec(code, w.ns)
        self.run = at_user_line(w.ns[name])
        self.out_tree = out_tree
        self.num_steps = len(steps)
        self.guards = len(self.guard_lines)
        self.checked = False

    def __call__(self, *dynamic):
        return self.run(*dynamic)

    def __str__(self):
        consts = []
        for name, obj in self.namespace.items():
            if name[0] in "kg" and name[1:].isdigit():
                r = repr(obj)
                consts.append(f"# {name} = {r if len(r) < 60 else r[:57] + '...'}")
            elif name[0] == "f" and name[1:].isdigit():
                consts.append(f"# {name} = {_fn_name(obj)}")
        return "\n".join(consts + [self.source])

    __repr__ = __str__
