"""What a native loop kernel's source is made of: the values it holds
(``Value``) and what it collects besides its statements (``Kernel``: its
literals, buffers, size arguments and NumPy loops)."""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from functrans.backends.native.elementwise import _literal
from functrans.core import Eqn


class Value:
    """A body value as a kernel holds it: ``name``, a Numba scalar (rank 0)
    or array, read at the fixed leading indices ``lead`` (a scan's step
    ``i`` on its stacked operands) then the value's own; ``shape``, its
    dimensions as expressions; ``owned``: a buffer the current body writes
    whole whenever it computes the value, which a carry may therefore take
    over; ``row``: where the lead is fixed for a step, the name of the view
    ``name[lead]`` the step holds (``Kernel.row``), through which elements
    are read and written."""

    __slots__ = ("name", "shape", "dtype", "owned", "lead", "row")

    def __init__(self, name: str, shape: tuple[str, ...], dtype: np.dtype, owned: bool = False,
                 lead: tuple[str, ...] = (), row: str | None = None):
        self.name, self.shape, self.dtype, self.owned, self.lead = name, shape, dtype, owned, lead
        self.row = row

    def at(self, index: Sequence[str]) -> str:
        """The element at ``index`` (one expression per axis)."""
        if self.row is not None:
            return f"{self.row}[{', '.join(index)}]" if index else self.row
        full = [*self.lead, *index]
        return f"{self.name}[{', '.join(full)}]" if full else self.name

    def borrowed(self) -> Value:
        """The same value as an operand of an inner body (not its to take)."""
        return Value(self.name, self.shape, self.dtype, False, self.lead, self.row)


def type_name(dtype: np.dtype) -> str:
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


class Kernel:
    """What a kernel's body lowering collects besides its statements: the
    literals (``constant``: ``K0``, ``K1`` ..., module-level names), the
    statements run once per call before the loops (``pre``: the buffers),
    and the size arguments (``sizes``: their names and static values, passed
    by the caller).  ``exact``: the lowering of ``jit_tier_numerics="exact"``,
    where every float function whose Numba code may differ from NumPy's is
    a call of NumPy's own loop, on scalars too (``body.py``).  ``numba``:
    whether Numba's table of ufunc loops is consulted; tiering's estimate
    (``loops.refusal``) lowers without it, so as not to load Numba, and
    takes Numba to have a loop for every real signature of the ufuncs the
    lowering accepts.  ``refused``: the equation the lowering last
    started, the one it refused where it returns None."""

    def __init__(self, exact: bool = False, numba: bool = True):
        self.exact, self.numba = exact, numba
        self.refused: Eqn | None = None
        self._constants: dict[str, str] = {}
        self.globals: list[str] = []
        self.pre: list[str] = []
        self.sizes: list[tuple[str, int]] = []
        self.loops: list[tuple[str, int]] = []  # NumPy loop arguments: names, addresses
        self._count = 0

    def constant(self, value, dtype: np.dtype) -> str:
        text = _literal(value, dtype)
        if text not in self._constants:
            self._constants[text] = f"K{len(self._constants)}"
            self.globals.append(f"{self._constants[text]} = {text}")
        return self._constants[text]

    def fresh(self, stem: str) -> str:
        self._count += 1
        return f"{stem}{self._count}"

    def size(self, value: int, name: str | None = None) -> str:
        """A size argument holding ``value`` (a length: never in the source)."""
        name = name or self.fresh("n")
        self.sizes.append((name, int(value)))
        return name

    def buffer(self, shape: Sequence[str], dtype: np.dtype) -> str:
        """A new array of ``shape`` allocated once per call."""
        name = self.fresh("b")
        self.pre.append(f"{name} = np.empty(({''.join(d + ', ' for d in shape)}), "
                        f"{type_name(dtype)})")
        return name

    def numpy_call(self, address: int, ops: Sequence[Value | str], dtypes: Sequence[np.dtype],
                   out: Value, pad: str, lines: list[str]) -> None:
        """A call of NumPy's loop at ``address`` (``numpy_loops.py``) writing
        ``out`` (a buffer) from ``ops``: arrays of its shape, contiguous, in
        the loop's dtypes, or scalar expressions (stored in one-element
        buffers and read with stride 0)."""
        places = []
        for op, d in zip([*ops, out], dtypes):
            if isinstance(op, str):  # a scalar
                cell = Value(self.buffer(("1",), d), ("1",), d)
                lines.append(f"{pad}{cell.name}[0] = {op}")
                places.append((address_of(cell), 0))
            else:
                places.append((address_of(op), d.itemsize))
        self.call_loop(address, places, f"{out.name}.size", pad, lines)

    def call_loop(self, address: int, places: Sequence[tuple[str, int]], count: str, pad: str,
                  lines: list[str]) -> None:
        """A call of NumPy's loop at ``address`` on ``count`` elements, each
        operand given as (address expression, stride in bytes)."""
        if "pa = np.empty(4, np.uintp)" not in self.pre:
            self.pre += ["pa = np.empty(4, np.uintp)", "pn = np.empty(1, np.intp)",
                         "ps = np.empty(4, np.intp)"]
        fn = self.loop_argument(address)
        for n, (place, step) in enumerate(places):
            lines += [f"{pad}pa[{n}] = {place}", f"{pad}ps[{n}] = {step}"]
        lines += [f"{pad}pn[0] = {count}",
                  f"{pad}call_loop({fn}, pa.ctypes.data, pn.ctypes.data, ps.ctypes.data)"]

    def loop_argument(self, address: int) -> str:
        """The kernel's argument holding the NumPy loop at ``address``."""
        fn = next((n for n, a in self.loops if a == address), f"u{len(self.loops)}")
        if fn == f"u{len(self.loops)}":
            self.loops.append((fn, address))
        return fn

    def before_loops(self, name: str) -> bool:
        """Whether ``name`` is defined before the loops: an operand of the
        kernel (``a0``, ``a1`` ...) or a name ``pre`` assigns (a buffer)."""
        return re.fullmatch(r"a[0-9]+", name) is not None or any(
            line.startswith(f"{name} = ") for line in self.pre)

    def row(self, v: Value, index: Sequence[str], pad: str, lines: list[str]) -> Value:
        """``v`` read at the further leading indices ``index`` (a scan's step
        on a stacked operand or output, fixed for the step): where elements
        remain, a view of that row taken once, here, so that the loops over
        its elements index one array by their own indices.  (Indexing the
        whole array by the step and the element in every iteration costs a
        bounds wrap and a stride product per element, and keeps LLVM from
        vectorising the loop: the RNN gradient's reverse step took a third
        longer.)  A row of one element stays an index of the array, which
        a copy can write."""
        shape = v.shape[len(index):]
        if not shape:
            return Value(v.name, shape, v.dtype, lead=(*v.lead, *index))
        name = self.fresh("r")
        source = f"{v.row}[{', '.join(index)}]" if v.row is not None else v.at(index)
        lines.append(f"{pad}{name} = {source}")
        return Value(v.name, shape, v.dtype, lead=(*v.lead, *index), row=name)

    def nest(self, shape: Sequence[str], pad: str, lines: list[str]) -> tuple[list[str], str]:
        """Loops over ``shape`` appended to ``lines``: their indices and the
        indentation inside them."""
        index = []
        for extent in shape:
            j = self.fresh("j")
            lines.append(f"{pad}for {j} in range({extent}):")
            index.append(j)
            pad += "    "
        return index, pad

    def copy(self, dst: Value, src: Value, pad: str, lines: list[str]) -> None:
        self.copies([(dst, src)], pad, lines)

    def copies(self, pairs: Sequence[tuple[Value, Value]], pad: str, lines: list[str]) -> None:
        """Each ``(dst, src)`` copied, those whose sources have the same
        dimension expressions in one loop nest (a scan's stacked rows:
        one loop instead of several saved about 8 ns a step of 16
        elements)."""
        nests: dict[tuple[str, ...], list[tuple[Value, Value]]] = {}
        for dst, src in pairs:
            nests.setdefault(src.shape, []).append((dst, src))
        for shape, group in nests.items():
            index, inner = self.nest(shape, pad, lines)
            lines += [f"{inner}{dst.at(index)} = {src.at(index)}" for dst, src in group]


def address_of(v: Value) -> str:
    """The address of ``v``'s first element (an array, or a row of one)."""
    return " + ".join([f"{v.name}.ctypes.data", *(f"np.uintp({i} * {v.name}.strides[{a}])"
                                                  for a, i in enumerate(v.lead))])
