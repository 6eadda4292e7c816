"""Fused sweeps: connected regions of elementwise rules swept as one rule.

After a function is traced, ``fuse(tape, outputs)`` finds the maximal
regions of elementwise derived rules (``scalar_rule``'s unary and binary
rules and constant-partial rules, of one dtype and the root's shape, each
member but the root read by one other member only and not an output) and
puts one ``FusedRegion`` (``fused_region``) at each region's root in place
of its members. Its pullback, pushforward and pullback with tangents are
programs written once per region shape (``fusion_code.RegionCode``, cached
by the members' specs, wiring and constants, not by the values), evaluated
with NumPy into recycled buffers: every sweep of the tape (reverse, forward, forward over
reverse) then makes one call for the region, multiplies scalar factors
before touching the data, and never computes or stores the tangents and
cotangents of the members inside.

The forward pass is untouched: the user's code runs eagerly, once. On dask
arrays each program is one task per chunk (``elementwise_chunks``). A
traced value of an outer recording (nested differentiation) and cotangents
of another dtype take the members' own rules one by one, as do anomaly
mode (which names the operation that made a NaN) and ``fusion(False)``.
"""

from __future__ import annotations

import contextlib
import contextvars
from math import prod
from typing import Any, Iterator, Literal

import numpy as np

from . import elementwise_expr as ee
from . import elementwise_threads
from . import kernels as compiled_kernels
from .derived import BinaryScalarRule, UnaryScalarRule
from .derived_common import NotKept
from .derived_linear import BilinearRule, ConstPartialRule, SelfProductRule
from .fused_region import FusedRegion
from .fusion_code import Member, RegionCode
from .sweep_common import MULTI

__all__ = ["fusion", "fuse", "recording", "FusedRegion"]

_ndarray = np.ndarray
_enabled = contextvars.ContextVar("chainrules_fusion", default=True)

#: the smallest root size fused, for first-order sweeps and for sweeps with
#: tangents (HVPs, Hessians): below it a program's fixed cost (finding the
#: regions, a Python step per operation) is not repaid by the passes it
#: saves. Measured with ``benchmarks/fusion.py`` (one thread): gradients gain
#: nothing before about 1e5 elements (NumPy makes the same passes; fusion
#: saves the rules' Python calls and temporaries), HVPs from about 1.6e4
#: (the members' tangents are never computed)
MIN_SIZE = 65536
MIN_SIZE_SECOND = 16384
#: the smallest root size fused while a plan is recorded (``cr.jit``, inside
#: ``recording()``): finding the regions is paid once, and a plan replays
#: the fused derivatives' programs, which make fewer passes than the rules'
#: own calls (no tangents of members, no products by ones or minus ones).
#: Measured (Rosenbrock, 1e4 elements, kernels off): a replayed HVP 45.6 ->
#: 36.9 us, a value_and_grad 48.7 -> 42.7; the size from which a plan's
#: chains of calls become programs (``plan_regions.MIN_CHAIN_SIZE``)
MIN_SIZE_STAGED = 4096
_staging = contextvars.ContextVar("chainrules_fusion_staging", default=False)

#: the fewest non-linear members a region needs: one non-linear rule among
#: linear ones (``tanh(x @ W + b)``) is already swept in its fewest passes
#: by its own rule, which keeps its first partial and scales one buffer in
#: place; fused, it measured 3-6% slower in the MLP's HVP
MIN_NONLINEAR = 2

#: the most members a region holds: a region's programs are written as
#: expressions whose depth grows with its members (a chain of n rules is a
#: product of n partials), and writing them walks that depth recursively;
#: a longer chain is cut into regions of this many (each a root of its own,
#: whose cotangent is the next region's input)
MAX_MEMBERS = 48

#: the most nodes of a tape whose shapes ``fuse`` reads one by one to find
#: whether one is large enough (of a longer tape, its few distinct shapes)
_FEW_NODES = 16


@contextlib.contextmanager
def fusion(enabled: bool = True, *, threads: int | None = None,
           kernels: bool | Literal["auto", "off", "always"] | None = None) -> Iterator[None]:
    """Turn fused sweeps on or off in this context (thread, task); they are
    on by default. Off, every rule is swept on its own, as anomaly mode does.

    ``threads``: how many threads a region's passes may use in this context
    (None: as before). By default ``CHAINRULES_NUM_THREADS``, else the first
    of ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS``
    that is set, else the cores this process may use
    (``chainrules/elementwise_threads.py``). Results do not depend on it.

    ``kernels``: whether the hot regions of staged plans (``cr.jit``) run as
    compiled loops when numba is installed: True (the default: once they
    have repaid a compile and measure faster), False, or ``"always"`` (at
    their first replay, whatever their speed). None: as before; by default
    ``CHAINRULES_KERNELS`` (``0`` turns them off). Results agree with the
    NumPy program's to a few units in the last place
    (``chainrules/kernels.py``).

    Examples
    --------
    >>> import numpy as np, chainrules as cr
    >>> with cr.fusion(False):
    ...     cr.grad(lambda x: np.sum(np.tanh(2.0 * x) ** 2))(np.zeros(3))
    array([0., 0., 0.])
    >>> with cr.fusion(threads=1):  # fused, on the calling thread only
    ...     cr.grad(lambda x: np.sum(np.tanh(2.0 * x) ** 2))(np.zeros(3))
    array([0., 0., 0.])
    """
    mode = None if kernels is None else compiled_kernels.set_mode(kernels)
    count = None if threads is None else elementwise_threads.set_threads(threads)
    token = _enabled.set(bool(enabled))
    try:
        yield
    finally:
        _enabled.reset(token)
        if count is not None:
            elementwise_threads.reset_threads(count)
        if mode is not None:
            compiled_kernels.reset_mode(mode)


# -- finding regions --------------------------------------------------------------------
_codes: dict[Any, Any] = {}
#: the regions found per tape structure (``find_regions``): a loop that
#: traces the same function again (an optimiser's ``value_and_grad``) finds
#: them once; emptied past 256 structures or 100,000 recorded operations
_plans: dict[Any, Any] = {}
_plans_nodes = 0
_FUSIBLE = frozenset((UnaryScalarRule, BinaryScalarRule, ConstPartialRule, BilinearRule,
                      SelfProductRule))


def _const_key(v):
    """How a constant argument enters the code: a scalar as a constant
    (its type and bits), an array as a variable of its dtype."""
    if isinstance(v, NotKept):  # not read by the partials
        return ("array", None)
    if type(v) is float:  # its bits: 0.0 and -0.0 differ (1 / c), NaNs agree
        return ("scalar", float, v.hex())
    if type(v) is complex:
        return ("scalar", complex, v.real.hex(), v.imag.hex())
    if type(v) in (int, bool):
        return ("scalar", type(v), v)
    if isinstance(v, np.generic) or (type(v) is _ndarray and v.ndim == 0):
        return ("scalar", v.dtype.str, np.asarray(v).tobytes())
    return ("array", getattr(getattr(v, "dtype", None), "str", None))


_expressible: dict[Any, Any] = {}


def _has_expressions(spec, dtype):
    """Whether ``spec``'s partials are expressions for ``dtype``, second
    partials included (cached). A rule without them raises HvpNotSupported
    in a sweep with tangents; the code would read a missing one as zero."""
    key = (id(spec), dtype)
    hit = _expressible.get(key)
    if hit is None or hit[0] is not spec:
        if len(_expressible) > 4096:
            _expressible.clear()
        exprs = ee.expressions(spec, dtype)
        # (binary: a missing dxy is zero, as the rule itself reads it)
        ok = exprs is not None and all(exprs.get(f, 0) is not None for f in ("d2", "dxx", "dyy"))
        hit = _expressible[key] = (spec, ok)
    return hit[1]


def _describe(rule, dtypes, dtype):
    """``(key, traced input ids by place)`` of a fusible rule whose node has
    ``dtype``, or None."""
    t = type(rule)
    if t is UnaryScalarRule:
        x = rule.x_id
        if dtypes[x] != dtype or not _has_expressions(rule.spec, dtype):
            return None
        return ("unary", rule.spec), (x,)
    if t is ConstPartialRule:
        if dtypes[rule.x_id] != dtype:
            return None
        return ("const", _const_key(rule.d)), (rule.x_id,)
    if t is BilinearRule:
        xi, yi = rule.x_id, rule.y_id
        if (rule.op is not np.multiply or rule.args or rule.kwargs
                or (xi is not None and dtypes[xi] != dtype)
                or (yi is not None and dtypes[yi] != dtype)):
            return None
        return ("multiply", None if xi is not None else _const_key(rule.x),
                None if yi is not None else _const_key(rule.y)), (xi, yi)
    if t is SelfProductRule:
        if dtypes[rule.x_id] != dtype:
            return None
        return ("square",), (rule.x_id,)
    if t is BinaryScalarRule:
        xi, yi = rule.x_id, rule.y_id
        if ((xi is not None and dtypes[xi] != dtype) or (yi is not None and dtypes[yi] != dtype)
                or not _has_expressions(rule.spec, dtype)):
            return None
        return ("binary", rule.spec, None if xi is not None else _const_key(rule.x),
                None if yi is not None else _const_key(rule.y)), (xi, yi)
    return None


def _int_or_none(q):
    """An int or None as itself (NumPy's ints as ints), else NotImplemented."""
    if q is None or type(q) is int:
        return q
    if isinstance(q, (int, np.integer)) and not isinstance(q, (bool, np.bool_)):
        return int(q)
    return NotImplemented


def _index_part(p):
    """A hashable form of one part of a basic index, or NotImplemented."""
    if type(p) is slice:
        parts = (_int_or_none(p.start), _int_or_none(p.stop), _int_or_none(p.step))
        return NotImplemented if NotImplemented in parts else ("slice",) + parts
    if p is Ellipsis:
        return p
    return _int_or_none(p)


def _index_key(index):
    """A basic index (``gather_index``) as a hashable key, or None. Regions
    read gathers of one node at one index as one input (``_aliases``):
    shifted slices of one image, ``x[1:] - x[:-1]`` and ``x[:-1] * 2``, add
    one cotangent into the image's, computed as a sum in the region's
    program."""
    parts = tuple(_index_part(p) for p in (index if type(index) is tuple else (index,)))
    if any(p is NotImplemented for p in parts):
        return None
    return type(index) is tuple, parts


def find_regions(tape, outputs, keep=(), min_size=0):
    """The regions to fuse: a list of ``(member node ids in tape order, region
    input ids, code key)``; roots smaller than ``min_size`` are not fused."""
    rules, shapes, dtypes = tape.rules, tape.shapes, tape.dtypes
    fusible = _FUSIBLE
    # the shapes large enough, from the few distinct shapes of the tape
    big = {s for s in set(shapes) if s is not MULTI and prod(s) >= min_size}
    if not big:
        return []
    cand = [i for i, r in enumerate(rules) if shapes[i] in big and type(r) in fusible]
    if len(cand) < 2:
        return []
    described = {}
    for i in cand:
        dtype = dtypes[i]
        if dtype.kind in "fc":
            d = _describe(rules[i], dtypes, dtype)
            if d is not None:
                described[i] = d
    wiring = []
    for rule in rules:
        if rule is None:
            wiring.append(None)
        else:
            ins = rule.inputs()
            wiring.append(ins if type(ins) is tuple else tuple(ins))
    # the tape's structure: everything the regions depend on (the rules'
    # wiring, shapes and dtypes, the fusible rules' descriptions, which fix
    # their linearity, the outputs, the thresholds), none of the values
    structure = (tuple(wiring), tuple(shapes), tuple(dtypes), tuple(described.items()),
                 tuple(outputs), tuple(keep), min_size, MIN_NONLINEAR, MAX_MEMBERS)
    found = _plans.get(structure)
    if found is None:
        global _plans_nodes
        if len(_plans) >= 256 or _plans_nodes > 100_000:  # (keys grow with their tapes)
            _plans.clear()
            _plans_nodes = 0
        found = _plans[structure] = _grow_regions(rules, shapes, dtypes, wiring, described,
                                                  cand, outputs, keep)
        _plans_nodes += len(rules)
    return found


def _grow_regions(rules, shapes, dtypes, wiring, described, cand, outputs, keep):
    """``find_regions`` of a tape structure not seen before: each region
    grown from its root through members read by one member only."""
    uses = [0] * len(rules)
    for ins in wiring:
        if ins is not None:
            for j in ins:
                uses[j] += 1
    for o in outputs:
        if o is not None:
            uses[o] += 2
    for k in keep:
        uses[k] += 2
    claimed = set()
    found = []
    for i in reversed(cand):
        if i in claimed or i not in described:
            continue
        dtype, shape = dtypes[i], shapes[i]
        members = {i: described[i]}
        stack = [i]
        while stack and len(members) < MAX_MEMBERS:
            m = stack.pop()
            for j in members[m][1]:
                if (j is not None and j not in members and uses[j] == 1 and j in described
                        and shapes[j] == shape and dtypes[j] == dtype
                        and len(members) < MAX_MEMBERS):
                    members[j] = described[j]
                    stack.append(j)
        if len(members) < 2 or sum(not rules[m].linear for m in members) < MIN_NONLINEAR:
            continue
        claimed.update(members)
        order = sorted(members)
        local = {nid: k for k, nid in enumerate(order)}
        ins = sorted({j for m in order for j in members[m][1]
                      if j is not None and j not in local})
        at = {nid: j for j, nid in enumerate(ins)}
        key = [dtype.str]
        for m in order:
            desc, srcs = members[m]
            key.append((desc, tuple(None if s is None else
                                    ("member", local[s]) if s in local else ("input", at[s])
                                    for s in srcs)))
        found.append((tuple(order), tuple(ins), tuple(key)))
    return found


def _aliases(ins, rules, pinned):
    """``{gather id: the region input taken for it}`` among the region
    inputs ``ins``: a gather of the node and index of an earlier one (the
    values and tangents of the two are the same). A node whose cotangent
    is asked for (``pinned``) is never merged."""
    parents = {}
    for j in ins:
        r = rules[j]
        if getattr(r, "gather_index", None) is not None and j not in pinned:
            src = r.inputs()
            if len(src) == 1:
                parents.setdefault(src[0], []).append(j)
    alias = {}
    for js in parents.values():
        if len(js) > 1:  # (rare: the keys are made only then)
            first = {}
            for j in js:
                k = _index_key(rules[j].gather_index)
                if k is not None:
                    a = first.setdefault(k, j)
                    if a != j:
                        alias[j] = a
    return alias


def _merged(ins, key, alias):
    """A region's inputs and code key with each aliased gather read as the
    input it stands for."""
    kept = tuple(j for j in ins if j not in alias)
    at = {j: p for p, j in enumerate(kept)}
    new = {p: at[alias.get(j, j)] for p, j in enumerate(ins)}
    key = (key[0],) + tuple(
        (desc, tuple(("input", new[s[1]]) if s is not None and s[0] == "input" else s
                     for s in srcs))
        for desc, srcs in key[1:])
    return kept, key


def _code(key, order, rules):
    """The ``RegionCode`` of a region key (made from the rules once)."""
    hit = _codes.get(key)
    if hit is None:
        if len(_codes) > 1024:
            _codes.clear()
        dtype = np.dtype(key[0])
        members = []
        n_inputs = 1 + max((s[1] for _, srcs in key[1:] for s in srcs
                            if s is not None and s[0] == "input"), default=-1)
        try:
            for k, ((desc, srcs), nid) in enumerate(zip(key[1:], order)):
                members.append(_member(k, desc, srcs, rules[nid], dtype))
            code = RegionCode(members, n_inputs, dtype)
        except ee.NotExpressible:
            code = None
        # the specs in the key stay alive with it (ids are not reused)
        hit = _codes[key] = (code,)
    return hit[0]


def _member(k, desc, srcs, rule, dtype):
    kind = desc[0]
    if kind == "const":
        return Member("const", srcs, {"d": ee.constant(rule.d)})
    x, y = ee.placeholder(f"x{k}", dtype), ee.placeholder(f"y{k}", dtype)
    if kind == "unary":
        return Member("unary", srcs, ee.build_on(rule.spec, ("d", "d2"), (x, y)))
    if kind == "square":  # x * x of one node
        return Member("unary", srcs, {"d": ee.apply(np.multiply, (2, x)), "d2": ee.constant(2)})
    args = []
    consts = desc[1:3] if kind == "multiply" else desc[2:4]
    for role, const, v in (("x", consts[0], rule.x), ("y", consts[1], rule.y)):
        if const is None:
            args.append(ee.placeholder(f"{role}{k}", dtype))
        elif const[0] == "scalar":
            args.append(ee.constant(v))
        else:
            args.append(ee.placeholder(f"{role}{k}", np.dtype(const[1] or dtype)))
    if kind == "multiply":  # bilinear: d/dx = y, d/dy = x, one mixed second partial
        return Member("binary", srcs, {"dx": args[1], "dy": args[0], "dxx": None,
                                       "dxy": ee.constant(1), "dyy": None})
    args.append(ee.placeholder(f"z{k}", dtype))
    return Member("binary", srcs, ee.build_on(rule.spec, ("dx", "dy", "dxx", "dxy", "dyy"),
                                              args))


class recording:
    """The context in which a staged plan records: regions from
    ``MIN_SIZE_STAGED`` elements. (A class, not a generator: entered once
    per recording, where a generator's context manager costs a
    microsecond.)"""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _staging.set(True)

    def __exit__(self, *exc: object) -> None:
        _staging.reset(self._token)


def fuse(tape, outputs, keep=(), second_order=False):
    """Put a ``FusedRegion`` at the root of every region of ``tape`` that
    sweeps from ``outputs`` (and keeping the cotangents of ``keep``) may
    fuse, in place of its members: afterwards the members inside a region
    have no tangents or cotangents of their own. ``second_order``: the tape
    is for sweeps with tangents (``MIN_SIZE_SECOND``, else ``MIN_SIZE``).
    Returns the number of regions. Does nothing with fusion off, in anomaly
    mode, or on a freed tape."""
    shapes = tape.shapes
    if len(shapes) < 2 or tape.anomaly or tape.freed is not None:
        return 0  # (a region has two members at least)
    min_size = MIN_SIZE_SECOND if second_order else MIN_SIZE
    # the shapes to read: a short tape's own, else its few distinct ones
    distinct = shapes if len(shapes) <= _FEW_NODES else set(shapes)
    least = min_size if min_size < MIN_SIZE_STAGED else MIN_SIZE_STAGED
    if least > 1:
        # only 0-d values and 1-d ones shorter than the smallest root that
        # any sweep fuses (a call's fixed cost): nothing to do, found before
        # the context is read
        try:
            for shape in distinct:
                if shape and (len(shape) > 1 or shape[0] >= least):
                    break
            else:
                return 0
        except TypeError:  # (a multi-output node)
            pass
    if not _enabled.get():
        return 0
    if _staging.get():  # (a recording fuses what eager sweeps do, and more)
        min_size = min(min_size, MIN_SIZE_STAGED)
    for shape in distinct:
        if shape is MULTI or prod(shape) >= min_size:
            break
    else:  # no array as large as a region's root (a tape of small arrays)
        return 0
    rules = tape.rules
    count = 0
    pinned = None
    for order, ins, key in find_regions(tape, outputs, keep, min_size):
        if pinned is None:
            pinned = {o for o in outputs if o is not None} | set(keep)
        alias = _aliases(ins, rules, pinned)
        if alias:
            ins, key = _merged(ins, key, alias)
            alias = tuple(alias.items())
        else:
            alias = ()
        code = _code(key, order, rules)
        if code is None:
            continue
        members = [rules[m] for m in order]
        root = order[-1]
        rules[root] = FusedRegion(tuple(ins), tuple(order), members, code,
                                  tuple(tape.shapes[j] for j in ins), tape.shapes[root], alias)
        for m in order[:-1]:
            rules[m] = None
        count += 1
    return count
