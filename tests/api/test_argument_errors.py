"""Errors for bad transform arguments (argnums, static_argnums, in_axes,
out_axes, axis_size) and for loop bounds and carries: each names the
transform, the user's function, the argument, what was found and the fix."""

import functools

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.errors import AxisError


def f(x):
    return x * 2.0


def g(x, y):
    return fnp.sum(x * y)


# --------------------------------------------------------------------------
# vmap: in_axes, out_axes, axis_size
# --------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["in_axes", "out_axes"])
@pytest.mark.parametrize("bad, fix", [
    (0.5, r"pass an int such as 0 or -1, or None"),
    ("0", r"write 0, not the string '0'"),
    (1.0, r"write 1$"),
    (True, r"a bool is no axis: write 0 or 1"),
    ("x", r"pass an int such as 0 or -1, or None"),
])
def test_vmap_axes_must_be_ints_or_none(what, bad, fix):
    with pytest.raises(TypeError, match=rf"^vmap\(f\): {what} is .* \({type(bad).__name__}\), "
                                        rf"but each {what} entry must be an int axis \(negative "
                                        rf"counts from the end\) or None \(not mapped\); {fix}"):
        ft.vmap(f, **{what: bad})  # refused when the transform is made


def test_vmap_axes_error_gives_the_leaf_path():
    with pytest.raises(TypeError, match=r"vmap\(g\): in_axes\[1\]\['w'\] is 0.5 \(float\)"):
        ft.vmap(g, in_axes=(0, {"w": 0.5}))
    with pytest.raises(TypeError, match=r"vmap\(f\): out_axes\[0\] is '-1' \(str\).*write -1"):
        ft.vmap(f, out_axes=["-1"])


def test_vmap_in_axes_container_for_an_array_argument():
    # Used to fail inside optree ("Cannot flatten leaf-type").
    with pytest.raises(ValueError, match=r"^vmap\(f\): in_axes must be a tree prefix of the "
                                         r"value it maps: at in_axes\[0\] it is a dict with keys "
                                         r"\['w'\], but the value there is a leaf \(ndarray\), "
                                         r"which takes one axis or None"):
        ft.vmap(f, in_axes=({"w": 0},))(np.ones(3))


def test_vmap_axes_that_are_fine():
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(ft.vmap(f, in_axes=np.int64(1))(xs), 2 * xs.T)
    np.testing.assert_array_equal(ft.vmap(f, in_axes=[-1], out_axes=-1)(xs), 2 * xs)
    out = ft.vmap(lambda x, p: g(x, p["w"]), in_axes=(0, {"w": None}))(xs, {"w": np.ones(3)})
    np.testing.assert_array_equal(out, xs.sum(1))
    np.testing.assert_array_equal(
        ft.vmap(lambda p: p["w"], in_axes=({"w": 1},))({"w": xs}), xs.T)


def test_vmap_axis_size_must_be_a_non_negative_int():
    with pytest.raises(ValueError, match=r"^vmap\(f\): axis_size must be non-negative, got -1; "
                                         r"it is the number of members"):
        ft.vmap(f, in_axes=None, axis_size=-1)
    with pytest.raises(TypeError, match=r"^vmap\(f\): axis_size must be an int \(the size of "
                                        r"the mapped axis\) or None, got 2.0 \(float\); pass "
                                        r"axis_size=2$"):
        ft.vmap(f, in_axes=None, axis_size=2.0)
    with pytest.raises(TypeError, match=r"got True \(bool\)"):
        ft.vmap(f, axis_size=True)
    with pytest.raises(ValueError, match=r"vmap\(f\): mapped axes must all have the same size, "
                                         r"but argument\[0\] has size 3 and axis_size=2; map "
                                         r"axes of one size .*, or drop axis_size"):
        ft.vmap(f, axis_size=2)(np.ones(3))
    np.testing.assert_array_equal(ft.vmap(f, in_axes=None, axis_size=np.int64(2))(1.0), [2, 2])
    assert ft.vmap(f, in_axes=None, axis_size=0)(1.0).shape == (0,)


# --------------------------------------------------------------------------
# argnums and static_argnums
# --------------------------------------------------------------------------


_ARGNUMS_TYPE = r"must be an int or a sequence of ints \(argument positions\), "


@pytest.mark.parametrize("make, label, what", [
    (lambda a: ft.grad(g, argnums=a), "grad", "argnums"),
    (lambda a: ft.value_and_grad(g, argnums=a), "grad", "argnums"),
    (lambda a: ft.jacfwd(g, argnums=a), "jacfwd", "argnums"),
    (lambda a: ft.jacrev(g, argnums=a), "jacrev", "argnums"),
    (lambda a: ft.hessian(g, argnums=a), "jacrev", "argnums"),
    (lambda a: ft.jit(g, static_argnums=a), "jit", "static_argnums"),
    (lambda a: ft.make_jaxpr(g, static_argnums=a), "make_jaxpr", "static_argnums"),
])
def test_argnums_must_be_ints(make, label, what):
    fix = rf"; pass {what}=0 for the first argument, or {what}=\(0, 1\) for several$"
    with pytest.raises(TypeError, match=rf"^{label}\(g\): {what} {_ARGNUMS_TYPE}got 0.0 "
                                        rf"\(float\){fix}"):
        make(0.0)
    with pytest.raises(TypeError, match=rf"^{label}\(g\): {what} {_ARGNUMS_TYPE}got 'x' "
                                        rf"\(str\){fix}"):
        make("x")
    with pytest.raises(TypeError, match=rf"got True \(bool\), and a bool is no position{fix}"):
        make(True)
    with pytest.raises(TypeError, match=rf"but {what}\[1\] is '1' \(str\){fix}"):
        make((0, "1"))
    with pytest.raises(TypeError, match=rf"but {what}\[0\] is False \(bool\), and a bool is no "
                                        rf"position"):
        make([False])
    with pytest.raises(TypeError, match=rf"got \{{0\}} \(set\){fix}"):
        make({0})


def test_repeated_argnums_are_refused():
    # They used to give a zero gradient for the first copy.
    with pytest.raises(ValueError, match=r"^grad\(g\): argnums \(0, 0\) names argument 0 more "
                                         r"than once; list each position once$"):
        ft.grad(g, argnums=(0, 0))
    with pytest.raises(ValueError, match=r"^grad\(g\): argnums \(0, -2\) names argument 0 twice: "
                                         r"0 and -2 are the same position in a call with 2 "
                                         r"positional arguments; list each position once$"):
        ft.grad(g, argnums=(0, -2))(1.0, 2.0)
    with pytest.raises(ValueError, match=r"jacrev\(g\): argnums \(1, 1\) names argument 1"):
        ft.jacrev(g, argnums=(1, 1))


def test_repeated_static_argnums_are_one_position():
    closed = ft.make_jaxpr(g, static_argnums=(1, 1))(np.ones(2), 3.0)
    assert len(closed.in_avals) == 1
    assert ft.jit(g, static_argnums=(1, -1))(np.ones(2), 3.0) == 6.0


def test_argnums_out_of_range_says_the_valid_range():
    with pytest.raises(ValueError, match=r"^grad\(g\): argnums/static_argnums value 2 is out of "
                                         r"range for a call with 2 positional arguments; use a "
                                         r"position in \[-2, 2\)$"):
        ft.grad(g, argnums=2)(1.0, 2.0)


def test_numpy_integer_argnums():
    assert ft.grad(g, argnums=np.int64(1))(3.0, 2.0) == 3.0  # one position: not a tuple
    assert ft.grad(g, argnums=[np.int32(1)])(3.0, 2.0) == (3.0,)
    assert ft.jit(g, static_argnums=np.int64(1))(np.ones(2), 3.0) == 6.0


def test_static_argnames_must_be_strs():
    with pytest.raises(TypeError, match=r"^jit\(g\): static_argnames must be a str or a sequence "
                                        r"of strs \(keyword argument names\), got 3 \(int\); "
                                        r"pass static_argnames='name' or "
                                        r"static_argnames=\('a', 'b'\)$"):
        ft.jit(g, static_argnames=3)
    with pytest.raises(TypeError, match=r"got \('y', 0\) \(tuple\)"):
        ft.jit(g, static_argnames=("y", 0))
    assert ft.jit(g, static_argnames=["y"])(np.ones(2), y=3.0) == 6.0


def test_static_argnames_must_name_a_keyword_parameter():
    with pytest.raises(ValueError, match=r"^jit\(g\): static_argnames names 'z', which is not "
                                         r"one of its parameters \(it takes by keyword: x, y\); "
                                         r"name one of those, or mark a positional argument "
                                         r"static with static_argnums$"):
        ft.jit(g, static_argnames=("y", "z"))

    def positional_only(x, /, n):
        return x * n

    with pytest.raises(ValueError, match=r"static_argnames names 'x', which is positional-only "
                                         r"\(it takes by keyword: n\)"):
        ft.jit(positional_only, static_argnames="x")
    # **kwargs takes any name
    assert ft.jit(lambda x, **kw: x * kw["k"], static_argnames="k")(np.ones(2), k=3.0)[0] == 3.0


@pytest.mark.parametrize("name, make", [
    ("grad", lambda: ft.grad(3)),
    ("value_and_grad", lambda: ft.value_and_grad(3)),
    ("jit", lambda: ft.jit(3)),
    ("vmap", lambda: ft.vmap(3)),
    ("jacfwd", lambda: ft.jacfwd(3)),
    ("jacrev", lambda: ft.jacrev(3)),
    ("hessian", lambda: ft.hessian(3)),
    ("make_jaxpr", lambda: ft.make_jaxpr(3)),
    ("checkpoint", lambda: ft.checkpoint(3)),
    ("custom_jvp", lambda: ft.custom_jvp(3)),
    ("custom_vjp", lambda: ft.custom_vjp(3)),
    ("jvp", lambda: ft.jvp(3, (1.0,), (1.0,))),
    ("vjp", lambda: ft.vjp(3, 1.0)),
    ("linearize", lambda: ft.linearize(3, 1.0)),
    ("eval_shape", lambda: ft.eval_shape(3, 1.0)),
    ("hvp", lambda: ft.hvp(3, (1.0,), (1.0,))),
])
def test_a_transform_of_a_non_callable_is_refused_at_once(name, make):
    with pytest.raises(TypeError, match=rf"^{name}: the function to transform must be callable, "
                                        r"got 3 \(int\); pass the function itself \(f, not a "
                                        r"value such as f\(x\)\)$"):
        make()


# --------------------------------------------------------------------------
# Object arrays
# --------------------------------------------------------------------------


_OBJECT = (r"is an object array \(object\[2\]\), which holds Python objects, not numbers; "
           r"convert it with np\.asarray\(x, dtype=float\)")


def test_object_arrays_are_named_as_such():
    o = np.array([1.0, 2.0], dtype=object)
    # grad used to call it an "integer or bool type".
    def h(x, y):
        return g(x, y["w"])

    with pytest.raises(TypeError, match=rf"^grad\(h\): argument \[1\]\['w'\] {_OBJECT}"):
        ft.grad(h, argnums=1)(1.0, {"w": o})
    with pytest.raises(TypeError, match=rf"^grad\(g\): argument \[0\] {_OBJECT}"):
        ft.grad(g, allow_int=True)(o, 1.0)
    # The others used to fail inside NumPy ("loop of ufunc does not support ...").
    with pytest.raises(TypeError, match=rf"^jit\(f\): argument \[0\] {_OBJECT}"):
        ft.jit(f)(o)
    with pytest.raises(TypeError, match=rf"^vmap\(f\): argument \[0\] {_OBJECT}"):
        ft.vmap(f)(o)
    with pytest.raises(TypeError, match=rf"^vjp\(f\): primal \[0\] {_OBJECT}"):
        ft.vjp(f, o)


def test_grad_argument_paths_are_call_positions():
    with pytest.raises(TypeError, match=r"^grad\(g\): argument \[1\] is a str, which is not "
                                        r"an array"):
        ft.grad(g, argnums=1)(1.0, "a")


# --------------------------------------------------------------------------
# fori_loop
# --------------------------------------------------------------------------


def scale(i, c):
    return c * 1.5


def scale_second(i, c):
    return c[0], {"k": c[1]["k"] * 1.5}


def test_fori_loop_body_that_changes_the_carry_dtype():
    want = (r"^lax\.fori_loop\(scale\): scale changes the dtype of the carry init_val from "
            r"i64\[\] to f64\[\]; a loop carry keeps its dtype, so give init_val that dtype "
            r"\(np\.asarray\(v, np\.float64\), or 1\.0 for 1\) or cast scale's result back "
            r"with \.astype\(np\.int64\)$")
    with pytest.raises(TypeError, match=want):  # used to say "lax.scan: output[1] ..."
        lax.fori_loop(0, 3, scale, 1)
    with pytest.raises(TypeError, match=want):  # traced bounds: a while loop
        ft.jit(lambda n: lax.fori_loop(0, n, scale, 1))(3)
    with pytest.raises(TypeError, match=r"^lax\.fori_loop\(scale_second\): scale_second changes "
                                        r"the dtype of the carry init_val\[1\]\['k'\] from "
                                        r"i32\[\] to f64\[\];.*\.astype\(np\.int32\)$"):
        lax.fori_loop(0, 3, scale_second, (1.0, {"k": np.int32(2)}))


def test_fori_loop_body_that_changes_the_carry_shape_or_structure():
    with pytest.raises(TypeError, match=r"^lax\.fori_loop\(<lambda>\): <lambda> changes the "
                                        r"shape of the carry init_val from f64\[2\] to "
                                        r"f64\[4\]; a loop carry keeps its shape, so return a "
                                        r"value of shape \(2,\) there$"):
        lax.fori_loop(0, 3, lambda i, c: fnp.concatenate([c, c]), np.ones(2))
    with pytest.raises(TypeError, match=r"^lax\.fori_loop\(<lambda>\): <lambda> must return the "
                                        r"carry with the structure of init_val"):
        lax.fori_loop(0, 3, lambda i, c: (c, c), 1.0)


@pytest.mark.parametrize("lower, upper, want", [
    (0.5, 3, r"lower is 0\.5 \(a float\), but loop bounds are integers \(a float bound would "
             r"be truncated\); pass int\(lower\) to truncate it, or round\(\) it$"),
    (0, 3.0, r"upper is 3\.0 \(a float\), but loop bounds are integers \(a float bound would "
             r"be truncated\); write 3$"),
    (np.float32(1.5), 3, r"lower is np\.float32\(1\.5\) \(a float32\)"),
    (True, 3, r"lower is True, a bool; loop bounds are ints: write 1$"),
    (np.arange(2), 3, r"lower has type i64\[2\], but a loop bound is one integer; pass a "
                      r"scalar$"),
    ("0", 3, r"lower is '0' \(a str\), but loop bounds are integers; pass an int$"),
])
def test_fori_loop_bounds_must_be_integers(lower, upper, want):
    # 0.5 used to run range(0, 3) silently.
    with pytest.raises(TypeError, match=r"^lax\.fori_loop\(<lambda>\): " + want):
        lax.fori_loop(lower, upper, lambda i, c: c + i, 0.0)


def test_fori_loop_traced_bounds():
    loop = ft.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0.0))
    with pytest.raises(TypeError, match=r"^lax\.fori_loop\(<lambda>\): upper is a traced "
                                        r"f64\[\], but loop bounds are integers \(a float bound "
                                        r"would be truncated\); convert it with "
                                        r"upper\.astype\(int\)"):
        loop(3.0)
    assert loop(3) == 3.0 and loop(np.int32(4)) == 6.0
    assert lax.fori_loop(np.int32(1), np.array(4), lambda i, c: c + i, 0.0) == 6.0
    grad = ft.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0))
    assert grad(2.0, 3) == 12.0


# --------------------------------------------------------------------------
# functrans.numpy: messages that were NumPy's wording, now with the function
# and the fix (NumPy's exception classes are kept)
# --------------------------------------------------------------------------


M = np.ones((3, 3))


@pytest.mark.parametrize("call, error, want", [
    (lambda: fnp.moveaxis(M, (0, 0), (1, 0)), AxisError,
     r"fnp\.moveaxis: source axes \(0, 0\) repeat: each axis may be moved once$"),
    (lambda: fnp.moveaxis(M, (0, 1), (1, 1)), AxisError,
     r"fnp\.moveaxis: destination axes \(1, 1\) repeat: each position may be filled once$"),
    (lambda: fnp.rot90(M, axes=(0, 5)), ValueError,
     r"fnp\.rot90: axes \(0, 5\) are out of range for an array of rank 2; use axes in "
     r"\[-2, 2\)$"),
    (lambda: fnp.rollaxis(M, 0, -5), AxisError,
     r"fnp\.rollaxis: start=-5 is out of range for an array of rank 2; use a start in "
     r"\[-2, 2\]$"),
    (lambda: fnp.diagonal(np.ones(3)), ValueError,
     r"fnp\.diagonal: the array has shape \(3,\), but a diagonal needs two axes"),
    (lambda: fnp.diagonal(M, 0, 1, -1), ValueError,
     r"fnp\.diagonal: axis1 and axis2 are both axis 1 of an array of shape \(3, 3\); pass two "
     r"different axes$"),
    (lambda: fnp.diff(np.float64(1.0)), ValueError,
     r"fnp\.diff: the array is 0-d; diff takes differences along an axis"),
    (lambda: fnp.gradient(M, 1.0, 2.0, 3.0), TypeError,
     r"fnp\.gradient: 3 spacings were given for 2 axes; pass none \(unit spacing\), one scalar "
     r"for every axis, or one per axis$"),
    (lambda: fnp.gradient(np.ones(3), edge_order=3), ValueError,
     r"fnp\.gradient: edge_order=3 is not supported; use 1 or 2$"),
    (lambda: fnp.gradient(np.ones(3), np.ones(2)), ValueError,
     r"fnp\.gradient: the coordinates for axis 0 have shape \(2,\), but that axis has 3 "
     r"elements"),
    (lambda: fnp.pad(M, 1.5), TypeError,
     r"fnp\.pad: pad_width must hold integers, got dtype float64"),
    (lambda: fnp.select([], []), ValueError, r"fnp\.select: condlist is empty"),
    (lambda: fnp.searchsorted(M, 1.0), ValueError,
     r"fnp\.searchsorted: a must be 1-d \(the sorted values\), got shape \(3, 3\)"),
    (lambda: fnp.take_along_axis(M, np.ones((2, 2), int), None), ValueError,
     r"fnp\.take_along_axis: with axis=None indices index the flattened array, so they must "
     r"be 1-d, got shape \(2, 2\)$"),
    (lambda: fnp.take_along_axis(M, np.ones(2, int), 0), ValueError,
     r"fnp\.take_along_axis: indices of shape \(2,\) and arr of shape \(3, 3\) must have the "
     r"same rank"),
    (lambda: fnp.take_along_axis(M, np.ones((2, 2)), 0), IndexError,
     r"fnp\.take_along_axis: indices must be an integer array, got dtype float64"),
    (lambda: fnp.sort(np.float64(1.0), 0), AxisError,
     r"fnp\.sort: axis 0 is out of bounds for a 0-d array; pass axis=None"),
    (lambda: fnp.r_[1, "0", 2], ValueError,
     r"fnp\.r_/c_: the directive '0' is entry 1, but a directive string must come first"),
    (lambda: fnp.r_["x", 1], ValueError, r"fnp\.r_/c_: unknown directive 'x'"),
    (lambda: fnp.take(np.ones(0), np.array([0]), mode="wrap"), IndexError,
     r"fnp\.take: the axis is empty, so there is nothing for 1 indices to take"),
    (lambda: fnp.sum(M, axis=3), AxisError,
     r"sum: axis 3 is out of bounds for an array of rank 2; use an axis in \[-2, 2\)$"),
    (lambda: fnp.sum(M, axis=(0, 0)), AxisError,
     r"sum: repeated axis in \(0, 0\); name each axis once$"),
    (lambda: fnp.linalg.norm(M, axis=1.5), TypeError,
     r"fnp\.linalg\.norm: axis must be None, an int or a tuple of ints, got 1\.5$"),
    (lambda: fnp.linalg.lstsq(M, np.ones(2)), np.linalg.LinAlgError,
     r"fnp\.linalg\.lstsq: a of shape \(3, 3\) has 3 rows, but b of shape \(2,\) has 2"),
    (lambda: fnp.linalg.multi_dot([M]), ValueError,
     r"fnp\.linalg\.multi_dot: got 1 array\(s\), but it multiplies two or more"),
])
def test_numpy_namespace_errors(call, error, want):
    with pytest.raises(error, match="^" + want):
        call()


@pytest.mark.parametrize("bad", ["x", 0.5, True, (0, "y"), -1])
@pytest.mark.parametrize("decorator", ["custom_jvp", "custom_vjp"])
def test_nondiff_argnums_must_be_argument_positions(decorator, bad):
    def scale(n, x):
        return n * x

    with pytest.raises(TypeError, match=rf"{decorator}\(scale\): nondiff_argnums must be an int "
                                        r"or a sequence of non-negative ints"):
        getattr(ft, decorator)(scale, nondiff_argnums=bad)


def test_nondiff_argnums_may_be_one_int():
    @functools.partial(ft.custom_jvp, nondiff_argnums=0)
    def scale(n, x):
        return n * x

    @scale.defjvp
    def scale_jvp(n, primals, tangents):
        return scale(n, primals[0]), n * tangents[0]

    np.testing.assert_allclose(ft.grad(lambda x: scale(3.0, x))(2.0), 3.0)
