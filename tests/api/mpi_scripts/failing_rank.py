"""Run by tests/api/test_distributed.py as ``mpiexec -n 2 python failing_rank.py MODE``:
one rank fails while the other waits in a collective; the run must end.

``raise``: rank 1 raises before its psum; its uncaught exception aborts both
ranks (rank 0 would otherwise wait in psum forever).
``timeout``: rank 1 never comes (it sleeps); rank 0's psum gives up after the
timeout with an error naming the collective and the rank, which aborts both."""

import sys
import time

import numpy as np

import functrans.distributed as dist
from functrans import lax

mode = sys.argv[1]
dist.initialize(timeout=1.0 if mode == "timeout" else None)
rank = dist.process_index()
print(f"rank {rank} started", flush=True)
lax.psum(np.ones(3), dist.AXIS)  # both ranks meet once
if rank == 1:
    if mode == "raise":
        raise ValueError("rank 1 fails on purpose")
    time.sleep(60)
lax.psum(np.ones(3), dist.AXIS)
print(f"rank {rank} finished", flush=True)
