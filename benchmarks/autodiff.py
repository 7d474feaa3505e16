"""Reverse mode and Hessian-vector products, called the way users call them.

* ``autodiff.grad.n10`` / ``autodiff.grad.n1e6`` (W1, W2): the gradient of
  ``sum(sin(x) * x + x**2)``.  At n=10 the figure is per-call overhead (for
  ``functrans`` without ``jit``: tracing the function, reusing the cached
  transform, and running the cached forward and backward code); at n=1e6 the
  NumPy work dominates.
* ``autodiff.hessian.n10``: ``jit(hessian)`` of the same function at n=10,
  a small program's fixed cost per call (argument checks, the cache lookup,
  a dozen NumPy calls on tiny arrays); the floor writes the diagonal
  Hessian ``diag(2 cos x - x sin x + 2)`` out.
* ``autodiff.hvp.rosenbrock.n1e5`` (W4): a Hessian-vector product of the
  chained Rosenbrock function (SciPy's ``rosen``)
  ``sum(100 (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)`` by forward over
  reverse mode, without forming the Hessian.
* ``autodiff.grad.masked_loglik.n1e6`` and ``autodiff.grad.piecewise.n1e6``:
  ``jit(grad)`` of programs with a selection, whose derivative programs
  carry strong zeros (docs/autodiff.md): a masked log-likelihood
  ``sum(where(observed, y log p + (1 - y) log(1 - p), 0))`` and a piecewise
  loss ``sum(where(r > 0, sqrt(r), 0.5 * r**2))``; with ``functrans.native``
  where Numba is installed.  JAX's gradient has NaNs at the masked entries.
* ``autodiff.grad.two_sites.401eqn``: eager ``grad`` of two functions written
  alike at other lines (100 steps of ``h = tanh(h * 0.9 + 0.1) * 1.01`` on
  f64[16], then a sum: 401 equations), called in turn, against one of them
  called twice (the floor).  They share one cached plan and compiled code,
  each call placed at its own lines (docs/debugging.md); the ratio should be
  close to 1.  Timed per call (two a run).

Variants: ``numpy`` (the floor: the derivative written out by hand),
``functrans`` (``ft.grad`` / ``ft.hvp``, which retrace on every call, as
DESIGN.md asks), ``functrans.jit`` (the same under ``ft.jit``, traced once),
and, where importable, ``jax`` / ``jax.jit`` (x64), ``autograd`` and
``torch.func``.
"""

from __future__ import annotations

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Workload, fresh_eager, fresh_jit, own_variants

GRAD_SIZES = {"n10": 10, "n1e6": 1_000_000}
HVP_SIZE = 100_000


# -- W1/W2: grad of sum(sin(x) * x + x**2) ---------------------------------------


def f_numpy(x):
    return np.sum(np.sin(x) * x + x**2)


def grad_numpy(x):
    """d/dx: sin x + x cos x + 2x."""
    return np.sin(x) + x * np.cos(x) + 2.0 * x


def _grad_variants(x: np.ndarray) -> dict:
    import functrans as ft

    variants = own_variants(lambda: grad_numpy(x), ft.grad(f_numpy), x)
    if (j := _peers.jax()) is not None:
        jnp = j.jnp

        def f_jax(x):
            return jnp.sum(jnp.sin(x) * x + x**2)

        xj = jnp.asarray(x)
        gx, gxj = j.jax.grad(f_jax), j.jax.jit(j.jax.grad(f_jax))
        variants["jax"] = lambda: gx(xj).block_until_ready()
        variants["jax.jit"] = lambda: gxj(xj).block_until_ready()
    if (a := _peers.autograd()) is not None:
        anp = a.anp
        ga = a.autograd.grad(lambda x: anp.sum(anp.sin(x) * x + x**2))
        variants["autograd"] = lambda: ga(x)
    if (t := _peers.torch()) is not None:
        torch = t.torch
        xt = torch.tensor(x, dtype=torch.float64)
        gt = t.func.grad(lambda x: torch.sum(torch.sin(x) * x + x**2))
        variants["torch.func"] = lambda: gt(xt)
    return variants


def hessian_numpy(x):
    """The Hessian is diagonal: 2 cos x - x sin x + 2."""
    return np.diag(2.0 * np.cos(x) - x * np.sin(x) + 2.0)


def _hessian_variants(x: np.ndarray) -> dict:
    """numpy, functrans.jit and jax.jit: the row is about jit's call cost
    (the eager Hessian retraces twice and is timed by the jacobians rows)."""
    import functrans as ft

    jitted = ft.jit(ft.hessian(f_numpy))
    variants = {"numpy": lambda: hessian_numpy(x), "functrans.jit": lambda: jitted(x)}
    if (j := _peers.jax()) is not None:
        jnp = j.jnp
        hj = j.jax.jit(j.jax.hessian(lambda x: jnp.sum(jnp.sin(x) * x + x**2)))
        xj = jnp.asarray(x)
        variants["jax.jit"] = lambda: hj(xj).block_until_ready()
    return variants


# -- W4: Hessian-vector product of the chained Rosenbrock function -----------------


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hvp_numpy(x, v):
    """H(x) v without forming H: H is tridiagonal with
    H[i,i] = 1200 x_i^2 - 400 x_{i+1} + 2 (i < n-1), plus 200 (i > 0), and
    H[i,i+1] = H[i+1,i] = -400 x_i."""
    a, b = x[:-1], x[1:]
    off = -400.0 * a
    hv = np.zeros_like(x)
    hv[:-1] += (1200.0 * a**2 - 400.0 * b + 2.0) * v[:-1] + off * v[1:]
    hv[1:] += 200.0 * v[1:] + off * v[:-1]
    return hv


def _hvp_variants(x: np.ndarray, v: np.ndarray) -> dict:
    import functrans as ft

    def hvp_ft(x, v):
        return ft.hvp(rosenbrock, (x,), (v,))

    variants = own_variants(lambda: rosenbrock_hvp_numpy(x, v), hvp_ft, x, v)
    if (j := _peers.jax()) is not None:
        jax, jnp = j.jax, j.jnp

        def rosen_jax(x):
            return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

        def hvp_jax(x, v):
            return jax.jvp(jax.grad(rosen_jax), (x,), (v,))[1]

        xj, vj = jnp.asarray(x), jnp.asarray(v)
        hvp_jax_jit = jax.jit(hvp_jax)
        variants["jax"] = lambda: hvp_jax(xj, vj).block_until_ready()
        variants["jax.jit"] = lambda: hvp_jax_jit(xj, vj).block_until_ready()
    if (a := _peers.autograd()) is not None:
        anp = a.anp
        hvp_ag = a.autograd.hessian_vector_product(
            lambda x: anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
        )
        variants["autograd"] = lambda: hvp_ag(x, v)
    if (t := _peers.torch()) is not None:
        torch, func = t.torch, t.func

        def rosen_torch(x):
            return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

        xt, vt = torch.tensor(x, dtype=torch.float64), torch.tensor(v, dtype=torch.float64)
        variants["torch.func"] = lambda: func.jvp(func.grad(rosen_torch), (xt,), (vt,))[1]
    return variants


# -- programs with a selection: a masked log-likelihood and a piecewise loss -----


def masked_loglik(p, y, observed):
    ll = y * np.log(p) + (1.0 - y) * np.log(1.0 - p)
    return np.sum(np.where(observed, ll, 0.0))


def masked_loglik_grad_numpy(p, y, observed):
    return np.where(observed, y / p - (1.0 - y) / (1.0 - p), 0.0)


def piecewise(r):
    return np.sum(np.where(r > 0, np.sqrt(r), 0.5 * r**2))


def piecewise_grad_numpy(r):
    return np.where(r > 0, 0.5 / np.sqrt(np.where(r > 0, r, 1.0)), r)


def _selection_variants(floor, fn, *args) -> dict:
    """numpy, functrans.jit (no eager variant: the rows time the programs),
    functrans.native with Numba, jax.jit where importable."""
    import importlib.util

    import functrans as ft

    grad = ft.grad(fn)
    jitted = ft.jit(grad)
    variants = {"numpy": floor, "functrans.jit": lambda: jitted(*args)}
    if importlib.util.find_spec("numba") is not None:
        native = ft.jit(grad, compiler="native")
        variants["functrans.native"] = lambda: native(*args)
    if (j := _peers.jax()) is not None:
        jnp = j.jnp
        src = {masked_loglik: lambda p, y, o: jnp.sum(jnp.where(
                   o, y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p), 0.0)),
               piecewise: lambda r: jnp.sum(jnp.where(r > 0, jnp.sqrt(r), 0.5 * r**2))}[fn]
        gj = j.jax.jit(j.jax.grad(src))
        jargs = [jnp.asarray(a) for a in args]
        variants["jax.jit"] = lambda: gj(*jargs).block_until_ready()
    return variants


def _selection_workloads(rng) -> list[Workload]:
    n = 1_000_000
    p = rng.uniform(0.0, 1.0, n)
    p[::10] = 0.0  # unobserved entries sit where log is singular
    observed = p > 0
    y = (rng.uniform(size=n) < 0.5).astype(np.float64)
    r = rng.standard_normal(n)
    r[::10] = 0.0
    return [
        Workload(name="autodiff.grad.masked_loglik.n1e6",
                 description=f"jit(grad) of a masked log-likelihood, p: f64[{n:,}]",
                 variants=_selection_variants(
                     lambda: masked_loglik_grad_numpy(p, y, observed), masked_loglik,
                     p, y, observed),
                 floor="numpy"),
        Workload(name="autodiff.grad.piecewise.n1e6",
                 description=f"jit(grad) of where(r > 0, sqrt(r), r**2 / 2), r: f64[{n:,}]",
                 variants=_selection_variants(lambda: piecewise_grad_numpy(r), piecewise, r),
                 floor="numpy"),
    ]


# -- two functions of one program, called in turn ------------------------------------

TWO_SITES_STEPS = 100


def loop_here(h):
    for _ in range(TWO_SITES_STEPS):
        h = np.tanh(h * 0.9 + 0.1) * 1.01
    return np.sum(h)


def loop_there(h):
    for _ in range(TWO_SITES_STEPS):
        h = np.tanh(h * 0.9 + 0.1) * 1.01
    return np.sum(h)


def _two_sites_workload(rng) -> Workload:
    import functrans as ft

    x = rng.standard_normal(16)
    here, there = ft.grad(loop_here), ft.grad(loop_there)
    n_eqns = len(ft.make_jaxpr(loop_here)(x).eqns)

    def repeated():
        here(x)
        here(x)

    def in_turn():
        here(x)
        there(x)

    return Workload(
        name=f"autodiff.grad.two_sites.{n_eqns}eqn",
        description=f"eager grad of two functions of one {n_eqns}-equation program called "
                    "in turn, against one called twice",
        variants={"one_site": repeated, "two_sites": in_turn},
        floor="one_site",
        per_unit=lambda name: (2, "call"),
    )


def _hvp_of(f):
    """``(x, v) -> H(x) v`` of ``f``: a transform for ``fresh_jit``."""
    import functrans as ft

    return lambda x, v: ft.hvp(f, (x,), (v,))


def workloads() -> list[Workload]:
    import functrans as ft

    rng = np.random.default_rng(0)
    out = []
    for label, n in GRAD_SIZES.items():
        x = rng.standard_normal(n)
        out.append(Workload(
            name=f"autodiff.grad.{label}",
            description=f"grad of sum(sin(x)*x + x**2), x: f64[{n:,}]",
            variants=_grad_variants(x),
            floor="numpy",
            fresh={"functrans": fresh_eager(ft.grad, f_numpy, x),
                   "functrans.jit": fresh_jit(ft.grad, f_numpy, x)},
        ))
    x = rng.standard_normal(10)
    out.append(Workload(
        name="autodiff.hessian.n10",
        description="jit(hessian) of sum(sin(x)*x + x**2), x: f64[10]",
        variants=_hessian_variants(x),
        floor="numpy",
        fresh={"functrans.jit": fresh_jit(ft.hessian, f_numpy, x)},
    ))
    x, v = rng.standard_normal(HVP_SIZE), rng.standard_normal(HVP_SIZE)
    out.append(Workload(
        name="autodiff.hvp.rosenbrock.n1e5",
        description=f"Hessian-vector product of chained Rosenbrock, x: f64[{HVP_SIZE:,}]",
        variants=_hvp_variants(x, v),
        floor="numpy",
        fresh={"functrans.jit": fresh_jit(_hvp_of, rosenbrock, x, v)},
    ))
    return out + _selection_workloads(rng) + [_two_sites_workload(rng)]
