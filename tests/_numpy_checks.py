"""Shared by the tests of the ``functrans.numpy`` modules that compare with
NumPy function by function: fixed random operands, the comparison of a
result with NumPy's (shape, dtype, values), ``check`` (eagerly and under
``jit``) and ``check_vmap`` (against a Python loop)."""

from __future__ import annotations

import warnings

import numpy as np

import functrans as ft
import functrans.numpy as fnp

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 4))
Y = RNG.standard_normal((3, 4))
A3 = RNG.standard_normal((2, 3, 4))
POS = np.abs(X) + 0.5


def same(got, want, exact=False):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact or want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def _eager_and_jit(name, *args, **kwargs):
    """``fnp.<name>`` and ``np.<name>`` on ``args``: eagerly, and under jit
    with the array arguments traced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = getattr(np, name)(*args, **kwargs)
        got = getattr(fnp, name)(*args, **kwargs)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def traced(*xs):
        full = list(args)
        for i, x in zip(arrays, xs):
            full[i] = x
        return getattr(fnp, name)(*full, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jitted = ft.jit(traced)(*(args[i] for i in arrays))
    return want, got, jitted


def check(name, *args, exact=False, **kwargs):
    want, got, jitted = _eager_and_jit(name, *args, **kwargs)
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want) == len(jitted)
        for w, g, j in zip(want, got, jitted):
            same(g, w, exact)
            same(j, w, exact)
    else:
        same(got, want, exact)
        same(jitted, want, exact)


def check_vmap(f, args, axis):
    """``vmap(f)`` over ``axis`` of ``args[0]`` against a Python loop."""
    got = ft.vmap(f, in_axes=axis)(*args)
    want = np.stack([f(np.take(args[0], i, axis)) for i in range(args[0].shape[axis])])
    same(got, want)
