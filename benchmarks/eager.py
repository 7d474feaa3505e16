"""Eager call overhead: ``functrans.numpy`` on concrete arrays against the same
NumPy call.

An eager ``fnp`` call is argument handling plus ``bind``, which finds no tracer
and runs the primitive's NumPy impl at once.  At n=10 the figure is the pure
per-call overhead (the difference in microseconds is the number to watch); at
n=1e6 the NumPy work dominates and the ratio should be close to 1.
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
    return out
