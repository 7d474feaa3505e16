"""First-call and import cost, measured in fresh processes (W7).

* ``compile.first_call.hessian.n100``: the first call of
  ``jit(hessian(rosenbrock))`` at n=100, which traces, differentiates twice,
  batches over the basis, optimises and generates code before it computes.
  Variants (``metric="self_timed"``: each figure is measured with
  ``time.perf_counter`` around the call inside the process that makes it):

  - ``numpy``: the floor, one call of the hand-written dense Hessian;
  - ``functrans.fresh``: a fresh subprocess (``import functrans`` done before
    timing, so only the call is measured);
  - ``functrans.warm``: a fresh subprocess that first compiled and ran
    ``jit(hessian(g))`` of a different function ``g``: library start-up costs
    (lazy imports, dtype-rule caches) are paid, the Jaxpr-keyed transform
    caches do not match;
  - ``functrans.same_fn``: in this process, a new ``jit`` object of the same
    function after one was compiled: tracing and code generation again, the
    transform work found in the caches keyed on Jaxpr structure;
  - ``functrans.cached``: a call of an already compiled ``jit`` (the steady
    state the first call is amortised against);
  - ``jax.fresh`` / ``jax.warm``, where JAX is importable: the same for
    ``jax.jit(jax.hessian(f))`` (x64, CPU), including XLA compilation.

* ``compile.import``: ``import <module>`` in a fresh process, timed inside
  it; the floor is ``import numpy`` (functrans imports NumPy and optree).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import timeit
from pathlib import Path

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Workload, fresh_jit

ROOT = Path(__file__).resolve().parents[1]
N = 100

_ROSEN = """
def rosen(x):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

def other(x):
    return xp.sum(xp.cos(x) * x ** 3 - xp.exp(-x))
"""

_FUNCTRANS = """
import time
import numpy as np
import functrans as ft
xp = np
{rosen}
if {warm}:
    ft.jit(ft.hessian(other))(np.linspace(0.0, 1.0, 7))
x = np.linspace(-1.0, 1.0, {n})
f = ft.jit(ft.hessian(rosen))
start = time.perf_counter()
f(x)
print(time.perf_counter() - start)
"""

_JAX = """
import time
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as xp
{rosen}
if {warm}:
    jax.jit(jax.hessian(other))(xp.linspace(0.0, 1.0, 7)).block_until_ready()
x = xp.linspace(-1.0, 1.0, {n})
f = jax.jit(jax.hessian(rosen))
start = time.perf_counter()
f(x).block_until_ready()
print(time.perf_counter() - start)
"""

_IMPORT = """
import time
start = time.perf_counter()
import {module}
print(time.perf_counter() - start)
"""


def run_python(source: str) -> float:
    """Run ``source`` in a fresh interpreter and return the float it prints
    last (the seconds it measured)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed:\n{proc.stderr}")
    return float(proc.stdout.split()[-1])


def _first_call_variants() -> dict:
    import functrans as ft
    from benchmarks.jacobians import rosenbrock, rosenbrock_hessian_numpy

    x = np.linspace(-1.0, 1.0, N)

    def numpy_call() -> float:
        return min(timeit.repeat(lambda: rosenbrock_hessian_numpy(x), number=100, repeat=3)) / 100

    def script(template: str, warm: bool) -> str:
        return template.format(rosen=_ROSEN, warm=warm, n=N)

    ft.jit(ft.hessian(rosenbrock))(x)  # the caches functrans.same_fn reuses
    cached = ft.jit(ft.hessian(rosenbrock))
    cached(x)

    def same_fn() -> float:
        f = ft.jit(ft.hessian(rosenbrock))
        start = time.perf_counter()
        f(x)
        return time.perf_counter() - start

    def cached_call() -> float:
        return min(timeit.repeat(lambda: cached(x), number=20, repeat=3)) / 20

    variants = {
        "numpy": numpy_call,
        "functrans.fresh": lambda: run_python(script(_FUNCTRANS, False)),
        "functrans.warm": lambda: run_python(script(_FUNCTRANS, True)),
        "functrans.same_fn": same_fn,
        "functrans.cached": cached_call,
    }
    if _peers.jax() is not None:
        variants["jax.fresh"] = lambda: run_python(script(_JAX, False))
        variants["jax.warm"] = lambda: run_python(script(_JAX, True))
    return variants


def _import_variants() -> dict:
    modules = {"numpy": "numpy", "functrans": "functrans"}
    if _peers.jax() is not None:
        modules["jax"] = "jax"
    if _peers.autograd() is not None:
        modules["autograd"] = "autograd"
    if _peers.torch() is not None:
        modules["torch"] = "torch"
    return {
        name: (lambda m=module: run_python(_IMPORT.format(module=m)))
        for name, module in modules.items()
    }


def workloads() -> list[Workload]:
    import functrans as ft
    from benchmarks.jacobians import rosenbrock

    return [
        Workload(
            name=f"compile.first_call.hessian.n{N}",
            description=f"first call of jit(hessian(rosenbrock)), x: f64[{N}]",
            variants=_first_call_variants(),
            floor="numpy",
            metric="self_timed",
            fresh={"functrans.same_fn": fresh_jit(ft.hessian, rosenbrock,
                                                  np.linspace(-1.0, 1.0, N))},
        ),
        Workload(
            name="compile.import",
            description="import time in a fresh process (perf_counter around the import)",
            variants=_import_variants(),
            floor="numpy",
            metric="self_timed",
        ),
    ]

