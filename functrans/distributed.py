"""Processes working together (SPMD): ``initialize``, ``process_index``,
``process_count`` and ``AXIS``, the axis name of all processes for the
collectives of ``functrans.lax`` (``psum(x, AXIS)`` ...).

Launch the same script on every process (``mpiexec -n 2 python train.py``)
and call ``initialize()`` first.  The collectives then run over MPI (mpi4py,
the ``mpi`` extra: ``pip install functrans[mpi]`` brings an MPI from wheels)
on NumPy arrays, straight from their buffers, and over NCCL
(``cupy.cuda.nccl``, its communicator set up through MPI) on CuPy arrays;
eagerly, from jit's generated code, and under every transform.

A rank that fails must not leave the others waiting forever: by default an
uncaught exception aborts every process of the communicator (as
``python -m mpi4py`` does), and with ``timeout=`` a collective that waits
longer raises ``CollectiveTimeoutError`` naming the collective and the rank.

mpi4py is imported by ``initialize`` only: ``import functrans`` never needs it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np

from functrans.errors import CollectiveTimeoutError
from functrans.primitives import collectives

__all__ = ["AXIS", "initialize", "process_count", "process_index"]

#: The axis name of all processes, for ``functrans.lax.psum(x, AXIS)`` and the
#: other collectives.
AXIS = collectives.AXIS

#: The number of processes, as launchers (MPICH/Hydra, Open MPI, Slurm) tell
#: each process they start.
_LAUNCHER_SIZES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS")


def _contiguous(x: np.ndarray) -> np.ndarray:
    """``x`` in C order, as MPI's buffers want (``np.ascontiguousarray``
    would make a 0-d array 1-d)."""
    return x if x.flags.c_contiguous else x.copy(order="C")


class _Single:
    """The processes of a run that is not launched by mpiexec (and has no
    mpi4py): one process, whose collectives return their operand."""

    rank, size = 0, 1

    def allreduce(self, x, op, what):
        return x.copy()

    def allgather(self, x, what):
        return x[None].copy()

    def reduce_scatter(self, x, what):
        return x[0].copy()

    def permute(self, x, perm, what):
        return x.copy() if (0, 0) in perm else np.zeros_like(x)


class _MPIGroup:
    """The collectives over an mpi4py communicator: NumPy arrays go through
    MPI's buffer interface (no pickling); CuPy arrays through NCCL."""

    def __init__(self, MPI: Any, comm: Any, timeout: float | None):
        self.MPI, self.comm, self.timeout = MPI, comm, timeout
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self._nccl: _NCCL | None = None

    def _device(self, x) -> _NCCL | None:
        if type(x) is np.ndarray:
            return None
        if self._nccl is None:
            self._nccl = _NCCL(self)
        return self._nccl

    def _wait(self, requests: list, what: str) -> None:
        """Wait for ``requests``, up to the timeout."""
        MPI = self.MPI
        if self.timeout is None:
            MPI.Request.Waitall(requests)
            return
        deadline = time.monotonic() + self.timeout
        pause = 1e-5
        while not MPI.Request.Testall(requests):
            if time.monotonic() > deadline:
                raise CollectiveTimeoutError(
                    f"{what} over functrans.distributed.AXIS: rank {self.rank} of {self.size} "
                    f"waited {self.timeout:g} s for the other ranks; one of them failed or "
                    "runs other collectives (every rank must run the same collectives in the "
                    "same order); see the other ranks' output"
                )
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)

    def allreduce(self, x, op, what):
        device = self._device(x)
        if device is not None:
            return device.allreduce(x, op)
        x = _contiguous(x)
        if op != "sum" and x.dtype.kind in "fc":
            # MPI's MAX/MIN leave NaN to the implementation: reduce the gathered
            # values with NumPy's, which propagates NaN as functrans' max does.
            parts = self.allgather(x, what)
            return np.asarray((np.maximum if op == "max" else np.minimum).reduce(parts, axis=0))
        out = np.empty_like(x)
        mpi_op = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
        if self.timeout is None:
            self.comm.Allreduce(x, out, op=mpi_op)
        else:
            self._wait([self.comm.Iallreduce(x, out, op=mpi_op)], what)
        return out

    def allgather(self, x, what):
        device = self._device(x)
        if device is not None:
            return device.allgather(x)
        x = _contiguous(x)
        out = np.empty((self.size,) + x.shape, x.dtype)
        if self.timeout is None:
            self.comm.Allgather(x, out)
        else:
            self._wait([self.comm.Iallgather(x, out)], what)
        return out

    def reduce_scatter(self, x, what):
        device = self._device(x)
        if device is not None:
            return device.reduce_scatter(x)
        x = _contiguous(x)
        out = np.empty(x.shape[1:], x.dtype)
        if self.timeout is None:
            self.comm.Reduce_scatter_block(x, out, op=self.MPI.SUM)
        else:
            self._wait([self.comm.Ireduce_scatter_block(x, out, op=self.MPI.SUM)], what)
        return out

    def permute(self, x, perm, what):
        device = self._device(x)
        if device is not None:
            return device.permute(x, perm)
        x = _contiguous(x)
        out = np.zeros_like(x)
        requests = []
        for src, dst in perm:
            if dst == self.rank:
                requests.append(self.comm.Irecv(out, source=src, tag=7))
            if src == self.rank:
                requests.append(self.comm.Isend(x, dest=dst, tag=7))
        self._wait(requests, what)
        return out


class _NCCL:
    """NCCL collectives on CuPy arrays over the ranks of an MPI group: rank 0
    makes the NCCL id, MPI broadcasts it, each rank uses the GPU of its rank
    on its node."""

    _DTYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
               "float64": "NCCL_FLOAT64", "int32": "NCCL_INT32", "int64": "NCCL_INT64",
               "uint8": "NCCL_UINT8", "int8": "NCCL_INT8", "uint32": "NCCL_UINT32",
               "uint64": "NCCL_UINT64"}
    _OPS = {"sum": "NCCL_SUM", "max": "NCCL_MAX", "min": "NCCL_MIN"}

    def __init__(self, group: _MPIGroup):
        import cupy  # loaded for CuPy operands only
        from cupy.cuda import nccl

        self.cupy, self.nccl = cupy, nccl
        local = group.comm.Split_type(group.MPI.COMM_TYPE_SHARED)
        cupy.cuda.Device(local.Get_rank() % cupy.cuda.runtime.getDeviceCount()).use()
        uid = nccl.get_unique_id() if group.rank == 0 else None
        uid = group.comm.bcast(uid, root=0)  # the id is a small tuple of ints
        self.comm = nccl.NcclCommunicator(group.size, uid, group.rank)
        self.size, self.rank = group.size, group.rank

    def _dtype(self, x) -> int:
        try:
            return getattr(self.nccl, self._DTYPES[x.dtype.name])
        except KeyError:
            raise TypeError(
                f"the NCCL collectives take {', '.join(self._DTYPES)} arrays, got "
                f"{x.dtype.name}; convert it first"
            ) from None

    def _stream(self) -> int:
        return self.cupy.cuda.get_current_stream().ptr

    def allreduce(self, x, op):
        x = x if x.flags.c_contiguous else x.copy(order="C")
        if x.dtype.kind == "c":  # NCCL has no complex type: the real and imaginary parts
            return self.allreduce(x.view(x.real.dtype), op).view(x.dtype)
        out = self.cupy.empty_like(x)
        self.comm.allReduce(x.data.ptr, out.data.ptr, x.size, self._dtype(x),
                            getattr(self.nccl, self._OPS[op]), self._stream())
        return out

    def allgather(self, x):
        x = x if x.flags.c_contiguous else x.copy(order="C")
        out = self.cupy.empty((self.size,) + x.shape, x.dtype)
        self.comm.allGather(x.data.ptr, out.data.ptr, x.size, self._dtype(x), self._stream())
        return out

    def reduce_scatter(self, x):
        x = x if x.flags.c_contiguous else x.copy(order="C")
        out = self.cupy.empty(x.shape[1:], x.dtype)
        self.comm.reduceScatter(x.data.ptr, out.data.ptr, out.size, self._dtype(x),
                                self.nccl.NCCL_SUM, self._stream())
        return out

    def permute(self, x, perm):
        x = x if x.flags.c_contiguous else x.copy(order="C")
        out = self.cupy.zeros_like(x)
        stream, dtype = self._stream(), self._dtype(x)
        self.nccl.groupStart()
        for src, dst in perm:
            if src == self.rank:
                self.comm.send(x.data.ptr, x.size, dtype, dst, stream)
            if dst == self.rank:
                self.comm.recv(out.data.ptr, out.size, dtype, src, stream)
        self.nccl.groupEnd()
        return out


def _launched() -> bool:
    """Whether a launcher started this process as one of several."""
    return any(os.environ.get(v, "1").strip() not in ("", "0", "1") for v in _LAUNCHER_SIZES)


def initialize(comm: Any = None, *, timeout: float | None = None,
               abort_on_error: bool = True) -> None:
    """Set up the processes for the collectives over ``AXIS``.

    ``comm``: an mpi4py communicator (default ``MPI.COMM_WORLD``).  Without
    mpi4py and outside an MPI launch, the run is one process.  ``timeout``:
    seconds a collective waits for the other ranks before raising
    ``CollectiveTimeoutError`` (None: no limit).  ``abort_on_error``: an
    uncaught exception on any rank aborts every rank of ``comm`` instead of
    leaving the others blocked in their next collective.

    In a script started as ``mpiexec -n 2 python train.py``:

    >>> import functrans as ft, functrans.distributed as dist, numpy as np
    >>> dist.initialize()                                   # doctest: +SKIP
    >>> ft.lax.psum(np.ones(2) * dist.process_index(), dist.AXIS)  # doctest: +SKIP
    array([1., 1.])
    """
    if timeout is not None and not timeout > 0:
        raise ValueError(f"initialize: timeout must be a positive number of seconds, got "
                         f"{timeout!r}")
    try:
        from mpi4py import MPI  # the mpi extra; loaded here only
    except ImportError:
        if comm is not None or _launched():
            raise ImportError(
                "functrans.distributed.initialize: this process was launched by an MPI "
                "launcher (or given a communicator) but mpi4py is not installed; install it "
                "with pip install 'functrans[mpi]'"
            ) from None
        collectives.set_process_group(_Single())
        return
    group = _MPIGroup(MPI, MPI.COMM_WORLD if comm is None else comm, timeout)
    collectives.set_process_group(group)
    if abort_on_error and group.size > 1:
        _abort_on_uncaught(group)


def _abort_on_uncaught(group: _MPIGroup) -> None:
    """Make an uncaught exception print its traceback, then abort ``group``'s
    communicator, so the other ranks end instead of waiting."""
    previous = sys.excepthook
    if getattr(previous, "_functrans_abort", False):
        return

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.write(f"functrans.distributed: rank {group.rank} of {group.size} failed "
                         "with an uncaught exception; aborting all ranks\n")
        sys.stderr.flush()
        # The launcher forwards output through pipes and drops what is still in
        # them when it tears the ranks down: give it a moment to pass this on.
        time.sleep(0.5)
        group.comm.Abort(1)

    hook._functrans_abort = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def _group():
    group = collectives.installed_group()
    if group is None:
        raise RuntimeError(
            "functrans.distributed: call functrans.distributed.initialize() before asking "
            "for the process index or count"
        )
    return group


def process_index() -> int:
    """This process' rank, 0 to ``process_count() - 1`` (after ``initialize``)."""
    return _group().rank


def process_count() -> int:
    """The number of processes (after ``initialize``)."""
    return _group().size
