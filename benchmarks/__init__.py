"""functrans benchmarks: ``python -m benchmarks`` times each workload, prints a
table and writes the figures as JSON (``benchmarks/results/latest.json``).

One module per topic; each has ``workloads()`` returning
``benchmarks._timing.Workload`` records.  Peer libraries (JAX, autograd,
PyTorch) may be added as extra variants where they are importable; nothing
here requires them.
"""

#: The topic modules, in the order their workloads run.
TOPICS = ("eager", "tracing")
