"""What a traced value refuses: every use that would silently drop its
derivative (conversion to a plain array, ``float()``, ``int()``, use as an
index, ``item()``, ``tolist()``, in-place writes, ``deepcopy``) raises
``UntraceableError`` saying what to do instead. ``ConversionGuards`` is a
mixin of ``chainrules.tracing.Traced``."""

import numpy as np

from .errors import NonDifferentiableInputError, UntraceableError

#: ndarray subclasses whose arithmetic and results are an ndarray's
#: (np.memmap: an ndarray backed by a file; the engine's own checkpoint
#: segment arrays, added by ``treat_as_ndarray``); every other subclass is
#: refused
_plain_subclasses = (np.memmap,)


def treat_as_ndarray(cls):
    """Declare an ndarray subclass whose values compute exactly as ndarrays."""
    global _plain_subclasses
    _plain_subclasses = _plain_subclasses + (cls,)
    return cls


def is_plain_subclass(t):
    return issubclass(t, _plain_subclasses)


def untraceable(what, alternative):
    raise UntraceableError(f"{what} on a traced value would drop its derivative; "
                           f"{alternative}")


def foreign_caller():
    """The library function (SciPy, ...) that asked for a plain array, if the
    conversion did not come from NumPy or the user's own code. Frames are read
    only to word the error; where they cannot be read (an interpreter without
    ``sys._getframe``, a shallow stack) this is None and the generic message
    is raised instead."""
    import sys

    try:
        f = sys._getframe(2)
    except (AttributeError, ValueError):
        return None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if mod.startswith(("numpy", "chainrules")):
            f = f.f_back
            continue
        if mod.startswith(("scipy", "sklearn", "array_api_compat")):
            outer = f
            while outer.f_back is not None and outer.f_back.f_globals.get(
                    "__name__", "").startswith(("scipy", "array_api_compat")):
                outer = outer.f_back
            return outer
        return None
    return None


def refuse_subclass(t, where):
    """Raise for an ndarray subclass ``t`` met by ``where`` (an op or an
    entry point): chainrules computes with ndarray semantics, and a
    subclass's operators and results may differ (``np.matrix``: ``*`` is a
    matrix product; masked arrays leave masked entries out), so its
    derivative could be wrong."""
    name = f"{t.__module__}.{t.__qualname__}"
    if issubclass(t, np.matrix):
        why = "for np.matrix, * is a matrix product and ** a matrix power"
    elif issubclass(t, np.ma.MaskedArray):
        why = "masked arrays leave their masked entries out of every operation"
    else:
        why = "its operators, indexing or results may differ from an ndarray's"
    raise NonDifferentiableInputError(
        f"{where}: an array of type {name} (a subclass of np.ndarray) reached a "
        f"differentiated computation; chainrules computes with plain ndarray semantics "
        f"and {why}, so the result and its derivative could silently differ from what "
        "the subclass computes. Pass np.asarray(x) (a plain ndarray; for a masked array "
        "x.filled(value) or x.compressed()) and write the subclass's operations with "
        "NumPy functions (np.matmul for a matrix product).")


class ConversionGuards:
    """The refused conversions of a traced value (a mixin of ``Traced``)."""

    __slots__ = ()

    def __array__(self, dtype=None, copy=None):
        frame = foreign_caller()
        if frame is not None:
            caller = f"{frame.f_globals.get('__name__')}.{frame.f_code.co_name}"
            from .scipy._hints import twin_for_frame

            try:
                twin = twin_for_frame(frame)
            except Exception:  # a frame laid out otherwise: no hint, same error
                twin = None
            if twin is not None:
                way = f"call {twin} instead: it has the same signature and is differentiable"
            else:
                way = ("chainrules.scipy (special, linalg, ...) holds differentiable "
                       "versions of SciPy's Python-level functions; for other functions, "
                       "make them one operation with chainrules.primitive and register "
                       "a rule")
            untraceable(
                f"converting to a plain array inside {caller}",
                f"{caller} is a Python-level function that calls np.asarray, which "
                f"NumPy's protocols cannot intercept; {way}")
        untraceable("converting to a plain array (np.asarray / np.array)",
                     "keep using NumPy functions on it; to build an array from "
                     "traced pieces use np.stack / np.concatenate or "
                     "chainrules.numpy.array (np.full with a traced fill value: "
                     "chainrules.numpy.full); use chainrules.stop_gradient(x) for "
                     "an explicit constant copy")

    # -- conversions -------------------------------------------------------------
    def __float__(self):
        untraceable("float()", "keep the value as an array, or use "
                                "float(chainrules.stop_gradient(x)) deliberately")

    def __complex__(self):
        untraceable("complex()", "use complex(chainrules.stop_gradient(x)) deliberately")

    def __int__(self):
        untraceable("int()", "use int(chainrules.stop_gradient(x)) deliberately")

    def __index__(self):
        untraceable("using it as an index", "indices carry no derivative: use "
                                             "chainrules.stop_gradient(x) first")

    def item(self, *args):
        untraceable("x.item()", "use chainrules.stop_gradient(x).item() deliberately")

    def tolist(self):
        untraceable("x.tolist()", "use chainrules.stop_gradient(x).tolist() deliberately")

    def __setitem__(self, index, value):
        untraceable("an in-place write (x[...] = v)",
                     "build a new array out of place, for example "
                     "np.where(mask, v, x) or chainrules.numpy.index_update(x, index, v)")

    def __deepcopy__(self, memo):
        untraceable("deepcopy", "copy the plain value with chainrules.stop_gradient")


#: ndarray methods that write into the array, and what to write instead: on a
#: traced value each raises UntraceableError (a traced value is never
#: modified in place, so no stale value can be left behind)
_IN_PLACE = {
    "fill": "build a new array: np.full_like(x, v)",
    "sort": "use the sorted copy y = np.sort(x, axis)",
    "partition": "use the partitioned copy y = np.partition(x, kth, axis)",
    "put": "use chainrules.numpy.index_update(x.ravel(), indices, v).reshape(x.shape)",
    "resize": "use np.resize(x, shape) or np.reshape(x, shape), which return new arrays",
    "itemset": "use chainrules.numpy.index_update(x, index, v)",
    "setfield": "build a new array out of place",
}


def _refuse_in_place(name, alternative):
    def method(self, *args, **kwargs):
        untraceable(f"the in-place method x.{name}()", alternative)
    method.__name__ = name
    method.__doc__ = f"Refused on a traced value (it writes in place): {alternative}."
    return method


for _name, _alternative in _IN_PLACE.items():
    setattr(ConversionGuards, _name, _refuse_in_place(_name, _alternative))
del _name, _alternative
