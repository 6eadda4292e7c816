"""A pass on staged plans: a fused region whose results a later region
reads becomes part of that region's program.

``plan_regions.fuse_chains`` cuts a plan's elementwise calls into chains
that each end at a value read more than once. An HVP of Rosenbrock's
function on 1e4 elements gives two: the first makes a cotangent that the
plan stores (it is scattered into the gradient) and that the second reads.
Each region is then a program of its own: the second reads the first's
result back from memory, and the pair of results is not one region's, so
``plan_regions.scatter_pairs`` cannot write the scatter as one step, and
the gradient's seed of ones stays an array that each product reads.

``merge_regions`` writes two regions, the second reading a result of
the first, as one program computing both regions' results (the first's
where something other than the second reads them): where the second's
values are all there when the first runs (it reads only the first's
results and values made before it), at the first's place; else, where no
step between them reads the first's results, at the second's. A pair
that cannot be one is not tried again, and the pass stops after
``MAX_SCANNED`` steps scanned (each merge rescans the plan).
The program makes the same NumPy calls on the same values in the same
dtypes (a node the two compute alike is computed once, to the same bits),
so the replay's results are unchanged bit for bit. It merges only where
that holds without a doubt: both regions run by one function with the
same thread count, on values of the plan that nothing writes in place,
with results of one shape.
"""

from . import elementwise_expr as ee
from .plan_passes import _defines, _uses
from .staging import Ref

__all__ = ["merge_regions", "MAX_NODES", "MAX_SCANNED"]

#: the most nodes a merged program may have (a bound on its size)
MAX_NODES = 160
#: the most steps the pass scans in one plan: each merge rescans the plan
#: (its reads and writes), so a plan of a long loop (an LSTM's 64 steps:
#: 64 pairs to merge, about 30 ms a scan over its 5700 steps) would pay
#: seconds at its first replay; a plan of a few hundred steps makes every
#: merge (a loop of 40 tanh steps on 5000 elements: 75 merges, its replay
#: 2.0 -> 1.0 ms)
MAX_SCANNED = 50_000


def merge_regions(steps, outputs, meta, is_region_call, counts, written):
    """``steps`` with regions merged (see the module's text), and whether
    any was. ``is_region_call(step)``: whether a step runs a region's
    program (arguments ``(program, env, threads)``); ``counts(steps,
    outputs)``: per value, the steps reading it (an output counts twice);
    ``written(steps)``: whether a value is written in place or may share
    memory with one that is."""
    merged = False
    # pairs tried without success, by their steps (kept alive here, so that
    # an id is not reused): a later scan does not build them again
    failed: dict = {}
    budget = MAX_SCANNED
    while budget >= len(steps):
        budget -= len(steps)
        found = _next_pair(steps, outputs, meta, is_region_call, counts, written, failed)
        if found is None:
            break
        drop, at, new = found
        steps = [new if k == at else s for k, s in enumerate(steps) if k != drop]
        merged = True
    return steps, merged


def _region(step, is_region_call):
    """``(fn, program, env, threads, outs)`` of a region step whose values
    and results are all the plan's, else None."""
    if step[0] != "call" or not is_region_call(step):
        return None
    fn, (program, env, n), _, outs = step[1:5]
    if not isinstance(program, ee.Program) or type(outs) is not tuple \
            or not all(type(v) is Ref for v in env.values()) \
            or not all(type(o) is Ref for o in outs) or len(outs) != len(program.outs):
        return None
    return fn, program, env, n, outs


def _next_pair(steps, outputs, meta, is_region_call, counts, written, failed):
    regions = {k: r for k, s in enumerate(steps)
               if (r := _region(s, is_region_call)) is not None}
    if len(regions) < 2:
        return None
    uses = counts(steps, outputs)
    dirty = written(steps)
    made_at = {}
    for k, step in enumerate(steps):
        if step[0] == "call":
            made: set = set()
            _defines(step[4], made)
            made_at.update(dict.fromkeys(made, k))
    # the pairs worth a program: the second reads a result of the first (a
    # value stored and read back), found through the values rather than by
    # trying every pair (a plan of a long loop has hundreds of regions)
    by_result = {}
    for k, r in regions.items():
        for o in r[4]:
            by_result[o.i] = k
    for k2 in sorted(regions):
        reads = {v.i for v in regions[k2][2].values()}
        for k1 in sorted({by_result[i] for i in reads if i in by_result and by_result[i] < k2}):
            r1, r2 = regions[k1], regions[k2]
            if r1[0] is not r2[0] or r1[3] != r2[3]:
                continue
            key = (id(steps[k1]), id(steps[k2]))
            if key in failed:
                continue
            new = _merged(steps, k1, k2, r1, r2, uses, dirty, meta, made_at)
            if new is not None:
                return new
            failed[key] = (steps[k1], steps[k2])
    return None


def _merged(steps, k1, k2, first, second, uses, dirty, meta, made_at):
    """``(position dropped, position of the merged step, the step)``, or
    None where the two regions cannot be one."""
    fn, prog1, env1, n, outs1 = first
    _, prog2, env2, _, outs2 = second
    refs = [*env1.values(), *env2.values(), *outs1, *outs2]
    if any(dirty(r.i) or r.i not in meta for r in refs):
        return None
    shape = meta[outs2[0].i][1]
    if any(meta[o.i][1] != shape for o in (*outs1, *outs2)):
        return None
    made = {o.i for o in outs1}
    read2 = {v.i for v in env2.values()}
    if all(made_at.get(i, -1) < k1 or i in made for i in read2) \
            and not _added_into(steps, {o.i for o in outs2}):
        # the second's values are there at the first: it moves up (unless
        # its results are added into an array, which the scatter passes
        # write as one step with the region right before them)
        at, drop = k1, k2
    elif read2 & made:
        # the first moves down to the second, if nothing between reads its results
        between: set = set()
        for step in steps[k1 + 1:k2]:
            _uses(step[2], between)
            if step[0] == "call":
                _uses(step[3], between)
        if between & made:
            return None
        at, drop = k2, k1
    else:
        return None
    try:
        # the first's expressions over the plan's values, named by index
        nodes1 = {}
        subst1 = {name: ee.placeholder(f"p{v.i}", meta[v.i][0]) for name, v in env1.items()}
        memo: dict = {}
        for j, o in enumerate(outs1):
            nodes1[o.i] = ee.substitute(prog1.nodes[prog1.outs[j]], subst1, memo)
        subst2 = {}
        for name, v in env2.items():
            e = nodes1.get(v.i)
            if e is None:
                e = ee.placeholder(f"p{v.i}", meta[v.i][0])
            elif e.dtype != meta[v.i][0]:
                return None
            subst2[name] = e
        memo = {}
        roots2 = [ee.substitute(prog2.nodes[s], subst2, memo) for s in prog2.outs]
        # the first's results something other than the second reads
        kept = [o for o in outs1
                if uses.get(o.i, 0) > (1 if o.i in read2 else 0)]
        program = ee.Program(tuple(nodes1[o.i] for o in kept) + tuple(roots2))
    except ee.NotExpressible:
        return None
    if len(program.nodes) > MAX_NODES:
        return None
    env = {name: Ref(int(name[1:])) for name in sorted(program.names)}
    return drop, at, ("call", fn, (program, env, n), {}, tuple(kept) + outs2)


def _added_into(steps, values):
    """Whether a write (``out=``) reads one of ``values``."""
    for step in steps:
        if step[0] == "call" and step[4] is None and "out" in step[3]:
            read: set = set()
            _uses(step[2], read)
            if not read.isdisjoint(values):
                return True
    return False
