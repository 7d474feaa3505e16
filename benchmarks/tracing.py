"""Tracing cost per equation: ``make_jaxpr`` of a straight-line function of
1,000 elementwise operations (sin, mul, add in turn) on a small array.

DESIGN.md makes transforms outside ``jit`` retrace on every call, so tracing
must be cheap; the figure to watch is microseconds per recorded equation.
Three variants write the same program at three layers:

* ``bind``: the primitives' own functions (``primitives.elementwise``), the
  floor: core tracing only;
* ``fnp``: ``functrans.numpy`` functions, adding NumPy-style argument handling;
* ``numpy``: plain ``np.sin``/``np.multiply``/``np.add`` on the tracer, going
  through ``__array_ufunc__`` as users' unmodified NumPy code does.
"""

from __future__ import annotations

import numpy as np

from benchmarks._timing import Workload

N_OPS = 1000


def _chain(sin, mul, add):
    def chain(x):
        for i in range(N_OPS):
            k = i % 3
            if k == 0:
                x = sin(x)
            elif k == 1:
                x = mul(x, 1.5)
            else:
                x = add(x, 0.25)
        return x

    return chain


def workloads() -> list[Workload]:
    from functrans.primitives import elementwise as ew

    import functrans
    import functrans.numpy as fnp

    x = np.linspace(0.0, 1.0, 8)
    funs = {
        "bind": _chain(ew.sin, ew.mul, ew.add),
        "fnp": _chain(fnp.sin, fnp.multiply, fnp.add),
        "numpy": _chain(np.sin, np.multiply, np.add),
    }
    eqns = {name: len(functrans.make_jaxpr(f)(x).eqns) for name, f in funs.items()}
    return [
        Workload(
            name="tracing.elementwise1000",
            description=f"make_jaxpr of {N_OPS} sin/mul/add ops on f64[8]",
            variants={name: (lambda f=f: functrans.make_jaxpr(f)(x)) for name, f in funs.items()},
            floor="bind",
            per_unit=lambda name: (eqns[name], "eqn"),
        )
    ]
