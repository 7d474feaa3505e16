"""Solving extended Rosenbrock (Moré, Garbow and Hillstrom's problem 21:
``sum 100 (x[2i+1] - x[2i]**2)**2 + (1 - x[2i])**2`` from ``(-1.2, 1, ...)``)
with ``functrans.optimize.minimize``, timed from the call to the result.

Each workload is one method at one size, against ``scipy.optimize.minimize``
with the same-named method:

* ``scipy+numpy``, the floor: SciPy fed hand-written NumPy derivatives;
* ``functrans``: ``minimize`` differentiating the plain NumPy objective; its
  time includes tracing and compiling the derivatives, which it does once per
  call;
* ``scipy+jax`` (only where ``jax`` is importable): SciPy fed ``jax.jit``
  derivatives, compiled on the untimed warm-up call, so JAX's compile time
  is not in its figure (functrans' is in its own).

``newton`` has no SciPy namesake: its rows compare with ``trust-exact``.
On a machine shared with other work, run with ``OPENBLAS_NUM_THREADS=1``:
SciPy's compiled L-BFGS-B and BFGS and the dense factorisations call
multithreaded BLAS, whose threads then wait on each other and make those
figures swing by 10x from run to run.
Dense-Hessian methods (newton, trust-newton) and dense BFGS are not run at
n=10,000: the 10,000 x 10,000 matrix (800 MB) and its O(n^3) factorisations
are not what those methods are for.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Callable

import numpy as np

from benchmarks._timing import Workload

SIZES = {"n100": 100, "n10000": 10_000}
#: functrans method -> (SciPy method, derivatives SciPy gets, sizes run)
METHODS = {
    "lbfgs": ("L-BFGS-B", (), ("n100", "n10000")),
    "newton-cg": ("Newton-CG", ("hessp",), ("n100", "n10000")),
    "bfgs": ("BFGS", (), ("n100",)),
    "trust-newton": ("trust-exact", ("hess",), ("n100",)),
    "newton": ("trust-exact", ("hess",), ("n100",)),
}


def ext_rosen(x):
    a, b = x[0::2], x[1::2]
    return np.sum(100.0 * (b - a**2) ** 2 + (1.0 - a) ** 2)


def numpy_derivatives() -> dict:
    """Hand-written gradient, Hessian and Hessian-vector product."""

    def fun_and_grad(x):
        a, b = x[0::2], x[1::2]
        r = b - a**2
        g = np.empty_like(x)
        g[0::2] = -400.0 * a * r - 2.0 * (1.0 - a)
        g[1::2] = 200.0 * r
        return np.sum(100.0 * r**2 + (1.0 - a) ** 2), g

    def hess(x):
        a, b = x[0::2], x[1::2]
        h = np.zeros((x.size, x.size))
        i = np.arange(0, x.size, 2)
        h[i, i] = 1200.0 * a**2 - 400.0 * b + 2.0
        h[i, i + 1] = h[i + 1, i] = -400.0 * a
        h[i + 1, i + 1] = 200.0
        return h

    def hessp(x, p):
        a, b = x[0::2], x[1::2]
        out = np.empty_like(x)
        out[0::2] = (1200.0 * a**2 - 400.0 * b + 2.0) * p[0::2] - 400.0 * a * p[1::2]
        out[1::2] = -400.0 * a * p[0::2] + 200.0 * p[1::2]
        return out

    return {"fun_and_grad": fun_and_grad, "hess": hess, "hessp": hessp}


@functools.cache
def _jax_functions() -> tuple:
    """JAX's jitted value-and-gradient, Hessian and Hessian-vector product,
    built on first use (each compiles on its first call, which the timing
    harness makes before it starts the clock)."""
    import jax

    jax.config.update("jax_enable_x64", True)  # float64, as NumPy and functrans
    import jax.numpy as jnp

    def f(x):
        a, b = x[0::2], x[1::2]
        return jnp.sum(100.0 * (b - a**2) ** 2 + (1.0 - a) ** 2)

    return (jax.jit(jax.value_and_grad(f)), jax.jit(jax.hessian(f)),
            jax.jit(lambda x, p: jax.jvp(jax.grad(f), (x,), (p,))[1]))


def jax_derivatives() -> dict | None:
    """SciPy-shaped wrappers of ``_jax_functions``, or None without JAX."""
    if importlib.util.find_spec("jax") is None:
        return None

    def fun_and_grad(x):
        v, g = _jax_functions()[0](x)
        return float(v), np.asarray(g)

    return {"fun_and_grad": fun_and_grad,
            "hess": lambda x: np.asarray(_jax_functions()[1](x)),
            "hessp": lambda x, p: np.asarray(_jax_functions()[2](x, p))}


def start(n: int) -> np.ndarray:
    x0 = np.empty(n)
    x0[0::2], x0[1::2] = -1.2, 1.0
    return x0


def scipy_solver(method: str, extras: tuple, x0: np.ndarray, derivs: dict):
    from scipy.optimize import minimize as scipy_minimize

    kwargs = {name: derivs[name] for name in extras}
    return lambda: scipy_minimize(derivs["fun_and_grad"], x0, jac=True, method=method, **kwargs)


def checked(solve: Callable, name: str) -> Callable:
    """``solve``, asserting on its first call that it found the minimiser (all
    ones): a fast wrong answer would make a meaningless row."""
    first = [True]

    def run():
        res = solve()
        if first[0]:
            first[0] = False
            err = float(np.max(np.abs(res.x - 1.0)))
            assert res.success and err < 1e-3, f"{name}: {res.message} (max error {err:.1e})"
        return res

    return run


def workloads() -> list[Workload]:
    from functrans.optimize import minimize

    out = []
    for label, n in SIZES.items():
        x0 = start(n)
        jax_derivs = jax_derivatives()
        for method, (scipy_method, extras, sizes) in METHODS.items():
            if label not in sizes:
                continue
            variants = {
                "scipy+numpy": scipy_solver(scipy_method, extras, x0, numpy_derivatives()),
                "functrans": lambda m=method, x0=x0: minimize(ext_rosen, x0, method=m),
            }
            if jax_derivs is not None:
                variants["scipy+jax"] = scipy_solver(scipy_method, extras, x0, jax_derivs)
            variants = {v: checked(fn, f"{label}.{method}.{v}") for v, fn in variants.items()}
            out.append(Workload(
                name=f"optimize.rosen.{label}.{method}",
                description=(f"minimize extended Rosenbrock, n={n:,}, method {method!r} "
                             f"(SciPy: {scipy_method!r})"),
                variants=variants,
                floor="scipy+numpy",
            ))
    return out
