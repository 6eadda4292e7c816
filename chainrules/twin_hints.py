"""Name the differentiable twin of a SciPy function that refused a traced value.

SciPy's Python-level functions call ``np.asarray`` on their inputs, which
NumPy's protocols cannot intercept; the traced value then raises
``UntraceableError``. This module turns the SciPy frame that asked for the
conversion into the name of the function under ``chainrules.scipy`` with the
same signature, when one exists, so that the message can say what to call.
"""

import importlib

from . import guards

__all__ = ["twin_for_frame"]


def _public_module(modname):
    """The public path of a SciPy module under ``scipy``, up to its first
    private part: ``scipy.linalg._matfuncs`` -> ``linalg``, ``scipy.stats``
    -> ``stats``, ``scipy.spatial.distance`` -> ``spatial.distance``."""
    parts = modname.split(".")
    if len(parts) < 2 or parts[0] != "scipy":
        return None
    public = []
    for part in parts[1:]:
        if part.startswith("_"):
            break
        public.append(part)
    return ".".join(public) or None


def _resolve(path):
    """The object at ``chainrules.scipy.<path>`` or None."""
    head, *rest = path.split(".")
    try:
        obj = importlib.import_module(f"chainrules.scipy.{head}")
    except ImportError:
        return None
    for name in rest:
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


_FREEZE = ("__call__", "freeze", "__init__")


def _distribution_name(owner):
    """``norm`` for ``scipy.stats.norm`` (``rv_continuous`` objects carry a
    ``name``), its frozen form (``.dist.name``) and the multivariate objects
    (``multivariate_normal_gen``, ``multivariate_normal_frozen``: the class
    name without its suffix)."""
    if owner is None:
        return None
    for obj in (owner, getattr(owner, "dist", None)):
        name = getattr(obj, "name", None)
        if isinstance(name, str):
            return name
    cls = type(owner).__name__
    for suffix in ("_gen", "_frozen"):
        if cls.endswith(suffix):
            return cls[:-len(suffix)]
    return None


def twin_for_frame(frame):
    """The dotted name of the differentiable twin of the SciPy function
    running in ``frame`` (``chainrules.scipy.stats.norm.logpdf``), or None.
    A helper without a twin of its own (``scipy._lib``'s wrappers, the
    private functions a solver calls) names the twin of the nearest SciPy
    function that called it, among the SciPy frames directly above it
    (``scipy.optimize.least_squares`` for its wrapped residuals)."""
    for _ in range(_CALLERS):
        if frame is None or not frame.f_globals.get("__name__", "").startswith("scipy"):
            return None
        twin = _twin_of(frame)
        if twin is not None:
            return twin
        frame = frame.f_back
    return None


#: how many SciPy frames above the refusing one are asked for a twin
_CALLERS = 6


def _twin_of(frame):
    modname, func = frame.f_globals.get("__name__", ""), frame.f_code.co_name
    local = frame.f_locals
    wrapped = None
    if modname.startswith("scipy._lib"):
        # its decorators hold the function they wrap as f, or as func
        # (_workers_wrapper around scipy.optimize.least_squares)
        wrapped = local.get("f") if callable(local.get("f")) else local.get("func")
    elif "_support_alternative_backends" in modname:
        # scipy.signal's delegation holds the function as func; scipy.special's
        # as the func of its _FuncInfo (self)
        wrapped = local.get("func") or getattr(local.get("self"), "func", None)
    elif func == "__ua_function__":
        # a uarray backend (scipy.fft's own, when a set_backend block or a
        # global backend puts it before chainrules') runs the multimethod it
        # was given, scipy.fft.fft, as method
        wrapped = local.get("method")
    if callable(wrapped):
        # SciPy's batching decorator (SciPy >= 1.14) and its array-API
        # delegation (SCIPY_ARRAY_API=1) convert the arguments of the function
        # they wrap: name that function
        modname = getattr(wrapped, "__module__", "") or ""
        func = getattr(wrapped, "__name__", func)
    sub = _public_module(modname)
    if sub is None:
        return None
    candidates = []
    dist = _distribution_name(frame.f_locals.get("self"))
    if dist is not None:
        # a method of a distribution object: scipy.stats.norm.logpdf; freezing
        # (scipy.stats.norm(loc, scale)) names the distribution itself
        if func in _FREEZE:
            candidates.append(f"{sub}.{dist}")
        candidates.append(f"{sub}.{dist}.{func}")
    if not func.startswith("__"):     # a module's __init__ is no twin
        candidates.append(f"{sub}.{func}")
    if dist is None and "self" in local:
        # a method of an object (scipy.interpolate.CubicSpline(x, y)(t)): its class
        candidates.append(f"{sub}.{type(local['self']).__name__}")
    if "." in sub:
        # a function of a public submodule (scipy.signal.windows) may have its
        # twin in the subpackage's module
        candidates.append(f"{sub.split('.')[0]}.{func}")
    for path in candidates:
        if _resolve(path) is not None:
            return f"chainrules.scipy.{path}"
    return None


# the refused conversion asks for the twin through this hook (the guards sit
# below every other layer and import nothing above them)
guards.TWIN_HINT = twin_for_frame
