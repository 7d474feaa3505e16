"""fnp.max/min with ``initial=`` and ``where=`` (values against NumPy,
derivatives against a direct tie-splitting reference) and the errors of
empty and badly specified max/min/argmax/argmin reductions, eager and traced."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import DTypeError, ShapeError
from functrans.testing import check_grads

EXTREMA = [("max", fnp.max, np.max), ("min", fnp.min, np.min),
           ("max", fnp.amax, np.amax), ("min", fnp.amin, np.amin)]


def _reference_grad(x, axis, initial, mask, np_fn):
    """d sum(max(x, axis, initial, where)) by hand: in each reduced slice the
    kept elements and ``initial`` compete; the winners share 1 equally."""
    x = np.moveaxis(x, axis, -1)
    mask = np.moveaxis(np.broadcast_to(mask, np.moveaxis(x, -1, axis).shape), axis, -1)
    gx, g_init = np.zeros_like(x), 0.0
    for idx in np.ndindex(x.shape[:-1]):
        row, keep = x[idx], mask[idx]
        best = np_fn(row, initial=initial, where=keep)
        wins = keep & (row == best)
        n = wins.sum() + (initial == best)
        gx[idx][wins] = 1.0 / n
        g_init += (initial == best) / n
    return np.moveaxis(gx, -1, axis), g_init


# --------------------------------------------------------------------------
# initial= and where=: values
# --------------------------------------------------------------------------


_values = st.sampled_from([-np.inf, -2.0, -0.0, 0.0, 1.0, 1.0, 3.0, np.inf, np.nan])


@settings(max_examples=60, deadline=None)
@given(st.lists(_values, min_size=6, max_size=6), st.lists(st.booleans(), min_size=6,
       max_size=6), _values, st.sampled_from([None, 0, 1, -1, (0, 1)]), st.booleans())
def test_initial_and_where_match_numpy(values, keep, initial, axis, keepdims):
    x = np.array(values).reshape(2, 3)
    mask = np.array(keep).reshape(2, 3)
    for _, fn, np_fn in EXTREMA:
        want = np_fn(x, axis=axis, initial=initial, where=mask, keepdims=keepdims)
        # The sign of a zero result at a tie of -0.0 and 0.0 is left open (NumPy's
        # own depends on the order of its vectorised loop): equal, not identical.
        np.testing.assert_array_equal(fn(x, axis=axis, initial=initial, where=mask,
                                         keepdims=keepdims), want)
        jitted = ft.jit(lambda x, fn=fn: fn(x, axis=axis, initial=initial, where=mask,
                                           keepdims=keepdims))
        np.testing.assert_array_equal(jitted(x), want)
        np.testing.assert_array_equal(fn(x, axis=axis, initial=initial, keepdims=keepdims),
                                      np_fn(x, axis=axis, initial=initial, keepdims=keepdims))


def test_initial_and_where_dtypes_and_broadcasting():
    ints = np.array([[1, 7], [4, 2]], np.int8)
    out = fnp.max(ints, axis=1, initial=5)
    assert out.dtype == np.int8 and out.tolist() == [7, 5]
    assert fnp.max(np.array([1, 2]), initial=2.5) == np.max(np.array([1, 2]), initial=2.5)
    row_mask = np.array([False, True])  # broadcast along axis 0, as NumPy does
    np.testing.assert_array_equal(fnp.min(ints, axis=0, where=row_mask, initial=9),
                                  np.min(ints, axis=0, where=row_mask, initial=9))
    np.testing.assert_array_equal(fnp.max(ints, where=[[1, 0], [0, 1]], initial=0), 2)
    # Empty reductions with initial: the initial value, in the array's dtype.
    np.testing.assert_array_equal(fnp.max(np.ones((0, 3)), axis=0, initial=-1.0), [-1, -1, -1])
    assert fnp.min(np.ones((0, 3), np.float32), initial=4).dtype == np.float32
    assert fnp.max(np.ones((2, 0)), axis=0).shape == (0,)  # nothing reduced is empty


def test_numpy_functions_on_tracers_take_initial_and_where():
    mask = np.array([True, False, True])
    f = ft.jit(lambda x: np.max(x, initial=0.0, where=mask))
    assert f(np.array([-1.0, 5.0, -3.0])) == 0.0


# --------------------------------------------------------------------------
# initial= and where=: derivatives
# --------------------------------------------------------------------------


def test_masked_positions_get_no_cotangent_and_initial_ties_share():
    x = np.array([[1.0, 5.0, 5.0], [2.0, -1.0, 0.5], [5.0, 5.0, 5.0]])
    mask = np.array([[True, True, False], [True, False, True], [True, True, False]])

    def loss(x, initial):
        return fnp.sum(fnp.max(x, axis=1, initial=initial, where=mask))

    for initial in [5.0, 0.0, -np.inf, 2.0]:
        gx, g_init = ft.grad(loss, argnums=(0, 1))(x, initial)
        want_x, want_init = _reference_grad(x, 1, initial, mask, np.max)
        np.testing.assert_allclose(gx, want_x)
        np.testing.assert_allclose(g_init, want_init)
        assert np.all(gx[~mask] == 0)
        # Forward mode agrees with reverse mode.
        np.testing.assert_allclose(ft.jacfwd(loss)(x, initial), want_x)
    # Row 0 with initial 5: x[0, 1] and initial tie (x[0, 2] is masked out).
    gx, g_init = ft.grad(loss, argnums=(0, 1))(x, 5.0)
    assert gx[0].tolist() == [0.0, 0.5, 0.0] and gx[2].tolist() == [1 / 3, 1 / 3, 0.0]


def test_a_mask_that_depends_on_the_argument():
    x = np.array([[1.0, 5.0, -5.0], [-2.0, -1.0, 0.5]])
    g = ft.grad(lambda x: fnp.sum(fnp.min(x, axis=1, where=x > -3, initial=2.0)))
    np.testing.assert_array_equal(g(x), [[1, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(ft.vmap(g)(np.stack([x, -x])),
                                  [g(x), g(-x)])


def test_initial_derivative_when_the_reduction_is_empty():
    g = ft.grad(lambda i: fnp.sum(fnp.max(np.ones((0, 3)), axis=0, initial=i)))
    assert g(2.0) == 3.0


def test_check_grads_with_initial_and_where():
    rng = np.random.default_rng(0)
    mask = np.array([True, False, True])
    check_grads(lambda x: fnp.max(x, axis=0, where=mask, initial=-3.0),
                (rng.standard_normal((4, 3)),), order=2)
    check_grads(lambda x, i: fnp.min(x, axis=(0, 1), initial=i),
                (rng.standard_normal((4, 3)), 0.1), order=2)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name, fn, np_fn", EXTREMA)
def test_empty_reduction_without_initial(name, fn, np_fn):
    sign = "-" if name == "max" else ""
    want = (rf"^fnp\.{name}: the {name} over axis=None of an array of shape \(2, 0\) is empty "
            rf"\(axis 1 has size 0\), and {name} has no identity; pass initial= \(the value "
            rf"of an empty {name}, e.g. initial={sign}np\.inf\), or reduce a non-empty axis$")
    with pytest.raises(ShapeError, match=want):
        fn(np.ones((2, 0)))
    with pytest.raises(ShapeError, match=want):
        ft.jit(fn)(np.ones((2, 0)))
    with pytest.raises(ShapeError, match=rf"fnp\.{name}: the {name} over axis=\(0, 1\) of an "
                                         rf"array of shape \(0, 3\) is empty \(axis 0"):
        ft.grad(lambda x: fn(x[:0], axis=(0, 1)))(np.ones((2, 3)))
    with pytest.raises(ValueError):  # a ValueError, as NumPy's
        fn(np.ones(0), axis=0)


@pytest.mark.parametrize("name, fn", [("argmax", fnp.argmax), ("argmin", fnp.argmin)])
def test_empty_arg_reduction(name, fn):
    with pytest.raises(ShapeError, match=rf"^fnp\.{name}: the {name} over axis=None of an array "
                                         rf"of shape \(0,\) is empty, so there is no position "
                                         rf"to return; reduce a non-empty axis$"):
        fn(np.ones(0))
    with pytest.raises(ShapeError, match=rf"^fnp\.{name}: the {name} over axis=1 of an array of "
                                         rf"shape \(3, 0\) is empty"):
        ft.jit(lambda x: fn(x, axis=1))(np.ones((3, 0)))
    assert fn(np.ones((0, 3)), axis=1).shape == (0,)


def test_where_without_initial():
    with pytest.raises(ValueError, match=r"^fnp\.max: where= needs initial= \(max has no "
                                         r"identity: a reduction whose positions are all masked "
                                         r"out would have no value\); pass the value for that "
                                         r"case, e.g. initial=-np\.inf$"):
        fnp.max(np.ones(3), where=np.array([True, False, True]))
    with pytest.raises(ValueError, match=r"fnp\.min: where= needs initial=.*initial=np\.inf$"):
        ft.jit(lambda x: fnp.min(x, where=x > 0))(np.ones(3))


def test_bad_where_and_initial():
    with pytest.raises(ShapeError, match=r"^fnp\.max: where of shape \(3, 2\) does not "
                                         r"broadcast to the array's shape \(2, 3\)"):
        fnp.max(np.ones((2, 3)), where=np.ones((3, 2), bool), initial=0)
    with pytest.raises(DTypeError, match=r"^fnp\.min: where must be a bool array \(True keeps a "
                                         r"position\), got dtype float64"):
        fnp.min(np.ones(3), where=np.ones(3), initial=0)
    with pytest.raises(ShapeError, match=r"^fnp\.max: initial must be a scalar, got an array of "
                                         r"shape \(2,\)"):
        fnp.max(np.ones(3), initial=np.ones(2))
    with pytest.raises(OverflowError, match=r"^fnp\.max: initial=300 cannot be converted to the "
                                            r"array's dtype int8"):
        fnp.max(np.ones(3, np.int8), initial=300)
