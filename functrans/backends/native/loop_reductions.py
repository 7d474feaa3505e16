"""Reductions inside native loop bodies (a loop's test ``sum(x) < tol``, a
norm in its step), only where the result is NumPy's bit for bit:

* integer and bool sums, products, maxima and minima, and ``all``/``any``
  of any real dtype, over any axes: a loop nest adding into an accumulator
  that starts at the identity, each term converted to the result's dtype
  first as NumPy's reduction converts it (integer arithmetic wraps, so the
  order of the terms does not matter);
* float32/float64 sums, maxima and minima of a whole vector: NumPy's own
  loop for the dtype (``numpy_loops.py``) called as NumPy's reduction calls
  it, the accumulator as both first operand and result, so the order of the
  sum (NumPy's pairwise summation), NaN propagation and the zero a tie
  keeps are NumPy's.  Whether this NumPy reduces a vector in one such call
  is checked once per process and dtype, against ``ufunc.reduce`` on
  lengths where the summation changes shape and on NaN, infinities and
  signed zeros; where it does not, the reduction has no lowering.

Other float reductions (over some axes of an array, whose order NumPy picks
by memory layout; float products; argmax) leave their loop to the NumPy
tier.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from functrans.backends.native.kernel import Kernel, Value, address_of
from functrans.backends.native.numpy_loops import loop_address
from functrans.backends.native.reducers import LOGICAL, UFUNCS, identity
from functrans.core import Eqn

#: The reductions a loop body may hold (``reduction_lines``).
REDUCTIONS = frozenset((*UFUNCS, *LOGICAL))


def _exact_lines(k: Kernel, e: Eqn, x: Value, pad: str) -> tuple[list[str], Value]:
    name = e.primitive.name
    out = e.outputs[0].aval.dtype
    axes = set(e.params["axes"])
    kept = [d for a, d in enumerate(x.shape) if a not in axes]
    lines: list[str] = []
    start = k.constant(identity(name, out), out)
    if kept:
        acc = Value(k.buffer(kept, out), tuple(kept), out, owned=True)
        index, inner = k.nest(kept, pad, lines)
        lines.append(f"{inner}{acc.at(index)} = {start}")
    else:
        acc = Value(k.fresh("s"), (), out)
        lines.append(f"{pad}{acc.name} = {start}")
    index, inner = k.nest(x.shape, pad, lines)
    here = acc.at([j for a, j in enumerate(index) if a not in axes])
    term = x.at(index)
    if name in LOGICAL:
        test = term if x.dtype.kind == "b" else f"{term} != {k.constant(0, x.dtype)}"
        step = f"np.{LOGICAL[name].__name__}({here}, {test})"
    elif out.kind == "b":  # max/min of bools: any/all
        step = f"np.logical_{'or' if name == 'reduce_max' else 'and'}({here}, {term})"
    else:
        step = f"np.{UFUNCS[name].__name__}({here}, np.{out.name}({term}))"
    lines.append(f"{inner}{here} = {step}")
    return lines, acc


def _call(address: int, acc: np.ndarray, x: np.ndarray) -> None:
    """NumPy's loop at ``address`` reducing ``x`` into ``acc[0]``, as the
    kernels call it (the check below runs it from Python)."""
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_void_p)(address)
    args = (ctypes.c_void_p * 3)(acc.ctypes.data, x.ctypes.data, acc.ctypes.data)
    steps = (ctypes.c_ssize_t * 3)(0, x.itemsize, 0)
    fn(args, ctypes.byref(ctypes.c_ssize_t(x.size)), steps, None)


@functools.cache
def reduces_as_numpy(ufunc: np.ufunc, dtype: np.dtype) -> bool:
    """Whether one call of NumPy's loop in reduction form (after the
    identity for sums, the first element for maxima and minima) gives
    ``ufunc.reduce``'s bits on vectors of ``dtype``."""
    address = loop_address(ufunc, dtype.char * 2 + "->" + dtype.char)
    if address is None:
        return False
    rng = np.random.default_rng(7)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
    with np.errstate(all="ignore"):
        for n in (1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 136, 257, 1000, 2051, 9000):
            for trial in range(3):
                x = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n)
                if trial == 1:
                    x[rng.integers(0, n, max(1, n // 8))] = rng.choice(specials, max(1, n // 8))
                elif trial == 2:
                    x = rng.choice([0.0, -0.0], n)
                x = x.astype(dtype)
                acc = np.zeros(1, dtype) if ufunc is np.add else x[:1].copy()
                _call(address, acc, x if ufunc is np.add else x[1:])
                if acc[0].tobytes() != ufunc.reduce(x).tobytes():
                    return False
    return True


def reduction_lines(k: Kernel, e: Eqn, x: Value, pad: str) -> tuple[list[str], Value] | None:
    """Statements computing reduction equation ``e`` of ``x``, and its
    value; None where the result could differ from NumPy's."""
    name = e.primitive.name
    src, out = x.dtype, e.outputs[0].aval.dtype
    if name in LOGICAL and src.kind in "biuf" or (
            name in UFUNCS and src.kind in "biu" and out.kind in "biu"):
        return _exact_lines(k, e, x, pad)
    ufunc = UFUNCS.get(name)
    if (ufunc is None or ufunc is np.multiply or src != out or len(x.shape) != 1
            or src not in (np.float32, np.float64) or not reduces_as_numpy(ufunc, src)):
        return None
    if ufunc is not np.add and not e.inputs[0].aval.shape[0]:
        return None  # NumPy refuses an empty maximum: its call says so
    address = loop_address(ufunc, src.char * 2 + "->" + src.char)
    assert address is not None
    cell = Value(k.buffer(("1",), out), (), out, lead=("0",))
    lines = [f"{pad}{cell.at(())} = "
             f"{k.constant(0, out) if ufunc is np.add else x.at(('0',))}"]
    first = address_of(x) if ufunc is np.add else f"{address_of(x)} + np.uintp({src.itemsize})"
    count = x.shape[0] if ufunc is np.add else f"{x.shape[0]} - 1"
    k.call_loop(address, [(f"{cell.name}.ctypes.data", 0), (first, src.itemsize),
                          (f"{cell.name}.ctypes.data", 0)], count, pad, lines)
    return lines, cell
