"""Dense Hessians, per-example gradients, and the memory of chunked Hessians.

* ``jacobians.hessian.rosenbrock.n{10,100,1000}`` (W3): the dense Hessian of
  the chained Rosenbrock function ``sum(100 (x[1:] - x[:-1]**2)**2 +
  (1 - x[:-1])**2)``; ``ft.hessian`` is ``jacfwd(jacrev(f))``, the input
  basis pushed through the linearized gradient as bands (three, here;
  ``functrans.interpreters.structured``) and written out once.  The floor
  fills the tridiagonal matrix by hand.
* ``jacobians.hessian.logsumexp.n100``, ``jacobians.hessian.mlp`` and
  ``jacobians.jacfwd.mlp``: dense problems, where the basis loses its band
  structure at the first contraction or the reductions after it (the Hessian of
  logsumexp, the Hessian in x of a 32-64-1 tanh MLP's output, the Jacobian of
  its 32-64 tanh layer); the floors are the closed forms in NumPy.
* ``jacobians.hessian.glm.n2000_d50``: the Hessian in w of a logistic
  regression's loss ``sum(logaddexp(0, X @ w) - y * (X @ w))``, X f64[2000, 50]
  (target: within 2x of the floor, the closed form ``X.T @ (d[:, None] * X)``).
* ``jacobians.per_example_grad.mlp`` (W5): per-example gradients of the
  squared error of a 32-64-1 tanh MLP over a batch of 256, by
  ``vmap(grad(loss), in_axes=(None, 0, 0))``; the floor is the batched
  backward pass written out in NumPy (einsum for the per-example outer
  products).  autograd has no ``vmap`` and is not run here.
* ``jacobians.hessian_memory.n5000`` (metric ``peak_memory``): the peak
  traced allocation of ``ft.hessian(f, chunk_size=c)(x)`` at n=5,000 for a
  few chunk sizes and for ``chunk_size=None``; the Hessian itself is 200 MB
  (the floor: NumPy filling it by hand); with the banded push every chunk
  size needs little beyond the result.  Peers are not run: tracemalloc
  does not see their allocators.

Variants as in ``benchmarks.autodiff``: ``numpy`` (floor), ``functrans``,
``functrans.jit`` and, where importable, ``jax`` / ``jax.jit`` (x64),
``autograd`` and ``torch.func``.
"""

from __future__ import annotations

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Workload, fresh_jit, own_variants

HESSIAN_SIZES = (10, 100, 1000)
LSE_N = 100
GLM_N, GLM_D = 2000, 50
BATCH, N_IN, N_HIDDEN = 256, 32, 64
MEMORY_N = 5000
MEMORY_CHUNKS = (10, 100, 1000, None)


# -- W3: dense Hessian of the chained Rosenbrock function -------------------------


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian_numpy(x):
    n = x.size
    a, b = x[:-1], x[1:]
    h = np.zeros((n, n))
    i = np.arange(n - 1)
    h[i, i] = 1200.0 * a**2 - 400.0 * b + 2.0
    h[i + 1, i + 1] += 200.0
    h[i, i + 1] = h[i + 1, i] = -400.0 * a
    return h


def _rosen(xp):
    def rosen(x):
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    return rosen


def _hessian_variants(x: np.ndarray) -> dict:
    import functrans as ft

    variants = own_variants(lambda: rosenbrock_hessian_numpy(x), ft.hessian(rosenbrock), x)
    if (j := _peers.jax()) is not None:
        jax = j.jax
        xj = j.jnp.asarray(x)
        hx, hxj = jax.hessian(_rosen(j.jnp)), jax.jit(jax.hessian(_rosen(j.jnp)))
        variants["jax"] = lambda: hx(xj).block_until_ready()
        variants["jax.jit"] = lambda: hxj(xj).block_until_ready()
    if (a := _peers.autograd()) is not None:
        ha = a.autograd.hessian(_rosen(a.anp))
        variants["autograd"] = lambda: ha(x)
    if (t := _peers.torch()) is not None:
        torch = t.torch
        xt = torch.tensor(x, dtype=torch.float64)
        ht = t.func.hessian(_rosen(torch))
        variants["torch.func"] = lambda: ht(xt)
    return variants


# -- dense Jacobians and Hessians: no band survives the first contraction ------------


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_hessian_numpy(x):
    p = np.exp(x - np.max(x))
    p /= p.sum()
    return np.diag(p) - np.outer(p, p)


def mlp_out(x, w1, b1, w2):
    """A 32-64-1 tanh MLP's output as a function of its input x f64[32]."""
    return np.tanh(x @ w1 + b1) @ w2


def mlp_hidden(x, w1, b1):
    return np.tanh(x @ w1 + b1)


def mlp_hessian_numpy(x, w1, b1, w2):
    t = np.tanh(x @ w1 + b1)
    return (w1 * (w2 * -2.0 * t * (1.0 - t * t))) @ w1.T


def mlp_jacobian_numpy(x, w1, b1):
    t = np.tanh(x @ w1 + b1)
    return (1.0 - t * t)[:, None] * w1.T


def glm_loss(w, X, y):
    """A logistic regression's negative log-likelihood, labels y in {0, 1}."""
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z)


def glm_hessian_numpy(w, X):
    s = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ ((s * (1.0 - s))[:, None] * X)


def _glm(xp):
    def loss(w, X, y):
        z = X @ w
        return xp.sum(xp.logaddexp(0.0, z) - y * z)

    return loss


def _lse(xp):
    def lse(x):
        m = xp.max(x)
        return m + xp.log(xp.sum(xp.exp(x - m)))

    return lse


def _dense_variants(floor, transform, fn, fn_xp, args, argnums=0) -> dict:
    """``transform`` (``"hessian"`` or ``"jacfwd"``) of ``fn`` at ``args``
    beside the same for JAX; ``fn_xp(xp)`` writes ``fn`` for another array module."""
    import functrans as ft

    variants = own_variants(floor, getattr(ft, transform)(fn, argnums), *args)
    if (j := _peers.jax()) is not None:
        jax = j.jax
        ja = [j.jnp.asarray(a) for a in args]
        tj = getattr(jax, transform)(fn_xp(j.jnp), argnums)
        tjj = jax.jit(tj)
        variants["jax"] = lambda: tj(*ja).block_until_ready()
        variants["jax.jit"] = lambda: tjj(*ja).block_until_ready()
    return variants


def _dense_workloads(rng) -> list[Workload]:
    import functrans as ft

    x = rng.standard_normal(LSE_N)
    w1 = rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN)
    b1 = rng.standard_normal(N_HIDDEN) * 0.1
    w2 = rng.standard_normal(N_HIDDEN) / np.sqrt(N_HIDDEN)
    xm = rng.standard_normal(N_IN)
    X = rng.standard_normal((GLM_N, GLM_D))
    y = (rng.random(GLM_N) < 0.5).astype(np.float64)
    w = rng.standard_normal(GLM_D) * 0.1
    return [
        Workload(
            name=f"jacobians.hessian.glm.n{GLM_N}_d{GLM_D}",
            description=f"Hessian in w of a logistic regression's loss, X: f64[{GLM_N}, {GLM_D}]",
            variants=_dense_variants(lambda: glm_hessian_numpy(w, X), "hessian", glm_loss,
                                     _glm, (w, X, y)),
            floor="numpy",
            fresh={"functrans.jit": fresh_jit(ft.hessian, glm_loss, w, X, y)},
        ),
        Workload(
            name=f"jacobians.hessian.logsumexp.n{LSE_N}",
            description=f"dense Hessian of logsumexp, x: f64[{LSE_N}]",
            variants=_dense_variants(lambda: logsumexp_hessian_numpy(x), "hessian",
                                     logsumexp, _lse, (x,)),
            floor="numpy",
        ),
        Workload(
            name="jacobians.hessian.mlp",
            description=f"Hessian in x of a {N_IN}-{N_HIDDEN}-1 tanh MLP's output",
            variants=_dense_variants(
                lambda: mlp_hessian_numpy(xm, w1, b1, w2), "hessian", mlp_out,
                lambda xp: lambda x, w1, b1, w2: xp.tanh(x @ w1 + b1) @ w2, (xm, w1, b1, w2)),
            floor="numpy",
        ),
        Workload(
            name="jacobians.jacfwd.mlp",
            description=f"jacfwd in x of a {N_IN}-{N_HIDDEN} tanh layer",
            variants=_dense_variants(
                lambda: mlp_jacobian_numpy(xm, w1, b1), "jacfwd", mlp_hidden,
                lambda xp: lambda x, w1, b1: xp.tanh(x @ w1 + b1), (xm, w1, b1)),
            floor="numpy",
        ),
    ]


# -- W5: per-example gradients of a 32-64-1 tanh MLP ---------------------------------


def mlp_loss(params, x, y):
    """Squared error of one example: x f64[32], y f64[]."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return (h @ w2 + b2 - y) ** 2


def per_example_grads_numpy(params, xs, ys):
    """The batched backward pass of ``mlp_loss``, one gradient per row."""
    w1, b1, w2, b2 = params
    h = np.tanh(xs @ w1 + b1)                   # (B, 64)
    d_out = 2.0 * (h @ w2 + b2 - ys)            # (B,)
    g_w2 = h * d_out[:, None]                   # (B, 64)
    d_z = (d_out[:, None] * w2) * (1.0 - h**2)  # (B, 64)
    g_w1 = np.einsum("bi,bj->bij", xs, d_z)     # (B, 32, 64)
    return g_w1, d_z, g_w2, d_out


def _mlp_data(rng):
    params = (
        rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN),
        rng.standard_normal(N_HIDDEN) * 0.1,
        rng.standard_normal(N_HIDDEN) / np.sqrt(N_HIDDEN),
        np.float64(0.1) + np.zeros(()),
    )
    return params, rng.standard_normal((BATCH, N_IN)), rng.standard_normal(BATCH)


def _per_example_variants(params, xs, ys) -> dict:
    import functrans as ft

    pe = ft.vmap(ft.grad(mlp_loss), in_axes=(None, 0, 0))
    variants = own_variants(lambda: per_example_grads_numpy(params, xs, ys), pe, params, xs, ys)
    if (j := _peers.jax()) is not None:
        jax, jnp = j.jax, j.jnp

        def loss_jax(params, x, y):
            w1, b1, w2, b2 = params
            return (jnp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2

        pj = jax.vmap(jax.grad(loss_jax), in_axes=(None, 0, 0))
        pjj = jax.jit(pj)
        args = jax.tree_util.tree_map(jnp.asarray, (params, xs, ys))
        variants["jax"] = lambda: jax.block_until_ready(pj(*args))
        variants["jax.jit"] = lambda: jax.block_until_ready(pjj(*args))
    if (t := _peers.torch()) is not None:
        torch, func = t.torch, t.func

        def loss_torch(params, x, y):
            w1, b1, w2, b2 = params
            return (torch.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2

        pt = func.vmap(func.grad(loss_torch), in_dims=(None, 0, 0))
        tp = tuple(torch.tensor(p, dtype=torch.float64) for p in params)
        txs, tys = torch.tensor(xs, dtype=torch.float64), torch.tensor(ys, dtype=torch.float64)
        variants["torch.func"] = lambda: pt(tp, txs, tys)
    return variants


# -- peak memory of the chunked Hessian ------------------------------------------------


def _memory_variants(x: np.ndarray) -> dict:
    import functrans as ft

    def chunked(c):
        h = ft.hessian(rosenbrock, chunk_size=c)
        return lambda: h(x)

    variants = {"numpy": lambda: rosenbrock_hessian_numpy(x)}
    variants.update({f"chunk_size={c}": chunked(c) for c in MEMORY_CHUNKS})
    return variants


def workloads() -> list[Workload]:
    rng = np.random.default_rng(0)
    out = []
    for n in HESSIAN_SIZES:
        x = rng.standard_normal(n)
        out.append(Workload(
            name=f"jacobians.hessian.rosenbrock.n{n}",
            description=f"dense Hessian of chained Rosenbrock, x: f64[{n:,}]",
            variants=_hessian_variants(x),
            floor="numpy",
        ))
    out.extend(_dense_workloads(rng))
    params, xs, ys = _mlp_data(rng)
    out.append(Workload(
        name="jacobians.per_example_grad.mlp",
        description=f"per-example grads of a {N_IN}-{N_HIDDEN}-1 tanh MLP, batch {BATCH}",
        variants=_per_example_variants(params, xs, ys),
        floor="numpy",
    ))
    out.append(Workload(
        name=f"jacobians.hessian_memory.n{MEMORY_N}",
        description=f"peak traced MB of ft.hessian(rosenbrock, chunk_size=c), x: f64[{MEMORY_N:,}]",
        variants=_memory_variants(rng.standard_normal(MEMORY_N)),
        floor="numpy",
        metric="peak_memory",
    ))
    return out
