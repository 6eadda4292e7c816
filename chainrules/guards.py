"""What a traced value refuses: every use that would silently drop its
derivative (conversion to a plain array, ``float()``, ``int()``, use as an
index, ``item()``, ``tolist()``, the in-place methods that are not
supported, ``deepcopy``) raises ``UntraceableError`` saying what to do
instead. Writing a traced value into a plain ndarray (``out[i] = x``)
reaches only these conversions (NumPy copies the number itself), so they
name the traced buffer to use then. ``ConversionGuards`` is a mixin of
``chainrules.tracing.Traced``."""

import numpy as np

from .errors import NonDifferentiableInputError, UntraceableError

#: ndarray subclasses whose arithmetic and results are an ndarray's
#: (np.memmap: an ndarray backed by a file; the engine's own checkpoint
#: segment arrays, added by ``treat_as_ndarray``); every other subclass is
#: refused
_plain_subclasses = (np.memmap,)


#: ``frame -> "chainrules.scipy.<twin>" or None``: the differentiable twin
#: of the SciPy function running in ``frame`` (installed by
#: ``chainrules.twin_hints``)
TWIN_HINT = None


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


#: the end of the conversions' errors: writing a traced value into a plain
#: ndarray (``out[i] = x``, ``out[a:b] = x``) reaches them, as NumPy copies
#: the numbers into its own buffer
PLAIN_BUFFER = (
    ". If it is being written into a plain NumPy array (out[i] = x, out[a:b] = x), no "
    "derivative can follow it there: make the buffer from a traced value instead, so "
    "that writes into it are recorded: out = np.zeros_like(x, shape=(n,)) (also "
    "np.ones_like, np.empty_like, np.full_like, with dtype= if needed, or x.copy()); or "
    "build the result out of place with chainrules.numpy.index_update(out, i, x) or "
    "np.stack")


def foreign_caller():
    """``(kind, frame)``: who asked for a plain array, when it was not NumPy's
    protocols or the user's own code: ``"scipy"`` (a SciPy, scikit-learn or
    array-API Python function: its outermost frame), ``"pandas"`` (a pandas
    object converting its operand), ``"vectorize"`` (``np.vectorize``), or
    ``(None, None)``. Frames are read only to word the error; where they
    cannot be read (no ``sys._getframe``, a shallow stack, another frame
    layout) the answer is ``(None, None)`` and the generic message is
    raised instead."""
    import sys

    try:
        f = sys._getframe(2)
        while f is not None:
            mod = f.f_globals.get("__name__", "") or ""
            if mod.startswith("numpy"):
                if isinstance(f.f_locals.get("self"), np.vectorize):
                    return "vectorize", f
                f = f.f_back
                continue
            if mod.startswith("chainrules"):
                f = f.f_back
                continue
            if mod.startswith(("scipy", "sklearn", "array_api_compat")):
                outer = f
                while outer.f_back is not None and (outer.f_back.f_globals.get(
                        "__name__", "") or "").startswith(("scipy", "array_api_compat")):
                    outer = outer.f_back
                return "scipy", outer
            if mod.startswith("pandas"):
                return "pandas", f
            return None, None
    except Exception:  # frames laid out otherwise: the generic message
        return None, None
    return None, None


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


def _refuse_in_scipy(frame, what, how, tape=None):
    """Refuse a conversion asked for by SciPy's function in ``frame``,
    naming its differentiable twin when there is one. ``tape``: the
    recording of the value, which keeps the refusal when compiled code asked
    (``Tape.close`` raises it if the code dropped it)."""
    caller = f"{frame.f_globals.get('__name__')}.{frame.f_code.co_name}"
    try:
        twin = None if TWIN_HINT is None else TWIN_HINT(frame)
    except Exception:  # a frame laid out otherwise: no hint, same error
        twin = None
    if twin is not None:
        way = f"call {twin} instead: it has the same signature and is differentiable"
    else:
        way = ("chainrules.scipy (special, linalg, ...) holds differentiable "
               "versions of SciPy's Python-level functions; for other functions, "
               "make them one operation with chainrules.primitive and register "
               "a rule")
    try:
        untraceable(f"{what} inside {caller}",
                    f"{caller} is a Python-level function that {how}, which "
                    f"NumPy's protocols cannot intercept; {way}")
    except UntraceableError as exc:
        if tape is not None and getattr(tape, "refused", False) is None:
            tape.refused = exc
        raise


def _refuse_conversion(value, what, alternative):
    """Refuse a conversion of ``value`` to a Python number or a plain array,
    keeping the refusal on its recording: NumPy raises an error of its own
    from it when the conversion was a write into a plain array
    (``out[i] = x``), and ``Tape.close`` then raises the refusal itself."""
    try:
        untraceable(what, alternative)
    except UntraceableError as exc:
        tape = getattr(value, "tape", None)
        if tape is not None:
            tape.converted = exc
        raise


class ConversionGuards:
    """The refused conversions of a traced value (a mixin of ``Traced``)."""

    __slots__ = ()

    def __array__(self, dtype=None, copy=None):
        kind, frame = foreign_caller()
        if kind == "pandas":
            untraceable(
                "converting to a plain array inside pandas",
                "pandas objects convert the arrays they are combined with to NumPy "
                "(X @ w with X a DataFrame, a Series times an array); take the data out "
                "of pandas first, X.to_numpy() and y.to_numpy(), and compute with NumPy")
        if kind == "vectorize":
            untraceable(
                "np.vectorize",
                "np.vectorize calls its function on plain Python scalars, so it cannot "
                "be traced; write the function with NumPy's array functions (np.where "
                "for branches), or make it one operation with chainrules.primitive and "
                "give it a rule")
        if kind == "scipy":
            _refuse_in_scipy(frame, "converting to a plain array", "calls np.asarray")
        scalar = np.ndim(self.value) == 0
        _refuse_conversion(self, "converting to a plain array (np.asarray / np.array)",
                     "keep using NumPy functions on it; to build an array from "
                     "traced pieces use np.stack / np.concatenate or "
                     "chainrules.numpy.array (np.full with a traced fill value: "
                     "chainrules.numpy.full); use chainrules.stop_gradient(x) for "
                     "an explicit constant copy" + PLAIN_BUFFER
                     + (". A traced scalar here often comes from a Python list passed "
                        "as the differentiated argument: a list is a pytree of scalars, "
                        "each traced on its own; pass np.array(the_list) to "
                        "differentiate one array" if scalar else ""))

    # -- conversions -------------------------------------------------------------
    def __float__(self):
        kind, frame = foreign_caller()
        if kind == "scipy":
            # SciPy's compiled integrators and solvers take floats (quad's
            # limits, the integrand's values)
            _refuse_in_scipy(frame, "converting to a Python float", "converts it to float",
                             getattr(self, "tape", None))
        _refuse_conversion(self, "float(x), or a function of the math module (math.exp(x) converts "
                    "x with float first)",
                    "use NumPy's functions on arrays (np.exp(x), np.sqrt(x), ...) and keep "
                    "the value as an array; float(chainrules.stop_gradient(x)) converts "
                    "deliberately" + PLAIN_BUFFER)

    def __complex__(self):
        _refuse_conversion(self, "complex()", "use complex(chainrules.stop_gradient(x)) "
                           "deliberately" + PLAIN_BUFFER)

    def __int__(self):
        _refuse_conversion(self, "int()", "use int(chainrules.stop_gradient(x)) deliberately"
                           + PLAIN_BUFFER)

    def __index__(self):
        untraceable("using it as an index", "indices carry no derivative: use "
                                             "chainrules.stop_gradient(x) first")

    def item(self, *args):
        untraceable("x.item()", "use chainrules.stop_gradient(x).item() deliberately")

    def tolist(self):
        untraceable("x.tolist()", "use chainrules.stop_gradient(x).tolist() deliberately")

    def __deepcopy__(self, memo):
        untraceable("deepcopy", "copy the plain value with chainrules.stop_gradient")


#: ndarray methods that write into the array, and what to write instead: on a
#: traced value each raises UntraceableError (writes that chainrules
#: records, x[i] = v, x += v, x.fill(v), np.copyto(x, v), are in
#: chainrules/writes.py)
_IN_PLACE = {
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
