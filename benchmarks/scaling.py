"""Transform cost against program size, on the programs users from PyTorch
write: a Python loop, unrolled by tracing into thousands of equations.

* ``scaling.loop.<k>k.first``: eager ``grad`` of ``steps`` iterations of
  ``h = tanh(h * 0.9 + 0.1) * 1.01`` on f64[16] (4 equations a step), the
  first call of a program: each call's constant differs in its last bits, so
  no cache keyed on the program's structure matches (``metric="self_timed"``).
  What it costs: tracing, JVP, partial evaluation, the passes, transposition
  and evaluation, each once.  ``functrans.jit``: the first call of
  ``jit(grad)`` of such a program, a jit cache miss (the same work, then
  code generation and Python's ``compile`` of the generated function); its
  ``us/eqn`` should not grow with the size either.
* ``scaling.loop.<k>k.second``: the second call of eager ``grad`` of a program
  (one function object, called twice; the first call untimed), and
  ``scaling.loop.<k>k.building``: the slowest of its calls 2 to 12, the
  calls that build its forward and backward programs and compile them a
  part at a time (``metric="self_timed"``).  Neither should cost more than
  twice the first call.
* ``scaling.loop.<k>k.repeat``: the same ``grad`` called again and again after
  its first 12 calls (the function is retraced; the transformed programs
  come from the caches, compiled), and
  ``jit(grad)``.  The time per equation (``us/eqn``) should not grow with
  the size.
* ``scaling.property_run``: a property-based test's pattern, in a fresh
  process: 60 sizes drawn from 1..64, ``jit(grad)`` and ``jit(hessian)`` of a
  logsumexp plus a quadratic at each (first calls at most sizes).
* ``scaling.grad_memory.n2e7``: the peak traced allocation of an eager
  ``grad`` of ``sum(sin(x) * x + x**2)`` on 2e7 elements, against NumPy
  computing the same gradient by hand.

The floor is hand-written NumPy (forward loop, then the backward loop); HIPS
autograd and JAX are peers where importable.

``python -m benchmarks.scaling --chain`` (not a row: a size takes seconds to
minutes) runs the 100k-equation chain ``h = sin(h) * h`` on f64[16], eager
``grad`` and ``jit(grad)``, at 25k and 100k equations, each in a fresh
process, and prints CPU seconds and peak resident memory: both should grow
linearly with the size.
"""

from __future__ import annotations

import functools
import itertools
import subprocess
import sys
import textwrap
import time

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Fresh, Workload, cold, fresh_eager
from benchmarks.compile import run_python

#: Loop steps of each size: 4 equations a step (mul, add, tanh, mul).
STEPS = {"1k": 250, "4k": 1000, "12k": 3000}
N = 16
MEMORY_N = 20_000_000


def _loop(xp, steps: int, a: float = 0.9):
    def loss(h):
        for _ in range(steps):
            h = xp.tanh(h * a + 0.1) * 1.01
        return xp.sum(h)

    return loss


def _loop_grad_numpy(h: np.ndarray, steps: int, a: float = 0.9) -> np.ndarray:
    """The loop's gradient by hand: the forward values kept, then walked back."""
    ts = []
    for _ in range(steps):
        t = np.tanh(h * a + 0.1)
        ts.append(t)
        h = t * 1.01
    g = np.ones_like(h)
    for t in reversed(ts):
        g = g * 1.01 * (1.0 - t * t) * a
    return g


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _loop_workloads(label: str, steps: int) -> list[Workload]:
    import functrans as ft
    import functrans.numpy as fnp

    x = np.linspace(-1.0, 1.0, N)
    eqns = functools.cache(lambda: len(ft.make_jaxpr(_loop(fnp, steps))(x).eqns))
    fresh = itertools.count(1)

    def first_call() -> float:
        # A constant no earlier call used: a new program for every cache.
        return _timed(ft.grad(_loop(fnp, steps, 0.9 + next(fresh) * 1e-12)), x)

    def first_jit_call() -> float:
        return _timed(ft.jit(ft.grad(_loop(fnp, steps, 0.9 + next(fresh) * 1e-12))), x)

    def later_calls(n: int) -> list[float]:
        """Calls 2 to ``n`` of one new program's ``grad``, timed."""
        g = ft.grad(_loop(fnp, steps, 0.9 + next(fresh) * 1e-12))
        g(x)
        return [_timed(g, x) for _ in range(n - 1)]

    first = {
        "numpy": lambda: _timed(_loop_grad_numpy, x, steps),
        "functrans": first_call,
        "functrans.jit": first_jit_call,
    }
    second = {"numpy": first["numpy"], "functrans": lambda: later_calls(2)[0]}
    building = {"numpy": first["numpy"], "functrans": lambda: max(later_calls(12))}
    g = ft.grad(_loop(fnp, steps))
    jg = ft.jit(g)
    # The calls that build and compile the programs are the building row's;
    # these are the calls after them.
    built = functools.cache(lambda: [g(x) for _ in range(12)])
    repeat = {
        "numpy": lambda: _loop_grad_numpy(x, steps),
        "functrans": lambda: (built(), g(x)),
        "functrans.jit": lambda: jg(x),
    }
    if (a := _peers.autograd()) is not None:
        ga = a.autograd.grad(_loop(a.anp, steps))
        first["autograd"] = second["autograd"] = building["autograd"] = lambda: _timed(ga, x)
        repeat["autograd"] = lambda: ga(x)
    per_eqn = lambda name: (eqns(), "eqn")  # noqa: E731
    what = (f"grad of {steps} steps of tanh(h*0.9+0.1)*1.01, h: f64[{N}] "
            f"({4 * steps + 1} eqns)")
    return [
        Workload(name=f"scaling.loop.{label}.first", description=f"first call: {what}",
                 variants=first, floor="numpy", metric="self_timed", per_unit=per_eqn),
        Workload(name=f"scaling.loop.{label}.second", description=f"second call: {what}",
                 variants=second, floor="numpy", metric="self_timed", per_unit=per_eqn),
        Workload(name=f"scaling.loop.{label}.building",
                 description=f"slowest of calls 2-12: {what}",
                 variants=building, floor="numpy", metric="self_timed", per_unit=per_eqn,
                 fresh={"functrans": fresh_eager(ft.grad, _loop(fnp, steps), x)}),
        Workload(name=f"scaling.loop.{label}.repeat", description=f"repeated call: {what}",
                 variants=repeat, floor="numpy", per_unit=per_eqn),
    ]


_PROPERTY_RUN = """
import time
import numpy as np
{setup}
sizes = np.random.default_rng(0).integers(1, 65, 60)

def loss(x):
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m))) + 0.5 * xp.sum(x * x)

start = time.perf_counter()
for n in sizes:
    x = np.linspace(-1.0, 1.0, int(n))
    {call}
print(time.perf_counter() - start)
"""

_PROPERTY_VARIANTS = {
    "functrans": ("import functrans as ft\nxp = np",
                  "ft.jit(ft.grad(loss))(x); ft.jit(ft.hessian(loss))(x)"),
    "jax": ("import jax\njax.config.update('jax_enable_x64', True)\nimport jax.numpy as xp",
            "jax.jit(jax.grad(loss))(x).block_until_ready(); "
            "jax.jit(jax.hessian(loss))(x).block_until_ready()"),
}


def _property_numpy() -> float:
    """The floor: the same gradients and Hessians by hand."""
    start = time.perf_counter()
    for n in np.random.default_rng(0).integers(1, 65, 60):
        x = np.linspace(-1.0, 1.0, int(n))
        p = np.exp(x - x.max())
        p /= p.sum()
        _ = p + x
        _ = np.diag(p) - np.outer(p, p) + np.eye(len(x))
    return time.perf_counter() - start


def _property_loss(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m))) + 0.5 * np.sum(x * x)


def _property_in_process() -> Fresh:
    """The functrans property run in this process, with new ``jit`` objects of
    a function no cache has met: every size is a new program of each."""
    import functrans as ft

    loss = cold(_property_loss)
    g, h = ft.jit(ft.grad(loss)), ft.jit(ft.hessian(loss))
    xs = [np.linspace(-1.0, 1.0, int(n)) for n in np.random.default_rng(0).integers(1, 65, 60)]

    def run() -> None:
        for x in xs:
            g(x)
            h(x)

    return Fresh(run, (g, h))


def _property_workload() -> Workload:
    variants = {"numpy": _property_numpy}
    for name, (setup, call) in _PROPERTY_VARIANTS.items():
        if name == "jax" and _peers.jax() is None:
            continue
        source = textwrap.dedent(_PROPERTY_RUN).format(setup=setup, call=call)
        variants[name] = lambda s=source: run_python(s)
    return Workload(
        name="scaling.property_run",
        description="60 sizes from 1..64: jit(grad) and jit(hessian) of logsumexp + "
                    "quadratic at each, in a fresh process",
        variants=variants, floor="numpy", metric="self_timed",
        # A call of the in-process start is a whole run (120 calls, 120 programs).
        fresh={"functrans": _property_in_process},
    )


def _memory_workload() -> Workload:
    import functrans as ft
    import functrans.numpy as fnp

    # Made on first use: listing the workloads allocates nothing.
    data = functools.cache(lambda: np.linspace(-1.0, 1.0, MEMORY_N))
    g = ft.grad(lambda x: fnp.sum(fnp.sin(x) * x + x**2))

    def numpy_grad():
        x = data()
        return np.cos(x) * x + np.sin(x) + 2.0 * x

    return Workload(
        name="scaling.grad_memory.n2e7",
        description=f"peak memory of grad of sum(sin(x)*x + x**2), x: f64[{MEMORY_N:,}] "
                    f"({MEMORY_N * 8 / 1e6:.0f} MB)",
        variants={"numpy": numpy_grad, "functrans": lambda: g(data())},
        floor="numpy", metric="peak_memory",
    )


def workloads() -> list[Workload]:
    out: list[Workload] = []
    for label, steps in STEPS.items():
        out.extend(_loop_workloads(label, steps))
    out.append(_property_workload())
    out.append(_memory_workload())
    return out


def _cpu_seconds(fn, *args) -> float:
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def measure_scaling(steps_list=(250, 1000, 3000, 6000), repeats: int = 3) -> list[dict]:
    """CPU seconds (median of ``repeats``) of eager ``grad`` of the loop at
    each size: a first call (new constant) and a repeated call, for
    functrans and, where importable, autograd.  CPU time, not wall time: the
    figures behind docs/jit.md's plot were taken on a shared machine."""
    import statistics

    import functrans as ft
    import functrans.numpy as fnp

    x = np.linspace(-1.0, 1.0, N)
    ag = _peers.autograd()
    fresh = itertools.count(1)
    rows = []
    for steps in steps_list:
        g = ft.grad(_loop(fnp, steps))
        g(x)
        g(x)
        row = {"steps": steps, "eqns": 4 * steps + 1}
        samples: dict[str, list[float]] = {"first": [], "repeat": [], "autograd": []}
        for _ in range(repeats):
            new = ft.grad(_loop(fnp, steps, 0.9 + next(fresh) * 1e-12))
            samples["first"].append(_cpu_seconds(new, x))
            samples["repeat"].append(_cpu_seconds(g, x))
            if ag is not None:
                samples["autograd"].append(_cpu_seconds(ag.autograd.grad(_loop(ag.anp, steps)), x))
        row.update({k: statistics.median(v) for k, v in samples.items() if v})
        rows.append(row)
        print(row, flush=True)
    return rows


def plot(rows: list[dict], path: str) -> None:
    """Microseconds per equation against program size (log x), as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    eqns = [r["eqns"] for r in rows]
    labels = {"first": "functrans grad, first call", "repeat": "functrans grad, repeated call",
              "autograd": "HIPS autograd grad"}
    for key, label in labels.items():
        if all(key in r for r in rows):
            ax.plot(eqns, [r[key] * 1e6 / r["eqns"] for r in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("equations in the traced program (tanh loop, f64[16])")
    ax.set_ylabel("CPU us per equation")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


_CHAIN = """
import resource, time
import numpy as np
import functrans as ft
import functrans.numpy as fnp

def loss(h):
    for _ in range({eqns} // 2):
        h = fnp.sin(h) * h
    return fnp.sum(h)

f = {transformed}
x = np.linspace(-1.0, 1.0, 16)
start = time.process_time()
f(x)
seconds = time.process_time() - start
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, seconds)
"""


_CHAIN_CALLS = (("grad", "ft.grad(loss)"), ("jit(grad)", "ft.jit(ft.grad(loss))"))


def measure_chain(sizes=(25_000, 100_000)) -> list[dict]:
    """CPU seconds and peak resident memory (MB, the process's own start-up
    included) of the first call of eager ``grad`` and ``jit(grad)`` of the
    ``sin * mul`` chain at each size, each in a fresh process."""
    rows = []
    for eqns in sizes:
        for label, transformed in _CHAIN_CALLS:
            source = textwrap.dedent(_CHAIN).format(eqns=eqns, transformed=transformed)
            proc = subprocess.run([sys.executable, "-c", source], capture_output=True,
                                  text=True, timeout=1800, check=True)
            rss_kb, seconds = proc.stdout.split()[-2:]
            row = {"eqns": eqns, "transform": label, "cpu_s": round(float(seconds), 2),
                   "peak_rss_mb": round(int(rss_kb) / 1024)}
            rows.append(row)
            print(row, flush=True)
    return rows


if __name__ == "__main__":
    if sys.argv[1:] == ["--chain"]:
        measure_chain()
    else:
        plot(measure_scaling(), sys.argv[1] if len(sys.argv) > 1 else "scaling.png")
