"""``x.view(dtype)`` on traced arrays: NumPy's bit-cast view (the
``bitcast_convert_type`` primitive, whose own rules tests/_specs.py
exercises), against NumPy bit for bit, under jit, vmap and the derivative
transforms, with NumPy's in-place semantics (an update of the array is seen
through the view) and NumPy's errors."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import MissingRuleError

SPECIAL = np.array([[1.5, -2.0, 0.0], [-0.0, np.inf, np.nan]])
PAYLOAD = np.array([0x7FF8000000000001, 0xFFF0000000000000], np.uint64).view(np.float64)


def _bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                  np.ascontiguousarray(want).reshape(-1).view(np.uint8))


def _against_numpy(f, *args):
    """``f`` traced under jit and make_jaxpr-free eager tracing (grad's
    primal) equals ``f`` on NumPy's arrays, bit for bit."""
    with np.errstate(all="ignore"):
        want = f(*(np.array(a) for a in args))
    _bits_equal(ft.jit(f)(*args), want)
    return want


VIEWS = {
    "same itemsize": lambda x: x.view(np.int64),
    "bytes": lambda x: x.view(np.uint8),
    "halves": lambda x: x.view(np.float32),
    "keyword and string": lambda x: x.view(dtype="<u2"),
    "pairs as complex": lambda x: x[:, :2].view(np.complex128),
    "bytes and back": lambda x: x.view(np.uint8).view(np.float64),
    "abs by the sign bit": lambda x: (x.view(np.int64) & 0x7FFFFFFFFFFFFFFF).view(np.float64),
    "complex as pairs": lambda x: (x + 1j * x[::-1]).view(np.float64),
    "bools as bytes": lambda x: (x > 0).view(np.uint8),
    "of a C-ordered copy of a transpose": lambda x: x.T.copy().view(np.int16),
    "of a row": lambda x: x[1].view(np.uint32),
    "0-d, same itemsize": lambda x: x[0, 0, ...].view(np.uint64),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_as_another_dtype_match_numpy_bit_for_bit(name):
    for x in (SPECIAL, np.stack([PAYLOAD, -PAYLOAD, PAYLOAD[::-1]], 1)):
        _against_numpy(VIEWS[name], x)


def test_view_keeps_working_without_a_dtype_and_with_its_own():
    for f in (lambda x: x.view(), lambda x: x.view(np.ndarray), lambda x: x.view(x.dtype),
              lambda x: x.view(np.float64, np.ndarray)):
        _against_numpy(f, SPECIAL)


@pytest.mark.parametrize("in_axis", [0, 1, -1])
def test_vmap_of_a_view_is_a_loop(in_axis):
    xs = np.stack([SPECIAL, SPECIAL[::-1] * 3], axis=in_axis)
    views = [VIEWS["same itemsize"], VIEWS["abs by the sign bit"]]
    if in_axis == 0:
        # another itemsize needs the members' layout, which vmap knows only here
        views += [VIEWS["bytes"], VIEWS["pairs as complex"], VIEWS["bytes and back"]]
    for f in views:
        want = np.stack([f(np.ascontiguousarray(m)) for m in np.moveaxis(xs, in_axis, 0)])
        _bits_equal(ft.vmap(f, in_axes=in_axis)(xs), want)
        _bits_equal(ft.jit(ft.vmap(f, in_axes=in_axis))(xs), want)


def test_a_view_as_another_itemsize_of_an_array_of_unknown_layout_says_how_to_lay_it_out():
    xs = np.stack([SPECIAL, SPECIAL], axis=-1)
    with pytest.raises(ValueError, match=r"<lambda>: x.view\(dtype=uint8\) \(at .*\) reads the "
                                         r"last axis of a traced f64\[2,3\] array as uint8, "
                                         r"which NumPy allows only where that axis is contiguous "
                                         r"in memory, and the layout of this array is not known "
                                         r"here; view a C-ordered copy instead: "
                                         r"x.copy\(\).view\(\.\.\.\)"):
        ft.vmap(lambda x: x.view(np.uint8), in_axes=-1)(xs)
    _bits_equal(ft.vmap(lambda x: x.copy().view(np.uint8), in_axes=-1)(xs),
                np.stack([SPECIAL.view(np.uint8)] * 2))


def test_derivatives_through_integer_views_are_zero_as_jax_gives():
    x = np.array([1.5, -2.0, 0.25])
    # the sign bit decides; the derivative flows through x itself only
    def f(x):
        negative = x.view(np.int64) < 0
        return fnp.sum(fnp.where(negative, -x, x) ** 2)

    np.testing.assert_allclose(ft.grad(f)(x), 2 * x)
    np.testing.assert_allclose(ft.hessian(f)(x), 2 * np.eye(3))
    np.testing.assert_allclose(ft.jacfwd(ft.grad(f))(x), 2 * np.eye(3))
    # the bits themselves, read back as floats, carry no derivative (JAX's rule)
    np.testing.assert_array_equal(ft.grad(lambda x: fnp.sum(VIEWS["abs by the sign bit"](x)))(x),
                                  np.zeros(3))
    _, tangent = ft.jvp(lambda x: x.view(np.uint8), (x,), (np.ones(3),))
    assert tangent.dtype.kind != "f" or not tangent.any()


def test_a_derivative_between_float_dtypes_is_refused_with_the_way_to_write_it():
    with pytest.raises(MissingRuleError, match=r"bitcast_convert_type: the bits of f64\[.*\] "
                                               r"read as complex128 have no derivative; for "
                                               r"pairs of floats as complex numbers write "
                                               r"x\[\.\.\., 0\] \+ 1j \* x\[\.\.\., 1\]"):
        ft.grad(lambda x: fnp.sum(fnp.abs(x.view(np.complex128))))(np.ones((2, 2)))


def test_an_update_of_the_array_is_seen_through_its_bitcast_views():
    def f(x):
        y = x * 1.0
        same, parts = y.view(np.int64), y.view(np.uint8)
        row = parts.reshape(2, 3, 8)[1]  # a view of the view
        y[0, 0] = 7.0
        y[1] += 1.0
        return same, parts, row, y

    for got, want in zip(ft.jit(f)(SPECIAL), f(SPECIAL.copy())):
        _bits_equal(got, want)
    xs = np.stack([SPECIAL, -SPECIAL])
    for got, want in zip(ft.vmap(f)(xs), zip(*[f(m.copy()) for m in xs])):
        _bits_equal(got, np.stack(want))


def test_writes_through_a_bitcast_view_are_refused():
    for write in (lambda v: v.__setitem__(0, 3), lambda v: v.__iadd__(1),
                  lambda v: v[1:].__setitem__(slice(None), 0)):
        def f(x, write=write):
            v = (x * 1.0).view(np.int64)
            write(v)
            return v

        with pytest.raises(TypeError, match=r"f: .* writes through a view of a traced array \(at "
                                            r".*\), but writes through a view with another dtype "
                                            r"would reinterpret the written bits as the array's "
                                            r"own dtype, which is not followed. Update the array "
                                            r"itself \(x\[\.\.\.\] = new\.view\(x\.dtype\)\)"):
            ft.jit(f)(np.ones(3))


def test_numpys_refusals_are_numpys_errors_with_the_fix():
    cases = [
        (lambda x: x.T.view(np.uint8), ValueError,
         r"x.view\(dtype=uint8\) \(at .*\): To change to a dtype of a different size, the last "
         r"axis must be contiguous \(NumPy's rule: x's last axis is not contiguous in memory "
         r"here\); view a C-ordered copy instead: x.copy\(\).view\(\.\.\.\)"),
        (lambda x: x[:, ::2].view(np.float32), ValueError,
         r"x.view\(dtype=float32\) .*: To change to a dtype of a different size, the last axis "
         r"must be contiguous"),
        (lambda x: x[:, :1].view(np.complex128), ValueError,
         r"when changing to a larger dtype, its size must be a divisor of the total size in "
         r"bytes of the last axis of the array \(NumPy's rule\): 1 float64 elements are 8 bytes"),
        (lambda x: fnp.array(x[0, 0]).view(np.uint8), ValueError,
         r"changing the dtype of a 0d array is only supported if the itemsize is unchanged"),
        (lambda x: x.view("V8"), TypeError, r"\|V8 has no numeric bits to read float64 as"),
        (lambda x: x.astype(np.complex128).view(np.uint8), TypeError,
         r"a view of a traced complex128 array as uint8, 1 byte\(s\) per element, is not "
         r"supported; view a new array of its parts instead"),
    ]
    for f, error, message in cases:
        if error is ValueError:  # NumPy refuses these too
            with pytest.raises(ValueError):
                f(SPECIAL.copy())
        with pytest.raises(error, match=r"<lambda>: (x.view\(.*\) \(at .*\): )?" + message):
            ft.jit(f)(SPECIAL)


def test_a_view_of_a_scalar_is_a_new_scalar():
    def f(x):
        s = x.sum()
        return s.view(np.int64), fnp.sum(x.view(np.int64))

    _against_numpy(f, np.array([0.5, 2.0]))
