"""``dot_general`` inside a native loop body: NumPy's own ``matmul`` loop
where NumPy computes the product with one ``matmul``, explicit loops
elsewhere.

A float product that the NumPy tier computes with ``np.dot`` of vectors and
matrices (transposed views included) or ``np.matmul`` of stacks
(``linalg.matmul_form``) is one call of ``np.matmul``'s loop for its dtype
(``numpy_loops.matmul_loop``), given the dimensions and strides NumPy's own
call gives it, writing into a buffer the kernel allocated once per call:
the loop picks BLAS or its own sums from those alone, so the result is the
NumPy tier's bit for bit (``linalg.matmul_bits`` says where ``np.dot``
agrees with ``matmul``).  Measured on a matrix times a vector, the call
costs 45 ns at 2x2 and 70 ns at 16x16, a loop nest 3 ns and 80 ns, and
320 ns against 2,000 ns at 64x64: the loop nest wins below 16x16 by up to
45 ns a product, which is the price of the NumPy tier's bits; the call is
made whatever ``jit_tier_numerics`` says, so a program has one kernel and
``compiler="native"`` gives those bits too.

The other products (over several contracted axes, integers) are a loop
nest.  Accumulation order there: each output element is one sum, started
at +0.0 (0 for integers) and added to term by term, sequentially, over the
contracted index in row-major order of the contracting axes as the
dimension numbers list them; each term is one multiplication, with no fused
multiply-add (no fastmath).  BLAS sums in blocks and with fused
multiply-adds, so float results differ from the NumPy tier's in the last
bits (the tests allow a relative 1e-13 for float64); integer sums wrap and
are exact in any order, so integer products equal NumPy's bit for bit, and
so do outer products (no contraction: one multiplication per element).  NaN
and the infinities propagate as in NumPy's ``matmul``: a NaN term, or
``inf * 0``, or infinities of both signs give NaN.  A sum whose every term
is -0.0 gives +0.0, as ``matmul`` does (``np.dot`` of two 1-element vectors
keeps -0.0).

Two loop orders, chosen by layout, both with that order per element: when
the output's last axis is the right operand's last axis (a vector times a
matrix, a matrix product), the contraction runs outside and the output's
last axis inside, adding into the output row (contiguous reads, a loop LLVM
vectorises); otherwise (a matrix times a vector) each element is a scalar
sum with the contraction innermost.
"""

from __future__ import annotations

import numpy as np

from functrans.backends.native.kernel import Kernel, Value, address_of
from functrans.backends.native.numpy_loops import matmul_loop
from functrans.core import Eqn
from functrans.primitives.linalg import c_strides, matmul_form, reshaped_form

#: Float dtypes with Numba arithmetic (float16 has none).
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _free(ndim: int, *used) -> list[int]:
    taken = {a for axes in used for a in axes}
    return [a for a in range(ndim) if a not in taken]


def dot_lines(k: Kernel, e: Eqn, lhs: Value, rhs: Value,
              pad: str) -> tuple[list[str], Value] | None:
    """Statements computing ``dot_general`` equation ``e`` of ``lhs`` and
    ``rhs`` into a new buffer (``matmul_lines``, else loops), and the
    buffer's value; None for bool or mixed-dtype operands (those stay the
    NumPy tier's), and in the exact lowering for a float product with
    contracted axes without the matmul call (its loops sum in another order
    than NumPy's; outer products are single multiplications either way)."""
    found = matmul_lines(k, e, lhs, rhs, pad) or reshaped_lines(k, e, lhs, rhs, pad)
    if found is not None:
        return found
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    dtype = e.outputs[0].aval.dtype
    if k.exact and dtype in _FLOATS and lc:
        return None
    if dtype.kind not in "iu" and dtype not in _FLOATS or lhs.dtype != dtype or rhs.dtype != dtype:
        return None
    lf, rf = _free(len(lhs.shape), lc, lb), _free(len(rhs.shape), rc, rb)
    shape = (tuple(lhs.shape[a] for a in lb) + tuple(lhs.shape[a] for a in lf)
             + tuple(rhs.shape[a] for a in rf))
    out = Value(k.buffer(shape, dtype) if shape else "", shape, dtype, owned=True)
    li: list[str] = [""] * len(lhs.shape)
    ri: list[str] = [""] * len(rhs.shape)
    oi: list[str] = []
    loops: list[tuple[str, str]] = []  # (index, extent) outermost first

    def axis(extent: str) -> str:
        name = k.fresh("j")
        loops.append((name, extent))
        return name

    for a, b in zip(lb, rb):
        li[a] = ri[b] = axis(lhs.shape[a])
        oi.append(li[a])
    for a in lf:
        li[a] = axis(lhs.shape[a])
        oi.append(li[a])
    outer = len(loops)
    for a in rf:
        ri[a] = axis(rhs.shape[a])
        oi.append(ri[a])
    zero = k.constant(0, dtype)
    lines: list[str] = []

    def nest(spans, p: str) -> str:
        for name, extent in spans:
            lines.append(f"{p}for {name} in range({extent}):")
            p += "    "
        return p

    contracted = [(k.fresh("j"), lhs.shape[a]) for a in lc]
    for (name, _), a, b in zip(contracted, lc, rc):
        li[a] = ri[b] = name
    term = f"np.multiply({lhs.at(li)}, {rhs.at(ri)})"
    acc = k.fresh("s")
    if not lc:  # outer products: one multiplication per element, no sum
        p = nest(loops, pad)
        lines.append(f"{p}{out.at(oi) if loops else acc} = {term}")
    elif rf and rf[-1] == len(rhs.shape) - 1:
        # contraction outside, the output's row (contiguous in rhs) inside
        p = nest(loops[:outer], pad)
        q = nest(loops[outer:], p)
        lines.append(f"{q}{out.at(oi)} = {zero}")
        q = nest(contracted, p)
        q = nest(loops[outer:], q)
        lines.append(f"{q}{out.at(oi)} = np.add({out.at(oi)}, {term})")
    else:
        p = nest(loops, pad)
        lines.append(f"{p}{acc} = {zero}")
        q = nest(contracted, p)
        lines.append(f"{q}{acc} = np.add({acc}, {term})")
        if loops:
            lines.append(f"{p}{out.at(oi)} = {acc}")
    if not loops:  # a rank-0 result: the scalar itself, no buffer
        return lines, Value(acc, (), dtype)
    return lines, out


def matmul_lines(k: Kernel, e: Eqn, lhs: Value, rhs: Value,
                 pad: str) -> tuple[list[str], Value] | None:
    """Statements computing float ``dot_general`` equation ``e`` as the
    NumPy tier computes it: one call of ``np.matmul``'s own loop
    (``numpy_loops.matmul_loop``) on the operands as NumPy's product reads
    them (``matmul_form``: transposed views, a stack of products), writing a
    new buffer; None where the product is not one ``matmul`` (the general
    path's reshapes) or the loop cannot be had.

    Dimensions and strides are the same every step: they are stored once
    per call, before the loops; each step stores the operands' addresses
    (carries change buffers, stacked operands rows) and calls the loop."""
    dtype = e.outputs[0].aval.dtype
    avals = [a.aval for a in e.inputs]
    form = matmul_form(avals, e.params["dimension_numbers"])
    address = matmul_loop(dtype) if dtype in _FLOATS else None
    if form is None or address is None or lhs.dtype != dtype or rhs.dtype != dtype:
        return None
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    (t_lhs, t_rhs), nb = form, len(lb)
    lf, rf = _free(len(lhs.shape), lc, lb), _free(len(rhs.shape), rc, rb)
    shape = (tuple(lhs.shape[a] for a in lb) + tuple(lhs.shape[a] for a in lf)
             + tuple(rhs.shape[a] for a in rf))
    out = Value(k.buffer(shape or ("1",), dtype), shape or ("1",), dtype, owned=True)

    def stride(v: Value, axis: int) -> str:
        if k.before_loops(v.name):  # an operand, a buffer (its own strides: NumPy's)
            return f"{v.name}.strides[{len(v.lead) + axis}]"
        # a view a step makes (a reshape of a buffer): in C order, so its
        # strides are its shape's (stored before the loops, where the view
        # is not yet made)
        return " * ".join([str(v.dtype.itemsize), *v.shape[axis + 1:]])

    def core(v: Value, transposed: bool, missing: int) -> tuple[list[str], list[str]]:
        """A core operand's two dimensions and strides (a vector gets a
        dimension of 1, stride 0, in place of its missing one)."""
        axes = list(range(nb, len(v.shape)))
        if transposed:
            axes.reverse()
        dims, strides = [v.shape[a] for a in axes], [stride(v, a) for a in axes]
        if len(axes) == 1:
            dims.insert(missing, "1")
            strides.insert(missing, "0")
        return dims, strides

    (m, n), lhs_steps = core(lhs, t_lhs, 0)
    (_, p), rhs_steps = core(rhs, t_rhs, 1)
    free = iter(range(nb, len(shape)))
    out_steps = [stride(out, next(free)) if lf else "0", stride(out, next(free)) if rf else "0"]
    # A stack of products (C-contiguous) is one run over its batch axes flattened.
    count = " * ".join(lhs.shape[a] for a in lb) or "1"
    outer = [stride(v, nb - 1) for v in (lhs, rhs, out)] if nb else ["0"] * 3
    lines: list[str] = []
    return _call(k, address, (lhs, rhs, out), [count, m, n, p],
                 [*outer, *lhs_steps, *rhs_steps, *out_steps], not shape, pad, lines)


def _call(k: Kernel, address: int, operands: tuple[Value, Value, Value], dims: list[str],
          steps: list[str], scalar: bool, pad: str, lines: list[str]
          ) -> tuple[list[str], Value]:
    """``lines`` and the call of ``np.matmul``'s loop at ``address`` on
    ``operands`` (the two factors and the result's buffer) with ``dims``
    (``N, m, n, p``) and ``steps`` (bytes), both stored once per call; the
    result's value (``scalar``: a rank-0 result, read out of its
    one-element buffer)."""
    names = k.fresh("md"), k.fresh("ms")
    k.pre += [f"{names[0]} = np.array(({', '.join(dims)}), np.intp)",
              f"{names[1]} = np.array(({', '.join(steps)}), np.intp)"]
    if "mp = np.empty(3, np.uintp)" not in k.pre:
        k.pre.append("mp = np.empty(3, np.uintp)")
    fn = k.loop_argument(address)
    lines += [f"{pad}mp[{j}] = {address_of(v)}" for j, v in enumerate(operands)]
    lines.append(f"{pad}call_loop({fn}, mp.ctypes.data, {names[0]}.ctypes.data, "
                 f"{names[1]}.ctypes.data)")
    out = operands[2]
    if scalar:
        s = k.fresh("s")
        lines.append(f"{pad}{s} = {out.name}[0]")
        return lines, Value(s, (), out.dtype)
    return lines, out


def reshaped_lines(k: Kernel, e: Eqn, lhs: Value, rhs: Value,
                   pad: str) -> tuple[list[str], Value] | None:
    """Statements computing float ``dot_general`` equation ``e`` as the
    NumPy tier's general path computes it (``linalg.reshaped_form``): each
    operand transposed and reshaped to (batch, free, contracted) axes, a
    view of the operand with the strides NumPy's reshape gives it, or where
    that reshape copies, a C-ordered copy into a buffer of the kernel's;
    then one call of ``np.matmul``'s loop over the stack, writing the
    result's buffer (C-ordered, as ``np.matmul``'s new result).  The
    dimensions and strides are NumPy's for the equation's static shapes,
    written into the source.  None where the product is not of that form
    or the loop cannot be had."""
    dtype = e.outputs[0].aval.dtype
    form = reshaped_form([a.aval for a in e.inputs], e.params["dimension_numbers"])
    address = matmul_loop(dtype) if dtype in _FLOATS else None
    if form is None or address is None or lhs.dtype != dtype or rhs.dtype != dtype:
        return None
    lines: list[str] = []
    factors, steps = [], []
    for v, op in zip((lhs, rhs), form):
        strides = op.strides
        if strides is None:  # NumPy's reshape copies: so does the kernel, in C order
            shape = tuple(v.shape[a] for a in op.permutation)
            copy = Value(k.buffer(shape, dtype), shape, dtype)
            index, inner = k.nest(shape, pad, lines)
            source = [""] * len(shape)
            for j, a in zip(index, op.permutation):
                source[a] = j
            lines.append(f"{inner}{copy.at(index)} = {v.at(source)}")
            v, strides = copy, c_strides(op.shape, dtype.itemsize)
        factors.append(v)
        steps.append(strides)
    (lhs_steps, rhs_steps), (nb, mm, kk), nn = steps, form[0].shape, form[1].shape[2]
    shape = tuple(str(n) for n in e.outputs[0].aval.shape)
    out = Value(k.buffer(shape or ("1",), dtype), shape or ("1",), dtype, owned=True)
    out_steps = c_strides((nb, mm, nn), dtype.itemsize)
    order = [lhs_steps[0], rhs_steps[0], out_steps[0], *lhs_steps[1:], *rhs_steps[1:],
             *out_steps[1:]]
    return _call(k, address, (factors[0], factors[1], out), [str(n) for n in (nb, mm, kk, nn)],
                 [str(n) for n in order], not shape, pad, lines)
