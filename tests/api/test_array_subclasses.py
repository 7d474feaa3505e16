"""ndarray subclasses (functrans/array_types.py, docs/subclasses.md): np.memmap
is computed with as a plain ndarray; np.matrix, masked arrays, record
arrays, structured arrays and other subclasses are refused wherever they
meet functrans, with an error naming where, the type and the fix."""

import re
import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


class Tagged(np.ndarray):
    """A user's subclass that only carries a tag."""


def _matrix():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix([[1.0, 2.0], [3.0, 4.0]])


REFUSED = {
    "matrix": (_matrix, "numpy.matrix", r"pass np\.asarray\(x\) and write @"),
    "masked": (lambda: np.ma.array(np.arange(1.0, 5.0).reshape(2, 2),
                                   mask=[[0, 1], [1, 0]]),
               "numpy.ma.MaskedArray", r"x\.filled\(v\).*np\.ma\.getmaskarray\(x\)"),
    "recarray": (lambda: np.rec.array(np.ones((2, 2, 2)).view([("a", "f8"), ("b", "f8")])[..., 0]),
                 "numpy.recarray", r"each field as its own array"),
    "tagged": (lambda: np.ones((2, 2)).view(Tagged), "test_array_subclasses.Tagged",
               r"pass np\.asarray\(x\)"),
}


def _loss(x):
    return np.sum(x * x)


TRANSFORMS = {
    "grad": lambda f, x: ft.grad(f)(x),
    "value_and_grad": lambda f, x: ft.value_and_grad(f)(x),
    "jit": lambda f, x: ft.jit(f)(x),
    "vmap": lambda f, x: ft.vmap(f)(x),
    "jvp": lambda f, x: ft.jvp(f, (x,), (np.ones((2, 2)),)),
    "vjp": lambda f, x: ft.vjp(f, x),
    "linearize": lambda f, x: ft.linearize(f, x),
    "jacfwd": lambda f, x: ft.jacfwd(f)(x),
    "jacrev": lambda f, x: ft.jacrev(f)(x),
    "hessian": lambda f, x: ft.hessian(f)(x),
    "make_jaxpr": lambda f, x: ft.make_jaxpr(f)(x),
}


@pytest.mark.parametrize("kind", REFUSED)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_refused_subclass_argument_is_named_at_the_transform_boundary(kind, transform):
    make, type_name, fix = REFUSED[kind]
    with pytest.raises(TypeError, match=rf"\(\w*_loss\): (argument|primal) \[0\] is a "
                                        rf"{type_name} of shape \(2, 2\).*{fix}"):
        TRANSFORMS[transform](_loss, make())


@pytest.mark.parametrize("kind", REFUSED)
def test_the_error_gives_the_leaf_path_inside_the_argument(kind):
    make, type_name, _ = REFUSED[kind]
    with pytest.raises(TypeError, match=re.escape(
            f"grad(<lambda>): argument [1]['w'][0] is a {type_name}")):
        ft.grad(lambda a, p: a * np.sum(p["w"][0]), argnums=(0, 1))(
            1.0, {"w": [make()]})


def test_the_issue_cases_no_longer_answer_differently_from_numpy():
    m = _matrix()
    assert _loss(m) == 54.0  # NumPy: * is the matrix product
    for run in (ft.jit(_loss), ft.value_and_grad(_loss), lambda x: fnp.sum(fnp.multiply(x, x))):
        with pytest.raises(TypeError, match="numpy.matrix"):
            run(m)
    a = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 1])
    assert np.sum(a) == 1.0
    for run in (ft.jit(np.sum), ft.value_and_grad(np.sum), fnp.sum):
        with pytest.raises(TypeError, match="numpy.ma.MaskedArray"):
            run(a)


def test_jit_refuses_a_subclass_with_the_signature_of_a_compiled_call():
    f = ft.jit(lambda x: x + 1.0)
    f(np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): argument \[0\] is a numpy\.matrix"):
        f(_matrix())
    g = ft.jit(lambda x, *, y: x + y)
    g(np.ones(2), y=np.ones(2))
    with pytest.raises(TypeError, match=r"keyword argument \['y'\] is a numpy\.ma\.MaskedArray"):
        g(np.ones(2), y=np.ma.array([1.0, 2.0], mask=[0, 1]))


@pytest.mark.parametrize("kind", REFUSED)
def test_eager_fnp_refuses_a_subclass_naming_the_line(kind):
    make, type_name, fix = REFUSED[kind]
    x = make()
    for call in (lambda: fnp.sum(x), lambda: fnp.sin(x), lambda: fnp.multiply(x, x),
                 lambda: fnp.asarray(x), lambda: fnp.reshape(x, (4,)), lambda: fnp.where(x),
                 lambda: fnp.at(x)[0].set(1.0)):
        with pytest.raises(TypeError, match=rf"test_array_subclasses\.py:\d+: .*"
                                            rf"an operand is a {type_name}.*{fix}"):
            call()


@pytest.mark.parametrize("kind", REFUSED)
def test_device_put_refuses_a_subclass_naming_the_leaf(kind):
    make, type_name, fix = REFUSED[kind]
    with pytest.raises(TypeError, match=rf"^device_put: x\['w'\] is a {type_name} .*{fix}"):
        ft.device_put({"w": make()}, "cpu")


@pytest.mark.parametrize("kind", REFUSED)
def test_a_captured_subclass_or_a_non_differentiated_one_is_refused(kind):
    make, type_name, _ = REFUSED[kind]
    s = make()
    with pytest.raises(TypeError, match=rf"an operand is a {type_name}"):
        ft.grad(lambda x: np.sum(x * s))(np.ones((2, 2)))
    with pytest.raises(TypeError, match=rf"an operand is a {type_name}"):
        ft.jit(lambda x: x + s)(np.ones((2, 2)))
    with pytest.raises(TypeError, match=rf"an operand is a {type_name}"):
        ft.grad(lambda x, c: np.sum(x * c))(np.ones((2, 2)), s)


def test_a_subclass_tangent_or_cotangent_is_refused():
    x = np.ones((2, 2))
    with pytest.raises(TypeError, match=r"jvp\(sin\): tangent \[0\] is a numpy\.matrix"):
        ft.jvp(np.sin, (x,), (_matrix(),))
    _, pullback = ft.vjp(np.sin, x)
    with pytest.raises(TypeError, match=r"vjp\(sin\): cotangent is a numpy\.ma\.MaskedArray"):
        pullback(np.ma.array(x, mask=[[0, 1], [0, 0]]))


def test_a_structured_array_is_refused():
    x = np.zeros(2, dtype=[("a", "f8"), ("b", "f8")])
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): argument \[0\] is a numpy\.ndarray "
                                        r"of shape \(2,\) and dtype .*structured.*x\['name'\]"):
        ft.jit(lambda v: v)(x)
    with pytest.raises(TypeError, match=r"x\['name'\]"):
        ft.vmap(lambda v: v)(x)


@pytest.fixture
def memmap(tmp_path):
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=(2, 3))
    mm[:] = np.arange(6.0).reshape(2, 3) - 2.5
    return mm


def _all_plain(tree):
    return all(type(x) is np.ndarray for x in ft.tree_util.tree_leaves(tree))


def test_a_memmap_is_a_plain_array_and_every_result_is_a_plain_ndarray(memmap):
    plain = np.array(memmap)
    f = lambda x: fnp.sum(fnp.sin(x) * x)  # noqa: E731
    for run in (ft.grad(f), ft.value_and_grad(f), ft.jit(f), ft.jit(lambda x: x),
                ft.jit(lambda x: x.T), ft.vmap(lambda x: x), ft.jacfwd(lambda x: x[0]),
                ft.hessian(f), lambda x: ft.jvp(lambda y: y, (x,), (x,)),
                lambda x: ft.vjp(lambda y: y, x)[1](x), lambda x: fnp.reshape(x, (3, 2)),
                lambda x: fnp.transpose(x), lambda x: fnp.asarray(x),
                lambda x: ft.device_put(x, "cpu")):
        got = run(memmap)
        want = run(plain)
        assert _all_plain(got)
        for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(g, w)
    jitted = ft.jit(lambda x: x * 2.0)
    jitted(plain)
    out = jitted(memmap)  # the signature compiled for the plain array
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, plain * 2.0)


def test_a_captured_memmap_is_read_as_a_plain_array(memmap):
    got = ft.grad(lambda x: fnp.sum(x * memmap))(np.ones((2, 3)))
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, np.array(memmap))
