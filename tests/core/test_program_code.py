"""A fused region's program as straight-line code (``chainrules.program_code``):
once a signature of inputs is hot, ``Program`` runs code that makes the
interpreter's NumPy calls with its ``out=`` buffers, so every result is the
interpreter's bit for bit (signed zeros, NaN and infinity included), and
NumPy's warnings and errors come out as before."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from chainrules import elementwise_expr as ee
from chainrules import program_code
from chainrules.user_code import is_internal

_UNARY = [np.sin, np.exp, np.log, np.sqrt, np.square, np.tanh, np.negative, np.abs,
          lambda a: a ** 2, lambda a: a ** 3, lambda a: a ** 0.5, lambda a: 1.0 / a,
          lambda a: 2 * a, lambda a: a - 1.5]
_BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.power,
           lambda a, b: np.where(a > b, a * b, b - a), np.arctan2]
_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e308]


def _program(steps, dt):
    """A program of two outputs over x and y made of the drawn steps."""
    x, y = ee.placeholder("x", dt), ee.placeholder("y", dt)
    vals = [x, y]
    for kind, i, j, k in steps:
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        vals.append(_UNARY[k % len(_UNARY)](a) if kind else _BINARY[k % len(_BINARY)](a, b))
    return ee.Program((vals[-1], vals[len(vals) // 2]))


def _bits(v):
    v = np.asarray(v)
    return v.dtype, v.shape, v.tobytes()


def _interpreted(program, env):
    return program(env, False, trace=[])  # a trace: never the code


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, 20), st.integers(0, 20),
                                st.integers(0, 20)), min_size=1, max_size=12),
       dt=st.sampled_from([np.float64, np.float32]),
       shapes=st.sampled_from([((7,), (7,)), ((3, 4), (3, 4)), ((3, 4), (4,)), ((1,), (5,)),
                               ((0,), (0,))]),
       special=st.sampled_from(_SPECIAL), seed=st.integers(0, 2 ** 16))
def test_code_is_the_interpreter_bit_for_bit(steps, dt, shapes, special, seed):
    rng = np.random.default_rng(seed)
    program = _program(steps, np.dtype(dt))
    env = {"x": rng.standard_normal(shapes[0]).astype(dt) * 3,
           "y": rng.standard_normal(shapes[1]).astype(dt)}
    with np.errstate(all="ignore"):
        if env["x"].size:
            env["x"].flat[0] = special
        before = {k: _bits(v) for k, v in env.items()}
        want = [_bits(v) for v in _interpreted(program, env)]
        for _ in range(program_code.HOT_AFTER + 3):
            got = program(env, False)
            assert [_bits(v) for v in got] == want
    assert any(callable(c) for c in program.code.values())
    assert {k: _bits(v) for k, v in env.items()} == before  # inputs never written


def test_each_signature_gets_its_code_and_the_count_is_bounded():
    x = ee.placeholder("x", np.float64)
    program = ee.Program((np.sin(x) * 2 + x,))
    for n in range(1, program_code.MAX_SIGNATURES + 4):
        v = np.linspace(-1, 1, n)
        for _ in range(program_code.HOT_AFTER + 1):
            got = program({"x": v}, False)[0]
        np.testing.assert_array_equal(got, np.sin(v) * 2 + v)
    assert len(program.code) == program_code.MAX_SIGNATURES
    assert all(callable(c) for c in program.code.values())


class _Sub(np.ndarray):
    pass


@pytest.mark.parametrize("value", [np.float64(0.5), np.array(0.5),
                                   np.array([0.5, 1.0]).view(_Sub)])
def test_scalars_0d_and_other_types_stay_interpreted(value):
    # (NumPy 1.x: the dtype of an operation on a 0-d value can depend on it)
    x = ee.placeholder("x", np.float64)
    program = ee.Program((np.exp(x) + 1.0,))
    for _ in range(program_code.HOT_AFTER + 2):
        got = program({"x": value}, False)[0]
    np.testing.assert_array_equal(got, np.exp(value) + 1.0)
    assert program.code == {}


def test_the_code_reuses_dead_temporaries_as_the_interpreter_does():
    x = ee.placeholder("x", np.float64)
    program = ee.Program(((np.sin(x) * 2 - 1) * 3,))
    trace = []
    program({"x": np.ones(5)}, False, trace=trace)
    # sin(x) is new; * 2, - 1 and * 3 each write into the value they read
    assert trace == [None, 1, 3, 5], trace  # slots: sin 1, * 2 at 3, - 1 at 5


def test_warnings_and_errors_come_out_as_numpys():
    x = ee.placeholder("x", np.float64)
    program = ee.Program((np.log(x) * 2.0,))
    env = {"x": np.array([1.0, 0.0, 2.0])}
    for _ in range(program_code.HOT_AFTER + 1):
        with np.errstate(divide="ignore"):
            program(env, False)
    code = program.code[next(iter(program.code))]
    assert callable(code) and is_internal(code.__code__)  # the library's frames
    with warnings.catch_warnings(record=True) as seen, np.errstate(divide="warn"):
        warnings.simplefilter("always")
        got = program(env, False)[0]
    assert [str(w.message) for w in seen] == ["divide by zero encountered in log"]
    assert got[1] == -np.inf
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        program(env, False)


def test_a_program_with_code_pickles_without_it():
    x = ee.placeholder("x", np.float64)
    program = ee.Program((np.cos(x) - x,))
    v = np.arange(4.0)
    for _ in range(program_code.HOT_AFTER + 1):
        program({"x": v}, False)
    assert program.code
    copy = pickle.loads(pickle.dumps(program))
    assert copy.code == {}
    np.testing.assert_array_equal(copy({"x": v}, False)[0], np.cos(v) - v)
