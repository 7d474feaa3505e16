"""functrans benchmarks: ``python -m benchmarks`` times each workload, prints a
table and writes the figures as JSON (``benchmarks/results/latest.json``).

Topics: ``eager`` (call overhead), ``tracing`` (cost per equation),
``autodiff`` (grad and Hessian-vector products), ``jacobians`` (dense
Hessians, per-example gradients, chunked-Hessian memory), ``control_flow``
(reverse mode through ``lax.scan``), ``compile`` (first-call and import
time, in fresh processes), ``optimize`` (``functrans.optimize.minimize``),
``constrained`` (``minimize`` with constraints: Hock-Schittkowski 71 and a
pendulum swing-up against SciPy's trust-constr), ``least_squares``
(against SciPy's ``least_squares``) and
``distributed`` (``psum`` against raw mpi4py ``Allreduce`` and data-parallel
gradients, over ``mpiexec -n 2``); ``optimizers``: an Adam step of
``functrans.optimizers`` against NumPy and ``torch.optim``.
``scaling``: transform cost against program size, on unrolled Python loops.
``native``: jit's Numba tier against its NumPy tier and JAX's jit.
Each workload names its floor: the same math in hand-written NumPy (for
``tracing``, the cheapest tracing layer).

Two tools run on their own, outside the table: ``python -m
benchmarks.mutations`` (how many deliberately wrong derivative rules
``functrans.testing.check_derivatives`` catches, and its false alarms, over
the primitive registry) and ``python -m benchmarks.checking_speed`` (examples
per second of the derivative checkers, beside PyTorch's and JAX's).

One module per topic; each has ``workloads()`` returning
``benchmarks._timing.Workload`` records.  Peer libraries (JAX, autograd,
PyTorch) may be added as extra variants where they are importable; nothing
here requires them.
"""

#: The topic modules, in the order their workloads run.
TOPICS = (
    "eager", "tracing", "autodiff", "jacobians", "control_flow", "compile", "optimize",
    "constrained", "least_squares", "scaling", "native", "distributed", "sparse", "optimizers",
)
