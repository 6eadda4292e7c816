"""Shape and indexing: reshape, transpose, broadcast_to, getitem, casts."""

import numpy as np

from chainrules.derived import linear_rule, unbroadcast
from chainrules.registry import non_differentiable
from chainrules.tracing import astype, getitem

linear_rule(np.reshape, lambda g, shape, *a, **k: np.reshape(g, shape))
linear_rule(np.ravel, lambda g, shape, *a, **k: np.reshape(g, shape))


def _transpose_transpose(g, shape, axes=None):
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort([a % len(shape) for a in axes]))


linear_rule(np.transpose, _transpose_transpose)
linear_rule(np.broadcast_to, lambda g, shape, *a, **k: unbroadcast(g, shape))


def scatter_add(g, index, shape):
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeats accumulate);
    the transpose of ``x[index]``."""
    out = np.zeros(shape, g.dtype)
    np.add.at(out, index, g)
    return out


scatter_add._chainrules_op = True

linear_rule(getitem, lambda g, shape, index: scatter_add(g, index, shape))
linear_rule(scatter_add, lambda g, gshape, index, shape: g[index])
linear_rule(astype, lambda g, shape, dtype: g)  # the engine projects the dtype back
linear_rule(np.real, lambda g, shape: g)
for _f in (np.shape, np.ndim, np.size, np.result_type):
    try:
        non_differentiable(_f)
    except TypeError:
        pass
for _f in (np.equal, np.not_equal, np.less, np.less_equal, np.greater,
           np.greater_equal, np.isnan, np.isinf, np.isfinite, np.argmax, np.argmin,
           np.floor, np.ceil, np.sign):
    non_differentiable(_f)
