"""Recording the NumPy calls a function makes, for staged plans (``cr.jit``).

A staged call runs the function once on ``Staged`` values: an array type
below every tape that holds the concrete value and implements NumPy's
protocols, so that every NumPy call on it (the user's, the rules', the
sweeps') computes as usual on the concrete values and is appended to the
``Recorder`` as a step. The derivative machinery above sees an array of
another type, as it sees a dask array: it never converts it.

Whatever turns a staged value into a Python value (``bool``, ``int``,
``float``, ``operator.index``, ``item()``, ``tolist()``, a NumPy function
answering with a Python number) returns the concrete answer and records a
**guard**: the plan computes the same value again at replay and compares.
A step whose output's shape can depend on the values (a boolean mask,
``np.nonzero``, ``np.unique``, ...) is followed by a guard on that shape.
What a recording cannot follow marks it **tainted**, with the reason: a
conversion to a plain array (``np.asarray``, a SciPy function that makes
one), a write of staged values into a plain array or into an argument.
The answer computed is still right (the concrete values are NumPy's own);
the function is then not staged.

Plain arrays that reach a step (closed over, global, made inside the
function) are held by the plan by reference: an in-place change of a
closed-over array is seen at replay.
"""

import operator
import sys
import threading

import numpy as np

from .array_methods import ArithmeticOperators, ArrayMethods
from . import staging_operators
from .staging_tables import (_FILLED, _LIKE, _OPERATOR_FUNCTIONS, _OPERATORS,  # noqa: F401
                             _UNARY, DYNAMIC_SHAPE, IN_PLACE, SHAPE_FUNCTIONS, _astype,
                             _constant, _flatten, _view)
from .user_code import is_internal

__all__ = ["Staged", "Recorder", "Ref", "is_staged", "plain_array"]

_ndarray = np.ndarray
_generic = np.generic
_NUMBERS = (bool, int, float, complex)
#: argument types a staged call takes as they are (no protocol of their own)
_PLAIN = frozenset((bool, int, float, complex, _ndarray, np.float64, np.float32, np.int64,
                    np.int32, np.bool_, np.complex128, type(None)))


class Ref:
    """A staged value in a step's arguments: the plan's variable ``i``."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"v{self.i}"


#: ``Ref(i)`` for the variables made so far (a ``Ref`` is immutable: every
#: recording shares them), extended under a lock
_REFS = []
_REFS_LOCK = threading.Lock()


def _more_refs(i):
    with _REFS_LOCK:
        n = len(_REFS)
        if i >= n:
            _REFS.extend(Ref(k) for k in range(n, max(i + 1, 2 * n, 256)))
    return _REFS[i]


def _user_line():
    """``"file:line"`` of the first frame outside chainrules, NumPy and
    SciPy, or ``"<unknown>"`` where frames cannot be read."""
    try:
        f = sys._getframe(2)
    except (AttributeError, ValueError):
        return "<unknown>"
    while f is not None:
        if not is_internal(f.f_code):
            return f"{f.f_code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


class Recorder:
    """The steps recorded while a function runs on staged values.

    ``steps``: ``("call", fn, args, kwargs, out)`` (``out`` the structure of
    the result with a ``Ref`` for each staged value, or ``None`` for a call
    made for its effect on an argument) and ``("guard", kind, ref, expected,
    line)``. ``tainted``: why the recording cannot be replayed, or
    ``None``."""

    __slots__ = ("steps", "n", "tainted", "inputs", "guards", "constants", "meta",
                 "scalars")

    def __init__(self):
        self.steps = []
        self.n = 0
        self.tainted = None
        self.inputs = []
        self.guards = 0
        self.constants = {}  # staged constants: variable -> the plain value
        self.meta = {}  # staged arrays and NumPy scalars: variable -> (dtype, shape)
        self.scalars = {}  # the variables that are NumPy scalars: variable -> dtype

    def new(self, value, is_input=False):
        s = Staged(value, self.n, self)
        if type(value) is _ndarray or isinstance(value, _generic):
            self.meta[self.n] = (value.dtype, value.shape)
            if type(value) is not _ndarray:
                self.scalars[self.n] = value.dtype
        self.n += 1
        if is_input:
            self.inputs.append(s)
        return s

    def taint(self, reason):
        if self.tainted is None:
            self.tainted = f"{reason} (at {_user_line()})"

    def guard(self, kind, ref, expected):
        self.steps.append(("guard", kind, ref, expected, _user_line()))
        self.guards += 1

    # -- templates of arguments ------------------------------------------------
    def template(self, obj):
        """``obj`` with each staged value of this recording replaced by its
        ``Ref``, and its concrete form (each staged value by its value)."""
        t = type(obj)
        if t is Staged:
            if obj.rec is not self:
                self.taint("a staged value of another recording was used")
            return obj.ref, obj.value
        if t is tuple or t is list:
            tpl, con = [], []
            for o in obj:
                to = type(o)
                if to is Staged and o.rec is self:
                    tpl.append(o.ref)
                    con.append(o.value)
                elif to is Staged or to is tuple or to is list or to is dict \
                        or to is slice:
                    a, b = self.template(o)
                    tpl.append(a)
                    con.append(b)
                else:
                    tpl.append(o)
                    con.append(o)
            return (tuple(tpl), tuple(con)) if t is tuple else (tpl, con)
        if t is dict:
            tpl, con = {}, {}
            for k, v in obj.items():
                tpl[k], con[k] = self.template(v)
            return tpl, con
        if t is slice:
            if type(obj.start) is not Staged and type(obj.stop) is not Staged \
                    and type(obj.step) is not Staged:
                return obj, obj
            parts = [self.template(p) for p in (obj.start, obj.stop, obj.step)]
            if any(type(p[0]) is Ref for p in parts):
                self.taint("a slice bound that is a staged value")
            return obj, slice(*(p[1] for p in parts))
        return obj, obj

    def wrap(self, value, what, guards=None):
        """The result of a recorded call as staged values, with its output
        template: arrays and NumPy scalars become staged values; tuples and
        lists are walked; other values are returned as they are (``None``
        in the template). A Python number is a staged value too (np.real
        of a Python float), or, with a list ``guards``, a plain number that
        the plan binds and guards (appended as ``(ref, value)``)."""
        t = type(value)
        if t in _NUMBERS and guards is not None:
            ref = Ref(self.n)
            self.n += 1
            guards.append((ref, value))
            return value, ref
        if t is _ndarray or isinstance(value, _generic) or t in _NUMBERS:
            # a Python number computed from staged values (np.real of a
            # Python float) is a value of the plan too
            s = self.new(value)
            return s, s.ref
        if isinstance(value, (tuple, list)):
            pairs = [self.wrap(v, what, guards) for v in value]
            staged = [p[0] for p in pairs]
            tpl = tuple(p[1] for p in pairs)
            if hasattr(value, "_fields"):
                return type(value)(*staged), tpl
            return (t(staged) if t in (tuple, list) else staged), tpl
        return value, None

    def wrap_call(self, fn, args, kwargs, value):
        """Record ``fn(*args, **kwargs)`` whose value was computed already."""
        atpl = self.template(args)[0]
        ktpl = self.template(kwargs)[0]
        out, otpl = self.wrap(value, fn)
        self.steps.append(("call", fn, atpl, ktpl, otpl))
        return out

    def holds_inputs(self, value):
        """Whether ``value`` (a concrete array) may share memory with an
        argument of the staged function."""
        for s in self.inputs:
            v = s.value
            if type(v) is _ndarray and np.may_share_memory(v, value):
                return True
        return False


def _shape_guards(rec, out):
    """A guard on the shape of each staged value in ``out``."""
    if type(out) is Staged:
        rec.guard("shape", out.ref, np.shape(out.value))
    elif isinstance(out, (tuple, list)):
        for o in out:
            _shape_guards(rec, o)


def _foreign(types):
    for t in types:
        if t is not Staged and not issubclass(t, (_ndarray, _generic)):
            return True
    return False


def _call(rec, fn, args, kwargs, dynamic_shape=False):
    """Record ``fn(*args, **kwargs)`` and compute it on the concrete values."""
    atpl, acon = rec.template(args)
    if kwargs:
        ktpl, kcon = rec.template(kwargs)
        value = fn(*acon, **kcon)
    else:
        ktpl = {}
        value = fn(*acon)
    if fn in SHAPE_FUNCTIONS:
        return value  # decided by shapes and dtypes: nothing to replay
    out, otpl = rec.wrap(value, fn)
    if otpl is None or type(otpl) is tuple and all(o is None for o in otpl):
        # a value that is not an array (a dtype, None, a string): the plan
        # computes it again and guards it
        ref = Ref(rec.n)
        rec.n += 1
        rec.steps.append(("call", fn, atpl, ktpl, ref))
        rec.guard("value", ref, value)
        return out
    rec.steps.append(("call", fn, atpl, ktpl, otpl))
    if dynamic_shape:
        _shape_guards(rec, out)
    return out


def _ufunc_call(rec, ufunc, inputs):
    """Record ``ufunc(*inputs)`` (no keywords): ``_call``'s work in one
    loop, for the most frequent step."""
    if len(inputs) == 2:
        # the most frequent call of all: two operands, each a staged value
        # of this recording or a plain value, giving an ndarray
        a, b = inputs
        ta, tb = type(a), type(b)
        fast = True
        if ta is Staged and a.rec is rec:
            ca, ra = a.value, a.ref
        elif ta in _PLAIN:
            ca = ra = a
        else:
            fast = False
        if tb is Staged and b.rec is rec:
            cb, rb = b.value, b.ref
        elif tb in _PLAIN:
            cb = rb = b
        else:
            fast = False
        if fast:
            value = ufunc(ca, cb)
            if type(value) is _ndarray:
                i = rec.n
                rec.n = i + 1
                out = Staged(value, i, rec)
                rec.meta[i] = (out._dtype, out._shape)
                rec.steps.append(("call", ufunc, (ra, rb), {}, out.ref))
                return out
            return _ufunc_result(rec, ufunc, [ra, rb], [ca, cb], value)
    tpl, con = [], []
    for x in inputs:
        tx = type(x)
        if tx is Staged and x.rec is rec:
            tpl.append(x.ref)
            con.append(x.value)
        elif tx is Staged or tx is tuple or tx is list or tx is dict or tx is slice:
            a, b = rec.template(x)
            tpl.append(a)
            con.append(b)
        elif tx not in _PLAIN and hasattr(tx, "__array_ufunc__") and not issubclass(
                tx, (_ndarray, _generic)):
            return NotImplemented  # (another array type's protocol decides)
        else:
            tpl.append(x)
            con.append(x)
    return _ufunc_result(rec, ufunc, tpl, con, ufunc(*con))


def _ufunc_result(rec, ufunc, tpl, con, value):
    """The rest of ``_ufunc_call``, once the ufunc gave ``value``."""
    t = type(value)
    if t is _ndarray or isinstance(value, _generic):
        i = rec.n
        rec.n = i + 1
        out = Staged(value, i, rec)
        rec.meta[i] = (out._dtype, out._shape)
        if t is _ndarray:
            rec.steps.append(("call", ufunc, tuple(tpl), {}, out.ref))
            return out
        rec.scalars[i] = out._dtype
        # arithmetic on real NumPy scalars: the plan writes Python's
        # operator, which NumPy's scalars compute as the ufunc does, ten
        # times faster (not for complex values: see ``staging_operators``)
        n = len(con)
        op = _OPERATORS.get(ufunc) if n == 2 else _UNARY.get(ufunc) if n == 1 else None
        if op is None:
            pass
        elif out._dtype.kind == "c" or _complex_in(con):
            op = None
        elif n == 2:
            c0, c1 = con
            if not (isinstance(c0, _generic) or isinstance(c1, _generic)) or \
                    isinstance(c0, _ndarray) or isinstance(c1, _ndarray):
                op = None
        elif type(con[0]) is _ndarray or not isinstance(con[0], _generic):
            op = None
        if op is None:
            rec.steps.append(("call", ufunc, tuple(tpl), {}, out.ref))
        else:
            rec.steps.append(("call", ufunc, tuple(tpl), {}, out.ref, op))
        return out
    return _wrap_ufunc(rec, ufunc, tpl, value)


def _complex_in(values):
    """Whether a Python complex or a complex NumPy scalar is among
    ``values``."""
    for c in values:
        if type(c) is complex or isinstance(c, _generic) and c.dtype.kind == "c":
            return True
    return False


def _wrap_ufunc(rec, ufunc, tpl, value):
    """The rest of ``_ufunc_call``: results that are tuples (``np.modf``,
    ``np.divmod``) or Python values."""
    out, otpl = rec.wrap(value, ufunc)
    if otpl is None or type(otpl) is tuple and all(o is None for o in otpl):
        ref = Ref(rec.n)
        rec.n += 1
        rec.steps.append(("call", ufunc, tuple(tpl), {}, ref))
        rec.guard("value", ref, value)
        return out
    rec.steps.append(("call", ufunc, tuple(tpl), {}, otpl))
    return out


def _written(rec, target, what):
    """Check a write into ``target`` (an argument of an in-place call):
    staged, of this recording, not an argument of the staged function."""
    if type(target) is not Staged:
        rec.taint(f"{what} writes staged values into a plain array")
        return False
    if rec.holds_inputs(target.value):
        rec.taint(f"{what} writes into an argument of the staged function")
        return False
    return True


def _bool_index(index):
    """Whether an index holds a staged boolean array (a mask)."""
    items = index if type(index) is tuple else (index,)
    for i in items:
        if type(i) is Staged and np.result_type(i.value) == np.bool_ and np.ndim(i.value):
            return True
        if type(i) is _ndarray and i.dtype == np.bool_:
            continue
    return False


def _same(a, b):
    if a == b:
        return True
    try:
        return a != a and b != b  # both NaN
    except Exception:  # pragma: no cover - values without !=
        return False


class Staged(ArithmeticOperators, ArrayMethods):
    """A value of a function being staged: an array (or NumPy scalar) whose
    NumPy calls are recorded."""

    # (``shape`` and ``dtype``: an ndarray's or NumPy scalar's own, a Python
    # number's through NumPy; fixed for a signature, read-only)
    __slots__ = ("value", "i", "rec", "ref", "_shape", "_dtype")
    __array_priority__ = 20.0
    #: each NumPy call is computed at once (``arrays.computes_eagerly``)
    _computes_eagerly = True

    def __init__(self, value, i, rec):
        self.value = value
        self.i = i
        self.rec = rec
        try:
            self.ref = _REFS[i]
        except IndexError:
            self.ref = _more_refs(i)
        try:
            self._shape = value.shape
            self._dtype = value.dtype
        except AttributeError:
            self._shape = ()
            self._dtype = np.result_type(value)

    shape = property(operator.attrgetter("_shape"))
    dtype = property(operator.attrgetter("_dtype"))

    # (Python's operators, abs() and the in-place operators:
    # ``staging_operators``, which installs them)

    # -- NumPy protocols ---------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        rec = self.rec
        if method == "__call__" and not kwargs:
            return _ufunc_call(rec, ufunc, inputs)  # (it looks for other array types)
        for x in inputs:
            tx = type(x)
            if tx is not Staged and tx not in _PLAIN and hasattr(tx, "__array_ufunc__") \
                    and not issubclass(tx, (_ndarray, _generic)):
                return NotImplemented
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        out = kwargs.get("out")
        if out is not None:
            outs = out if type(out) is tuple else (out,)
            for o in outs:
                if o is not None and not _written(rec, o, f"{ufunc.__name__}(out=...)"):
                    return fn(*rec.template(inputs)[1], **rec.template(kwargs)[1])
            atpl, acon = rec.template(inputs)
            ktpl, kcon = rec.template(kwargs)
            fn(*acon, **kcon)
            rec.steps.append(("call", fn, atpl, ktpl, None))
            return out if type(out) is not tuple or len(out) != 1 else out[0]
        if method == "at":
            if not _written(rec, inputs[0], f"{ufunc.__name__}.at"):
                return fn(*rec.template(inputs)[1], **rec.template(kwargs)[1])
            atpl, acon = rec.template(inputs)
            fn(*acon)
            rec.steps.append(("call", fn, atpl, {}, None))
            return None
        return _call(rec, fn, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if _foreign(types):
            return NotImplemented
        rec = self.rec
        pos = IN_PLACE.get(func)
        if pos is not None:
            target = args[pos] if len(args) > pos else next(iter(kwargs.values()), None)
            if not _written(rec, target, func.__name__):
                return func(*rec.template(args)[1], **rec.template(kwargs)[1])
            atpl, acon = rec.template(args)
            ktpl, kcon = rec.template(kwargs)
            r = func(*acon, **kcon)
            rec.steps.append(("call", func, atpl, ktpl, None))
            return r
        if func in _LIKE and (len(args) < 2 or type(args[1]) is not Staged):
            # zeros, ones or a constant of a staged value's shape: a NumPy
            # scalar (immutable) is a constant of the plan
            value = func(*rec.template(args)[1], **rec.template(kwargs)[1])
            if isinstance(value, _generic):
                return value
            if type(value) is _ndarray and (value.flags.c_contiguous or
                                            value.flags.f_contiguous):
                # fixed by the signature: the plan makes the same array
                # with NumPy's constructor (no dispatch on a prototype)
                order = "C" if value.flags.c_contiguous else "F"
                fill = () if func is not np.full_like else (
                    args[1] if len(args) > 1 else kwargs["fill_value"],)
                return rec.wrap_call(_FILLED[func], (value.shape,) + fill + (
                    value.dtype, order), {}, value)
            return rec.wrap_call(func, args, kwargs, value)
        return _call(rec, func, args, kwargs, dynamic_shape=func in DYNAMIC_SHAPE)

    def __array__(self, dtype=None, copy=None):
        self.rec.taint("a staged value was converted to a plain array (np.asarray, or a "
                       "function that makes one, such as SciPy's)")
        v = self.value
        if dtype is not None:
            v = np.asarray(v, dtype=dtype)
        return np.array(v, copy=True) if copy else np.asarray(v)

    # -- conversions to Python values: guards ----------------------------------
    def _convert(self, kind, fn):
        r = fn(self.value)
        self.rec.guard(kind, self.ref, r)
        return r

    def __bool__(self):
        return self._convert("bool", bool)

    def __float__(self):
        return self._convert("float", float)

    def __int__(self):
        return self._convert("int", int)

    def __index__(self):
        return self._convert("index", operator.index)

    def __complex__(self):
        return self._convert("complex", complex)

    def item(self, *args):
        if args:
            return self._convert("item", lambda v: v.item(*args)) if not any(
                type(a) is Staged for a in args) else self._taint_item()
        return self._convert("item", lambda v: v.item())

    def _taint_item(self):
        self.rec.taint("item() at a staged index")
        return self.value.item()

    def tolist(self):
        return self._convert("tolist", lambda v: v.tolist())

    def __repr__(self):
        return f"Staged({self.value!r})"

    def __str__(self):
        return str(self.value)

    def __format__(self, spec):
        return format(self.value, spec)

    __hash__ = None

    # -- attributes (static for a signature) -----------------------------------
    # (an ndarray's or NumPy scalar's own attributes; a Python number's
    # through NumPy)
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        try:
            return self.value.size
        except AttributeError:
            return 1

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        for i in range(len(self.value)):
            yield self[i]

    # -- indexing and writes ---------------------------------------------------------
    def __getitem__(self, index):
        return _call(self.rec, operator.getitem, (self, index), {},
                     dynamic_shape=_bool_index(index))

    def __setitem__(self, index, value):
        rec = self.rec
        if not _written(rec, self, "item assignment"):
            self.value[rec.template(index)[1]] = rec.template(value)[1]
            return
        atpl, acon = rec.template((self, index, value))
        operator.setitem(*acon)
        rec.steps.append(("call", operator.setitem, atpl, {}, None))

    def fill(self, value):
        self[...] = value

    def copy(self, order="K"):
        return np.copy(self, order=order)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return _call(self.rec, _astype, (self, dtype), {"casting": casting, "copy": copy})

    def view(self, *args, **kwargs):
        return _call(self.rec, _view, (self,) + args, kwargs)

    def conjugate(self):
        return np.conjugate(self)

    def flatten(self, order="C"):
        return _call(self.rec, _flatten, (self,), {"order": order})

    def sort(self, axis=-1, kind=None, order=None):
        self[...] = np.sort(self, axis=axis, kind=kind, order=order)

    def nonzero(self):
        return np.nonzero(self)

    def __round__(self, ndigits=None):
        if ndigits is None:
            return round(self._convert("float", float))
        return np.round(self, ndigits)

def plain_array(x):
    """Whether ``x`` is an ndarray, or a staged value of one (not of a NumPy
    scalar): where eager code takes an ndarray's path, a recording takes
    the same one, so that the plan computes what eager code does."""
    t = type(x)
    return t is _ndarray or t is Staged and type(x.value) is _ndarray


def is_staged(x):
    return type(x) is Staged


def staged_constant(like, value):
    """``value`` (a plain constant: immutable, or a read-only array) as a
    staged value of ``like``'s recording: a step of the plan that gives the
    constant, so that what is computed from it is recorded rather than
    folded at recording with arrays the plan reads by reference."""
    out = like.rec.wrap_call(_constant, (value,), {}, value)
    like.rec.constants[out.i] = value
    return out


def complex_scalar_as_array(x):
    """A staged complex NumPy scalar as a staged 0-d array (``np.asarray``
    recorded), as eager code projects a scalar cotangent; any other value
    as it is. NumPy multiplies two complex scalars in its scalar arithmetic
    and a 0-d array in the ufunc's loop, which differ by an ulp at times;
    real scalars compute alike both ways, and stay scalars (cheaper
    replays)."""
    if type(x) is Staged:
        v = x.value
        if type(v) is not _ndarray and v.dtype.kind == "c":
            return x.rec.wrap_call(np.asarray, (x,), {}, np.asarray(v))
    return x


def constant_value(x):
    """The plain value of a staged constant (``staged_constant``), else
    ``None``."""
    if type(x) is Staged:
        return x.rec.constants.get(x.i)
    return None


staging_operators.install(Staged, _written, _ufunc_call, _PLAIN)
