"""The pad-sum peephole of generated code: ``add(pad(x1), pad(x2))`` with zero
padding (what transposing two slices of one array makes) written into one
buffer, bit for bit the values of the three equations.
"""

from __future__ import annotations

import math

import numpy as np

from functrans.core import Jaxpr, Literal, Var


def _zero_literal(a) -> bool:
    """Whether ``a`` is a literal +0 (a zeroed buffer holds it; -0.0 is not)."""
    if type(a) is not Literal:
        return False
    v = a.val
    if type(v) in (bool, int, float, complex):
        return v == 0 and not math.copysign(1.0, complex(v).real) < 0 \
            and not math.copysign(1.0, complex(v).imag) < 0
    if isinstance(v, (np.ndarray, np.generic)):
        return not np.asarray(v).tobytes().strip(b"\0")
    return False


def _placed_box(e) -> tuple | None:
    """The box (one ``(start, stop)`` per axis) that the operand of the pad
    ``e`` fills in its result, when the rest is +0: edges not negative, no
    interior padding, a zero padding value of a number dtype; else None."""
    if e.primitive.name != "pad" or type(e.inputs[0]) is not Var or not _zero_literal(e.inputs[1]):
        return None
    x, out = e.inputs[0].aval, e.outputs[0].aval
    if x.dtype != out.dtype or not np.issubdtype(out.dtype, np.number):
        return None
    config = e.params["padding_config"]
    if any(lo < 0 or hi < 0 or interior != 0 for lo, hi, interior in config):
        return None
    return tuple((lo, lo + d) for (lo, _, _), d in zip(config, x.shape))


def _box_minus(box: tuple, cut: tuple) -> list[tuple]:
    """``box`` less ``cut``, as disjoint non-empty boxes."""
    if any(max(a, c) >= min(b, d) for (a, b), (c, d) in zip(box, cut)):
        return [box] if all(a < b for a, b in box) else []
    pieces, rest = [], list(box)
    for axis, ((a, b), (c, d)) in enumerate(zip(box, cut)):
        lo, hi = max(a, c), min(b, d)
        for piece in ((a, lo), (hi, b)):
            if piece[0] < piece[1]:
                pieces.append((*rest[:axis], piece, *rest[axis + 1:]))
        rest[axis] = (lo, hi)
    return pieces


def _index(box: tuple) -> str:
    """``box`` as the text of a basic index."""
    return ", ".join(f"{a}:{b}" for a, b in box) if box else "..."


class PadSum:
    """``add(pad(x1), pad(x2))`` with zero padding (what transposing two
    slices of one array makes): one buffer, each operand written in its box,
    instead of two zero-filled arrays and a pass adding them.

    The buffer takes the earlier pad's operand and zeros elsewhere; the
    later pad's operand is added in its box, in the add's operand order;
    where only the first lies, ``+ 0`` is added as the add did (it turns
    -0.0 into +0.0).  Values are those of the three equations bit for bit."""

    def __init__(self, first, second, boxes: tuple[tuple, tuple], first_is_left: bool):
        self.first, self.second = first, second  # the pads, in program order
        self.boxes = boxes  # where their operands lie
        self.first_is_left = first_is_left

    def lines(self, e, names, local, constant) -> list[str]:
        out = e.outputs[0].aval
        full = tuple((0, d) for d in out.shape)
        first_box, second_box = self.boxes
        if e is self.first:
            buf = local(e.outputs[0])
            key = constant((out.shape, out.dtype), "k")
            text = [f"    {buf} = _pad_buffer({key})",
                    f"    {buf}[{_index(first_box)}] = {names[id(e.inputs[0])]}"]
            text += [f"    {buf}[{_index(z)}] = 0" for z in _box_minus(full, first_box)]
            return text
        buf = names[id(self.first.outputs[0])]
        if e is self.second:
            view, x = f"{buf}[{_index(second_box)}]", names[id(e.inputs[0])]
            operands = f"{view}, {x}" if self.first_is_left else f"{x}, {view}"
            return [f"    _pad_add({operands}, out={view})",
                    f"    {local(e.outputs[0])} = {buf}"]
        text = []
        if np.issubdtype(out.dtype, np.inexact):
            text += [f"    {buf}[{_index(z)}] += 0" for z in _box_minus(first_box, second_box)]
        return text + [f"    {local(e.outputs[0])} = {buf}"]


def find_pad_sums(jaxpr: Jaxpr, fns: list) -> dict[int, PadSum]:
    """The equations (by index) of each ``add(pad(x1), pad(x2))`` that
    ``PadSum`` writes into one buffer: both pads used by the add alone."""
    if not any(e.primitive.name == "pad" for e in jaxpr.eqns):
        return {}  # (most programs: no count of uses needed)
    uses: dict[int, int] = {}
    for a in (*(a for e in jaxpr.eqns for a in e.inputs), *jaxpr.outvars):
        if type(a) is Var:
            uses[id(a)] = uses.get(id(a), 0) + 1
    made: dict[int, tuple[int, tuple]] = {}  # pad result id -> (equation index, box)
    plans: dict[int, PadSum] = {}
    for i, (e, fn) in enumerate(zip(jaxpr.eqns, fns)):
        box = _placed_box(e)
        if box is not None:
            made[id(e.outputs[0])] = (i, box)
            continue
        if e.primitive.name != "add" or fn is not np.add:
            continue
        found = [made.get(id(a)) for a in e.inputs if type(a) is Var and uses.get(id(a)) == 1]
        if len(found) != 2 or None in found:
            continue
        (j, left), (k, right) = found  # type: ignore[misc]
        out = e.outputs[0].aval
        if j == k or j in plans or k in plans or any(
                jaxpr.eqns[m].outputs[0].aval.shape != out.shape
                or jaxpr.eqns[m].outputs[0].aval.dtype != out.dtype for m in (j, k)):
            continue
        first, second = (j, k) if j < k else (k, j)
        boxes = (left, right) if j < k else (right, left)
        plans[j] = plans[k] = plans[i] = PadSum(jaxpr.eqns[first], jaxpr.eqns[second],
                                                 boxes, j < k)
    return plans
