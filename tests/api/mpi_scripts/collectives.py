"""Run by tests/api/test_distributed.py as ``mpiexec -n 2 python collectives.py``:
every check of the collectives across processes in one launch.  Each rank
computes what every rank holds (the data depend only on the rank), so the
expected values are plain NumPy over all ranks' data.  Prints ``ok <check>``
per check; any failure raises, which aborts both ranks."""

import numpy as np
from functrans.primitives import collectives

import functrans as ft
import functrans.distributed as dist
from functrans import lax

dist.initialize()
AXIS = dist.AXIS
rank, size = dist.process_index(), dist.process_count()
assert size == 2, size


def data(r, shape=(3, 4), dtype=np.float64):
    """Rank ``r``'s data: different on every rank."""
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) * (r + 1) - 3.5 * r).astype(dtype)


def every(shape=(3, 4), dtype=np.float64):
    return np.stack([data(r, shape, dtype) for r in range(size)])


def check(name, got, want, tol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if tol:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)
    print(f"ok {name} (rank {rank})", flush=True)


# -- values, eagerly and under jit ----------------------------------------------------------
x = data(rank)
for label, run in (("eager", lambda f, *a: f(*a)), ("jit", lambda f, *a: ft.jit(f)(*a))):
    check(f"psum {label}", run(lambda v: lax.psum(v, AXIS), x), every().sum(0))
    check(f"pmean {label}", run(lambda v: lax.pmean(v, AXIS), x), every().mean(0), 1e-15)
    check(f"pmax {label}", run(lambda v: lax.pmax(v, AXIS), x), every().max(0))
    check(f"pmin {label}", run(lambda v: lax.pmin(v, AXIS), x), every().min(0))
    check(f"all_gather {label}", run(lambda v: lax.all_gather(v, AXIS), x), every())
    check(f"all_gather axis=1 {label}", run(lambda v: lax.all_gather(v, AXIS, axis=1), x),
          np.moveaxis(every(), 0, 1))
    check(f"all_gather tiled {label}",
          run(lambda v: lax.all_gather(v, AXIS, axis=1, tiled=True), x),
          np.concatenate(list(every()), axis=1))
    check(f"psum_scatter tiled {label}",
          run(lambda v: lax.psum_scatter(v, AXIS, scatter_dimension=1, tiled=True), x),
          every().sum(0)[:, 2 * rank:2 * rank + 2])
    y = data(rank, (2, 3))
    check(f"psum_scatter {label}", run(lambda v: lax.psum_scatter(v, AXIS), y),
          every((2, 3)).sum(0)[rank])
    check(f"ppermute {label}", run(lambda v: lax.ppermute(v, AXIS, [(0, 1), (1, 0)]), x),
          every()[1 - rank])
    check(f"ppermute partial {label}", run(lambda v: lax.ppermute(v, AXIS, [(0, 1)]), x),
          every()[0] if rank == 1 else np.zeros_like(x))
    check(f"axis_index {label}", run(lambda v: v * lax.axis_index(AXIS), x), x * rank)

# dtypes, 0-d and empty operands, NaN
for dtype in (np.float32, np.int32, np.int64, np.complex128):
    v = data(rank, (5,), dtype)
    check(f"psum {np.dtype(dtype).name}", lax.psum(v, AXIS),
          every((5,), dtype).sum(0).astype(dtype))
check("psum 0-d", lax.psum(np.float64(rank + 1.5), AXIS), np.asarray(4.0))
check("psum python scalar", lax.psum(1.0, AXIS), np.asarray(2.0))
check("psum empty", lax.psum(np.zeros((0, 3)), AXIS), np.zeros((0, 3)))
nan = np.array([np.nan, 1.0, -0.0]) if rank == 0 else np.array([2.0, np.nan, 0.0])
check("pmax nan", lax.pmax(nan, AXIS), np.array([np.nan, np.nan, -0.0]))
check("pmin nan", lax.pmin(nan, AXIS), np.array([np.nan, np.nan, -0.0]))
check("non-contiguous", lax.psum(x.T, AXIS), every().sum(0).T)
# views whose memory is not in C order are sent in their logical order
check("all_gather transposed", lax.all_gather(x.T, AXIS), np.swapaxes(every(), 1, 2))
check("all_gather reversed", lax.all_gather(x[:, ::-1], AXIS), every()[:, :, ::-1])
check("ppermute transposed", lax.ppermute(x.T, AXIS, [(0, 1), (1, 0)]), every()[1 - rank].T)
check("psum_scatter transposed", lax.psum_scatter(x.T, AXIS, tiled=True),
      every().sum(0).T[2 * rank:2 * rank + 2])
check("pmax fortran", lax.pmax(np.asfortranarray(x), AXIS), every().max(0))
check("all_gather 0-d", lax.all_gather(np.float64(rank), AXIS), np.arange(2.0))
check("all_gather empty", lax.all_gather(np.zeros((0, 2)), AXIS), np.zeros((2, 0, 2)))
check("all_gather bool", lax.all_gather(np.array([rank == 0, True]), AXIS),
      np.array([[True, True], [False, True]]))
check("pmax 0-d", lax.pmax(np.float64(rank), AXIS), np.asarray(1.0))
check("pmin 0-d int", lax.pmin(np.int32(rank + 3), AXIS), np.asarray(3, np.int32))

# the generated code of jit calls the collective (every call communicates)
calls = []
group = collectives.installed_group()


class Counting:
    rank, size = group.rank, group.size

    def allreduce(self, v, op, what):
        calls.append(what)
        return group.allreduce(v, op, what)

    def __getattr__(self, name):
        return getattr(group, name)


collectives.set_process_group(Counting())
jf = ft.jit(lambda v: lax.psum(v * 2.0, AXIS))
for _ in range(3):
    check("jit psum", jf(x), 2.0 * every().sum(0))
assert calls == ["psum"] * 3, calls
collectives.set_process_group(group)

# -- derivatives: data-parallel loss over per-rank shards -----------------------------------
rng = np.random.default_rng(0)
A_all = rng.standard_normal((8, 3))  # the full batch; rank r holds rows 4r..4r+3
b_all = rng.standard_normal(8)
A, b = A_all[4 * rank:4 * rank + 4], b_all[4 * rank:4 * rank + 4]
w0 = np.array([0.3, -0.2, 0.5])


def local_loss(w, A, b):
    r = np.tanh(A @ w) - b
    return 0.5 * (r * r).sum()


def full_loss(w):
    return local_loss(w, A_all, b_all)


def dp_loss(w):
    """The full-batch loss, from this rank's shard: w is shared (pvary)."""
    return lax.psum(local_loss(lax.pvary(w, AXIS), A, b), AXIS)


g_full = ft.grad(full_loss)(w0)
check("grad dp", ft.grad(dp_loss)(w0), g_full, 1e-12)
check("jit grad dp", ft.jit(ft.grad(dp_loss))(w0), g_full, 1e-12)
check("value dp", dp_loss(w0), np.asarray(full_loss(w0)), 1e-12)
# without pvary: the gradient with respect to this rank's own copy; psum gives the full one
own = ft.grad(lambda w: lax.psum(local_loss(w, A, b), AXIS))(w0)
check("grad own copy", own, ft.grad(local_loss)(w0, A, b), 1e-12)
check("psum of own grads", lax.psum(own, AXIS), g_full, 1e-12)
check("pmean ddp", lax.pmean(ft.grad(local_loss)(w0, A, b), AXIS) * size, g_full, 1e-12)
check("hessian dp", ft.hessian(dp_loss)(w0), ft.hessian(full_loss)(w0), 1e-12)
check("jit hessian dp", ft.jit(ft.hessian(dp_loss))(w0), ft.hessian(full_loss)(w0), 1e-12)
v = np.array([1.0, -2.0, 0.5])
check("hvp dp", ft.hvp(dp_loss, (w0,), (v,)), ft.hessian(full_loss)(w0) @ v, 1e-12)
# grad with respect to the data shard: this rank's rows of the full gradient
gA = ft.grad(lambda A: lax.psum(local_loss(w0, A, b), AXIS))(A)
g_rows = ft.grad(lambda A: local_loss(w0, A, b_all))(A_all)[4 * rank:4 * rank + 4]
check("grad of shard", gA, g_rows, 1e-12)
# all_gather's and ppermute's transposes across processes
gg = ft.grad(lambda v: (lax.all_gather(v, AXIS) * every()).sum())(x)
check("grad all_gather", gg, every()[rank])
gp = ft.grad(lambda v: (lax.ppermute(v, AXIS, [(0, 1), (1, 0)]) * x).sum())(x)
check("grad ppermute", gp, every()[1 - rank])

# -- named vmap axes inside a process run ---------------------------------------------------
xs = data(rank, (3, 2))


def both(v):
    return lax.psum(v, ("i", AXIS))


check("vmap and processes", ft.vmap(both, axis_name="i")(xs),
      np.broadcast_to(every((3, 2)).sum((0, 1)), (3, 2)))
check("jit vmap and processes", ft.jit(ft.vmap(both, axis_name="i"))(xs),
      np.broadcast_to(every((3, 2)).sum((0, 1)), (3, 2)))
check("vmap axis_index", ft.vmap(lambda v: lax.axis_index("i") + 10 * lax.axis_index(AXIS),
                                 axis_name="i")(xs), np.arange(3, dtype=np.int32) + 10 * rank)
check("vmap grad dp", ft.vmap(ft.grad(dp_loss))(np.stack([w0, 2 * w0])),
      np.stack([g_full, ft.grad(full_loss)(2 * w0)]), 1e-12)
print(f"done rank {rank}", flush=True)
