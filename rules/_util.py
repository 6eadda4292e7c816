"""Small helpers shared by the rule modules."""

from chainrules.arrays import ndim_of, shape_of  # noqa: F401  (re-exported for the rules)


def normalize_axis(axis, ndim):
    """``axis`` (None, int or tuple, possibly negative) as a sorted tuple."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim if ndim else 0 for a in axis))
    return (axis % ndim if ndim else 0,)
