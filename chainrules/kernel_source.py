"""The source of a compiled kernel: a fused region's program
(``elementwise_expr.Program``) written as one loop over its elements, for
numba (``chainrules.kernels`` compiles and runs it).

Each operation is written in the dtypes NumPy's loop for it uses
(``Expr.loop``; weak Python constants cast as NumPy casts them), with the
forms that round as NumPy's do (``x ** 2`` as ``x * x``, ``maximum`` with
NumPy's NaN rule, ...). A kernel returns whether any value no later
operation carries to a result was NaN or infinite, so that the caller can
run the NumPy program instead and warn or raise as NumPy does.
"""

import numpy as np

__all__ = ["kernel_source", "program_lines", "NotCompilable", "HEADER"]


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


def program_lines(program, pattern, index, skip=()):
    """The parts of a kernel's loop body for ``program`` on inputs given as
    ``pattern`` (``kernel_source``), elements addressed by ``index``:
    ``(params, loads, body, checks, outs, stores)``: the kernel's input
    parameters, the lines loading the array inputs' elements, computing
    every step (``t<k>``), the terms whose NaN or infinity is tested, and
    the output parameters with the lines storing the results (but those at
    positions ``skip``, which the caller writes). Raises ``NotCompilable``."""
    nodes = program.nodes
    names, params, loads = {}, [], []
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
    for j, k in enumerate(program.outs):
        if program.kinds[j] == "step" and f"o{k}" not in outs and j not in skip:
            outs.append(f"o{k}")
            stores.append(f"o{k}[{index}] = t{k}")
    return params, loads, body, checks, outs, stores


#: the head of every kernel's module: NumPy's scalar types by short names
HEADER = ["import numpy as np", "from numba import njit", "", "_b = np.bool_",
          *(f"_{c}{s} = np.{t}{8 * s}" for c, t in (("f", "float"), ("i", "int"),
                                                   ("u", "uint"))
            for s in (1, 2, 4, 8) if not (c == "f" and s == 1)), "", "",
          "@njit(nogil=True, cache=CACHE, error_model='numpy')"]


def kernel_source(program, pattern, ndim=1, scatter=None):
    """The Python source of ``program``'s kernel (a function ``kernel(lo,
    hi, *inputs, *outputs)`` returning whether a NaN or infinity was made)
    for inputs given as ``pattern``: per variable, ``"a"`` an array of the
    full shape or ``"s"`` one scalar. The arrays have ``ndim`` dimensions
    (one: a flat run of elements; more: strided arrays, ``lo:hi`` along the
    first axis). ``scatter`` (a ``kernel_scatter.Scatter``, one dimension):
    two of the results summed into one array at neighbouring offsets, the
    kernel then taking ``prev`` after ``hi`` and that array last, and
    returning ``(bad, prev)``; a scatter with a ``source`` of its own
    (``kernel_grid.Grid``) writes the kernel itself. Raises
    ``NotCompilable``."""
    if scatter is not None and hasattr(scatter, "source"):
        return scatter.source(program, pattern)
    index = "i" if ndim == 1 else ", ".join(f"i{d}" for d in range(ndim))
    skip = () if scatter is None else scatter.skip
    params, loads, body, checks, outs, stores = program_lines(program, pattern, index, skip)
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
    lines = [*HEADER,
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
