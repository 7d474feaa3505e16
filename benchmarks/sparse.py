"""Sparse Hessians (``functrans.sparse``) and Newton's method at scale.

* ``sparse.hessian.rosenbrock.n{1e3,1e5,1e6}``: the steady-state sparse
  Hessian of the chained Rosenbrock function ``sum(100 (x[1:] - x[:-1]**2)**2
  + (1 - x[:-1])**2)`` (tridiagonal, three colours) against the floor, the
  closed form put into ``scipy.sparse.diags`` by hand; at n=1e3 also JAX's
  dense ``jit(hessian)`` where JAX is importable; at every n the JAX-based
  sparse peers ``asdex`` and ``sparsejac`` (jitted, BCOO results) where
  installed (optional: never required).
* ``sparse.hessian_first_call.rosenbrock.n{...}`` (self-timed): a fresh
  ``functrans.sparse.hessian`` called once (tracing, detection, colouring,
  compiling the compressed program and evaluating), against one call of the
  floor; the peers' set-up and first call up to n=1e5.
* ``sparse.newton.ext_rosenbrock.n1e6`` (self-timed): ``minimize(method=
  "newton")`` on the separable extended Rosenbrock function from
  ``tile([-1.2, 1])`` to ``|g| <= 1e-6``, against a hand-written sparse
  Newton (closed-form gradient and ``scipy.sparse`` Hessian, ``spsolve``,
  backtracking).
* ``sparse.newton.minimal_surface.g200`` (self-timed): the minimal-surface
  problem on a 200 x 200 grid by sparse Newton (SuperLU); its only variant is
  its floor.  The 500 x 500 grid converges too (docs/sparse.md gives its
  time), but one solve takes minutes, too long to repeat here.

``--quick`` (``FUNCTRANS_BENCH_MODE=quick``) runs n up to 1e4 and a 50 x 50
grid.  Full mode takes minutes: each Newton solve at n=1e6 takes tens of
seconds and is repeated.
"""

from __future__ import annotations

import importlib
import os
import time

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Workload

QUICK = {"hessian": (1000, 10_000), "newton": 10_000, "grid": 50}
FULL = {"hessian": (1000, 100_000, 1_000_000), "newton": 1_000_000, "grid": 200}


def sizes() -> dict:
    return QUICK if os.environ.get("FUNCTRANS_BENCH_MODE") == "quick" else FULL


def label(n: int) -> str:
    return f"n1e{int(round(np.log10(n)))}"


# -- the chained Rosenbrock Hessian ----------------------------------------------------


def rosenbrock(x):
    import functrans.numpy as fnp

    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian_scipy(x):
    """The tridiagonal Hessian from its closed form, by hand."""
    import scipy.sparse as sp

    a, b = x[:-1], x[1:]
    d = np.zeros_like(x)
    d[:-1] = 1200.0 * a ** 2 - 400.0 * b + 2.0
    d[1:] += 200.0
    off = -400.0 * a
    return sp.diags([off, d, off], [-1, 0, 1], format="csr")


def _jax_rosenbrock(jnp):
    def rosen(v):
        return jnp.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1.0 - v[:-1]) ** 2)

    return rosen


def _sparse_peer(name: str):
    """``(jax namespace, module)`` for the optional JAX-based sparse peers
    ``asdex`` and ``sparsejac`` where they and JAX import, else None."""
    j = _peers.jax()
    if j is None:
        return None
    try:
        module = importlib.import_module(name)
    except Exception:  # noqa: BLE001  (any failure means: no peer)
        return None
    return j, module


def _peer_builders(x: np.ndarray) -> dict:
    """Per installed peer, a function making its jitted sparse Hessian of the
    chained Rosenbrock function at ``x`` (set-up included) and returning the
    call that evaluates it.  asdex detects and colours itself; sparsejac is
    given the pattern (functrans.sparse's, equal to the true one here) and
    colours it.  Both return JAX BCOO arrays, not SciPy ones."""
    builders = {}
    if (found := _sparse_peer("asdex")) is not None:
        (j, asdex) = found

        def make_asdex():
            xj = j.jnp.asarray(x)
            h = j.jax.jit(asdex.hessian(_jax_rosenbrock(j.jnp), xj))
            return lambda: j.jax.block_until_ready(h(xj))

        builders["asdex (jit, BCOO)"] = make_asdex
    if (found := _sparse_peer("sparsejac")) is not None:
        (j, sparsejac) = found
        from jax.experimental import sparse as jsparse

        def make_sparsejac():
            import functrans.sparse as fsp

            pattern = fsp.hessian_sparsity(rosenbrock)(x).tocoo()
            where = np.stack([pattern.row, pattern.col], 1)
            bcoo = jsparse.BCOO((j.jnp.ones(pattern.nnz, bool), j.jnp.asarray(where)),
                                shape=pattern.shape)
            xj = j.jnp.asarray(x)
            h = j.jax.jit(sparsejac.jacrev(j.jax.grad(_jax_rosenbrock(j.jnp)), sparsity=bcoo))
            return lambda: j.jax.block_until_ready(h(xj))

        builders["sparsejac (jit, BCOO)"] = make_sparsejac
    return builders


def _lazy(make):
    """A variant set up on its first call (set-up costs seconds at n=1e6 and
    is not part of a steady-state figure)."""
    made: list = []

    def call():
        if not made:
            made.append(make())
        return made[0]()

    return call


def _hessian_variants(x: np.ndarray) -> dict:
    import functrans.sparse as fsp

    h = fsp.hessian(rosenbrock)
    variants = {"scipy.sparse (hand)": lambda: rosenbrock_hessian_scipy(x),
                "functrans.sparse": lambda: h(x)}
    if x.size <= 1000 and (j := _peers.jax()) is not None:
        jax, jnp = j.jax, j.jnp
        hj, xj = jax.jit(jax.hessian(_jax_rosenbrock(jnp))), jnp.asarray(x)
        variants["jax.jit (dense)"] = lambda: hj(xj).block_until_ready()
    for name, make in _peer_builders(x).items():
        variants[name] = _lazy(make)
    return variants


#: The largest n whose first call the peers are timed at: their set-up takes
#: tens of seconds at n=1e6, and the first-call row repeats it.
PEER_FIRST_CALL_MAX_N = 100_000


def _first_call_variants(x: np.ndarray) -> dict:
    import functrans.sparse as fsp

    def floor():
        start = time.perf_counter()
        rosenbrock_hessian_scipy(x)
        return time.perf_counter() - start

    def first():
        start = time.perf_counter()
        fsp.hessian(rosenbrock)(x)
        return time.perf_counter() - start

    variants = {"scipy.sparse (hand)": floor, "functrans.sparse": first}
    if x.size <= PEER_FIRST_CALL_MAX_N:
        for name, make in _peer_builders(x).items():
            def peer_first(make=make):
                start = time.perf_counter()
                make()()
                return time.perf_counter() - start

            variants[name] = peer_first
    return variants


# -- Newton on the separable extended Rosenbrock function ------------------------------


def ext_rosenbrock(x):
    import functrans.numpy as fnp

    a, b = x[::2], x[1::2]
    return fnp.sum(100.0 * (b - a ** 2) ** 2 + (1.0 - a) ** 2)


def hand_newton(x0: np.ndarray, gtol: float = 1e-6, maxiter: int = 200) -> tuple[np.ndarray, int]:
    """Newton with the closed-form gradient and sparse Hessian, spsolve and
    Armijo backtracking; the Hessian's 2 x 2 blocks are positive definite
    along this path from tile([-1.2, 1])."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    def f(x):
        a, b = x[::2], x[1::2]
        return float(np.sum(100.0 * (b - a ** 2) ** 2 + (1.0 - a) ** 2))

    def grad(x):
        a, b = x[::2], x[1::2]
        g = np.empty_like(x)
        g[::2] = -400.0 * a * (b - a ** 2) - 2.0 * (1.0 - a)
        g[1::2] = 200.0 * (b - a ** 2)
        return g

    def hess(x):
        a, b = x[::2], x[1::2]
        d = np.empty_like(x)
        d[::2] = 1200.0 * a ** 2 - 400.0 * b + 2.0
        d[1::2] = 200.0
        off = np.zeros(x.size - 1)
        off[::2] = -400.0 * a
        return sp.diags([off, d, off], [-1, 0, 1], format="csc")

    x = x0.copy()
    for k in range(maxiter):
        g = grad(x)
        if np.linalg.norm(g) <= gtol:
            return x, k
        d = -spsolve(hess(x), g)
        fx, slope, t = f(x), float(g @ d), 1.0
        while f(x + t * d) > fx + 1e-4 * t * slope and t > 1e-12:
            t *= 0.5
        x = x + t * d
    return x, maxiter


def _newton_variants(n: int) -> dict:
    from functrans.optimize import minimize

    x0 = np.tile([-1.2, 1.0], n // 2)

    def hand():
        start = time.perf_counter()
        x, _ = hand_newton(x0)
        elapsed = time.perf_counter() - start
        if np.abs(x - 1.0).max() > 1e-6:
            raise RuntimeError("hand-written Newton did not converge")
        return elapsed

    def ours():
        start = time.perf_counter()
        r = minimize(ext_rosenbrock, x0, method="newton", options={"gtol": 1e-6})
        elapsed = time.perf_counter() - start
        if not r.success or np.linalg.norm(r.jac) > 1e-6:
            raise RuntimeError(f"functrans Newton did not converge: {r.message}")
        return elapsed

    return {"scipy.sparse (hand)": hand, "functrans newton": ours}


def minimal_surface_problem(k: int):
    """The area of the surface over a k x k interior grid with a boundary
    lifted along one edge, and the starting heights (zeros)."""
    import functrans.numpy as fnp

    boundary = np.zeros((k + 2, k + 2))
    boundary[0, :] = np.sin(np.linspace(0.0, np.pi, k + 2))
    h = 1.0 / (k + 1)

    def area(u):
        g = fnp.pad(u.reshape(k, k), 1) + boundary
        ux, uy = (g[1:, :-1] - g[:-1, :-1]) / h, (g[:-1, 1:] - g[:-1, :-1]) / h
        return h * h * fnp.sum(fnp.sqrt(1.0 + ux ** 2 + uy ** 2))

    return area, np.zeros(k * k)


def _surface_variants(k: int) -> dict:
    from functrans.optimize import minimize

    area, x0 = minimal_surface_problem(k)

    def ours():
        start = time.perf_counter()
        r = minimize(area, x0, method="newton", options={"gtol": 1e-8})
        elapsed = time.perf_counter() - start
        if not r.success:
            raise RuntimeError(f"minimal surface did not converge: {r.message}")
        return elapsed

    return {"functrans newton": ours}


def workloads() -> list[Workload]:
    s = sizes()
    out = []
    for n in s["hessian"]:
        x = np.random.default_rng(0).uniform(0.5, 1.5, n)
        out.append(Workload(
            name=f"sparse.hessian.rosenbrock.{label(n)}",
            description=f"sparse Hessian of chained Rosenbrock, x: f64[{n:,}], steady state",
            variants=_hessian_variants(x),
            floor="scipy.sparse (hand)",
        ))
        out.append(Workload(
            name=f"sparse.hessian_first_call.rosenbrock.{label(n)}",
            description=f"first call of a fresh sparse.hessian (detect, colour, compile), n={n:,}",
            variants=_first_call_variants(x),
            floor="scipy.sparse (hand)",
            metric="self_timed",
        ))
    n = s["newton"]
    out.append(Workload(
        name=f"sparse.newton.ext_rosenbrock.{label(n)}",
        description=f"minimize(method='newton') of extended Rosenbrock to |g| <= 1e-6, n={n:,}",
        variants=_newton_variants(n),
        floor="scipy.sparse (hand)",
        metric="self_timed",
    ))
    k = s["grid"]
    out.append(Workload(
        name=f"sparse.newton.minimal_surface.g{k}",
        description=f"minimize(method='newton') of a minimal surface on a {k} x {k} grid",
        variants=_surface_variants(k),
        floor="functrans newton",
        metric="self_timed",
    ))
    return out
