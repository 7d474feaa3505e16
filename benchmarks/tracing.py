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

``tracing.layout_decisions300``: eager ``grad`` of 300 steps of
``x = x.T * 1.0; r = x.reshape(-1)`` on f64[3, 4], whose reshapes are a
view or a copy as the memory order of ``x`` (Fortran order, then C order,
in turn) makes them in NumPy: the trace decides it at each one.  The floor
is the same steps without the reshape; the difference in ``us/step`` is
what a reshape costs with its layout decision.
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


LAYOUT_STEPS = 300


def _transposed(x):
    for _ in range(LAYOUT_STEPS):
        x = x.T * 1.0
    return x.sum()


def _transposed_reshaped(x):
    for _ in range(LAYOUT_STEPS):
        x = x.T * 1.0
        r = x.reshape(-1)
    return r.sum()


def _layout_workload() -> Workload:
    import functrans

    x = np.arange(12.0).reshape(3, 4)
    without, with_reshape = functrans.grad(_transposed), functrans.grad(_transposed_reshaped)
    return Workload(
        name=f"tracing.layout_decisions{LAYOUT_STEPS}",
        description=f"eager grad of {LAYOUT_STEPS} steps of x = x.T * 1.0; r = x.reshape(-1) "
                    "on f64[3, 4], against the steps without the reshape",
        variants={"transpose": lambda: without(x), "transpose_reshape": lambda: with_reshape(x)},
        floor="transpose",
        per_unit=lambda name: (LAYOUT_STEPS, "step"),
    )


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
        ),
        _layout_workload(),
    ]
