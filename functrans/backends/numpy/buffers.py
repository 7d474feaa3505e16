"""Buffers generated code writes into instead of allocating: a dead array of
its own that a ufunc's result of the same type can take (``out=``), and the
per-thread pool of large arrays (``scratch``) kept between calls, with the
run-time checks that a buffer has the layout NumPy would have given.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from functrans.core import Var


def agrees(b: np.ndarray, a: np.ndarray) -> bool:
    """Whether NumPy lays a ufunc's result of the new array ``a`` and of
    ``b`` (of ``a``'s shape) out as ``a``: ``b``'s strides are ``a``'s on
    each axis of two or more elements it does not broadcast along."""
    return b.strides == a.strides or all(
        s == t or s == 0 or n == 1 for s, t, n in zip(b.strides, a.strides, a.shape))


def reuse(a: np.ndarray, *full: np.ndarray) -> np.ndarray | None:
    """``a``, a dead array of the code's own, where it may take a ufunc's
    result: every other operand ``full`` of the result's shape ``agrees``
    with it; else None (NumPy allocates).  One call, not an ``if`` in the
    generated code: a branch per equation made compiling the code 20%
    slower on long programs."""
    for b in full:
        if not agrees(b, a):
            return None
    return a


def take_c_order(key: tuple, *full: np.ndarray) -> np.ndarray | None:
    """A pooled array of ``key``'s type where every operand ``full`` of the
    result's shape leaves the result in C order (``c_order``); else None,
    and the pool is left as it was."""
    for b in full:
        if not c_order(b):
            return None
    return scratch.take(key)


def c_order(b: np.ndarray) -> bool:
    """Whether ``b`` leaves NumPy's choice of a ufunc result's layout at C
    order: its strides on the axes of two or more elements it does not
    broadcast along are positive and decreasing."""
    if b.flags.c_contiguous:
        return True
    strides = [s for s, n in zip(b.strides, b.shape) if n > 1 and s != 0]
    return all(s > 0 for s in strides) and all(s > t for s, t in zip(strides, strides[1:]))


#: Results under this many bytes are not written into a dead operand whose
#: layout must be checked when the code runs: the check (a Python call, about
#: 0.7 us) costs more than NumPy's allocation from its small-block cache
#: (a multiply of f64[1024] took 1.3 us allocating, 2.1 us with the check and
#: ``out=``, measured on the 2-core CI-like machine; at f64[4096] the
#: check pays).
CHECKED_REUSE_MIN_BYTES = 1 << 15


def _small(aval) -> bool:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize < CHECKED_REUSE_MIN_BYTES


class Buffers:
    """Which arrays generated code may write a ufunc's result into (``out=``)
    instead of allocating one.

    ``owned`` are the arrays the function allocated itself (ufunc results)
    that no view shares; one that dies at a ufunc of its shape and dtype
    takes that ufunc's result.  Large owned arrays that die elsewhere go
    back to the ``scratch`` pool, where later large ufunc results of their
    type (in this call or the next) are written: fresh pages for large
    arrays cost more than the arithmetic on them (five ufuncs on f64[100000]:
    1.5 ms allocating each result, 0.08 ms writing in place, measured on the
    2-core CI-like machine)."""

    def __init__(self, constant):
        self.owned: dict[int, tuple] = {}  # id -> (shape, dtype)
        self.reused: str | None = None  # the dead operand ``take`` named last
        self._constant = constant  # names a value in the generated code's namespace
        self._keys: dict[tuple, str] = {}
        self._pooled: dict[tuple, bool] = {}  # (shape, dtype) -> scratch.holds, asked once

    def _holds(self, key: tuple) -> bool:
        pooled = self._pooled.get(key)
        if pooled is None:
            pooled = self._pooled[key] = scratch.holds(*key)
        return pooled

    def take(self, e, fresh: bool, dead, names) -> str | None:
        """The ``out=`` argument for ``e``, or None.  Written into, a buffer
        must have the memory layout NumPy would give the result (a float sum
        over several axes adds in memory order): a dead operand's is that
        layout where every other operand of the result's shape has its
        strides, checked when the code runs; a pooled buffer (C order) where
        every operand of the result's shape is C-contiguous.  ``fresh``: whether
        ``e`` runs as one elementwise NumPy ufunc call returning a new array,
        one that ``out=`` can name (not the NumPy scalar of a 0-d result; not
        a generalised ufunc such as ``matmul``, whose output may not share
        memory with its operands)."""
        self.reused = None
        if not fresh:
            return None
        out = e.outputs[0].aval
        full = [a for a in e.inputs if type(a) is Var and a.aval.shape == out.shape]
        for a in full:
            if id(a) in self.owned and id(a) in dead and a.aval.dtype == out.dtype:
                name = names[id(a)]
                same = [names[id(b)] for b in full if b is not a and id(b) in names]
                if len(same) != sum(b is not a for b in full):
                    return None
                if same and _small(out):  # the check costs more than a new array
                    return None
                self.reused = name
                return f"_reuse({name}, {', '.join(same)})" if same else name
        key = (out.shape, out.dtype)
        if not self._holds(key):
            return None
        if key not in self._keys:
            self._keys[key] = self._constant(key, "t")
        operands = [names[id(b)] for b in full if id(b) in names]
        if len(operands) != len(full):
            return None
        if not operands:
            return f"_take({self._keys[key]})"
        return f"_take_c_order({self._keys[key]}, {', '.join(operands)})"

    def release(self, e, fresh: bool, dead, names, into) -> tuple[list[str], list[str]]:
        """After ``e`` (``fresh`` as for ``take``): the local names to give back
        to the pool, and to delete."""
        if fresh:
            out = e.outputs[0].aval
            self.owned[id(e.outputs[0])] = (out.shape, out.dtype)
        elif getattr(e.primitive, "keeps_operands", True):  # it may keep a view of them
            for a in e.inputs:
                self.owned.pop(id(a), None)
        give, gone = [], []
        reused = self.reused if into else None
        for i in dead:
            name, key = names[i], self.owned.pop(i, None)
            if not name.startswith("v"):
                continue
            if name != reused and key is not None and self._holds(key):
                give.append(name)
            gone.append(name)
        return give, gone


class ScratchPool(threading.local):
    """Large arrays generated code has finished with, by shape and dtype,
    for the next ufunc result of their type to be written into.  Per thread;
    at most ``PER_TYPE`` arrays of a type and ``MAX_BYTES`` in all are kept,
    which bounds the memory held between calls."""

    MIN_BYTES = 1 << 17  # smaller arrays come from malloc's heap, cheaply
    MAX_BYTES = 1 << 26
    PER_TYPE = 4

    def __init__(self):
        self.free: dict[tuple, list[np.ndarray]] = {}
        self.nbytes = 0

    def holds(self, shape: tuple, dtype: np.dtype) -> bool:
        """Whether arrays of this type are pooled (decided when code is generated)."""
        size = math.prod(shape) * np.dtype(dtype).itemsize
        return self.MIN_BYTES <= size <= self.MAX_BYTES

    def take(self, key: tuple) -> np.ndarray | None:
        arrays = self.free.get(key)
        if not arrays:
            return None
        x = arrays.pop()
        self.nbytes -= x.nbytes
        return x

    def give(self, x: np.ndarray) -> None:
        if not x.flags.c_contiguous:  # taken for results NumPy writes in C order
            return
        arrays = self.free.setdefault((x.shape, x.dtype), [])
        if len(arrays) < self.PER_TYPE and self.nbytes + x.nbytes <= self.MAX_BYTES:
            arrays.append(x)
            self.nbytes += x.nbytes

    def clear(self) -> None:
        self.free.clear()
        self.nbytes = 0


#: The pool the generated code of this thread uses.
scratch = ScratchPool()


def pad_buffer(key: tuple) -> np.ndarray:
    """An array of ``key``'s shape and dtype to write into: a pooled one
    (its contents are overwritten) or a new one."""
    x = scratch.take(key) if scratch.holds(*key) else None
    return np.empty(*key) if x is None else x
