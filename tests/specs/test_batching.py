"""The batching rule of every primitive, driven by ``tests/_specs.py``.

For each primitive, ``vmap`` of the bound primitive must equal a Python loop
over the batch stacking the per-member results, when each operand alone is
batched (the others passed unmapped with ``in_axes=None``) and when all are,
at drawn batch axes (negative ones too), with drawn out axes and batch sizes
0 to 3.  Index operands (gather/scatter index arrays, dynamic_slice starts)
are batched like any other operand.  The call primitives are batched through
``ft.custom_jvp``, ``ft.custom_vjp``, ``ft.checkpoint`` and ``functrans.lax``
(``recorded_loop`` by vmap of grad through a while loop), and ``custom_lin``
(the linear half of a custom VJP) by batching a linearized Jaxpr directly.
"""

from __future__ import annotations

import numpy as np
import pytest
from _specs import BOUND, SPECS, Case, out_aval, variant
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.api import grad as eager_grad
from functrans.core import get_aval, registry
from functrans.testing import strategies as fts

# Every test runs twice: as written, and with each transformed function jitted.
pytestmark = pytest.mark.usefixtures("transform_mode")


def assert_same(got, want, what=""):
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "fc":
        rtol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def loop(prim, params, members: list[list], avals) -> list[np.ndarray]:
    """The batched results the slow way: one bind per member, stacked."""
    outs = [prim.bind(*args, **params) for args in members]
    outs = [o if prim.multiple_results else [o] for o in outs]
    return [np.stack([np.asarray(o[i]) for o in outs]) if outs
            else np.zeros((0,) + aval.shape, aval.dtype) for i, aval in enumerate(avals)]


def check_batched(name: str, case: Case, batched: tuple[int, ...], size: int, data, rng):
    """vmap over the operands at ``batched`` (each at a drawn axis) vs a loop."""
    prim = registry[name]
    n = len(case.args)
    members = [list(case.values) for _ in range(size)]
    stacked, in_axes = [], []
    for k in range(n):
        if k not in batched:
            stacked.append(case.values[k])
            in_axes.append(None)
            continue
        values = [variant(rng, case.args[k]) for _ in range(size)]
        for member, v in zip(members, values):
            member[k] = v
        rank = np.ndim(case.values[k])
        axis = data.draw(st.integers(-rank - 1, rank), label=f"in axis of operand {k}")
        x = np.stack(values, axis=axis) if values else np.moveaxis(
            np.zeros((0,) + np.shape(case.values[k]), np.asarray(case.values[k]).dtype), 0, axis)
        stacked.append(x)
        in_axes.append(axis)
    avals = out_aval(name, case)
    avals = list(avals) if prim.multiple_results else [avals]
    out_axes = [data.draw(st.integers(-a.ndim - 1, a.ndim), label="out axis") for a in avals]
    wants = [np.moveaxis(w, 0, ax)
             for w, ax in zip(loop(prim, case.params, members, avals), out_axes)]

    def f(*args):
        return prim.bind(*args, **case.params)

    spec = out_axes if prim.multiple_results else out_axes[0]
    got = ft.vmap(f, in_axes=tuple(in_axes), out_axes=spec, axis_size=size)(*stacked)
    got = list(got) if prim.multiple_results else [got]
    assert len(got) == len(wants)
    for i, (g, w) in enumerate(zip(got, wants)):
        assert_same(g, w, f"{name} output {i} batched at {batched} with in_axes {in_axes}")


@pytest.mark.parametrize("name", BOUND)
@settings(max_examples=20)
@given(data=st.data())
def test_vmap_matches_a_loop(name, data):
    case = SPECS[name].draw(data.draw)
    size = data.draw(st.integers(0, 3), label="batch size")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    n = len(case.args)
    configs = [(k,) for k in range(n)] + ([tuple(range(n))] if n > 1 else [])
    if not n:  # iota: nothing to map, only axis_size
        configs = [()]
    for batched in configs:
        check_batched(name, case, batched, size, data, rng)


# --------------------------------------------------------------------------
# Index operands batched: a few fixed cases on top of the drawn ones
# --------------------------------------------------------------------------


def test_gather_with_batched_index_arrays_and_a_separating_slice():
    """x[i, :, j] puts the advanced axes first; batched i and j differ per member."""
    x = np.arange(24.0).reshape(2, 3, 4)
    i = np.array([[0, 1], [1, 1], [0, 0]])
    j = np.array([[3, -1], [0, 2], [1, 1]])

    def f(x, i, j):
        return x[i, :, j]

    got = ft.vmap(f, in_axes=(None, 0, 0))(x, i, j)
    want = np.stack([x[i[b], :, j[b]] for b in range(3)])
    assert_same(got, want)


def test_scatter_add_with_batched_repeated_indices():
    x = np.zeros((3, 4))
    idx = np.array([[0, 0, 2], [3, 3, 3]])
    u = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

    def f(x, idx, u):
        return x.at[1, idx].add(u)

    got = ft.vmap(f, in_axes=(None, 0, 0))(x, idx, u)
    want = np.stack([np.zeros((3, 4)) for _ in range(2)])
    for b in range(2):
        np.add.at(want[b], (1, idx[b]), u[b])
    assert_same(got, want)


def test_dynamic_slice_and_update_with_batched_starts():
    from functrans.primitives import indexing

    x = np.arange(20.0).reshape(4, 5)
    starts = np.array([-3, 0, 2, 9])  # out of range: clamped

    def window(x, s):
        return indexing.dynamic_slice_p.bind(x, s, 1, slice_sizes=(2, 3))

    def write(x, s, u):
        return indexing.dynamic_update_slice_p.bind(x, u, 1, s)

    got = ft.vmap(window, in_axes=(None, 0))(x, starts)
    want = np.stack([x[min(max(s, 0), 2):min(max(s, 0), 2) + 2, 1:4] for s in starts])
    assert_same(got, want)
    u = np.ones((4, 3, 2))
    got = ft.vmap(write, in_axes=(None, 0, 0))(x, starts, u)
    want = np.stack([x.copy() for _ in starts])
    for b, s in enumerate(starts):
        c = min(max(s, 0), 3)
        want[b, 1:4, c:c + 2] = 1.0
    assert_same(got, want)


# --------------------------------------------------------------------------
# The call primitives, through the API
# --------------------------------------------------------------------------


def _custom_functions():
    shift = np.array([0.25, -0.5, 1.0])  # closed over: a constant operand

    @ft.custom_jvp
    def cj(x, y):
        return np.sin(x) * y + shift

    @cj.defjvp
    def cj_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return cj(x, y), np.cos(x) * y * tx + np.sin(x) * ty

    @ft.custom_vjp
    def cv(x, y):
        return np.sin(x) * y + shift

    def cv_fwd(x, y):
        return cv(x, y), (x, y)

    def cv_bwd(res, ct):
        x, y = res
        return np.cos(x) * y * ct, np.sin(x) * ct

    cv.defvjp(cv_fwd, cv_bwd)

    @ft.checkpoint
    def ck(x, y):
        return np.sin(x) * y + shift

    def plain(x, y):
        return np.sin(x) * y + shift

    def with_cond(x, y):  # the predicate differs between batch members
        return ft.lax.cond(fnp.sum(x) > 0, lambda a, b: np.sin(a) * b + shift,
                           lambda a, b: a - b, x, y)

    def with_if(x, y):
        return np.sin(x) * y + shift if np.sum(x) > 0 else x - y

    def with_scan(x, y):
        def step(h, xi):
            h = np.tanh(h * y + xi)
            return h, h * shift

        h, hs = ft.lax.scan(step, x, fnp.stack([x, y, x * y]))
        return h + fnp.sum(hs, axis=0)

    def with_for(x, y):
        h, total = x, 0.0
        for xi in (x, y, x * y):
            h = np.tanh(h * y + xi)
            total = total + h * shift
        return h + total

    def with_while(x, y):  # the trip count differs between batch members
        def body(carry):
            i, v = carry
            return i + 1, np.sin(v) * y + shift

        n = fnp.sum(fnp.abs(x)) > 2.0
        return ft.lax.while_loop(lambda c: c[0] < 2 + n, body, (0, x))[1]

    def with_python_while(x, y):
        for _ in range(2 + int(np.sum(np.abs(x)) > 2.0)):
            x = np.sin(x) * y + shift
        return x

    return {"custom_jvp": (cj, plain), "custom_vjp": (cv, plain), "checkpoint": (ck, plain),
            "cond": (with_cond, with_if), "scan": (with_scan, with_for),
            "while_loop": (with_while, with_python_while)}


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp", "checkpoint", "cond", "scan",
                                  "while_loop"])
@settings(max_examples=15)
@given(data=st.data())
def test_vmap_of_call_primitives(kind, data):
    f, plain = _custom_functions()[kind]
    size = data.draw(st.integers(1, 3))
    in_axes = data.draw(st.sampled_from([(0, 0), (0, None), (None, 0), (1, -1), (-2, None)]))

    def operand(axis):
        shape = [3]
        if axis is not None:
            shape.insert(axis % 2, size)
        return data.draw(fts.arrays(dtype=np.float64, shape=tuple(shape), min_value=-2,
                                    max_value=2))

    x, y = operand(in_axes[0]), operand(in_axes[1])
    got = ft.vmap(f, in_axes=in_axes)(x, y)

    def member(a, axis, b):
        return a if axis is None else np.moveaxis(a, axis, 0)[b]

    want = np.stack([plain(member(x, in_axes[0], b), member(y, in_axes[1], b))
                     for b in range(size)])
    assert_same(got, want)
    # Per-member gradients (vmap of grad) against a loop of gradients of the
    # plain function; the gradient of the summed batch (grad of vmap) is their
    # sum over members, for the unmapped operands, or their stack.
    def loss(f):
        return lambda x, y: fnp.sum(f(x, y) ** 2)

    per_member = ft.vmap(ft.grad(loss(f), (0, 1)), in_axes=in_axes)(x, y)
    # The references use Python control flow on values: never jitted.
    loop = [eager_grad(loss(plain), (0, 1))(member(x, in_axes[0], b), member(y, in_axes[1], b))
            for b in range(size)]
    for k in range(2):
        assert_same(per_member[k], np.stack([g[k] for g in loop]))
    total = ft.grad(lambda x, y: fnp.sum(ft.vmap(f, in_axes=in_axes)(x, y) ** 2), (0, 1))(x, y)
    for k, (arg, axis) in enumerate(zip((x, y), in_axes)):
        stacked = np.stack([g[k] for g in loop])
        want = stacked.sum(axis=0) if axis is None else np.moveaxis(stacked, 0, axis)
        assert_same(total[k], want.reshape(np.shape(arg)))


def test_custom_lin_batched_and_transposed_matches_a_loop_of_vjps():
    """Batch the linear part of a custom_vjp function's JVP over its tangent
    inputs (which batches ``custom_lin``), transpose it, and compare each
    member's cotangent with ``vjp``."""
    from functrans.core import open_jaxpr
    from functrans.core import run_jaxpr as apply_jaxpr
    from functrans.interpreters.partial_eval import linearize_jaxpr
    from functrans.interpreters.transpose import transpose_jaxpr
    from functrans.interpreters.vmap import batch_jaxpr

    f, _ = _custom_functions()["custom_vjp"]
    x, y = np.array([0.3, -1.0, 2.0]), np.array([1.5, 0.5, -0.25])
    opened, consts = open_jaxpr(ft.make_jaxpr(f)(x, y))
    n_c = len(consts)
    known, linear, n_out = linearize_jaxpr(opened, (False,) * n_c + (True, True))
    assert "custom_lin" in {e.primitive.name for e in linear.eqns}
    residuals = apply_jaxpr(known, list(consts) + [x, y])[n_out:]
    n_res = len(residuals)
    batched, out_dims = batch_jaxpr(linear, (None,) * n_res + (0, 0), 4)
    transposed = transpose_jaxpr(batched, (False,) * n_res + (True, True))
    cts = np.arange(12.0).reshape(4, 3) - 5.0
    cts = np.moveaxis(cts, 0, out_dims[0])
    ct_x, ct_y = apply_jaxpr(transposed, list(residuals) + [cts])
    _, vjp_fn = ft.vjp(f, x, y)
    for b in range(4):
        want_x, want_y = vjp_fn(np.moveaxis(cts, out_dims[0], 0)[b])
        assert_same(np.asarray(ct_x)[b], want_x)
        assert_same(np.asarray(ct_y)[b], want_y)


def test_batched_operands_keep_their_avals():
    """vmap's per-member avals are those the loop sees (shape and dtype)."""
    x = np.ones((2, 3), np.float32)
    seen = []

    def f(x):
        seen.append(get_aval(x))
        return x * 2

    ft.vmap(f)(x)
    assert seen[-1].shape == (3,) and seen[-1].dtype == np.float32
