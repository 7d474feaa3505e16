"""Generated NumPy code writes ``add(pad(x1), pad(x2))`` with zero padding
(the transpose of two slices of one array, summed) into one buffer instead of
two zero-filled arrays and an add.  The values must be the three equations'
bit for bit: -0.0 where only one operand lies turns +0.0 as ``x + 0`` does,
NaN and inf pass through, the add's operand order is kept, and pads the
rewrite does not cover (negative edges, interior padding, a padding value
that is not +0, a pad used twice) run as before."""

from __future__ import annotations

import re

import numpy as np
import pytest
from functrans.primitives import shape as shape_prims
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.core import bind

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def pad(x, value, config):
    return bind(shape_prims.pad_p, x, value, padding_config=tuple(config))


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def jit_and_eager(f, *args):
    """``f``'s results jitted and eager, and the jitted program's source."""
    jitted = ft.jit(f)
    return jitted(*args), f(*args), jitted.lower(*args).source


SPECIALS = np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, 1.5, -2.25, -0.0])


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_hvp_writes_one_buffer_and_matches_eager():
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(50), rng.standard_normal(50)
    v[[0, 7, 49]] = -0.0

    def hvp(x, v):
        return ft.jvp(ft.grad(rosenbrock), (x,), (v,))[1]

    got, want, source = jit_and_eager(hvp, x, v)
    assert same_bits(got, want)
    assert "_pad_buffer(" in source and "_pad_add(" in source


@pytest.mark.parametrize("left_first", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int32, np.int64])
def test_two_pads_summed(left_first, dtype):
    inexact = np.issubdtype(dtype, np.inexact)
    a = SPECIALS.astype(dtype) if inexact else np.arange(-4, 4, dtype=dtype)
    if dtype is np.complex128:
        a.imag = SPECIALS[::-1]
    b = a[::-1].copy()
    zero = np.zeros((), dtype)

    def f(a, b):
        p = pad(a, zero, [(0, 3, 0)])
        q = pad(b, zero, [(3, 0, 0)])
        return p + q if left_first else q + p

    a0, b0 = a.copy(), b.copy()
    got, want, source = jit_and_eager(f, a, b)
    assert same_bits(got, want)
    assert "_pad_buffer(" in source
    assert same_bits(a, a0) and same_bits(b, b0)  # the caller's arrays are only read


def test_later_pad_on_the_left_keeps_operand_order():
    # The second pad in program order is the add's left operand.  Where both
    # are NaN, the sum is the left one's NaN (its payload): the order shows.
    a = np.array([0x7FF8000000000001] * 8, np.uint64).view(np.float64)
    b = np.array([0x7FF8000000000002] * 8, np.uint64).view(np.float64)

    def f(a, b):
        q = pad(b, 0.0, [(2, 0, 0)])
        p = pad(a, 0.0, [(0, 2, 0)])
        return p + q

    got, want, source = jit_and_eager(f, a, b)
    assert same_bits(got, want)
    assert "_pad_add(v" in source  # the later pad's operand first


def test_negative_zero_only_in_one_box_becomes_positive():
    a = np.full(4, -0.0)
    b = np.full(4, -0.0)

    def f(a, b):
        return pad(a, 0.0, [(0, 6, 0)]) + pad(b, 0.0, [(6, 0, 0)])

    got, want, _ = jit_and_eager(f, a, b)
    assert same_bits(got, want)
    assert not np.signbit(got).any()  # -0.0 + 0.0 and 0.0 + 0.0 are +0.0


def test_two_dimensional_boxes():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    a[0, :] = -0.0
    b[:, 1] = np.nan

    def f(a, b):
        return pad(a, 0.0, [(1, 2, 0), (0, 1, 0)]) + pad(b, 0.0, [(0, 2, 0), (2, 1, 0)])

    got, want, source = jit_and_eager(f, a, b)
    assert same_bits(got, want)
    assert "_pad_buffer(" in source


@pytest.mark.parametrize("config, value", [
    ([(-1, 2, 0)], 0.0),    # cropping
    ([(1, -2, 0)], 0.0),
    ([(1, 0, 1)], 0.0),     # interior padding
    ([(1, 2, 0)], 1.0),     # not zero
    ([(1, 2, 0)], -0.0),    # -0.0 is not what a zeroed buffer holds
    ([(1, 2, 0)], np.nan),
    ([(1, 2, 0)], np.inf),
])
def test_pads_left_as_they_are(config, value):
    a, b = SPECIALS.copy(), SPECIALS[::-1].copy()

    def f(a, b):
        return pad(a, value, config) + pad(b, value, config)

    got, want, source = jit_and_eager(f, a, b)
    assert same_bits(got, want)
    assert "_pad_buffer(" not in source


def test_pad_used_twice_is_left_as_it_is():
    a, b = SPECIALS.copy(), SPECIALS.copy()

    def f(a, b):
        p = pad(a, 0.0, [(0, 1, 0)])
        return p + pad(b, 0.0, [(1, 0, 0)]), p * 2.0

    (got, got2), (want, want2), source = jit_and_eager(f, a, b)
    assert same_bits(got, want) and same_bits(got2, want2)
    assert "_pad_buffer(" not in source


def test_result_is_not_reused_between_calls():
    # Large enough for the scratch pool: a returned result survives the next call.
    jitted = ft.jit(lambda a, b: pad(a, 0.0, [(0, 1, 0)]) + pad(b, 0.0, [(1, 0, 0)]))
    a = np.ones(40_000)
    first = jitted(a, a)
    keep = first.copy()
    second = jitted(2 * a, a)
    assert same_bits(first, keep)
    assert second[0] == 2.0 and second[-1] == 1.0 and second[1] == 3.0


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_boxes_match_eager(data):
    ndim = data.draw(st.integers(1, 2))
    edges = st.tuples(st.integers(0, 3), st.integers(0, 3))
    shape = tuple(data.draw(st.integers(0, 3)) for _ in range(ndim))
    pa = [data.draw(edges) for _ in range(ndim)]
    out = [lo + d + hi for (lo, hi), d in zip(pa, shape)]
    pb, shape_b = [], []
    for size in out:
        lo = data.draw(st.integers(0, size))
        hi = data.draw(st.integers(0, size - lo))
        pb.append((lo, hi))
        shape_b.append(size - lo - hi)
    values = st.sampled_from(list(SPECIALS))
    a = np.array(data.draw(st.lists(values, min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape)))), dtype=np.float64).reshape(shape)
    b = np.array(data.draw(st.lists(values, min_size=int(np.prod(shape_b)),
                                    max_size=int(np.prod(shape_b)))),
                 dtype=np.float64).reshape(shape_b)

    def f(a, b):
        return (pad(a, 0.0, [(lo, hi, 0) for lo, hi in pa])
                + pad(b, 0.0, [(lo, hi, 0) for lo, hi in pb]))

    got, want, _ = jit_and_eager(f, a, b)
    assert same_bits(got, want)


# -- constants of one repeated value ------------------------------------------------

def constant_names(source):
    """The generated names of array constants (``c``) in ``source``."""
    return set(re.findall(r"\bc[0-9]+\b", source))


@pytest.mark.parametrize("value", [100.0, -0.0, 0.0, np.inf, np.nan])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
def test_uniform_constant_is_a_scalar(value, dtype):
    if not np.issubdtype(dtype, np.inexact) and not np.isfinite(value):
        return
    c = np.full(6, value, dtype)
    x = SPECIALS.astype(dtype) if np.issubdtype(dtype, np.inexact) else np.arange(6, dtype=dtype)
    x = x[:6].copy()

    def f(x):
        return x * c - c, fnp.maximum(c, x)

    (got, got2), (want, want2), source = jit_and_eager(f, x)
    assert same_bits(got, want) and same_bits(got2, want2)
    assert not constant_names(source)


def test_hvp_cotangent_constant_is_a_scalar():
    x, v = np.linspace(-1, 1, 30), np.linspace(1, 2, 30)
    got, want, source = jit_and_eager(lambda x, v: ft.hvp(rosenbrock, (x,), (v,)), x, v)
    assert same_bits(got, want)
    assert not constant_names(source)


@pytest.mark.parametrize("make, use", [
    (lambda: np.array([0.0, -0.0, 0.0]), lambda x, c: x * c),         # signs differ
    (lambda: np.array([np.nan, -np.nan, np.nan]), lambda x, c: x + c),  # so do NaNs' bits
    (lambda: np.full(3, 2.0), lambda x, c: x @ c),                    # not elementwise
    (lambda: np.full(3, 2.0), lambda x, c: (x * c, c)),               # returned
    (lambda: np.full(3, 2.0), lambda x, c: fnp.ones((2, 3)) * c + x),  # broadcast by the other
    (lambda: np.full(3, 2.0, np.float32), lambda x, c: x * c),        # promoted
    (lambda: np.full(3, 2.0), lambda x, c: x ** c),                   # not one IEEE operation
])
def test_constants_left_as_arrays(make, use):
    c = make()
    x = np.array([-0.0, 1.5, np.inf])
    got, want, source = jit_and_eager(lambda x: use(x, c), x)
    for g, w in zip(got if isinstance(got, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        assert same_bits(g, w)
    assert constant_names(source)
