"""Exact groups computed chunk by chunk (``backends/native/chunked.py``):
fused groups whose transcendental members call NumPy's own loops on chunks
give the NumPy tier's bytes at every length, layout, special value, dtype
and thread count, and report floating-point errors as the NumPy tier does."""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest
from _bits import bits_equal, bytes_equal
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import config, tiering
from functrans.backends import native
from functrans.backends.numpy.codegen import Compiled
from functrans.passes.pipeline import run_passes

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")

if native.available():
    from functrans.backends.native import chunked, elementwise, fp_status

    CHUNK = chunked.CHUNK
else:
    CHUNK = 2048

#: Lengths around the chunks' edges, and odd ones.
LENGTHS = [0, 1, 7, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 1, 3 * CHUNK - 1, 5 * CHUNK + 3]

SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e-310, 1e-30, 1e300, -1e22,
           710.0, -750.0, 1.0, -0.5, 3.0, np.pi]


def _values(n: int, dtype, seed: int = 0) -> np.ndarray:
    """Random values of every magnitude, the special ones placed on both
    sides of each chunk edge."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
    special = np.array(SPECIAL)
    for edge in range(0, n + 1, CHUNK):
        for k, at in enumerate(range(max(edge - 3, 0), min(edge + 3, n))):
            x[at] = special[(edge // CHUNK + k) % special.size]
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def loss(x):
    return fnp.sum(fnp.sin(x) * x + x**2)


def _members(x, y, z):
    """Loop calls of each kind: on an input, on arithmetic (a buffer), on
    another call's result, with a literal and a scalar argument (stride 0),
    on two arrays, a result that is also an output, and a selection."""
    s = fnp.sin(x)
    return (s, s * 2.0 + x, fnp.log(fnp.abs(x) + 0.5) * x, fnp.exp(fnp.tanh(x)) - 1.0,
            fnp.abs(x) ** 1.3, fnp.abs(x) ** y + z, fnp.arctan2(x, z) * y,
            fnp.where(x > 0, fnp.expm1(x), fnp.cos(z)))


def _lowered(f, *args):
    """``f``'s program under the exact native lowering, compiled as ``jit``
    compiles it, and the kernels' sources."""
    lowering = native.lower(run_passes(ft.make_jaxpr(f)(*args)), exact=True)
    return Compiled(lowering.jaxpr, "exact", own_outputs=True), lowering.sources


def _same(compiled, f, *args, equal=bytes_equal):
    with np.errstate(all="ignore"):
        want = ft.tree_util.tree_leaves(ft.jit(f, compiler="numpy")(*args))
        got = compiled(*args)
    assert len(want) == len(got)
    for a, b in zip(want, got):
        assert equal(a, b), (a, b)


@pytest.fixture(params=[False, True], ids=["one thread", "three threads"])
def threads(request, monkeypatch):
    """Kernels of 64 elements or more split across three threads (whatever
    the machine's cores), or none.  Either way automatic tiering counts the
    functions' time saved (as on three cores), so that programs of a few
    chunks move."""
    if request.param:
        monkeypatch.setattr(elementwise, "SPLIT_ELEMENTS", 64)
    monkeypatch.setattr(tiering, "SPLIT_ELEMENTS", 64)
    saved = config.native_threads
    config.update("native_threads", 3)
    yield request.param
    config.update("native_threads", saved)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_gradient_of_sin_loss_is_one_kernel_with_numpy_s_bytes(threads, dtype):
    grad = ft.grad(loss)
    for n in LENGTHS:
        x = _values(n, dtype, seed=n)
        compiled, sources = _lowered(grad, x)
        (source,) = sources  # sin, cos and the arithmetic: one kernel
        assert source.count("call_loop(") == 2 and "np.sin(" not in source
        assert [e.primitive.name for e in compiled.jaxpr.jaxpr.eqns] == ["native_kernel"]
        _same(compiled, grad, x)
        _same(compiled, grad, -x[::-1].copy(), equal=bits_equal)  # (NaN's sign: docs/jit.md)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_kind_of_loop_operand_gives_numpy_s_bytes(threads, dtype):
    for n in LENGTHS:
        x, z = _values(n, dtype, seed=n), _values(n, dtype, seed=n + 1)[::-1].copy()
        y = np.asarray(0.75, dtype)
        compiled, sources = _lowered(_members, x, y, z)
        assert sources and all("call_loop(" in s for s in sources)
        assert not any(e.primitive.name == "sin" for e in compiled.jaxpr.jaxpr.eqns)
        _same(compiled, _members, x, y, z, equal=bits_equal)
        _same(compiled, _members, z, np.asarray(-0.0, dtype), x, equal=bits_equal)


@given(n=st.integers(0, 3 * CHUNK + 5), offset=st.integers(0, 3), seed=st.integers(0, 99),
       dtype=st.sampled_from(["float64", "float32"]),
       specials=st.lists(st.tuples(st.integers(0, 3 * CHUNK + 4), st.sampled_from(SPECIAL)),
                         max_size=8))
def test_any_length_offset_and_special_values_give_numpy_s_bytes(n, offset, seed, dtype,
                                                                  specials):
    base = _values(n + offset, dtype, seed=seed)
    with np.errstate(over="ignore"):
        for at, value in specials:
            if at < base.size:
                base[at] = value
    x = base[offset:]  # offset by that many elements from the allocation
    y = np.asarray(-1.25, dtype)
    compiled, _ = _lowered(_members, x, y, x[::-1].copy())
    _same(compiled, _members, x, y, x[::-1].copy(), equal=bits_equal)


def test_misaligned_strided_and_broadcast_inputs_give_numpy_s_bytes(threads):
    def f(x, w):
        return fnp.sin(x) * w + fnp.exp(w * 0.5)

    shape = (CHUNK + 3, 5)
    base = _values(2 * shape[0] * shape[1] + 1, "float64", seed=3)
    x = base[1:1 + shape[0] * shape[1]].reshape(shape)  # not aligned to 16 bytes
    w = base[-shape[0] * shape[1]:][::-1].reshape(shape)  # reversed: not C-contiguous
    compiled, sources = _lowered(f, x, w)
    assert len(sources) == 1
    assert x.ctypes.data % 16 and not w.flags.c_contiguous
    _same(compiled, f, x, w)
    _same(compiled, f, np.asfortranarray(x), w)  # read by NumPy's loop: the NumPy tier's calls
    _same(compiled, f, x, np.broadcast_to(w[:1], shape))
    _same(compiled, f, np.broadcast_to(x[:, :1], shape), x[:, ::-1])


def test_a_constant_exponent_array_stays_an_array_for_numpy_s_loop():
    # NumPy's power loop computes a scalar exponent of 0.5 as sqrt (-0.0 at
    # -0.0, NaN at -inf) and an array of them as pow (+0.0, +inf).
    def f(x):
        return fnp.sin(x) + x ** fnp.full(x.shape, 0.5)

    x = np.array([-0.0, -np.inf, 4.0, np.nan, 2.0, 1e-310] * 20)
    compiled, sources = _lowered(f, x)
    (source,) = sources
    assert source.count("call_loop(") == 2
    _same(compiled, f, x)


def test_a_function_alone_takes_its_literals_and_repeated_operands_from_its_group():
    # Its kernel takes the group's inputs: a literal first operand or one
    # array twice is not an argument of it.
    def f(x):
        return fnp.arctan2(2.0, x), fnp.power(1.5, x), fnp.arctan2(x, x)

    x = _values(300, "float64")
    compiled, sources = _lowered(f, x)
    assert len(sources) == 3 and all("call_loop(" in s for s in sources)
    _same(compiled, f, x)


def test_a_broadcast_operand_keeps_the_function_out_of_the_arithmetic_s_kernel():
    def f(x, w):
        return fnp.sin(x) * w + x

    x, w = _values(3 * CHUNK, "float64").reshape(3, CHUNK), _values(CHUNK, "float64", seed=1)
    compiled, sources = _lowered(f, x, w)
    alone, arithmetic = sources  # sin's own kernel, then the broadcasting group's
    assert alone.count("call_loop(") == 1 and "for i0 in range(m)" not in alone
    assert "call_loop(" not in arithmetic and "np.multiply(" in arithmetic
    _same(compiled, f, x, w)


# -- floating-point errors -----------------------------------------------------------------


def test_the_status_flags_are_found():
    found = fp_status.status()
    assert found is not None
    bits = list(found.bits.values())
    assert len(set(bits)) == 4 and all(b and not b & (b - 1) for b in bits)
    assert all(b & found.every for b in bits)
    with np.errstate(all="ignore", invalid="warn"):
        assert fp_status.reported(found.bits["invalid"], found)
        assert not fp_status.reported(found.bits["under"] | found.bits["over"], found)


@pytest.fixture
def numpy_calls(monkeypatch):
    """The groups computed again by the NumPy tier's calls, by name."""
    made: list[str] = []

    class Counted(Compiled):
        def __call__(self, *args):
            made.append(self.source.split("(")[0])
            return super().__call__(*args)

    monkeypatch.setattr(chunked, "Compiled", Counted)
    return made


def _moved(f, *args):
    """``jit(f)`` once automatic tiering (exact numerics) has moved its
    program for ``args``."""
    saved = config.jit_tier_up, config.jit_tier_numerics, config.jit_compiler
    config.update("jit_tier_up", "eager")
    config.update("jit_tier_numerics", "exact")
    config.update("jit_compiler", "auto")
    try:
        jf = ft.jit(f)
        with np.errstate(all="ignore"):
            jf(*args)
        assert tiering.wait(120.0)
    finally:
        config.update("jit_tier_up", saved[0])
        config.update("jit_tier_numerics", saved[1])
        config.update("jit_compiler", saved[2])
    (info,) = jf.cache_info().tiers
    assert info.tier == "native", info
    return jf


def test_errors_of_numpy_s_loops_warn_and_raise_as_in_the_numpy_tier(threads, numpy_calls):
    def f(x):
        return fnp.sin(x) * 2.0 + x

    x = np.linspace(-2.0, 2.0, 3 * CHUNK + 5)
    jf, numpy_tier = _moved(f, x), ft.jit(f, compiler="numpy")
    assert bytes_equal(jf(x), numpy_tier(x)) and numpy_calls == []
    x[-1] = np.inf  # in the last chunk, which a helper thread may compute
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = jf(x)
    assert bytes_equal(got, numpy_tier(x))
    assert [str(w.message) for w in caught] == ["invalid value encountered in sin"]
    assert caught[0].filename == __file__  # the user's line, as in the NumPy tier
    for _ in range(5):
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="in sin"):
            jf(x)
    calls = len(numpy_calls)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(invalid="ignore"):
            assert bytes_equal(jf(x), got)
        x[-1] = 1e-310  # underflow, which NumPy ignores by default
        assert bytes_equal(jf(x), numpy_tier(x))
    assert len(numpy_calls) == calls  # nothing to report: the kernel's values
    with np.errstate(under="raise"), pytest.raises(FloatingPointError, match="underflow"):
        numpy_tier(x)
    with np.errstate(under="raise"), pytest.raises(FloatingPointError, match="underflow"):
        jf(x)


def test_errors_of_the_arithmetic_around_the_loops_warn_and_raise_as_in_the_numpy_tier(
        threads):
    def f(x):
        return fnp.sin(x) * (x * x) + fnp.where(x > 0.0, fnp.cos(x), x)

    x = np.linspace(-2.0, 2.0, 3 * CHUNK + 5)
    jf, numpy_tier = _moved(f, x), ft.jit(f, compiler="numpy")
    for at, value, messages in [
            (-1, 1e200, ["overflow encountered in multiply"]),
            (CHUNK + 3, np.nan, []),  # (x > 0.0 at NaN: NumPy's comparison does not warn)
            (-1, -np.inf, ["invalid value encountered in sin",
                           "invalid value encountered in cos"])]:
        y = x.copy()
        y[at] = value
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            expected = numpy_tier(y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = jf(y)
        assert bytes_equal(got, expected)
        assert [str(w.message) for w in caught] == [str(w.message) for w in want]
        assert [str(w.message) for w in want] == messages
        assert all(w.filename == __file__ for w in caught)
    y = x.copy()
    y[-1] = 1e200
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="in multiply"):
        jf(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="ignore"):
            assert bytes_equal(jf(y), numpy_tier(y))


# -- the benchmark's program, threads ------------------------------------------------------


def test_the_moved_gradient_keeps_the_numpy_tier_s_bytes_in_two_threads(threads):
    grad = ft.grad(loss)
    n = 4 * CHUNK + 9
    inputs = [_values(n, "float64", seed=k) for k in range(4)]
    inputs[1] = np.linspace(-1e3, 1e3, n)
    jf = _moved(grad, inputs[0])
    (slot,) = jf._order.values()
    assert len(slot.entry.native_sources) == 1
    with np.errstate(all="ignore"):
        expected = [ft.jit(grad, compiler="numpy")(x) for x in inputs]
    failures: list = []

    def run(k):
        with np.errstate(all="ignore"):
            for r in range(20):
                j = (k + r) % len(inputs)
                if not bits_equal(jf(inputs[j]), expected[j]):
                    failures.append((k, r))

    workers = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures == []


# -- the helper threads --------------------------------------------------------------------


def test_a_chunk_s_exception_is_raised_once_after_every_helper_has_stopped(threads):
    running: list = []
    ran: list = []

    def kernel(start, stop):
        running.append(start)
        try:
            if start == 0:
                raise ZeroDivisionError("in the first chunk")
            time.sleep(0.02)
            ran.append(start)
        finally:
            running.remove(start)
        return 0

    with pytest.raises(ZeroDivisionError, match="in the first chunk"):
        elementwise._run_split(kernel, 40 * CHUNK, 3, (), align=CHUNK)
    assert running == []  # nothing writes an output after the call
    assert len(ran) < 11  # the chunks not taken when it raised are left


def test_a_larger_thread_count_gets_as_many_helpers():
    met = threading.Barrier(4, timeout=20)  # four chunks at once: three helpers

    def kernel(start, stop):
        if start < 4:
            met.wait()
        return threading.get_ident()

    elementwise._run_split(lambda a, b: 0, 8, 2, ())  # a pool of one helper first
    idents = elementwise._run_split(kernel, 16, 4, ())
    assert len(set(idents)) >= 4


def test_a_pool_locked_at_fork_serves_the_child(threads):
    grad = ft.grad(loss)
    x = _values(4 * CHUNK + 5, "float64", seed=3)
    compiled, _ = _lowered(grad, x)
    with np.errstate(all="ignore"):
        want = compiled(x)[0]
    held, forked = threading.Event(), threading.Event()

    def hold() -> None:  # another thread of the parent holds the pool's lock at the fork
        with elementwise._pool.lock:
            held.set()
            forked.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(60)
    pid = os.fork()
    if pid:
        forked.set()
        holder.join()
    if pid == 0:  # the child: one call through the pool, then out
        try:
            with np.errstate(all="ignore"):
                os._exit(0 if bytes_equal(compiled(x)[0], want) else 3)
        finally:
            os._exit(4)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung on the parent's pool")
    assert os.waitstatus_to_exitcode(done[1]) == 0
