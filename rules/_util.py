"""Small helpers shared by the rule modules."""

import numpy as np


def shape_of(v):
    try:
        return v.shape
    except AttributeError:
        return np.shape(v)


def ndim_of(v):
    try:
        return v.ndim
    except AttributeError:
        return np.ndim(v)


def normalize_axis(axis, ndim):
    """``axis`` (None, int or tuple, possibly negative) as a sorted tuple."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim if ndim else 0 for a in axis))
    return (axis % ndim if ndim else 0,)
