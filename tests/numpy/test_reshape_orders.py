"""``reshape``, ``ravel`` and ``flatten`` in Fortran order and in the order of
memory ('A', 'K') on traced arrays (``functrans/numpy/_shape.py`` for the
values, ``functrans/numpy/_inplace.py`` for NumPy's view-or-copy answer,
which depends on the array's layout).  NumPy is the oracle: each program
runs on NumPy arrays laid out in C order, in Fortran order, transposed and
sliced, and under ``jit``, an eager gradient and ``vmap``; an update after
the reshape shows whether the result is a view, and where functrans cannot
know the layout the answer is a refusal, never a guess."""

import numpy as np
import pytest

import functrans as ft
from functrans.errors import MemoryLayoutError
from functrans.numpy._inplace import InPlaceUpdateError
from functrans.testing import check_grads

pytestmark = pytest.mark.filterwarnings("ignore:.*updates an input of the traced function")

RNG = np.random.default_rng(11)
X3 = RNG.standard_normal((2, 3, 4))

#: The layouts an argument comes in: C, Fortran, axes permuted, and a slice
#: with a step (dense in no order).
LAYOUTS = {
    "C": lambda x: np.ascontiguousarray(x),
    "F": lambda x: np.asfortranarray(x),
    "permuted": lambda x: np.ascontiguousarray(np.transpose(x, (1, 0, 2))).transpose(1, 0, 2),
    "strided": lambda x: np.repeat(x, 2, axis=-1)[..., ::2],
}

#: What functrans cannot know: the layout of a slice with a step.
UNKNOWN = (InPlaceUpdateError, MemoryLayoutError)


def same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


def reshaped(order):
    def reshape_then_update(x):
        y = x * 1.0
        r = y.reshape((4, -1), order=order)
        y += 1.0
        return r
    return reshape_then_update


def raveled(order):
    def ravel_then_update(x):
        y = x * 1.0
        r = np.ravel(y, order)
        y += 1.0
        return r
    return ravel_then_update


def raveled_view(order):
    def ravel_a_view_then_update(x):
        y = x * 1.0
        v = y.transpose(2, 0, 1)[1:]
        r = v.ravel(order=order)
        y[0] -= 5.0
        return r
    return ravel_a_view_then_update


def written_through(order):
    def write_through_the_reshape(x):
        y = x * 1.0
        r = y.reshape(6, 4, order=order)
        r[1:3] *= -2.0
        return y
    return write_through_the_reshape


PROGRAMS = {
    **{f"reshape {o}": reshaped(o) for o in "CFA"},
    **{f"ravel {o}": raveled(o) for o in "CFAK"},
    **{f"ravel a view {o}": raveled_view(o) for o in "CFAK"},
    **{f"write through reshape {o}": written_through(o) for o in "CFA"},
}


def _numpy(f, x):
    return f(x.copy(order="K"))


def _eager(f, x):
    """The value seen by an eager gradient (its tracers carry the argument's
    layout), taken from the gradient of a weighted sum."""
    want = f(x.copy(order="K"))
    weights = np.arange(want.size, dtype=float).reshape(want.shape)
    value, grad = ft.value_and_grad(lambda x: np.sum(f(x) * weights))(x)
    assert grad.shape == x.shape
    return value, np.sum(want * weights)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_view_or_copy_as_numpy_decides_it(name, layout):
    f, x = PROGRAMS[name], LAYOUTS[layout](X3)
    want = _numpy(f, x)
    for transform in (ft.jit(f), lambda x: _eager(f, x)):
        try:
            got = transform(x)
        except UNKNOWN as error:
            assert layout == "strided", f"{name}, {layout}: {error}"
            continue
        if isinstance(got, tuple):
            np.testing.assert_allclose(*got, rtol=1e-13)
        else:
            same(got, want)
    # each member is laid out as NumPy's loop gives it: x[i] of a C or F batch
    for xs in (np.stack([x, -2.0 * x]), np.asfortranarray(np.stack([x, -2.0 * x]))):
        same(ft.vmap(f)(xs), np.stack([f(r) for r in xs]))


@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (0, 3), (1, 4), (2, 3, 4)])
def test_values_match_numpy_over_dtypes_and_shapes(dtype, shape):
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    if dtype == np.float64 and x.size:
        x.flat[0] = np.nan
    for layout in ("C", "F", "permuted"):
        a = LAYOUTS[layout](x) if x.ndim == 3 else (np.asfortranarray(x) if layout == "F"
                                                   else x)
        for order in "CFAK":
            reads = [lambda a, o=order: np.ravel(a, o), lambda a, o=order: a.flatten(o),
                     lambda a, o=order: a.ravel(o)]
            if order != "K":
                new = shape[::-1] if x.ndim != 1 else (1,) + shape
                reads += [lambda a, o=order, s=new: a.reshape(s, order=o),
                          lambda a, o=order: np.reshape(a, -1, order=o)]
            for read in reads:
                same(ft.jit(read)(a), read(a))


def test_fortran_copies_are_laid_out_in_fortran_order():
    def f(x):
        y = x * 1.0
        r = y.reshape(6, 4, order="F")   # a copy in NumPy, Fortran-ordered
        c = r.reshape(-1)                # so this is a copy of it
        v = r.ravel(order="F")           # and this a view of it
        r += 1.0
        return c, v

    for got, want in zip(ft.jit(f)(X3), f(X3.copy())):
        same(got, want)


def test_derivatives_and_batching():
    check_grads(lambda x: np.reshape(x, (4, 6), order="F") ** 2, (X3,), order=2,
                modes=("fwd", "rev"))
    check_grads(lambda x: np.ravel(np.sin(x.transpose(2, 0, 1)), "K"), (X3,), order=2,
                modes=("fwd", "rev"))
    check_grads(written_through("F"), (X3,), order=1)
    f = lambda x: np.sin(x).T.ravel("K") * x.reshape(-1, order="A")  # noqa: E731
    xs = np.stack([X3, X3 * 0.5])
    same(ft.vmap(f)(xs), np.stack([f(r) for r in xs]))


def test_errors_are_numpys():
    def call(order, how):
        def f(x):
            return how(x * 1.0, order)
        return lambda: ft.jit(f)(X3)

    with pytest.raises(ValueError, match=r"^reshape: order 'K' is not permitted for "
                                         r"reshaping, as NumPy says; give order 'C', 'F' or 'A'"):
        call("K", lambda x, o: x.reshape(-1, order=o))()
    with pytest.raises(ValueError, match=r"^ravel: order must be one of 'C', 'F', 'A', or 'K' "
                                         r"\(got 'Q'\), as NumPy says"):
        call("Q", np.ravel)()
    with pytest.raises(ValueError, match=r"^flatten: order must be one of"):
        call("Q", lambda x, o: x.flatten(o))()
    with pytest.raises(TypeError, match=r"^reshape: order must be str, not int, as NumPy says"):
        call(1, lambda x, o: np.reshape(x, -1, order=o))()
    with pytest.raises(MemoryLayoutError, match=(
            r"^<lambda>: ravel\(\.\.\., order='K'\) \(at .*test_reshape_orders\.py:\d+\) reads "
            r"the f64\[2,3,3\] array in the order NumPy lays it out in memory, which functrans "
            r"does not know here .*\. Give order='C' or order='F', or \.copy\(\) the array "
            r"first \(C order\)$")):
        # a product's layout is not followed
        ft.grad(lambda x: np.sum(np.ravel(x @ x.mT, "K")))(X3)
    for no_copy in (lambda x: (x * 1.0).T.reshape(-1, copy=False),
                    lambda x: np.reshape(x * 1.0, -1, order="F", copy=False)):
        with pytest.raises(ValueError, match="Unable to avoid creating a copy while reshaping"):
            ft.jit(no_copy)(X3)
    same(ft.jit(lambda x: (x * 1.0).T.reshape(-1, order="F", copy=False))(X3),
         X3.T.reshape(-1, order="F", copy=False))
    # NumPy's lower case and None are read as NumPy reads them
    same(ft.jit(lambda x: x.reshape(6, 4, order="f"))(X3), X3.reshape(6, 4, order="F"))
    same(ft.jit(lambda x: np.ravel(x, None))(X3), X3.ravel())
