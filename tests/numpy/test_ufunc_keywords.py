"""Every ``functrans.numpy`` function named after a NumPy ufunc takes its
``out`` (by keyword, or after the inputs) and ``where``, including those
written from other functions (``fmod``, ``hypot``, ``isnan``, ``power`` ...)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

UFUNCS = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc) and hasattr(fnp, n)
                and getattr(np, n).nout == 1 and not getattr(np, n).signature)
X = np.linspace(0.1, 0.9, 4)
WHERE = X > 0.3


@pytest.mark.parametrize("name", UFUNCS)
def test_out_and_where_are_numpys(name):
    ufunc, ours = getattr(np, name), getattr(fnp, name)
    args = (X,) * ufunc.nin
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = ufunc(*args)
        except TypeError:
            pytest.skip(f"NumPy's {name} takes no float64 operands")
        for where in (True, WHERE):
            expected = np.full_like(want, 7)
            ufunc(*args, out=expected, where=where)
            by_keyword = ft.jit(lambda o, *a, where=where: ours(*a, out=o, where=where))
            np.testing.assert_array_equal(by_keyword(np.full_like(want, 7), *args), expected)
            eager = np.full_like(want, 7)
            assert ours(*args, out=eager, where=where) is eager
            np.testing.assert_array_equal(eager, expected)
        by_position = ft.jit(lambda o, *a: ours(*a, o))
        np.testing.assert_array_equal(by_position(np.full_like(want, 7), *args), want)


def test_out_given_twice_is_refused_as_in_numpy():
    o = np.zeros(4)
    with pytest.raises(TypeError):
        np.fmod(X, 0.3, o, out=o)
    with pytest.raises(TypeError, match="fmod: takes 2 input.s. and one out, got 3 positional"):
        fnp.fmod(X, 0.3, o, out=o)
