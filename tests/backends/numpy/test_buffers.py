"""Generated NumPy code writes ufunc results into arrays it has finished with
(a dying operand, or the per-thread scratch pool for large arrays).  That
must never change a result: random programs mixing ufuncs with views
(transposes, reshapes, reversed slices) on arrays large enough to be pooled
give NumPy's values, results returned by one call survive the next calls,
and threads do not share scratch arrays."""

from __future__ import annotations

import re
import threading

import numpy as np
from _bits import bytes_equal as _same
from _programs import dataflow, run_dataflow
from hypothesis import given, settings

import functrans as ft
import functrans.numpy as fnp
from functrans.backends.numpy import scratch

N = 192  # N * N float64 = 288 KiB: above the pool's threshold
# Values stay bounded (|v| <= 2 ** steps) without squashing every step: the
# views (transposes, reversals, reshapes) must stay alive while the arrays
# they view are overwritten, if anything is.
UNARY = [np.sin, np.tanh, np.negative, lambda a: a.T, lambda a: a[::-1],
         lambda a: a.reshape(-1).reshape(N, N), lambda a: a * 0.5,
         lambda a: np.mean(a, axis=0) + a]
BINARY = [np.add, np.subtract, lambda a, b: np.tanh(a) * b, np.maximum,
          lambda a, b: a.T - b]


def programs():
    return dataflow(len(UNARY), len(BINARY), 2, 14)


def run_program(program, x, y):
    return run_dataflow(program, UNARY, BINARY, [x, y])


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, N)), rng.standard_normal((N, N))


@settings(max_examples=60)
@given(programs())
def test_jitted_programs_match_numpy_and_keep_earlier_results(program):
    f = ft.jit(lambda a, b: run_program(program, a, b))
    x, y = _inputs(0)
    first = f(x, y)
    kept = [np.array(r, copy=True) for r in first]
    for got, want in zip(first, run_program(program, x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for seed in (1, 2):  # later calls reuse the pool: earlier results stay as they were
        later = f(*_inputs(seed))
        for got, want in zip(later, run_program(program, *_inputs(seed))):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for r, k in zip(first, kept):
        np.testing.assert_array_equal(r, k)
    x2, y2 = _inputs(0)
    np.testing.assert_array_equal(x, x2)  # inputs are never written
    np.testing.assert_array_equal(y, y2)


def test_large_chains_write_into_dying_and_pooled_arrays():
    def chain(a, b):
        return fnp.tanh(fnp.sin(a) * b + a) - b

    x, y = _inputs(0)
    source = ft.jit(chain).lower(x, y).source
    # A ufunc's output is its last operand.
    assert ", _take" in source  # a fresh result of a pooled size
    assert re.search(r"= f\d+\((v\d+), \1\)", source)  # tanh written into its dying operand
    small = ft.jit(chain).lower(np.ones(4), np.ones(4)).source
    assert "_take" not in small


def test_threads_do_not_share_scratch_arrays():
    f = ft.jit(lambda a, b: fnp.tanh(fnp.sin(a) * b + a) - b * fnp.cos(a))
    inputs = [_inputs(seed) for seed in range(4)]
    want = [np.tanh(np.sin(a) * b + a) - b * np.cos(a) for a, b in inputs]
    errors = []

    def worker(k):
        for _ in range(20):
            got = f(*inputs[k])
            if not np.allclose(got, want[k], rtol=1e-12, atol=1e-12):
                errors.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_the_pool_is_bounded():
    scratch.clear()
    for _ in range(10):
        scratch.give(np.empty((N, N)))
    assert len(scratch.free[((N, N), np.dtype(np.float64))]) == scratch.PER_TYPE
    assert scratch.nbytes <= scratch.MAX_BYTES
    assert scratch.take(((N, N), np.dtype(np.float64))).shape == (N, N)
    scratch.clear()
    assert scratch.take(((N, N), np.dtype(np.float64))) is None


def test_generalised_ufuncs_never_write_into_their_operands():
    a, b = _inputs(0)
    a, b = a.reshape(3, 64, 192)[:, :, :64], b.reshape(3, 64, 192)[:, :, :64]
    f = ft.jit(lambda a, b: (a * 2.0) @ b)  # matmul is a ufunc with a signature
    # a * 2.0 dies at the matmul, same type: two operands, no output.
    assert re.search(r"= f\d+\(v2, v1\)\n", f.lower(a, b).source)
    np.testing.assert_allclose(f(a, b), (a * 2.0) @ b, rtol=1e-12)


# -- buffer reuse and memory layouts ---------------------------------------------------


def test_numpy_tier_sum_after_buffer_reuse_of_mixed_layouts():
    """x * 3 - x + y was written into x * 3's dead buffer (out=), which kept
    x's F order where NumPy allocates C order for an F and a C operand, so
    the float sum after it added in another order than the traced program."""
    f_ordered = np.asfortranarray(np.array([[1e16, 1.0], [-1e16, 1.0]]))
    zeros = np.zeros((2, 2))

    def f(x, y):
        return fnp.sum(x * 3.0 - x + y)

    assert f(f_ordered, zeros) == 2.0  # C order: (1e16 + 1) - 1e16 + 1
    assert _same(ft.jit(f)(f_ordered, zeros), f(f_ordered, zeros))


def test_eager_grad_bits_across_calls_with_mixed_layouts():
    """As above: from its third call eager grad runs compiled code, whose
    buffer reuse kept an F order NumPy would not give, so its float sums, and
    the gradient, changed between the second and the third call."""
    f_ordered = np.asfortranarray(np.array([[1e16, 1.0], [-1e16, 1.0]]))
    zeros = np.zeros((2, 2))

    def f(x, y):
        h = x * 3.0 - x + y
        for _ in range(12):
            h = h * 1.0 + y * 0.0
        return fnp.sum(h) * fnp.sum(y * x)

    runs = [ft.value_and_grad(f, argnums=(0, 1))(f_ordered, zeros)[1][1] for _ in range(4)]
    assert all(_same(runs[0], r) for r in runs[1:])


def test_buffer_reuse_kept_where_layouts_agree():
    """The layout checks leave the reuse itself in place: the generated code
    still writes ``sin(x) * x`` into ``sin(x)``'s buffer, and a large result
    (at a size where the check pays) into a pooled one."""
    from functrans.backends import numpy as host

    def f(x):
        return fnp.sum(fnp.cos(fnp.sin(x) * x) * x)

    source = ft.jit(f).lower(np.ones(4096)).source
    assert ", _reuse(" in source
    big = np.linspace(0, 1, 1 << 15)
    c_ordered, f_ordered = big.reshape(128, 256), np.asfortranarray(big.reshape(128, 256))
    g = ft.jit(lambda x: fnp.sin(x) * 2.0 + x)
    for x in (c_ordered, f_ordered, c_ordered, f_ordered):
        got = g(x)
        want = np.sin(x) * 2.0 + x
        assert _same(got, want) and got.strides == want.strides
    assert all(a.flags.c_contiguous for arrays in host.scratch.free.values() for a in arrays)


def test_small_results_skip_the_checked_reuse():
    """A dying operand whose layout is checked when the code runs takes a
    ufunc's result only where the result is large enough for the check to
    pay (``CHECKED_REUSE_MIN_BYTES``); the values are NumPy's either way."""
    from functrans.backends.numpy.buffers import CHECKED_REUSE_MIN_BYTES

    def f(x):
        return fnp.cos(fnp.sin(x) * x) * x

    f_jit = ft.jit(f)
    for n, checked in ((10, False), (CHECKED_REUSE_MIN_BYTES // 8, True)):
        x = np.linspace(-3.0, 3.0, n)
        assert ("_reuse(" in f_jit.lower(x).source) == checked, n
        np.testing.assert_array_equal(f_jit(x), np.cos(np.sin(x) * x) * x)


def test_float_literals_pass_as_arrays_of_the_operands_type():
    """``2 * x`` calls the ufunc with a 0-d array of x's dtype (a third
    cheaper than NumPy promoting a Python number): the same bits as NumPy's
    conversion of the Python number, for every float and complex type, and
    a literal out of the type's range is left to NumPy."""
    from _bits import bits_equal

    def same(a, b):  # complex as its float parts, so that NaN matches NaN
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind == "c" and a.dtype == b.dtype:
            return bits_equal(a.real, b.real) and bits_equal(a.imag, b.imag)
        return bits_equal(a, b)

    specials = [1.5, -0.0, 0.0, np.nan, np.inf, -np.inf, 1e-300, 3e38]
    programs = [(lambda a: 2 * a, None), (lambda a: a * 0.1, None), (lambda a: a - 1e-8, None),
                (lambda a: 3.0 / a, None), (lambda a: a + 1e300, None),
                (lambda a: fnp.maximum(a.real, 0.7), lambda a: np.maximum(a.real, 0.7)),
                # 0.0 == -0.0, but not as a complex operand's addend: two literals
                (lambda a: (a + 0.0, a + -0.0, a - 0.0, a - -0.0), None)]
    for dtype in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        with np.errstate(over="ignore", under="ignore"):
            x = np.array(specials, dtype=dtype)
        for fn, numpy_fn in programs:
            with np.errstate(all="ignore"):
                want, got = (numpy_fn or fn)(x), ft.jit(fn)(x)
            for g, w in zip(*((got, want) if isinstance(got, tuple) else ((got,), (want,)))):
                assert same(g, w), (dtype, g, w)
    source = ft.jit(lambda a: a * 0.1).lower(np.ones(3, np.float32)).source
    assert "0.1" not in source
