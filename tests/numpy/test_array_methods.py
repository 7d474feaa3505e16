"""Tracers behave like ndarrays: operators (with weak Python scalars), methods,
properties, indexing, ``.at``, and NumPy's ``__array_ufunc__`` /
``__array_function__`` dispatch; each traced result is checked against NumPy
on the same concrete arrays."""

import operator

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans
import functrans.numpy as fnp
from functrans.backends.numpy import eval_jaxpr
from functrans.core import check_jaxpr
from functrans.errors import ConcretizationError

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


def elements(dtype):
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind == "i":
        return st.integers(-9, 9)
    if dtype.kind == "f":
        return st.floats(-10, 10, width=dtype.itemsize * 8)
    return st.complex_numbers(max_magnitude=10)


@st.composite
def arrays(draw, shape, dtypes=DTYPES):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    return draw(hnp.arrays(dtype, shape, elements=elements(dtype)))


def assert_same(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    rtol = 1e-5 if expected.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(actual, expected, rtol=rtol, equal_nan=True)


def check_traced(fn, *args):
    """Trace ``fn`` at ``args``; its checked Jaxpr must agree with ``fn`` run
    by NumPy on the arrays themselves (or both must refuse)."""
    with np.errstate(all="ignore"):
        try:
            expected = fn(*args)
        except (TypeError, ValueError, ZeroDivisionError):
            with pytest.raises((TypeError, ValueError, ZeroDivisionError)):
                eval_jaxpr(functrans.make_jaxpr(fn)(*args), *args)
            return None
        jaxpr = functrans.make_jaxpr(fn)(*args)
        check_jaxpr(jaxpr)
        outs = eval_jaxpr(jaxpr, *args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for got, want in zip(outs, expected, strict=True):
        assert_same(got, want)
    return jaxpr


BINARY_OPERATORS = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
]


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda op: op.__name__)
@given(shapes=PAIRS, data=st.data())
def test_binary_operators_between_tracers_and_arrays(op, shapes, data):
    x = data.draw(arrays(shapes.input_shapes[0]))
    y = data.draw(arrays(shapes.input_shapes[1]))
    if op is operator.pow and y.dtype.kind == "i":
        y = np.abs(y) % 4
    check_traced(op, x, y)  # tracer op tracer
    check_traced(lambda a: op(a, y), x)  # tracer op ndarray
    check_traced(lambda b: op(x, b), y)  # ndarray op tracer, through __array_ufunc__


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda op: op.__name__)
@pytest.mark.parametrize("scalar", [3, 2.5, True])
@given(x=arrays(hnp.array_shapes(min_dims=0, max_dims=2), dtypes=[np.int32, np.float32]))
def test_operators_keep_python_scalars_weak(op, scalar, x):
    check_traced(lambda a: op(a, scalar), x)
    check_traced(lambda a: op(scalar, a), x)


def test_float32_tracer_times_python_float_is_float32():
    jaxpr = functrans.make_jaxpr(lambda x: (x * 2.0, 2.0 * x, x / 3, x**2))(
        np.ones(3, np.float32))
    assert [a.dtype for a in jaxpr.out_avals] == [np.float32] * 4


def test_square_by_python_int_is_integer_pow():
    jaxpr = check_traced(lambda x: x**2, np.arange(3.0))
    assert [e.primitive.name for e in jaxpr.eqns] == ["integer_pow"]


@pytest.mark.parametrize("op", [operator.neg, operator.pos, abs, operator.invert],
                         ids=lambda op: op.__name__)
@given(x=arrays(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0)))
def test_unary_operators(op, x):
    check_traced(op, x)


@given(shapes=st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                               ((2, 2, 3), (3, 2))]), data=st.data())
def test_matmul_operator(shapes, data):
    dtypes = [np.int64, np.float32, np.float64]
    x = data.draw(arrays(shapes[0], dtypes))
    y = data.draw(arrays(shapes[1], dtypes))
    check_traced(operator.matmul, x, y)
    check_traced(lambda b: x @ b, y)


def test_divmod():
    x, y = np.array([7.5, -3.0]), np.array([2.0, 2.0])
    check_traced(divmod, x, y)
    check_traced(lambda a: divmod(a, 2), x)
    check_traced(lambda a: divmod(10, a), y)


X = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7.0 - 1.5

METHODS = {
    "sum": lambda a: (a.sum(), a.sum(axis=0), a.sum(1, keepdims=True), a.sum(dtype=np.float32)),
    "prod": lambda a: (a.prod(), a.prod(axis=(0, 2))),
    "mean": lambda a: (a.mean(), a.mean(axis=-1, keepdims=True)),
    "var_std": lambda a: (a.var(), a.std(axis=1, ddof=1)),
    "max_min": lambda a: (a.max(), a.min(axis=0), a.max(axis=(1, 2), keepdims=True)),
    "argmax_argmin": lambda a: (a.argmax(), a.argmin(axis=1)),
    "any_all": lambda a: (a.any(), (a > 0).all(axis=2)),
    "cumsum_cumprod": lambda a: (a.cumsum(), a.cumprod(axis=1)),
    "reshape": lambda a: (a.reshape(6, 4), a.reshape((4, -1)), a.reshape([24])),
    "transpose": lambda a: (a.transpose(), a.transpose(2, 0, 1), a.transpose((1, 0, 2)), a.T,
                            a.mT),
    "astype": lambda a: (a.astype(np.float32), a.astype(np.int32), a.astype(a.dtype)),
    "squeeze_ravel": lambda a: (a[:1].squeeze(), a[:, :1].squeeze(1), a.ravel(), a.flatten()),
    "dot": lambda a: (a.dot(np.ones(4)), a[0].dot(a[1].T)),
    "clip_round": lambda a: (a.clip(-1, 1), a.clip(max=0.5), a.round(), a.round(2)),
    "swapaxes_take": lambda a: (a.swapaxes(0, 2), a.take([0, 2], axis=1)),
    "getitem": lambda a: (a[0], a[..., 1], a[:, ::-1], a[None, 1, :, [0, 3]], a[-1, 2, 3]),
    "at": lambda a: (a.at[0].set(0.0), a.at[:, 1].add(1.0), a.at[1, [0, 0]].mul(2.0),
                     a.at[0, 0].min(-9.0), a.at[..., 0].max(9.0)),
    "iteration": lambda a: tuple(a) + (len(a),),
}


def _numpy_at(a):
    """What the ``at`` row computes, written with NumPy's in-place updates."""
    outs = [a.copy() for _ in range(5)]
    outs[0][0] = 0.0
    outs[1][:, 1] += 1.0
    np.multiply.at(outs[2], (1, [0, 0]), 2.0)
    outs[3][0, 0] = np.minimum(outs[3][0, 0], -9.0)
    outs[4][..., 0] = np.maximum(outs[4][..., 0], 9.0)
    return tuple(outs)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_methods_match_ndarray_methods(name):
    fn = METHODS[name]
    expected = _numpy_at(X) if name == "at" else fn(X)
    jaxpr = functrans.make_jaxpr(fn)(X)
    check_jaxpr(jaxpr)
    outs = eval_jaxpr(jaxpr, X)
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected, strict=True):
        assert_same(got, want)


def test_properties():
    def f(a):
        assert (a.shape, a.ndim, a.size, a.dtype) == ((2, 3, 4), 3, 24, np.float64)
        return a

    functrans.make_jaxpr(f)(X)


def test_python_len_sum_and_max_on_tracers():
    m = np.random.default_rng(3).standard_normal((3, 4))
    assert functrans.jit(lambda x: len(x) * x[0, 0])(m) == 3 * m[0, 0]
    np.testing.assert_allclose(functrans.jit(lambda x: sum([x, 2 * x, x ** 2]))(m),
                               3 * m + m ** 2)
    assert functrans.grad(lambda t: sum([t, t * 2, t ** 2]))(3.0) == 9.0
    # max() compares in Python: it works where values are known (eager autodiff
    # retraces with values), and under jit asks for fnp.maximum instead.
    assert functrans.grad(lambda t: max([t, t * 2, t ** 2]))(3.0) == 6.0
    with pytest.raises(ConcretizationError, match=r"bool\(\) needs a concrete value"):
        functrans.jit(lambda t: max([t, t * 2]))(3.0)
    assert functrans.jit(lambda t: fnp.max(fnp.stack([t, t * 2])))(3.0) == 6.0


# -- NumPy's dispatch protocols -------------------------------------------------------------


def test_numpy_ufuncs_run_functrans_on_tracers():
    def f(a):
        return np.sin(a) + np.add(a, 2.0) * np.maximum(a, 0) - np.absolute(a)

    jaxpr = check_traced(f, np.ones(3, np.float32))
    names = [e.primitive.name for e in jaxpr.eqns]
    assert {"sin", "add", "max", "abs"} <= set(names)
    assert jaxpr.out_avals[0].dtype == np.float32


def test_numpy_functions_run_functrans_on_tracers():
    a = np.arange(6.0).reshape(2, 3)

    def f(x):
        return (np.sum(x, axis=0), np.transpose(x), np.round(x, 1), np.dot(a.T, x),
                np.where(x > 2, x, 0.0), np.concatenate([x, x]), np.mean(x))

    check_traced(f, a)


def test_ufunc_methods_functrans_lacks_are_refused_with_the_alternative():
    # reduce, accumulate and outer: tests/numpy/test_ufunc_methods.py
    with pytest.raises(TypeError, match=r"numpy.add.reduceat is not supported on traced arrays; "
                                        r"write it with calls of numpy.add itself on slices"):
        functrans.make_jaxpr(lambda x: np.add.reduceat(x, [0, 2]))(np.ones(3))
    with pytest.raises(TypeError, match=r"numpy.subtract.reduce is not supported on traced "
                                        r"arrays: only numpy.add.reduce, numpy.multiply.reduce, "
                                        r"numpy.maximum.reduce, numpy.minimum.reduce, "
                                        r"numpy.logical_and.reduce, numpy.logical_or.reduce are"):
        functrans.make_jaxpr(lambda x: np.subtract.reduce(x))(np.ones(3))
    with pytest.raises(TypeError, match=r"numpy.logaddexp.accumulate is not supported on traced "
                                        r"arrays: only numpy.add.accumulate, "
                                        r"numpy.multiply.accumulate, numpy.maximum.accumulate, "
                                        r"numpy.minimum.accumulate are"):
        functrans.make_jaxpr(lambda x: np.logaddexp.accumulate(x))(np.ones(3))


def test_ufunc_keywords_are_refused():
    # out= writes in place (tests/numpy/test_inplace.py), but a NumPy array cannot hold a tracer.
    with pytest.raises(TypeError, match=r"numpy.add\(\.\.\., out=\) .* would write a traced "
                                        r"value into a numpy.ndarray"):
        functrans.make_jaxpr(lambda x: np.add(x, x, out=np.ones(3)))(np.ones(3))
    with pytest.raises(TypeError, match="numpy.sin: keyword arguments dtype"):
        functrans.make_jaxpr(lambda x: np.sin(x, dtype=np.float32))(np.ones(3))
    # Keywords at their defaults change nothing, so they are accepted.
    check_traced(lambda x: np.sin(x, dtype=None, where=True, casting="same_kind"), np.ones(3))


def test_missing_functions_are_named():
    with pytest.raises(TypeError, match="functrans.numpy has no frexp"):
        functrans.make_jaxpr(lambda x: np.frexp(x))(np.ones(3))
    with pytest.raises(TypeError, match="numpy.histogram2d .* no function histogram2d"):
        functrans.make_jaxpr(lambda x: np.histogram2d(x, x))(np.ones(3))


@pytest.mark.parametrize("dtype, op, message", [
    (np.bool_, operator.neg, r"-x of a traced bool\[\] value \(at .*\): NumPy has no boolean "
     r"negative, and NumPy raises this TypeError too; use ~x or numpy.logical_not\(x\)"),
    (np.float64, operator.invert, r"~x of a traced f64\[\] value \(at .*\): NumPy's invert "
     r"takes only integers and bools, and NumPy raises this TypeError too; use "
     r"numpy.logical_not\(x\) for x == 0, or convert with x.astype\(int\) first"),
    (np.float16, operator.invert, r"~x of a traced f16\[\] value"),
    (np.complex64, operator.invert, r"~x of a traced c64\[\] value"),
])
def test_unary_operators_numpy_refuses_raise_its_type_error(dtype, op, message):
    x = np.ones(3, dtype)
    with pytest.raises(TypeError) as numpy_error:
        op(x[0])  # a NumPy scalar

    def f(a):
        return op(a[0])

    for transform in (functrans.jit(f), functrans.make_jaxpr(f)):
        with pytest.raises(TypeError, match="^f: " + message) as error:
            transform(x)
        assert type(error.value) is type(numpy_error.value)
    # The types NumPy takes still work.
    assert functrans.jit(lambda a: (-a[0], ~(a[0] > 0)))(np.ones(2)) == (-1.0, False)
