"""Eager call overhead: ``functrans.numpy`` on concrete arrays against the same
NumPy call.

An eager ``fnp`` call is argument handling plus ``bind``, which finds no tracer
and runs the primitive's NumPy impl at once.  At n=10 the figure is the pure
per-call overhead (the difference in microseconds is the number to watch); at
n=1e6 the NumPy work dominates and the ratio should be close to 1.

``eager.grad.n10``: ``grad`` of ``sum(sin(x) * x + x ** 2)`` written with
``functrans.numpy``, called eagerly (no ``jit``) on a float64 array of 10
elements, against its hand-written NumPy gradient: a retrace of five
operations, the plan guard's tape comparison and the two cached programs.
"""

from __future__ import annotations

import numpy as np

from benchmarks._timing import Workload

SIZES = {"n10": 10, "n1e6": 1_000_000}


def workloads() -> list[Workload]:
    import functrans.numpy as fnp

    rng = np.random.default_rng(0)
    out = []
    for label, n in SIZES.items():
        x = rng.standard_normal(n)
        for fname in ("sin", "sum"):
            np_fn, fnp_fn = getattr(np, fname), getattr(fnp, fname)
            out.append(
                Workload(
                    name=f"eager.{fname}.{label}",
                    description=f"{fname}(x) on a float64 array of {n:,} elements",
                    variants={
                        "numpy": lambda f=np_fn, x=x: f(x),
                        "functrans": lambda f=fnp_fn, x=x: f(x),
                    },
                    floor="numpy",
                )
            )
    out.append(_grad_workload(rng.standard_normal(10)))
    return out


def _grad_workload(x: np.ndarray) -> Workload:
    import functrans as ft
    import functrans.numpy as fnp

    g = ft.grad(lambda x: fnp.sum(fnp.sin(x) * x + x ** 2))
    return Workload(
        name="eager.grad.n10",
        description="grad of sum(sin(x) * x + x ** 2) with functrans.numpy, eager, on 10 float64s",
        variants={
            "numpy": lambda: np.sin(x) + x * np.cos(x) + 2.0 * x,
            "functrans": lambda: g(x),
        },
        floor="numpy",
    )
