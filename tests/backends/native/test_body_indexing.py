"""Indexing, broadcasts and shape changes in loop bodies in jit's native
tier: the loop stays one kernel, its results are the NumPy tier's byte for
byte, and an index the NumPy tier refuses gives its error."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _bits import bytes_equal
from functrans.primitives.indexing import dynamic_slice_p
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.backends import native
from functrans.core import bind

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")

LOOPS = ("while True:", "for step in range(length)")


def _window(x, starts, sizes):
    return bind(dynamic_slice_p, x, *starts, slice_sizes=sizes)


def _check(f, *args):
    """``f`` jitted by both tiers gives the same bytes, and the native
    tier runs its loop as a kernel."""
    want = ft.jit(f, compiler="numpy")(*args)
    jf = ft.jit(f, compiler="native")
    got = jf(*args)
    sources = jf.lower(*args).native_sources
    assert any(loop in s for s in sources for loop in LOOPS), sources
    for a, b in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
        assert type(b) is np.ndarray and bytes_equal(a, b), (a, b)
    return sources


def _moves(xs, h, n):
    """A body holding every data-movement form: rows by the counter (from
    the front, from the end by a negative index, static), static slices
    with steps, a clamped window, broadcasts and shape changes."""
    def body(i, c):
        h, acc = c
        row = xs[i] + xs[i - n] * 2 + xs[1]  # xs[i - n]: a negative index, xs[i] again
        win = _window(xs, (i + 3, fnp.asarray(1)), (2, 3))  # clamped near the end
        col = fnp.expand_dims(xs[:, 0][::2], 1)  # a slice with a step, an axis added
        sq = fnp.squeeze(col[:2] * win[:, :1], 1)  # (2,)
        flat = fnp.reshape(win, (6,))
        acc = acc + fnp.broadcast_to((fnp.sum(flat) + sq[fnp.minimum(i, 1)]).astype(acc.dtype),
                                     acc.shape)
        h = h[::-1] * 3 + row[1:4] + flat[::2] + fnp.sum(fnp.reshape(sq[0], (1,))).astype(h.dtype)
        return h, acc

    return lax.fori_loop(0, n, body, (h, xs[:2, :2] * 0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_data_movement_in_a_body_is_the_numpy_tier_s_bytes(dtype):
    n = 5
    xs = (np.arange(n * 4).reshape(n, 4) - 7).astype(dtype)
    if dtype != "int32":
        xs[2, 1], xs[3, 2], xs[4, 3] = np.nan, -np.inf, -0.0
    h = np.array([1, -2, 3], dtype)
    sources = _check(lambda xs, h: _moves(xs, h, n), xs, h)
    assert not any("np.empty((5, 4" in s for s in sources)  # rows are views, not copies


def test_counter_at_the_first_and_last_row_and_empty_windows():
    xs = np.arange(12.0).reshape(4, 3)

    def f(xs, lo, hi):
        def body(i, c):
            first, last, empty = c
            return (first + xs[lo], last + xs[hi - 1] + xs[-1],
                    empty + fnp.reshape(_window(xs, (i, fnp.asarray(0)), (0, 3)), (0,)).sum())
        return lax.fori_loop(lo, hi, body, (xs[0] * 0, xs[0] * 0, 0.0))

    _check(f, xs, 0, 4)
    _check(f, xs, 3, 4)


def _walk(xs, start):
    def step(c):
        i, h = c
        return i + 1, h * 0.5 + xs[i]

    return lax.while_loop(lambda c: c[0] < start + 6, step, (start, xs[0] * 0))


@settings(max_examples=25)
@given(start=st.integers(-14, 10))
def test_an_index_the_numpy_tier_refuses_gives_its_error(start):
    """Rows from ``start`` to ``start + 5`` of 8: in range, NumPy's bytes;
    past either end, the NumPy tier's IndexError, never other rows."""
    xs = np.linspace(-1.0, 1.0, 24).reshape(8, 3)
    numpy_tier, native_tier = ft.jit(_walk, compiler="numpy"), ft.jit(_walk, compiler="native")
    try:
        want = numpy_tier(xs, start)
    except IndexError as error:
        with pytest.raises(IndexError, match=re.escape(str(error))):
            native_tier(xs, start)
        return
    got = native_tier(xs, start)
    assert all(bytes_equal(a, b) for a, b in zip(want, got))
    assert any(loop in s for s in native_tier.lower(xs, start).native_sources for loop in LOOPS)


def test_gathers_by_index_arrays_stay_numpy_calls():
    xs = np.arange(12.0).reshape(4, 3)

    def f(xs):
        return lax.fori_loop(0, 3, lambda i, h: h + xs[np.array([0, 2])].sum(0), xs[0])

    sources = ft.jit(f, compiler="native").lower(xs).native_sources
    assert not any(loop in s for s in sources for loop in LOOPS)
    assert bytes_equal(ft.jit(f, compiler="native")(xs), ft.jit(f, compiler="numpy")(xs))
