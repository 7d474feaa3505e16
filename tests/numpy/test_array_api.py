"""functrans.numpy as an array API namespace (standard 2024.12): the
inspection object, devices, tracers' ``__array_namespace__``/``device``/
``to_device``/``__dlpack__``/shifts, and every name and keyword the
conformance suite found missing, each against NumPy (or array-api-strict
where NumPy lacks the keyword), eagerly, under jit and with derivatives."""

import copy
import pickle

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import AxisError, ConcretizationError, LinAlgError, ShapeError
from functrans.testing import check_grads

FAST = settings(max_examples=25, deadline=None)
X = np.array([[3.0, -1.0, 2.0], [0.5, -0.0, 2.0]])


def _same(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)
    if actual.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


def _eager_and_jit(f, *args, want):
    _same(f(*args), want)
    _same(ft.jit(f)(*args), want)


# -- names ------------------------------------------------------------------------------


def _public(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_") or n.startswith("__array")}


def test_every_name_of_the_standard_is_there():
    # array-api-strict holds the standard's names and its own flag helpers;
    # dtypes and constants are NumPy's own objects.
    own = {"ArrayAPIStrictFlags", "Device", "ModuleType", "get_array_api_strict_flags",
           "set_array_api_strict_flags", "reset_array_api_strict_flags", "__version__"}
    assert not set(xps.__all__) - _public(fnp) - own
    assert not set(xps.linalg.__all__) - _public(fnp.linalg)
    assert not set(xps.fft.__all__) - _public(fnp.fft)
    assert fnp.__array_api_version__ == "2024.12"
    for name in ["float32", "int8", "bool", "complex128", "uint64"]:
        assert getattr(fnp, name) is getattr(np, name)


# -- the inspection object ----------------------------------------------------------------


def test_namespace_info():
    info = fnp.__array_namespace_info__()
    assert info.default_device() == "cpu" and info.devices()[0] == "cpu"
    caps = info.capabilities()
    assert caps == {"boolean indexing": False, "data-dependent shapes": False,
                    "max dimensions": 64}
    assert info.default_dtypes() == {"real floating": np.float64,
                                     "complex floating": np.complex128,
                                     "integral": np.intp, "indexing": np.intp}
    assert type(pickle.loads(pickle.dumps(info))) is type(info)
    assert pickle.loads(pickle.dumps(fnp.TRACE_DEVICE)) is fnp.TRACE_DEVICE
    assert copy.deepcopy(fnp.TRACE_DEVICE) is fnp.TRACE_DEVICE
    strict = xps.__array_namespace_info__()
    for kind in [None, "bool", "signed integer", "unsigned integer", "integral",
                 "real floating", "complex floating", "numeric",
                 ("bool", "real floating")]:
        mine = info.dtypes(kind=kind, device="cpu")
        assert set(mine) == set(strict.dtypes(kind=kind)), kind
        assert all(mine[n] is np.dtype(n) for n in mine)


def test_a_device_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match=r"zeros: device='tpu' is not a functrans device; "
                                         r"use 'cpu', 'gpu', None"):
        fnp.zeros(2, device="tpu")
    with pytest.raises(ValueError, match=r"dtypes: device=3"):
        fnp.__array_namespace_info__().dtypes(device=3)


@pytest.mark.parametrize("make", [
    lambda d: fnp.zeros(3, device=d), lambda d: fnp.ones((2,), np.int8, device=d),
    lambda d: fnp.full(2, 1.5, device=d), lambda d: fnp.empty(2, device=d),
    lambda d: fnp.arange(3, device=d), lambda d: fnp.linspace(0, 1, 3, device=d),
    lambda d: fnp.eye(2, device=d), lambda d: fnp.asarray([1, 2], device=d),
    lambda d: fnp.zeros_like(np.ones(2), device=d), lambda d: fnp.ones_like(np.ones(2), device=d),
    lambda d: fnp.full_like(np.ones(2), 3, device=d),
    lambda d: fnp.empty_like(np.ones(2), device=d),
    lambda d: fnp.astype(np.ones(2), np.float32, device=d),
    lambda d: fnp.from_dlpack(np.ones(2), device=d),
])  # fmt: skip
def test_creation_takes_device(make):
    for device in (None, "cpu"):
        out = make(device)
        assert type(out) is np.ndarray and out.device == "cpu"


# -- tracers as array API arrays -------------------------------------------------------------


def test_tracers_name_their_namespace_and_device():
    seen = []

    def f(x):
        seen.append((x.__array_namespace__(), x.__array_namespace__(api_version="2023.12"),
                     x.device, x.to_device(x.device) is x, x.to_device(None) is x))
        return x * 2

    ft.grad(lambda x: f(x).sum())(np.ones(2))
    ft.jit(f)(np.ones(2))
    assert seen == [(fnp, fnp, fnp.TRACE_DEVICE, True, True)] * 2


def test_tracer_refusals_name_the_way_out():
    def version(x):
        return x.__array_namespace__(api_version="2019.01")

    with pytest.raises(ValueError, match=r"version: __array_namespace__\(api_version='2019.01'\)"
                                         r": functrans.numpy follows the array API standard "
                                         r"2024.12"):
        ft.jit(version)(np.ones(2))

    def move(x):
        return x.to_device("cpu")

    with pytest.raises(ValueError, match=r"move: x.to_device\('cpu'\) on a traced f64\[2\] "
                                         r"array \(at .*test_array_api.py:\d+\): a traced "
                                         r"computation runs where its inputs are; move the "
                                         r"inputs with functrans.device_put"):
        ft.jit(move)(np.ones(2))

    def export(x):
        return np.from_dlpack(x)

    with pytest.raises(TypeError, match=r"export: __dlpack__ of a traced f64\[2\] array .*no "
                                        r"memory to share"):
        ft.jit(export)(np.ones(2))

    def export_fnp(x):
        return fnp.from_dlpack(x)

    with pytest.raises(TypeError, match=r"export_fnp: fnp.from_dlpack of a traced f64\[2\] "
                                        r"array: a traced array has no memory to share"):
        ft.jit(export_fnp)(np.ones(2))


def test_arrays_made_on_a_tracers_device_are_traced_constants():
    """``xp.asarray(v, device=x.device)``, the array API idiom for a constant
    next to ``x``, gives a tracer, so array API code that asks for one
    namespace for both (array_api_compat.array_namespace) sees only
    functrans.numpy; its value is known, also under jit, so checks on it in
    Python work there too."""
    from scipy._lib import array_api_compat

    def f(x):
        n = fnp.asarray(2.5, dtype=x.dtype, device=x.device)
        if isinstance(x, ft.core.Tracer):
            assert isinstance(n, ft.core.Tracer) and n.device is fnp.TRACE_DEVICE
            assert array_api_compat.array_namespace(x, n) is fnp
        if bool(fnp.any(n != fnp.round(n))):  # known while tracing: a constant
            n = fnp.round(n)
        return x * n + fnp.zeros(2, device=x.device)

    _eager_and_jit(f, np.array([1.0, 2.0]), want=np.array([2.0, 4.0]))
    np.testing.assert_array_equal(ft.grad(lambda x: f(x).sum())(np.ones(2)), [2.0, 2.0])
    assert type(fnp.asarray(1.0, device=fnp.TRACE_DEVICE)) is np.ndarray  # no trace active


def test_an_enclosing_traces_value_does_not_become_known_inside_jit():
    # Constant folding while tracing is limited to the trace's own constants:
    # the value of grad's tracer must not specialise the jitted program.
    def outer(x):
        return ft.jit(lambda y: y * 2.0 if bool(x > 0) else y)(x)  # closes over grad's x

    with pytest.raises(ConcretizationError, match=r"bool\(\) needs a concrete value"):
        ft.grad(outer)(1.0)


def test_shift_operators_on_tracers():
    x = np.array([1, -8, 5], np.int16)
    for f, want in [(lambda x: x << 3, x << 3), (lambda x: x >> 1, x >> 1),
                    (lambda x: 2 << x, 2 << x), (lambda x: 1000 >> x, 1000 >> x)]:
        _eager_and_jit(f, x, want=want)


# -- elementwise: shifts and nextafter --------------------------------------------------


@FAST
@given(st.sampled_from([np.int8, np.uint8, np.int32, np.int64, np.uint64]), st.data())
def test_shifts_match_numpy_for_every_count(dtype, data):
    info = np.iinfo(dtype)
    x = np.asarray(data.draw(st.lists(st.integers(info.min, info.max), min_size=1,
                                      max_size=5)), dtype)
    y = np.asarray(data.draw(st.lists(st.integers(0, 70), min_size=len(x), max_size=len(x))),
                   dtype)
    for name in ["left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift"]:
        _eager_and_jit(getattr(fnp, name), x, y, want=getattr(np, name)(x, y))


def test_shifts_refuse_floats():
    with pytest.raises(TypeError, match=r"shift_left: not defined for operands of type "
                                        r"f64\[2\], i64\[\]"):
        ft.jit(lambda x: fnp.left_shift(x, 1))(np.ones(2))


def test_nextafter():
    x = np.array([0.0, -0.0, 1.0, np.nan, np.inf, 1.0, -5e-324])
    y = np.array([-0.0, 0.0, 2.0, 1.0, 0.0, np.nan, 1.0])
    _eager_and_jit(fnp.nextafter, x, y, want=np.nextafter(x, y))
    x32 = x.astype(np.float32)
    _eager_and_jit(fnp.nextafter, x32, np.float32(3.0), want=np.nextafter(x32, np.float32(3.0)))
    # x itself to first order: derivative 1 in x and 0 in y.
    check_grads(lambda a, b: fnp.nextafter(a, b) * a,
                (np.array([0.5, -2.0]), np.array([3.0, -4.0])))
    grads = ft.grad(lambda a, b: fnp.nextafter(a, b).sum(), argnums=(0, 1))(np.ones(2), np.zeros(2))
    _same(grads[0], np.ones(2))
    _same(grads[1], np.zeros(2))


# -- statistical: cumulative sums, var/std correction ----------------------------------


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("x, kw", [
    (np.array([1.5, -2.0, 3.0]), {}),
    (np.array([1.5, -2.0, 3.0]), {"include_initial": True}),
    (np.arange(6.0).reshape(2, 3), {"axis": 1, "include_initial": True}),
    (np.arange(6.0).reshape(2, 3), {"axis": -2}),
    (np.arange(6, dtype=np.int8).reshape(3, 2), {"axis": 0}),
    (np.arange(6, dtype=np.uint8), {"dtype": np.float32, "include_initial": True}),
    (np.array([True, False, True]), {}),
    (np.zeros((0, 2)), {"axis": 0, "include_initial": True}),
    (np.array(4.0), {}),
])  # fmt: skip
def test_cumulative(name, x, kw):
    want = getattr(np, name)(x, **kw)
    _eager_and_jit(lambda x: getattr(fnp, name)(x, **kw), x, want=want)


def test_cumulative_derivatives_and_errors():
    x = np.array([[1.5, -2.0, 3.0], [0.5, 2.0, -1.0]])
    for fn in [fnp.cumulative_sum, fnp.cumulative_prod]:
        check_grads(lambda x, f=fn: f(x, axis=1, include_initial=True), (x,))
    with pytest.raises(AxisError, match=r"fnp.cumulative_sum: axis=None on an array of rank "
                                        r"2; the array API requires the axis .* pass axis= "
                                        r"\(or use fnp.cumsum, which flattens\)"):
        fnp.cumulative_sum(x)


def test_var_std_correction():
    x = np.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
    for name in ["var", "std"]:
        fn = getattr(fnp, name)
        for c in [0, 1, 1.5]:
            want = getattr(np, name)(x, axis=1, correction=c)
            _eager_and_jit(lambda x, f=fn, c=c: f(x, axis=1, correction=c), x, want=want)
        check_grads(lambda x, f=fn: f(x, axis=0, correction=1), (x,))
        with pytest.raises(ValueError, match=rf"fnp.{name}: ddof=1 and correction=1 were both "
                                             "given; they are two names for the same offset"):
            getattr(fnp, name)(x, ddof=1, correction=1)


# -- sorting: descending -------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_descending_matches_array_api_strict(axis):
    x = np.array([[1.0, np.nan, 3.0, 1.0, 2.0, 3.0, -0.0, 0.0],
                  [5.0, 4.0, 4.0, 4.0, 1.0, 1.0, np.nan, np.nan]])
    order = np.asarray(xps.argsort(xps.asarray(x), axis=axis, descending=True))
    _eager_and_jit(lambda x: fnp.argsort(x, axis=axis, descending=True), x, want=order)
    # The values are x in that order (array-api-strict's sort reverses an
    # ascending sort instead, which puts 0.0 before an earlier -0.0).
    _eager_and_jit(lambda x: fnp.sort(x, axis=axis, descending=True), x,
                   want=np.take_along_axis(x, order, axis))
    np.testing.assert_array_equal(fnp.sort(x, axis=axis, descending=True),
                                  np.asarray(xps.sort(xps.asarray(x), axis=axis, descending=True)))
    ints = np.array([[2, 7, 2, 2], [0, -1, 5, 5]], np.int8)
    want = np.asarray(xps.argsort(xps.asarray(ints), axis=axis, descending=True, stable=True))
    _same(fnp.argsort(ints, axis=axis, descending=True), want)


def test_sort_descending_derivative():
    check_grads(lambda x: fnp.sort(x, descending=True) * np.arange(4.0),
                (np.array([0.3, -1.0, 2.5, 1.2]),))


# -- manipulation and linear algebra ------------------------------------------------------


def test_concat_permute_dims_matrix_transpose_unstack():
    a, b = np.arange(6.0).reshape(2, 3), np.ones((1, 3), np.float32)
    _eager_and_jit(lambda a, b: fnp.concat([a, b]), a, b, want=np.concatenate([a, b]))
    _eager_and_jit(lambda a, b: fnp.concat((a, b), axis=None), a, b,
                   want=np.concatenate([a, b], axis=None))
    x = np.arange(24.0).reshape(2, 3, 4)
    _eager_and_jit(lambda x: fnp.permute_dims(x, (2, 0, 1)), x, want=np.permute_dims(x, (2, 0, 1)))
    _eager_and_jit(fnp.matrix_transpose, x, want=np.matrix_transpose(x))
    for axis in [0, 1, -1]:
        for got, want in zip(fnp.unstack(x, axis=axis), np.unstack(x, axis=axis), strict=True):
            _same(got, want)
    check_grads(lambda x: fnp.unstack(x, axis=1)[2] * fnp.matrix_transpose(x)[:, :, 1], (x,))
    with pytest.raises(ShapeError, match=r"fnp.matrix_transpose: the argument has shape "
                                         r"\(3,\), but a stack of matrices needs two or more"):
        fnp.matrix_transpose(np.ones(3))
    with pytest.raises(ShapeError, match=r"fnp.unstack: the argument is 0-d"):
        fnp.unstack(np.float64(1.0))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    xs = (np.arange(3.0), np.arange(2, dtype=np.int8), np.linspace(0, 1, 4))
    for k in range(4):
        want = np.meshgrid(*xs[:k], indexing=indexing, sparse=sparse)
        got = fnp.meshgrid(*xs[:k], indexing=indexing, sparse=sparse)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
    check_grads(lambda a, b: fnp.meshgrid(a, b)[0] * fnp.meshgrid(a, b)[1],
                (np.array([0.5, 1.0, 2.0]), np.array([-1.0, 3.0])))
    with pytest.raises(ValueError, match=r"fnp.meshgrid: indexing='yx'; use 'xy' or 'ij'"):
        fnp.meshgrid(xs[0], indexing="yx")


def test_vecdot():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 1, 3)) + 1j * rng.normal(size=(4, 1, 3))
    b = rng.normal(size=(2, 3))
    np.testing.assert_allclose(fnp.vecdot(a, b), np.vecdot(a, b), rtol=1e-13)
    np.testing.assert_allclose(fnp.linalg.vecdot(a, b), np.linalg.vecdot(a, b), rtol=1e-13)
    c = rng.normal(size=(3, 2))
    _eager_and_jit(lambda c: fnp.vecdot(c, c, axis=0), c, want=np.vecdot(c, c, axis=0))
    small = np.array([200, 100], np.uint8)  # the dtype is kept, as NumPy keeps it
    _eager_and_jit(fnp.vecdot, small, small, want=np.vecdot(small, small))
    check_grads(lambda x, y: fnp.vecdot(x, y), (c, rng.normal(size=(3, 2))))
    with pytest.raises(ShapeError, match=r"fnp.vecdot: the vectors along axis -1 have 3 and 2 "
                                         r"components"):
        fnp.vecdot(np.ones(3), np.ones(2))
    with pytest.raises(ShapeError, match=r"fnp.vecdot: axis=-2 for operands of shapes \(3,\) "
                                         r"and \(3,\); .* use an axis in \[-1, -1\]"):
        fnp.vecdot(np.ones(3), np.ones(3), axis=-2)


def test_linalg_aliases():
    rng = np.random.default_rng(1)
    x = np.arange(24).reshape(2, 3, 4)
    for offset in [-1, 0, 2]:
        _same(fnp.linalg.diagonal(x, offset=offset), np.linalg.diagonal(x, offset=offset))
        _same(fnp.linalg.trace(x, offset=offset), np.linalg.trace(x, offset=offset))
    _same(fnp.linalg.trace(x, dtype=np.float32), np.linalg.trace(x, dtype=np.float32))
    u, v = rng.normal(size=(4, 3)), rng.normal(size=3)
    np.testing.assert_allclose(fnp.linalg.cross(u, v), np.linalg.cross(u, v), rtol=1e-14)
    np.testing.assert_allclose(fnp.linalg.outer(u[0], v), np.linalg.outer(u[0], v))
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4, 2))
    np.testing.assert_allclose(fnp.linalg.tensordot(a, b, axes=2),
                               np.linalg.tensordot(a, b, axes=2))
    np.testing.assert_allclose(fnp.linalg.matmul(a, b[0]), np.linalg.matmul(a, b[0]))
    check_grads(lambda u, v: fnp.linalg.cross(u, v) * fnp.linalg.trace(fnp.linalg.outer(v, v)),
                (u, v))
    with pytest.raises(LinAlgError, match=r"fnp.linalg.cross: the vectors along axis -1 of "
                                          r"shapes \(2,\) and \(3,\) must have 3 components"):
        fnp.linalg.cross(np.ones(2), np.ones(3))
    with pytest.raises(LinAlgError, match=r"fnp.linalg.outer: both operands must be 1-d"):
        fnp.linalg.outer(np.ones((2, 2)), np.ones(2))
    with pytest.raises(LinAlgError, match=r"fnp.linalg.trace: the argument has shape \(3,\)"):
        fnp.linalg.trace(np.ones(3))


def test_matrix_rank():
    rng = np.random.default_rng(2)
    m = rng.normal(size=(3, 4, 4))
    m[0, :, 0] = m[0, :, 1]
    m[1] = np.outer(m[1, 0], m[1, 1])
    for kw in [{}, {"rtol": 0.5}, {"tol": 0.1}, {"hermitian": True}]:
        mm = m + np.swapaxes(m, -1, -2) if kw.get("hermitian") else m
        _eager_and_jit(lambda mm, kw=kw: fnp.linalg.matrix_rank(mm, **kw), mm,
                       want=np.linalg.matrix_rank(mm, **kw))
    _same(fnp.linalg.matrix_rank(np.zeros((2, 0, 3))), np.zeros(2, np.intp))
    with pytest.raises(ValueError, match=r"both rtol= and tol= were given"):
        fnp.linalg.matrix_rank(m, rtol=0.1, tol=0.1)


def test_clip_takes_the_standards_names():
    x = np.array([-2.0, 0.5, 3.0])
    want = np.clip(x, 0.0, 1.0)
    for f in [lambda x: fnp.clip(x, 0.0, 1.0), lambda x: fnp.clip(x, min=0.0, max=1.0),
              lambda x: fnp.clip(x, a_min=0.0, a_max=1.0), lambda x: np.clip(x, 0.0, 1.0)]:
        _eager_and_jit(f, x, want=want)
    _same(fnp.clip(x, max=1.0), np.clip(x, max=1.0))
    with pytest.raises(TypeError, match=r"fnp.clip: both min= and a_min= were given"):
        fnp.clip(x, min=0.0, a_min=0.0)


# -- sets and searching: data-dependent shapes -------------------------------------------------


SET_INPUTS = [np.array([3.0, 1.0, 2.0, 1.0, np.nan, np.nan, -0.0, 0.0]),
              np.array([[5, 2], [2, 7]], np.int8), np.zeros((0, 3)), np.array(4.0),
              np.array([True, False, True])]


@pytest.mark.parametrize("x", SET_INPUTS, ids=range(len(SET_INPUTS)))
def test_unique_matches_numpy(x):
    def check(got, want):
        for field in want._fields:
            _same(getattr(got, field), getattr(want, field))

    check(fnp.unique_all(x), np.unique_all(x))
    check(fnp.unique_counts(x), np.unique_counts(x))
    check(fnp.unique_inverse(x), np.unique_inverse(x))
    _same(fnp.unique_values(x), np.unique_all(x).values)


def test_unique_derivative_and_jit():
    x = np.array([3.0, 1.0, 3.0, 2.0])
    # The derivative reaches the first position of each distinct value.
    _same(ft.grad(lambda x: (fnp.unique_values(x) ** 2).sum())(x), np.array([6.0, 2.0, 0.0, 4.0]))

    def distinct(x):
        return fnp.unique_values(x)

    with pytest.raises(ConcretizationError, match=r"distinct: fnp.unique_values of a traced "
                                                  r"f64\[4\] array inside jit: the number of "
                                                  r"distinct values decides the shape"):
        ft.jit(distinct)(x)


def test_nonzero_and_friends():
    x = np.array([[0.0, 1.0, np.nan], [-0.0, 2.0, 0.0]])
    for got, want in zip(fnp.nonzero(x), np.nonzero(x), strict=True):
        _same(got, want)
    _same(fnp.flatnonzero(x), np.flatnonzero(x))
    _same(fnp.argwhere(x), np.argwhere(x))
    # The positions under grad: they index the traced array.
    _same(ft.grad(lambda x: x[fnp.nonzero(x)].sum())(np.array([0.0, 2.0, 3.0])),
          np.array([0.0, 1.0, 1.0]))
    for axis, keepdims in [(None, False), (0, False), (1, True), ((0, 1), True)]:
        _eager_and_jit(lambda x, a=axis, k=keepdims: fnp.count_nonzero(x, axis=a, keepdims=k), x,
                       want=np.asarray(np.count_nonzero(x, axis=axis, keepdims=keepdims)))
    _same(fnp.count_nonzero(np.array([1j, 0j, 0.0 - 0j])), np.asarray(1))
    with pytest.raises(ShapeError, match=r"fnp.nonzero: the argument is 0-d"):
        fnp.nonzero(np.float64(1.0))

    def positions(x):
        return fnp.nonzero(x)

    with pytest.raises(ConcretizationError, match=r"positions: fnp.nonzero .* inside jit: the "
                                                  r"number of nonzero elements decides"):
        ft.jit(positions)(x)


def test_isin_and_broadcast_shapes():
    x = np.array([[1.0, np.nan], [2.0, -0.0]])
    for tests in ([0.0, np.nan, 2.0], [], np.array([[2]], np.int8)):
        for invert in (False, True):
            _eager_and_jit(lambda x, t=tests, i=invert: fnp.isin(x, t, invert=i), x,
                           want=np.isin(x, tests, invert=invert))
    _same(fnp.isin(np.zeros((2, 0)), [1.0]), np.isin(np.zeros((2, 0)), [1.0]))
    assert fnp.broadcast_shapes((2, 1), (3,), 1) == np.broadcast_shapes((2, 1), (3,), 1)
    assert fnp.broadcast_shapes() == ()
    with pytest.raises(ShapeError, match=r"broadcast_shapes: shapes \(2,\), \(3,\) do not "
                                         r"broadcast"):
        fnp.broadcast_shapes((2,), (3,))
