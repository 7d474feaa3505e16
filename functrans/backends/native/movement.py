"""Data-movement equations of a loop body as kernel statements: indexing
(``gather`` by static entries and scalar integer operands, ``dynamic_slice``,
static ``slice``, ``rev``) and shape changes (``broadcast_in_dim``, ``squeeze``,
``expand_dims``, ``reshape``).  They move elements and compute none, so the
kernel's results are the NumPy tier's bit for bit by construction.

Where a ``Value`` can express the result without copying, it is a view:
rows selected by leading scalar indices extend the operand's fixed leading
indices (``Value.lead``), and a shape change of a (always C-contiguous)
value is Numba's ``reshape`` view.  Other results are copied into a buffer
of their own by a loop nest.

An integer index that NumPy would refuse (out of bounds after wrapping a
negative one) raises ``IndexError`` in the kernel; the kernel writes none of
its operands, so its caller reruns the loop in the NumPy tier, whose error
the user then sees (``loops.loop_call``)."""

from __future__ import annotations

from typing import Sequence

from functrans.backends.native.kernel import Kernel, Value
from functrans.core import Eqn, Literal

#: The primitives this module lowers.
MOVEMENT = frozenset({"gather", "dynamic_slice", "slice", "rev", "broadcast_in_dim",
                      "squeeze", "expand_dims", "reshape"})


def movement_lines(k: Kernel, e: Eqn, ops: Sequence[Value], pad: str
                   ) -> tuple[list[str], Value] | None:
    """Statements computing data-movement equation ``e`` on ``ops`` and the
    value of its result; None where it has no form here."""
    x, out = ops[0], e.outputs[0].aval
    if type(e.inputs[0]) is Literal or not x.shape:
        if e.primitive.name in ("squeeze", "expand_dims", "reshape", "broadcast_in_dim"):
            return _filled(k, x, out, e, pad)
        return None
    if any(a.aval.ndim or a.aval.dtype.kind != "i" for a in e.inputs[1:]):
        return None  # (unsigned starts would mix signed and unsigned arithmetic)
    name = e.primitive.name
    lines: list[str] = []
    if name in ("squeeze", "expand_dims", "reshape"):
        return lines, _reshaped(k, x, e, pad, lines)
    if name == "gather":
        found = _gather_source(k, x, e, ops[1:], pad, lines)
        if isinstance(found, Value):
            return lines, found
        shape, source = found
    elif name == "dynamic_slice":
        source = []
        for a, (d, n, op) in enumerate(zip(x.shape, e.params["slice_sizes"], ops[1:])):
            b = k.fresh("g")  # as in the NumPy tier: clamped so that the window fits
            lines.append(f"{pad}{b} = min(max({op.at(())}, 0), {d} - {n})")
            source.append((a, f"{b} + {{}}"))
        shape = tuple(str(n) for n in e.params["slice_sizes"])
    elif name == "slice":
        p = e.params
        steps = p["strides"] or (1,) * len(x.shape)
        shape = tuple(str(n) for n in out.shape)
        source = [(a, f"{s} + {t} * {{}}") for a, (s, t) in enumerate(zip(p["start_indices"],
                                                                          steps))]
    elif name == "rev":
        flipped = set(e.params["dimensions"])
        shape = x.shape
        source = [(a, f"{d} - 1 - {{}}" if a in flipped else "{}") for a, d in enumerate(x.shape)]
    else:  # broadcast_in_dim: an axis of length 1 is read at 0 along the result's
        static = e.inputs[0].aval.shape
        shape = tuple(str(n) for n in out.shape)
        source = [(None, "0") if static[a] == 1 and out.shape[d] != 1 else (d, "{}")
                  for a, d in enumerate(e.params["broadcast_dimensions"])]
    return lines, _copied(k, x, shape, source, out.dtype, pad, lines)


#: Where a copy reads each axis of its operand: ``(result axis, template)``,
#: the template formatted with that axis's index, or ``(None, expression)``.
Source = Sequence[tuple[int | None, str]]


def _copied(k: Kernel, x: Value, shape: tuple[str, ...], source: Source, dtype, pad: str,
            lines: list[str]) -> Value:
    """A buffer of ``shape`` whose elements are ``x``'s read at ``source``;
    a scalar where ``shape`` is ()."""
    if not shape:
        s = k.fresh("v")
        lines.append(f"{pad}{s} = {x.at([t for _, t in source])}")
        return Value(s, (), dtype)
    buf = Value(k.buffer(shape, dtype), shape, dtype, owned=True)
    index, inner = k.nest(shape, pad, lines)
    at = [t if o is None else t.format(index[o]) for o, t in source]
    lines.append(f"{inner}{buf.at(index)} = {x.at(at)}")
    return buf


def _gather_source(k: Kernel, x: Value, e: Eqn, indices: Sequence[Value], pad: str,
                   lines: list[str]) -> Value | tuple[tuple[str, ...], Source]:
    """``x[index]`` for a gather whose index arrays are scalars: a view
    where the index is leading scalars then whole axes, else the result's
    shape and each element's source."""
    spec = e.params["spec"]
    static = e.inputs[0].aval.shape
    fixed: dict[int, str] = {}  # source axis -> index expression
    # the result's axes: (source axis or -1 for a new one, length, start, step)
    axes: list[tuple[int, str, int, int]] = []
    operands = iter(indices)
    axis = 0
    for entry in spec:
        if entry[0] == "none":
            axes.append((-1, "1", 0, 1))
            continue
        d = x.shape[axis]
        if entry[0] == "slice":
            start, stop, step = slice(*entry[1:]).indices(static[axis])
            n = len(range(start, stop, step))
            axes.append((axis, d if (start, step, n) == (0, 1, static[axis]) else str(n),
                         start, step))
        elif entry[0] == "int":
            fixed[axis] = str(entry[1] % static[axis])
        else:
            g = k.fresh("g")  # NumPy's rule: a negative index counts from the end
            lines += [f"{pad}{g} = {next(operands).at(())}",
                      f"{pad}if {g} < 0:", f"{pad}    {g} += {d}",
                      f"{pad}if {g} < 0 or {g} >= {d}:",
                      f"{pad}    raise IndexError('index out of bounds')"]
            fixed[axis] = g
        axis += 1
    # (scalar index arrays and static integers: NumPy drops their axes, so
    # the remaining axes keep their order whatever their positions)
    leading = list(fixed) == list(range(len(fixed)))
    if leading and all(a >= 0 and (s, t) == (0, 1) and n == x.shape[a]
                       for a, n, s, t in axes):
        return k.row(x, [fixed[a] for a in range(len(fixed))], pad, lines)
    shape = tuple(n for _, n, _, _ in axes)
    reads: dict[int, tuple[int | None, str]] = {a: (None, g) for a, g in fixed.items()}
    for o, (a, _, start, step) in enumerate(axes):
        if a >= 0:
            reads[a] = (o, f"{start} + {step} * {{}}")
    return shape, [reads[a] for a in range(len(static))]


def _reshaped(k: Kernel, x: Value, e: Eqn, pad: str, lines: list[str]) -> Value:
    """A shape change of ``x`` (C-contiguous) as a view, or its one
    element as a scalar."""
    out = e.outputs[0].aval
    if not out.ndim:
        s = k.fresh("v")
        lines.append(f"{pad}{s} = {x.at(('0',) * len(x.shape))}")
        return Value(s, (), x.dtype)
    name, p = e.primitive.name, e.params
    if name == "squeeze":
        drop = {d % len(x.shape) for d in p["dimensions"]}
        shape = tuple(n for d, n in enumerate(x.shape) if d not in drop)
    elif name == "expand_dims":
        rest = iter(x.shape)
        shape = tuple("1" if d in p["dimensions"] else next(rest) for d in range(out.ndim))
    else:
        shape = tuple(str(n) for n in out.shape)
    base = x.row or (f"{x.name}[{', '.join(x.lead)}]" if x.lead else x.name)
    v = k.fresh("r")
    lines.append(f"{pad}{v} = {base}.reshape(({''.join(d + ', ' for d in shape)}))")
    return Value(v, shape, x.dtype)


def _filled(k: Kernel, x: Value, out, e: Eqn, pad: str):
    """A scalar operand made an array of ``out``'s shape (all its elements
    the scalar's), or kept a scalar."""
    if e.inputs[0].aval.ndim:
        return None
    lines: list[str] = []
    shape = tuple(str(n) for n in out.shape)
    return lines, _copied(k, x, shape, [], out.dtype, pad, lines)
