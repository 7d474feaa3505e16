"""The native tier's memory traffic: pads of a group's results computed in
the loop of the group that reads them (no padded arrays), constants of one
repeated value written into kernels, large kernels split across threads,
and outputs that never alias a buffer a later call writes.  Every result is
compared bit for bit with the NumPy tier's."""

import multiprocessing
import threading

import numpy as np
import pytest
from _bits import bits_equal
from functrans.primitives.shape import pad_p

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import native
from functrans.core import bind

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")


def _rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _hvp(x, v):
    return ft.hvp(_rosenbrock, (x,), (v,))


def _tiers(f, *args):
    return ft.jit(f, compiler="numpy")(*args), ft.jit(f, compiler="native")(*args)


def _specials(n, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(n).astype(dtype)
    x[:: 7] = -0.0
    x[3:: 11] = np.inf
    x[5:: 13] = -np.inf
    x[2:: 17] = np.nan
    return x


# -- pads computed in the loop ------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 17, 1000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_rosenbrock_hvp_is_one_kernel_with_no_padded_array(n, dtype):
    rng = np.random.default_rng(n)
    x, v = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    lowered = ft.jit(_hvp, compiler="native").lower(x, v)
    assert "pad" not in str(lowered._entry.compiled.jaxpr)
    assert len(lowered.native_sources) == 1
    assert bits_equal(*_tiers(_hvp, x, v))


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_the_hvp_matches_on_nan_inf_and_signed_zeros():
    x, v = _specials(200, np.float64), _specials(200, np.float64, seed=1)[::-1].copy()
    assert bits_equal(*_tiers(_hvp, x, v))


def _two_pads(x):
    # Low and high edges on both axes, a -0.0 fill (a zero fill would hide
    # which operand the sum read), and a pad with a NaN fill that crops (negative
    # widths).
    a = fnp.pad(x * 2.0 + 1.0, ((1, 0), (0, 2)), constant_values=-0.0)
    b = fnp.pad(x * x - 3.0, ((0, 1), (2, 0)))
    c = bind(pad_p, x * 0.5 - x, np.float64(np.nan), padding_config=((2, -1, 0), (-1, 3, 0)))
    return a * 3.0 + b - c


@pytest.mark.parametrize("shape", [(1, 1), (4, 3), (7, 9)])
def test_pads_on_both_axes_and_both_edges(shape):
    x = np.random.default_rng(0).standard_normal(shape)
    x.flat[::4] = -0.0
    lowered = ft.jit(_two_pads, compiler="native").lower(x)
    assert "pad" not in str(lowered._entry.compiled.jaxpr)
    assert bits_equal(*_tiers(_two_pads, x))


def test_a_pad_by_a_traced_fill_value_and_integers_that_wrap():
    def f(x, fill):
        return fnp.pad(x * 3 + 7, ((2, 1),), constant_values=fill) * 5 - 1

    x = np.array([2**31 - 1, -(2**31), 0, 12345, -1], np.int32)
    fill = np.int32(-(2**31))
    lowered = ft.jit(f, compiler="native").lower(x, fill)
    assert "pad" not in str(lowered._entry.compiled.jaxpr)
    assert bits_equal(*_tiers(f, x, fill))


def test_a_padded_result_also_used_elsewhere_stays_an_array():
    def f(x):
        inner = x * 2.0 + 1.0
        return fnp.pad(inner, ((1, 1),)) + 1.0, inner

    x = np.linspace(-1, 1, 9)
    lowered = ft.jit(f, compiler="native").lower(x)
    assert "pad" in str(lowered._entry.compiled.jaxpr)
    for a, b in zip(*_tiers(f, x)):
        assert bits_equal(a, b)


def test_an_array_read_at_both_shapes_keeps_the_pad():
    def f(x, c):  # c broadcasts to the inner shape and to the outer one
        return fnp.pad(x * c + 1.0, ((1, 0),)) * c + 2.0

    x, c = np.linspace(-1, 1, 5), np.array([-0.0])
    lowered = ft.jit(f, compiler="native").lower(x, c)
    assert "pad" in str(lowered._entry.compiled.jaxpr)
    assert bits_equal(*_tiers(f, x, c))


def test_interior_padding_stays_a_numpy_call():
    def f(x):
        return bind(pad_p, x * 2.0 + 1.0, np.zeros(()), padding_config=((1, 0, 1),)) * 3.0 + 1.0

    x = np.linspace(-1, 1, 5)
    lowered = ft.jit(f, compiler="native").lower(x)
    assert "pad" in str(lowered._entry.compiled.jaxpr)
    assert bits_equal(*_tiers(f, x))


# -- constants of one repeated value --------------------------------------------------------


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("value", [-0.0, 0.0, 100.0, np.inf])
def test_a_constant_of_one_value_is_a_literal_of_the_kernel(value):
    c = np.full(50, value)

    def f(x):  # a product: x + (-0.0) is x, which simplify drops before any kernel
        return x * c + 2.0

    x = _specials(50, np.float64)
    lowered = ft.jit(f, compiler="native").lower(x)
    (source,) = lowered.native_sources
    assert float(value).hex() in source and "a1" not in source  # one input: x
    assert bits_equal(*_tiers(f, x))


def test_constants_of_several_values_or_a_nan_stay_arrays():
    for c in (np.arange(6.0), np.full(6, np.nan)):
        def f(x, c=c):
            return x * 2.0 + c

        x = np.linspace(-1, 1, 6)
        (source,) = ft.jit(f, compiler="native").lower(x).native_sources
        assert "a1" in source
        assert bits_equal(*_tiers(f, x))


# -- kernels split across threads ------------------------------------------------------------


@pytest.fixture
def split_small(monkeypatch):
    """Split kernels from 64 elements on, over three threads (on any machine)."""
    from functrans.backends.native import elementwise

    monkeypatch.setattr(elementwise, "SPLIT_ELEMENTS", 64)
    monkeypatch.setattr(elementwise, "_threads", lambda: 3)


@pytest.mark.parametrize("shape", [(64,), (1000,), (1, 70), (3, 50), (65, 2)])
def test_split_kernels_give_the_serial_results(split_small, shape):
    def f(x):
        return x * x * 0.5 - x / 3.0

    x = np.random.default_rng(1).standard_normal(shape)
    (source,) = ft.jit(f, compiler="native").lower(x).native_sources
    assert "range(start, stop)" in source
    assert bits_equal(*_tiers(f, x))
    x, v = np.random.default_rng(2).standard_normal((2, 300))
    assert bits_equal(*_tiers(_hvp, x, v))


def _in_child(queue):
    x = np.arange(100.0)
    queue.put(ft.jit(lambda x: x * 2.0 + 1.0, compiler="native")(x).tolist())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_split_kernels_run_in_a_forked_child(split_small):
    f = ft.jit(lambda x: x * 2.0 + 1.0, compiler="native")
    np.testing.assert_array_equal(f(np.arange(100.0)), np.arange(100.0) * 2.0 + 1.0)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0 and got == (np.arange(100.0) * 2.0 + 1.0).tolist()


_AT_EXIT = """
import atexit
import numpy as np
import functrans as ft
from functrans.backends.native import elementwise
elementwise.SPLIT_ELEMENTS = 64
f = ft.jit(lambda x: x * 2.0 + 1.0, compiler="native")
x = np.arange(1000.0)
f(x)
atexit.register(lambda: print(np.array_equal(f(x + 1.0), (x + 1.0) * 2.0 + 1.0)))
"""


def test_split_kernels_run_while_the_interpreter_exits():
    """At exit no thread pool takes work any more: the calling thread computes
    every chunk itself."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _AT_EXIT], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr


# -- outputs and threads ---------------------------------------------------------------------


@pytest.mark.parametrize("split", [False, True])
def test_kept_results_are_never_overwritten(monkeypatch, split):
    """Large results are written into the arrays of the call before only
    when nothing holds those: a result the caller kept (or a view of it)
    keeps its values through later calls."""
    from functrans.backends.native import elementwise

    if split:
        monkeypatch.setattr(elementwise, "SPLIT_ELEMENTS", 64)
        monkeypatch.setattr(elementwise, "_threads", lambda: 2)
    n = 40_000
    f = ft.jit(_hvp, compiler="native")
    reference = ft.jit(_hvp)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((2, n)) for _ in range(4)]
    first = f(*args[0])
    view = f(*args[1])[5:]
    f(*args[2])  # dropped: its buffer may be written again
    last = f(*args[3])
    assert not np.shares_memory(first, last) and not np.shares_memory(view, last)
    assert bits_equal(first, reference(*args[0]))
    assert bits_equal(view, reference(*args[1])[5:])
    assert bits_equal(last, reference(*args[3]))


@pytest.mark.parametrize("split", [False, True])
def test_threads_calling_one_native_program(monkeypatch, split):
    from functrans.backends.native import elementwise

    if split:
        monkeypatch.setattr(elementwise, "SPLIT_ELEMENTS", 64)
        monkeypatch.setattr(elementwise, "_threads", lambda: 2)
    n = 20_000  # outputs large enough to be reused call after call
    f = ft.jit(_hvp, compiler="native")
    reference = ft.jit(_hvp)
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((2, n)) for _ in range(6)]
    expected = [reference(*a) for a in inputs]
    f(*inputs[0])
    failures: list = []

    def run(k):
        for r in range(30):
            j = (k + r) % len(inputs)
            got = f(*inputs[j])
            if not bits_equal(got, expected[j]):
                failures.append((k, r))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_a_kernel_s_operands_go_back_to_the_scratch_pool():
    """A large NumPy-call result a kernel reads is pooled once the kernel is
    done (the kernel keeps no view of it), so the next call writes into it
    instead of faulting in fresh pages."""
    from functrans.backends.numpy.buffers import scratch

    def f(x):  # float maximum stays a NumPy call; the rest is one kernel
        m = fnp.maximum(x, 0.5)
        return m * 2.0 + m * m

    x = np.linspace(-1, 1, 1 << 16)
    jf = ft.jit(f, compiler="native")
    want = ft.jit(f, compiler="numpy")(x)
    scratch.clear()
    got = jf(x)
    assert bits_equal(got, want)
    pooled = scratch.free.get((x.shape, x.dtype), [])
    assert len(pooled) == 1 and not np.shares_memory(pooled[0], got)
    again = jf(x)  # writes the maximum into the pooled array
    assert bits_equal(again, want) and bits_equal(got, want)
