"""Loop bodies lowered to statements of a Numba kernel, with no allocation
per step.

A native loop kernel (``loops.py``) holds a whole ``scan``, ``while_loop``
or ``recorded_loop``: the step loop and its body in machine code.  Here a
body's equations become statements on values the kernel holds (``Value``):
rank-0 values are Numba scalars; every array a step computes lives in a
buffer the kernel allocates once per call, before its loops (``Kernel.pre``),
and rewrites on every step:

* runs of elementwise equations of one shape become one loop nest that
  keeps the intermediates in scalars and stores only the values used after
  the run (the members are the NumPy ufuncs ``native_ufunc`` accepts, on
  operands of the result's shape or rank 0, converted to the loop's dtypes
  as in fused groups, ``convert_element_type`` where Numba converts as
  ``astype`` does, and outer products, whose elements are single products);
* a transcendental float function on an array is one call of NumPy's own
  loop over the buffer (``numpy_loops.py``): NumPy's bits, at its speed;
  on a scalar it is Numba's (the C library's) code, except in the exact
  lowering (``Kernel.exact``), where it is NumPy's loop on one element,
  as the NumPy tier computes a 0-d array, and a function with no such
  call leaves the loop to the NumPy tier;
* a NumPy scalar's ``**`` (``scalar_pow``) is a call of C's ``pow`` or
  ``powf`` (``c_power.py``), the function the NumPy tier computes it with;
* ``dot_general`` is NumPy's ``matmul`` loop or explicit loops (``dot.py``),
  ``transpose`` a copy;
* reductions whose result can be NumPy's bit for bit (``loop_reductions.py``);
* indexing by scalar integers and static slices, broadcasts and shape
  changes: views where a ``Value`` can express them, else copies
  (``movement.py``);
* a ``scan`` or ``while_loop`` in a body is a nested loop with buffers of
  its own, so a loop nest compiles as one kernel.

A carry is a buffer of the loop's; at the end of a step, a new carry that
the step computed into a buffer of its own takes that buffer's place (the
two variables are swapped: nothing is copied), and any other new carry (an
operand, another carry's old value) is copied into a spare buffer first.
Buffers are never shared between two live values, and the kernel never
writes into its operands.

Shapes are mostly run-time values: each dimension is an expression in the
kernel's arguments (``a0.shape[1]``) or a size argument (a scan's length).
Data movement (``movement.py``), broadcast operands and products NumPy
computes after reshaping write their lengths into the source, which is then
per shape; otherwise it depends on dtypes, ranks and literals alone and
compiles once per rank.  Anything else in a body (float reductions over some axes, indexing
by integer arrays, scatters, complex numbers) has no lowering here: the
caller leaves the loop to the NumPy tier.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from functrans.backends.native.c_power import CPower
from functrans.backends.native.dot import _FLOATS, dot_lines
from functrans.backends.native.elementwise import _operand_type, native_ufunc
from functrans.backends.native.kernel import Kernel, Value, type_name
from functrans.backends.native.loop_reductions import REDUCTIONS, reduction_lines
from functrans.backends.native.movement import MOVEMENT, movement_lines
from functrans.backends.native.numpy_loops import may_differ, numpy_loop
from functrans.core import Eqn, Jaxpr, Literal, lookup_primitive


def _cast(expr: str, dtype: np.dtype, to: np.dtype) -> str:
    """Scalar ``expr`` converted to the loop's dtype ``to`` as NumPy converts
    it before the ufunc's loop, so Numba's own promotion never applies."""
    return expr if dtype == to else f"{type_name(to)}({expr})"


def _elementwise(e: Eqn, numba: bool = True):
    """``(ufunc, loop dtypes)`` of an elementwise body equation with a native
    form, on operands that broadcast to its result's shape; else None
    (``numba``: as in ``native_ufunc``)."""
    out = e.outputs[0].aval
    found: tuple[Any, tuple[np.dtype, ...]] | None
    if e.primitive.name == "select":
        found = (SELECT, (np.dtype(bool), out.dtype, out.dtype, out.dtype)) \
            if out.dtype.kind in "biuf" else None
    elif e.primitive.name == "convert_element_type":
        found = _conversion(e)
    else:
        found = native_ufunc(e, numba)
    if found is None:
        found = _numpy_only(e)
    if found is None:
        return None
    if found[1][-1] != out.dtype or any(type(a) is not Literal and not _broadcasts(
            a.aval.shape, out.shape) for a in e.inputs):
        return None
    return found


def _broadcasts(shape: tuple[int, ...], out: tuple[int, ...]) -> bool:
    """Whether an operand of ``shape`` broadcasts to the result's ``out`` as
    NumPy broadcasts it: aligned on the last axis, each of its axes the
    result's length or 1."""
    return len(shape) <= len(out) and all(
        d in (n, 1) for d, n in zip(reversed(shape), reversed(out)))


def _broadcast_index(shape: tuple[int, ...], out: tuple[int, ...], index: Sequence[str]
                     ) -> list[str]:
    """The index into an operand of static ``shape`` of the result's element
    at ``index`` (of static shape ``out``): an axis of length 1 where the
    result's is longer is read at 0 (NumPy's stride 0)."""
    lead = len(out) - len(shape)
    return [j if d == out[lead + a] else "0" for a, (d, j) in enumerate(zip(shape, index[lead:]))]


def _run_shape(ops: Sequence[Value], avals, out: tuple[int, ...]) -> tuple[str, ...]:
    """The result's dimensions as the kernel's expressions: each that of an
    operand whose axis has the result's length, else 1."""
    dims = []
    for axis, n in enumerate(out):
        found = "1"
        for v, aval in zip(ops, avals):
            a = axis - (len(out) - aval.ndim)
            if a >= 0 and aval.shape[a] == n:
                found = v.shape[a]
                break
        dims.append(found)
    return tuple(dims)


#: ``select(pred, on_true, on_false)`` in ``_elementwise``'s results: both
#: branches converted to the result's dtype (as ``np.where`` converts them),
#: then a conditional expression.
SELECT = "select"


def _expression(k: Kernel, fn, ops: Sequence[str]) -> str:
    """The scalar expression of a body member: a ufunc's call, a scalar
    type's (a conversion), a selection, or C's ``pow`` (``CPower``, whose
    import joins the kernel's globals)."""
    if fn is SELECT:
        return f"({ops[1]} if {ops[0]} else {ops[2]})"
    if isinstance(fn, CPower):
        if fn.imports() not in k.globals:
            k.globals.append(fn.imports())
        return fn.expression(list(ops))
    return f"np.{fn.__name__}({', '.join(ops)})"


def _numpy_only(e: Eqn):
    """``(ufunc, loop dtypes)`` of a float ufunc equation whose Numba scalar
    code differs from NumPy's (float ``maximum``, ``minimum``, ``sign``,
    ``floor_divide``, ``remainder``: ``_DIFFERENT``) but whose NumPy loop
    the kernel can call on arrays (``numpy_loops.py``); else None."""
    prim = e.primitive
    if prim.multiple_results or len(e.outputs) != 1:
        return None
    kernel: Any = prim.numpy_kernel  # what the NumPy backend's generated code calls
    fn = kernel([a.aval for a in e.inputs], **e.params) if kernel is not None else None
    if fn is None and not e.params:
        fn = prim.numpy_fn
    if not isinstance(fn, np.ufunc) or fn.nout != 1 or fn.nin != len(e.inputs):
        return None
    try:
        dtypes = tuple(fn.resolve_dtypes((*map(_operand_type, e.inputs), None)))
    except (TypeError, ValueError, OverflowError):
        return None
    if numpy_loop(fn, dtypes) is None or any(  # (arrays are not converted on this path)
            a.aval.ndim and a.aval.dtype != d for a, d in zip(e.inputs, dtypes)):
        return None
    return fn, dtypes


def _conversion(e: Eqn):
    """``convert_element_type`` as the scalar type's call (``np.float64(x)``)
    where Numba converts as NumPy's ``astype`` does: from bools and integers
    to integers (wrapping) and floats (rounding to nearest), and between
    floats; not from floats to integers or to bool (NaN, the infinities and
    out-of-range values have no defined result there)."""
    (x,), out = e.inputs, e.outputs[0].aval.dtype
    src = x.aval.dtype
    if src.kind not in "biuf" or out.kind not in "iuf" or src.kind == "f" and out.kind != "f":
        return None
    if out.kind == "f" and out not in _FLOATS or src.kind == "f" and src not in _FLOATS:
        return None
    return out.type, (src, out)


#: Lowerings of loops inside bodies, by primitive name (filled by loops.py):
#: ``lower(kernel, eqn, operands, pad, needed) -> (lines, outputs) | None``.
NESTED: dict[str, Callable] = {}


def lower_jaxpr(k: Kernel, jaxpr: Jaxpr, ins: Sequence[Value], pad: str
                ) -> tuple[list[str], list[Value]] | None:
    """Statements (indented by ``pad``) computing ``jaxpr`` on ``ins``, and
    the values of its outputs; None when an equation has no lowering."""
    names: dict[int, Value] = {id(v): x for v, x in zip(jaxpr.invars, ins)}
    users: dict[int, set[int]] = {}
    for n, e in enumerate(jaxpr.eqns):
        for a in e.inputs:
            users.setdefault(id(a), set()).add(n)
    returned = {id(a) for a in jaxpr.outvars}
    dot_p = lookup_primitive("dot_general")
    nested = {lookup_primitive(name): fn for name, fn in NESTED.items()}
    lines: list[str] = []
    group: list[tuple[int, Eqn, tuple | None]] = []  # (index, equation, ufunc and loop dtypes)
    dims: list[tuple[str, ...]] = []  # the run's shape

    def value(a) -> Value:
        if type(a) is Literal:
            return Value(k.constant(a.val, a.aval.dtype), (), a.aval.dtype)
        return names[id(a)]

    def flush() -> None:
        """The pending run of elementwise equations as one loop nest."""
        if not group:
            return
        members = {n for n, _, _ in group}
        shape = dims.pop()
        index, inner = k.nest(shape, pad, lines)
        scalars: dict[int, str] = {}
        for _, e, found in group:
            ops = []
            if found is None:  # an outer product: each operand on its own axes
                ufunc, loop = np.multiply, (e.outputs[0].aval.dtype,) * 2
                cut = e.inputs[0].aval.ndim
                axes = [index[:cut], index[cut:]]
            else:
                ufunc, loop = found
                axes = [_broadcast_index(a.aval.shape, e.outputs[0].aval.shape, index)
                        for a in e.inputs]
            for a, d, at in zip(e.inputs, loop, axes):
                if type(a) is Literal:
                    ops.append(k.constant(a.val, d))
                    continue
                text = scalars.get(id(a))
                if text is None:
                    v = names[id(a)]
                    text = v.at(at if v.shape else ())
                ops.append(_cast(text, a.aval.dtype, d))
            out = e.outputs[0]
            s = scalars[id(out)] = k.fresh("v")
            lines.append(f"{inner}{s} = {_expression(k, ufunc, ops)}")
            if id(out) in returned or users.get(id(out), set()) - members:
                buf = Value(k.buffer(shape, out.aval.dtype), shape, out.aval.dtype, owned=True)
                lines.append(f"{inner}{buf.at(index)} = {s}")
                names[id(out)] = buf
        group.clear()

    for n, e in enumerate(jaxpr.eqns):
        k.refused = e
        if any(type(a) is Literal and a.aval.ndim for a in e.inputs):
            return None
        out = e.outputs[0].aval
        if e.primitive is dot_p and _outer(e) and out.ndim:
            # an outer product joins the run: its elements are single products
            if group and group[0][1].outputs[0].aval.shape != out.shape:
                flush()
            if not group:
                dims.append(value(e.inputs[0]).shape + value(e.inputs[1]).shape)
            group.append((n, e, None))
            continue
        if e.primitive is dot_p or e.primitive in nested:
            flush()
            if any(type(a) is Literal for a in e.inputs) and e.primitive is dot_p:
                return None
            ops = [value(a) for a in e.inputs]
            if e.primitive is dot_p:
                found = _dot(k, e, ops, pad)
            else:
                needed = [id(v) in returned or id(v) in users for v in e.outputs]
                found = nested[e.primitive](k, e, ops, pad, needed)
            if found is None:
                return None
            more, outs = found
            lines += more
            names.update((id(v), x) for v, x in zip(e.outputs, outs) if x is not None)
            continue
        if e.primitive.name == "transpose" and type(e.inputs[0]) is not Literal \
                and e.inputs[0].aval.ndim:
            flush()
            x, perm = value(e.inputs[0]), e.params["permutation"]
            shape = tuple(x.shape[a] for a in perm)
            buf = Value(k.buffer(shape, x.dtype), shape, x.dtype, owned=True)
            index, inner = k.nest(shape, pad, lines)
            source = [""] * len(perm)
            for j, a in zip(index, perm):
                source[a] = j
            lines.append(f"{inner}{buf.at(index)} = {x.at(source)}")
            names[id(e.outputs[0])] = buf
            continue
        if e.primitive.name in MOVEMENT:
            flush()  # (its operand is stored: this equation reads it)
            found_m = movement_lines(k, e, [value(a) for a in e.inputs], pad)
            if found_m is None:
                return None
            lines += found_m[0]
            names[id(e.outputs[0])] = found_m[1]
            continue
        if e.primitive.name in REDUCTIONS:
            flush()
            (a,) = e.inputs
            found_r = None if type(a) is Literal or not a.aval.ndim else reduction_lines(
                k, e, value(a), pad)
            if found_r is None:
                return None
            lines += found_r[0]
            names[id(e.outputs[0])] = found_r[1]
            continue
        loop = _elementwise(e, k.numba)
        if loop is None:
            return None
        address = numpy_loop(*loop)
        if not out.ndim and not k.exact and native_ufunc(e, k.numba) is not None:
            address = None  # close numerics: Numba's scalar code, a call cheaper
        if address is not None and any(type(a) is not Literal and a.aval.ndim
                                       and a.aval.shape != out.shape for a in e.inputs):
            return None  # NumPy's loop reads the broadcast operand strided: left to NumPy
        if address is not None and all(type(a) is Literal or not a.aval.ndim
                                       or a.aval.dtype == d for a, d in zip(e.inputs, loop[1])):
            flush()  # (its operands are stored: this equation reads them)
            operands: list[Value | str] = [
                _cast(value(a).at(()), a.aval.dtype, d) if not a.aval.ndim else value(a)
                for a, d in zip(e.inputs, loop[1])]
            # A scalar is NumPy's loop on one element, as the NumPy tier
            # computes a 0-d array: its bits even where the loop's vector
            # code would round otherwise.
            shape = next((value(a).shape for a in e.inputs if a.aval.ndim), ("1",))
            buf = Value(k.buffer(shape, out.dtype), shape, out.dtype, owned=True)
            k.numpy_call(address, operands, loop[1], buf, pad, lines)
            if out.ndim:
                names[id(e.outputs[0])] = buf
            else:
                s = k.fresh("v")
                lines.append(f"{pad}{s} = {buf.name}[0]")
                names[id(e.outputs[0])] = Value(s, (), out.dtype)
            continue
        if k.exact and may_differ(*loop):
            return None  # Numba's code could differ from NumPy's: the loop stays NumPy calls
        if out.ndim == 0:  # a scalar statement, where it stands
            texts = [_cast(value(a).at(()), a.aval.dtype, d) if type(a) is not Literal
                     else k.constant(a.val, d) for a, d in zip(e.inputs, loop[1])]
            s = k.fresh("v")
            lines.append(f"{pad}{s} = {_expression(k, loop[0], texts)}")
            names[id(e.outputs[0])] = Value(s, (), out.dtype)
            continue
        if group and group[0][1].outputs[0].aval.shape != out.shape:
            flush()
        if not group:
            arrays = [a for a in e.inputs if type(a) is not Literal and a.aval.ndim]
            dims.append(_run_shape([value(a) for a in arrays], [a.aval for a in arrays],
                                   out.shape))
        group.append((n, e, loop))
    flush()
    return lines, [value(a) for a in jaxpr.outvars]


def _outer(e: Eqn) -> bool:
    """Whether ``dot_general`` equation ``e`` is an outer product (no batch
    or contracted axes) of non-literal operands of its result's dtype, which
    Numba multiplies."""
    (lc, _), (lb, _) = e.params["dimension_numbers"]
    dtype = e.outputs[0].aval.dtype
    return (not lc and not lb and (dtype.kind in "iu" or dtype in _FLOATS)
            and all(type(a) is not Literal and a.aval.dtype == dtype for a in e.inputs))


def _dot(k: Kernel, e: Eqn, ops: list[Value], pad: str):
    found = dot_lines(k, e, ops[0], ops[1], pad)
    return None if found is None else (found[0], [found[1]])


def carry_in(k: Kernel, init: Value, pad: str, lines: list[str]) -> Value:
    """A loop's carry, starting from ``init``: a scalar, or a buffer of the
    loop's that ``init`` is copied into where the loop starts."""
    if not init.shape:
        name = k.fresh("c")
        lines.append(f"{pad}{name} = {init.at(())}")
        return Value(name, (), init.dtype)
    carry = Value(k.buffer(init.shape, init.dtype), init.shape, init.dtype)
    k.copy(carry, init, pad, lines)
    return carry


def carry_out(k: Kernel, carries: Sequence[Value], new: Sequence[Value], pad: str,
              lines: list[str]) -> None:
    """The end of a step: each carry takes its new value.  A buffer the step
    computed is swapped in (once); other arrays are copied into a spare
    buffer first, all before any swap, so no new value is read after its
    buffer changed hands."""
    left, right, swaps = [], [], []
    taken: set[str] = set()
    for c, v in zip(carries, new):
        if not c.shape:
            left.append(c.name)
            right.append(v.at(()))
        elif v.name == c.name and not v.lead:
            continue  # the carry passes through the step unchanged
        elif v.owned and not v.lead and v.name not in taken:
            taken.add(v.name)
            swaps.append((c.name, v.name))
        else:
            spare = Value(k.buffer(c.shape, c.dtype), c.shape, c.dtype)
            k.copy(spare, v, pad, lines)
            swaps.append((c.name, spare.name))
    if left:  # one assignment: a new carry may be another's old value
        lines.append(f"{pad}{', '.join(left)}, = {', '.join(right)},")
    lines += [f"{pad}{c}, {v} = {v}, {c}" for c, v in swaps]
