"""The ``vmap`` API: in_axes and out_axes (ints, None, negative axes, pytree
prefixes), axis_size, keyword arguments, nesting, composition with the
differentiation transforms and with custom rules, and its errors.

Every batched result is compared with a Python loop over the batch.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.errors import MissingRuleError
from functrans.testing import strategies as fts

# Every test runs twice: as written, and with each transformed function jitted.
pytestmark = pytest.mark.usefixtures("transform_mode")


def close(got, want, rtol=1e-12, atol=1e-12):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def take(x, axis, i):
    """Member ``i`` of ``x`` along ``axis`` (``x`` itself when unmapped)."""
    return x if axis is None else np.take(x, i, axis=axis)


def f3(x, y, z):
    return np.sin(x) * y + fnp.sum(z)


# --------------------------------------------------------------------------
# in_axes and out_axes
# --------------------------------------------------------------------------


def test_in_axes_int_none_tuple_and_negative():
    x = np.arange(12.0).reshape(3, 4)
    y = np.arange(4.0) + 1
    z = np.arange(6.0).reshape(2, 3)
    for in_axes in [(0, None, 1), (-2, None, -1), (1, 0, None), (None, 0, 0)]:
        sizes = {np.shape(a)[ax] for a, ax in zip((x, y, z), in_axes) if ax is not None}
        if len(sizes) != 1:
            continue
        (n,) = sizes
        got = ft.vmap(f3, in_axes=in_axes)(x, y, z)
        want = np.stack([f3(*(take(a, ax, i) for a, ax in zip((x, y, z), in_axes)))
                         for i in range(n)])
        close(got, want)
    # A single int applies to every argument; a list works like a tuple.
    a, b = np.arange(6.0).reshape(3, 2), np.ones((3, 2))
    close(ft.vmap(lambda a, b: a @ b)(a, b), np.sum(a * b, axis=1))
    close(ft.vmap(lambda a, b: a @ b, in_axes=[0, None])(a, b[0]), a @ b[0])
    close(ft.vmap(lambda a, b: a * b, in_axes=1)(a, b), (a * b).T)


@settings(max_examples=25)
@given(data=st.data())
def test_drawn_in_axes_and_out_axes_match_a_loop(data):
    n = data.draw(st.integers(0, 3), label="size")
    member_shapes = [data.draw(fts.shapes(max_rank=2, max_side=3)) for _ in range(2)]
    x_shape, y_shape = member_shapes
    # Make y broadcast against x: use x's shape for y when they do not.
    try:
        np.broadcast_shapes(x_shape, y_shape)
    except ValueError:
        y_shape = x_shape
    in_axes, args = [], []
    for shape in (x_shape, y_shape):
        ax = data.draw(st.none() | st.integers(-len(shape) - 1, len(shape)))
        member = data.draw(fts.arrays(dtype=np.float64, shape=shape, min_value=-2, max_value=2))
        if ax is None:
            args.append(member)
        else:
            batch = np.stack([member * (i + 1) for i in range(n)]) if n else np.zeros(
                (0,) + shape)
            args.append(np.moveaxis(batch, 0, ax))
        in_axes.append(ax)
    out_rank = len(np.broadcast_shapes(x_shape, y_shape))
    out_axis = data.draw(st.integers(-out_rank - 1, out_rank))

    def f(x, y):
        return np.tanh(x) * y - x

    got = ft.vmap(f, in_axes=tuple(in_axes), out_axes=out_axis, axis_size=n)(*args)
    members = [f(*(take(a, ax, i) for a, ax in zip(args, in_axes))) for i in range(n)]
    want = np.stack(members) if n else np.zeros((0,) + np.broadcast_shapes(x_shape, y_shape))
    close(got, np.moveaxis(want, 0, out_axis))


def test_in_axes_as_a_pytree_prefix():
    params = {"w": np.arange(6.0).reshape(3, 2), "b": np.array([1.0, -1.0])}
    xs = np.arange(6.0).reshape(3, 2)

    def f(p, x):
        return p["w"] * x + p["b"]

    got = ft.vmap(f, in_axes=({"w": 0, "b": None}, 0))(params, xs)
    close(got, params["w"] * xs + params["b"])
    # A prefix: one entry for a whole subtree.
    got = ft.vmap(f, in_axes=(None, 0))({"w": np.ones(2), "b": np.zeros(2)}, xs)
    close(got, xs)
    # Tuples inside, and None leaves in the arguments.
    got = ft.vmap(lambda t: t[0] * t[1][0], in_axes=((0, (1,)),))((np.arange(3.0), (np.eye(3),)))
    close(got, np.arange(3.0)[:, None] * np.eye(3).T)
    got = ft.vmap(lambda a, nothing: a * 2, in_axes=(0, None))(np.arange(3.0), None)
    close(got, 2 * np.arange(3.0))


def test_out_axes_int_negative_none_and_pytree():
    x = np.arange(6.0).reshape(3, 2)

    def f(x):
        return {"row": x * 2.0, "total": fnp.sum(x), "const": np.array(7.0)}

    out = ft.vmap(f, out_axes={"row": 1, "total": 0, "const": None})(x)
    close(out["row"], (x * 2.0).T)
    close(out["total"], x.sum(axis=1))
    close(out["const"], 7.0)
    close(ft.vmap(lambda x: x * 2.0, out_axes=-1)(x), (x * 2.0).T)
    close(ft.vmap(lambda x: x[:, None] * x, out_axes=-2)(x),
          np.stack([r[:, None] * r for r in x], axis=-2))
    a, b = ft.vmap(lambda x: (x, 3.0), out_axes=(0, None))(x)
    close(a, x)
    close(b, 3.0)
    # An unbatched output with an out axis is broadcast along it.
    close(ft.vmap(lambda x: np.ones(2))(x), np.ones((3, 2)))
    close(ft.vmap(lambda x: np.ones(2), out_axes=1)(x), np.ones((2, 3)))


def test_lists_in_axes_and_out_axes():
    """A list prefix matches a list argument or output (and, at the top, stands
    for the tuple of positional arguments)."""
    xs = np.arange(6.0).reshape(3, 2)
    close(ft.vmap(lambda p: p[0] * p[1], in_axes=([0, None],))([xs, 2.0]), 2.0 * xs)
    a, b = ft.vmap(lambda x: [x, x * 2.0], out_axes=[0, 1])(xs)
    close(a, xs)
    close(b, 2.0 * xs.T)
    a, b = ft.vmap(lambda x: (x, fnp.sum(x)), out_axes=[1, 0])(xs)
    close(a, xs.T)
    close(b, xs.sum(axis=1))
    with pytest.raises(ValueError, match=r"out_axes must be a tree prefix of the outputs it "
                                         r"maps: at out_axes it is a tuple with keys \[0, 1\], "
                                         r"but the value there is a list"):
        ft.vmap(lambda x: [x, x], out_axes=(0, 1))(xs)


def test_axis_size_when_nothing_is_mapped():
    out = ft.vmap(lambda x: x * 2.0, in_axes=None, axis_size=4)(np.arange(3.0))
    close(out, np.tile(2.0 * np.arange(3.0), (4, 1)))
    close(ft.vmap(lambda: np.array(5.0), in_axes=(), axis_size=2)(), [5.0, 5.0])
    out = ft.vmap(lambda x: x + 1.0, axis_size=3)(np.arange(3.0))
    close(out, np.arange(3.0) + 1.0)


def test_keyword_arguments_are_mapped_along_their_leading_axis_as_in_jax():
    def f(x, scale=1.0, shift=None):
        return x * scale + (0.0 if shift is None else shift["b"])

    x = np.arange(6.0).reshape(3, 2)
    scale = np.array([10.0, 100.0, 1000.0])
    shift = {"b": np.arange(6.0).reshape(3, 2) - 2.5}
    for kwargs in ({"scale": scale}, {"shift": shift}, {"scale": scale, "shift": shift}):
        got = ft.vmap(f)(x, **kwargs)
        loop = np.stack([f(x[i], **{k: ft.tree_util.tree_map(lambda v, i=i: v[i], v)
                                    for k, v in kwargs.items()}) for i in range(3)])
        assert got.shape == (3, 2)
        close(got, loop)
    # in_axes covers the positional arguments only
    got = ft.vmap(f, in_axes=(1,))(x.T, scale=scale)
    close(got, x * scale[:, None])


def test_a_keyword_argument_must_have_the_mapped_axis():
    f = lambda x, y: x + y  # noqa: E731
    with pytest.raises(ValueError, match=r"vmap\(<lambda>\): keyword argument \['y'\] is a "
                                         r"scalar \(f64\[\]\), but keyword arguments are mapped "
                                         r"along their leading axis.*pass it positionally"):
        ft.vmap(f)(np.ones(3), y=2.0)
    with pytest.raises(ValueError, match=r"argument\[0\] has size 3, argument\['y'\] has "
                                         r"size 2"):
        ft.vmap(f)(np.ones(3), y=np.ones(2))


def test_nested_vmap_over_different_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    y = np.arange(4.0) - 1.5

    def f(a, b):
        return np.sin(a) @ b

    got = ft.vmap(ft.vmap(f, in_axes=(0, None)), in_axes=(1, None))(x, y)
    close(got, np.einsum("ijk,k->ji", np.sin(x), y))
    got = ft.vmap(ft.vmap(lambda a: fnp.sum(a ** 2), in_axes=0), in_axes=2)(x)
    close(got, np.stack([[np.sum(x[i, :, k] ** 2) for i in range(2)] for k in range(4)]))
    # vmap of vmap with out axes moved at both levels.
    got = ft.vmap(ft.vmap(lambda a: a * 2.0, out_axes=-1), in_axes=1, out_axes=0)(x)
    close(got, np.stack([np.stack([x[i, j] * 2.0 for i in range(2)], axis=-1)
                         for j in range(3)]))


def test_vmap_of_vmap_equals_a_double_loop():
    a = np.linspace(-1.0, 1.0, 2 * 3 * 4).reshape(2, 3, 4)
    w = np.linspace(0.5, 1.5, 4 * 2).reshape(4, 2)

    def f(v, w):
        return np.tanh(v @ w)

    got = ft.vmap(ft.vmap(f, in_axes=(0, None)), in_axes=(0, None))(a, w)
    want = np.stack([np.stack([f(a[i, j], w) for j in range(3)]) for i in range(2)])
    close(got, want)


# --------------------------------------------------------------------------
# Composition with differentiation and custom rules
# --------------------------------------------------------------------------


def test_vmap_of_jvp_grad_and_hvp():
    xs = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    vs = np.linspace(2.0, -1.0, 12).reshape(4, 3)

    def f(x):
        return fnp.sum(np.sin(x) * x ** 2)

    def grad_f(x):
        return np.cos(x) * x ** 2 + 2 * x * np.sin(x)

    def hess_diag(x):
        return -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)

    close(ft.vmap(ft.grad(f))(xs), grad_f(xs))
    out, t = ft.vmap(lambda x, v: ft.jvp(f, (x,), (v,)))(xs, vs)
    close(out, [f(x) for x in xs])
    close(t, np.sum(grad_f(xs) * vs, axis=1))
    close(ft.vmap(lambda x, v: ft.hvp(f, (x,), (v,)))(xs, vs), hess_diag(xs) * vs)
    # One point, many directions.
    close(ft.vmap(lambda v: ft.hvp(f, (xs[0],), (v,)))(vs), hess_diag(xs[0]) * vs)
    close(ft.vmap(ft.hessian(f))(xs), np.stack([np.diag(hess_diag(x)) for x in xs]))


def _mlp(params, x):
    (w1, b1), (w2, b2) = params
    h = np.tanh(x @ w1 + b1)
    return fnp.sum((h @ w2 + b2) ** 2)


def _mlp_params():
    rng = np.random.default_rng(0)
    return ((rng.standard_normal((3, 5)), rng.standard_normal(5)),
            (rng.standard_normal((5, 2)), rng.standard_normal(2)))


def _mlp_grad_by_hand(params, x):
    (w1, b1), (w2, b2) = params
    h = np.tanh(x @ w1 + b1)
    y = h @ w2 + b2
    dy = 2 * y
    dw2, db2 = np.outer(h, dy), dy
    dh = w2 @ dy
    dz = dh * (1 - h ** 2)
    return ((np.outer(x, dz), dz), (dw2, db2))


def test_per_example_gradients_of_a_two_layer_mlp():
    params = _mlp_params()
    xs = np.linspace(-1.0, 1.0, 4 * 3).reshape(4, 3)
    per_example = ft.vmap(ft.grad(_mlp), in_axes=(None, 0))(params, xs)
    for i, x in enumerate(xs):
        want = _mlp_grad_by_hand(params, x)
        for got_layer, want_layer in zip(per_example, want):
            for g, w in zip(got_layer, want_layer):
                close(g[i], w, rtol=1e-10)
    # And the gradient of the summed loss is the sum of per-example gradients.
    total = ft.grad(lambda p: fnp.sum(ft.vmap(_mlp, in_axes=(None, 0))(p, xs)))(params)
    for got_layer, pe_layer in zip(total, per_example):
        for g, pe in zip(got_layer, pe_layer):
            close(g, pe.sum(axis=0), rtol=1e-10)


def test_grad_of_a_vmapped_function():
    xs = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    w = np.array([0.5, -1.5])

    def f(w, x):
        return np.sin(w @ x) * fnp.sum(w * w)

    g = ft.grad(lambda w: fnp.sum(ft.vmap(f, (None, 0))(w, xs)))(w)
    want = sum(np.cos(w @ x) * x * np.sum(w * w) + np.sin(w @ x) * 2 * w for x in xs)
    close(g, want)


def test_vmap_of_custom_rules_and_checkpoint():
    @ft.custom_jvp
    def softplus(x):
        return np.log1p(np.exp(x))

    @softplus.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), 2.0 * t / (1 + np.exp(-x))  # twice the true derivative

    @ft.custom_vjp
    def ident(x):
        return x

    ident.defvjp(lambda x: (x, None), lambda _, g: (3.0 * g,))
    xs = np.array([-1.0, 0.0, 2.0])
    sig = 1 / (1 + np.exp(-xs))
    close(ft.vmap(softplus)(xs), np.log1p(np.exp(xs)))
    close(ft.vmap(ft.grad(softplus))(xs), 2 * sig)
    close(ft.vmap(ident)(xs), xs)
    close(ft.vmap(ft.grad(ident))(xs), [3.0] * 3)
    ck = ft.checkpoint(lambda x: np.sin(np.sin(x)))
    close(ft.vmap(ck)(xs), np.sin(np.sin(xs)))
    close(ft.vmap(ft.grad(ck))(xs), np.cos(np.sin(xs)) * np.cos(xs))
    close(ft.grad(lambda x: fnp.sum(ft.vmap(ck)(x)))(xs), np.cos(np.sin(xs)) * np.cos(xs))


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_mapped_sizes_differ():
    def add(x, y):
        return x + y

    with pytest.raises(ValueError, match=r"vmap\(add\): mapped axes must all have the same size, "
                                         r"but argument\[0\] has size 3, argument\[1\] has "
                                         r"size 4"):
        ft.vmap(add)(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"argument\[0\]\['a'\] has size 2, argument\[0\]\['b'\] "
                                         r"has size 5"):
        ft.vmap(lambda d: d["a"])({"a": np.ones(2), "b": np.ones(5)})
    with pytest.raises(ValueError, match=r"has size 3 and axis_size=4"):
        ft.vmap(add, axis_size=4)(np.ones(3), np.ones(3))


def test_in_axes_not_a_prefix_of_the_arguments():
    def f(p, x):
        return p["a"] * x

    with pytest.raises(ValueError, match=r"vmap\(f\): in_axes must be a tree prefix .* at "
                                         r"in_axes\[0\] it is a dict with keys \['a'\], but the "
                                         r"value there is a dict with keys \['a', 'b'\]"):
        ft.vmap(f, in_axes=({"a": 0}, None))({"a": np.ones(3), "b": np.ones(3)}, 1.0)
    with pytest.raises(ValueError, match=r"in_axes has 3 entries but f got 2 positional arguments"):
        ft.vmap(f, in_axes=(0, 0, 0))({"a": np.ones(3)}, np.ones(3))
    with pytest.raises(ValueError, match=r"in_axes must be a tree prefix"):
        ft.vmap(f, in_axes={"a": 0})({"a": np.ones(3)}, np.ones(3))


def test_axis_out_of_range():
    with pytest.raises(ValueError, match=r"vmap\(<lambda>\): in_axes 2 is out of range for "
                                         r"argument\[0\] of type f64\[3,2\] \(rank 2\); use an "
                                         r"axis in \[-2, 2\) or None"):
        ft.vmap(lambda x: x, in_axes=2)(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"in_axes -3 is out of range"):
        ft.vmap(lambda x: x, in_axes=-3)(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"in_axes 0 is out of range for argument\[0\] of type "
                                         r"f64\[\]"):
        ft.vmap(lambda x: x)(np.ones(()))
    with pytest.raises(ValueError, match=r"out_axes 3 is out of range for output of rank 2"):
        ft.vmap(lambda x: x, out_axes=3)(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"out_axes -3 is out of range"):
        ft.vmap(lambda x: x, out_axes=-3)(np.ones((3, 2)))


def test_out_axes_none_for_a_batched_output():
    with pytest.raises(ValueError, match=r"vmap\(<lambda>\): out_axes is None for output\[1\], "
                                         r"but that output varies along the mapped axis"):
        ft.vmap(lambda x: (x, x * 2), out_axes=(0, None))(np.ones(3))


def test_nothing_mapped_without_axis_size():
    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match=r"vmap\(f\): no argument is mapped .*pass axis_size="):
        ft.vmap(f, in_axes=None)(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match=r"no argument is mapped"):
        ft.vmap(f, in_axes=(None, None))(np.ones(3), np.ones(3))


def test_primitive_without_a_batching_rule():
    name = "test_vmap_primitive_without_rules"
    prim = core.Primitive(name, abstract_eval=lambda x: x.strip_weak(),
                          impl=lambda x: np.asarray(x))
    try:
        with pytest.raises(MissingRuleError,
                           match=rf"primitive '{name}' has no batch rule, so vmap cannot "
                                 r"process it"):
            ft.vmap(lambda x: prim.bind(x))(np.ones(3))
        # An unbatched operand needs no rule.
        close(ft.vmap(lambda x, y: x + prim.bind(y), in_axes=(0, None))(np.ones(2), 1.0),
              [2.0, 2.0])
    finally:
        core.registry.pop(name, None)
    assert name not in core.registry
