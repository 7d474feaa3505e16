"""Conversions of traced values into constants (DESIGN.md, "Semantics that
must never be silently wrong").

Outside ``jit`` a transform may retrace with value-carrying tracers so that
Python control flow works.  Conversions whose result has no derivative may
use the value (``bool()``, ``int()``, integer indices, comparisons); the ones
that would turn a differentiated value into a constant (``np.asarray``,
``float()``, ``complex()``, ``math.exp`` and the like, writes into NumPy buffers) raise a
``TracerConversionError`` that names the user's line and the fix.  Under
``jit`` and ``vmap``, where the value is not known, the same calls raise a
``ConcretizationError`` with the same advice.
"""

from __future__ import annotations

import cmath
import math

import numpy as np
import pytest
import scipy.optimize

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.errors import ConcretizationError, TracerConversionError

X = np.array([0.5, -1.2, 2.0])


def _write_into_buffer(x):
    g = np.zeros(3)
    g[:] = x
    return np.sum(g**2)


#: name: (function of X, the conversion the message names, advice it gives)
LOSSY = {
    "np.asarray": (lambda x: np.sum(np.asarray(x) ** 2), "np.asarray()", "functrans.numpy.asarray"),
    "np.array": (lambda x: np.sum(np.array(x) ** 2), "np.asarray()", "functrans.numpy.asarray"),
    "float": (lambda x: float(x[0]) ** 2 + np.sum(x), "float()", "drop the float()"),
    "math.exp": (lambda x: math.exp(x[0]), "float()", "instead of math"),
    "complex": (lambda x: complex(x[0]).real + np.sum(x), "complex()", "instead of cmath"),
    "cmath.exp": (lambda x: cmath.exp(x[0]).real, "complex()", "instead of cmath"),
    "buffer write": (_write_into_buffer, "np.asarray()", "functrans.numpy.at(buf)[i].set(x)"),
    "scipy rosen": (scipy.optimize.rosen, "np.asarray()", "functrans.numpy.asarray"),
}


@pytest.mark.parametrize("name", list(LOSSY))
@pytest.mark.parametrize("transform", [ft.grad, ft.hessian, ft.jacfwd, ft.jacrev],
                         ids=lambda t: t.__name__)
def test_a_conversion_that_would_drop_the_derivative_raises(name, transform):
    f, what, advice = LOSSY[name]
    with pytest.raises(TracerConversionError) as info:
        transform(f)(X)
    message = str(info.value)
    assert f"{what} would turn a traced" in message
    assert "derivative would be silently lost" in message
    assert advice in message
    if name != "scipy rosen":  # rosen converts inside SciPy: its line is named
        assert "test_conversions.py:" in message


def test_vjp_jvp_and_value_and_grad_refuse_the_conversion_too():
    f = LOSSY["np.asarray"][0]
    for call in (lambda: ft.vjp(f, X), lambda: ft.jvp(f, (X,), (X,)),
                 lambda: ft.value_and_grad(f)(X), lambda: ft.linearize(f, X),
                 lambda: ft.hvp(f, (X,), (X,))):
        with pytest.raises(TracerConversionError, match="derivative would be silently lost"):
            call()


def test_the_conversion_is_refused_after_a_python_branch_forced_values():
    def f(x):
        if x[0] > 0:  # concrete retrace: values are known now
            return float(x[1]) * np.sum(x)
        return np.sum(x)

    with pytest.raises(TracerConversionError, match=r"float\(\) would turn"):
        ft.grad(f)(X)


def test_writing_one_element_into_a_buffer_chains_the_explanation():
    """NumPy turns the refusal of ``g[0] = x[0]`` into its own ValueError; the
    chained error still says what happened."""
    def f(x):
        g = np.zeros(3)
        g[0] = x[0]
        return np.sum(g**2)

    with pytest.raises((TracerConversionError, ValueError)) as info:
        ft.grad(f)(X)
    chain, e = [], info.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__ or e.__context__
    assert any("derivative would be silently lost" in m and "functrans.numpy.at(buf)" in m
               for m in chain), chain


@pytest.mark.parametrize("name", ["np.asarray", "float", "math.exp", "buffer write"])
def test_under_jit_and_vmap_the_same_calls_give_the_conversion_advice(name):
    f, what, advice = LOSSY[name]
    for call in (lambda: ft.jit(f)(X), lambda: ft.jit(ft.grad(f))(X),
                 lambda: ft.vmap(f)(np.stack([X, X]))):
        with pytest.raises(ConcretizationError) as info:
            call()
        message = str(info.value)
        assert advice in message
        assert "lax.cond" not in message


def test_functrans_numpy_asarray_keeps_the_derivative():
    np.testing.assert_allclose(ft.grad(lambda x: fnp.sum(fnp.asarray(x) ** 2))(X), 2 * X)
    np.testing.assert_allclose(ft.hessian(lambda x: fnp.sum(fnp.asarray(x) ** 3))(X),
                               np.diag(6 * X))


def test_conversions_without_a_derivative_keep_working():
    # Control flow and integer values: no derivative to lose.
    np.testing.assert_allclose(
        ft.grad(lambda x: np.sum(x) * (1.0 if x[0] > 0 else -1.0))(X), np.ones(3))
    np.testing.assert_allclose(
        ft.grad(lambda x: np.sum(x) * float(np.sum(x > 0)))(X), 2 * np.ones(3))
    np.testing.assert_allclose(
        ft.grad(lambda x: np.sum(x[: int(np.sum(x > 0))]))(X), [1.0, 1.0, 0.0])
    # The value without its derivative, asked for explicitly.
    np.testing.assert_allclose(
        ft.grad(lambda x: float(lax.stop_gradient(x[0])) * np.sum(x))(X), np.full(3, 0.5))
    # An argument that is not differentiated is a plain array.
    np.testing.assert_allclose(
        ft.grad(lambda x, y: np.sum(x) * float(y[0]))(X, X), np.full(3, 0.5))


def test_unmapped_vmap_arguments_convert_and_mapped_ones_do_not():
    w = np.array([1.0, 2.0])
    out = ft.vmap(lambda x, w: x * float(np.asarray(w).sum()), in_axes=(0, None))(X, w)
    np.testing.assert_allclose(out, 3 * X)
    # ... unless the unmapped argument carries a derivative of an enclosing grad.
    with pytest.raises(TracerConversionError, match="derivative would be silently lost"):
        ft.grad(lambda w: np.sum(ft.vmap(lambda x: x * float(w[0]))(X)))(w)


def test_a_float_used_as_an_index_is_an_error_as_in_numpy():
    table = [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="only integer values can be indices"):
        ft.grad(lambda x: table[x] * x)(1.0)
    with pytest.raises(TracerConversionError, match="functrans.numpy.take"):
        ft.grad(lambda x: np.arange(3.0)[x] * x)(1.0)
    # An integer index keeps working on the concrete path.
    np.testing.assert_allclose(
        ft.grad(lambda x: x * np.arange(3.0)[int(x)])(1.0), 1.0)


def test_item_and_tolist_are_conversions_too():
    for f, what in ((lambda x: x[0].item() * np.sum(x), "item()"),
                    (lambda x: sum(x.tolist()), "tolist()")):
        with pytest.raises(TracerConversionError, match=rf"{what[:-2]}\(\) would turn"):
            ft.grad(f)(X)
    # Integer values carry no derivative: their item() works on the concrete path.
    np.testing.assert_allclose(ft.grad(lambda x: np.sum(x) * np.sum(x > 0).item())(X),
                               np.full(3, 2.0))
    with pytest.raises(ConcretizationError, match="stop_gradient"):
        ft.jit(lambda x: x.tolist())(X)


def test_round_is_piecewise_constant_and_copies_are_the_value_itself():
    import copy

    np.testing.assert_allclose(ft.grad(lambda x: round(x[0], 1) * np.sum(x))(X),
                               np.full(3, 0.5))
    np.testing.assert_allclose(ft.grad(lambda x: np.sum(copy.deepcopy(x) ** 2))(X), 2 * X)
    np.testing.assert_allclose(ft.jit(lambda x: copy.copy(x) * 2.0)(X), 2 * X)


def test_values_of_zero_derivative_primitives_convert():
    """floor, sign, round and stop_gradient have zero derivatives: converting
    their values loses nothing, so it is not refused."""
    for f in (fnp.floor, fnp.sign, fnp.round, lax.stop_gradient):
        np.testing.assert_allclose(ft.grad(lambda x, f=f: np.sum(x) * float(f(x[0])))(X),
                                   np.full(3, float(f(X[0]))))


#: Integer conversions of a traced float: the result jumps between constants,
#: so its derivative is zero almost everywhere and nothing is lost.
TABLE = np.arange(5.0) * 10
INTEGER_CONVERSIONS = {
    "int": lambda v: int(v),
    "math.floor": math.floor,
    "math.ceil": lambda v: math.ceil(v) - 1,
    "math.trunc": math.trunc,
    "np.int64": np.int64,
    "np.asarray(int)": lambda v: np.asarray(v, dtype=np.intp),
}


def _lookup_loss(convert):
    def loss(x):
        i = convert(x[0] * 2.0)  # an index computed from the data
        return np.sum(x**2) * TABLE[i]

    return loss


@pytest.mark.parametrize("name", list(INTEGER_CONVERSIONS))
def test_an_integer_computed_from_data_indexes_under_every_value_carrying_transform(name):
    loss = _lookup_loss(INTEGER_CONVERSIONS[name])
    x = np.array([1.2, 0.5, -1.0])  # x[0] * 2 = 2.4: floor 2, ceil - 1 = 2, trunc 2
    np.testing.assert_allclose(loss(x), np.sum(x**2) * 20.0)
    np.testing.assert_allclose(ft.grad(loss)(x), 40.0 * x)
    np.testing.assert_allclose(ft.hessian(loss)(x), 40.0 * np.eye(3))
    np.testing.assert_allclose(ft.jacrev(loss)(x), ft.jacfwd(loss)(x))
    # The value-carrying trace is not cached: other data, another index.
    np.testing.assert_allclose(ft.grad(loss)(x * 0.5), 20.0 * x * 0.5)
    # Inside vmap, of an unmapped argument whose value is known (under grad).
    convert = INTEGER_CONVERSIONS[name]
    w = np.array([1.2, 0.5])

    def batched(w):
        def one(v, w):
            return v * w[1] * TABLE[convert(w[0] * 2.0)]

        return np.sum(ft.vmap(one, in_axes=(0, None))(x, w))

    np.testing.assert_allclose(batched(w), np.sum(x) * 0.5 * 20.0)
    np.testing.assert_allclose(ft.grad(batched)(w), [0.0, np.sum(x) * 20.0])


@pytest.mark.parametrize("name", list(INTEGER_CONVERSIONS))
def test_integer_conversions_under_jit_and_of_mapped_values_are_errors(name):
    loss = _lookup_loss(INTEGER_CONVERSIONS[name])
    x = np.array([1.2, 0.5, -1.0])
    for call in (lambda: ft.jit(loss)(x), lambda: ft.jit(ft.grad(loss))(x),
                 lambda: ft.vmap(loss)(np.stack([x, x]))):
        with pytest.raises(ConcretizationError) as info:
            call()
        assert "functrans.numpy.take" in str(info.value)


def test_float_of_a_differentiated_value_stays_refused_beside_int():
    with pytest.raises(TracerConversionError, match=r"float\(\) would turn"):
        ft.grad(lambda x: x * TABLE[int(x)] * float(x))(1.5)
    with pytest.raises(TracerConversionError, match=r"np.asarray\(\) would turn"):
        ft.grad(lambda x: x * np.asarray(x, dtype=np.float32))(1.5)
