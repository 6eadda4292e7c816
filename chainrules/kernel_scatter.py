"""A fused region whose two results are summed into one new array at
neighbouring offsets: the gradient of ``f(x[1:], x[:-1])``.

The pullback of ``x[1:]`` and ``x[:-1]`` (a Rosenbrock function, a finite
difference) scatters two cotangents of length ``L`` into one array ``D`` of
length ``L + 1``: ``D[0] = 0; D[1:] = A; D[:-1] += B`` (or the mirror
image, ``A`` into ``D[:-1]`` and ``B`` added into ``D[1:]``). In a staged
plan ``A`` and ``B`` come out of one region's program, and those steps are
three more passes over memory and two arrays. ``plan_regions.scatter_pairs``
writes the region and its scatter as one step, ``run`` here: the NumPy
program and then the same NumPy calls (``Scatter.numpy``), or, once the
region is hot, one compiled loop (``kernels``) that writes ``D`` directly.

The loop computes ``A[j]`` and ``B[j]`` at each ``j`` and writes
``D[j] = prev + B[j]`` where ``prev`` is the ``A`` of the element before
(``D[j] = A[j] + prev`` with ``prev`` the ``B`` before, for the mirror
image): the additions NumPy makes, on the same operands, so the results
are NumPy's. ``prev`` starts as ``0.0`` where NumPy adds to the zero it
wrote (``0.0 + B[0]``) and as ``-0.0`` where it adds nothing (``A[0] +
-0.0`` is ``A[0]`` for every value, signed zeros included); the last
element is the last ``prev`` (plus the zero, for the mirror image). Blocks
run on threads start from ``-0.0`` too, and the element at each block's
start then gets the previous block's last ``prev`` added: again NumPy's
addition.
"""

import numpy as np

from . import elementwise_threads as et
from . import kernels

__all__ = ["Scatter", "run"]


class Scatter:
    """Results ``a`` and ``b`` (positions in the program's results) summed
    into ``D``, a new array of ``size`` elements of ``dtype``: ``a`` at
    ``D[1:]`` and ``b`` added into ``D[:-1]`` when ``a_last``, else ``a``
    at ``D[:-1]`` and ``b`` added into ``D[1:]``. The step's results are
    the program's, with ``D`` in place of ``a`` and ``None`` in place of
    ``b``."""

    __slots__ = ("a", "b", "a_last", "size", "dtype", "zero")

    #: the dimensions of its kernel's loop (``kernels``: 1, the arrays as
    #: flat runs of elements)
    ndim = 1
    #: whether ``call`` gives a result of the step (``D``, in place of ``a``)
    gives = True

    def __init__(self, a, b, a_last, size, dtype):
        self.a, self.b, self.a_last = a, b, bool(a_last)
        self.size, self.dtype = int(size), np.dtype(dtype)
        self.zero = self.dtype.type(0)

    @property
    def skip(self):
        """The positions of the program's results the scatter takes."""
        return (self.a, self.b)

    def _key(self):
        return (self.a, self.b, self.a_last, self.size, self.dtype)

    def __eq__(self, other):
        return type(other) is Scatter and other._key() == self._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"Scatter(a={self.a}, b={self.b}, a_last={self.a_last}, size={self.size}, "
                f"dtype={self.dtype})")

    def numpy(self, program, env, n, keep=None):
        """The step with NumPy: the program, then the scatter's calls
        (``keep``: ``elementwise_threads.run``'s)."""
        out = list(et.run(program, env, n, keep))
        a, b = out[self.a], out[self.b]
        d = np.empty(self.size, self.dtype)
        m = self.size - 1
        if type(a) is type(b) is np.ndarray and a.shape == b.shape == (m,) \
                and a.dtype == b.dtype == self.dtype:
            # the same additions, each element written once: D[j] = A[j - 1]
            # + B[j] (the first operand as in ``view += B``, where the view
            # held A), the ends on their own: 0 + B[0] (a NumPy scalar's sum
            # is the array's, -0.0 and NaN included) and A[m - 1]
            zero = self.zero
            if self.a_last:
                np.add(a[:-1], b[1:], out=d[1:m])
                d[0] = zero + b[0]
                d[m] = a[m - 1]
            else:
                np.add(a[1:], b[:-1], out=d[1:m])
                d[0] = a[0]
                d[m] = zero + b[m - 1]
            out[self.a], out[self.b] = d, None
            return out
        if self.a_last:
            d[0:1] = 0
            d[1:] = a
            view = d[:-1]
        else:
            d[-1:] = 0
            d[:-1] = a
            view = d[1:]
        np.add(view, b, out=view)
        out[self.a], out[self.b] = d, None
        return out

    def fits(self, program, shape):
        """Whether a kernel can take the region (one dimension, floats)."""
        dts = program.dtypes
        return (len(shape) == 1 and shape[0] + 1 == self.size
                and program.kinds[self.a] == "step" and program.kinds[self.b] == "step"
                and dts[self.a] == dts[self.b] == self.dtype and self.dtype.kind == "f")

    # -- the kernel's part (``kernels.kernel_source`` and ``kernels._call``)
    def stores(self, program):
        """The loop's lines that write ``d`` and carry ``prev``."""
        ta, tb = f"t{program.outs[self.a]}", f"t{program.outs[self.b]}"
        if self.a_last:  # D[j] = A[j - 1] + B[j]
            return [f"d[i] = prev + {tb}", f"prev = {ta}"]
        return [f"d[i] = {ta} + prev", f"prev = {tb}"]  # D[j] = A[j] + B[j - 1]

    def warm(self, kernel, args, outs):
        """Compile ``kernel`` (on no element)."""
        dtype = self.dtype
        kernel(0, 0, dtype.type(-0.0), *args, *outs, np.empty(1, dtype))

    def call(self, kernel, size, t, args, outs, env):
        """``D`` by the kernel over ``size`` elements on ``t`` threads, or
        None when it made a NaN or an infinity."""
        dtype = self.dtype
        d = np.empty(size + 1, dtype)
        zero, minus = dtype.type(0.0), dtype.type(-0.0)
        first = zero if self.a_last else minus
        if t < 2:
            bad, prev = kernel(0, size, first, *args, *outs, d)
            if bad:
                return None
        else:
            cuts = [size * j // t for j in range(t + 1)]
            tails = _blocks(kernel, cuts, [first] + [minus] * (t - 1), args, outs, d)
            if tails is None:
                return None
            for lo, tail in zip(cuts[1:-1], tails):
                d[lo] = tail + d[lo] if self.a_last else d[lo] + tail
            prev = tails[-1]
        d[size] = prev if self.a_last else zero + prev
        return d


def _blocks(kernel, cuts, firsts, args, outs, d):
    """The kernel on blocks ``cuts[j]:cuts[j + 1]`` on threads: each block's
    last ``prev``, or None when one made a NaN or an infinity."""
    found = kernels.on_threads(kernel, [(cuts[j], cuts[j + 1], firsts[j], *args, *outs, d)
                                        for j in range(len(cuts) - 1)])
    if any(bad for bad, _ in found):
        return None
    return [prev for _, prev in found]


def run(program, env, n, scatter, kept=None):
    """The region's program and its scatter (``Scatter``): a plan's step
    (``kept``: ``kernels.run``'s)."""
    return kernels.run(program, env, n, scatter, kept)
