"""Reductions: sum, mean."""

import numpy as np

from chainrules.derived import linear_rule

from ._util import normalize_axis


def _expand_back(g, shape, axis, keepdims):
    if not keepdims:
        axes = normalize_axis(axis, len(shape))
        if axes:
            g = np.expand_dims(g, axes)
    return np.broadcast_to(g, shape)


def _sum_transpose(g, shape, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return _expand_back(g, shape, axis, keepdims)


def _mean_transpose(g, shape, axis=None, dtype=None, out=None, keepdims=False, **kw):
    axes = normalize_axis(axis, len(shape))
    n = 1
    for a in axes:
        n *= shape[a]
    return _expand_back(g / n, shape, axis, keepdims)


linear_rule(np.sum, _sum_transpose)
linear_rule(np.mean, _mean_transpose)
