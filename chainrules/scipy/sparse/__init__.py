"""Differentiable twins of ``scipy.sparse``'s CSR, CSC and COO matrices.

A twin holds its stored values ``data`` (traced or plain) at constant
coordinates; products with dense operands on either side, ``multiply``,
``sum``, ``toarray`` and ``diagonal`` are differentiable in ``data`` and in
the dense operand, to any order (``chainrules.rules.scipy_sparse``)::

    import numpy as np, scipy.sparse, chainrules as cr
    from chainrules.scipy import sparse

    A0 = scipy.sparse.random_array((4, 4), density=0.5, format="csr", rng=0)

    def loss(w, x):
        A = sparse.csr_array((w, A0.indices, A0.indptr), shape=A0.shape)
        return np.sum((A @ x) ** 2) + np.sum(x @ A.T)

    cr.grad(loss, argnums=(0, 1))(A0.data, np.ones(4))

Build a twin from a SciPy sparse object (its values in the order it stores
them), from ``(data, indices, indptr)`` (CSR/CSC) or ``(data, (row, col))``
with ``data`` traced, or from a plain dense array. Duplicate entries are
summed, as in SciPy. The results of the twins are NumPy arrays (or twins):
``*_matrix`` twins keep SciPy's matrix semantics (``*`` is a matrix product,
``sum(axis=...)`` keeps two dimensions) but return ndarrays, never
``np.matrix``. Products of two sparse matrices are refused (use ``toarray``
on one of them).

``A @ x`` with a plain SciPy sparse ``A`` and a traced ``x`` raises
``UntraceableError`` naming these twins (SciPy converts ``x`` with
``np.asarray``); ``x @ A`` is differentiated as it is.
"""

import numpy as np

from chainrules import tracing as _tracing
from chainrules.errors import MissingRuleError, UntraceableError
from chainrules.rules import scipy_sparse as _rules

import scipy.sparse as _sp

from . import linalg  # noqa: F401,E402

__all__ = ["csr_array", "csc_array", "coo_array", "csr_matrix", "csc_matrix",
           "coo_matrix", "issparse"]


def _traced(x):
    return type(x) is _tracing.Traced


def _values(data):
    """``data`` as a 1-D array of inexact values (traced values kept)."""
    if _traced(data):
        if data.ndim != 1:
            raise ValueError(f"sparse twin: data must be 1-D, got shape {data.shape}")
        return data
    data = np.asarray(data)
    if data.ndim != 1:
        raise ValueError(f"sparse twin: data must be 1-D, got shape {data.shape}")
    if data.dtype.kind not in "fc":
        data = data.astype(np.result_type(data.dtype, np.float64))
    return data


def _plain(x):
    return _tracing.untraced(x) if _traced(x) else np.asarray(x)


class _SparseTwin:
    """Stored values ``data`` at ``(row, col)`` of a ``shape`` matrix, kept in
    the storage order of ``format`` (see the module docstring)."""

    format = "coo"
    _matrix = False
    _compressed = None
    # NumPy's operators defer to this class (ndarray @ twin runs __rmatmul__)
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, arg1, shape=None, dtype=None, copy=False):
        fmt = self.format
        if isinstance(arg1, _SparseTwin):
            d, r, c, shp = arg1._to_format(fmt)
        elif _sp.issparse(arg1):
            if arg1.ndim != 2:
                raise ValueError("sparse twins are 2-D")
            a = arg1.asformat(fmt)
            d, r, c, m, n = _rules.coordinates(a)
            shp = (m, n)
            self._compressed = (np.asarray(a.indices), np.asarray(a.indptr)) \
                if fmt != "coo" else None
        elif isinstance(arg1, tuple) and len(arg1) == 2:
            data, (row, col) = arg1
            r = np.asarray(row, np.intp).ravel()
            c = np.asarray(col, np.intp).ravel()
            shp = tuple(shape) if shape is not None else (
                int(r.max(initial=-1)) + 1, int(c.max(initial=-1)) + 1)
            d, r, c, shp = _SparseTwin._from_coords(_values(data), r, c, shp)._to_format(fmt)
        elif isinstance(arg1, tuple) and len(arg1) == 3:
            if fmt == "coo":
                raise ValueError("coo twins take (data, (row, col))")
            data, indices, indptr = arg1
            indices = np.asarray(indices, np.intp)
            indptr = np.asarray(indptr, np.intp)
            nmajor = indptr.size - 1
            if shape is None:
                nminor = int(indices.max(initial=-1)) + 1
                shape = (nmajor, nminor) if fmt == "csr" else (nminor, nmajor)
            shp = tuple(shape)
            major = np.repeat(np.arange(nmajor), np.diff(indptr))
            r, c = (major, indices) if fmt == "csr" else (indices, major)
            d = _values(data)
            self._compressed = (indices, indptr)
        elif _traced(arg1):
            raise UntraceableError(
                f"chainrules.scipy.sparse.{type(self).__name__} of a traced dense array "
                "would drop the derivatives of its zero entries; build it from "
                "(data, indices, indptr) or (data, (row, col)) with traced data")
        else:
            a = _sp.coo_array(np.asarray(arg1), shape=shape).asformat(fmt)
            d, r, c, m, n = _rules.coordinates(a)
            shp = (m, n)
        if d.shape[0] != r.shape[0] or r.shape != c.shape:
            raise ValueError(f"sparse twin: {d.shape[0]} values for {r.shape[0]} coordinates")
        m, n = shp
        if r.size and (r.min() < 0 or r.max() >= m or c.min() < 0 or c.max() >= n):
            raise ValueError(f"sparse twin: coordinates out of bounds for shape {shp}")
        if dtype is not None:
            d = d.astype(np.dtype(dtype))
        self._data, self._row, self._col, self._shape = d, r, c, (int(m), int(n))

    @classmethod
    def _from_coords(cls, data, row, col, shape, compressed=None):
        out = object.__new__(cls)
        out._data, out._row, out._col, out._shape = data, row, col, tuple(shape)
        out._compressed = compressed
        return out

    def _to_format(self, fmt):
        """``(data, row, col, shape)`` ordered as ``fmt`` stores them."""
        d, r, c = self._data, self._row, self._col
        if fmt != "coo" and fmt != self.format:
            key = (r, c) if fmt == "csr" else (c, r)
            order = np.lexsort((key[1], key[0]))
            d, r, c = d[order], r[order], c[order]
        return d, r, c, self._shape

    def _like(self, data, cls=None):
        cls = cls or type(self)
        return cls._from_coords(data, self._row, self._col, self._shape,
                                getattr(self, "_compressed", None))

    # -- SciPy's attributes ---------------------------------------------------------
    @property
    def data(self):
        return self._data

    @property
    def shape(self):
        return self._shape

    ndim = 2

    @property
    def nnz(self):
        return int(self._row.size)

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def row(self):
        return self._row

    @property
    def col(self):
        return self._col

    @property
    def coords(self):
        return (self._row, self._col)

    def _compressed_arrays(self):
        comp = getattr(self, "_compressed", None)
        if comp is None:
            major = self._row if self.format == "csr" else self._col
            minor = self._col if self.format == "csr" else self._row
            nmajor = self._shape[0] if self.format == "csr" else self._shape[1]
            comp = (minor, np.concatenate(([0], np.cumsum(np.bincount(major, minlength=nmajor)))))
        return comp

    @property
    def indices(self):
        if self.format == "coo":
            raise AttributeError("coo twins have row and col, not indices")
        return self._compressed_arrays()[0]

    @property
    def indptr(self):
        if self.format == "coo":
            raise AttributeError("coo twins have row and col, not indptr")
        return self._compressed_arrays()[1]

    def __repr__(self):
        kind = "traced" if _traced(self._data) else "plain"
        return (f"<chainrules.scipy.sparse.{type(self).__name__} of shape {self._shape}, "
                f"{self.nnz} stored {kind} values>")

    def to_scipy(self):
        """The plain SciPy sparse object of the current values (not differentiable)."""
        cls = getattr(_sp, type(self).__name__)
        return cls(_sp.coo_array((_plain(self._data), (self._row, self._col)),
                                 shape=self._shape).asformat(self.format))

    def _kw(self):
        return {"row": self._row, "col": self._col, "m": self._shape[0], "n": self._shape[1]}

    # -- products -------------------------------------------------------------------
    def _dense(self, other, op):
        if isinstance(other, _SparseTwin) or _sp.issparse(other):
            raise MissingRuleError(
                f"chainrules.scipy.sparse: {op} of two sparse matrices is not "
                "differentiable here; use A @ B.toarray()")
        if _traced(other):
            return other
        return np.asarray(other)

    def __matmul__(self, other):
        x = self._dense(other, "@")
        if x.ndim == 0:
            raise ValueError("matmul: a scalar operand is not allowed, use *")
        return _rules.spmm(self._data, x, **self._kw())

    def __rmatmul__(self, other):
        x = self._dense(other, "@")
        if x.ndim == 0:
            raise ValueError("matmul: a scalar operand is not allowed, use *")
        return _rules.rspmm(x, self._data, **self._kw())

    def dot(self, other):
        """``A @ other`` (SciPy's ``dot``; a scalar scales)."""
        if np.ndim(other) == 0 and not isinstance(other, _SparseTwin):
            return self.multiply(other)
        return self @ other

    def __mul__(self, other):
        if self._matrix and np.ndim(other) != 0:
            return self @ other
        return self.multiply(other)

    def __rmul__(self, other):
        if self._matrix and np.ndim(other) != 0:
            return other @ self
        return self.multiply(other)

    def __truediv__(self, other):
        if np.ndim(other) != 0:
            raise MissingRuleError("chainrules.scipy.sparse: divide by a scalar only")
        return self._like(self._data / other)

    def __neg__(self):
        return self._like(-self._data)

    def __pos__(self):
        return self

    def multiply(self, other):
        """The elementwise product with a scalar or a dense array broadcast to
        the matrix's shape; a sparse twin of the same coordinates."""
        o = self._dense(other, "multiply")
        if o.ndim == 0:
            return self._like(self._data * o)
        if o.ndim > 2:
            raise ValueError(f"multiply: operand of shape {o.shape} for shape {self._shape}")
        o2 = o.reshape((1,) * (2 - o.ndim) + o.shape)
        if any(s not in (1, t) for s, t in zip(o2.shape, self._shape)):
            raise ValueError(f"multiply: operand of shape {o.shape} for shape {self._shape}")
        r = self._row if o2.shape[0] != 1 else np.zeros_like(self._row)
        c = self._col if o2.shape[1] != 1 else np.zeros_like(self._col)
        return self._like(self._data * o2[r, c])

    # -- structure ------------------------------------------------------------------
    def transpose(self, axes=None, copy=False):
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError("sparse twins transpose with axes=None or (1, 0) only")
        cls = _TRANSPOSED[type(self)]
        return cls._from_coords(self._data, self._col, self._row, self._shape[::-1],
                                getattr(self, "_compressed", None))

    @property
    def T(self):
        return self.transpose()

    def conj(self, copy=True):
        return self._like(np.conjugate(self._data))

    conjugate = conj

    def astype(self, dtype, copy=True):
        return self._like(self._data.astype(np.dtype(dtype)))

    def tocsr(self, copy=False):
        return _for(self, "csr")(self)

    def tocsc(self, copy=False):
        return _for(self, "csc")(self)

    def tocoo(self, copy=False):
        return _for(self, "coo")(self)

    def asformat(self, format, copy=False):
        return _for(self, format)(self)

    # -- reductions -----------------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None):
        if out is not None:
            raise UntraceableError("sparse twins: sum(out=...) is not supported")
        m, n = self._shape
        d = self._data if dtype is None else self._data.astype(np.dtype(dtype))
        if axis is None:
            return np.sum(d)
        axis = int(axis)
        if axis not in (0, 1, -1, -2):
            raise ValueError(f"axis {axis} is out of bounds for a 2-D sparse matrix")
        if axis % 2 == 0:
            s = _rules.rspmm(np.ones(m, d.dtype), d, **self._kw())
            return s.reshape(1, n) if self._matrix else s
        s = _rules.spmm(d, np.ones(n, d.dtype), **self._kw())
        return s.reshape(m, 1) if self._matrix else s

    def toarray(self, order=None, out=None):
        if out is not None:
            raise UntraceableError("sparse twins: toarray(out=...) is not supported")
        m, n = self._shape
        return _rules.spmm(self._data, np.eye(n, dtype=self._data.dtype),
                           **self._kw()).reshape(m, n)

    def todense(self, order=None, out=None):
        """The dense values as an ndarray (never ``np.matrix``)."""
        return self.toarray(order, out)

    def diagonal(self, k=0):
        m, n = self._shape
        k = int(k)
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        sel = np.flatnonzero(self._col - self._row == k)
        pos = self._row[sel] if k >= 0 else self._col[sel]
        return _rules.spmm(self._data[sel], np.ones(1, self._data.dtype), row=pos,
                           col=np.zeros_like(pos), m=length, n=1)


class csr_array(_SparseTwin):
    """Twin of ``scipy.sparse.csr_array`` (see the module docstring)."""
    format = "csr"


class csc_array(_SparseTwin):
    """Twin of ``scipy.sparse.csc_array`` (see the module docstring)."""
    format = "csc"


class coo_array(_SparseTwin):
    """Twin of ``scipy.sparse.coo_array`` (see the module docstring)."""
    format = "coo"


class csr_matrix(csr_array):
    """Twin of ``scipy.sparse.csr_matrix`` (``*`` is a matrix product)."""
    _matrix = True


class csc_matrix(csc_array):
    """Twin of ``scipy.sparse.csc_matrix`` (``*`` is a matrix product)."""
    _matrix = True


class coo_matrix(coo_array):
    """Twin of ``scipy.sparse.coo_matrix`` (``*`` is a matrix product)."""
    _matrix = True


_TRANSPOSED = {csr_array: csc_array, csc_array: csr_array, coo_array: coo_array,
               csr_matrix: csc_matrix, csc_matrix: csr_matrix, coo_matrix: coo_matrix}
_BY_FORMAT = {(False, "csr"): csr_array, (False, "csc"): csc_array, (False, "coo"): coo_array,
              (True, "csr"): csr_matrix, (True, "csc"): csc_matrix, (True, "coo"): coo_matrix}


def _for(twin, fmt):
    try:
        return _BY_FORMAT[(twin._matrix, fmt)]
    except KeyError:
        raise ValueError(f"sparse twins have the formats csr, csc and coo, not {fmt!r}") from None


def issparse(x):
    """True for SciPy sparse objects and their twins."""
    return isinstance(x, _SparseTwin) or _sp.issparse(x)


# the tracer's operators defer to the twins (x @ A runs A.__rmatmul__), as to
# the structural tangent types
_tracing._STRUCT.update(_BY_FORMAT.values())
