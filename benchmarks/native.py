"""jit's native tier (``compiler="native"``, Numba) on the three programs it is
meant for, beside the NumPy tier and JAX's jit, and what its first call costs.

* ``native.grad.n1e6``: ``jit(grad)`` of ``sum(sin(x) * x + x**2)``, x: f64[1e6]
  (the whole gradient is one fused elementwise group);
* ``native.hvp.rosenbrock.n1e5``: the Hessian-vector product of the chained
  Rosenbrock function (forward over reverse), x: f64[1e5] (elementwise
  groups between slices and pads);
* ``native.map_sum.n1e5``: ``sum(x * 1.5 + x * x)``, x: f64[1e5] (a
  map-reduce kernel: the sum in NumPy's pairwise order in the loop of the
  group, no mapped array written);
* ``native.scan_rnn_grad``: the gradient through a 1,000-step ``lax.scan``
  recurrence on f64[16] (both scans, forward and reverse, are native
  loops, their products calls of NumPy's own ``matmul`` loop, ``tanh``
  NumPy's own loop: those calls are most of a step's time);
* ``native.while_fori_loop``: 1,000 steps of ``tanh(h * 0.9 + 0.1) * 1.01``
  on f64[16] through ``lax.fori_loop`` with a traced trip count (a
  ``while_loop``: the predicate and the body in one native loop);
* ``native.while_grad``: the gradient of the sum of that loop's result (a
  ``recorded_loop``: the loop recording its steps, then the reverse sweep,
  in one kernel; JAX has no reverse mode through a loop of traced length);
* ``native.first_call``: the first call of ``jit(grad)`` at n=1e3 in a fresh
  process: the NumPy tier, the native tier with an empty kernel cache
  (``cold``) and with the kernels on disk from an earlier process
  (``warm``).

Variants: ``numpy`` (the floor, hand-written), ``functrans.jit`` (the
default settings from a cold start: the NumPy tier until automatic tiering
moves the program), ``functrans.native`` (forced; skipped without Numba),
``functrans.moved`` (the default settings once automatic tiering has moved
the program, where it does: the NumPy tier's bits; skipped without Numba)
and ``jax.jit`` (x64, where JAX is importable).  Run with ``--threads 1`` for the single-threaded
comparison.
"""

from __future__ import annotations

import importlib.util
import tempfile
import textwrap

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Workload, fresh_jit
from benchmarks.autodiff import _grad_variants, _hvp_variants, grad_numpy, rosenbrock
from benchmarks.compile import run_python
from benchmarks.control_flow import SIZE, STEPS, fori_forward_numpy, rnn_loss
from benchmarks.control_flow import _variants as _rnn_variants

KEEP = ("numpy", "functrans.jit", "jax.jit")


def _have_numba() -> bool:
    return importlib.util.find_spec("numba") is not None


def _with_native(variants: dict, fn, *args) -> dict:
    """The variants in KEEP, plus ``fn`` under ``jit(compiler="native")``
    and, as ``functrans.moved``, under the default settings once automatic
    tiering has moved it (exact numerics: the NumPy tier's bits)."""
    import functrans as ft

    out = {k: v for k, v in variants.items() if k in KEEP}
    if _have_numba():
        native = ft.jit(fn, compiler="native")
        out["functrans.native"] = lambda: native(*args)
        out["functrans.moved"] = _moved(fn, *args)
    return out


def _moved(fn, *args):
    """A call of ``jit(fn)`` that, the first time (the runner's warm-up),
    has automatic tiering move the program at once instead of after the
    rule's wait, and waits for it; it stays wherever the rule keeps it."""
    import functrans as ft
    from functrans import tiering

    jitted = ft.jit(fn)
    pending = [True]

    def call():
        if pending:
            pending.clear()
            saved = ft.config.jit_tier_up
            ft.config.update("jit_tier_up", "eager")
            try:
                jitted(*args)
            finally:
                ft.config.update("jit_tier_up", saved)
            tiering.wait(300.0)
        return jitted(*args)

    return call


_FIRST = """
import time
import numpy as np
start = time.perf_counter()
import functrans as ft
import functrans.numpy as fnp
f = ft.jit(ft.grad(lambda x: fnp.sum(fnp.sin(x) * x + x ** 2)), compiler={compiler!r})
f(np.linspace(-1.0, 1.0, 1000))
print(time.perf_counter() - start)
"""


def _first_call_variants() -> dict:
    x = np.linspace(-1.0, 1.0, 1000)
    variants = {
        "numpy": lambda: _timed(lambda: grad_numpy(x)),
        "functrans.jit": lambda: run_python(_FIRST.format(compiler="numpy")),
    }
    if _have_numba():
        warm_dir = tempfile.mkdtemp(prefix="functrans-native-bench-")

        def cold() -> float:
            with tempfile.TemporaryDirectory() as folder:
                return run_python(f"import os; os.environ['FUNCTRANS_NATIVE_CACHE_DIR'] = "
                                  f"{folder!r}\n" + textwrap.dedent(_FIRST)
                                  .format(compiler="native"))

        def warm() -> float:
            source = (f"import os; os.environ['FUNCTRANS_NATIVE_CACHE_DIR'] = {warm_dir!r}\n"
                      + textwrap.dedent(_FIRST).format(compiler="native"))
            run_python(source)  # fills the cache the timed process loads from
            return run_python(source)

        variants["functrans.native.cold"] = cold
        variants["functrans.native.warm"] = warm
    return variants


def _fori_traced(h, n):
    from functrans import lax

    return lax.fori_loop(0, n, lambda i, h: np.tanh(h * 0.9 + 0.1) * 1.01, h)


def _while_variants(h) -> dict:
    """The traced-bound fori_loop: hand-written NumPy, the NumPy tier, and
    ``jax.jit`` of the same loop where JAX is importable."""
    import functrans as ft

    jitted = ft.jit(_fori_traced)
    variants = {"numpy": lambda: fori_forward_numpy(h),
                "functrans.jit": lambda: jitted(h, STEPS)}
    if (j := _peers.jax()) is not None:
        jax, jnp = j.jax, j.jnp
        run = jax.jit(lambda h, n: jax.lax.fori_loop(
            0, n, lambda i, h: jnp.tanh(h * 0.9 + 0.1) * 1.01, h))
        hj = jnp.asarray(h)
        variants["jax.jit"] = lambda: run(hj, STEPS).block_until_ready()
    return variants


def _fori_grad_numpy(h):
    """The gradient of ``sum(_fori_traced(h, STEPS))`` by hand: the states
    recorded, then the chain rule backwards."""
    states = []
    for _ in range(STEPS):
        states.append(h)
        h = np.tanh(h * 0.9 + 0.1) * 1.01
    g = np.ones_like(h)
    for h in reversed(states):
        t = np.tanh(h * 0.9 + 0.1)
        g = g * 1.01 * (1.0 - t * t) * 0.9
    return g


def _map_sum(x):
    return np.sum(x * 1.5 + x * x)


def _map_sum_fn(x):
    import functrans.numpy as fnp

    return fnp.sum(x * 1.5 + x * x)


def _map_sum_variants(x) -> dict:
    import functrans as ft

    jitted = ft.jit(_map_sum_fn)
    variants = {"numpy": lambda: _map_sum(x), "functrans.jit": lambda: jitted(x)}
    if (j := _peers.jax()) is not None:
        jnp = j.jnp
        run = j.jax.jit(lambda x: jnp.sum(x * 1.5 + x * x))
        xj = jnp.asarray(x)
        variants["jax.jit"] = lambda: run(xj).block_until_ready()
    return variants


def _timed(fn) -> float:
    import time

    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def workloads() -> list[Workload]:
    import functrans as ft

    rng = np.random.default_rng(0)
    x = rng.standard_normal(1_000_000)
    grad = ft.grad(lambda x: np.sum(np.sin(x) * x + x ** 2))
    xr, v = rng.standard_normal(100_000), rng.standard_normal(100_000)

    def hvp(x, v):
        return ft.hvp(rosenbrock, (x,), (v,))

    w = rng.standard_normal((SIZE, SIZE)) / np.sqrt(SIZE)
    xs = rng.standard_normal((STEPS, SIZE)) * 0.5
    h0 = rng.standard_normal(SIZE)
    while_grad_fn = ft.grad(lambda h, n: np.sum(_fori_traced(h, n)))
    while_grad = ft.jit(while_grad_fn)
    notes = {"functrans.native": "Numba kernels for the elementwise groups, NumPy for the rest"}
    if _peers.jax() is None:
        notes["jax.jit"] = "JAX not importable: no row"
    return [
        Workload(
            name="native.grad.n1e6",
            description="jit(grad) of sum(sin(x)*x + x**2), x: f64[1,000,000]",
            variants=_with_native(_grad_variants(x), grad, x),
            floor="numpy", notes=notes,
        ),
        Workload(
            name="native.hvp.rosenbrock.n1e5",
            description="HVP of chained Rosenbrock by forward over reverse, x: f64[100,000]",
            variants=_with_native(_hvp_variants(xr, v), hvp, xr, v),
            floor="numpy", notes=notes,
        ),
        Workload(
            name="native.map_sum.n1e5",
            description="sum(x*1.5 + x*x), x: f64[100,000] (the sum folded into the loop)",
            variants=_with_native(_map_sum_variants(xr), _map_sum_fn, xr),
            floor="numpy", notes=notes,
        ),
        Workload(
            name="native.scan_rnn_grad",
            description=f"grad of a {STEPS}-step tanh recurrence on f64[{SIZE}] via lax.scan",
            variants=_with_native(_rnn_variants(w, xs), ft.grad(rnn_loss), w, xs),
            floor="numpy", notes=notes,
            fresh={"functrans.jit": fresh_jit(ft.grad, rnn_loss, w, xs)},
        ),
        Workload(
            name="native.while_fori_loop",
            description=f"{STEPS} steps of tanh(h*0.9 + 0.1)*1.01 on f64[{SIZE}], lax.fori_loop "
                        "with a traced trip count (a while_loop)",
            variants=_with_native(_while_variants(h0), _fori_traced, h0, STEPS),
            floor="numpy", notes=notes,
        ),
        Workload(
            name="native.while_grad",
            description=f"grad of the sum of {STEPS} steps of tanh(h*0.9 + 0.1)*1.01 on "
                        f"f64[{SIZE}], lax.fori_loop with a traced trip count",
            variants=_with_native({"numpy": lambda: _fori_grad_numpy(h0),
                                   "functrans.jit": lambda: while_grad(h0, STEPS)},
                                  while_grad_fn, h0, STEPS),
            floor="numpy", notes=notes,
        ),
        Workload(
            name="native.first_call",
            description="first call of jit(grad) at n=1e3, fresh process (import included)",
            variants=_first_call_variants(),
            floor="numpy", metric="self_timed",
        ),
    ]

