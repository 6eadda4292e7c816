"""The passes on a staged plan's steps, before its code is written:
forwarding the elements of small scalar buffers, folding arithmetic on
constant scalars, removing repeated calls (common subexpressions) and the
steps nothing reads (``Plan`` runs them in that order; ``plan_regions``
uses their read and write analysis too)."""

import operator

import numpy as np

from .staging import Ref, _constant

__all__ = ["forward_scalar_buffers", "fold_constants", "common_subexpressions",
           "live_steps"]


def _uses(tpl, acc):
    t = type(tpl)
    if t is Ref:
        acc.add(tpl.i)
    elif t is tuple or t is list or t is dict:
        for x in (tpl.values() if t is dict else tpl):
            tx = type(x)
            if tx is Ref:
                acc.add(x.i)
            elif tx is tuple or tx is list or tx is dict:
                _uses(x, acc)


def _defines(out, acc):
    if type(out) is Ref:
        acc.add(out.i)
    elif out is not None:
        for o in out:
            _defines(o, acc)


_BY_VALUE = frozenset((bool, int, str, type(None)))


def _key(tpl):
    """A hashable key of an argument template (``None`` where a constant
    cannot be compared by value: it is then compared by identity)."""
    t = type(tpl)
    if t is Ref:
        return ("r", tpl.i)
    if t in _BY_VALUE:
        return (t, tpl)
    if t is float or t is complex:
        # (a zero by its text: 0.0 and -0.0 are equal, their products not)
        return (t, tpl) if tpl else (t, repr(tpl))
    if t is tuple or t is list:
        ks = [t]
        for x in tpl:
            tx = type(x)
            if tx is Ref:
                ks.append(("r", x.i))
            elif tx in _BY_VALUE:
                ks.append((tx, x))
            else:
                ks.append(_key(x))
        return tuple(ks)
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
_FRESH = {np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.zeros, np.ones,
          np.full, np.empty, np.copy, np.sum,
          np.mean, np.prod, np.max, np.min, np.matmul, np.dot, np.tensordot, np.outer,
          np.where, np.concatenate, np.stack, np.cumsum, np.cumprod, operator.pow}


_NUMBER_TYPES = frozenset((float, int, complex, bool))


def _is_scalar(x):
    return type(x) in _NUMBER_TYPES or isinstance(x, np.generic)


def _substitute(tpl, known):
    t = type(tpl)
    if t is Ref:
        return known.get(tpl.i, tpl)
    if t is tuple or t is list:
        return t(_substitute(x, known) for x in tpl)
    if t is dict:
        return {k: _substitute(v, known) for k, v in tpl.items()}
    return tpl


def _element(index, shape):
    """A scalar index of an array of ``shape`` (ints, one per axis) as a
    tuple of non-negative ints, or ``None``."""
    idx = index if type(index) is tuple else (index,)
    if len(idx) != len(shape):
        return None
    out = []
    for i, n in zip(idx, shape):
        if type(i) is not int or not -n <= i < n:
            return None
        out.append(i % n)
    return tuple(out)


def forward_scalar_buffers(steps, scalars):
    """The steps with the elements of small accumulation buffers kept in
    variables: a gradient of a function of a few scalars adds each
    contribution into ``g = np.zeros(n)`` as ``g[i] = g[i] + c``. Where a
    buffer made by ``np.zeros`` is used only so (reads and writes of single
    elements, each written value a NumPy scalar of the buffer's dtype:
    ``scalars`` maps the variables that are NumPy scalars to their dtype)
    and as a result, a read of an element is the value last written there
    (or the dtype's zero): what NumPy would read back, bit for bit. Only the
    last write of each element is kept, where it was: nothing reads the
    buffer in between."""
    buffers = {}
    first = None  # (no step before the first buffer reads one)
    for k, step in enumerate(steps):
        if step[0] == "call" and step[1] is np.zeros and len(step) == 5 and not step[3] \
                and type(step[4]) is Ref and len(step[2]) == 3:
            shape, dtype, _ = step[2]
            if type(shape) is tuple and all(type(n) is int for n in shape) and \
                    isinstance(dtype, np.dtype) and dtype.kind in "fciu":
                buffers[step[4].i] = (shape, dtype)
                if first is None:
                    first = k
    # buffers used otherwise than by single elements are left as they are
    for step in steps[first:]:
        if not buffers:
            return steps
        if step[0] == "guard":
            buffers.pop(step[2].i, None)
            continue
        fn, a, k = step[1], step[2], step[3]
        ins = _reads(step)
        if ins.isdisjoint(buffers):
            continue
        b = a[0].i if a and type(a[0]) is Ref else None
        if b in buffers and not k and len(step) == 5:
            shape, dtype = buffers[b]
            if fn is operator.getitem and len(a) == 2 and type(step[4]) is Ref and \
                    ins == {b} and _element(a[1], shape) is not None:
                continue
            if fn is operator.setitem and len(a) == 3 and type(a[2]) is Ref and \
                    a[2].i in scalars and scalars[a[2].i] == dtype and ins == {b, a[2].i} and \
                    _element(a[1], shape) is not None:
                continue
        for i in ins:
            buffers.pop(i, None)
    if not buffers:
        return steps
    last = {}  # (buffer, element) -> the position of its last write
    for k, step in enumerate(steps):
        if step[0] == "call" and step[1] is operator.setitem and step[2][0].i in buffers:
            b = step[2][0].i
            last[b, _element(step[2][1], buffers[b][0])] = k
    state, alias, result = {}, {}, []
    for k, step in enumerate(steps):
        if alias:
            if step[0] == "guard":
                if step[2].i in alias:
                    step = step[:2] + (Ref(alias[step[2].i]),) + step[3:]
            elif not alias.keys().isdisjoint(_reads(step)):
                step = step[:2] + (_rename(step[2], alias), _rename(step[3], alias)) + step[4:]
        if step[0] == "call" and step[1] in (operator.getitem, operator.setitem) and \
                type(step[2][0]) is Ref and step[2][0].i in buffers:
            b = step[2][0].i
            shape, dtype = buffers[b]
            e = _element(step[2][1], shape)
            if step[1] is operator.getitem:
                v = state.get((b, e))
                if v is None:  # never written: np.zeros' zero
                    result.append(("call", _constant, (dtype.type(0),), {}, step[4]))
                else:
                    alias[step[4].i] = v
                    # (bound too, for a read that is a result: the plan's
                    # outputs are not renamed; an unread binding is dropped)
                    result.append(("call", _constant, (Ref(v),), {}, step[4]))
                continue
            state[b, e] = step[2][2].i
            if last[b, e] != k:
                continue  # written again later, and nothing reads it before
        result.append(step)
    return result


def _reads(step):
    """The values a call step reads."""
    ins = set()
    _uses(step[2], ins)
    if step[3]:
        _uses(step[3], ins)
    return ins


def fold_constants(steps, outputs):
    """The steps with arithmetic on scalar constants done once: a staged
    constant that is a NumPy scalar or a Python number (the seed of a
    gradient, ``staging.staged_constant``) is immutable, so a ufunc or
    Python operator of such constants alone gives the same scalar at every
    replay. Its value replaces the variable in the steps that read it
    (guards keep reading the variable), unless NumPy would flag a
    floating-point error computing it (the replay warns or raises then).
    Returns the steps, the outputs, and per step the values it reads
    (``None`` for a guard)."""
    known = {}
    result = []
    reads = []
    for step in steps:
        if step[0] != "call":
            result.append(step)
            reads.append(None)
            continue
        fn, a, k, out = step[1:5]
        ins = _reads(step)
        if known and not known.keys().isdisjoint(ins):
            a, k = _substitute(a, known), _substitute(k, known)
            step = step[:2] + (a, k) + step[4:]
            ins.difference_update(known.keys())
        if type(out) is Ref and not ins and not k and a and (
                fn is _constant or len(step) > 5 or isinstance(fn, np.ufunc)) and all(
                _is_scalar(x) for x in a):
            if fn is _constant:
                known[out.i] = a[0]
            else:
                f = _OPERATOR_FNS[step[5]] if len(step) > 5 else fn
                try:
                    with np.errstate(all="raise"):
                        value = f(*a)
                except (ArithmeticError, TypeError, ValueError):
                    value = None
                if value is not None and _is_scalar(value):
                    known[out.i] = value
                    step = ("call", _constant, (value,), {}, out)
        result.append(step)
        reads.append(ins)
    return result, [_substitute(o, known) if type(o) is Ref else o for o in outputs], reads


def common_subexpressions(steps, outputs, reads=None):
    """The steps with each call that repeats an earlier one (the same
    function of the same arguments) replaced by the earlier result, where
    no array involved is ever written: a value written in place (and every
    value that may share its memory: a non-ufunc step's result and its
    arguments are taken to), and the results (which the caller may write
    into) keep their own steps. ``reads``: per step the values it reads
    (``None`` for a guard), when known; with it, the new steps' reads are
    returned too."""
    parent = {}  # the alias classes: a value -> another of its class

    def find(i):
        p = parent.get(i)
        while p is not None:
            i = p
            p = parent.get(i)
        return i

    given = reads is not None
    if not given:
        reads = [None if step[0] != "call" else _reads(step) for step in steps]
    written = set()
    for o in outputs:
        _uses(o, written)
    for step, ins in zip(steps, reads):
        if ins is None:
            continue
        fn, args, kwargs, out = step[1:5]
        if out is None:  # a write: into its first argument, or out=
            if "out" in kwargs:
                _uses(kwargs["out"], written)
            elif args:
                _uses(args[0], written)
            continue
        if ins and not (isinstance(fn, np.ufunc) and not kwargs) and fn not in _FRESH:
            made = set()
            _defines(out, made)
            for a in ins:
                ra = find(a)
                for m in made:
                    rm = find(m)
                    if ra != rm:
                        parent[ra] = rm
                        ra = rm
    dirty = {find(i) for i in written}
    seen = {}
    alias = {}
    result = []
    new_reads = []
    for step, ins in zip(steps, reads):
        if ins is None:
            j = alias.get(step[2].i) if alias else None
            result.append(step if j is None else step[:2] + (Ref(j),) + step[3:])
            new_reads.append(None)
            continue
        if alias and not alias.keys().isdisjoint(ins):
            step = step[:2] + (_rename(step[2], alias), _rename(step[3], alias)) + step[4:]
            ins = {alias.get(i, i) for i in ins}
        out = step[4]
        if type(out) is not Ref:
            result.append(step)
            new_reads.append(ins)
            continue
        r = out.i  # (find, inlined: a call per step)
        up = parent.get(r)
        while up is not None:
            r = up
            up = parent.get(r)
        if r not in dirty:
            key = (id(step[1]), _key(step[2]), _key(step[3]) if step[3] else (), step[5:])
            prev = seen.get(key)
            if prev is not None:
                alias[out.i] = prev
                continue
            seen[key] = out.i
        result.append(step)
        new_reads.append(ins)
    outputs = [_rename(o, alias) for o in outputs]
    return (result, outputs, new_reads) if given else (result, outputs)


def live_steps(steps, outputs, reads=None):
    """The steps the outputs need: every guard and every write, and the calls
    whose results something kept reads. ``reads``: per step the values it
    reads (``None`` for a guard), when known."""
    live = set()
    for o in outputs:
        _uses(o, live)
    kept = []
    for k in range(len(steps) - 1, -1, -1):
        step = steps[k]
        if step[0] == "guard":
            live.add(step[2].i)
            kept.append(step)
            continue
        out = step[4]
        if type(out) is Ref:
            if out.i not in live:
                continue
        elif out is not None:
            made = set()
            _defines(out, made)
            if not made & live:
                continue
        if reads is None:
            _uses(step[2], live)
            _uses(step[3], live)
        else:
            live |= reads[k]
        kept.append(step)
    kept.reverse()
    return kept


def _square(a):
    return a * a


#: the Python operators a plan writes on NumPy scalars (``staging``), as
#: functions: the same arithmetic
_OPERATOR_FNS = {"+": operator.add, "-": operator.sub, "*": operator.mul,
                 "/": operator.truediv, "**": operator.pow, "{0} * {0}": _square,
                 "-{0}": operator.neg, "abs({0})": abs, "+{0}": operator.pos}
