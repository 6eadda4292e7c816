"""The NumPy audit: every public function of ``numpy``, ``numpy.linalg`` and
``numpy.fft`` either has a rule, is a composition of rules
(``registry.DECOMPOSITIONS``), is marked non-differentiable, or is listed
here with the reason it needs none. ``tests/testing/test_numpy_audit.py``
fails for any function in none of these; ``docs/coverage.md`` shows the
table.
"""

import inspect

import numpy as np

__all__ = ["JUSTIFIED", "uncovered", "audit_rows"]

_CATEGORIES = {
    "no array input: makes a new array from shapes, ranges or sizes (a traced size "
    "or range raises on conversion to an integer)": (
        "arange empty eye full identity tri indices diag_indices mask_indices "
        "tril_indices triu_indices ix_ bartlett blackman hamming hanning kaiser ones "
        "zeros fftfreq rfftfreq fromfunction"),
    "index and shape queries on integer inputs or shapes": (
        "diag_indices_from tril_indices_from triu_indices_from ravel_multi_index "
        "unravel_index broadcast_shapes"),
    "integer and bit operations (no derivative exists)": (
        "bitwise_and bitwise_count bitwise_invert bitwise_left_shift bitwise_not "
        "bitwise_or bitwise_right_shift bitwise_xor gcd lcm invert left_shift right_shift "
        "packbits unpackbits"),
    "dtype and type utilities, predicates on types (no numeric output)": (
        "isdtype issubdtype mintypecode promote_types typename isscalar iterable isfortran "
        "isnat"),
    "conversion to a plain array: refused on traced values with UntraceableError, by "
    "design (use np.stack / chainrules.numpy.array or chainrules.stop_gradient)": (
        "array asarray asanyarray asarray_chkfinite ascontiguousarray asfortranarray "
        "require from_dlpack frombuffer fromiter fromstring"),
    "text, files and printing": (
        "array2string array_repr array_str base_repr binary_repr format_float_positional "
        "format_float_scientific fromfile fromregex genfromtxt load loadtxt save savetxt "
        "savez savez_compressed"),
    "configuration and runtime information": (
        "get_include get_printoptions getbufsize geterr geterrcall info printoptions "
        "set_printoptions setbufsize seterr seterrcall show_config show_runtime test "
        "nested_iters frompyfunc"),
    "dates and business days": "busday_count busday_offset datetime_as_string "
                               "datetime_data is_busday",
    "np.matrix (deprecated class)": "asmatrix bmat",
    "traced through the ufunc machinery as floor_divide and remainder": "divmod",
    "writes into an array in place: on a traced array the write is recorded out of "
    "place (chainrules.writes_buffers); a traced value written into a plain array "
    "raises UntraceableError": "put putmask place fill_diagonal",
    "deprecated alias of np.vstack (which has a rule)": "row_stack",
    "deprecated alias (NumPy before 2.4) whose body calls np.trapezoid, which has a "
    "decomposition": "trapz",
}

#: function name -> reason it needs no rule of its own
JUSTIFIED = {name: reason for reason, names in _CATEGORIES.items()
             for name in names.split()}

_MODULES = (("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft))


def _public_functions():
    for modname, mod in _MODULES:
        for name in sorted(dir(mod)):
            if name.startswith("_"):
                continue
            f = getattr(mod, name)
            if callable(f) and not inspect.isclass(f):
                yield modname, name, f


def audit_rows():
    """(module, name, status) for every public function."""
    from chainrules.registry import DECOMPOSITIONS, builtin_ops

    ops = set(builtin_ops())
    rows = []
    for modname, name, f in _public_functions():
        if f in ops:
            status = "rule"
        elif f in DECOMPOSITIONS:
            status = "composition"
        elif name in JUSTIFIED:
            status = "justified"
        else:
            status = "uncovered"
        rows.append((modname, name, status))
    return rows


def uncovered():
    """Public functions with no rule, no composition and no justification."""
    return [f"{m}.{n}" for m, n, s in audit_rows() if s == "uncovered"]
