"""Plain fused elementwise kernels of the native tier (``elementwise._call``)
and its loop kernels (``loops.py``: scan, fori_loop and while_loop bodies)
report the floating-point exceptions their arithmetic raises as the NumPy
tier does: the same warnings (count, text, the user's line), a raise under
``np.errstate(...="raise")``, nothing under "ignore", the handler under
"call", and the same values, on one thread and on three."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _bits import bytes_equal

import functrans as ft
import functrans.numpy as fnp
from functrans import config, lax
from functrans.backends import native

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")

if native.available():
    from functrans.backends.native import elementwise, fp_status

    if fp_status.status() is None:
        pytestmark = pytest.mark.skip(reason="no floating-point status functions found")


@pytest.fixture(params=[False, True], ids=["one thread", "three threads"])
def threads(request, monkeypatch):
    """Kernels of 64 elements or more split across three threads (whatever
    the machine's cores), or none."""
    if request.param:
        monkeypatch.setattr(elementwise, "SPLIT_ELEMENTS", 64)
    saved = config.native_threads
    config.update("native_threads", 3)
    yield request.param
    config.update("native_threads", saved)


def overflow(x):
    return x * x + 1.0


def divide(x):
    return 1.0 / x + x


def inf_minus_inf(x):
    return (x + x) - x * 2.0


def zero_over_zero(x):
    return (x * 0.0) / (x * 0.0) + x


def log_of_negative(x):
    return fnp.log(x * 2.0) + x


#: (function, the value placed in the last element, NumPy's messages)
CASES = [
    (overflow, 1e200, ["overflow encountered in multiply"]),
    (divide, 0.0, ["divide by zero encountered in divide"]),
    (inf_minus_inf, np.inf, ["invalid value encountered in subtract"]),
    (zero_over_zero, 1.0, ["invalid value encountered in divide"]),
    (log_of_negative, -1.0, ["invalid value encountered in log"]),
]


def _input(value, dtype):
    x = np.linspace(0.5, 2.0, 200).astype(dtype)
    with np.errstate(over="ignore"):
        x[-1] = value  # in the last piece, which a helper thread may compute
    return x


def _recorder(calls):
    """An ``np.errstate`` "call" handler appending the error's name to ``calls``."""
    return lambda err, flag: calls.append(err)


def _run(f, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = f(x)
    return y, caught


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, value, messages", CASES, ids=[c[0].__name__ for c in CASES])
def test_flags_warn_and_raise_as_in_the_numpy_tier(threads, dtype, f, value, messages):
    if dtype == np.float32 and f is overflow:
        value = 1e30
    _check(f, _input(value, dtype), messages)


def _check(f, x, messages):
    """``f`` jitted natively on ``x`` warns, raises, ignores and calls the
    handler as the NumPy tier does, with its values where it reports."""
    jf, numpy_tier = ft.jit(f, compiler="native"), ft.jit(f, compiler="numpy")
    expected, want = _run(numpy_tier, x)
    got, caught = _run(jf, x)
    assert bytes_equal(got, expected)
    assert [str(w.message) for w in caught] == [str(w.message) for w in want]
    assert {str(w.message) for w in want} == set(messages)  # (a loop warns at each step)
    assert all(w.filename == __file__ for w in caught)
    kind = {"overflow": "over", "divide": "divide"}.get(messages[0].split()[0], "invalid")
    with np.errstate(**{kind: "raise"}), pytest.raises(FloatingPointError,
                                                       match=messages[0]):
        jf(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(**{kind: "ignore"}):  # the kernel's own values: its log may
            np.testing.assert_allclose(jf(x), expected, rtol=1e-6)  # differ by an ulp
    called: dict[str, list] = {"native": [], "numpy": []}
    for tier, g in [("numpy", numpy_tier), ("native", jf)]:
        with np.errstate(**{kind: "call"}, call=_recorder(called[tier])):
            assert bytes_equal(g(x), expected)
    assert called["native"] == called["numpy"]
    assert set(called["numpy"]) == {messages[0].split(" encountered")[0]}


# -- loop kernels ----------------------------------------------------------------------


def _in_scan(f):
    """``f`` applied to each element in a scan body: the results, and their sum."""
    def g(x):
        def step(c, xi):
            y = f(xi)
            return c + y, y
        total, ys = lax.scan(step, x[0] * 0.0, x)
        return fnp.concatenate([ys, total[None]])
    return g


def _in_fori(f):
    """``f`` applied to the carry, elementwise, in a fori_loop of two steps."""
    return lambda x: lax.fori_loop(0, 2, lambda i, c: f(c) * 0.5 + c * 0.5, x)


def _in_while(f):
    """``f`` applied to the carry, elementwise, in a while_loop of two steps."""
    def g(x):
        def body(state):
            i, c = state
            return i + 1, f(c) * 0.5 + c * 0.5
        return lax.while_loop(lambda s: s[0] < 2, body, (0, x))[1]
    return g


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("loop", [_in_scan, _in_fori, _in_while],
                         ids=["scan", "fori_loop", "while_loop"])
@pytest.mark.parametrize("f, value, messages", CASES, ids=[c[0].__name__ for c in CASES])
def test_flags_in_loop_bodies_warn_and_raise_as_in_the_numpy_tier(dtype, loop, f, value,
                                                                   messages):
    if dtype == np.float32 and f is overflow:
        value = 1e30
    x = np.array([1.5, 0.75, 2.0], dtype)
    with np.errstate(over="ignore"):
        x[1] = value
    _check(loop(f), x, messages)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_no_flag_no_warning_and_the_kernel_s_values(threads, dtype):
    x = _input(3.0, dtype)
    jf = ft.jit(overflow, compiler="native")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            assert bytes_equal(jf(x), ft.jit(overflow, compiler="numpy")(x))
            for loop in (_in_scan, _in_fori, _in_while):
                np.testing.assert_array_equal(ft.jit(loop(overflow), compiler="native")(x),
                                              ft.jit(loop(overflow), compiler="numpy")(x))


def test_the_inexact_flag_alone_never_reads_the_error_state(monkeypatch):
    # sin, cos and most transcendental loops raise the inexact flag at every
    # call: that alone is reported nowhere, so the error state (np.geterr,
    # most of a small kernel's call) is not read for it.
    found = fp_status.status()
    inexact = found.every & ~found.named
    assert inexact and found.named == sum(found.bits.values())

    def refused():
        raise AssertionError("np.geterr read for the inexact flag alone")

    monkeypatch.setattr(np, "geterr", refused)
    assert not fp_status.reported(inexact, found)
    monkeypatch.undo()
    with np.errstate(invalid="warn"):
        assert fp_status.reported(inexact | found.bits["invalid"], found)
    with np.errstate(invalid="ignore"):
        assert not fp_status.reported(inexact | found.bits["invalid"], found)
