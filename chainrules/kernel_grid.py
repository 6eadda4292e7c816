"""A fused region over a grid whose results are added into one array at
neighbouring offsets: the gradient of a two-dimensional finite difference.

The pullback of ``x[1:, :-1] - x[:-1, :-1]`` and ``x[:-1, 1:] -
x[:-1, :-1]`` (total variation, a stencil on an image) adds several
cotangents of shape ``(R0, R1)`` into shifted views of one array ``D`` of
shape ``(R0 + 1, R1 + 1)``: ``D[o0:o0 + R0, o1:o1 + R1] += C`` for each,
with offsets ``o0, o1`` of 0 or 1. In a staged plan the cotangents come
out of one region's program, written as arrays and then added by strided
passes over ``D`` (each about five times a contiguous pass).
``plan_grid.scatter_grids`` writes the region and its additions as one
step, ``run`` here: the NumPy program and then the same NumPy additions
into ``D`` (``Grid.numpy``; over blocks of rows when ``D`` is large, so
that each block's terms are added while they are in cache), or, once the region is hot, one compiled loop
that writes every element of ``D`` once (``Grid.source``) into a new array,
copied into ``D`` when no NaN or infinity was made (else ``D`` is left as
it was, and the NumPy program runs, to warn or raise as NumPy does).

The loop visits the region's elements row by row. Each element of ``D``
is written once, when the last of its terms has been computed: its base
value plus the terms in the order of the plan's additions, as NumPy adds
them, so the results are NumPy's bit for bit. A term from the element to
the left is carried in a scalar, one from the row above in a row buffer,
one from above and to the left in both. A term that does not exist (at
an edge of ``D``) is added as ``-0.0``, which leaves every value as it is,
signed zeros included. The last column and the last row of ``D`` get their
terms after their row and after the loop. Blocks of rows run on threads;
each block first computes the row above it again, into its buffers alone.
"""

import numpy as np

from . import elementwise_threads as et
from . import kernels
from .kernel_source import HEADER, NotCompilable, program_lines

__all__ = ["Grid", "run", "BASE"]

#: the name under which a grid step's environment holds ``D``'s values
#: before the additions (not a variable of the program)
BASE = "_base"


class Grid:
    """The program's results at ``positions`` added, in that order, into
    ``D``, the environment's ``BASE`` array (``shape``, ``dtype``: ``(R0 +
    1, R1 + 1)``), at ``offsets`` (``(o0, o1)``, each 0 or 1). The step's
    results are the program's, with ``None`` in place of those."""

    __slots__ = ("positions", "offsets", "shape", "dtype")

    #: the dimensions of its kernel's loop (``kernels``: arrays as they are)
    ndim = 2
    #: whether ``call`` gives a result of the step (``D`` is written in place)
    gives = False

    def __init__(self, positions, offsets, shape, dtype):
        self.positions = tuple(int(p) for p in positions)
        self.offsets = tuple((int(a), int(b)) for a, b in offsets)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    @property
    def skip(self):
        """The positions of the program's results the grid takes."""
        return self.positions

    def _key(self):
        return (self.positions, self.offsets, self.shape, self.dtype)

    def __eq__(self, other):
        return type(other) is Grid and other._key() == self._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"Grid(positions={self.positions}, offsets={self.offsets}, "
                f"shape={self.shape}, dtype={self.dtype})")

    def numpy(self, program, env, n, keep=None):
        """The step with NumPy: the program, then the plan's additions into
        ``D``; over blocks of rows when ``D`` is large (``_blocked``);
        ``keep``: ``elementwise_threads.run``'s, for the whole program."""
        env = dict(env)
        d = env.pop(BASE)
        r0, r1 = self.shape[0] - 1, self.shape[1] - 1
        rows = _rows(self, program, env, r0, r1)
        if rows is not None:
            return self._blocked(program, env, n, d, rows)
        out = list(et.run(program, env, n, keep))
        for j, (o0, o1) in zip(self.positions, self.offsets):
            view = d[o0:o0 + r0, o1:o1 + r1]
            np.add(view, out[j], out=view)
        for j in self.positions:
            out[j] = None
        return out

    def _blocked(self, program, env, n, d, rows):
        """``numpy`` over blocks of ``rows`` region rows: each block's
        results are added while they are in cache, every element of ``D``
        getting its terms in the plan's order. A term from the row above
        (``o0 == 1``) reaches a block's first row from the block before:
        its last row is kept and added in its turn."""
        r0, r1 = self.shape[0] - 1, self.shape[1] - 1
        kept = {}  # position -> the last row of the block before
        for a in range(0, r0, rows):
            b = min(a + rows, r0)
            sub = {name: v[a:b] if _sliced(v, r0) else v for name, v in env.items()}
            out = et.run(program, sub, n)
            for j, (o0, o1) in zip(self.positions, self.offsets):
                c = out[j]
                if c.shape != (b - a, r1):  # (a term broadcast along the rows)
                    c = np.broadcast_to(c, (b - a, r1))
                if o0 == 0:
                    view = d[a:b, o1:o1 + r1]
                    np.add(view, c, out=view)
                    continue
                if a:
                    view = d[a:a + 1, o1:o1 + r1]
                    np.add(view, kept[j], out=view)
                view = d[a + 1:b, o1:o1 + r1]
                np.add(view, c[:-1], out=view)
                kept[j] = c[-1:]
        for j, (o0, o1) in zip(self.positions, self.offsets):
            if o0:
                view = d[r0:r0 + 1, o1:o1 + r1]
                np.add(view, kept[j], out=view)
        return [None] * len(program.outs)  # (``_rows``: every result is a term)

    def fits(self, program, shape):
        """Whether a kernel can take the region (two dimensions, floats)."""
        dts = program.dtypes
        return (len(shape) == 2 and (shape[0] + 1, shape[1] + 1) == self.shape
                and self.dtype.kind == "f"
                and all(program.kinds[j] == "step" and dts[j] == self.dtype
                        for j in self.positions))

    # -- the kernel -----------------------------------------------------------------------
    def source(self, program, pattern):
        """The kernel's module source: ``kernel(lo, hi, *inputs, *outputs,
        d, base)`` over the region's rows ``lo:hi``, returning whether a
        NaN or an infinity was made."""
        cast = {np.dtype(np.float64): "_f8", np.dtype(np.float32): "_f4"}.get(self.dtype)
        if cast is None:
            raise NotCompilable(f"a grid of {self.dtype}")
        params, loads, body, checks, outs, stores = program_lines(
            program, pattern, "i0, i1", self.positions)
        first = next(p for p in params if p.startswith("a"))
        terms, updates, column, last_row, buffers, carries = [], [], [], [], [], []
        for p, (j, (o0, o1)) in enumerate(zip(self.positions, self.offsets)):
            t = f"t{program.outs[j]}"
            if (o0, o1) == (0, 0):
                terms.append(t)
                column.append("z")
                last_row.append("z")
            elif (o0, o1) == (0, 1):  # from the left: carried along the row
                carries.append(f"c{p}")
                terms.append(f"c{p}")
                updates.append(f"c{p} = {t}")
                column.append(f"c{p}")
                last_row.append("z")
            elif (o0, o1) == (1, 0):  # from above: the row buffer
                buffers.append(f"r{p}")
                terms.append(f"r{p}[i1]")
                updates.append(f"r{p}[i1] = {t}")
                column.append("z")
                last_row.append(f"(r{p}[i1] if i1 < r1 else z)")
            else:  # from above and to the left: the row buffer, carried
                buffers.append(f"r{p}")
                carries.append(f"q{p}")
                terms.append(f"q{p}")
                updates += [f"q{p} = r{p}[i1]", f"r{p}[i1] = {t}"]
                column.append(f"q{p}")
                last_row.append(f"(r{p}[i1 - 1] if i1 > 0 else z)")

        def total(parts, at):
            text = f"base[{at}]"
            for part in parts:
                text = f"({text} + {part})"
            return text

        check = [f"bad |= {' | '.join(checks)}"] if checks else []
        inner = (loads + body + [f"if write:"] + [f"    {s}" for s in stores]
                 + [f"    d[i0, i1] = {total(terms, 'i0, i1')}"] + updates + check)
        lines = [*HEADER,
                 f"def kernel(lo, hi, {', '.join(params + outs)}, d, base):",
                 f"    r1 = {first}.shape[1]",
                 "    r0 = d.shape[0] - 1",
                 f"    z = {cast}(-0.0)",
                 *(f"    {b} = np.full(r1, z)" for b in buffers),
                 "    bad = False",
                 "    for i0 in range(lo - 1 if lo > 0 else lo, hi):",
                 "        write = i0 >= lo",
                 *(f"        {c} = z" for c in carries),
                 "        for i1 in range(r1):",
                 *(f"            {line}" for line in inner),
                 "        if write:",
                 f"            d[i0, r1] = {total(column, 'i0, r1')}",
                 "    if hi == r0:",
                 "        for i1 in range(r1 + 1):",
                 f"            d[r0, i1] = {total(last_row, 'r0, i1')}",
                 "    return bad", ""]
        return "\n".join(lines)

    def warm(self, kernel, args, outs):
        """Compile ``kernel`` (on no element)."""
        d = np.empty((2, 2), self.dtype)
        kernel(0, 0, *args, *outs, d, d)

    def call(self, kernel, size, t, args, outs, env):
        """``D`` written by the kernel over the region's ``size`` rows on
        ``t`` threads, or None (``D`` untouched) when it made a NaN or an
        infinity."""
        base = env[BASE]
        d = np.empty(self.shape, self.dtype)
        if t < 2:
            bad = kernel(0, size, *args, *outs, d, base)
        else:
            cuts = [size * j // t for j in range(t + 1)]
            bad = any(kernels.on_threads(
                kernel, [(cuts[j], cuts[j + 1], *args, *outs, d, base) for j in range(t)]))
        if bad:
            return None
        base[...] = d
        return base


#: the least bytes of ``D`` for the NumPy path to go over blocks of rows
#: (``elementwise_threads.MIN_BLOCKED``: below, the passes' data stays in
#: cache anyway)
MIN_BLOCKED = et.MIN_BLOCKED


def _sliced(v, r0):
    """Whether a value of the environment runs along the region's rows (an
    array of ``r0`` rows, not one broadcast along them)."""
    return type(v) is np.ndarray and v.ndim == 2 and v.shape[0] == r0 and r0 > 1


def _rows(grid, program, env, r0, r1):
    """The rows of a block for ``Grid._blocked``, or None to run whole: a
    large ``D``, a region whose results are all the grid's terms, values of
    the region's shape or broadcast along its rows."""
    if grid.shape[0] * grid.shape[1] * grid.dtype.itemsize < MIN_BLOCKED or r0 < 4:
        return None
    if sorted(grid.positions) != list(range(len(program.outs))):
        return None
    for v in env.values():
        if type(v) is np.ndarray:
            if v.ndim > 2 or (v.ndim == 2 and v.shape[0] not in (1, r0)):
                return None
        elif not isinstance(v, (np.generic, int, float)):
            return None
    per = max(2, et.BLOCK_BYTES // max(1, r1 * grid.dtype.itemsize))
    return per if per < r0 else None


def run(program, env, n, grid, kept=None):
    """The region's program and its additions into ``D`` (``Grid``): a
    plan's step (``kept``: ``kernels.run``'s)."""
    return kernels.run(program, env, n, grid, kept)
