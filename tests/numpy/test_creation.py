"""functrans.numpy array creation against NumPy: concrete results with NumPy's
dtypes, concrete ``*_like`` results from tracers, and traced results where a
traced value flows in (lists of tracers, traced fill values and end points)."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans
import functrans.numpy as fnp
from functrans.backends.numpy import eval_jaxpr
from functrans.core import Tracer, check_jaxpr
from functrans.errors import ConcretizationError
from functrans.testing import check_grads

pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")

DTYPES = [None, np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)


def assert_same(actual, expected):
    assert type(actual) is np.ndarray, type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-12, equal_nan=True)


def traced(fn, *args):
    """Trace ``fn``, check its Jaxpr, evaluate it; return (jaxpr, output)."""
    jaxpr = functrans.make_jaxpr(fn)(*args)
    check_jaxpr(jaxpr)
    (out,) = eval_jaxpr(jaxpr, *args)
    return jaxpr, np.asarray(out)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@given(shape=SHAPES | st.integers(0, 4), dtype=st.sampled_from(DTYPES))
def test_filled_arrays(name, shape, dtype):
    expected = np.zeros(shape, dtype) if name == "empty" else getattr(np, name)(shape, dtype)
    assert_same(getattr(fnp, name)(shape, dtype), expected)


@given(shape=SHAPES, fill=st.sampled_from([2, 2.5, True, 1 - 1j]),
       dtype=st.sampled_from(DTYPES))
def test_full(shape, fill, dtype):
    assert_same(fnp.full(shape, fill, dtype), np.full(shape, fill, dtype))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@given(x=hnp.arrays(st.sampled_from(DTYPES[1:]), SHAPES), dtype=st.sampled_from(DTYPES))
def test_like_functions(name, x, dtype):
    args = (2.5,) if name == "full_like" else ()
    np_name = "zeros_like" if name == "empty_like" else name
    expected = getattr(np, np_name)(x, *args, dtype=dtype)
    assert_same(getattr(fnp, name)(x, *args, dtype=dtype), expected)
    # A traced template gives a concrete array: nothing is recorded.
    jaxpr, out = traced(lambda a: getattr(fnp, name)(a, *args, dtype=dtype), x)
    assert not jaxpr.eqns
    assert_same(out, expected)


def test_like_of_a_tracer_is_concrete():
    seen = []

    def f(x):
        seen.append(fnp.zeros_like(x, shape=(2, 2)))
        return x

    functrans.make_jaxpr(f)(np.ones(3, np.float32))
    assert type(seen[0]) is np.ndarray and seen[0].dtype == np.float32


@given(shape=SHAPES, dtype=st.sampled_from(DTYPES))
def test_full_with_traced_fill_value(shape, dtype):
    fill = np.float32(1.5)
    jaxpr, out = traced(lambda v: fnp.full(shape, v, dtype), fill)
    assert_same(out, np.full(shape, fill, dtype))


def test_full_like_with_traced_fill_value_casts_to_the_template():
    template = np.zeros((2, 3), np.int32)
    _, out = traced(lambda v: fnp.full_like(template, v), np.float64(2.7))
    assert_same(out, np.full_like(template, 2.7))


def test_array_and_asarray_stack_tracers():
    x = np.array([1.0, 2.0], np.float32)
    _, out = traced(lambda a: fnp.array([[a[0], a[1]], [a[1], 3.0]]), x)
    assert_same(out, np.array([[x[0], x[1]], [x[1], 3.0]]))  # float64, as in NumPy
    _, out = traced(lambda a: fnp.asarray([a, a], dtype=np.float64), x)
    assert_same(out, np.asarray([x, x], dtype=np.float64))
    _, out = traced(lambda a: fnp.array(a, ndmin=3), x)
    assert_same(out, np.array(x, ndmin=3))


@given(obj=st.sampled_from([[1, 2], [[1.5], [2.5]], 3, (True, False), [[1 + 1j]]]),
       dtype=st.sampled_from(DTYPES), ndmin=st.integers(0, 3))
def test_array_of_concrete_values(obj, dtype, ndmin):
    try:
        np.array(obj, dtype)
    except TypeError:  # complex to int: fnp must refuse too
        with pytest.raises(TypeError):
            fnp.array(obj, dtype)
        return
    assert_same(fnp.array(obj, dtype, ndmin=ndmin), np.array(obj, dtype, ndmin=ndmin))
    assert_same(fnp.asarray(obj, dtype), np.asarray(obj, dtype))


def test_array_copies_and_asarray_does_not():
    x = np.ones(3)
    assert fnp.asarray(x) is x
    assert fnp.array(x) is not x and fnp.array(x, copy=False) is x


@given(start=st.integers(-5, 5), stop=st.none() | st.integers(-5, 10),
       step=st.none() | st.sampled_from([1, 2, -1, 0.5]),
       dtype=st.sampled_from([None, np.int32, np.float32, np.float64]))
def test_arange(start, stop, step, dtype):
    if stop is None and step is not None:
        stop = start + 3
    assert_same(fnp.arange(start, stop, step, dtype), np.arange(start, stop, step, dtype))


LINSPACE = dict(num=st.integers(0, 6), endpoint=st.booleans(),
                dtype=st.sampled_from([None, np.int32, np.float32, np.float64]))


@given(start=st.floats(-5, 5), stop=st.floats(-5, 5), **LINSPACE)
def test_linspace_concrete(start, stop, num, endpoint, dtype):
    assert_same(fnp.linspace(start, stop, num, endpoint, dtype=dtype),
                np.linspace(start, stop, num, endpoint, dtype=dtype))


@given(start=hnp.arrays(np.float64, st.sampled_from([(), (2,), (3, 2)]),
                        elements=st.floats(-5, 5)),
       stop=st.floats(-5, 5), axis=st.integers(-1, 0), **LINSPACE)
def test_linspace_traced_end_points(start, stop, num, endpoint, dtype, axis):
    axis = axis if start.ndim else 0
    expected = np.linspace(start, stop, num, endpoint, dtype=dtype, axis=axis)
    _, out = traced(lambda a: fnp.linspace(a, stop, num, endpoint, dtype=dtype, axis=axis),
                    start)
    assert_same(out, expected)


def test_linspace_traced_float32_and_retstep():
    start, stop = np.float32(0.0), np.float32(2.0)
    _, out = traced(lambda a, b: fnp.linspace(a, b, 5), start, stop)
    assert_same(out, np.linspace(start, stop, 5))
    jaxpr = functrans.make_jaxpr(lambda b: fnp.linspace(0.0, b, 5, retstep=True))(stop)
    y, step = eval_jaxpr(jaxpr, stop)
    assert_same(np.asarray(step), np.asarray(np.linspace(0.0, stop, 5, retstep=True)[1]))


@given(n=st.integers(0, 4), m=st.none() | st.integers(0, 4), k=st.integers(-2, 2),
       dtype=st.sampled_from([float, np.int32, np.bool_]))
def test_eye_and_identity(n, m, k, dtype):
    assert_same(fnp.eye(n, m, k, dtype), np.eye(n, m, k, dtype))
    assert_same(fnp.identity(n, dtype), np.identity(n, dtype))


def test_traced_sizes_need_concrete_values():
    with pytest.raises(ConcretizationError):
        functrans.make_jaxpr(lambda n: fnp.zeros(n))(3)
    with pytest.raises(ConcretizationError):
        functrans.make_jaxpr(lambda n: fnp.arange(n))(3)
    with pytest.raises(ConcretizationError):
        functrans.make_jaxpr(lambda n: fnp.eye(n))(3)


def test_creation_results_are_never_tracers():
    def f(x):
        for made in (fnp.zeros(2), fnp.ones_like(x), fnp.eye(2), fnp.arange(3)):
            assert not isinstance(made, Tracer)
        return x

    functrans.make_jaxpr(f)(np.ones(2))


LOG_SPACES = [
    ("logspace", (0.0, 3.0), {"num": 4}),
    ("logspace", (0.0, 3.0), {"num": 4, "base": 2.0}),
    ("logspace", (np.float32(0), np.float32(2)), {"num": 5}),
    ("logspace", (np.float32(0), np.float32(2)), {"num": 5, "base": np.float64(3)}),
    ("logspace", (np.array([0.0, 1.0]), np.array([2.0, 4.0])), {"num": 3, "axis": 1}),
    ("logspace", (np.array([0.0, 1.0]), np.array([2.0, 4.0])),
     {"num": 3, "axis": 1, "base": np.array([2.0, 3.0])}),
    ("logspace", (0.0, 1.0), {"num": 4, "endpoint": False, "dtype": np.float32}),
    ("geomspace", (1.0, 1000.0), {"num": 4}),
    ("geomspace", (-1.0, -1000.0), {"num": 4}),
    ("geomspace", (np.float32(2), np.float32(50)), {"num": 7}),
    ("geomspace", (np.array([1.0, 2.0]), np.array([100.0, 3.0])), {"num": 3, "axis": 1}),
    ("geomspace", (1.0, 10.0), {"num": 1}),
    ("geomspace", (1.0, 10.0), {"num": 0}),
    ("geomspace", (3.0, 7.0), {"num": 5, "endpoint": False}),
    ("geomspace", (1, 256), {"num": 9, "dtype": int}),
]


@pytest.mark.parametrize("name, args, kw", LOG_SPACES)
def test_log_spaced_values_are_numpys(name, args, kw):
    """Concrete end points are NumPy's call; traced ones follow NumPy's
    recipe (a scalar base stays weak, geomspace computes in at least float64
    and writes its ends exactly), bit for bit."""
    want = getattr(np, name)(*args, **kw)
    for got in (getattr(fnp, name)(*args, **kw),
                functrans.jit(lambda *a: getattr(fnp, name)(*a, **kw))(*args)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_log_spaces_are_differentiable_in_their_end_points():
    f = lambda s: fnp.sum(fnp.logspace(s, 2.0, 5)) + fnp.sum(fnp.geomspace(s + 1.0, 20.0, 4))  # noqa: E731
    check_grads(f, (0.5,), order=2)


def test_tri_is_numpys():
    for args in [(3,), (3, 4, 1), (2, 5, -1)]:
        np.testing.assert_array_equal(fnp.tri(*args), np.tri(*args))
    assert fnp.tri(2, dtype=int).dtype == np.tri(2, dtype=int).dtype
