"""The partial derivatives of elementwise rules as expression trees.

``scalar_rule`` keeps each partial as a callable (or a constant); fusing
chains of elementwise rules needs them as expressions. Each callable is
called once on placeholders (``Expr``) that record what is done to them:
operators, NumPy ufuncs (``__array_ufunc__``), ``np.where``
(``__array_function__``); no bytecode or source is read. What they cannot
record (a ufunc outside ``_UFUNCS``, SciPy's among them, ``np.asarray``,
indexing, ``.shape``, a Python branch on a value, ``float(x)``) raises
``NotExpressible``: the partial stays a callable.

Placeholders carry a dtype, and each node's dtype is resolved as NumPy
resolves the call (``ufunc.resolve_dtypes``, ``np.result_type``; Python
numbers are weak, NEP 50): an expression holds for the dtypes it was built
for. ``evaluate`` makes the partial's own NumPy calls (its result bit for
bit) reusing dead intermediates as ``out=``; ``to_numexpr`` writes numexpr
2.x syntax (numexpr is optional, imported by ``evaluate_numexpr`` only).
"""

import operator

import numpy as np

from . import program_code
from .errors import AutodiffError

__all__ = ["Expr", "NotExpressible", "ExprInputError", "expressions", "build", "build_on",
           "explain", "placeholder", "constant", "rebuild", "variables", "evaluate",
           "evaluate_many",
           "Program", "to_numexpr", "evaluate_numexpr"]

UNARY_FIELDS, BINARY_FIELDS = ("d", "d2", "ratio"), ("dx", "dy", "dxx", "dxy", "dyy")


class NotExpressible(AutodiffError, TypeError):
    """A partial (or an expression) cannot be written in the form asked for."""


class ExprInputError(AutodiffError, TypeError):
    """Values other than those an expression was built for (dtype, out)."""


#: the ufuncs a placeholder records
_UFUNCS = frozenset("""
    add subtract multiply divide negative positive power float_power square sqrt cbrt
    reciprocal absolute fabs sign copysign exp exp2 expm1 log log2 log10 log1p sin cos
    tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh hypot
    maximum minimum fmax fmin isfinite isnan isinf greater greater_equal less less_equal
    equal not_equal logical_and logical_or logical_not bitwise_and bitwise_or invert
    conjugate floor ceil trunc rint""".split())

_interned = {}


class Expr:
    """An immutable expression node: a variable (``op == "var"``, ``value``
    its name), a constant (``"const"``, ``value`` a Python number, weak, or a
    NumPy scalar) or an operation (a ufunc's name, ``"**"`` or ``"where"``)
    on ``args``. Nodes are interned: equal expressions are one object, and a
    subexpression computed twice is one node. ``dtype``: the node's (None for
    a weak constant); ``loop``: the dtypes its operation casts its arguments
    to. Operators build nodes, ``==`` too: compare with ``is``."""

    __slots__ = ("op", "args", "value", "dtype", "loop")

    def __setattr__(self, name, value):
        raise AttributeError("Expr is immutable")

    def __repr__(self):
        return (str(self.value) if self.op == "var" else repr(self.value) if self.op == "const"
                else f"{self.op}({', '.join(map(repr, self.args))})")

    def __reduce__(self):
        # rebuilt by the functions that made it (and interned again), so a
        # program pickles to a process of dask's workers
        return _unpickle, (self.op, self.args, self.value, self.dtype)

    def _refuse(self, *args, **kwargs):
        raise NotExpressible("a partial used its argument as a concrete value (a Python "
                             "branch, a conversion, indexing or a length)")

    __bool__ = __len__ = __iter__ = __getitem__ = __setitem__ = _refuse
    __float__ = __int__ = __index__ = __complex__ = __array__ = _refuse
    __hash__ = object.__hash__  # interned: identity is structural equality

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)  # NumPy's protocol probes find nothing
        raise NotExpressible(f"a partial read the attribute {name!r} of its argument")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or any(v is not None for v in kwargs.values()):
            raise NotExpressible(f"{ufunc.__name__}.{method} with {sorted(kwargs)}")
        return apply(ufunc, inputs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where and len(args) == 3 and not kwargs:
            return where(*args)
        if func in (np.result_type, np.iscomplexobj) and not kwargs:
            # questions about dtypes, which placeholders answer
            dts = [(a.value if a.dtype is None else a.dtype) if isinstance(a, Expr) else a
                   for a in args]
            return np.result_type(*dts) if func is np.result_type else (
                np.result_type(*dts).kind == "c")
        raise NotExpressible(f"numpy.{getattr(func, '__name__', func)} has no expression")


for _name, _uf in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.divide), ("and", np.bitwise_and), ("or", np.bitwise_or)):
    setattr(Expr, f"__{_name}__", lambda self, other, uf=_uf: apply(uf, (self, other)))
    setattr(Expr, f"__r{_name}__", lambda self, other, uf=_uf: apply(uf, (other, self)))
for _name, _uf in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    setattr(Expr, f"__{_name}__", lambda self, other, uf=_uf: apply(uf, (self, other)))
for _name, _uf in (("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                   ("invert", np.invert)):
    setattr(Expr, f"__{_name}__", lambda self, uf=_uf: apply(uf, (self,)))
for _name in ("floordiv", "mod", "matmul", "divmod", "lshift", "rshift", "xor"):
    setattr(Expr, f"__{_name}__", Expr._refuse)
    setattr(Expr, f"__r{_name}__", Expr._refuse)
# ``**`` is kept apart from np.power: ndarray ** scalar takes NumPy's fast
# paths (square, sqrt, reciprocal), which evaluate reproduces
Expr.__pow__ = lambda self, other: _node("**", (self, _leaf(other)))
Expr.__rpow__ = lambda self, other: _node("**", (_leaf(other), self))
del _name, _uf


def _intern(key, op, args, value, dtype, loop=()):
    e = _interned.get(key)
    if e is None:
        if len(_interned) > 100_000:
            _interned.clear()  # (a key names children that its node keeps alive)
        e = object.__new__(Expr)
        for k, v in zip(Expr.__slots__, (op, args, value, dtype, loop)):
            object.__setattr__(e, k, v)
        _interned[key] = e
    return e


def _unpickle(op, args, value, dtype):
    if op == "var":
        return placeholder(value, dtype)
    if op == "const":
        return _leaf(value)
    if op == "where":
        return where(*args)
    return _node(op, args)


def placeholder(name, dtype):
    """The variable ``name`` standing for arrays of ``dtype``."""
    return _intern(("var", name, np.dtype(dtype).str), "var", (), name, np.dtype(dtype))


def constant(v):
    """The constant node of a scalar ``v`` (a Python number, weak as in
    NumPy, or a NumPy scalar or 0-d array, of its dtype)."""
    return _leaf(v)


def _leaf(v):
    """``v`` as a node: an ``Expr`` as it is, a scalar as a constant."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, np.generic) and v.dtype.kind in "biufc":
        return _intern(("const", type(v), v.tobytes()), "const", (), v, v.dtype)
    if type(v) in (bool, int, float, complex):  # weak, except bool
        return _intern(("const", type(v), repr(v)), "const", (), v,
                       np.dtype(bool) if type(v) is bool else None)
    raise NotExpressible(f"a partial combined its argument with a {type(v).__name__}")


def _node(op, args):
    key = (op,) + tuple(id(a) for a in args)
    e = _interned.get(key)
    if e is not None:
        return e
    uf = np.power if op == "**" else getattr(np, op)
    try:  # weak constants enter promotion as their Python type
        loop = uf.resolve_dtypes(tuple(type(a.value) if a.dtype is None else a.dtype
                                       for a in args) + (None,))
    except (TypeError, ValueError) as exc:
        raise NotExpressible(f"{op} has no loop for these dtypes: {exc}") from None
    return _intern(key, op, tuple(args), None, loop[-1], loop[:-1])


def apply(ufunc, inputs):
    """The node of ``ufunc(*inputs)``."""
    name = getattr(ufunc, "__name__", None)
    if name not in _UFUNCS or getattr(np, name) is not ufunc:
        raise NotExpressible(f"the ufunc {name} ({type(ufunc).__module__}) has no expression")
    return _node(name, tuple(_leaf(v) for v in inputs))


def where(cond, a, b):
    """The node of ``np.where(cond, a, b)``."""
    args = (_leaf(cond), _leaf(a), _leaf(b))
    dt = np.result_type(*(v.value if v.dtype is None else v.dtype for v in args[1:]))
    return _intern(("where",) + tuple(id(v) for v in args), "where", args, None, dt,
                   (np.dtype(bool), dt, dt))


def rebuild(e, args):
    """The node of ``e``'s operation on the nodes ``args`` (its own
    arguments replaced)."""
    if e.op == "where":
        return where(*args)
    if e.op == "**":
        return _node("**", tuple(args))
    return apply(getattr(np, e.op), args)


def substitute(e, subst, memo=None):
    """``e`` with each variable named in ``subst`` (name -> node) replaced
    by its node; ``memo`` (id -> node) is shared by the calls on nodes of
    one program, so that a node they share stays one node."""
    if memo is None:
        memo = {}
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    if e.op == "var":
        r = subst.get(e.value, e)
    elif not e.args:
        r = e
    else:
        r = rebuild(e, [substitute(a, subst, memo) for a in e.args])
    memo[id(e)] = r
    return r


def variables(expr):
    """The names of the variables ``expr`` reads."""
    return frozenset(e.value for _, e in _plan(expr)[1])


# -- the partials of a derived spec -----------------------------------------------------
def build(spec, dtype=np.float64):
    """The partials of a unary or binary derived spec (``rule.spec``: its
    fields ``d, d2, ratio`` or ``dx, dy, dxx, dxy, dyy``) as ``{field: Expr
    or None}`` (None: the spec has no such partial), over the variables
    ``x, y`` (input, output) or ``x, y, z`` (inputs, output). ``dtype``: of
    every variable, or a dict role -> dtype. NotExpressible names the
    partial that could not be recorded and why."""
    binary = hasattr(spec, "dx")
    fields, roles = (BINARY_FIELDS, "xyz") if binary else (UNARY_FIELDS, "xy")
    if not binary and not hasattr(spec, "d"):
        raise NotExpressible(f"{type(spec).__name__} is not a unary or binary derived spec")
    if isinstance(dtype, dict) and set(dtype) != set(roles):
        raise TypeError(f"dtype= names the roles {sorted(dtype)}; the spec's are {roles}")
    args = [placeholder(r, dtype[r] if isinstance(dtype, dict) else dtype) for r in roles]
    return build_on(spec, fields, args)


def build_on(spec, fields, args):
    """The partials ``fields`` of ``spec`` called on the nodes ``args``
    (placeholders of any names, or constants): ``{field: Expr or None}``."""
    out = {}
    for f in fields:
        d = getattr(spec, f, None)
        try:
            with np.errstate(all="ignore"):
                out[f] = None if d is None else _leaf(d(*args) if callable(d) else d)
        except Exception as exc:  # any failure on a placeholder: not recordable
            why = exc if isinstance(exc, NotExpressible) else f"{type(exc).__name__}: {exc}"
            raise NotExpressible(f"{getattr(spec, 'name', spec)}: partial {f}: {why}") from None
    return out


_cache, _plans, _programs, _ne_cache = {}, {}, {}, {}


def _memo(table, obj, key, make):
    """``make()``, remembered in ``table`` under ``key`` with ``obj`` (kept
    alive there, so that the id in ``key`` is not reused)."""
    hit = table.get(key)
    if hit is None or hit[0] is not obj:
        if len(table) > 4096:
            table.clear()
        hit = table[key] = (obj, make())
    return hit[1]


def _attempt(spec, dtype):
    """``(build(spec, dtype), None)`` or ``(None, why not)``, cached."""
    def make():
        try:
            return build(spec, dtype), None
        except NotExpressible as exc:
            return None, str(exc)

    key = (id(spec), tuple(sorted((k, np.dtype(v).str) for k, v in dtype.items()))
           if isinstance(dtype, dict) else np.dtype(dtype).str)
    return _memo(_cache, spec, key, make)


def expressions(spec, dtype=np.float64):
    """``build(spec, dtype)``, or None when a partial is not expressible."""
    return _attempt(spec, dtype)[0]


def explain(spec, dtype=np.float64):
    """Why the partials of ``spec`` are not expressible; None when they are."""
    return _attempt(spec, dtype)[1]


# -- evaluation with NumPy -------------------------------------------------------------
def _plan(expr):
    """The nodes of ``expr`` (arguments first), its variables (slot, node), its
    steps (slot, node, function, argument slots, slots last used there)."""
    return _memo(_plans, expr, id(expr), lambda: _make_plan((expr,)))


def _make_plan(roots):
    """The plan of the expressions ``roots`` together: each node once, the
    roots last used at the end (never lent as ``out=``)."""
    order, slot = [], {}
    for root in roots:
        stack = [(root, False)]
        while stack:
            e, done = stack.pop()
            if done:
                slot[id(e)] = len(order)
                order.append(e)
            elif id(e) not in slot:
                slot[id(e)] = None
                stack.append((e, True))
                stack.extend((a, False) for a in reversed(e.args) if id(a) not in slot)
    last = {slot[id(a)]: k for k, e in enumerate(order) for a in e.args}
    for r in roots:
        last[slot[id(r)]] = len(order)  # alive to the end
    steps = []
    for k, e in enumerate(order):
        if e.op in ("var", "const"):
            continue
        fn = (operator.pow if e.op == "**" and e.args[1].op == "const" else
              np.power if e.op == "**" else None if e.op == "where" else getattr(np, e.op))
        args = tuple(slot[id(a)] for a in e.args)
        steps.append((k, e, fn, args, tuple(sorted({i for i in args if last[i] == k}))))
    return order, [(k, e) for k, e in enumerate(order) if e.op == "var"], steps

def _check_env(variables_, env):
    for _, e in variables_:
        _check_value(e.value, e.dtype, env.get(e.value))


def _check_value(name, dtype, v):
    """ExprInputError unless ``v`` has the ``dtype`` variable ``name`` was
    built for."""
    vdt = getattr(v, "dtype", None)
    if vdt is None or vdt != dtype:
        raise ExprInputError(f"the expression was built for {name!r} of {dtype}, given "
                             f"{vdt}: build it for these (expressions(spec, dtype))")


def _compute(e, fn, vals, buf):
    """``e`` on the values of its arguments, into ``buf`` when one is given."""
    if fn is None:  # where
        c, a, b = vals
        if buf is None:
            return np.where(c, a, b)
        if buf is not b:
            np.copyto(buf, b)
        np.copyto(buf, a, where=c)
        return buf
    if buf is None or fn is operator.pow:  # (ndarray ** scalar: as the partial did)
        return fn(*vals)
    return fn(*vals, out=buf)


def _shape(vals):
    """The broadcast shape of ``vals`` (without a call when they agree)."""
    shape = None
    for v in vals:
        if type(v) is np.ndarray:
            if shape is None or v.shape == shape:
                shape = v.shape
                continue
        elif type(v) in (int, float, complex, bool) or isinstance(v, np.generic):
            continue
        return np.broadcast_shapes(*(np.shape(v) for v in vals))
    return () if shape is None else shape


def _numpy_only(vals):
    """Whether ``vals`` are NumPy arrays and scalars only: another array type
    (dask) among a call's arguments takes no NumPy array as ``out=``."""
    for v in vals:
        if type(v) is not np.ndarray and type(v) not in (int, float, complex, bool) \
                and not isinstance(v, np.generic):
            return False
    return True


def evaluate(expr, env, out=None):
    """``expr`` computed with NumPy on ``env`` (name -> array of the dtype the
    expression was built for): the partial's own calls, so its result bit for
    bit. A dead intermediate, and ``out`` until the result is written there,
    lend their memory to the next node of their shape and dtype (``out=``).
    A constant expression returns the constant (or fills ``out``)."""
    return _memo(_programs, expr, id(expr), lambda: Program((expr,)))(env, out=out)[0]


def evaluate_many(exprs, env):
    """The expressions ``exprs`` (a tuple) computed together with NumPy on
    ``env``, as ``evaluate`` computes each: a node they share is computed
    once, and dead intermediates lend their memory to later nodes. Returns
    a list of results, in the order of ``exprs``."""
    return _memo(_programs, exprs, tuple(map(id, exprs)), lambda: Program(exprs))(env)


class Program:
    """Expressions compiled together for many evaluations (``evaluate_many``
    of the same expressions): ``program(env)`` returns their values, in
    order. ``names``: the variables they read; ``check=False`` trusts the
    caller that every value has the dtype its variable was built for."""

    __slots__ = ("consts", "variables", "steps", "outs", "names", "reads", "kinds",
                 "dtypes", "nodes", "code")
    compute = staticmethod(_compute)

    def __init__(self, exprs):
        exprs = tuple(exprs)
        order, variables_, steps = _make_plan(exprs)
        #: the expression of every slot (what a compiled kernel is written from)
        self.nodes = tuple(order)
        self.consts = [e.value if e.op == "const" else None for e in order]
        self.variables = [(k, e.value, e.dtype) for k, e in variables_]
        self.names = frozenset(e.value for _, e in variables_)
        slot = {id(e): k for k, e in enumerate(order)}
        self.outs = [slot[id(e)] for e in exprs]
        self.steps = [(k, fn, args, dying, e.dtype, fn is None or fn is operator.pow)
                      for k, e, fn, args, dying in steps]
        #: per expression: the variables it reads (its shape is theirs,
        #: broadcast), what it is ("var", "const" or "step") and its dtype
        self.reads = [tuple(sorted(variables(e))) for e in exprs]
        self.kinds = [e.op if e.op in ("var", "const") else "step" for e in exprs]
        self.dtypes = [e.dtype for e in exprs]
        #: per signature of the inputs: calls seen, then the straight-line
        #: code of the program (``program_code``)
        self.code = {}

    def __getstate__(self):
        # (the code is this process's: a copy, in another process, writes its own)
        return {k: getattr(self, k) for k in self.__slots__ if k != "code"}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self.code = {}

    def __call__(self, env, check=True, out=None, into=None, scratch=None, trace=None):
        """The values; ``out`` (a program of one expression): an array that
        lends its memory to intermediates and receives the result. ``into``:
        per expression, an array of its shape and dtype that receives its
        value (computed there when it is a step's result), or None.
        ``scratch``: a list of arrays the call may use for intermediates,
        to which it adds those it made (for the next call on values of the
        same shapes: a block of the same data). ``trace``: a list that
        receives, per step, the slot whose array the step writes into (or
        None), for ``program_code``."""
        if not check and out is into is scratch is trace is None:
            res = program_code.run(self, env)
            if res is not None:
                return res
        vals = self.consts[:]
        for k, name, dt in self.variables:
            v = env.get(name) if check else env[name]
            if check:
                _check_value(name, dt, v)
            vals[k] = v
        # (an ``out`` given lends itself to this call only: never to scratch)
        owned, pool = set(), ([] if scratch is None or out is not None else scratch)
        lent = {}  # (tracing) id of a pooled array -> its slot
        root = self.outs[-1] if self.outs else None
        if out is not None and not any(np.may_share_memory(out, v) for v in env.values()):
            pool.append(out)  # out holds intermediates too, until the result
        dest = {}
        if into is not None:
            for k, d in zip(self.outs, into):
                if d is not None:
                    dest.setdefault(k, d)
        for k, fn, args, dying, dt, special in self.steps:
            argv = [vals[i] for i in args]
            for i in dying:
                if i in owned:  # an intermediate of ours, dead: its memory is free
                    pool.append(vals[i])
                    if trace is not None:
                        lent[id(vals[i])] = i
            buf = None
            if dest and k in dest:
                d = dest[k]
                if not (fn is None and (d is argv[0] or d is argv[1])):
                    buf = d
            elif out is not None and k == root:
                shape = _shape(argv)
                if out.shape != shape or out.dtype != dt:
                    raise ExprInputError(f"evaluate: out is {out.dtype} {out.shape}, the "
                                         f"result {dt} {shape}")
                # (a where into out holding one of its branches: computed apart)
                if not (fn is None and (out is argv[0] or out is argv[1])):
                    buf = out
            elif pool and fn is not operator.pow and _numpy_only(argv):
                shape = _shape(argv)
                if shape:
                    # the most recently freed first: the likeliest still in cache
                    for j in range(len(pool) - 1, -1, -1):
                        p = pool[j]
                        # (a where writes its else branch first: not into another branch)
                        if p.shape == shape and p.dtype == dt and (
                                fn is not None or not (p is argv[0] or p is argv[1])):
                            buf = pool.pop(j)
                            break
            if trace is not None:
                trace.append(None if buf is None else lent[id(buf)])
            r = vals[k] = (fn(*argv, out=buf) if buf is not None and not special
                           else _compute(None, fn, argv, buf) if special else fn(*argv))
            if type(r) is np.ndarray and r.ndim and r is not out:
                owned.add(k)  # an array of this call's making
        if out is not None:
            r = vals[root]
            if r is not out:
                np.copyto(out, r)
            vals[root] = out
        if into is None:
            return [vals[k] for k in self.outs]
        res = []
        for k, d in zip(self.outs, into):
            r = vals[k]
            if d is not None:
                if r is not d:  # a variable, a constant, a power: copied
                    np.copyto(d, r)
                r = d
            res.append(r)
        return res


# -- numexpr ----------------------------------------------------------------------------
#: ufuncs numexpr 2.x has under their NumPy name (its older releases too)
_NE_FUNCS = frozenset("""sqrt exp expm1 log log10 log1p sin cos tan arcsin arccos arctan
    arctan2 sinh cosh tanh arcsinh arccosh arctanh""".split())
_NE_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "**": "**",
             "power": "**", "float_power": "**", "greater": ">", "greater_equal": ">=",
             "less": "<", "less_equal": "<=", "equal": "==", "not_equal": "!=",
             "logical_and": "&", "bitwise_and": "&", "logical_or": "|", "bitwise_or": "|"}
#: exact rewrites, NaN and signed zeros included (NumPy's maximum(a, b) is a
#: where a > b or a is NaN, else b: maximum(0.0, -0.0) is -0.0; sign(-0.0) is
#: 0.0). The zero fmax and fmin return on a tie of 0.0 and -0.0 varies
#: within NumPy itself (by array length); the rewrites return b.
_NE_REWRITES = {
    "negative": "(-{0})", "positive": "{0}", "conjugate": "{0}", "absolute": "abs({0})",
    "fabs": "abs({0})", "square": "({0} * {0})", "reciprocal": "(1 / {0})",
    "logical_not": "(~{0})", "invert": "(~{0})", "isnan": "({0} != {0})",
    "isfinite": "(({0} - {0}) == 0)", "isinf": "(({0} == {0}) & (({0} - {0}) != 0))",
    "sign": "where({0} > 0, 1, where({0} < 0, -1, where({0} == 0, 0, {0})))",
    "maximum": "where(({0} > {1}) | ({0} != {0}), {0}, {1})",
    "minimum": "where(({0} < {1}) | ({0} != {0}), {0}, {1})",
    "fmax": "where(({0} > {1}) | ({1} != {1}), {0}, {1})",
    "fmin": "where(({0} < {1}) | ({1} != {1}), {0}, {1})",
    # not exact: pow(2, a) and exp2(a) are each within an ulp (equal at integers)
    "exp2": "(2 ** {0})",
}
# Not written: log2 (log(a) / log(2) is off at powers of two), cbrt (a ** (1/3)
# is NaN for a < 0), hypot (sqrt(a*a + b*b) overflows past 1e154 and rounds
# twice), copysign, floor, ceil, trunc, rint (not in older numexpr 2.x).


def _const_text(v, target, siblings, constants, literal=True):
    """A constant, of dtype ``target`` in NumPy, as numexpr text and the dtype
    numexpr gives it (None: its sibling's). numexpr reads a float literal as
    double: literals only for doubles and for integers beside a non-constant
    sibling; other constants go in ``constants``, NumPy scalars named k<i>."""
    if target.kind == "b":
        return ("True" if v else "False"), target
    if literal and target.kind == "f" and np.isfinite(v) and float(v) == v:
        if float(v).is_integer() and abs(v) < 2 ** 31 and target in siblings:
            return f"({int(v)})", None
        if target == np.float64:
            return f"({float(v)!r})", target
    if constants is None:
        raise NotExpressible(f"the constant {v!r} is {target} here and numexpr reads a "
                             "literal as double: pass constants={} to name it")
    cv = target.type(v)
    for name, w in constants.items():
        if type(w) is type(cv) and w.tobytes() == cv.tobytes():
            return name, target
    constants[f"k{len(constants)}"] = cv
    return f"k{len(constants) - 1}", target


def _ne_args(e, constants, memo, kinds):
    """The texts of ``e``'s arguments; their numexpr dtypes go to ``kinds``."""
    out = []
    for i, a in enumerate(e.args):
        if a.op != "const":
            out.append(_ne(a, constants, memo))
            kinds.append(a.dtype)
            continue
        half = False
        if e.op in ("**", "power", "float_power") and i == 1 and e.loop[1].kind == "f":
            p = float(a.value)
            if p == 0.5 or (p.is_integer() and abs(p) <= 50):
                # numexpr multiplies it out (or takes sqrt, as NumPy) in the base's dtype
                out.append(None if p == 0.5 else f"({int(p)})")
                continue
            # a literal p + 1/2 would become products and a sqrt: NaN at -inf
            half = (2 * p).is_integer()
        sib = [b.dtype for j, b in enumerate(e.args)
               if j != i and b.op != "const" and not (e.op == "where" and j == 0)]
        text, kind = _const_text(a.value, e.loop[i], sib, constants, not half)
        out.append(text)
        kinds.append(kind)
    return out


def _ne(e, constants, memo):
    if id(e) in memo:
        return memo[id(e)]
    if e.dtype is not None and e.dtype.kind not in "bf":
        raise NotExpressible(f"{e.dtype} values are not written for numexpr")
    kinds = []
    if e.op == "var":
        if not e.value.isidentifier() or e.value.startswith("k"):
            raise NotExpressible(f"the variable name {e.value!r}")
        text = e.value
    elif e.op == "const":
        text = _const_text(e.value, e.dtype or np.result_type(e.value), (), constants)[0]
    else:
        args = _ne_args(e, constants, memo, kinds)
        if args[-1] is None:
            text = f"sqrt({args[0]})"
        elif e.op == "where":
            c = args[0] if e.args[0].dtype == np.bool_ else f"({args[0]} != 0)"
            text = f"where({c}, {args[1]}, {args[2]})"
        elif e.op in _NE_INFIX:  # (& and | of integers stopped above, by their dtype)
            text = f"({args[0]} {_NE_INFIX[e.op]} {args[1]})"
        elif e.op in _NE_FUNCS:
            text = f"{e.op}({', '.join(args)})"
        elif e.op in _NE_REWRITES:
            text = _NE_REWRITES[e.op].format(*args)
        else:
            raise NotExpressible(f"numexpr has no exact form of {e.op}")
        # numexpr computes in the widest of its arguments' dtypes, NumPy's
        # loop may be wider (float_power of float32): not written then
        kinds = [k for k in kinds if k is not None]
        if e.dtype.kind == "f" and kinds and np.result_type(*kinds) != e.dtype:
            raise NotExpressible(f"numexpr would compute {e.op} in "
                                 f"{np.result_type(*kinds)}, NumPy in {e.dtype}")
    memo[id(e)] = text
    return text


def to_numexpr(expr, constants=None):
    """``expr`` in numexpr 2.x syntax (default optimization) for inputs of the
    dtypes it was built for, bool and real floating only. ``constants``: a
    dict receiving, as NumPy scalars for numexpr's ``local_dict``, the
    constants no literal types as NumPy does (a float among float32 values);
    without it they raise NotExpressible, as do operations with no exact
    numexpr form (log2, cbrt, hypot, copysign, floor...). ``exp2(a)`` is
    written ``2 ** a`` (within an ulp)."""
    return _ne(expr, constants, {})


def evaluate_numexpr(expr, env, out=None):
    """``expr`` computed by ``numexpr.evaluate`` on ``env`` (numexpr is
    imported here); NotExpressible where ``to_numexpr`` cannot write it."""
    import numexpr

    if expr.op in ("const", "var"):
        return evaluate(expr, env, out)  # nothing to compute
    _check_env(_plan(expr)[1], env)
    consts = {}
    text, consts = _memo(_ne_cache, expr, id(expr),
                         lambda: (to_numexpr(expr, consts), consts))
    local = {k: env[k] for k in variables(expr)}
    local.update(consts)
    return numexpr.evaluate(text, local_dict=local, global_dict={}, out=out)
