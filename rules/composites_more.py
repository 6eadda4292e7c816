"""More NumPy functions as compositions (see ``composites``): polynomial
arithmetic (``polyadd``, ``polysub``, ``polymul``, ``polydiv``, ``polyder``,
``polyint``, ``poly``, ``roots``), ``vander``, ``insert``, ``piecewise``,
``ediff1d``, ``compress``, ``extract``, ``resize``, ``trim_zeros``,
``meshgrid``, ``unwrap``, ``sort_complex``, ``bincount`` (differentiable in
``weights``), ``ldexp``/``frexp``/``modf``, ``astype``, the ``unique_*``
family, ``hfft``/``ihfft``; functions with integer or boolean results
return plain values; ``put_along_axis``, which writes in place, raises
``UntraceableError`` naming the out-of-place form (``put``, ``place``,
``putmask`` and ``fill_diagonal`` are recorded by ``chainrules.writes_buffers``).
"""

import importlib.util

import numpy as np

from chainrules.arrays import ndim_of, shape_of
from chainrules.errors import MissingRuleError, UntraceableError
from chainrules.registry import DECOMPOSITIONS, decompose, is_registered
from chainrules.tracing import holds_traced, is_traced, nested_array, untraced

from ._util import array_like, array_value, on_plain_values

__all__ = []


_asarray = array_like


def _traced(v):
    return is_traced(v)


# -- polynomials ------------------------------------------------------------------------
def _coefficients(a):
    """A polynomial's coefficients as NumPy reads them (``np.atleast_1d``):
    a 0-d value is the constant polynomial of one coefficient."""
    a = _asarray(a)
    return np.reshape(a, (1,)) if ndim_of(a) == 0 else a


def _pad_front(a, n):
    k = n - shape_of(a)[0]
    if k <= 0:
        return a
    return np.concatenate([np.zeros(k, dtype=np.result_type(untraced(a), 1.0)), a])


@decompose(np.polyadd)
def _polyadd(a1, a2):
    a1, a2 = _coefficients(a1), _coefficients(a2)
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _pad_front(a1, n) + _pad_front(a2, n)


@decompose(np.polysub)
def _polysub(a1, a2):
    a1, a2 = _coefficients(a1), _coefficients(a2)
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _pad_front(a1, n) - _pad_front(a2, n)


@decompose(np.polymul)
def _polymul(a1, a2):
    # as NumPy (through np.poly1d): leading zero coefficients are dropped
    # first (an all-zero polynomial keeps its last coefficient)
    return np.convolve(_strip_leading_zeros(_coefficients(a1)),
                       _strip_leading_zeros(_coefficients(a2)))


def _strip_leading_zeros(p):
    nz = np.flatnonzero(np.asarray(array_value(p)))
    if nz.size == 0:
        return p[-1:] if shape_of(p)[0] else p
    return p[int(nz[0]):] if nz[0] else p


@decompose(np.polyder)
def _polyder(p, m=1):
    p = _asarray(p)
    for _ in range(int(m)):
        # NumPy's recursion: a constant's derivative is empty, and the empty
        # polynomial stays empty (in the dtype of the product)
        p = p[:-1] * np.arange(shape_of(p)[0] - 1, 0, -1)
    return p


@decompose(np.polyint)
def _polyint(p, m=1, k=None):
    p = _asarray(p)
    m = int(m)
    ks = np.zeros(m) if k is None else np.atleast_1d(untraced(k)) * np.ones(m)
    if _traced(k):
        raise MissingRuleError("numpy.polyint with traced integration constants k has no "
                               "rule; add them after integrating")
    for i in range(m):
        n = shape_of(p)[0]
        p = np.concatenate([p / np.arange(n, 0, -1), np.full(1, ks[i])])
    return p


@decompose(np.polydiv)
def _polydiv(u, v):
    u, v = _coefficients(u) * 1.0, _coefficients(v) * 1.0
    m, n = shape_of(u)[0] - 1, shape_of(v)[0] - 1
    scale = 1.0 / v[0]
    q = []
    r = u
    for k in range(0, m - n + 1):
        d = scale * r[k]
        q.append(d)
        r = np.concatenate([r[:k], r[k:k + n + 1] - d * v, r[k + n + 1:]])
    q = np.stack(q) if q else np.zeros(1, np.result_type(untraced(u), untraced(v)))
    rv = np.asarray(array_value(r))
    # NumPy strips the remainder's leading near-zeros (np.allclose(r[0], 0,
    # rtol=1e-14)); where it does is decided on the plain values
    start = 0
    while start < rv.shape[0] - 1 and np.allclose(rv[start], 0, rtol=1e-14):
        start += 1
    return q, r[start:]


@decompose(np.roots)
def _roots(p):
    p = _asarray(np.ravel(p) if ndim_of(p) != 1 else p)
    pv = np.asarray(array_value(p))
    nz = np.flatnonzero(pv)
    if nz.size == 0:
        return np.array([])
    trailing = pv.shape[0] - nz[-1] - 1
    p = p[nz[0]:nz[-1] + 1]
    n = shape_of(p)[0]
    if n > 1:
        # the companion matrix: first row -p[1:]/p[0], ones below the diagonal
        first = -p[1:] / p[0]
        rest = np.eye(n - 2, n - 1) if n > 2 else np.zeros((0, n - 1))
        comp = np.concatenate([np.reshape(first, (1, n - 1)), rest], axis=0)
        r = np.linalg.eigvals(comp)
    else:
        r = np.zeros(0, dtype=np.result_type(pv, 1.0))
    if trailing:
        r = np.concatenate([r, np.zeros(trailing, dtype=np.result_type(untraced(r)))])
    return r


@decompose(np.poly)
def _poly(seq_of_zeros):
    z = _asarray(seq_of_zeros)
    if ndim_of(z) == 2 and shape_of(z)[0] == shape_of(z)[1] and shape_of(z)[0] != 0:
        z = np.linalg.eigvals(z)
    a = np.ones(1, dtype=np.result_type(untraced(z)))  # float32 roots: float32, as NumPy
    for k in range(shape_of(z)[0]):
        a = np.convolve(a, np.stack([np.ones((), dtype=np.result_type(untraced(z))), -z[k]]))
    zv = np.asarray(array_value(z))
    if np.iscomplexobj(zv):  # NumPy returns real coefficients for conjugate pairs
        roots = np.asarray(zv, complex)
        pos = np.sort(roots[roots.imag > 0])
        neg = np.sort(np.conjugate(roots[roots.imag < 0]))
        if len(pos) == len(neg) and np.all(neg == pos):
            a = np.real(a)
    return a


@decompose(np.vander)
def _vander(x, N=None, increasing=False):
    x = _asarray(x)
    n = shape_of(x)[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    return x[:, None] ** powers


# -- shape and selection ----------------------------------------------------------------
@decompose(np.insert)
def _insert(arr, obj, values, axis=None):
    arr, values = _asarray(arr), _asarray(values)
    if axis is None:
        arr, axis = np.ravel(arr), 0
    axis = axis % ndim_of(arr)
    n = shape_of(arr)[axis]
    # where every output position comes from: -1 - j marks the j-th inserted slot
    plain = np.insert(np.arange(n), obj, -1, axis=0)
    k = int(np.sum(plain < 0))
    block_shape = list(shape_of(arr))
    block_shape[axis] = k
    vals = values
    if ndim_of(values) == ndim_of(arr) and shape_of(values)[axis] not in (1, k):
        vals = np.moveaxis(values, 0, axis)
    elif np.ndim(obj) == 0 and ndim_of(values) >= 1 and ndim_of(values) < ndim_of(arr):
        vals = np.expand_dims(values, axis)
    try:
        vals = np.broadcast_to(vals, tuple(block_shape))
    except ValueError:
        raise MissingRuleError(f"numpy.insert: values of shape {shape_of(values)} for "
                               f"{k} slots along axis {axis} have no rule") from None
    order = np.where(plain >= 0, plain, n + np.cumsum(plain < 0) - 1)
    out = np.take(np.concatenate([arr, vals], axis=axis), order, axis=axis)
    # the result must be NumPy's own (a different broadcast rule would be wrong)
    ref = np.insert(np.asarray(array_value(arr)), obj, np.asarray(array_value(values)),
                    axis=axis)
    if ref.shape != shape_of(out) or not np.array_equal(
            ref, np.asarray(array_value(out)), equal_nan=True):
        raise MissingRuleError("numpy.insert: this combination of obj and values has no "
                               "rule; build the array with np.concatenate")
    return out


@decompose(np.piecewise)
def _piecewise(x, condlist, funclist, *args, **kw):
    x = _asarray(x)
    xv = np.asarray(array_value(x))
    if isinstance(condlist, np.ndarray) or not isinstance(condlist, (list, tuple)):
        condlist = [condlist]
    conds = [np.asarray(array_value(c), bool) for c in condlist]
    if len(funclist) == len(conds) + 1:  # the "otherwise" function
        conds.append(~np.any(conds, axis=0))
    out = np.zeros(xv.shape, dtype=np.result_type(xv, 1.0) if xv.dtype.kind != "c" else xv.dtype)
    for c, f in zip(conds, funclist):
        val = f(x, *args, **kw) if callable(f) else f
        out = np.where(c, val, out)
    return out


@decompose(np.ediff1d)
def _ediff1d(ary, to_end=None, to_begin=None):
    a = np.ravel(_asarray(ary))
    d = a[1:] - a[:-1]
    parts = []
    if to_begin is not None:
        parts.append(np.ravel(_asarray(to_begin)))
    parts.append(d)
    if to_end is not None:
        parts.append(np.ravel(_asarray(to_end)))
    return np.concatenate(parts) if len(parts) > 1 else d


@decompose(np.compress)
def _compress(condition, a, axis=None, out=None):
    a = _asarray(a)
    idx = np.flatnonzero(np.asarray(array_value(condition), bool))
    return np.take(np.ravel(a), idx) if axis is None else np.take(a, idx, axis=axis)


@decompose(np.extract)
def _extract(condition, arr):
    idx = np.flatnonzero(np.asarray(array_value(condition), bool))
    return np.take(np.ravel(_asarray(arr)), idx)


@decompose(np.resize)
def _resize(a, new_shape):
    a = np.ravel(_asarray(a))
    shape = (new_shape,) if np.ndim(new_shape) == 0 else tuple(new_shape)
    total = int(np.prod(shape, dtype=np.int64))
    if shape_of(a)[0] == 0 or total == 0:
        return np.zeros(shape, dtype=np.result_type(untraced(a)))
    return np.reshape(np.take(a, np.arange(total) % shape_of(a)[0]), shape)


@decompose(np.trim_zeros)
def _trim_zeros(filt, trim="fb", axis=None):
    """The bounding box of the nonzero entries along ``axis`` (every axis by
    default), as NumPy trims: a basic slice of the traced array."""
    f = _asarray(filt)
    v = np.asarray(array_value(f))
    # the installed NumPy's own checks of trim and axis (they differ by release)
    np.trim_zeros(v, trim) if axis is None else np.trim_zeros(v, trim, axis=axis)
    trim = trim.lower()
    nd = v.ndim
    given = range(nd) if axis is None else (axis if isinstance(axis, (tuple, list)) else (axis,))
    axes = set()
    for a in given:
        if not -nd <= a < nd:
            raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of "
                                          f"dimension {nd}")
        axes.add(a % nd)
    if not axes:
        return f
    nz = np.nonzero(v)
    if nz[0].size == 0:  # all zeros: empty along every trimmed axis
        return f[tuple(slice(0, 0) if k in axes else slice(None) for k in range(nd))]
    return f[tuple(slice(int(nz[k].min()) if "f" in trim else None,
                         int(nz[k].max()) + 1 if "b" in trim else None)
                   if k in axes else slice(None) for k in range(nd))]


@decompose(np.meshgrid)
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    xs = [_asarray(x) for x in xi]
    nd = len(xs)
    out = []
    for i, x in enumerate(xs):
        shape = [1] * nd
        shape[i] = -1
        out.append(np.reshape(x, shape))
    if indexing == "xy" and nd > 1:
        out[0] = np.reshape(out[0], (1, -1) + (1,) * (nd - 2))
        out[1] = np.reshape(out[1], (-1, 1) + (1,) * (nd - 2))
    if not sparse:
        full = np.broadcast_shapes(*[shape_of(o) for o in out])
        out = [np.broadcast_to(o, full) + np.zeros(full, dtype=np.result_type(untraced(o)))
               for o in out]
    return tuple(out)


@decompose(np.unwrap)
def _unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    p = _asarray(p)
    pv = np.asarray(array_value(p))
    # the correction is piecewise constant in p: computed on the plain values
    return p + (np.unwrap(pv, discont=discont, axis=axis, period=period) - pv)


@decompose(np.sort_complex)
def _sort_complex(a):
    a = _asarray(a)
    order = np.argsort(np.asarray(array_value(a)) + 0j, axis=-1)
    out = np.take_along_axis(a, order, axis=-1)
    # NumPy's complex type for real input (complex128 for float32 too)
    dtype = np.sort_complex(np.zeros(1, np.result_type(untraced(a)))).dtype
    return out if np.result_type(untraced(out)) == dtype else out.astype(dtype)


@decompose(np.bincount)
def _bincount(x, weights=None, minlength=0):
    if _traced(x) or weights is None:
        return np.bincount(np.asarray(untraced(x)), None if weights is None else
                           np.asarray(untraced(weights)), minlength)
    from chainrules.numpy import index_add

    xv = np.asarray(x)
    w = _asarray(weights)
    wv = array_value(w)
    if type(wv) is np.ndarray:
        # NumPy's own result on the plain values: its checks, length and
        # dtype (float64 whatever the weights' float type)
        return index_add(np.zeros_like(np.bincount(xv, wv, minlength)), xv, w)
    n = max(int(xv.max()) + 1 if xv.size else 0, minlength)
    return index_add(np.zeros(n, dtype=np.float64), xv, w)


# -- floating-point decomposition -------------------------------------------------------------
def _ufunc_decompose(op, fn):
    if not is_registered(op) and op not in DECOMPOSITIONS:
        DECOMPOSITIONS[op] = fn


_ufunc_decompose(np.ldexp, lambda x1, x2, **kw: x1 * np.exp2(
    np.asarray(untraced(x2), dtype=np.result_type(untraced(x1), 1.0))))


def _frexp(x, **kw):
    m, e = np.frexp(np.asarray(array_value(x)))
    return x * np.exp2(-e.astype(np.result_type(untraced(x), 1.0))), e


def _modf(x, **kw):
    f, i = np.modf(np.asarray(array_value(x)))
    return x - i, i  # the integer part is piecewise constant


_ufunc_decompose(np.frexp, _frexp)
_ufunc_decompose(np.modf, _modf)


# -- np.i0: scipy.special.i0 on traced values -------------------------------------------
def _np_i0(x):
    """``np.i0(x)`` of a traced real ``x`` as ``scipy.special.i0``, which has
    its rule, in NumPy's output dtype (the input's: SciPy computes float16 in
    float64, cast back). NumPy refuses complex input and so does this.
    Importing scipy.special registers its rules (``chainrules.rules``)."""
    import scipy.special as sc

    if np.iscomplexobj(x):
        raise TypeError("i0 not supported for complex values")
    y = sc.i0(x)
    if x.dtype.kind == "f" and y.dtype != x.dtype:
        y = y.astype(x.dtype)
    return y


# registered whether or not scipy.special is loaded yet (np.i0 is NumPy's),
# when SciPy is installed (found without importing it)
if importlib.util.find_spec("scipy") is not None:
    _ufunc_decompose(np.i0, _np_i0)


@decompose(np.astype)
def _astype(x, dtype, /, *, copy=True, device=None):
    return _asarray(x).astype(dtype)


# -- the unique_* family ------------------------------------------------------------------------
@decompose(np.unique_values)
def _unique_values(x):
    return np.unique(x)


@decompose(np.unique_counts)
def _unique_counts(x):
    v, c = np.unique(x, return_counts=True)
    return np.lib._arraysetops_impl.UniqueCountsResult(v, c)


@decompose(np.unique_inverse)
def _unique_inverse(x):
    v, inv = np.unique(x, return_inverse=True)
    return np.lib._arraysetops_impl.UniqueInverseResult(v, np.reshape(inv, np.shape(
        untraced(x))))


@decompose(np.unique_all)
def _unique_all(x):
    v, idx, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    return np.lib._arraysetops_impl.UniqueAllResult(v, idx, np.reshape(
        inv, np.shape(untraced(x))), c)


# -- Hermitian FFTs ------------------------------------------------------------------------------
_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


@decompose(np.fft.hfft)
def _hfft(a, n=None, axis=-1, norm=None, out=None):
    return np.fft.irfft(np.conjugate(_asarray(a)), n, axis, norm=_SWAP[norm])


@decompose(np.fft.ihfft)
def _ihfft(a, n=None, axis=-1, norm=None, out=None):
    return np.conjugate(np.fft.rfft(_asarray(a), n, axis, norm=_SWAP[norm]))


# -- plain results and in-place writers ----------------------------------------------------------
for _op in (np.nanargmax, np.nanargmin, np.isin, np.intersect1d, np.union1d, np.setdiff1d,
            np.setxor1d, np.iscomplex, np.isreal, np.einsum_path, np.lexsort,
            np.may_share_memory, np.shares_memory, np.heaviside, np.spacing, np.nextafter):
    if not is_registered(_op) and _op not in DECOMPOSITIONS:
        DECOMPOSITIONS[_op] = on_plain_values(_op)  # integer, boolean or step results
if hasattr(np, "in1d"):  # NumPy before 2.4: the deprecated alias of np.isin
    DECOMPOSITIONS.setdefault(np.in1d, on_plain_values(np.in1d))


def _writer(name, alternative):
    def refuse(*args, **kwargs):
        raise UntraceableError(f"numpy.{name} writes into an array in place, which would "
                               f"drop the derivative of a traced value; {alternative}")
    return refuse


# (np.put, np.putmask, np.place and np.fill_diagonal are recorded out of place
# by chainrules.writes_buffers, before any composition is looked up)
DECOMPOSITIONS[np.put_along_axis] = _writer("put_along_axis",
                                            "use chainrules.numpy.index_update")


# -- np.pad: the statistic and ramp modes, traced constants and end values ---------------------
_STAT = {"maximum": np.max, "minimum": np.min, "mean": np.mean, "median": np.median}


def _pad_widths(pad_width, ndim):
    return np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (ndim, 2))


def _value_pairs(values, nd):
    """``constant_values`` or ``end_values`` as NumPy broadcasts them to
    ``(ndim, 2)`` (``numpy.lib._arraypad_impl._as_pairs``), traced or not: ``nd``
    ``[before, after]`` pairs of 0-d values, and whether they came as one or two
    values (NumPy then keeps them as NumPy scalars, which are not weakly typed
    in the ramp's arithmetic, where the ``(ndim, 2)`` form gives Python numbers)."""
    v = nested_array(values) if holds_traced(values) else np.asarray(values)
    shape = tuple(shape_of(v))
    if len(shape) < 3:
        size = int(np.prod(shape, dtype=np.intp))
        flat = np.reshape(v, (-1,))
        if size == 1:
            return [[flat[0], flat[0]]] * nd, True
        if size == 2 and shape != (2, 1):
            return [[flat[0], flat[1]]] * nd, True
    b = np.broadcast_to(v, (nd, 2))
    return [[b[i, 0], b[i, 1]] for i in range(nd)], False


def _as_dtype(v, dt):
    """``v`` (traced or not) in dtype ``dt``, as NumPy's pad writes it."""
    if is_traced(v):
        return v if v.dtype == dt else v.astype(dt)
    return np.asarray(v).astype(dt)


def _pad_traced_constant(array, pad_width, kwargs):
    """``np.pad(x, w, constant_values=c)`` with traced constants in any of
    NumPy's forms (a scalar, ``(c,)``, ``(before, after)``, per axis
    ``((b0, a0), (b1, a1), ...)``): every element of the padded array takes the
    constant NumPy gives it (NumPy pads axis by axis, so a corner takes the
    value of the last axis padded), found by padding an array of labels with
    NumPy itself; each constant is selected into ``x`` padded with zeros where
    its label is. Linear in ``x`` and in each constant. (NumPy hands ``np.pad`` to
    chainrules only when ``x`` is traced: with a plain ``x`` it converts traced
    constants itself, which raises ``UntraceableError``.)"""
    c = kwargs.pop("constant_values")
    if kwargs:
        raise ValueError(f"unsupported keyword arguments for mode 'constant': {set(kwargs)}")
    x = _asarray(array)
    dt = np.result_type(untraced(x))
    nd = ndim_of(x)
    pairs, _ = _value_pairs(c, nd)
    padded = np.pad(x, pad_width, mode="constant")
    if nd == 0:
        return padded
    inside = 2 * nd
    owner = np.pad(np.full(shape_of(x), inside, dtype=np.intp), pad_width, mode="constant",
                   constant_values=np.arange(inside, dtype=np.intp).reshape(nd, 2))
    # one select per side (a gather would need a scatter-add in its pullback,
    # which lazy backends cannot do)
    out = padded
    for k, v in enumerate(v for pair in pairs for v in pair):
        mask = owner == k
        if mask.any():
            out = np.where(mask, _as_dtype(v, dt), out)
    return out


def _ramp_dtype(x_dt, ends, small):
    """The dtype NumPy's ``linspace`` computes a ramp in: the promotion of
    ``x``'s dtype with the end values' (NumPy scalars when they came as one or two
    values, Python numbers, weakly typed, in the ``(ndim, 2)`` form)."""
    e_dt = np.result_type(*[untraced(v) for pair in ends for v in pair])
    if small:
        ct = np.result_type(x_dt, e_dt)
    else:
        ct = np.result_type(x_dt, {"b": False, "c": 0j}.get(e_dt.kind, 0 if e_dt.kind in "iu"
                                                                    else 0.0))
    return np.result_type(ct, 0.0)


def _linear_ramp(edge, end, width, ax, nd, ct, dt):
    """NumPy's ramp ``linspace(end, edge, width, endpoint=False)`` along ``ax``,
    in its arithmetic (``arange * step + end``, or ``arange / width * delta + end``
    where a step is zero), computed in ``ct`` and written in ``dt``."""
    shape = [1] * nd
    shape[ax] = width
    end_c, edge_c = _as_dtype(end, ct), _as_dtype(edge, ct)
    delta = edge_c - end_c
    step = delta / width
    y = np.reshape(np.arange(width, dtype=ct), shape)
    # NumPy's branch on any zero step, as a select (lazy arrays are not computed)
    r = np.where(np.any(step == 0), y / width * delta, y * step) + end_c
    return _as_dtype(r, dt)


@decompose(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    """``linear_ramp`` and the statistic modes as slices, reductions and
    concatenations axis by axis (as NumPy pads them), traced constants by
    ``_pad_traced_constant``; every other mode goes to the pad rule."""
    from chainrules.tracing import dispatch

    if mode == "constant" and holds_traced(kwargs.get("constant_values", 0)):
        return _pad_traced_constant(array, pad_width, kwargs)
    if mode not in _STAT and mode != "linear_ramp":
        return dispatch(np.pad, (array, pad_width), dict(kwargs, mode=mode))
    x = _asarray(array)
    nd = ndim_of(x)
    dt = np.result_type(untraced(x))
    widths = _pad_widths(pad_width, nd)
    if mode == "linear_ramp":
        ends, small = _value_pairs(kwargs.get("end_values", 0), nd)
        ct = _ramp_dtype(dt, ends, small) if nd else dt
    else:
        lengths = kwargs.get("stat_length")
        stat_len = None if lengths is None else _pad_widths(lengths, nd)
    for ax in range(nd):
        before, after = int(widths[ax, 0]), int(widths[ax, 1])
        if before == 0 and after == 0:
            continue
        n = shape_of(x)[ax]

        def sl(a, b):
            idx = [slice(None)] * nd
            idx[ax] = slice(a, b)
            return x[tuple(idx)]

        def block(v, width):
            shape = list(shape_of(x))
            shape[ax] = width
            return np.broadcast_to(v, tuple(shape)) + np.zeros(tuple(shape), dtype=dt)

        if mode == "linear_ramp":
            left = (_linear_ramp(sl(0, 1), ends[ax][0], before, ax, nd, ct, dt)
                    if before else None)
            right = (np.flip(_linear_ramp(sl(n - 1, n), ends[ax][1], after, ax, nd, ct, dt),
                             axis=ax) if after else None)
        else:
            stat = _STAT[mode]
            lb = n if stat_len is None else max(1, min(int(stat_len[ax, 0]), n))
            la = n if stat_len is None else max(1, min(int(stat_len[ax, 1]), n))
            left = block(stat(sl(0, lb), axis=ax, keepdims=True), before) if before else None
            right = block(stat(sl(n - la, n), axis=ax, keepdims=True), after) if after else None
        x = np.concatenate([p for p in (left, x, right) if p is not None], axis=ax)
    return x
