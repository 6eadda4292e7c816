"""Elementwise programs on chunked arrays, one task per chunk.

Given arrays of another type (dask), a program's ufunc calls would each
build a layer of that type's graph: every pass then runs over a whole chunk
before the next starts, and the chunk's intermediates stream from memory.
When every array value is of one chunked type whose ``map_blocks`` maps a
function over aligned blocks (``dask.array.Array.map_blocks``), ``run``
instead maps the whole program over the chunks: each task runs it on the
NumPy blocks of its chunk as the calling thread would
(``elementwise_threads.run`` on one thread, so block by block in cache;
the chunked type's scheduler already runs chunks in parallel). Several
results come from one task per chunk (a tuple), taken apart per result.

The module does not import dask: it uses the array's own method.
"""

import math
import operator

import numpy as np

__all__ = ["run"]


def run(program, env, run_chunk):
    """The program's results computed per chunk (see the module docstring),
    or None when the values are not for it: arrays of several types (NumPy
    arrays beside chunked ones included), a type without ``map_blocks``,
    unknown chunk sizes, values of dtypes other than the program's, or a
    result that is not of the values' full broadcast shape. ``run_chunk``
    runs the program on one chunk's NumPy blocks (``elementwise_threads.run``,
    or ``kernels.chunk_runner()``: compiled once hot)."""
    chunked, scalars = {}, {}
    kind = None
    for name, v in env.items():
        if isinstance(v, np.generic) or (type(v) is np.ndarray and v.ndim == 0):
            scalars[name] = v
            continue
        if type(v) is np.ndarray or (kind is not None and type(v) is not kind):
            return None
        kind = type(v)
        chunked[name] = v
    if kind is None or not callable(getattr(kind, "map_blocks", None)):
        return None
    for _, name, dt in program.variables:
        if getattr(env.get(name), "dtype", None) != dt:
            return None
    try:
        shapes = {name: tuple(v.shape) for name, v in chunked.items()}
        if any(isinstance(s, float) and math.isnan(s) for sh in shapes.values() for s in sh):
            return None
        full = np.broadcast_shapes(*shapes.values())
    except (TypeError, ValueError):
        return None
    if not _aligned(chunked.values(), full):
        return None
    steps = []
    for i, (reads, what) in enumerate(zip(program.reads, program.kinds)):
        if what != "step":
            continue
        if not any(r in chunked for r in reads):
            return None  # the same in every chunk: left to the program itself
        if np.broadcast_shapes(*(np.shape(env[r]) for r in reads)) != full:
            return None
        steps.append(i)
    names = list(chunked)
    arrays = [chunked[n] for n in names]
    fn = _Chunk(names, scalars, program, steps, len(steps) == 1, run_chunk)
    nd = len(full)
    dtypes = program.dtypes
    if len(steps) == 1:
        i = steps[0]
        out = {i: arrays[0].map_blocks(fn, *arrays[1:], dtype=dtypes[i], token="fused",
                                       meta=np.empty((0,) * nd, dtypes[i]))}
    else:
        both = arrays[0].map_blocks(fn, *arrays[1:], dtype=object, token="fused",
                                    meta=np.empty((0,) * nd, object))
        out = {i: both.map_blocks(operator.getitem, k, dtype=dtypes[i],
                                  meta=np.empty((0,) * nd, dtypes[i]))
               for k, i in enumerate(steps)}
    results = []
    for i, (reads, what) in enumerate(zip(program.reads, program.kinds)):
        if what == "var":
            results.append(env[reads[0]])
        elif what == "const":
            results.append(program.consts[program.outs[i]])
        else:
            results.append(out[i])
    return results


def _aligned(arrays, full):
    """Whether the chunks of ``arrays`` (``.chunks``) agree along every axis
    of their broadcast shape ``full`` that they do not broadcast along."""
    nd = len(full)
    seen = [None] * nd
    for a in arrays:
        chunks = getattr(a, "chunks", None)
        if chunks is None or len(chunks) != a.ndim:
            return False
        for k, c in enumerate(chunks):
            d = nd - a.ndim + k
            if a.shape[k] == 1 and full[d] != 1:
                continue  # broadcast: its one block goes to every chunk
            if seen[d] is None:
                seen[d] = tuple(c)
            elif seen[d] != tuple(c):
                return False
    return True


class _Chunk:
    """The function mapped over the chunks: the program on the NumPy blocks
    of one chunk (``names``: of the blocks given, in order; ``scalars``: the
    values every chunk shares); the results of its ``steps`` (indices into
    its results), or the one result when ``single``. An object rather than
    a closure, so that it pickles for a distributed scheduler."""

    __slots__ = ("names", "scalars", "program", "steps", "single", "run_chunk")

    def __init__(self, names, scalars, program, steps, single, run_chunk):
        self.names, self.scalars, self.program = names, scalars, program
        self.steps, self.single, self.run_chunk = steps, single, run_chunk

    def __call__(self, *blocks):
        env = dict(self.scalars)
        env.update(zip(self.names, blocks))
        vals = self.run_chunk(self.program, env, 1)
        if self.single:
            return vals[self.steps[0]]
        return tuple(vals[i] for i in self.steps)
