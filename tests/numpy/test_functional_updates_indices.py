"""fnp.at with index arrays traced under jit: NumPy's rules (negative
indices from the end, repeated indices accumulating as ufunc.at does, out of
bounds an IndexError), the same as for concrete indices."""

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


@pytest.mark.parametrize("mode", sorted(UFUNCS))
def test_traced_repeated_and_negative_indices_accumulate_as_ufunc_at(mode):
    x = np.array([1.0, 5.0, -3.0, 2.0])
    idx = np.array([0, 0, -2, 2, -2, 3])
    v = np.array([1.0, 2.0, 3.0, -4.0, 10.0, -0.0])
    want = x.copy()
    UFUNCS[mode].at(want, idx, v)
    got = ft.jit(lambda x, i, v: getattr(fnp.at(x)[i], mode)(v))(x, idx, v)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(getattr(fnp.at(x)[idx], mode)(v), want)


def test_traced_set_keeps_the_last_write():
    got = ft.jit(lambda x, i, v: fnp.at(x)[i].set(v))(np.zeros(3), np.array([1, 1, -1, 2]),
                                                      np.array([5.0, 6.0, 7.0, 8.0]))
    np.testing.assert_array_equal(got, [0.0, 6.0, 8.0])


@pytest.mark.parametrize("mode", ["set", "add", "get"])
@pytest.mark.parametrize("bad", [3, -4])
def test_traced_out_of_bounds_indices_raise_as_numpy(mode, bad):
    def f(x, i):
        ref = fnp.at(x)[i]
        return ref.get() if mode == "get" else getattr(ref, mode)(1.0)

    with pytest.raises(IndexError, match=rf"index {bad} is out of bounds for axis 0 with size 3"):
        ft.jit(f)(np.zeros(3), np.array([0, bad]))
    with pytest.raises(IndexError, match=rf"index {bad} is out of bounds for axis 0 with size 3"):
        np.zeros(3)[np.array([0, bad])]  # the NumPy behaviour the message follows
