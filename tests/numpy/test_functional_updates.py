"""Functional updates that run the same eagerly and under transforms:
``fnp.at(x)[idx]`` on NumPy arrays and tracers, ``fnp.copy``/``np.copy``/
``.copy()`` of tracers, and the error for ``x[idx] = v`` on a tracer."""

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import cupy as gpu
from functrans.errors import ConcretizationError, TracerConversionError
from functrans.testing import check_grads

MODES = ("set", "add", "mul", "min", "max")
UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}
INDICES = [1, slice(1, None), [0, 0, 2], (Ellipsis, -1), np.array([True, False, True, False]),
           [], ()]


def numpy_update(x, idx, mode, v):
    out = x.copy()
    if mode == "set":
        out[idx] = v
    else:
        UFUNCS[mode].at(out, idx, v)
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("idx", INDICES, ids=repr)
def test_at_on_numpy_arrays_matches_numpy_and_leaves_x(mode, idx):
    x = np.array([1.5, -0.0, np.nan, np.inf])
    before = x.copy()
    v = np.float64(-2.0)
    with np.errstate(invalid="ignore"):  # NaN compared in min/max
        out = getattr(fnp.at(x)[idx], mode)(v)
        expected = numpy_update(x, idx, mode, v)
    assert type(out) is np.ndarray and not np.shares_memory(out, x)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("mode", MODES)
def test_at_gives_the_same_inside_jit_grad_and_vmap(mode):
    def f(x, v):
        return getattr(fnp.at(x)[[0, 2, 2]], mode)(v)

    x, v = np.array([1.0, 2.0, 3.0]), np.array([4.0, 0.5, -1.0])
    eager = f(x, v)
    np.testing.assert_array_equal(ft.jit(f)(x, v), eager)
    np.testing.assert_array_equal(ft.vmap(f, in_axes=(0, None))(np.stack([x, x]), v),
                                  np.stack([eager, eager]))
    # Traced arrays keep their own .at, and the two agree.
    np.testing.assert_array_equal(
        ft.jit(lambda x, v: getattr(x.at[[0, 2, 2]], mode)(v))(x, v), eager)
    loss = lambda x, v: np.sum(f(x, v) ** 2)  # noqa: E731
    check_grads(loss, (x, v), order=1, modes=("rev",))


def test_at_on_lists_ints_and_0d():
    assert fnp.at([1.0, 2.0])[0].mul(3).tolist() == [3.0, 2.0]
    xi = np.arange(3)
    out = fnp.at(xi)[0].add(5)
    assert out.dtype == xi.dtype and out.tolist() == [5, 1, 2]
    np.testing.assert_array_equal(fnp.at(np.float64(2.0))[()].set(3.0), 3.0)
    assert fnp.at(np.zeros((0, 2)))[:, 0].set(1.0).shape == (0, 2)


def test_at_get_is_a_copy_not_a_view():
    """A write into x after .get() must not change what .get() returned."""
    x = np.arange(6.0)
    for idx in (slice(1, None), Ellipsis, 2, [0, 1]):
        got = fnp.at(x)[idx].get()
        expected = np.array(x[idx], copy=True)
        x[...] = -1.0
        np.testing.assert_array_equal(got, expected)
        x[...] = np.arange(6.0)
    assert ft.grad(lambda x: fnp.at(x)[1:].get().sum())(x).tolist() == [0, 1, 1, 1, 1, 1]


def test_at_errors_name_the_update():
    with pytest.raises(IndexError, match=r"at\[\.\.\.\]\.set: index 5 is out of bounds for axis 0"):
        fnp.at(np.zeros(3))[5].set(1.0)
    with pytest.raises(ValueError, match=r"at\[\.\.\.\]\.add: values of shape \(2,\) do not "
                                         r"broadcast to the indexed shape \(3,\)"):
        fnp.at(np.zeros(3))[:].add(np.ones(2))


def test_copy_under_transforms():
    def f(x):
        return np.sum(x.copy() * np.copy(x) * fnp.copy(x, order="C"))

    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(ft.grad(f)(x), 3 * x**2)
    np.testing.assert_allclose(ft.jit(ft.grad(f))(x), 3 * x**2)
    np.testing.assert_allclose(ft.vmap(ft.grad(f))(np.stack([x, 2 * x])),
                               np.stack([3 * x**2, 12 * x**2]))
    out = ft.jit(np.copy)(x)
    assert out is not x and not np.shares_memory(out, x)


def test_copy_of_numpy_arrays_is_new():
    x = np.arange(6.0).reshape(2, 3)
    y = fnp.copy(x, order="F")
    assert y.flags.f_contiguous and not np.shares_memory(x, y)
    np.testing.assert_array_equal(y, x)
    with pytest.raises(ValueError, match="copy: order must be one of 'K', 'A', 'C', 'F', got 'X'"):
        fnp.copy(x, order="X")


def test_item_and_tolist_of_concrete_and_traced_values():
    def uses_item(x):
        return x * x.item()

    with pytest.raises(TracerConversionError, match=r"^uses_item: item\(\) would "
                                                              r"turn a traced f64\[\] value"):
        ft.grad(uses_item)(np.float64(2.0))
    with pytest.raises(ConcretizationError, match=r"^uses_item: item\(\) needs a "
                                                            r"concrete value"):
        ft.jit(uses_item)(np.float64(2.0))
    # An integer value carries no derivative: .item() and .tolist() give its value.
    assert ft.grad(lambda x, n: x * n.item(), argnums=0)(2.0, np.int64(3)) == 3.0
    assert ft.grad(lambda x, n: x * len(n.tolist()))(2.0, np.arange(4)) == 4.0



def test_at_on_device_arrays_stays_on_the_device(device):
    host = np.arange(4.0)
    x = ft.device_put(host, "gpu")
    cases = [
        (fnp.at(x)[[0, 0, 3]].add(1.0), fnp.at(host)[[0, 0, 3]].add(1.0)),  # a host index list
        (fnp.at(x)[np.array([2, 1])].set(-1.0), fnp.at(host)[np.array([2, 1])].set(-1.0)),
        (fnp.at(x)[1].max(7.0), fnp.at(host)[1].max(7.0)),
        (fnp.at(x)[1:].get(), host[1:]),
        (fnp.copy(x), host),
    ]
    for got, want in cases:
        assert gpu.is_device_array(got)
        np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_array_equal(x.get(), host)
