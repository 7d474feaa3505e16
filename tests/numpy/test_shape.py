"""Tests of functrans/numpy/_shape.py: every function against NumPy, eagerly
and traced (make_jaxpr, check_jaxpr, then the NumPy backend), plus the
errors and the Jaxprs of identity cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import functrans as ft
from functrans.backends.numpy import eval_jaxpr
from functrans.core import check_jaxpr
from functrans.errors import AxisError, ShapeError
from functrans.numpy import _shape as fs
from functrans.testing import check_grads

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


def values_of(dtype, shape):
    elements = st.booleans() if np.dtype(dtype) == np.bool_ else st.integers(-9, 9)
    return hnp.arrays(dtype, shape, elements=elements)


DTYPE_STRATEGY = st.sampled_from(DTYPES)


def arrays(shapes=SHAPES):
    return st.tuples(DTYPE_STRATEGY, shapes).flatmap(lambda ds: values_of(*ds))


def assert_same(got, expected):
    if isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
        return
    assert type(got) is np.ndarray, type(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(got, expected)


def check(f, np_f, *args):
    """``f(*args)`` equals ``np_f(*args)`` eagerly and through a checked Jaxpr."""
    expected = np_f(*args)
    assert_same(f(*args), expected)
    jaxpr = ft.make_jaxpr(f)(*args)
    check_jaxpr(jaxpr)
    outs = eval_jaxpr(jaxpr, *args)
    if isinstance(expected, (list, tuple)):
        outs = type(expected)(outs)
    else:
        (outs,) = outs
    assert_same(outs, expected)
    return jaxpr


def n_eqns(f, *args) -> int:
    return len(ft.make_jaxpr(f)(*args).eqns)


# -- reshape, ravel, transposes ---------------------------------------------------------


@st.composite
def reshape_cases(draw):
    x = draw(arrays())
    dims = list(draw(st.permutations(x.shape)))
    while len(dims) > 1 and draw(st.booleans()):  # merge two neighbours
        i = draw(st.integers(0, len(dims) - 2))
        dims[i : i + 2] = [dims[i] * dims[i + 1]]
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    if dims and draw(st.booleans()):
        i = draw(st.integers(0, len(dims) - 1))
        if np.prod(dims[:i] + dims[i + 1 :]) > 0:
            dims[i] = -1
    return x, tuple(dims)


@given(reshape_cases())
def test_reshape(case):
    x, shape = case
    check(lambda x: fs.reshape(x, shape), lambda x: np.reshape(x, shape), x)
    check(fs.ravel, np.ravel, x)


@given(arrays(), st.data())
def test_transpose_moveaxis_swapaxes(x, data):
    check(fs.transpose, np.transpose, x)
    perm = data.draw(st.permutations(range(x.ndim)))
    perm = [p - x.ndim if data.draw(st.booleans()) else p for p in perm]
    check(lambda x: fs.transpose(x, perm), lambda x: np.transpose(x, perm), x)
    if x.ndim:
        axis = st.integers(-x.ndim, x.ndim - 1)
        i, j = data.draw(axis), data.draw(axis)
        check(lambda x: fs.swapaxes(x, i, j), lambda x: np.swapaxes(x, i, j), x)
        k = data.draw(st.integers(0, x.ndim))
        src = data.draw(st.permutations(range(x.ndim)))[:k]
        dst = data.draw(st.permutations(range(-x.ndim, 0)))[:k]
        check(lambda x: fs.moveaxis(x, src, dst), lambda x: np.moveaxis(x, src, dst), x)


# -- squeeze, expand_dims, atleast ---------------------------------------------------------


@given(arrays(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=2)), st.data())
def test_squeeze(x, data):
    check(fs.squeeze, np.squeeze, x)
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axes = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    axes = tuple(a - x.ndim if data.draw(st.booleans()) else a for a in axes)
    axis = axes[0] if len(axes) == 1 and data.draw(st.booleans()) else axes
    check(lambda x: fs.squeeze(x, axis), lambda x: np.squeeze(x, axis), x)


@given(arrays(), st.data())
def test_expand_dims(x, data):
    n = data.draw(st.integers(1, 3))
    nd = x.ndim + n
    axes = data.draw(st.lists(st.integers(0, nd - 1), min_size=n, max_size=n, unique=True))
    axes = tuple(a - nd if data.draw(st.booleans()) else a for a in axes)
    axis = axes[0] if n == 1 else axes
    check(lambda x: fs.expand_dims(x, axis), lambda x: np.expand_dims(x, axis), x)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@given(x=arrays(), y=arrays())
def test_atleast(name, x, y):
    f, np_f = getattr(fs, name), getattr(np, name)
    check(f, np_f, x)
    check(f, np_f, x, y)


# -- broadcasting ------------------------------------------------------------------------------


@given(arrays(), st.data())
def test_broadcast_to(x, data):
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    shape = tuple(lead) + tuple(data.draw(st.sampled_from([1, 3])) if d == 1 else d
                                for d in x.shape)
    check(lambda x: fs.broadcast_to(x, shape), lambda x: np.broadcast_to(x, shape), x)


@given(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=3), st.data())
def test_broadcast_arrays(shapes, data):
    xs = [data.draw(values_of(data.draw(DTYPE_STRATEGY), s)) for s in shapes.input_shapes]
    check(fs.broadcast_arrays, np.broadcast_arrays, *xs)


# -- joining --------------------------------------------------------------------------------------


@st.composite
def join_cases(draw, min_dims=1):
    """Arrays of several dtypes, equal in shape except along one axis."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=0, max_side=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1)) if shape else 0
    xs = []
    for _ in range(draw(st.integers(1, 3))):
        s = list(shape)
        if s:
            s[axis] = draw(st.integers(0, 3))
        xs.append(draw(values_of(draw(DTYPE_STRATEGY), tuple(s))))
    return xs, axis


@given(join_cases())
def test_concatenate(case):
    xs, axis = case
    check(lambda *xs: fs.concatenate(xs, axis), lambda *xs: np.concatenate(xs, axis), *xs)
    check(lambda *xs: fs.concatenate(xs, None), lambda *xs: np.concatenate(xs, None), *xs)


def test_concatenate_dtype_and_casting():
    a, b = np.arange(3, dtype=np.int32), np.ones(2)
    check(lambda a, b: fs.concatenate([a, b], dtype=np.float32),
          lambda a, b: np.concatenate([a, b], dtype=np.float32), a, b)
    with pytest.raises(TypeError, match=r"concatenate: cannot cast float64 to dtype=int32"):
        fs.concatenate([a, b], dtype=np.int32)


@given(st.data())
def test_stack(data):
    shape = data.draw(SHAPES.filter(lambda s: len(s) < 4))
    count = data.draw(st.integers(1, 3))
    xs = [data.draw(values_of(data.draw(DTYPE_STRATEGY), shape)) for _ in range(count)]
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check(lambda *xs: fs.stack(xs, axis), lambda *xs: np.stack(xs, axis), *xs)


def test_stack_is_two_equations():
    x = np.ones((2, 3))
    assert n_eqns(lambda *xs: fs.stack(xs, 0), x, x, x, x) == 2


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
@given(case=join_cases(min_dims=0))
def test_hstack_vstack_dstack_column_stack(name, case):
    xs, _ = case
    f, np_f = getattr(fs, name), getattr(np, name)
    try:
        expected = np_f(xs)
    except ValueError:
        with pytest.raises(ValueError):
            f(xs)
        return
    assert_same(f(xs), expected)
    check(lambda *xs: f(xs), lambda *xs: np_f(xs), *xs)


# -- splitting -------------------------------------------------------------------------------------


@given(arrays(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6)), st.data())
def test_split_and_array_split(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    edges = data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=4))
    check(lambda x: fs.split(x, edges, axis), lambda x: np.split(x, edges, axis), x)
    sections = data.draw(st.integers(1, 4))
    check(lambda x: fs.array_split(x, sections, axis),
          lambda x: np.array_split(x, sections, axis), x)
    if n % sections == 0:
        check(lambda x: fs.split(x, sections, axis), lambda x: np.split(x, sections, axis), x)


def test_hsplit_vsplit():
    x = np.arange(24.0).reshape(4, 6)
    check(lambda x: fs.hsplit(x, 3), lambda x: np.hsplit(x, 3), x)
    check(lambda x: fs.vsplit(x, [1, 3]), lambda x: np.vsplit(x, [1, 3]), x)
    check(lambda x: fs.hsplit(x[0], 2), lambda x: np.hsplit(x[0], 2), x)


# -- tile, repeat, flip -------------------------------------------------------------------------


@given(arrays(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)),
       st.lists(st.integers(0, 3), max_size=4))
def test_tile(x, reps):
    check(lambda x: fs.tile(x, reps), lambda x: np.tile(x, reps), x)


@given(arrays(), st.data())
def test_repeat(x, data):
    r = data.draw(st.integers(0, 3))
    check(lambda x: fs.repeat(x, r), lambda x: np.repeat(x, r), x)
    if x.ndim:
        axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
        check(lambda x: fs.repeat(x, r, axis), lambda x: np.repeat(x, r, axis), x)
        reps = data.draw(hnp.arrays(np.int64, (x.shape[axis],), elements=st.integers(0, 3)))
        check(lambda x: fs.repeat(x, reps, axis), lambda x: np.repeat(x, reps, axis), x)


@given(arrays(), st.data())
def test_flip(x, data):
    check(fs.flip, np.flip, x)
    if x.ndim:
        axes = data.draw(st.lists(st.integers(-x.ndim, x.ndim - 1), min_size=1, max_size=x.ndim)
                         .filter(lambda a: len({i % x.ndim for i in a}) == len(a)))
        axis = axes[0] if len(axes) == 1 else tuple(axes)
        check(lambda x: fs.flip(x, axis), lambda x: np.flip(x, axis), x)
        check(fs.flipud, np.flipud, x)
    if x.ndim >= 2:
        check(fs.fliplr, np.fliplr, x)


# -- identities emit no equations ---------------------------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda x: fs.reshape(x, (2, 3)),
        lambda x: fs.reshape(x, (-1, 3)),
        lambda x: fs.transpose(x, (0, 1)),
        lambda x: fs.moveaxis(x, 0, 0),
        lambda x: fs.swapaxes(x, 1, 1),
        lambda x: fs.squeeze(x),
        lambda x: fs.expand_dims(x, ()),
        lambda x: fs.broadcast_to(x, (2, 3)),
        lambda x: fs.concatenate([x]),
        lambda x: fs.tile(x, (1, 1)),
        lambda x: fs.repeat(x, 1, axis=0),
        lambda x: fs.flip(x[:1], 0),
        lambda x: fs.split(x, 1)[0],
        lambda x: fs.atleast_2d(x),
    ],
)
def test_identities_emit_no_equations(f):
    x = np.ones((2, 3))
    jaxpr = ft.make_jaxpr(f)(x)
    assert [e.primitive.name for e in jaxpr.eqns] in ([], ["slice"]), jaxpr


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f, error, match",
    [
        (lambda x: fs.reshape(x, (4, 2)), ShapeError,
         r"reshape: cannot reshape an array \(2, 3\) of size 6 into shape \(4, 2\)"),
        (lambda x: fs.reshape(x, (-1, 4)), ShapeError, r"cannot reshape .* size 6"),
        (lambda x: fs.reshape(x, (-1, -1)), ShapeError, r"at most one -1"),
        (lambda x: fs.reshape(x, 6, order="K"), ValueError, r"order 'K' is not permitted"),
        (lambda x: fs.transpose(x, (0, 2)), AxisError, r"axis 2 is out of bounds"),
        (lambda x: fs.transpose(x, (0, 0)), AxisError, r"not a permutation"),
        (lambda x: fs.squeeze(x, 1), ShapeError, r"cannot remove axis 1 .* size 3, not 1"),
        (lambda x: fs.squeeze(x, 5), AxisError, r"squeeze: axis 5 is out of bounds"),
        (lambda x: fs.expand_dims(x, -4), AxisError, r"expand_dims: axis -4 is out of bounds"),
        (lambda x: fs.moveaxis(x, [0, 1], [0]), ValueError, r"moveaxis: source .* 2 and 1 axes"),
        (lambda x: fs.broadcast_to(x, (3, 2)), ShapeError, r"cannot broadcast .* \(2, 3\)"),
        (lambda x: fs.concatenate([x, x.T]), ShapeError, r"array 1 has shape \(3, 2\)"),
        (lambda x: fs.concatenate([x], axis=2), AxisError, r"concatenate: axis 2"),
        (lambda x: fs.concatenate([x[0, 0], x[0, 0]]), ShapeError, r"zero-dimensional"),
        (lambda x: fs.stack([x, x[0]]), ShapeError, r"same shape"),
        (lambda x: fs.split(x, 4, axis=1), ValueError, r"equal division"),
        (lambda x: fs.repeat(x, [1, 2], axis=1), ShapeError, r"repeats of shape \(2,\)"),
        (lambda x: fs.repeat(x, -1), ValueError, r"non-negative"),
        (lambda x: fs.flip(x, (0, 0)), AxisError, r"repeated axis"),
    ],
)
def test_errors(f, error, match):
    x = np.ones((2, 3))
    with pytest.raises(error, match=match):
        f(x)
    with pytest.raises(error, match=match):
        ft.make_jaxpr(f)(x)


def test_traced_split_and_repeat_counts_are_refused():
    from functrans.errors import ConcretizationError

    x = np.ones(4)
    with pytest.raises(ConcretizationError, match=r"repeat: repeats must be concrete"):
        ft.make_jaxpr(lambda x, r: fs.repeat(x, r))(x, np.array([1, 1, 1, 1]))
    with pytest.raises(ConcretizationError, match=r"indices_or_sections must be concrete"):
        ft.make_jaxpr(lambda x, i: fs.array_split(x, i))(x, np.array([1, 2]))


_A, _B, _C = np.ones((2, 2)), np.zeros((2, 1)), np.full((1, 3), 5.0)
BLOCKS = [
    lambda m, a, b, c: m.block([[a, b], [c]]),
    lambda m, a, b, c: m.block([a[0], b[:, 0], c[0]]),
    lambda m, a, b, c: m.block([[[a]], [[a]]]),
    lambda m, a, b, c: m.block([[1, 2], [3, 4]]),
    lambda m, a, b, c: m.block([[a, a], [a, a.astype(np.float32)]]),
    lambda m, a, b, c: m.block([np.array([1, 2], np.int8), 3.5]),
    lambda m, a, b, c: m.block([[a[0]]]),
]


@pytest.mark.parametrize("case", range(len(BLOCKS)))
def test_block_is_numpys(case):
    import functrans.numpy as fnp

    f = BLOCKS[case]
    want = f(np, _A, _B, _C)
    for got in (f(fnp, _A, _B, _C), ft.jit(lambda *x: f(fnp, *x))(_A, _B, _C)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_block_errors_and_derivative():
    import functrans.numpy as fnp

    for bad, error, text in [([], ValueError, r"arrays is an empty list"),
                             ([[_A], _A], ValueError, r"nest to different depths \[0, 1\]"),
                             ([(_A, _B)], TypeError, r"arrays\[0\] is a tuple"),
                             ([[_A], []], ValueError, r"arrays\[1\] is an empty list")]:
        with pytest.raises(error):
            np.block(bad)
        with pytest.raises(error, match=text):
            fnp.block(bad)
    g = ft.grad(lambda a: fnp.sum(fnp.block([[a, 2 * a], [a, a]]) ** 2))(_A)
    np.testing.assert_array_equal(g, 2 * _A + 8 * _A + 2 * _A + 2 * _A)


def _complex_of(re, im):
    z = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), np.result_type(re, 1j))
    z.real, z.imag = re, im
    return z


def test_complex_from_parts_keeps_every_parts_bits_and_is_linear():
    # re + 1j * im would give inf's partner a NaN and drop -0.0's sign.
    re = np.array([1.0, np.inf, -0.0, np.nan, 2.5])
    im = np.array([-0.0, np.nan, np.inf, 2.0, -np.inf])
    want = _complex_of(re, im).view(np.uint64)
    for how in (lambda f: f, ft.jit):
        np.testing.assert_array_equal(how(fs.complex_from_parts)(re, im).view(np.uint64), want)
    np.testing.assert_array_equal(ft.vmap(fs.complex_from_parts, (0, None))(re[:, None], im),
                                  _complex_of(re[:, None], im))
    got = fs.complex_from_parts(np.float32(1.5), np.ones(2, np.float32))
    assert got.dtype == np.complex64 and got.shape == (2,)

    def f(a, b):
        return fs.complex_from_parts(a * b, np.sin(b)) * (0.5 - 2j)

    a, b = np.array([0.3, -1.2]), np.array([0.7, 0.4])
    check_grads(lambda a, b: f(a, b).real, (a, b), order=2)
    check_grads(lambda a, b: f(a, b).imag, (a, b), order=2)
