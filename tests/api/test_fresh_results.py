"""Results of the transforms outside jit never are the caller's arrays (an
argument, a tangent, a cotangent, a captured constant), even where the
passes reduce the program to the identity: writing into one must not change
the other, as with eager NumPy.  jit's own rule is tested in
test_jit_semantics.py."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft

A = np.array([1.0, 2.0, 3.0])
Y = np.array([4.0, 5.0, 6.0])

CALLS = {
    "vmap": lambda a, y: [ft.vmap(lambda x: x * 1.0)(a)],
    "vmap of a constant": lambda a, y: [ft.vmap(lambda x: y, out_axes=None)(a)],
    "jvp": lambda a, y: list(ft.jvp(lambda x: x * 1.0, (a,), (y,))),
    "linearize": lambda a, y: [ft.linearize(lambda x: x * 1.0, a)[0],
                               ft.linearize(lambda x: x * 1.0, a)[1](y)],
    "vjp": lambda a, y: [ft.vjp(lambda x: x * 1.0, a)[0],
                         ft.vjp(lambda x: x * 1.0, a)[1](y)[0]],
    "grad of a product with a constant": lambda a, y: [ft.grad(lambda x: (x * y).sum())(a)],
    "grad's aux": lambda a, y: [ft.grad(lambda x: (x.sum(), x * 1.0), has_aux=True)(a)[1]],
    "vjp's aux": lambda a, y: [ft.vjp(lambda x: (x, x * 1.0), a, has_aux=True)[2]],
    "jacrev's aux": lambda a, y: [ft.jacrev(lambda x: (x, x * 1.0), has_aux=True)(a)[1]],
    "jacfwd's aux": lambda a, y: [ft.jacfwd(lambda x: (x, x * 1.0), has_aux=True)(a)[1]],
}


@pytest.mark.parametrize("transform", ["vjp", "linearize"])
def test_writing_into_the_output_leaves_the_derivative_alone(transform):
    # exp's output is also the residual its derivative reads.
    a = A.copy()
    if transform == "vjp":
        out, vjp_fn = ft.vjp(np.exp, a)
        apply = lambda: vjp_fn(np.ones(3))[0]  # noqa: E731
    else:
        out, f_jvp = ft.linearize(np.exp, a)
        apply = lambda: f_jvp(np.ones(3))  # noqa: E731
    want = apply().copy()
    out[:] = 0.0
    np.testing.assert_array_equal(apply(), want)


@pytest.mark.parametrize("name", list(CALLS))
def test_results_are_not_the_callers_arrays(name):
    a, y = A.copy(), Y.copy()
    results = CALLS[name](a, y)
    for r in results:
        assert r is not a and r is not y
        assert not np.shares_memory(r, a) and not np.shares_memory(r, y)
    before = [r.copy() for r in results]
    a[:] = -1.0
    y[:] = -1.0
    for r, b in zip(results, before):
        np.testing.assert_array_equal(r, b)


def test_the_linear_maps_handed_back_keep_their_inputs():
    """vjp_fn and f_jvp read residuals later: writing into the caller's array
    in between must not change what they compute."""
    x = np.array([1.0, 2.0, 3.0])
    _, vjp_fn = ft.vjp(lambda x: x * x, x)
    _, f_jvp = ft.linearize(lambda x: x * x, x)
    x[:] = 0.0
    np.testing.assert_array_equal(vjp_fn(np.ones(3))[0], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(f_jvp(np.ones(3)), [2.0, 4.0, 6.0])


def _long(x, y):
    """A straight-line program long enough to be built over several calls."""
    for _ in range(300):
        x = x * 1.0001
    return x


@pytest.mark.parametrize("long", [False, True])
def test_eager_grads_are_new_arrays_on_every_call(long):
    """The backward program at the cotangent 1 reduces ``(2 * x).sum()``'s
    gradient to a constant and ``(x * y).sum()``'s to ``y``: every call hands
    out a new array, never the caller's, a constant a later call hands out
    again, nor one another result holds."""
    prep = _long if long else (lambda x, y: x)
    a, y = A.copy(), Y.copy()
    calls = {
        "constant": lambda: [ft.grad(lambda x: (2 * prep(x, y)).sum())(a)],
        "closure": lambda: [ft.grad(lambda x: (prep(x, y) * y).sum())(a)],
        "view of the closure": lambda: [ft.grad(lambda x: (prep(x, y) * y[::-1]).sum())(a)],
        "both arguments": lambda: list(ft.grad(lambda x, z: (prep(x, y) * z).sum(),
                                               argnums=(0, 1))(a, a)),
        "aux": lambda: list(ft.value_and_grad(lambda x: ((prep(x, y) * y).sum(), (x, y)),
                                              has_aux=True)(a)[0][1]),
    }
    for name, call in calls.items():
        first = [r.copy() for r in call()]
        for _ in range(8):
            results = call()
            for r, want in zip(results, first):
                np.testing.assert_array_equal(r, want, err_msg=name)
                assert not np.shares_memory(r, a) and not np.shares_memory(r, y), name
            for i, r in enumerate(results):
                assert not any(np.shares_memory(r, s) for s in results[i + 1:]), name
                r[...] = 99  # a later call must not see this
    np.testing.assert_array_equal(a, A)
    np.testing.assert_array_equal(y, Y)
