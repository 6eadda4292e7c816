"""A pass on staged plans: elementwise steps that feed a fused region
alone become part of the region's program.

In a plan, a fused region (``fused_sweeps``) is one step: its derivative
program run by ``kernels.run`` on a dict of values. Some of those values
are made by elementwise NumPy calls of the plan just for it: the primal
values an HVP recomputes (``x[1:] - x[:-1] ** 2`` of a Rosenbrock
function), each a pass over memory and an array. ``absorb`` writes such a
call (a ufunc the expressions know, on the plan's values and constants,
whose result nothing else reads) into the program, as expressions over its
arguments, and again for the calls that feed those, so the region reads
the plan's inputs and computes the rest itself: a compiled kernel in one
loop, the NumPy program with its own reused buffers. A cheap call
(arithmetic, comparisons: ``SHARED_COST``) whose result regions alone
read, after the other passes, is written into each of them: TV's slice
differences ``x[1:, :-1] - x[:-1, :-1]``, read by the value's chain and by
the gradient's region, are then never stored.

The program then makes the same NumPy calls on the same values in the
same dtypes (``elementwise_expr`` resolves each node's loop as NumPy does),
so a replay's results are those of the plan before the pass, bit for bit.
A value written in place anywhere in the plan (or sharing memory with one
that is) is never absorbed, nor read through an absorbed call: the call
would then read it at another time.

``scatter_pairs`` (which ``absorb`` runs next) then writes a region whose
two results the plan sums into one new array at neighbouring offsets (the
pullback of ``x[1:]`` and ``x[:-1]``) as one step with that scatter
(``kernel_scatter``): the same NumPy calls, or one compiled loop. Last,
``drop_copies`` skips the copy a sweep makes of a cotangent before adding
into it in place where the plan made that array and reads it nowhere else,
and ``plan_grid.scatter_grids`` writes a two-dimensional region whose
results are then added into shifted views of such an array as one step
(``kernel_grid``).
"""

import math
import operator

import numpy as np

from . import elementwise_expr as ee
from . import elementwise_threads as et
from . import kernel_scatter, kernels
from .plan import _FRESH, _defines, _uses, live_steps
from .plan_grid import scatter_grids
from .plan_merge import merge_regions
from .staging import Ref, _astype, _constant

__all__ = ["absorb", "absorb_stages", "scatter_pairs", "fuse_chains", "drop_copies"]

#: the least elements of a chain's result for ``fuse_chains`` to write it as
#: a program: below, a NumPy call per operation costs less than a program
MIN_CHAIN_SIZE = 4096

#: how many calls at most a region takes in (a bound on its program's size)
MAX_ABSORBED = 64
#: the most a call read by several regions (and nothing else) may cost,
#: relative to a multiply (``elementwise_threads._COST``), to be repeated
#: in each of them: arithmetic and comparisons, whose repetition costs less
#: than storing the value and reading it back (memory bound, and in blocks
#: that stay in cache when NumPy runs the program)
SHARED_COST = 1.1


def _written(steps, is_region):
    """Whether a value is written in place, or may share memory with one
    that is (as in ``plan.common_subexpressions``: a call's result may be a
    view of its arguments unless it is a ufunc's or a ``_FRESH`` function's;
    a region's result is a view only of the value it returns as it is)."""
    parent = {}

    def find(i):
        while parent.get(i, i) != i:
            i = parent[i]
        return i

    def union(ins, made):
        for a in ins:
            for m in made:
                ra, rb = find(a), find(m)
                if ra != rb:
                    parent[ra] = rb

    written = set()
    for step in steps:
        if step[0] != "call":
            continue
        fn, args, kwargs, out = step[1:5]
        if out is None:
            if "out" in kwargs:
                _uses(kwargs["out"], written)
            elif args:
                _uses(args[0], written)
            continue
        if "out" in kwargs:
            _uses(kwargs["out"], written)
        if is_region(fn) and _is_region_call(step) and type(out) is tuple:
            program, env = args[0], args[1]
            for j, kind in enumerate(program.kinds):
                if kind == "var" and j < len(out) and type(out[j]) is Ref:
                    ref = env.get(program.reads[j][0])
                    if type(ref) is Ref:
                        union({ref.i}, {out[j].i})
            continue
        if not (isinstance(fn, np.ufunc) and not kwargs) and fn not in _FRESH:
            ins, made = set(), set()
            _uses(args, ins)
            _uses(kwargs, ins)
            _defines(out, made)
            union(ins, made)
    dirty = {find(i) for i in written}
    return lambda i: find(i) in dirty


def _is_region_call(step):
    return (len(step) == 5 and len(step[2]) == 3 and isinstance(step[2][0], ee.Program)
            and type(step[2][1]) is dict and not step[3])


def _apply(name, nodes):
    """The expression of ``_producer``'s call ``name`` on ``nodes``."""
    if name == "**":
        return nodes[0] ** nodes[1]
    return ee.apply(getattr(np, name), nodes)


def _producer(step, meta):
    """``(ufunc name, argument templates)`` when ``step`` is a call the
    expressions can take: a known ufunc, positional arrays of the plan
    (whose dtypes are known) and Python or NumPy scalars; else None."""
    if step[0] != "call" or len(step) > 5:
        return None
    fn, args, kwargs, out = step[1:5]
    if fn is operator.pow and not kwargs and type(out) is Ref and len(args) == 2 \
            and type(args[0]) is Ref and args[0].i in meta and out.i in meta \
            and (type(args[1]) in (bool, int, float) or isinstance(args[1], np.generic)):
        # an array's ** of a scalar (the expressions' "**": NumPy's fast paths)
        return "**", args
    if not isinstance(fn, np.ufunc) or kwargs or type(out) is not Ref:
        return None
    name = fn.__name__
    if name not in ee._UFUNCS or getattr(np, name) is not fn or len(args) != fn.nin:
        return None
    for a in args:
        if type(a) is Ref:
            if a.i not in meta:
                return None
        elif not (type(a) in (bool, int, float) or isinstance(a, np.generic)):
            return None
    if out.i not in meta:
        return None
    return name, args


def absorb(steps, outputs, meta, is_region):
    """``steps`` with the producers of each region's values written into
    its program (see the module's text). ``meta``: per value index, its
    ``(dtype, shape)`` at recording; ``is_region(fn)``: whether a call's
    function runs a region's program (its arguments ``(program, env,
    threads)``)."""
    for stage in absorb_stages(meta, is_region):
        steps = stage(steps, outputs)
    return steps


def absorb_stages(meta, is_region):
    """``absorb`` as passes run one after the other, each a function
    ``(steps, outputs) -> steps`` giving a complete plan (a staged plan
    runs one per replay: ``plan_stages``)."""
    seen = {"regions": False, "copies": False, "chains": False, "merged": False}

    def regions(steps, outputs):
        regions = copies = False
        for s in steps:  # (one look at each step: most plans need no pass here)
            if s[0] == "call":
                if s[1] is _astype:
                    copies = True
                elif not regions and is_region(s[1]) and _is_region_call(s):
                    regions = True
        seen["regions"], seen["copies"] = regions, copies
        if regions:
            steps = _absorb(steps, outputs, meta, is_region)
        return steps

    def uniform(steps, outputs):
        if seen["regions"]:
            steps = uniform_values(steps, meta, is_region)
        return steps

    def scatters(steps, outputs):
        if seen["regions"]:
            steps = scatter_pairs(steps, outputs, meta, is_region)
        return steps

    # (each pass only where it may apply: they run at every recording)
    def chains(steps, outputs):
        if _any_large(meta) and any(_large_ufunc_call(s, meta) for s in steps):
            steps = fuse_chains(steps, outputs, meta, is_region)
            seen["regions"] = seen["chains"] = True
        return steps

    def shared(steps, outputs):
        if seen["regions"]:
            steps = _absorb(steps, outputs, meta, is_region, shared=True)
        return steps

    def merged(steps, outputs):
        if seen["regions"]:
            steps, merged = merge_regions(
                steps, outputs, meta, lambda s: is_region(s[1]) and _is_region_call(s),
                _Counts.of, lambda steps: _written(steps, is_region))
            seen["merged"] = merged
        return steps

    def merged_uniform(steps, outputs):
        if seen["regions"] and (seen["merged"] or seen["chains"]):
            steps = uniform_values(steps, meta, is_region)
        return steps

    def merged_scatters(steps, outputs):
        if seen["regions"] and (seen["merged"] or seen["chains"]):
            steps = scatter_pairs(steps, outputs, meta, is_region)
        return steps

    def copies(steps, outputs):
        regions = seen["regions"]
        if seen["copies"] and (not regions or any(s[0] == "call" and s[1] is _astype
                                                  for s in steps)):
            steps = drop_copies(steps, outputs, meta, is_region)
        if regions and any(s[0] == "call" and s[1] is np.add and "out" in s[3]
                           for s in steps):
            steps = scatter_grids(steps, outputs, meta, is_region, _Counts.of(steps, outputs),
                                  _written(steps, is_region))
        return steps

    return [regions, uniform, scatters, chains, shared, merged, merged_uniform,
            merged_scatters, copies]


def uniform_values(steps, meta, is_region):
    """``steps`` with each region's variable bound to a constant array of one
    value (a gradient's seed of ones, broadcast) written into its program as
    that value, a NumPy scalar of the array's dtype: NumPy computes the same
    with it, and a product by one of a value of the result's dtype is that
    value (``x * 1.0`` is ``x`` for every ``x``), so that product is not
    computed at all. The variable stays where the region's other arrays do
    not have the array's shape (it gives the results their shape)."""
    made = {s[4].i: s[2][0] for s in steps
            if s[0] == "call" and s[1] is _constant and len(s[2]) == 1
            and type(s[4]) is Ref and type(s[2][0]) is np.ndarray}
    if not made:
        return steps
    out = list(steps)
    for k, step in enumerate(steps):
        if not (step[0] == "call" and is_region(step[1]) and _is_region_call(step)):
            continue
        program, env, n = step[2]
        dts = {dt for _, _, dt in program.variables}
        subst = {}
        for name, v in env.items():
            value = made.get(v.i) if type(v) is Ref else None
            # (every variable of the constant's dtype: a NumPy scalar then
            # promotes as the array did under every NumPy's rules)
            if value is None or value.size == 0 or any(value.strides) \
                    or value.dtype.kind not in "fc" or dts != {value.dtype}:
                continue
            if not any(type(w) is Ref and w.i != v.i and meta.get(w.i, (None, None))[1]
                       == value.shape for w in env.values()):
                continue  # (the only array of the region's shape)
            subst[name] = ee.constant(value.reshape(-1)[0])
        if not subst:
            continue
        try:
            roots = tuple(_ones_dropped(ee.substitute(program.nodes[j], subst, {}), {})
                          for j in program.outs)
            new_program = ee.Program(roots)
        except ee.NotExpressible:
            continue
        # (a result that is the seed itself, or becomes a constant, would
        # lose its shape: the region stays as it was)
        if len(new_program.outs) != len(program.outs) or any(
                kind != old for kind, old in zip(new_program.kinds, program.kinds)):
            continue
        new_env = {name: env[name] for name in sorted(new_program.names)}
        out[k] = ("call", step[1], (new_program, new_env, n), step[3], step[4])
    return out


def _ones_dropped(e, memo):
    """``e`` with each real ``multiply(a, 1)`` (``a`` and the product of
    one dtype, the one a constant of it) written as ``a``."""
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    if not e.args:
        r = e
    else:
        args = [_ones_dropped(a, memo) for a in e.args]
        r = None
        if e.op == "multiply" and e.dtype.kind == "f":
            # (real only: (a + bj) * (1 + 0j) is not a + bj when b is
            # infinite or -0.0)
            for a, b in (args, args[::-1]):
                if (b.op == "const" and b.dtype == e.dtype and a.dtype == e.dtype
                        and b.value == 1):
                    r = a
                    break
        if r is None:
            r = ee.rebuild(e, args)
    memo[id(e)] = r
    return r


def _any_large(meta):
    """Whether a value of the plan has ``MIN_CHAIN_SIZE`` elements or more
    (its few distinct shapes looked at)."""
    return any(shape and math.prod(shape) >= MIN_CHAIN_SIZE
               for shape in {m[1] for m in meta.values()})


def _large_ufunc_call(step, meta):
    """Whether ``step`` is a ufunc call whose result has at least
    ``MIN_CHAIN_SIZE`` elements (what ``fuse_chains`` may start from)."""
    if step[0] != "call" or type(step[1]) is not np.ufunc or type(step[4]) is not Ref:
        return False
    found = meta.get(step[4].i)
    return found is not None and len(found[1]) > 0 and math.prod(found[1]) >= MIN_CHAIN_SIZE


def _absorb(steps, outputs, meta, is_region, shared=False):
    """``absorb``'s first pass: the calls each region's values need alone;
    ``shared``: the cheap calls that regions alone read (``SHARED_COST``),
    once the other passes have taken in the rest of their readers
    (``x[1:] - x[:-1]`` read by ``x * x`` of a chain and by a region)."""
    # (uses counted on the steps the outputs need: a primal value an HVP's
    # forward pass used for the value it drops is read by its region alone)
    steps = live_steps(steps, [o for o in outputs if type(o) is Ref])
    regions = [k for k, s in enumerate(steps)
               if s[0] == "call" and is_region(s[1]) and _is_region_call(s)]
    uses = _Counts.of(steps, outputs)
    by_regions = None
    if shared:
        by_regions = _Counts()
        for k in regions:
            for i in {v.i for v in steps[k][2][1].values() if type(v) is Ref}:
                by_regions.add(i)
        if not any(n > 1 and uses.get(i) == n for i, n in by_regions.items()):
            return steps
    made_by = _made_by(steps)
    dirty = _written(steps, is_region)
    steps = list(steps)
    for k in regions:
        new = _absorb_one(steps, k, uses, made_by, meta, dirty, by_regions)
        if new is not None:
            steps[k] = new
    return steps


def _made_by(steps):
    """Per value index, the position of the call step that makes it."""
    return {step[4].i: k for k, step in enumerate(steps)
            if step[0] == "call" and type(step[4]) is Ref}


class _Counts(dict):
    """How many steps read each value (a step reading it twice, as ``x *
    x`` does, counts once)."""

    def add(self, i):
        self[i] = self.get(i, 0) + 1

    @classmethod
    def of(cls, steps, outputs):
        """The reads of every value by ``steps``, and two by each of the
        ``outputs`` (a result is never rewritten)."""
        uses = cls()
        for step in steps:
            if step[0] == "guard":
                uses.add(step[2].i)
            else:
                read = set()
                _uses(step[2], read)
                _uses(step[3], read)
                for i in read:
                    uses.add(i)
        for o in outputs:
            _uses(o, uses)
            _uses(o, uses)
        return uses


def _shared(i, uses, by_regions, found):
    """Whether value ``i``, made by the call ``found`` (``_producer``), may
    be written into every region that reads it: regions are its only
    readers, and the call is cheap enough to repeat in each (the regions
    then read its arguments instead, and nothing stores it)."""
    n = uses.get(i, 0)
    return (n > 1 and by_regions.get(i, 0) == n
            and et._COST.get(found[0], et._OTHER) <= SHARED_COST)


def _absorb_one(steps, k, uses, made_by, meta, dirty, by_regions=None):
    fn, (program, env, n), kwargs, out = steps[k][1:5]
    if not isinstance(program, (ee.Program, _Root)) or \
            not all(type(v) is Ref for v in env.values()):
        return None
    name_of = {v.i: name for name, v in env.items()}
    dtypes = {name: dt for _, name, dt in program.variables}
    if any(meta.get(v.i, (None,))[0] != dtypes.get(name) for name, v in env.items()
           if name in dtypes):
        return None  # (values of other dtypes than the program's: not rewritten)
    exprs = {}   # value index -> its expression over the region's variables
    absorbed = 0
    pending = [v.i for v in env.values()]
    while pending and absorbed < MAX_ABSORBED:
        i = pending.pop()
        if i in exprs or dirty(i):
            continue
        j = made_by.get(i)
        if j is None or j > k:
            continue
        found = _producer(steps[j], meta)
        if found is None:
            continue
        if uses.get(i, 0) != 1 and not (
                by_regions is not None and i in name_of and _shared(i, uses, by_regions,
                                                                     found)):
            continue
        uname, args = found
        if any(type(a) is Ref and (dirty(a.i) or made_by.get(a.i, -1) > j) for a in args):
            continue  # (an argument written, or made again, after the call)
        exprs[i] = (uname, args)
        absorbed += 1
        pending.extend(a.i for a in args if type(a) is Ref)
    if not exprs:
        return None
    # the variables of the new program: the values the absorbed calls read
    # that are not absorbed themselves, and the region's other values
    variables = {}

    def var(i):
        name = name_of.get(i) or f"p{i}"
        if name not in variables:
            variables[name] = Ref(i)
        return name

    built = {}

    def node(i):
        if i in built:
            return built[i]
        if i in exprs:
            uname, args = exprs[i]
            e = _apply(uname, tuple(
                node(a.i) if type(a) is Ref else ee.constant(a) for a in args))
            if e.dtype != meta[i][0]:
                raise ee.NotExpressible("an absorbed call's dtype differs")
        else:
            e = ee.placeholder(var(i), meta[i][0])
        built[i] = e
        return e

    try:
        subst = {}
        for name, v in env.items():
            subst[name] = node(v.i)
        roots = tuple(ee.substitute(program.nodes[s], subst, {}) for s in program.outs)
        new_program = ee.Program(roots)
    except ee.NotExpressible:
        return None
    for name in new_program.names:
        if name not in variables:
            variables[name] = env[name]
    new_env = {name: variables[name] for name in sorted(new_program.names)}
    for i in exprs:
        if uses.get(i, 0) > 1:  # another region reads it yet
            uses[i] -= 1
            by_regions[i] -= 1
        else:
            uses[i] = 0  # (their steps are dead now: the plan drops them)
    # (the region now reads what the absorbed calls read)
    for name, v in new_env.items():
        if type(v) is Ref and name not in env:
            uses.add(v.i)
            if by_regions is not None:
                by_regions.add(v.i)
    return ("call", fn, (new_program, new_env, n), kwargs, out)


def scatter_pairs(steps, outputs, meta, is_region):
    """``steps`` with each region whose results ``A`` and ``B`` the plan
    then scatters as ``D = empty(L + 1); D[0:1] = 0; D[1:] = A; D[:-1] +=
    B`` (or the mirror image), and reads nowhere else, written as one step
    of ``kernel_scatter.run`` that gives ``D``."""
    uses = _Counts.of(steps, outputs)
    out, k = [], 0
    while k < len(steps):
        step = steps[k]
        found = None
        if step[0] == "call" and is_region(step[1]) and _is_region_call(step) \
                and type(step[4]) is tuple:
            found = _scatter_at(steps, k, uses, meta)
        if found is None:
            out.append(step)
            k += 1
        else:
            out.append(found)
            k += 6
    return out


def _same(x, y):
    return type(x) is Ref and type(y) is Ref and x.i == y.i


def _index(idx, m):
    """``(start, stop)`` of a step-1 slice (alone or in a 1-tuple) of a
    length-``m`` axis, else None."""
    if type(idx) is tuple and len(idx) == 1:
        idx = idx[0]
    if type(idx) is not slice:
        return None
    start, stop, stride = idx.indices(m)
    return (start, stop) if stride == 1 else None


def _scatter_at(steps, k, uses, meta):
    """The step replacing region ``steps[k]`` and the five scatter steps
    after it, else None."""
    fn, (program, env, n), kwargs, outs = steps[k][1:5]
    nxt = steps[k + 1:k + 6]
    if len(nxt) < 5 or any(s[0] != "call" or len(s) != 5 for s in nxt):
        return None
    (f_e, a_e, k_e, d), (f_z, a_z, k_z, o_z), (f_c, a_c, k_c, o_c), \
        (f_v, a_v, k_v, w), (f_a, a_a, k_a, o_a) = [s[1:5] for s in nxt]
    if not (f_e is np.empty_like and type(d) is Ref and f_z is operator.setitem
            and f_c is operator.setitem and f_v is operator.getitem and f_a is np.add
            and not (k_z or k_c or k_v) and o_z is None and o_c is None and o_a is None
            and type(w) is Ref and set(k_e) == {"shape", "dtype"}
            and set(k_a) == {"out"}):
        return None
    shape, dtype = k_e["shape"], k_e["dtype"]
    if type(shape) is not tuple or len(shape) != 1 or type(shape[0]) is not int:
        return None
    m = shape[0]
    out_w = k_a["out"]
    if not (len(a_z) == 3 and _same(a_z[0], d) and len(a_c) == 3 and _same(a_c[0], d)
            and len(a_v) == 2 and _same(a_v[0], d) and len(a_a) == 2 and _same(a_a[0], w)
            and type(out_w) is tuple and len(out_w) == 1 and _same(out_w[0], w)
            and type(a_z[2]) in (int, float) and a_z[2] == 0):
        return None
    ra, rb = a_c[2], a_a[1]
    if type(ra) is not Ref or type(rb) is not Ref or ra.i == rb.i:
        return None
    a = next((j for j, o in enumerate(outs) if _same(o, ra)), None)
    b = next((j for j, o in enumerate(outs) if _same(o, rb)), None)
    # (the prototype of ``empty_like`` may be one of them: it gives no values)
    proto = {a_e[0].i} if len(a_e) == 1 and type(a_e[0]) is Ref else set()
    if a is None or b is None or uses.get(w.i) != 1 \
            or uses.get(ra.i) != 1 + (ra.i in proto) or uses.get(rb.i) != 1 + (rb.i in proto):
        return None
    if meta.get(ra.i) != (np.dtype(dtype), (m - 1,)) or meta.get(rb.i) != meta[ra.i]:
        return None
    z, c, v = _index(a_z[1], m), _index(a_c[1], m), _index(a_v[1], m)
    if (z, c, v) == ((0, 1), (1, m), (0, m - 1)):
        a_last = True
    elif (z, c, v) == ((m - 1, m), (0, m - 1), (1, m)):
        a_last = False
    else:
        return None
    new_outs = tuple(d if j == a else o for j, o in enumerate(outs))
    return ("call", kernel_scatter.run,
            (program, env, n, kernel_scatter.Scatter(a, b, a_last, m, dtype)), kwargs,
            new_outs)


def fuse_chains(steps, outputs, meta, is_region):
    """``steps`` with each chain of elementwise ufunc calls of the plan
    whose intermediate results nothing else reads (``sqrt(dx * dx + dy * dy
    + eps)``) written as one region step (``kernels.run``) computing its
    last result: one program, one pass once compiled, instead of a call
    and a new array per operation. The program makes the same NumPy calls
    in the same dtypes (as ``absorb``'s), so results are unchanged."""
    steps = live_steps(steps, [o for o in outputs if type(o) is Ref])
    uses = _Counts.of(steps, outputs)
    made_by = _made_by(steps)
    dirty = _written(steps, is_region)
    steps = list(steps)
    n = et.threads()
    fused = False
    for k in range(len(steps) - 1, -1, -1):
        step = steps[k]
        found = _producer(step, meta)
        if found is None or uses.get(step[4].i, 0) == 0:
            continue  # (not a ufunc call, or one a later chain took in)
        out = step[4]
        dtype, shape = meta[out.i]
        # (the result may be written into later: the program's is a new
        # array; what it takes in is never written, ``_absorb_one`` checks)
        if not shape or math.prod(shape) < MIN_CHAIN_SIZE:
            continue
        uname, args = found
        # (a chain only where an argument is a ufunc call's result read here
        # alone: the check before any program is built)
        if not any(type(a) is Ref and uses.get(a.i, 0) == 1 and not dirty(a.i)
                   and made_by.get(a.i, k) < k and _producer(steps[made_by[a.i]], meta)
                   for a in args):
            continue
        try:
            root = _apply(uname, tuple(
                ee.placeholder(f"p{a.i}", meta[a.i][0]) if type(a) is Ref
                else ee.constant(a) for a in args))
        except ee.NotExpressible:
            continue
        if root.dtype != dtype:
            continue
        program = _Root(root, [(f"p{a.i}", meta[a.i][0]) for a in args if type(a) is Ref])
        env = {f"p{a.i}": a for a in args if type(a) is Ref}
        steps[k] = ("call", kernels.run, (program, env, n), {}, (out,))
        new = _absorb_one(steps, k, uses, made_by, meta, dirty)
        if new is None:
            steps[k] = step  # (nothing to take in: the call as it was)
        else:
            steps[k] = new
            fused = True
    if not fused:
        return steps
    return live_steps(steps, [o for o in outputs if type(o) is Ref])


class _Root:
    """What ``_absorb_one`` reads of a program, for one expression over
    placeholders (a chain's last call): no program is built for it."""

    __slots__ = ("nodes", "outs", "variables")

    def __init__(self, root, names):
        self.nodes, self.outs = (root,), (0,)
        self.variables = [(None, name, dt) for name, dt in names]


def _given(x):
    return x


def drop_copies(steps, outputs, meta, is_region=lambda fn: False):
    """``steps`` with each ``astype(v, dtype, copy=True)`` of a value ``v``
    of that dtype that the plan made as a new array (a ufunc's result, a
    region's result computed by its program) and nothing else reads
    replaced by ``v`` itself: the sweeps copy a cotangent before writing
    into it because they cannot know who else holds it; the plan can."""
    uses = _Counts.of(steps, outputs)
    made = {}
    for step in steps:
        if step[0] != "call" or len(step) != 5:
            continue
        fn, args, kwargs, out = step[1:5]
        if type(out) is Ref and isinstance(fn, np.ufunc) and not kwargs:
            made[out.i] = meta.get(out.i)
        elif type(out) is tuple and (is_region(fn) and _is_region_call(step)
                                     or fn is kernel_scatter.run):
            program = args[0]
            for j, o in enumerate(out):
                # (a value given, a constant, or one array given twice: not new)
                if type(o) is Ref and program.kinds[j] == "step" \
                        and program.outs.count(program.outs[j]) == 1:
                    made[o.i] = meta.get(o.i)
    out = []
    for step in steps:
        if step[0] == "call" and step[1] is _astype and len(step) == 5 \
                and type(step[4]) is Ref and len(step[2]) == 2 and type(step[2][0]) is Ref:
            (v, dtype), kwargs = step[2], step[3]
            dt_shape = made.get(v.i)
            if kwargs.get("copy") is True and dt_shape is not None and dt_shape[1] \
                    and dt_shape[0] == np.dtype(dtype) and uses.get(v.i) == 1:
                step = ("call", _given, (v,), {}, step[4])
        out.append(step)
    return out
