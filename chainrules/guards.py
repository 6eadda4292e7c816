"""What a traced value refuses: every use that would silently drop its
derivative (conversion to a plain array, ``float()``, ``int()``, use as an
index, ``item()``, ``tolist()``, in-place writes, ``deepcopy``) raises
``UntraceableError`` saying what to do instead. ``ConversionGuards`` is a
mixin of ``chainrules.tracing.Traced``."""

from .errors import UntraceableError


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
