"""The fast paths of ``functrans.numpy``'s dispatch give exactly what the
general paths give: NumPy's protocols on tracers (``np.sin(tracer)``,
``np.sum(tracer)``) once their target function is remembered, and the
reductions' traced call without keywords.  Each case is run along the
general path (nothing remembered, or an argument that the fast path leaves
to it) and along the fast path, and the results are compared: dtype, weak
type, shape and value bit for bit, or the error's type and text."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _bits import bits_equal
from functrans.primitives import elementwise, linalg
from functrans.primitives.broadcasting import reduce_sum_p
from functrans.primitives.elementwise import integer_pow_p
from functrans.primitives.linalg import dot_general_p

import functrans as ft
import functrans.numpy as fnp
from functrans.core import ShapedArray, lookup_primitive
from functrans.errors import AxisError, DTypeError, ShapeError
from functrans.numpy import _array_methods, _indexing, _reductions

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]
PY_SCALARS = [True, 3, -2, 2.5, -0.0, float("nan"), float("inf"), 1 - 2j]


def _values(dtype) -> np.ndarray:
    """A few values of ``dtype``: zeros, ones and, for floats, -0.0, NaN and inf."""
    if np.dtype(dtype).kind in "fc":
        return np.array([0.0, -0.0, 1.5, np.nan, np.inf, -2.0], dtype)
    if np.dtype(dtype).kind == "b":
        return np.array([True, False, True, True, False, False])
    return np.array([0, 1, 2, 3, 1, 0], dtype)


def _others(dtype):
    """Second operands of every kind: Python scalars, NumPy scalars, 0-d and
    n-d arrays of ``dtype`` and of float32."""
    vals = _values(dtype)
    return [*PY_SCALARS, vals[2], np.asarray(vals[2]), vals[::-1].copy(),
            np.float32(0.5), np.ones(6, np.float32)]


def _forget() -> None:
    _array_methods._UFUNC_TARGETS.clear()
    _array_methods._FUNCTION_TARGETS.clear()


def _outcome(fn, *args, general: bool = False):
    """What tracing ``fn`` over ``args`` (the traced ones: arrays) gives: the
    output's aval (dtype, weak type, shape) and its value's bytes, or the
    error.  ``general``: with nothing remembered before each trace."""
    try:
        if general:
            _forget()
        closed = ft.make_jaxpr(fn)(*args)
        aval = closed.jaxpr.outvars[0].aval
        if general:
            _forget()
        value = np.asarray(ft.jit(fn)(*args))
    except Exception as e:  # the error must be the same along both paths
        return type(e), str(e)
    return aval.dtype, aval.weak_type, aval.shape, value.dtype, value.tobytes()


def _general_and_fast(fn, *args):
    general = _outcome(fn, *args, general=True)  # also remembers the target, if any
    return general, _outcome(fn, *args)


# The grids run every operand kind, NaN and inf included, through the ufuncs.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

UFUNCS_2 = [np.add, np.multiply, np.true_divide, np.power, np.maximum, np.less]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_binary_ufunc_fast_path_matches_general_path(dtype):
    x = _values(dtype)
    for ufunc in UFUNCS_2:
        for other in _others(dtype):
            for fn in (lambda t, o=other, u=ufunc: u(t, o), lambda t, o=other, u=ufunc: u(o, t)):
                general, fast = _general_and_fast(fn, x)
                assert general == fast, (ufunc, other)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_ufunc_on_tracer_is_the_fnp_function(dtype):
    x, y = _values(dtype), _values(dtype)[::-1].copy()
    for ufunc in (*UFUNCS_2, np.sin, np.negative, np.absolute):
        fn_np = (lambda a, b, u=ufunc: u(a, b)) if ufunc.nin == 2 else (lambda a, b, u=ufunc: u(a))
        fn_f = getattr(fnp, ufunc.__name__)
        fn_fnp = (lambda a, b, f=fn_f: f(a, b)) if ufunc.nin == 2 else (lambda a, b, f=fn_f: f(a))
        _outcome(fn_np, x, y)  # remember the target
        assert _outcome(fn_np, x, y) == _outcome(fn_fnp, x, y), ufunc


def test_ufunc_target_is_remembered_and_keywords_still_checked():
    x = np.linspace(0.0, 1.0, 4)
    _array_methods._UFUNC_TARGETS.clear()
    ft.make_jaxpr(np.sin)(x)
    fn, prim = _array_methods._UFUNC_TARGETS[np.sin]
    assert fn is fnp.sin and prim is fnp.sin.primitive  # bound from the dispatch itself
    # An input that is a list goes through the function, which makes it an array.
    plain = ft.make_jaxpr(lambda t: np.add(t, t))(x)
    assert str(ft.make_jaxpr(lambda t: np.add(t, [0.0, 1.0, 2.0, 3.0]))(x)).count("add") == 1
    assert str(plain).count("add") == 1
    # A remembered ufunc still has its keywords and methods checked.
    with pytest.raises(TypeError, match=r"numpy.sin: keyword arguments dtype are not supported "
                                        r"on traced arrays"):
        ft.make_jaxpr(lambda t: np.sin(t, dtype=np.float32))(x)
    ft.make_jaxpr(lambda t: np.add(t, t))(x)
    with pytest.raises(TypeError, match=r"numpy.add.reduceat is not supported on traced "
                                        r"arrays; write it with calls of numpy.add itself"):
        ft.make_jaxpr(lambda t: np.add.reduceat(t, [0, 2]))(x)
    # Keywords at their defaults take the general path and give the same program.
    plain = ft.make_jaxpr(lambda t: np.sin(t))(x)
    defaults = ft.make_jaxpr(lambda t: np.sin(t, dtype=None, casting="same_kind"))(x)
    assert str(plain) == str(defaults)


def test_missing_targets_are_refused_every_time():
    x = np.linspace(0.0, 1.0, 4)
    for _ in range(2):
        with pytest.raises(TypeError, match=r"numpy.modf was applied to a traced array, but "
                                            r"functrans.numpy has no modf"):
            ft.make_jaxpr(lambda t: np.modf(t))(x)
    assert np.modf not in _array_methods._UFUNC_TARGETS


def test_array_function_target_is_remembered():
    x = np.arange(6.0).reshape(2, 3)
    _array_methods._FUNCTION_TARGETS.clear()
    first = ft.make_jaxpr(lambda t: np.sum(t, axis=0))(x)
    assert _array_methods._FUNCTION_TARGETS[np.sum] is fnp.sum
    assert str(ft.make_jaxpr(lambda t: np.sum(t, axis=0))(x)) == str(first)
    ft.make_jaxpr(lambda t: np.linalg.norm(t))(x)
    assert _array_methods._FUNCTION_TARGETS[np.linalg.norm] is fnp.linalg.norm


AXES = [None, 0, 1, -1, -2, 2, -3, (0, 1), (1,), 1.0, (0, 0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["sum", "prod", "all", "any"])
def test_reduction_fast_path_matches_general_path(dtype, name):
    """``keepdims=np.False_`` is not ``False``: it takes the general path."""
    x = np.stack([_values(dtype), _values(dtype)[::-1]])
    red = getattr(fnp, name)
    for axis in AXES:
        fast = _outcome(lambda t, a=axis: red(t, axis=a), x)
        general = _outcome(lambda t, a=axis: red(t, axis=a, keepdims=np.False_), x)
        assert fast == general, axis
        if not isinstance(fast[0], type):  # no error: NumPy's dtype and values
            expected = np.asarray(getattr(np, name)(x, axis=axis))
            assert fast[3] == expected.dtype and fast[4] == expected.tobytes(), axis


def test_reduction_fast_path_skips_normalisation(monkeypatch):
    calls = []
    original = _reductions.normalize_axes

    def spy(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(_reductions, "normalize_axes", spy)
    x = np.ones((2, 3))
    ft.make_jaxpr(lambda t: fnp.sum(t) + fnp.sum(t, axis=-1).sum() + np.sum(t, axis=1).sum())(x)
    assert calls == []
    ft.make_jaxpr(lambda t: fnp.sum(t, axis=(0, 1)))(x)
    assert len(calls) == 1


def test_reduction_fast_path_errors():
    x = np.ones((2, 3))
    with pytest.raises(Exception) as fast:
        ft.make_jaxpr(lambda t: fnp.sum(t, axis=2))(x)
    with pytest.raises(Exception) as general:
        ft.make_jaxpr(lambda t: fnp.sum(t, axis=2, keepdims=np.False_))(x)
    assert type(fast.value) is type(general.value)
    assert str(fast.value) == str(general.value)
    assert "sum: axis 2 is out of bounds for an array of rank 2" in str(fast.value)
    with pytest.raises(TypeError, match=r"sum\(..., out=\) \(at .*\) would write a traced "
                                        r"value into a numpy.ndarray"):
        ft.make_jaxpr(lambda t: fnp.sum(t, out=np.empty(())))(x)


def test_tracer_operand_kinds():
    """Two traced operands of any dtypes go the same way through np.* and fnp.*."""
    for da in DTYPES:
        for db in (np.bool_, np.int8, np.float32, np.complex128):
            a, b = _values(da), _values(db)
            assert _outcome(lambda s, t: np.multiply(s, t), a, b) == \
                _outcome(lambda s, t: fnp.multiply(s, t), a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_pow_avals_remembered(dtype):
    """``x ** y`` has NumPy's dtype for every exponent, the first time and
    from the remembered aval; a weak operand gives a strong result both times."""
    x = _values(dtype)
    for y in (0, 1, 2, 3, -1):
        elementwise._pow_avals.clear()
        first, again = _outcome(lambda t, y=y: t**y, x), _outcome(lambda t, y=y: t**y, x)
        assert first == again, y
        try:
            want = x**y  # the operator: NumPy squares a bool array to int8
        except (ValueError, OverflowError):  # negative powers of integers: refused too
            assert isinstance(first[0], type) and issubclass(first[0], Exception), y
            continue
        assert first[0] == want.dtype and first[3] == want.dtype and first[1] is False, y
    aval = ShapedArray((3,), dtype)
    first = integer_pow_p.abstract_eval(aval, y=2)
    assert integer_pow_p.abstract_eval(ShapedArray((3,), dtype), y=3) is first
    # A weak operand is a different key: its result is worked out afresh.
    strong0 = integer_pow_p.abstract_eval(ShapedArray((), dtype), y=2)
    weak0 = integer_pow_p.abstract_eval(ShapedArray((), dtype, weak_type=True), y=2)
    elementwise._pow_avals.clear()
    assert integer_pow_p.abstract_eval(ShapedArray((), dtype, weak_type=True), y=2) == weak0
    assert integer_pow_p.abstract_eval(ShapedArray((), dtype), y=2) == strong0
    assert not weak0.weak_type and not strong0.weak_type and strong0.dtype == first.dtype
    with pytest.raises(DTypeError, match="integer_pow: exponent must be a Python int, got 2.0"):
        integer_pow_p.abstract_eval(aval, y=2.0)



BASIC_INDICES = [
    0, -1, 2, (1,), (0, 1), (-1, -3), slice(None), slice(1, None), slice(None, -1),
    slice(None, None, -1), slice(3, 0, -2), slice(-100, 100), slice(5, 2), (slice(None), 0),
    (None, 1), (Ellipsis, 0), (0, Ellipsis), (Ellipsis,), (None, Ellipsis, None), (), None,
    (slice(1, 3), None, slice(None, None, 2)),
    # Not basic, or not in range: the general path, every time.
    3, -4, (0, 0, 0), (Ellipsis, Ellipsis), True, np.int64(1), (np.int64(0), 1), [0, 2],
    slice(np.int64(1), None), slice(None, None, 0), 1.0,
]


@pytest.mark.parametrize("idx", BASIC_INDICES, ids=repr)
def test_getitem_parse_cache_matches_general_path(idx):
    x = np.arange(12.0).reshape(3, 4)
    x[0, 0] = -0.0
    _indexing._parsed.clear()
    general = _outcome(lambda t: t[idx], x)
    assert _outcome(lambda t: t[idx], x) == general  # parsed once, now remembered
    try:
        want = x[idx]
    except (IndexError, TypeError, ValueError) as e:
        assert general[0] in (IndexError, TypeError, ValueError), (e, general)
        return
    assert general[2] == want.shape and general[3] == want.dtype
    assert general[4] == np.ascontiguousarray(want).tobytes()


def test_getitem_parse_cache_keys():
    x = np.ones((3, 4))
    _indexing._parsed.clear()
    ft.make_jaxpr(lambda t: t[0] + t[(0,)] + t[-1])(x)
    assert set(_indexing._parsed) == {((3, 4), (0,)), ((3, 4), (-1,))}
    ft.make_jaxpr(lambda t: t[np.int64(0)] + t[True])(x)
    assert len(_indexing._parsed) == 2  # NumPy integers and bools are not basic keys
    with pytest.raises(IndexError, match="getitem: index 3 is out of bounds for axis 0 "
                                         "with size 3"):
        ft.make_jaxpr(lambda t: t[3])(x)
    assert ((3, 4), (3,)) not in _indexing._parsed


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)), ((1, 2, 3), (5, 3, 4)),
                 ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((4, 2, 3), (5, 3, 4)),
                 ((2, 3), (4, 5)), ((0, 2, 3), (0, 3, 1))]


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32, np.float64, np.complex64])
def test_matmul_and_dot_avals_remembered(dtype):
    """The remembered dot_general avals and matmul's equal-batch shortcut give
    NumPy's shapes and dtypes, the first time and again; bad shapes raise the
    same error each time."""
    for sa, sb in MATMUL_SHAPES:
        a = np.arange(np.prod(sa), dtype=dtype).reshape(sa)
        b = np.arange(np.prod(sb), dtype=dtype).reshape(sb)[::-1].copy()
        linalg._dot_avals.clear()
        first = _outcome(lambda s, t: s @ t, a, b)
        assert _outcome(lambda s, t: s @ t, a, b) == first
        try:
            want = a @ b
        except ValueError:
            assert first[0] is ShapeError, (sa, sb, first)
            assert first[1].startswith("matmul: shapes") or "do not broadcast" in first[1]
            continue
        assert first[2] == want.shape and first[3] == want.dtype, (sa, sb)
        assert first[4] == want.tobytes(), (sa, sb)
        if len(sb) <= 2:  # np.dot's contraction differs from matmul's beyond 2-d
            assert _outcome(lambda s, t: fnp.dot(s, t), a, b)[2:] == first[2:], (sa, sb)


def test_dot_general_avals_remembered():
    lhs, rhs = ShapedArray((2, 3), np.float32), ShapedArray((3,), np.int64)
    dims = (((1,), (0,)), ((), ()))
    linalg._dot_avals.clear()
    out = dot_general_p.abstract_eval(lhs, rhs, dimension_numbers=dims)
    assert out == ShapedArray((2,), np.float64)
    assert dot_general_p.abstract_eval(lhs, rhs, dimension_numbers=dims) is out
    listed = dot_general_p.abstract_eval(lhs, rhs, dimension_numbers=[[[1], [0]], [[], []]])
    assert listed == out and len(linalg._dot_avals) == 1
    for _ in range(2):
        with pytest.raises(ShapeError, match=r"dot_general: contracting axes \(0,\) of "
                                             r"f32\[2,3\] and \(0,\) of i64\[3\] must have "
                                             r"equal sizes"):
            dot_general_p.abstract_eval(lhs, rhs, dimension_numbers=(((0,), (0,)), ((), ())))
    assert len(linalg._dot_avals) == 1


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
def test_reduction_avals_remembered(name):
    prim = lookup_primitive(name)
    fn = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max,
          "reduce_min": np.min}[name]
    for dtype in DTYPES:
        for axes in [(), (0,), (1,), (0, 1)]:
            aval = ShapedArray((2, 3), dtype)
            first = prim.abstract_eval(aval, axes=axes)
            again = prim.abstract_eval(ShapedArray((2, 3), dtype), axes=axes)
            assert again is first
            want = fn(np.ones((2, 3), dtype), axis=axes)
            assert (first.shape, first.dtype, first.weak_type) == (want.shape, want.dtype, False)
            assert prim.abstract_eval(aval, axes=list(axes)) == first
    for _ in range(2):
        with pytest.raises(AxisError, match=rf"{name}: axis 2 is out of bounds for an operand "
                                            r"of type f64\[2,3\] \(rank 2\)"):
            prim.abstract_eval(ShapedArray((2, 3), np.float64), axes=(2,))
    if name in ("reduce_max", "reduce_min"):
        for _ in range(2):
            with pytest.raises(ShapeError, match=rf"{name}: reducing an axis of size 0"):
                prim.abstract_eval(ShapedArray((0, 3), np.float64), axes=(0,))


def test_remembered_avals_keep_refusing_float_axes():
    """``1.0 == 1`` as a key, but a float axis is refused even after the int
    axis' result is remembered."""
    x = ShapedArray((2, 3), np.float64)
    assert reduce_sum_p.abstract_eval(x, axes=(1,)).shape == (2,)
    for _ in range(2):
        with pytest.raises(AxisError, match=r"reduce_sum: axis 1.0 is out of bounds"):
            reduce_sum_p.abstract_eval(x, axes=(1.0,))
    rhs = ShapedArray((3,), np.float64)
    assert dot_general_p.abstract_eval(x, rhs, dimension_numbers=(((1,), (0,)), ((), ())))
    for _ in range(2):
        with pytest.raises(AxisError, match=r"dot_general: axis 1.0 is out of bounds"):
            dot_general_p.abstract_eval(x, rhs, dimension_numbers=(((1.0,), (0,)), ((), ())))


# -- value-keyed caches of the dispatch -----------------------------------------------


@pytest.mark.parametrize("axis", [0, -1, None, np.int64(1), (1, 0)])
def test_reduction_fast_path_matches_numpy_dtypes(axis):
    for dtype in (np.bool_, np.int8, np.uint8, np.float32, np.float64):
        x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
        for name in ("sum", "prod", "max", "min", "all", "any"):
            np_fn, f_fn = getattr(np, name), getattr(fnp, name)
            try:
                want = np_fn(x, axis=axis)
            except Exception as e:  # noqa: BLE001 - the same refusal is expected
                with pytest.raises(type(e)):
                    ft.jit(lambda x, f_fn=f_fn: f_fn(x, axis=axis))(x)
                continue
            got = ft.jit(lambda x, f_fn=f_fn: f_fn(x, axis=axis))(x)
            assert bits_equal(got, want), (name, dtype, axis, got, want)
            assert bits_equal(ft.jit(lambda x, np_fn=np_fn: np_fn(x, axis=axis))(x), want)


def test_reduction_fast_path_float_axis_refused_after_int():
    x = np.ones((2, 3))
    ft.jit(lambda x: fnp.sum(x, axis=1))(x)
    with pytest.raises(Exception, match="axis"):
        ft.jit(lambda x: fnp.sum(x, axis=1.0))(x)


def test_ufunc_table_filled_from_two_threads():
    x = np.linspace(-1.0, 1.0, 5)
    ufuncs = [np.sin, np.cos, np.exp, np.tanh, np.negative, np.abs, np.square, np.sqrt]
    errors: list[BaseException] = []

    def work(fns):
        try:
            for _ in range(20):
                for u in fns:
                    got = ft.jit(lambda x, u=u: u(x * 0.5 + 1.0))(x)
                    assert bits_equal(got, u(x * 0.5 + 1.0)), u
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(ufuncs[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
