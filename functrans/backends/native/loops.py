"""Scan and while loops as Numba kernels: the loop and its body in machine code.

A ``scan`` or ``while_loop`` whose body (and predicate) ``body.py`` can
lower runs as one kernel: its carries and every array a step computes live
in buffers allocated once per call, the stacked outputs are written row by
row, and loops nested in the body are loops in the kernel.  A stacked
output nothing reads (a residual the gradient does not need) is neither
allocated nor written.  Anything else leaves the loop to the NumPy tier.
Each kernel is called between a clear and a read of the thread's
floating-point flags (``fp_status.watched``): where the caller's
``np.errstate`` would report one (log(0), 1/0, an overflow in the body, or
C's ``pow`` in exact numerics), the NumPy tier reruns the loop and warns or
raises as it does.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from functrans.backends.native import fp_status
from functrans.backends.native.body import NESTED, carry_in, carry_out, lower_jaxpr
from functrans.backends.native.c_power import raises_flags
from functrans.backends.native.cache import _load
from functrans.backends.native.elementwise import _KINDS, _scalar, native_ufunc
from functrans.backends.native.kernel import Kernel, Value, type_name
from functrans.backends.native.numpy_loops import matmul_loop
from functrans.core import ClosedJaxpr, Eqn, Jaxpr
from functrans.primitives.linalg import matmul_form, reshaped_form

Lowered = tuple[list[str], list]  # statements, the outputs' values (None: not computed)


def _plain(closed: ClosedJaxpr) -> bool:
    """Whether a loop's jaxpr has no constants of its own and only real dtypes."""
    j = closed.jaxpr
    return (not closed.consts and not j.constvars
            and all(v.aval.dtype.kind in _KINDS for v in (*j.invars, *j.outvars)))


def scan_lines(k: Kernel, e: Eqn, ins: Sequence[Value], pad: str, needed: Sequence[bool],
               top: bool = False) -> Lowered | None:
    """Statements running scan equation ``e`` on ``ins``: the carries'
    copies, the step loop, the stacked outputs ``needed`` written per step."""
    p = e.params
    if not _plain(p["jaxpr"]):
        return None
    nc, nk = p["num_consts"], p["num_carry"]
    lines: list[str] = []
    carries = [carry_in(k, v, pad, lines) for v in ins[nc:nc + nk]]
    length = k.size(p["length"], "length" if top else None)
    step, i = ("step", "i") if top else (k.fresh("step"), k.fresh("i"))
    lines.append(f"{pad}for {step} in range({length}):")
    q = pad + "    "
    lines.append(f"{q}{i} = {length} - 1 - {step}" if p["reverse"] else f"{q}{i} = {step}")
    xs = [k.row(x, (i,), q, lines) for x in ins[nc + nk:]]
    body = lower_jaxpr(k, p["jaxpr"].jaxpr, [*(v.borrowed() for v in ins[:nc]),
                                             *(c.borrowed() for c in carries), *xs], q)
    if body is None:
        return None
    more, outs = body
    lines += more
    stacks: list[Value | None] = []
    rows: list[tuple[Value, Value]] = []
    for y, wanted in zip(outs[nk:], needed[nk:]):
        if not wanted:
            stacks.append(None)
            continue
        shape = (length, *y.shape)
        stack = Value(k.buffer(shape, y.dtype), shape, y.dtype, owned=True)
        rows.append((k.row(stack, (i,), q, lines), y))
        stacks.append(stack)
    k.copies(rows, q, lines)
    carry_out(k, carries, outs[:nk], q, lines)
    return lines, [*(Value(c.name, c.shape, c.dtype, owned=True) for c in carries), *stacks]


def while_lines(k: Kernel, e: Eqn, ins: Sequence[Value], pad: str, needed: Sequence[bool],
                top: bool = False) -> Lowered | None:
    """Statements running while equation ``e`` on ``ins``: the predicate and
    the body inlined in one loop."""
    p = e.params
    cond, body = p["cond_jaxpr"], p["body_jaxpr"]
    if not (_plain(cond) and _plain(body)):
        return None
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    lines: list[str] = []
    carries = [carry_in(k, v, pad, lines) for v in ins[cn + bn:]]
    inner = [c.borrowed() for c in carries]
    lines.append(f"{pad}while True:")
    q = pad + "    "
    test = lower_jaxpr(k, cond.jaxpr, [*(v.borrowed() for v in ins[:cn]), *inner], q)
    if test is None:
        return None
    lines += test[0]
    lines += [f"{q}if not {test[1][0].at(())}:", f"{q}    break"]
    step = lower_jaxpr(k, body.jaxpr, [*(v.borrowed() for v in ins[cn:cn + bn]), *inner], q)
    if step is None:
        return None
    lines += step[0]
    carry_out(k, carries, step[1], q, lines)
    return lines, [Value(c.name, c.shape, c.dtype, owned=True) for c in carries]


#: A record field no later sweep reads (so none is kept).
_UNREAD = Value("None", (), np.dtype(bool))


def recorded_lines(k: Kernel, e: Eqn, ins: Sequence[Value], pad: str, needed: Sequence[bool],
                   top: bool = False) -> Lowered | None:
    """Statements running ``recorded_loop`` equation ``e`` (reverse mode
    through a while loop, ``primitives/recorded_loop.py``) on ``ins``: the
    loop, recording the fields a later sweep reads into stacks that double
    when full, then each sweep as a loop over the recorded steps, forwards
    or backwards, adding its accumulated outputs into zeros in step order
    (as the NumPy tier's ``+=``).  Only at a kernel's top: the stacks are
    allocated as the loop runs."""
    from functrans.primitives.recorded_loop import _reads_of, _sweeps_of

    p = e.params
    if not top or p["nacc"][0] or not _plain(p["cond_jaxpr"]) or not all(
            _plain(b) for b in p["bodies"]):
        return None
    cc, sweeps = _sweeps_of(list(ins), p)
    reads = _reads_of(sweeps)
    keep = [[any(reads[s][r][f] for s in range(r + 1, len(sweeps)))
             for f in range(len(sw.record_avals))] for r, sw in enumerate(sweeps)]
    lines: list[str] = []
    loop = sweeps[0]
    carries = [carry_in(k, v, pad, lines) for v in loop.init]
    count, cap = k.fresh("n"), k.fresh("cap")
    lines += [f"{pad}{count} = 0", f"{pad}{cap} = 16"]
    lines.append(f"{pad}while True:")
    q = pad + "    "
    test = lower_jaxpr(k, p["cond_jaxpr"].jaxpr,
                       [*(v.borrowed() for v in cc), *(c.borrowed() for c in carries)], q)
    step = test and lower_jaxpr(k, loop.body.jaxpr, [*(v.borrowed() for v in loop.consts),
                                                     *(c.borrowed() for c in carries)], q)
    if test is None or not step:
        return None
    lines += [*test[0], f"{q}if not {test[1][0].at(())}:", f"{q}    break", *step[0]]
    nk = len(loop.init)
    fields = [*carries, *step[1][nk:]]  # the carry entering the step, then the extras
    stacks: list[list[Value | None]] = [[None] * len(fields)]
    grow = [f"{q}if {count} == {cap}:", f"{q}    {cap} = {cap} * 2"]
    write: list[str] = []
    for f, (v, kept) in enumerate(zip(fields, keep[0])):
        if not kept:
            continue
        name = k.buffer(("16", *v.shape), v.dtype)
        more = k.fresh("g")
        grow += [f"{q}    {more} = np.empty(({cap}, {''.join(d + ', ' for d in v.shape)}), "
                 f"{type_name(v.dtype)})",
                 f"{q}    {more}[:{count}] = {name}[:{count}]", f"{q}    {name} = {more}"]
        k.copy(k.row(Value(name, (cap, *v.shape), v.dtype), (count,), q, write), v, q, write)
        stacks[0][f] = Value(name, v.shape, v.dtype)
    if write:
        lines += grow + write
    carry_out(k, carries, step[1][:nk], q, lines)
    lines.append(f"{q}{count} += 1")
    outs: list = [Value(c.name, c.shape, c.dtype, owned=True) for c in carries]
    for s, sw in enumerate(sweeps[1:], 1):
        carries = [carry_in(k, v, pad, lines) for v in sw.init]
        st, i = k.fresh("step"), k.fresh("i")
        rows: list[str] = []
        records = [_UNREAD if v is None else k.row(Value(v.name, (count, *v.shape), v.dtype),
                                                   (i,), q, rows)
                   for r in range(s) for v in stacks[r]]
        found = lower_jaxpr(k, sw.body.jaxpr, [*(v.borrowed() for v in sw.consts),
                                               *(c.borrowed() for c in carries), *records], q)
        if found is None:
            return None
        body, new = found
        body = rows + body
        nk = len(sw.init)
        sums = []
        for d in new[nk:nk + sw.nacc]:  # the accumulated outputs: zeros, then each step's term
            zero = k.constant(0, d.dtype)
            if d.shape:
                acc = Value(k.buffer(d.shape, d.dtype), d.shape, d.dtype, owned=True)
                index, inner = k.nest(d.shape, pad, lines)
                lines.append(f"{inner}{acc.at(index)} = {zero}")
                index, inner = k.nest(d.shape, q, body)
                body.append(f"{inner}{acc.at(index)} = np.add({acc.at(index)}, {d.at(index)})")
            else:
                acc = Value(k.fresh("c"), (), d.dtype)
                lines.append(f"{pad}{acc.name} = {zero}")
                body.append(f"{q}{acc.name} = np.add({acc.name}, {d.at(())})")
            sums.append(acc)
        own: list[Value | None] = []
        for v, kept in zip([*carries, *new[nk + sw.nacc:]], keep[s]):
            if not kept:
                own.append(None)
                continue
            name = k.fresh("r")
            lines.append(f"{pad}{name} = np.empty(({count}, "
                         f"{''.join(d + ', ' for d in v.shape)}), {type_name(v.dtype)})")
            k.copy(k.row(Value(name, (count, *v.shape), v.dtype), (i,), q, body), v, q, body)
            own.append(Value(name, v.shape, v.dtype))
        stacks.append(own)
        lines.append(f"{pad}for {st} in range({count}):")
        lines.append(f"{q}{i} = {count} - 1 - {st}" if sw.reverse else f"{q}{i} = {st}")
        lines += body
        carry_out(k, carries, new[:nk], q, lines)
        outs += [Value(c.name, c.shape, c.dtype, owned=True) for c in carries] + sums
    return lines, outs


NESTED.update(scan=scan_lines, while_loop=while_lines)


def refusal(e: Eqn, exact: bool) -> str | None:
    """What in loop equation ``e`` has no native lowering (``exact``: as in
    ``loop_source``): the refused equation, as its primitive and operand
    types, or the loop itself; None where the loop lowers.  Tiering's
    estimate asks this, without loading Numba (``Kernel.numba``), so that a
    loop it counts as native is one the lowering builds."""
    k = Kernel(exact, numba=False)
    if _lowered(k, e, [True] * len(e.outputs)) is not None:
        return None
    refused = k.refused or e
    types = ", ".join(a.aval.str_short() for a in refused.inputs)
    return f"{refused.primitive.name} on {types}"


def _lowered(k: Kernel, e: Eqn, needed: Sequence[bool]) -> tuple[list[Value], Lowered] | None:
    """The kernel's operands and loop equation ``e``'s statements on them."""
    if any(v.aval.dtype.kind not in _KINDS for v in (*e.inputs, *e.outputs)):
        return None
    ins = [Value(f"a{n}", tuple(f"a{n}.shape[{d}]" for d in range(v.aval.ndim)), v.aval.dtype)
           for n, v in enumerate(e.inputs)]
    found = TOP[e.primitive.name](k, e, ins, "    ", needed, top=True)
    return None if found is None else (ins, found)


def loop_source(e: Eqn, needed: Sequence[bool], exact: bool = False
                ) -> tuple[str, list[int], list[bool], list[int]] | None:
    """Source of the kernel running loop equation ``e`` (a scan, a while
    loop, a recorded loop), the static values of its leading size arguments,
    which outputs it returns (the others are not ``needed``) and the
    addresses of the NumPy loops it calls; None where a body has no
    lowering.  The kernel takes the sizes, the equation's operands (rank 0
    as scalars) and the NumPy loops, and returns a tuple.  ``exact``: the
    lowering of ``jit_tier_numerics="exact"`` (``Kernel``)."""
    k = Kernel(exact)
    lowered = _lowered(k, e, needed)
    if lowered is None:
        return None
    ins, (lines, outs) = lowered
    args = [name for name, _ in k.sizes] + [x.name for x in ins] + [name for name, _ in k.loops]
    returned = [x.name for x in outs if x is not None]
    intrinsic = ["from functrans.backends.native.intrinsics import call_loop"] if k.loops else []
    source = ["import numpy as np", "import numba", *intrinsic, "", *k.globals, "",
              "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
              f"def kernel({', '.join(args)}):", *(f"    {s}" for s in k.pre), *lines,
              f"    return ({''.join(r + ', ' for r in returned)})"]
    return ("\n".join(source) + "\n", [v for _, v in k.sizes], [x is not None for x in outs],
            [a for _, a in k.loops])


#: The loops a kernel may hold at its top, by primitive name.
TOP: dict[str, Callable] = {"scan": scan_lines, "while_loop": while_lines,
                            "recorded_loop": recorded_lines}


def _numba_type(aval):
    from numba import types
    from numba.np.numpy_support import from_dtype

    dt = from_dtype(aval.dtype)
    return types.Array(dt, aval.ndim, "C") if aval.ndim else dt


def _compiled(source: str, folder: str, signature: tuple):
    """The kernel of ``source`` compiled for ``signature`` and the seconds it
    took, or None where Numba's typing refuses it (a graph split, never an
    error)."""
    start = time.perf_counter()
    kernel = _load(source, folder)
    try:
        if signature not in kernel.overloads:
            kernel.compile(signature)
    except Exception:
        return None
    return kernel, time.perf_counter() - start


def loop_call(e: Eqn, name: str, folder: str,
              used: Callable[[object], bool] = lambda v: True, exact: bool = False
              ) -> tuple[Callable, str, float] | None:
    """The Python function running loop equation ``e`` through one kernel,
    its source and compile seconds; None when a body has no native form or
    Numba cannot compile it (the loop then stays the NumPy tier's).
    Outputs for which ``used`` is false may come back as None; ``exact`` as
    in ``loop_source``."""
    from numba import types

    found = loop_source(e, [used(v) for v in e.outputs], exact)
    if found is None:
        return None
    source, sizes, returned, addresses = found
    status = fp_status.status()
    if exact and raises_flags(source) and status is None:
        return None  # its C pow's floating-point exceptions could not be read
    signature = (*(types.int64 for _ in sizes), *(_numba_type(v.aval) for v in e.inputs),
                 *(types.int64 for _ in addresses))
    compiled = _compiled(source, folder, signature)
    if compiled is None:
        return None
    kernel, seconds = compiled
    args = [f"a{n}" for n in range(len(e.inputs))]
    guard = ""
    if any(a in (matmul_loop(np.dtype(np.float32)), matmul_loop(np.dtype(np.float64)))
           for a in addresses):
        # NumPy's products read a strided operand (a transposed view) with
        # other BLAS arguments than the kernel's contiguous copy: with one,
        # the loop runs as the NumPy tier runs it, for the same bits.
        # Read only through ufuncs, an operand matters by the order of their
        # results (a vector's are contiguous whatever it is).  NumPy's
        # c_contiguous ignores the strides of axes of one element: such an
        # operand is passed uncopied, and the kernel gives NumPy's loop its
        # own strides, as the NumPy tier's product reads it (reshapes and
        # ufunc results have C strides there in both tiers).
        laid_out = [(f"{args[n]}.flags.c_contiguous" if rank > 1 else f"_vector({args[n]})")
                    if direct else f"_ordering({args[n]})"
                    for n, (rank, direct) in sorted(_product_reads(e).items())
                    if direct or rank > 1]
        guard = (f"    if not ({' and '.join(laid_out)}):\n"
                 f"        return _numpy({', '.join(args)})\n") if laid_out else ""
    passed = [str(s) for s in sizes] + [
        f"_scalar({a})" if v.aval.ndim == 0 else f"_contiguous({a})"
        for a, v in zip(args, e.inputs)] + [str(a) for a in addresses]
    results, n = [], 0
    namespace: dict = {"_kernel": kernel, "_scalar": _scalar, "_numpy": _numpy_tier(e),
                       "_vector": _vector, "_ordering": _ordering,
                       "_contiguous": np.ascontiguousarray, "_asarray": np.asarray}
    for m, (v, back) in enumerate(zip(e.outputs, returned)):
        if not back:
            results.append("None")
            continue
        if v.aval.ndim == 0:
            namespace[f"_d{m}"] = v.aval.dtype
            results.append(f"_asarray(r[{n}], _d{m})")
        else:
            results.append(f"r[{n}]")
        n += 1
    # An index NumPy refuses raises IndexError in the kernel (movement.py),
    # which writes none of its operands: the NumPy tier reruns the loop and
    # raises its own error.
    # The floating-point exceptions the body raises (log(0), an overflow,
    # C's pow in exact numerics) are read around the call, as NumPy reads
    # them around each of the NumPy tier's calls: where the caller's
    # np.errstate would report one, the NumPy tier reruns the loop and warns
    # or raises itself.
    watched = fp_status.watched(kernel)
    if watched is None:  # no status functions: the kernel alone, reporting nothing
        run, check = "r = _kernel", ""
    else:
        namespace.update(_watched=watched, _reported=fp_status.reported, _status=status)
        run = "r, flags = _watched"
        check = (f"    if flags and _reported(flags, _status):\n"
                 f"        return _numpy({', '.join(args)})\n")
    text = (f"def {name}({', '.join(args)}):\n{guard}"
            f"    try:\n"
            f"        {run}({', '.join(passed)})\n"
            f"    except IndexError:\n"
            f"        return _numpy({', '.join(args)})\n{check}"
            f"    return [{', '.join(results)}]\n")
    exec(compile(text, f"<functrans native loop {name}>", "exec"), namespace)
    return namespace[name], source, seconds


def _numpy_tier(e: Eqn) -> Callable[..., list]:
    """Loop equation ``e`` run as the NumPy tier runs it (its impl)."""
    return lambda *args: list(e.primitive.impl(*args, **e.params))


def _vector(a: np.ndarray) -> bool:
    """Whether NumPy's products read the vectors of ``a`` (the array, or
    its rows) as the kernel's contiguous copy: contiguous ones, and those
    ``np.dot`` copies (a stride of 0 or below) or ufuncs make anew."""
    return a.flags.c_contiguous or a.strides[-1] <= 0


def _ordering(a: np.ndarray) -> bool:
    """Whether the NumPy tier's ufuncs of ``a`` (and of operands in C order)
    allocate their results in C order, as the kernel's are: ``a`` is in C
    order, or broadcast whole (all strides 0: it imposes no order, as the
    zeros of a tangent or cotangent do)."""
    return a.flags.c_contiguous or not any(a.strides)


def _product_reads(e: Eqn) -> dict[int, tuple[int, bool]]:
    """The operands of loop equation ``e`` whose layout a float product in
    a body may see in the NumPy tier, with the rank the body sees (a scan's
    stacked operands are read by rows) and whether the product may see it
    as it is (read by it, or through the equations before it that may keep
    an operand's layout, or the carries into the next step) rather than
    only through ufuncs' results (``_reaching``).  Loops other than scans
    and while loops: every array operand, whole, as it is."""
    if e.primitive.name == "scan":
        body = e.params["jaxpr"].jaxpr
        direct, through = _reaching(body, e.params["num_consts"], e.params["num_carry"])
        return {n: (body.invars[n].aval.ndim, n in direct) for n in direct | through
                if body.invars[n].aval.ndim}
    if e.primitive.name == "while_loop":
        cn, bn = e.params["cond_nconsts"], e.params["body_nconsts"]
        body = e.params["body_jaxpr"].jaxpr
        reads: dict[int, bool] = {}
        for first, jaxpr, count, place in (
                (bn, body, len(body.invars) - bn, lambda n: cn + n),
                (cn, e.params["cond_jaxpr"].jaxpr, 0, lambda n: n if n < cn else n + bn)):
            direct, through = _reaching(jaxpr, first, count)
            for n in direct | through:
                reads[place(n)] = reads.get(place(n), False) or n in direct
        return {n: (e.inputs[n].aval.ndim, d) for n, d in reads.items() if e.inputs[n].aval.ndim}
    return {n: (v.aval.ndim, True) for n, v in enumerate(e.inputs) if v.aval.ndim}


def _reaching(body: Jaxpr, first_carry: int, num_carry: int) -> tuple[set[int], set[int]]:
    """Positions of ``body``'s inputs from which a float product that calls
    ``np.matmul``'s loop may be reached: those it may read as they are (its
    operands, what they were computed from by equations that may keep a
    layout, through nested loops and the carries of later steps), and
    those it reads only through ufuncs' results, new arrays whose order
    NumPy's iterator takes from their operands (``_ordering``)."""
    direct: set[int] = set()
    reach: set[int] = set()  # direct, or through ufuncs
    while True:
        for e in reversed(body.eqns):
            ins = {id(a) for a in e.inputs}
            if e.primitive.name == "dot_general":
                avals, numbers = [a.aval for a in e.inputs], e.params["dimension_numbers"]
                if e.outputs[0].aval.dtype.kind == "f" and (
                        matmul_form(avals, numbers) is not None
                        or reshaped_form(avals, numbers) is not None):
                    direct |= ins
                    reach |= ins
            elif e.primitive.name in NESTED:
                direct |= ins
                reach |= ins
            elif any(id(v) in reach for v in e.outputs):
                reach |= ins
                if any(id(v) in direct for v in e.outputs) and (
                        native_ufunc(e, numba=False) is None):
                    direct |= ins
        found = {n for n, v in enumerate(body.invars) if id(v) in reach}
        carries = [(n, id(body.outvars[n - first_carry])) for n in found
                   if first_carry <= n < first_carry + num_carry]
        more = {o for n, o in carries if o not in reach}
        deeper = {o for n, o in carries if id(body.invars[n]) in direct and o not in direct}
        if not more and not deeper:
            return {n for n in found if id(body.invars[n]) in direct}, found
        reach |= more
        direct |= deeper
