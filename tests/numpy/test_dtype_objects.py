"""functrans.numpy's scalar types, ``dtype`` and dtype functions are NumPy's
own objects, so code written for NumPy sees the same identity, equality and
hashing; dtype arguments (``x.astype(fnp.float32)``, ``dtype=float``,
``dtype=None``, strings) give NumPy's dtypes eagerly and traced; and a scalar
type called on a traced value, which NumPy's type cannot cast, raises with the
cast to write instead."""

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.dtypes import float0
from functrans.errors import ConcretizationError, TracerConversionError

pytestmark = [pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),
              pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")]

SCALAR_TYPES = [
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "intp", "uintp", "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip
ABSTRACT_TYPES = ["generic", "number", "integer", "signedinteger", "unsignedinteger",
                  "inexact", "floating", "complexfloating"]
DTYPE_FUNCTIONS = ["dtype", "finfo", "iinfo", "isdtype", "issubdtype", "promote_types"]

X = np.array([1.5, -2.0, 0.0, -0.0, 3.25])
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40, 3e38, 7e38])
#: Every way of naming a dtype that NumPy takes, and what it means.
DTYPE_ARGS = [fnp.float32, np.float32, "float32", "f4", np.dtype("float32"), float, int, bool,
              complex, None, "int8", fnp.uint8, fnp.bool, fnp.complex64, fnp.float16]


def _same(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)
    if actual.dtype.kind == "f":  # -0.0 keeps its sign
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


def _check(f, x, want):
    """``f(x)`` is ``want`` eagerly and under jit, and ``vmap(f)`` of two
    copies of ``x`` is two copies of ``want``."""
    _same(f(x), want)
    _same(ft.jit(f)(x), want)
    _same(ft.vmap(f)(np.stack([x, x])), np.stack([want, want]))


# -- the objects ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCALAR_TYPES + ABSTRACT_TYPES + DTYPE_FUNCTIONS)
def test_the_objects_are_numpys_own(name):
    assert getattr(fnp, name) is getattr(np, name)
    assert name in fnp.__all__


def test_equality_and_hashing_are_numpys():
    # A scalar type equals itself and its dtype (the dtype's comparison), as in
    # NumPy: not None, not a string, not a Python type.
    for other in (None, "float64", "f8", float, np.float32, np.dtype("float32")):
        assert fnp.float64 != other
        assert not (fnp.float64 == other)
    assert fnp.float64 == np.float64 == np.dtype("float64") and fnp.bool is fnp.bool_
    # strings that are not dtypes compare unequal instead of raising
    for text in ("(2,)f8,,", "i4,(2", "M8[xyz]", "not a dtype", ""):
        assert (fnp.float32 == text) is False
    assert {np.float32: "f32", np.int64: "i64"}[fnp.float32] == "f32"
    assert hash(fnp.int64) == hash(np.int64)
    assert repr(fnp.complex128) == repr(np.complex128)
    assert isinstance(np.float32(1), fnp.float32) and not isinstance(np.float64(1), fnp.float32)
    assert issubclass(fnp.float32, fnp.floating) and not issubclass(fnp.int8, fnp.floating)
    # the dtype instances compare as NumPy's do
    assert np.dtype(fnp.float32) == "float32" and fnp.dtype("f8") == np.float64
    assert isinstance(fnp.dtype("float32"), fnp.dtype)


def test_eager_calls_are_numpys():
    assert type(fnp.float32(1.5)) is np.float32 and fnp.float32(1.5) == np.float32(1.5)
    assert type(fnp.int8(-3)) is np.int8 and fnp.bool(0) is np.False_
    assert fnp.float64() == 0.0 and type(fnp.complex128(1j)) is np.complex128
    _same(fnp.float32([1, 2]), np.float32([1, 2]))
    _same(fnp.int32(X), np.int32(X))
    assert fnp.finfo(fnp.float32).eps == np.finfo(np.float32).eps
    assert fnp.iinfo(fnp.int16).max == 32767


# -- dtype arguments -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPE_ARGS, ids=repr)
def test_astype_takes_every_dtype_name_numpy_takes(dtype):
    x = np.concatenate([X, SPECIAL]) if np.dtype(dtype).kind in "fcb" else X
    want = x.astype(dtype)
    _check(lambda v: v.astype(dtype), x, want)
    _check(lambda v: fnp.astype(v, dtype), x, want)
    _check(lambda v: np.astype(v, dtype), x, want)  # NumPy hands tracers to fnp.astype


@pytest.mark.parametrize("dtype", DTYPE_ARGS, ids=repr)
def test_asarray_and_creation_take_every_dtype_name_numpy_takes(dtype):
    _same(fnp.zeros(3, dtype=dtype), np.zeros(3, dtype=dtype))
    _same(fnp.ones((2, 1), dtype=dtype), np.ones((2, 1), dtype=dtype))
    _same(fnp.full(2, 1, dtype=dtype), np.full(2, 1, dtype=dtype))
    _same(fnp.asarray([1, 0], dtype=dtype), np.asarray([1, 0], dtype=dtype))
    _check(lambda v: fnp.asarray(v, dtype=dtype), X, np.asarray(X, dtype=dtype))
    # created inside a traced function, next to a traced value
    _check(lambda v: fnp.zeros(5, dtype=dtype) + v, X, np.zeros(5, dtype=dtype) + X)


def test_astype_derivatives():
    x = X[:3]
    for transform in (ft.grad, lambda f: ft.jit(ft.grad(f))):
        g = transform(lambda v: fnp.sum(v.astype(fnp.float32) * 2.0))(x)
        _same(g, np.full(3, 2.0))
        g = transform(lambda v: fnp.sum(fnp.astype(v, "complex128").real * v))(x)
        _same(g, 2 * x)
        # an integer cast holds no derivative
        g = transform(lambda v: fnp.sum(v.astype(int) * v))(x)
        _same(g, x.astype(int).astype(float))
    assert ft.grad(lambda v: v.astype(fnp.float32) * 2.0)(1.0) == 2.0


def test_astype_casting_is_checked_as_numpy_checks_it():
    f32 = X.astype(np.float32)
    for casting in ("same_kind", "unsafe"):
        _check(lambda v, c=casting: v.astype(np.float32, casting=c), X, f32)
    _same(ft.jit(lambda v: v.astype(np.float64, casting="safe"))(f32), f32.astype(np.float64))
    with pytest.raises(TypeError):
        X.astype(np.int32, casting="safe")
    with pytest.raises(TypeError, match=r"casting='safe' does not allow float64 -> int32"):
        ft.jit(lambda v: v.astype(np.int32, casting="safe"))(X)
    with pytest.raises(ValueError):  # not a casting rule: NumPy's own error
        ft.jit(lambda v: v.astype(np.int32, casting="sometimes"))(X)


def test_astype_keeps_numpys_positional_order():
    """``ndarray.astype(dtype, order, casting, subok, copy)``."""
    _check(lambda v: v.astype("f4", "C", "same_kind", True, False), X,
           X.astype("f4", "C", "same_kind", True, False))


def test_astype_refuses_a_device_for_a_traced_array():
    with pytest.raises(TypeError, match="drop the device argument"):
        ft.jit(lambda v: fnp.astype(v, fnp.float32, device="cpu"))(X)
    _same(fnp.astype(X, fnp.float32, device="cpu"), X.astype(np.float32))


# -- comparisons and dtype functions on traced arrays ---------------------------------------


def _dtype_facts(x):
    """What NumPy code asks of a dtype, for ``x`` an array or a tracer."""
    return (
        x.dtype == fnp.float32, x.dtype == np.float64, x.dtype == "float32", x.dtype == float,
        x.dtype.type is fnp.float32, isinstance(x.dtype, fnp.dtype),
        fnp.issubdtype(x.dtype, fnp.floating), fnp.issubdtype(x.dtype, fnp.integer),
        fnp.isdtype(x.dtype, "real floating"),
        fnp.result_type(x, 2.0), fnp.result_type(x, np.int8, np.float16),
        np.result_type(x, fnp.complex64),
        fnp.can_cast(x, fnp.float64), fnp.can_cast(x, np.float16),
        np.can_cast(x, np.int64, "same_kind"),
        fnp.promote_types(x.dtype, fnp.int16), fnp.finfo(x.dtype).eps,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_questions_have_numpys_answers_on_tracers(dtype):
    x = X.astype(dtype)
    want = _dtype_facts(x)
    seen = []

    def record(v):
        seen.append(_dtype_facts(v))
        return fnp.sum(v)

    ft.jit(record)(x)
    ft.grad(record)(x)
    ft.vmap(record)(x[None])
    ft.jit(ft.vmap(ft.grad(record)))(x[None])
    assert len(seen) == 4
    for facts in seen:
        assert facts == want


def test_traced_python_scalars_stay_weak_in_result_type():
    """A Python scalar argument is traced as a weak value: NumPy 2 promotion
    treats it as it treats the scalar itself."""
    seen = []

    def record(v):
        seen.append((fnp.result_type(v, np.float32), np.result_type(v, np.int8, 1.0)))
        return v * 2

    ft.grad(record)(2.0)
    ft.jit(record)(2.0)
    eager = (np.result_type(2.0, np.float32), np.result_type(2.0, np.int8, 1.0))
    assert seen == [eager, eager] and eager[0] == np.float32
    with pytest.raises(TypeError, match="can_cast"):  # as np.can_cast(2.0, ...) does
        ft.jit(lambda v: v if fnp.can_cast(v, fnp.float32) else v)(2.0)


def test_result_type_and_can_cast_eagerly_are_numpys():
    f32, i8 = np.ones(2, np.float32), np.int8(3)
    for args in [(f32, 2.0), (f32, 2), (i8, 1000), (np.float16, np.int16), (f32, 1j), (True,)]:
        assert fnp.result_type(*args) == np.result_type(*args)
    for args in [(f32, np.float64), (np.float64, np.float32), (i8, np.uint8, "same_kind")]:
        assert fnp.can_cast(*args) is np.can_cast(*args)


# -- a scalar type called on a traced value ----------------------------------------------


@pytest.mark.parametrize("name", ["float32", "float64", "int32", "bool_", "complex128"])
def test_a_scalar_type_called_on_a_traced_value_says_what_to_write(name):
    """``np.float32(x)`` turns ``x`` into a NumPy constant: under grad that
    would drop the derivative, under jit and vmap the value is unknown.  Each
    raises, naming the cast that keeps ``x`` traced (under grad, integer and
    bool types are allowed: their value has no derivative to drop)."""
    t = getattr(fnp, name)
    advice = r"x\.astype\(functrans\.numpy\.float32\) or functrans\.numpy\.asarray\(x, dtype="
    with pytest.raises(ConcretizationError, match=advice):
        ft.jit(lambda v: t(v))(X)
    with pytest.raises(ConcretizationError, match=advice):
        ft.vmap(lambda v: t(v))(X)
    with pytest.raises(ConcretizationError, match=advice):
        ft.jit(lambda v: t([v[0], v[1]]))(X)
    if name in ("int32", "bool_"):
        # An integer or a truth value of the value has zero derivative almost
        # everywhere, as int() and bool() do: allowed where the value is known.
        g = ft.grad(lambda v: t(v[0]) * v[1])(X)
        np.testing.assert_array_equal(g, [0.0, t(X[0]), 0.0, 0.0, 0.0])
        return
    with pytest.raises(TracerConversionError, match="derivative would be silently lost"):
        ft.grad(lambda v: fnp.sum(t(v)).real)(X)
    with pytest.raises(TracerConversionError, match=advice):
        ft.grad(lambda v: t(v[0]).real * v[1])(X)


def test_a_scalar_type_may_take_the_value_of_a_traced_integer():
    """Outside jit, a value without a derivative (an integer argument) may be
    used: the constant is exact."""
    g = ft.grad(lambda v, n: v * fnp.float32(n), allow_int=True)(2.0, 3)
    assert g == 3.0


# -- float0 ----------------------------------------------------------------------------------


def test_float0_is_not_a_numpy_scalar_type():
    assert float0.kind == "V" and float0.itemsize == 0
    assert all(float0 != getattr(fnp, name) for name in SCALAR_TYPES)
    _, g = ft.grad(lambda v, n: v * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert g.dtype == float0 and g.shape == ()


def test_numpys_other_dtype_names_are_its_own_objects():
    for name in ("byte", "ubyte", "short", "ushort", "intc", "uintc", "int_", "uint", "long",
                 "ulong", "longlong", "ulonglong", "half", "single", "double", "csingle",
                 "cdouble"):
        assert getattr(fnp, name) is getattr(np, name), name
        assert name in fnp.__all__
    x = np.arange(3)
    assert ft.jit(lambda x: x.astype(fnp.intc))(x).dtype == np.intc
    assert fnp.zeros(2, fnp.single).dtype == np.float32


def test_longdouble_is_an_alias_of_double_precision():
    assert fnp.longdouble is np.float64 and fnp.clongdouble is np.complex128
    x = np.arange(3)
    assert ft.jit(lambda x: x.astype(fnp.longdouble))(x).dtype == np.float64
    assert fnp.asarray([1, 2], dtype=fnp.clongdouble).dtype == np.complex128
