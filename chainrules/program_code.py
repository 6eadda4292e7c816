"""A fused region's NumPy program (``elementwise_expr.Program``) as
straight-line Python code, for one signature of its inputs.

``Program.__call__`` interprets its steps: per step it gathers the
arguments, looks for a dead intermediate of the result's shape and dtype to
lend as ``out=``, and keeps track of what it owns. That bookkeeping costs
about a microsecond per step, as much as a NumPy call on a small array and
a tenth of the program's time on 1e5 elements. Its decisions depend only on
the types, shapes and dtypes of the inputs (and the program's constants),
so once a signature of inputs has been seen ``HOT_AFTER`` times, one
interpreted call records them (``trace``) and they are written as code:
the same NumPy calls on the same arguments with the same ``out=`` buffers,
so the results are the interpreter's bit for bit, and so are NumPy's
warnings and errors.

Only inputs that are NumPy arrays of at least one dimension have a
signature: the dtype NumPy 1.x gives an operation on a 0-d array or a
scalar can depend on its value, and with it which buffer fits.
"""

import os

import numpy as np

__all__ = ["run", "HOT_AFTER", "MAX_SIGNATURES"]

#: interpreted calls of one signature before its code is written
HOT_AFTER = 3
#: signatures with counts or code per program (others stay interpreted)
MAX_SIGNATURES = 8
_HERE = os.path.dirname(os.path.abspath(__file__))
_CODE: dict = {}  # source -> code object, shared by programs that read alike
_CODE_SIZE = 512


def _signature(program, env):
    key = []
    for _, name, _ in program.variables:
        v = env[name]
        if type(v) is not np.ndarray or not v.ndim:
            return None
        key.append(v.shape)
        key.append(v.dtype)
    return tuple(key)


def run(program, env):
    """``program(env, False)`` by its code when this signature of ``env``
    is hot, else None (the caller interprets)."""
    key = _signature(program, env)
    if key is None:
        return None
    table = program.code
    entry = table.get(key, 0)
    if type(entry) is not int:
        return entry(env)
    if entry < HOT_AFTER:
        if entry or len(table) < MAX_SIGNATURES:
            table[key] = entry + 1
        return None
    trace: list = []
    out = program(env, False, trace=trace)
    table[key] = _function(program, trace)
    return out


def _function(program, trace):
    """The code of ``program`` making the buffer choices of ``trace`` (per
    step: the slot whose array it writes into, or None)."""
    ns = {"_compute": program.compute}
    lines = ["def program(env):"]
    for k, name, _ in program.variables:
        lines.append(f"    v{k} = env[{name!r}]")
    for k, c in enumerate(program.consts):
        if c is not None:
            ns[f"v{k}"] = c
    for (k, fn, args, _, _, special), buf in zip(program.steps, trace):
        ns[f"f{k}"] = fn
        argv = ", ".join(f"v{i}" for i in args)
        if special:
            into = "None" if buf is None else f"v{buf}"
            lines.append(f"    v{k} = _compute(None, f{k}, ({argv},), {into})")
        elif buf is None:
            lines.append(f"    v{k} = f{k}({argv})")
        else:
            lines.append(f"    v{k} = f{k}({argv}, out=v{buf})")
    lines.append(f"    return [{', '.join(f'v{k}' for k in program.outs)}]")
    source = "\n".join(lines) + "\n"
    code = _CODE.get(source)
    if code is None:
        # a file name inside the package: the frames are the library's, so
        # that warnings are re-issued at the user's line (user_code)
        code = compile(source, os.path.join(_HERE, "<region program>"), "exec")
        if len(_CODE) >= _CODE_SIZE:
            _CODE.pop(next(iter(_CODE)))
        _CODE[source] = code
    # (constants bound as globals: a constant slot's name is read, never set)
    exec(code, ns)
    return ns["program"]

