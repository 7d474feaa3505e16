"""Collectives across processes, over MPI on this machine (2 processes).

* ``distributed.allreduce.n<N>`` (N = 1e3 ... 1e7 float64): one allreduce
  (sum) of N values.  Variants: ``mpi4py.Allreduce`` (the floor: the buffer
  call into an array allocated once), ``mpi4py.Allreduce+alloc`` (into a new
  array each call, as a function returning its result must), ``lax.psum``
  (eager) and ``jit(psum)`` (the generated code calling the collective).
* ``distributed.dp_grad``: one data-parallel gradient of a small model (a
  tanh layer and a least-squares loss over 2**16 examples of 64 features):
  ``1 process`` (the floor: ``jit(grad)`` of the full-batch loss here) and
  ``2 processes`` (each rank ``jit(grad)`` of the ``psum``-reduced loss on its
  half, the gradient all-reduced by ``pvary``'s transpose).

All figures are ``metric="self_timed"``.  The MPI figures come from one
``mpiexec -n 2`` run of this module (``python -m benchmarks.distributed
--worker``), made when a variant first asks and shared by the rest: rank 0
times each call between barriers and reports per-variant medians, which
every repeat returns.  Without mpi4py or mpiexec, only the in-process
variants are listed.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._timing import Workload

SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
EXAMPLES, FEATURES = 2**16, 64
_MPIEXEC = shutil.which("mpiexec") or shutil.which("mpirun")
_figures: dict = {}


def _available() -> bool:
    return _MPIEXEC is not None and importlib.util.find_spec("mpi4py") is not None


def _mpi_figures() -> dict:
    """The medians measured by one ``mpiexec -n 2`` run (made once)."""
    if not _figures:
        root = Path(__file__).resolve().parents[1]
        done = subprocess.run(
            [_MPIEXEC, "-n", "2", sys.executable, "-m", "benchmarks.distributed", "--worker"],
            cwd=root, capture_output=True, text=True, timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the mpiexec benchmark run failed:\n{done.stderr[-4000:]}")
        line = [x for x in done.stdout.splitlines() if x.startswith("{")][-1]
        _figures.update(json.loads(line))
    return _figures


def _problem(rows: slice | None = None):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((EXAMPLES, FEATURES)) / np.sqrt(FEATURES)
    y = rng.standard_normal(EXAMPLES)
    w = rng.standard_normal(FEATURES)
    if rows is not None:
        A, y = A[rows], y[rows]
    return A, y, w


def _loss(w, A, y):
    r = np.tanh(A @ w) - y
    return 0.5 * np.sum(r * r)


def _one_process_step() -> float:
    import functrans as ft

    A, y, w = _problem()
    step = ft.jit(ft.grad(_loss))
    step(w, A, y)
    start = time.perf_counter()
    for _ in range(20):
        step(w, A, y)
    return (time.perf_counter() - start) / 20


def workloads() -> list[Workload]:
    mpi = _available()
    out = []
    for n in SIZES:
        names = ("mpi4py.Allreduce", "mpi4py.Allreduce+alloc", "lax.psum", "jit(psum)")
        if not mpi:
            continue
        out.append(Workload(
            name=f"distributed.allreduce.n{n:.0e}".replace("+0", ""),
            description=f"allreduce (sum) of {n:,} float64 over 2 processes (MPI)",
            variants={v: (lambda v=v, n=n: _mpi_figures()[f"{v}/{n}"]) for v in names},
            floor="mpi4py.Allreduce", metric="self_timed",
        ))
    variants = {"1 process": _one_process_step}
    if mpi:
        variants["2 processes"] = lambda: _mpi_figures()["dp_grad"]
    out.append(Workload(
        name="distributed.dp_grad",
        description=f"jit(grad) of a tanh least-squares loss, {EXAMPLES:,} x {FEATURES} "
                    "examples, on 1 process or split over 2 (psum-reduced)",
        variants=variants, floor="1 process", metric="self_timed",
    ))
    return out


# -- the mpiexec worker -------------------------------------------------------------------------


def _timed(comm, fn, reps: int) -> float:
    """The median seconds of ``fn()`` on rank 0, each call between barriers."""
    times = []
    for _ in range(reps):
        comm.Barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _worker() -> None:
    from mpi4py import MPI

    import functrans as ft
    import functrans.distributed as dist
    from functrans import lax

    dist.initialize()
    comm, rank = MPI.COMM_WORLD, dist.process_index()
    figures: dict = {}
    jitted = ft.jit(lambda v: lax.psum(v, dist.AXIS))
    for n in SIZES:
        x = np.full(n, rank + 1.0)
        out = np.empty_like(x)
        reps = 60 if n <= 100_000 else 15 if n <= 1_000_000 else 5
        variants = {
            "mpi4py.Allreduce": lambda x=x, out=out: comm.Allreduce(x, out, op=MPI.SUM),
            "mpi4py.Allreduce+alloc": lambda x=x: comm.Allreduce(x, np.empty_like(x),
                                                                 op=MPI.SUM),
            "lax.psum": lambda x=x: lax.psum(x, dist.AXIS),
            "jit(psum)": lambda x=x: jitted(x),
        }
        for fn in variants.values():
            fn()  # warm: compile, first touch of the buffers
        medians: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(3):  # interleaved rounds, so drift hits every variant alike
            for v, fn in variants.items():
                medians[v].append(_timed(comm, fn, reps))
        for v, ts in medians.items():
            figures[f"{v}/{n}"] = float(np.median(ts))
    half = slice(rank * EXAMPLES // 2, (rank + 1) * EXAMPLES // 2)
    A, y, w = _problem(half)
    step = ft.jit(ft.grad(lambda w: lax.psum(_loss(lax.pvary(w, dist.AXIS), A, y), dist.AXIS)))
    step(w)
    figures["dp_grad"] = _timed(comm, lambda: step(w), 20)
    if rank == 0:
        print(json.dumps(figures), flush=True)


if __name__ == "__main__" and "--worker" in sys.argv:
    _worker()
