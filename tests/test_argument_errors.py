"""Errors for bad transform arguments (argnums, static_argnums, in_axes,
out_axes, axis_size) and for loop bounds and carries: each names the
transform, the user's function, the argument, what was found and the fix."""

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp


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
