"""The collectives in one process: over the named axis of ``vmap`` (checked
against NumPy reductions over the mapped axis), their derivatives (against
finite differences and closed forms), jit, the errors, and the process path
with a stand-in process group."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from functrans.primitives import collectives
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
from functrans import core, lax
from functrans import distributed as dist
from functrans.errors import ShapeError, UnboundAxisError

X = np.arange(12.0).reshape(3, 4) - 5.5


def named(f, **kw):
    return ft.vmap(f, axis_name="i", **kw)


@pytest.fixture
def no_processes():
    saved = collectives.installed_group()
    collectives.set_process_group(None)
    yield
    collectives.set_process_group(saved)


class Recording:
    """A stand-in group of 3 processes seen from rank 1: records each call and
    answers as if the other ranks held ``others`` times this rank's value."""

    rank, size = 1, 3

    def __init__(self):
        self.calls: list[str] = []

    def allreduce(self, x, op, what):
        self.calls.append(what)
        return x * 3 if op == "sum" else x.copy()

    def allgather(self, x, what):
        self.calls.append(what)
        return np.stack([x * 0, x, x * 2])

    def reduce_scatter(self, x, what):
        self.calls.append(what)
        return x.sum(0) * 0 + x[self.rank] * 3

    def permute(self, x, perm, what):
        self.calls.append(what)
        return x * 10


@pytest.fixture
def recording():
    saved = collectives.installed_group()
    group = Recording()
    collectives.set_process_group(group)
    yield group
    collectives.set_process_group(saved)


# -- values under vmap(axis_name=) against NumPy --------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.complex128])
@pytest.mark.parametrize("in_axis", [0, 1])
def test_psum_reduces_over_the_mapped_axis_keeping_the_dtype(dtype, in_axis):
    x = X.astype(dtype) if dtype != np.complex128 else X + 1j * X[::-1]
    out = named(lambda v: lax.psum(v, "i"), in_axes=in_axis)(x)
    want = np.broadcast_to(x.sum(in_axis).astype(x.dtype), out.shape)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("name, reduce", [("pmax", np.max), ("pmin", np.min),
                                          ("pmean", np.mean)])
def test_pmax_pmin_pmean_against_numpy(name, reduce):
    x = np.array([[1.0, np.nan, -0.0], [3.0, 2.0, 0.0], [3.0, 1.0, 5.0]])
    out = named(lambda v: getattr(lax, name)(v, "i"))(x)
    np.testing.assert_array_equal(out, np.broadcast_to(reduce(x, axis=0), x.shape))


def test_pmean_of_integers_is_a_float_mean():
    out = named(lambda v: lax.pmean(v, "i"))(np.array([1, 2], np.int32))
    np.testing.assert_array_equal(out, [1.5, 1.5])


@given(st.integers(1, 4), st.integers(0, 3), st.integers(0, 1))
@settings(max_examples=25, deadline=None)
def test_all_gather_stacks_the_members(size, n, axis):
    x = np.arange(size * n * 2, dtype=np.float64).reshape(size, n, 2)
    out = named(lambda v: lax.all_gather(v, "i", axis=axis))(x)
    np.testing.assert_array_equal(out, np.broadcast_to(np.moveaxis(x, 0, axis), out.shape))
    tiled = named(lambda v: lax.all_gather(v, "i", axis=axis, tiled=True))(x)
    want = np.concatenate(list(x), axis=axis)
    np.testing.assert_array_equal(tiled, np.broadcast_to(want, (size,) + want.shape))


def test_psum_scatter_keeps_each_members_entry():
    x = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(named(lambda v: lax.psum_scatter(v, "i"))(x), x.sum(0))
    y = np.arange(12.0).reshape(2, 6)
    out = named(lambda v: lax.psum_scatter(v, "i", tiled=True))(y)
    np.testing.assert_array_equal(out, y.sum(0).reshape(2, 3))


def test_ppermute_moves_values_and_zero_fills():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    ring = named(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]))(x)
    np.testing.assert_array_equal(ring, x[[2, 0, 1]])
    partial = named(lambda v: lax.ppermute(v, "i", [(2, 0)]))(x)
    np.testing.assert_array_equal(partial, [[5.0, 6.0], [0.0, 0.0], [0.0, 0.0]])


def test_axis_index_and_constants_under_vmap():
    np.testing.assert_array_equal(named(lambda v: lax.axis_index("i"))(X),
                                  np.arange(3, dtype=np.int32))
    # an operand that is no tracer is still reduced over the members (3 of them)
    out = named(lambda v: v[:2] * 0 + lax.psum(np.ones(2), "i"))(X)
    np.testing.assert_array_equal(out, np.full((3, 2), 3.0))
    np.testing.assert_array_equal(named(lambda v: v * 0 + lax.psum(1, "i"))(X), np.full_like(X, 3))


def test_an_axis_of_no_members():
    empty = np.zeros((0, 2))
    assert named(lambda v: lax.ppermute(v, "i", []))(empty).shape == (0, 2)
    assert named(lambda v: lax.psum(v, "i"))(empty).shape == (0, 2)
    assert named(lambda v: lax.all_gather(v, "i"))(empty).shape == (0, 0, 2)


def test_nested_named_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    inner = ft.vmap(ft.vmap(lambda v: lax.psum(v, "i"), axis_name="j"), axis_name="i")(x)
    np.testing.assert_array_equal(inner, np.broadcast_to(x.sum(0), x.shape))
    both = ft.vmap(ft.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"), axis_name="i")(x)
    np.testing.assert_array_equal(both, np.broadcast_to(x.sum((0, 1)), x.shape))
    index = ft.vmap(ft.vmap(lambda v: lax.axis_index("i") * 10 + lax.axis_index("j"),
                            axis_name="j"), axis_name="i")(x)
    np.testing.assert_array_equal(index, [[0, 1, 2], [10, 11, 12]])


def test_collectives_inside_a_loop_body_and_jit():
    def body(carry, v):
        return carry + lax.psum(v, "i"), lax.pmax(v, "i")

    carry, ys = named(lambda xs: lax.scan(body, 0.0, xs))(X)
    np.testing.assert_array_equal(carry, np.full(3, X.sum()))
    np.testing.assert_array_equal(ys, np.broadcast_to(X.max(0), X.shape))
    f = named(lambda v: lax.psum(v, "i") * lax.axis_index("i"))
    np.testing.assert_array_equal(ft.jit(f)(X), f(X))


def test_constant_operands_under_vmap_through_jit_and_loops():
    # nothing here is traced but the axis: the vmap still computes each collective
    jf = ft.jit(lambda c: lax.psum(c, "i"))
    np.testing.assert_array_equal(named(lambda v: v * jf(np.ones(())))(np.arange(3.0)),
                                  [0.0, 3.0, 6.0])
    loop = named(lambda v: v + lax.fori_loop(0, 2, lambda k, c: c + lax.psum(1.0, "i"), 0.0))
    np.testing.assert_array_equal(loop(np.arange(3.0)), [6.0, 7.0, 8.0])
    scan = named(lambda v: lax.scan(lambda c, x: (c + lax.pmax(x, "i"), None), v * 0,
                                    np.arange(2.0))[0])
    np.testing.assert_array_equal(scan(np.zeros(3)), [1.0, 1.0, 1.0])
    branch = named(lambda v: v + lax.cond(True, lambda: lax.axis_index("i"),
                                          lambda: np.int32(0)))
    np.testing.assert_array_equal(branch(np.zeros(3)), [0.0, 1.0, 2.0])


def test_jit_inside_vmap_is_compiled_per_axis_size():
    jf = ft.jit(lambda v: lax.pmean(v, "i"))
    for n in (3, 2, 4, 2):
        np.testing.assert_array_equal(named(jf)(np.arange(n, dtype=float)),
                                      np.full(n, (n - 1) / 2))


def test_batched_programs_type_check():
    for f in (lambda v: lax.psum(v, "i"), lambda v: lax.all_gather(v, "i", tiled=True),
              lambda v: lax.ppermute(v, "i", [(0, 1)]), lambda v: lax.axis_index("i") + v):
        core.check_jaxpr(ft.make_jaxpr(named(f))(X))


# -- derivatives ---------------------------------------------------------------------------


def fd_grad(F, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = eps
        g[k] = (F(x + e) - F(x - e)) / (2 * eps)
    return g


def two_names(f):
    return ft.vmap(ft.vmap(f, axis_name="j"), axis_name="i")


RNG = np.random.default_rng(7)
W = np.array([1.0, -2.0, 0.5, 3.0])
DOT_CASES = {  # a member's function, the vmaps around it, the batched operands
    "psum": (lambda v: lax.psum(v, "i") * v, named, [X]),
    "pmean": (lambda v: lax.pmean(v, "i") ** 2, named, [X]),
    "pmax": (lambda v: lax.pmax(v, "i") * v, named, [X]),
    "pmin ties": (lambda v: lax.pmin(v, "i"), named, [np.array([2.0, 1.0, 1.0])]),
    "pvary": (lambda v: lax.psum(lax.pvary(W, "i") * v, "i"), named, [X]),
    "constant psum": (lambda v: lax.psum(W, "i") * v, named, [X]),
    "all_gather": (lambda v: lax.all_gather(v, "i", axis=1) * v[:, None], named, [X]),
    "all_gather tiled": (lambda v: lax.all_gather(v, "i", tiled=True), named, [X]),
    "psum_scatter": (lambda v: lax.psum_scatter(v, "i", scatter_dimension=1), named,
                     [RNG.standard_normal((3, 2, 3))]),
    "psum_scatter tiled": (lambda v: lax.psum_scatter(v, "i", tiled=True), named,
                           [RNG.standard_normal((3, 6))]),
    "ppermute": (lambda v: lax.ppermute(v, "i", [(0, 2), (2, 1)]), named, [X]),
    "two names": (lambda v: lax.psum(v, ("i", "j")) * v, two_names, [X]),
    "inner name": (lambda v: lax.all_gather(v, "j") + lax.pmax(v, "i"), two_names, [X]),
    "jit": (ft.jit(lambda v: lax.psum(v, "i") * v), named, [X]),
}


@pytest.mark.parametrize("case", DOT_CASES)
def test_transposes_inside_vmap_match_the_jvp_in_a_dot_product(case):
    # Each member takes the JVP and the VJP of its own function (so the
    # collectives' JVP and transpose rules run, not those of their batched
    # forms); summed over the members, <J t, c> == <t, J^T c>.
    g, wrap, xs = DOT_CASES[case]
    rng = np.random.default_rng(3)
    ts = [rng.standard_normal(np.shape(x)) for x in xs]
    c = rng.standard_normal(np.shape(wrap(g)(*xs)))
    n = len(xs)

    def member(*args):
        x, t, ct = args[:n], args[n:2 * n], args[2 * n]
        jt = ft.jvp(g, x, t)[1]
        back = ft.vjp(g, *x)[1](ct)
        return (jt * ct).sum(), sum((ti * bi).sum() for ti, bi in zip(t, back))

    lhs, rhs = wrap(member)(*xs, *ts, c)
    np.testing.assert_allclose(np.sum(lhs), np.sum(rhs), rtol=1e-12)


@pytest.mark.parametrize("collective", [lax.pmax, lax.pmin])
def test_pmax_pmin_derivatives_at_nan_are_nan_both_ways(collective):
    # no member holds a NaN result: the forward and the reverse derivative
    # are both NaN, as for fnp.max
    x = np.array([1.0, np.nan, 3.0])
    f = named(lambda v: collective(v, "i"))
    with np.errstate(divide="ignore", invalid="ignore"):
        _, tout = ft.jvp(f, (x,), (np.ones(3),))
        g = named(ft.grad(lambda v: collective(v, "i")))(x)
        gv = ft.grad(lambda v: f(v).sum())(x)
    assert np.isnan(tout).all() and np.isnan(g).all() and np.isnan(gv).all(), (tout, g, gv)


def test_jvp_of_collectives_is_the_collective_of_the_tangent():
    t = np.ones_like(X) * np.arange(4)
    for f in (lambda v: lax.psum(v, "i"), lambda v: lax.all_gather(v, "i"),
              lambda v: lax.ppermute(v, "i", [(0, 1), (1, 0)])):
        out, tout = ft.jvp(named(f), (X,), (t,))
        np.testing.assert_array_equal(tout, named(f)(t))


def test_pmax_derivative_is_split_among_tied_members():
    x, t = np.array([1.0, 3.0, 3.0]), np.array([10.0, 2.0, 4.0])
    _, tout = ft.jvp(named(lambda v: lax.pmax(v, "i")), (x,), (t,))
    np.testing.assert_array_equal(tout, [3.0, 3.0, 3.0])
    g = named(ft.grad(lambda v: lax.pmax(v, "i")))(x)
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5])


def test_grad_of_a_reduced_loss_is_with_respect_to_each_members_copy():
    xs = np.array([1.0, -2.0, 0.5])
    loss = lambda w, x: lax.psum(np.sin(w * x), "i")  # noqa: E731
    own = named(ft.grad(loss), in_axes=(None, 0))(0.3, xs)
    np.testing.assert_allclose(own, xs * np.cos(0.3 * xs), rtol=1e-14)


def test_grad_with_pvary_is_the_full_gradient_on_every_member():
    rng = np.random.default_rng(1)
    A, b, w = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3)), rng.standard_normal(2)

    def shard_loss(w, A, b):
        r = np.tanh(A @ lax.pvary(w, "i")) - b
        return lax.psum((r * r).sum(), "i")

    def full_loss(w):
        r = np.tanh(A @ w) - b
        return (r * r).sum()

    g = named(ft.grad(shard_loss), in_axes=(None, 0, 0))(w, A, b)
    np.testing.assert_allclose(g, np.broadcast_to(ft.grad(full_loss)(w), (4, 2)), rtol=1e-12)
    h = named(ft.hessian(shard_loss), in_axes=(None, 0, 0))(w, A, b)
    np.testing.assert_allclose(h, np.broadcast_to(ft.hessian(full_loss)(w), (4, 2, 2)),
                               rtol=1e-12, atol=1e-14)
    jg = ft.jit(named(ft.grad(shard_loss), in_axes=(None, 0, 0)))(w, A, b)
    np.testing.assert_allclose(jg, g, rtol=1e-15)


def test_a_reduced_value_used_per_member_sums_its_cotangents():
    # member i computes psum(x) * x_i, a per-member value: the derivative of
    # their sum, (sum x)^2, is 2 sum(x) for each member
    xs = np.array([1.0, 2.0, 4.0])
    g = named(ft.grad(lambda v: lax.psum(v, "i") * v))(xs)
    np.testing.assert_allclose(g, np.full(3, 2 * xs.sum()))
    np.testing.assert_allclose(g, fd_grad(lambda x: (x.sum() * x).sum(), xs), rtol=1e-8)


def test_transposes_of_all_gather_psum_scatter_and_ppermute():
    c = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    xs = np.array([[0.5, 1.0], [-1.0, 2.0], [3.0, 0.0]])
    # all_gather's result is one value: each member gets its own piece of it
    g = named(ft.grad(lambda v: (lax.all_gather(v, "i") * c).sum()))(xs)
    np.testing.assert_array_equal(g, c)
    gt = named(ft.grad(lambda v: (lax.all_gather(v, "i", tiled=True) * c.ravel()).sum()))(xs)
    np.testing.assert_array_equal(gt, c)
    # psum_scatter's result differs per member: the gradient of the members' sum
    x3 = np.arange(9.0).reshape(3, 3)
    gs = named(ft.grad(lambda v: (lax.psum_scatter(v, "i") ** 2)))(x3)
    np.testing.assert_allclose(gs, np.broadcast_to(2 * x3.sum(0), (3, 3)))
    np.testing.assert_allclose(gs, fd_grad(lambda x: (x.sum(0) ** 2).sum(), x3), rtol=1e-7)
    perm = [(0, 1), (1, 2), (2, 0)]
    # member j's value goes to member dst(j), which weighs it by its own row of c
    gp = named(ft.grad(lambda v, ci: (lax.ppermute(v, "i", perm) * ci).sum()))(xs, c)
    np.testing.assert_array_equal(gp, c[[1, 2, 0]])


def test_grad_of_vmap_and_vmap_of_grad_agree_for_a_pvary_loss():
    xs = np.array([0.5, -1.0, 2.0])

    def member(w, x):
        return lax.psum(lax.pvary(w, "i") ** 2 * x, "i")

    inside = named(ft.grad(member), in_axes=(None, 0))(1.5, xs)
    outside = ft.grad(lambda w: named(member, in_axes=(None, 0))(w, xs)[0])(1.5)
    np.testing.assert_allclose(inside, np.full(3, outside), rtol=1e-15)


# -- errors -----------------------------------------------------------------------------------


def test_unbound_axis_names_are_errors_naming_the_way_out(no_processes):
    with pytest.raises(UnboundAxisError, match=r"psum: axis name 'k' is not bound here; .*"
                       r"vmap\(f, axis_name='k'\).*functrans.distributed.AXIS"):
        named(lambda v: lax.psum(v, "k"))(X)
    with pytest.raises(UnboundAxisError, match="axis name 'i' is not bound"):
        lax.pmax(X, "i")
    with pytest.raises(UnboundAxisError, match=r"call functrans.distributed.initialize\(\) first"):
        lax.psum(X, dist.AXIS)
    with pytest.raises(RuntimeError, match=r"initialize\(\) before"):
        dist.process_index()


def test_an_unbound_axis_error_names_the_traced_function():
    def member_loss(v):
        return lax.all_gather(v, "k")

    for f, x in ((named(member_loss), X), (ft.jit(member_loss), X),
                 (ft.grad(lambda v: lax.psum(v, "k")), 1.0)):
        with pytest.raises(UnboundAxisError, match=r"^(member_loss|<lambda>): (all_gather|psum):"
                           r" axis name 'k' is not bound here"):
            f(x)


def test_an_axis_named_twice_is_an_error():
    # psum over ("i", "i") summed once while pmean divided by the size twice
    def member(v):
        return lax.pmean(v, ("i", "i"))

    with pytest.raises(ValueError, match=r"^member: pmean: axis_name \('i', 'i'\) names the "
                       r"axis 'i' twice; name each axis once"):
        named(member)(X)
    with pytest.raises(ValueError, match=r"psum: axis_name .* names the axis 'i' twice"):
        named(lambda v: lax.psum(v, ("i", "j", "i")))(X)


def test_argument_errors():
    with pytest.raises(TypeError, match="axis_name must be a hashable name"):
        ft.vmap(lambda v: v, axis_name=("i", "j"))
    with pytest.raises(ValueError, match="is functrans.distributed.AXIS"):
        ft.vmap(lambda v: v, axis_name=dist.AXIS)
    with pytest.raises(TypeError, match="takes one axis name, got the tuple"):
        named(lambda v: lax.all_gather(v, ("i",)))(X)
    with pytest.raises(ShapeError, match=r"psum_scatter: axis 0 of f64\[4\] must have one entry "
                       r"per member \(3\), got 4; use tiled=True"):
        named(lambda v: lax.psum_scatter(v, "i"))(X)
    with pytest.raises(ValueError, match=r"ppermute: perm \(\(0, 1\), \(2, 1\)\) uses a "
                       "destination more than once"):
        named(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]))(X)
    with pytest.raises(ValueError, match="names a source outside the 3 members"):
        named(lambda v: lax.ppermute(v, "i", [(3, 1)]))(X)
    with pytest.raises(TypeError, match="psum: expected a numeric array, got bool"):
        named(lambda v: lax.psum(v > 0, "i"))(X)


# -- the process path, with a stand-in group -------------------------------------------------


def test_jit_calls_the_collective_every_time(recording):
    f = ft.jit(lambda v: lax.psum(v * 2.0, dist.AXIS) + lax.axis_index(dist.AXIS))
    for _ in range(3):
        np.testing.assert_array_equal(f(X), X * 6.0 + 1)
    assert recording.calls == ["psum"] * 3
    assert "psum[axis_name=('processes',)]" in str(f.lower(X).jaxpr)


def test_process_collectives_eagerly_and_their_layout(recording):
    np.testing.assert_array_equal(lax.all_gather(X, dist.AXIS, axis=1),
                                  np.stack([X * 0, X, X * 2], axis=1))
    np.testing.assert_array_equal(lax.all_gather(X, dist.AXIS, tiled=True),
                                  np.concatenate([X * 0, X, X * 2]))
    y = np.arange(12.0).reshape(2, 6)
    np.testing.assert_array_equal(lax.psum_scatter(y, dist.AXIS, scatter_dimension=1, tiled=True),
                                  y[:, 2:4] * 3)
    np.testing.assert_array_equal(lax.ppermute(X, dist.AXIS, [(0, 1)]), X * 10)
    assert dist.process_index() == 1 and dist.process_count() == 3
    # a collective whose result nothing reads still runs on every call (the
    # other ranks run it too); the gradient of this linear loss, computed from
    # constants only, is computed once, when traced
    c = np.array([1.0, 2.0])
    g = ft.jit(ft.grad(lambda w: lax.psum((lax.pvary(w, dist.AXIS) * c).sum(), dist.AXIS)))
    np.testing.assert_array_equal(g(np.zeros(2)), c * 3)
    recording.calls.clear()
    np.testing.assert_array_equal(g(np.zeros(2)), c * 3)
    assert recording.calls == ["psum"]


def test_eager_process_collectives_check_their_operands_first(recording):
    # the shape and dtype rules run before any communication, as under a trace
    # (MPI answered bool sums with "Invalid MPI_Op", compared complex numbers
    # in pmax, and psum_scatter failed in a reshape)
    with pytest.raises(TypeError, match=r"^psum: expected a numeric array, got bool\[2\]"):
        lax.psum(np.array([True, False]), dist.AXIS)
    with pytest.raises(TypeError, match=r"^pmax: expected a real numeric array, got c128\[1\]"):
        lax.pmax(np.array([1j]), dist.AXIS)
    with pytest.raises(ShapeError, match=r"^psum_scatter: axis 0 of f64\[4,2\] has size 4, which "
                       r"does not divide into 3 members; pad it to a multiple of 3"):
        lax.psum_scatter(np.ones((4, 2)), dist.AXIS, tiled=True)
    with pytest.raises(ShapeError, match=r"must have one entry per member \(3\), got 2"):
        lax.psum_scatter(np.ones(2), dist.AXIS)
    assert recording.calls == []


def test_initialize_gives_one_process_outside_a_launch():
    saved = collectives.installed_group()
    try:
        dist.initialize()
        assert (dist.process_index(), dist.process_count()) == (0, 1)
        np.testing.assert_array_equal(lax.psum(X, dist.AXIS), X)
        np.testing.assert_array_equal(ft.grad(lambda v: lax.psum(v ** 2, dist.AXIS).sum())(X),
                                      2 * X)
        with pytest.raises(ValueError, match="timeout must be a positive number"):
            dist.initialize(timeout=0)
    finally:
        collectives.set_process_group(saved)


def test_initialize_without_mpi4py(monkeypatch):
    saved = collectives.installed_group()
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py raises ImportError
    try:
        for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"):
            monkeypatch.delenv(var, raising=False)
        dist.initialize()
        assert dist.process_count() == 1
        np.testing.assert_array_equal(lax.all_gather(X, dist.AXIS), X[None])
        monkeypatch.setenv("PMI_SIZE", "2")
        with pytest.raises(ImportError, match=r"launched by an MPI launcher .* pip install "
                           r"'functrans\[mpi\]'"):
            dist.initialize()
    finally:
        collectives.set_process_group(saved)


def test_every_collective_declares_its_rules():
    for prim in (collectives.psum_p, collectives.psum_ct_p, collectives.pvary_p,
                 collectives.all_gather_p, collectives.psum_scatter_p, collectives.ppermute_p):
        assert prim.jvp and prim.transpose and prim.batch and prim.linear and prim.effect
    for prim in (collectives.pmax_p, collectives.pmin_p, collectives.axis_index_p):
        assert prim.jvp and prim.batch and not prim.linear and prim.effect


# -- the NCCL path, with stand-ins for CuPy and NCCL (no GPU here) ----------------------------


class FakeDeviceArray:
    """A NumPy array standing for a CuPy one: its device pointer is its buffer's address."""

    def __init__(self, a):
        self.a = a
        self.shape, self.dtype, self.size, self.flags = a.shape, a.dtype, a.size, a.flags
        self.data = type("Memory", (), {"ptr": a.ctypes.data})()
        FakeNCCL.memory[a.ctypes.data] = a

    def copy(self, order="C"):
        return FakeDeviceArray(self.a.copy(order=order))

    def view(self, dtype):
        return FakeDeviceArray(self.a.view(dtype))

    def reshape(self, shape):
        return FakeDeviceArray(self.a.reshape(shape))

    @property
    def real(self):
        return FakeDeviceArray(self.a.real)


class FakeNCCL:
    """``cupy.cuda.nccl`` for one rank: each call is recorded and done on the
    buffers behind the pointers it is given."""

    memory: dict = {}
    NCCL_FLOAT32, NCCL_FLOAT64, NCCL_INT32, NCCL_INT64 = 7, 8, 2, 4
    NCCL_FLOAT16, NCCL_UINT8, NCCL_INT8, NCCL_UINT32, NCCL_UINT64 = 6, 1, 0, 3, 5
    NCCL_SUM, NCCL_MAX, NCCL_MIN = 0, 2, 3
    calls: list = []

    @staticmethod
    def get_unique_id():
        return (1, 2, 3)

    @staticmethod
    def groupStart():  # noqa: N802 (NCCL's names)
        FakeNCCL.calls.append("groupStart")

    @staticmethod
    def groupEnd():  # noqa: N802
        FakeNCCL.calls.append("groupEnd")

    class NcclCommunicator:
        def __init__(self, ndev, uid, rank):
            FakeNCCL.calls.append(("init", ndev, uid, rank))

        def _buf(self, ptr, count):
            return FakeNCCL.memory[ptr].reshape(-1)[:count]

        def allReduce(self, send, recv, count, dtype, op, stream):  # noqa: N802
            FakeNCCL.calls.append(("allReduce", count, dtype, op, stream))
            self._buf(recv, count)[...] = self._buf(send, count)

        def allGather(self, send, recv, count, dtype, stream):  # noqa: N802
            FakeNCCL.calls.append(("allGather", count, dtype, stream))
            self._buf(recv, count)[...] = self._buf(send, count)

        def reduceScatter(self, send, recv, count, dtype, op, stream):  # noqa: N802
            FakeNCCL.calls.append(("reduceScatter", count, dtype, op, stream))
            self._buf(recv, count)[...] = self._buf(send, count)

        def send(self, buf, count, dtype, peer, stream):
            FakeNCCL.calls.append(("send", count, dtype, peer))
            FakeNCCL.sent = self._buf(buf, count).copy()

        def recv(self, buf, count, dtype, peer, stream):
            FakeNCCL.calls.append(("recv", count, dtype, peer))
            self._buf(buf, count)[...] = FakeNCCL.sent


def test_nccl_calls_on_device_arrays(monkeypatch):
    import types

    from functrans.distributed import _MPIGroup

    wrap = FakeDeviceArray
    cuda = types.SimpleNamespace(
        nccl=FakeNCCL, Device=lambda i: types.SimpleNamespace(use=lambda: None),
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
        get_current_stream=lambda: types.SimpleNamespace(ptr=77))
    fake_cupy = types.SimpleNamespace(
        cuda=cuda, empty_like=lambda x: wrap(np.empty_like(x.a)),
        zeros_like=lambda x: wrap(np.zeros_like(x.a)),
        empty=lambda shape, dtype: wrap(np.empty(shape, dtype)))
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", FakeNCCL)
    one = types.SimpleNamespace(Get_rank=lambda: 0, Get_size=lambda: 1,
                                Split_type=lambda kind: one, bcast=lambda v, root: v)
    mpi = types.SimpleNamespace(COMM_TYPE_SHARED=1)
    group = _MPIGroup(mpi, one, None)
    FakeNCCL.calls.clear()
    x = np.arange(6.0).reshape(2, 3)
    out = group.allreduce(wrap(x), "sum", "psum")
    np.testing.assert_array_equal(out.a, x)
    assert FakeNCCL.calls == [("init", 1, (1, 2, 3), 0), ("allReduce", 6, 8, 0, 77)]
    z = x + 1j * x
    np.testing.assert_array_equal(group.allreduce(wrap(z), "sum", "psum").a, z)
    assert FakeNCCL.calls[-1] == ("allReduce", 12, 8, 0, 77)  # complex as pairs of reals
    np.testing.assert_array_equal(group.allgather(wrap(x.astype(np.float32)), "g").a, x[None])
    assert FakeNCCL.calls[-1] == ("allGather", 6, 7, 77)
    np.testing.assert_array_equal(group.reduce_scatter(wrap(x[None]), "s").a, x)
    assert FakeNCCL.calls[-1] == ("reduceScatter", 6, 8, 0, 77)
    np.testing.assert_array_equal(group.permute(wrap(x), ((0, 0),), "p").a, x)
    assert FakeNCCL.calls[-4:] == ["groupStart", ("send", 6, 8, 0), ("recv", 6, 8, 0), "groupEnd"]
    with pytest.raises(TypeError, match="the NCCL collectives take .* got bool"):
        group.allreduce(wrap(np.ones(2, bool)), "sum", "psum")
