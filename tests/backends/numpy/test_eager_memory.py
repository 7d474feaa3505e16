"""Peak memory of eager ``grad``: the backward pass is handed the forward
pass's residuals (``HostBackend.run_owned``) and frees each at its last
use, so the peak is the residuals plus the backward pass's live values,
not both passes' values at once.  Values stay those of the other paths bit
for bit."""

import contextlib
import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import numpy as host
from functrans.backends.numpy import backend
from functrans.core import ClosedJaxpr, lookup_primitive

N = 1_000_000


def _loss(x):
    return fnp.sum(fnp.sin(x) * x + x**2)


def _peak(fn) -> tuple[float, object]:
    """The peak traced allocation of ``fn()`` beyond what was live before,
    with the scratch pool emptied first (its arrays would otherwise stand in
    for new ones)."""
    host.scratch.clear()
    gc.collect()
    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_repeated_eager_grad_frees_residuals_at_their_last_use():
    # Forward: sin x, cos x and 2x are the residuals (x is the caller's).
    # The backward pass's products are written into the residuals it has
    # read (the forward pass made them): 3 arrays of x's size at the peak.
    # Keeping every residual until the backward pass ends needs 5.
    x = np.linspace(-1.0, 1.0, N)
    g = ft.grad(_loss)
    expected = np.sin(x) + x * np.cos(x) + 2.0 * x
    for call in range(4):  # first meetings, the interpreted run, the compiled one
        peak, out = _peak(lambda: g(x))
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        if call >= 2:
            assert peak <= 3.5 * x.nbytes, (call, peak / x.nbytes)


def test_value_and_grad_keeps_a_value_that_is_also_a_residual():
    # exp's derivative is exp: the value is the very array the backward pass
    # reads, and handing it over must neither free nor change it.
    x = np.linspace(-2.0, 2.0, 1000)
    vg = ft.value_and_grad(lambda x: fnp.sum(fnp.exp(x)), has_aux=False)
    vg_aux = ft.value_and_grad(lambda x: (fnp.sum(fnp.exp(x)), fnp.exp(x)), has_aux=True)
    for _ in range(3):
        value, grad = vg(x)
        assert value == np.sum(np.exp(x)) and np.array_equal(grad, np.exp(x))
        (value, aux), grad = vg_aux(x)
        assert np.array_equal(aux, np.exp(x)) and np.array_equal(grad, np.exp(x))
        aux[:] = 0.0  # the caller's from here on
        assert np.array_equal(vg_aux(x)[1], np.exp(x))


def test_vjp_residuals_survive_several_cotangents():
    x = np.linspace(-1.0, 1.0, 7)
    out, vjp_fn = ft.vjp(lambda x: fnp.sin(x) * x, x)
    ct = np.linspace(0.5, 1.5, 7)
    first = vjp_fn(ct)[0]
    for _ in range(3):
        assert np.array_equal(vjp_fn(ct)[0], first)
    assert np.array_equal(first, ct * (np.cos(x) * x + np.sin(x)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_special_values_are_those_of_jit_bit_for_bit(dtype):
    with np.errstate(all="ignore"):
        x = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e308, -2.5, 5e-324], dtype)
        x = x + 1j * x[::-1] if dtype == np.complex128 else x
    if dtype == np.complex128:
        loss = lambda x: fnp.sum(fnp.abs(fnp.sin(x) * x + x * x) ** 2)  # noqa: E731
    else:
        loss = lambda x: fnp.sum(fnp.sin(x) * x + x**2 + fnp.maximum(x, -0.0))  # noqa: E731
    g, vg = ft.grad(loss), ft.value_and_grad(loss)
    jitted = ft.jit(ft.value_and_grad(loss))
    with np.errstate(all="ignore"):
        want_value, want_grad = jitted(x)
        for _ in range(4):  # every path a call can take: first meetings, interpreted, compiled
            assert g(x).tobytes() == want_grad.tobytes()
            value, grad = vg(x)
            assert value.tobytes() == want_value.tobytes()
            assert grad.tobytes() == want_grad.tobytes()


def _backward_program() -> tuple[ClosedJaxpr, list]:
    """A program whose inputs die one by one, and arguments for it."""
    jaxpr = ft.make_jaxpr(lambda a, b, c: (a * b + c * -0.0, a - c))(
        np.ones(3), np.ones(3), np.ones(3))
    args = [np.array([1.0, -0.0, np.nan]), np.array([np.inf, 2.0, 3.0]),
            np.array([-1.0, 0.0, 5.0])]
    return jaxpr, args


def test_consuming_runs_empty_the_arguments_and_give_the_same_bits():
    closed, args = _backward_program()
    want = host.compiled(closed).fn(*args)
    for run in (lambda a: host.interpret(closed, a, consume=True),
                host.compiled_consuming(closed).fn):
        given = list(args)
        with np.errstate(all="ignore"):
            got = run(given)
        assert given == []
        assert [x.tobytes() for x in got] == [x.tobytes() for x in want]
    assert "_args.clear()" in host.compiled_consuming(closed).source


def test_run_owned_frees_an_argument_at_its_last_use():
    # b dies at the first equation: the second finds it freed.
    closed = ft.make_jaxpr(lambda a, b: fnp.sin(a * b) * a)(np.ones(3), np.ones(3))
    seen = []
    for _ in range(3):  # interpreted, then compiled
        b = np.full(3, 0.5)
        ref = weakref.ref(b)
        args = [np.full(3, 2.0), b]
        del b
        with _watching(seen, ref):
            out = host.HostBackend().run_owned(closed, args)
        assert seen.pop() is None and args == []
        assert np.array_equal(out[0], np.sin(np.full(3, 1.0)) * 2.0)


@contextlib.contextmanager
def _watching(seen: list, ref):
    """Record, when ``sin`` runs, whether ``ref``'s array is still alive."""
    sin = np.sin

    def watched(*args, **kwargs):
        seen.append(ref())
        return sin(*args, **kwargs)

    prim = lookup_primitive("sin")
    saved = prim.numpy_fn, prim.impl
    prim.numpy_fn = prim.impl = watched
    try:
        yield
    finally:
        prim.numpy_fn, prim.impl = saved
        backend._runner.cache_clear()  # no cached program keeps calling the stand-in
        host.compiled_consuming.cache_clear()


def test_only_the_forward_pass_s_own_arrays_are_written_into():
    x = np.ones((3, 3))

    def views(x):
        y = fnp.sin(x)
        return y, y.T, x, x * 2, fnp.sum(x), fnp.cos(x)[0]

    def twice(x):
        y = fnp.cos(x)
        return y, y, fnp.exp(x)

    # a view of another output, an input, a rank-0 result, a view of a new array
    assert host.owned_outputs(ft.make_jaxpr(views)(x)) == (
        False, False, False, True, False, False)
    assert host.owned_outputs(ft.make_jaxpr(twice)(x)) == (False, False, True)


@pytest.mark.parametrize("loss", [
    lambda x: fnp.sum(fnp.sin(x) * fnp.sin(x).T),  # a residual and a view of it
    lambda x: fnp.sum(fnp.exp(x) * fnp.exp(x)[::-1]),  # cse: one exp, read twice
    lambda x: fnp.sum(fnp.tanh(x) * x) + fnp.sum(fnp.tanh(x) ** 2),
])
def test_gradients_through_shared_residuals_stay_right(loss):
    x = np.linspace(-1.0, 1.0, 16).reshape(4, 4)
    want = ft.jit(ft.grad(loss))(x)
    g = ft.grad(loss)
    for _ in range(4):
        assert g(x).tobytes() == want.tobytes()
