"""``functrans.make_jaxpr``: pytrees in and out, static arguments,
``ShapeDtypeStruct`` arguments and the errors for arguments that are not arrays."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from functrans.primitives.elementwise import add, mul, sin

import functrans as ft
from functrans.backends import numpy as numpy_backend
from functrans.core import ClosedJaxpr, ShapedArray, ShapeDtypeStruct, check_jaxpr
from functrans.errors import ShapeError

Params = collections.namedtuple("Params", "w b")


def _names(closed):
    return [e.primitive.name for e in closed.eqns]


def test_make_jaxpr_returns_a_printable_checked_closed_jaxpr():
    closed = ft.make_jaxpr(lambda x: mul(sin(x), 2.0))(np.ones(3))
    assert isinstance(closed, ClosedJaxpr)
    check_jaxpr(closed)
    assert str(closed) == (
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = sin a\n"
        "    c:f64[3] = mul b 2.0\n"
        "  in (c,) }"
    )
    assert closed.to_dot().startswith("digraph jaxpr {")


def test_pytrees_of_arguments_flatten_in_order():
    def loss(params, batch):
        return add(mul(params.w, batch["x"]), params.b)

    params = Params(w=np.ones((2, 3)), b=np.zeros(3, np.float32))
    batch = {"y": np.ones(2), "x": np.ones((2, 3))}
    closed = ft.make_jaxpr(loss)(params, batch)
    # Leaves: params.w, params.b, then the batch in sorted key order (x, y).
    assert [a.str_short() for a in closed.in_avals] == ["f64[2,3]", "f32[3]", "f64[2,3]",
                                                        "f64[2]"]
    assert _names(closed) == ["mul", "add"]
    w, b, x = np.full((2, 3), 2.0), np.arange(3.0, dtype=np.float32), np.ones((2, 3))
    (out,) = numpy_backend.eval_jaxpr(closed, w, b, x, np.ones(2))
    np.testing.assert_array_equal(out, w * x + b)


def test_pytrees_of_outputs_flatten_in_order():
    def f(x):
        return {"b": [sin(x), None], "a": (x, 2.0)}

    closed = ft.make_jaxpr(f)(np.ones(2))
    # Outputs: a[0], a[1], b[0] (None holds no leaf).
    out = closed.jaxpr.outvars
    assert len(out) == 3
    assert out[0] is closed.jaxpr.invars[0]
    assert out[1].val == 2.0
    assert out[2] is closed.eqns[0].outputs[0]


@pytest.mark.parametrize("static_argnums", [0, (0,), -2, (0, -2)])
def test_static_argnums_are_python_values_at_trace_time(static_argnums):
    def power(n, x):
        for _ in range(n):  # n is a plain int here
            x = mul(x, x)
        return x

    closed = ft.make_jaxpr(power, static_argnums=static_argnums)(3, np.ones(2))
    assert _names(closed) == ["mul"] * 3
    assert len(closed.in_avals) == 1


def test_static_array_arguments_become_constants():
    c = np.arange(3.0)
    closed = ft.make_jaxpr(lambda x, c: add(x, c), static_argnums=1)(np.ones(3), c)
    assert closed.consts == [c] and len(closed.in_avals) == 1


@pytest.mark.parametrize("static_argnums", [2, -3, (0, 5)])
def test_static_argnums_out_of_range(static_argnums):
    def f(x, y):
        return x

    with pytest.raises(ValueError, match=r"make_jaxpr\(f\): argnums/static_argnums value -?\d "
                                         r"is out of range for a call with 2 positional "
                                         r"arguments"):
        ft.make_jaxpr(f, static_argnums=static_argnums)(np.ones(1), np.ones(1))


def test_shape_dtype_struct_arguments():
    def f(x, y):
        return add(x, y["a"])

    closed = ft.make_jaxpr(f)(ShapeDtypeStruct((2, 3), np.float32),
                              {"a": ShapeDtypeStruct((3,), "int32")})
    assert closed.in_avals == [ShapedArray((2, 3), np.float32), ShapedArray((3,), np.int32)]
    assert closed.out_avals == [ShapedArray((2, 3), np.float64)]
    assert repr(ShapeDtypeStruct([2, 3], "float32")) == \
        "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"


def test_python_scalar_arguments_are_weak():
    closed = ft.make_jaxpr(lambda x, s: mul(x, s))(np.ones(2, np.float32), 2.0)
    assert closed.in_avals[1].weak_type and closed.out_avals[0].dtype == np.float32


def test_keyword_arguments_are_passed_through():
    closed = ft.make_jaxpr(lambda x, *, scale: mul(x, scale))(np.ones(2), scale=3.0)
    assert str(closed.eqns[0].inputs[1].val) == "3.0"


def test_a_string_argument_names_its_path_and_suggests_static_argnums():
    def f(x, options):
        return x

    with pytest.raises(TypeError) as info:
        ft.make_jaxpr(f)(np.ones(2), {"mode": "fast"})
    assert str(info.value) == (
        "make_jaxpr(f): argument [1]['mode'] is a str, which is not an array; pass arrays "
        "or Python scalars, or mark the argument static (static_argnums)"
    )
    # Marked static, it works.
    ft.make_jaxpr(f, static_argnums=1)(np.ones(2), {"mode": "fast"})


def test_argument_paths_count_static_arguments_too():
    def f(n, x, d):
        return x

    with pytest.raises(TypeError, match=r"argument \[2\]\['w'\]\[1\] is a str"):
        ft.make_jaxpr(f, static_argnums=0)(3, np.ones(2), {"w": [1.0, "abc"]})


def test_a_non_array_output_is_an_error():
    def f(x):
        return (x, "done")

    with pytest.raises(TypeError, match=r"^make_jaxpr\(f\): output\[1\] is a str, which is "
                                        r"not an array"):
        ft.make_jaxpr(f)(np.ones(1))


def test_shape_errors_name_the_function():
    def my_fun(x, y):
        return add(x, y)

    with pytest.raises(ShapeError, match=r"^my_fun: add: shapes f64\[3\] and f64\[4\]"):
        ft.make_jaxpr(my_fun)(np.ones(3), np.ones(4))


def test_jacrev_of_a_float0_output_has_zero_rows():
    """jvp of a function with an integer output returns a float0 tangent for
    it; jacrev of that pair pulls a zero cotangent through it (it raised a
    bare TypeError building the basis)."""
    f = lambda x: (x * 2.0, np.argmax(x))  # noqa: E731
    g = lambda x: ft.jvp(f, (x,), (np.ones(3),))  # noqa: E731
    x = np.arange(3.0)
    (_, _), (tangent, int_tangent) = ft.jacrev(g)(x)
    np.testing.assert_array_equal(tangent, np.zeros((3, 3)))
    np.testing.assert_array_equal(int_tangent, np.zeros(3))
    np.testing.assert_array_equal(ft.jacfwd(g)(x)[0][0], 2.0 * np.eye(3))
