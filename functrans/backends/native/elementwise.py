"""Fused elementwise groups as Numba kernels: which equations have a native
lowering (``native_ufunc``), the kernel of a group (``kernel_source``) and
the Python function that calls it with the program's shapes (``_call``)."""

from __future__ import annotations

import itertools
import math
import os
import sys
import sysconfig
import threading
from typing import Any, Callable, Sequence

import numpy as np

from functrans.backends import threads as thread_setting
from functrans.backends.native import fp_status
from functrans.backends.native.c_power import CPower, power_form
from functrans.backends.native.cache import _load_compiled
from functrans.backends.native.numpy_loops import may_differ
from functrans.backends.native.reducers import FOLDED
from functrans.backends.numpy.codegen import Compiled
from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var, lookup_primitive

# -- which equations have a native lowering ---------------------------------

#: Kinds NumPy and Numba compute alike: bool, signed and unsigned integers,
#: floats.  Complex loops stay with NumPy (Numba's complex division and
#: functions are not NumPy's algorithms).
_KINDS = "biuf"

#: Ufunc loops Numba supports but computes differently from NumPy, found by
#: comparing both on special values (tests/backends/native/test_numerics.py), with the
#: dtype kinds concerned; these stay NumPy calls.  Integers: NumPy raises for
#: a negative integer power where Numba's loop returns 0; on the signed
#: minimum divided by -1 NumPy's floor_divide gives the minimum (Numba 0), its
#: fmod 0 (Numba the minimum), and Numba's remainder kills the process with
#: SIGFPE; Numba's sign of a large unsigned integer is the integer itself.
#: Shifts by the bit width or more give 0 (or -1) in NumPy and the
#: processor's masked shift in Numba.  Floats: Numba's floor_divide gives
#: -0.0 for -1 // inf (NumPy -1.0), its remainder 0.0 where NumPy gives -0.0
#: (0.0 % -inf), its sign(-0.0) is -0.0
#: (NumPy 0.0), and its maximum and minimum pick the other zero of -0.0 and
#: 0.0.
_DIFFERENT: dict[Any, str] = {
    np.power: "iu", np.floor_divide: "if", np.remainder: "if", np.fmod: "i",
    np.sign: "uf", np.maximum: "f", np.minimum: "f", np.fmax: "f", np.fmin: "f",
    np.left_shift: "iu", np.right_shift: "iu",
}


def _loops(ufunc) -> frozenset[str]:
    from numba.np import ufunc_db  # Numba loads only for the native tier

    try:
        return frozenset(ufunc_db.get_ufunc_info(ufunc))
    except KeyError:
        return frozenset()


_LOOPS: dict[Any, frozenset[str]] = {}


def _operand_type(a) -> Any:
    """What NumPy's loop resolution sees of operand ``a``: its dtype, or the
    Python type of a weak scalar (a literal, a Python number argument)."""
    aval = a.aval
    if aval.weak_type and aval.ndim == 0:
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[aval.dtype.kind]
    return aval.dtype


def native_ufunc(e: Eqn, numba: bool = True) -> tuple[Any, tuple[np.dtype, ...]] | None:
    """``(ufunc, loop dtypes)`` of an equation Numba computes as NumPy does:
    one result, a NumPy ufunc (the primitive's ``numpy_fn``, or the one its
    ``numpy_kernel`` picks for these params), a loop Numba has, real dtypes
    only; else None.  ``numba`` False: Numba's loops are not consulted
    (nor Numba loaded): any signature counts as one it has."""
    prim = e.primitive
    if prim.multiple_results or len(e.outputs) != 1:
        return None
    if prim.name == "scalar_pow":
        return _c_power_form(e)
    fn = None
    kernel: Any = prim.numpy_kernel  # what the NumPy backend's generated code calls
    if kernel is not None:
        fn = kernel([a.aval for a in e.inputs], **e.params)
    if fn is None and not e.params:
        fn = prim.numpy_fn
    if not isinstance(fn, np.ufunc) or fn.nout != 1 or fn.nin != len(e.inputs):
        return None
    if any(a.aval.dtype.kind not in _KINDS for a in (*e.inputs, *e.outputs)):
        return None
    try:
        dtypes = fn.resolve_dtypes((*map(_operand_type, e.inputs), None))
    except (TypeError, ValueError, OverflowError):
        return None
    if fn in _DIFFERENT and any(d.kind in _DIFFERENT[fn] for d in dtypes):
        return None
    for a, d in zip(e.inputs, dtypes):
        if d.kind in "iu" and _operand_type(a) is int and not _fits(a, d):
            return None  # NumPy raises OverflowError: the NumPy call says so
    if not numba:
        return fn, tuple(dtypes)
    loops = _LOOPS.get(fn)
    if loops is None:
        loops = _LOOPS[fn] = _loops(fn)
    signature = "".join(d.char for d in dtypes[:-1]) + "->" + dtypes[-1].char
    return (fn, tuple(dtypes)) if signature in loops else None


def _c_power_form(e: Eqn) -> tuple[CPower, tuple[np.dtype, ...]] | None:
    """``native_ufunc`` of a NumPy scalar's ``**``: C's ``pow`` or ``powf``
    (``c_power.py``) on the dtypes ``np.power`` resolves, as the NumPy
    tier's ``scalar_pow`` takes them; other dtypes stay NumPy calls."""
    if any(a.aval.dtype.kind not in "biuf" for a in (*e.inputs, *e.outputs)):
        return None
    try:
        dtypes = tuple(np.power.resolve_dtypes((*map(_operand_type, e.inputs), None)))
    except (TypeError, ValueError, OverflowError):
        return None
    form = power_form(dtypes)
    return None if form is None or dtypes[-1] != e.outputs[0].aval.dtype else (form, dtypes)


def _fits(a, dtype: np.dtype) -> bool:
    """Whether the weak Python int ``a`` converts to ``dtype`` as NumPy
    converts it (a literal within its range; an argument only to int64,
    since its value is known only at run time)."""
    if type(a) is not Literal:
        return dtype == np.int64
    info = np.iinfo(dtype)
    return info.min <= int(a.val) <= info.max


def _native_select(e: Eqn) -> bool:
    """``select`` on real or bool values: a conditional expression, with the
    branches converted to the result's dtype as ``np.where`` converts them.
    In a group, the selections of a derivative program (the strong zeros of
    docs/autodiff.md) stay in the loop that computes their branches."""
    return e.primitive.name == "select" and all(
        a.aval.dtype.kind in _KINDS for a in (*e.inputs, *e.outputs))


def transcendental(e: Eqn) -> bool:
    """Whether ``e`` is a float function whose native code may differ from
    NumPy's in the last bits (``sin``, ``exp``, ``tanh``, ``power``, ...:
    ``numpy_loops.may_differ``)."""
    found = native_ufunc(e)
    return found is not None and may_differ(*found)


def fusible(e: Eqn, exact: bool = False) -> bool:
    """The equations a native group may hold.  With ``exact`` (the lowering
    of ``jit_tier_numerics="exact"``) not the ``transcendental`` ones: those
    stay the very NumPy calls the NumPy tier makes, so their bits are its;
    nor a scalar's ``**`` (C's ``pow``), which can raise floating-point
    exceptions that only ``chunked.py``'s kernels report as NumPy does."""
    found = native_ufunc(e)
    if found is None:
        return _native_select(e)
    return not (exact and (isinstance(found[0], CPower) or transcendental(e)))


# -- the program around the groups -------------------------------------------


def native_group(e: Eqn, exact: bool = False) -> Jaxpr | None:
    """The group a kernel computes for equation ``e`` of the fused program: a
    ``fused_elementwise`` of native members (and the pads ``merge_pads``
    put there, or the reduction ``reductions.fold_reductions`` put last), or
    a native equation alone; else None.  ``exact``: as in ``fusible``."""
    if e.primitive.name == "fused_elementwise":
        group = e.params["jaxpr"]
        folded = group.eqns and group.eqns[-1].primitive.name in FOLDED
        members = group.eqns[:-1] if folded else group.eqns
        return group if all(fusible(m, exact) or _is_pad(m) for m in members) else None
    if fusible(e, exact):
        invars = list({id(a): a for a in e.inputs if type(a) is Var}.values())
        return Jaxpr((), invars, e.outputs, [e])
    return None


def _needed(group: Jaxpr, target) -> int:
    """How many of ``group``'s equations compute ``target``."""
    producer = {id(v): e for e in group.eqns for v in e.outputs}
    seen: set[int] = set()
    stack = [target]
    while stack:
        e = producer.get(id(stack.pop()))
        if e is not None and id(e) not in seen:
            seen.add(id(e))
            stack.extend(a for a in e.inputs if type(a) is Var)
    return len(seen)


def merge_pads(closed: ClosedJaxpr, exact: bool = False) -> ClosedJaxpr:
    """``closed`` with each native group that reads only pads of another
    group's results (and other inputs) merged with that group and the pads
    into one group, which ``kernel_source`` writes as one loop over the outer
    group's shape: the inner group's values are computed at shifted indices
    where the pads hold them, and no padded or inner array is made.  The
    gradient of a stencil (``x[1:] - x[:-1]``) has this form, its
    cotangents placed back by ``pad`` and summed.

    Only pads with no interior padding are taken, of results the inner group
    hands to those pads alone, read by the outer group alone, where no array
    input feeds both groups (each input is read at one shape); an inner value
    read through several pads is computed once per pad, so the merge is made
    only where that at most doubles the inner group's work.  ``exact``: as
    in ``fusible``."""
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    if not any(_is_pad(e) for e in eqns):
        return closed
    fused_p = lookup_primitive("fused_elementwise")
    producer = {id(v): i for i, e in enumerate(eqns) for v in e.outputs}
    users: dict[int, set[int]] = {}
    for i, e in enumerate(eqns):
        for a in e.inputs:
            if type(a) is Var:
                users.setdefault(id(a), set()).add(i)
    for a in jaxpr.outvars:
        if type(a) is Var:
            users.setdefault(id(a), set()).add(-1)
    merged: dict[int, Eqn] = {}
    dropped: set[int] = set()
    for h, e in enumerate(eqns):
        outer = native_group(e, exact)
        if outer is None or not outer.outvars[0].aval.ndim:
            continue
        shape = outer.outvars[0].aval.shape
        by_source: dict[int, list[int]] = {}
        for a in dict.fromkeys(a for a in e.inputs if type(a) is Var):
            i = producer.get(id(a), -1)
            p = eqns[i] if i >= 0 else None
            if (p is None or not _is_pad(p) or users[id(a)] != {h} or a.aval.shape != shape
                    or type(p.inputs[0]) is not Var
                    or any(interior for _, _, interior in p.params["padding_config"])):
                continue
            g = producer.get(id(p.inputs[0]), -1)
            if g >= 0 and g not in dropped and g not in merged:
                by_source.setdefault(g, []).append(i)
        members: list[Eqn] = []  # the inner groups' equations
        pads: list[Eqn] = []
        taken: list[int] = []
        group = None
        for g, ps in by_source.items():
            inner = native_group(eqns[g], exact)
            if inner is None or any(_is_pad(m) for m in inner.eqns):
                continue
            if any(users.get(id(v), set()) - set(ps) for v in eqns[g].outputs):
                continue  # an inner result is needed as an array
            these = [eqns[i] for i in ps]
            if sum(_needed(inner, p.inputs[0]) for p in these) > 2 * len(inner.eqns):
                continue
            trial = _merged([*members, *inner.eqns, *pads, *these, *outer.eqns], outer.outvars)
            if trial is None:
                continue  # an array read at two shapes
            members += inner.eqns
            pads += these
            taken += [g, *ps]
            group = trial
        if group is not None:
            merged[h] = Eqn(fused_p, group.invars, group.outvars, {"jaxpr": group})
            dropped.update(taken)
    if not merged:
        return closed
    new = [merged.get(i, e) for i, e in enumerate(eqns) if i not in dropped]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, new), closed.consts)


def _merged(eqns: list[Eqn], outvars) -> Jaxpr | None:
    """The group of ``eqns`` (in order) computing ``outvars``, or None where
    an array input would be read at two shapes."""
    defined = {id(v) for e in eqns for v in e.outputs}
    invars = list({id(a): a for e in eqns for a in e.inputs
                   if type(a) is Var and id(a) not in defined}.values())
    group = Jaxpr((), invars, outvars, eqns)
    shapes = _read_shapes(group)
    return group if all(len(shapes[id(v)]) == 1 for v in invars if v.aval.ndim) else None


def constants_inline(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with each constant of one repeated value read by a native
    group written into the group's kernel as a literal (the cotangent
    ``100 * ones`` of the Rosenbrock function is then not read from memory).
    Only real dtypes, and no NaN (a literal would not keep its payload): the
    kernel reads one element of the constant per element of the group
    anyway, so its values are the same."""
    found: dict[int, Literal] = {}
    for v, c in zip(closed.jaxpr.constvars, closed.consts):
        if type(c) is not np.ndarray or not c.size or c.dtype.kind not in _KINDS:
            continue
        flat = c.reshape(-1)
        if c.dtype.kind == "f" and np.isnan(flat[0]):
            continue
        if np.ascontiguousarray(flat).tobytes() == flat[:1].tobytes() * c.size:
            found[id(v)] = Literal(flat[0], ShapedArray((), c.dtype))
    if not found:
        return closed
    scalar_like = {id(v) for v, c in zip(closed.jaxpr.constvars, closed.consts)
                   if id(v) in found and (c.size == 1 or not any(c.strides))}
    eqns = []
    changed = False
    for e in closed.jaxpr.eqns:
        group = native_group(e) if e.primitive.name == "fused_elementwise" else None
        # An operand of a transcendental function stays an array unless NumPy's
        # loop sees it as one scalar too (one element, or all strides 0): as a
        # literal it is a scalar, which a loop may compute otherwise (power's
        # takes a scalar exponent of 0.5 for sqrt: ``_scalar_power``; the loops
        # ``chunked.py`` calls are passed a literal with stride 0).
        inline = found if group is None else {
            k: c for k, c in found.items() if k in scalar_like
            or not any(id(a) == k for m in group.eqns if transcendental(m) for a in m.inputs)}
        if group is None or not any(id(v) in inline for v in group.invars):
            eqns.append(e)
            continue
        members = [Eqn(m.primitive, tuple(inline.get(id(a), a) if type(a) is Var else a
                                          for a in m.inputs), m.outputs, m.params, m.source)
                   for m in group.eqns]
        invars = [v for v in group.invars if id(v) not in inline]
        inner = Jaxpr((), invars, group.outvars, members)
        eqns.append(Eqn(e.primitive, tuple(invars), e.outputs, {**e.params, "jaxpr": inner},
                        e.source))
        changed = True
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts)


# -- kernel source -------------------------------------------------------------


def _literal(value: Any, dtype: np.dtype) -> str:
    """Exact Python source of a scalar of ``dtype`` (NaN, inf, -0.0 included)."""
    value = np.asarray(value).astype(dtype)[()]
    if dtype.kind == "b":
        return f"np.bool_({bool(value)})"
    if dtype.kind in "iu":
        return f"np.{dtype.name}({int(value)})"
    return f"np.{dtype.name}(float.fromhex({float(value).hex()!r}))"


def _scalar_power(exponent, x: str, y: str) -> str:
    """``x ** y`` for one scalar exponent, as NumPy's float power loop computes
    it: an exponent of 0.5 is ``sqrt`` there (NaN at -inf, -0.0 at -0.0),
    where Numba's (C's) pow gives +inf and +0.0.  NumPy's other exponents
    taken apart (-1, 0, 1, 2) give what pow gives."""
    if type(exponent) is Literal:
        return f"np.sqrt({x})" if exponent.val == 0.5 else f"np.power({x}, {y})"
    return f"(np.sqrt({x}) if {y} == 0.5 else np.power({x}, {y}))"


def _is_pad(e: Eqn) -> bool:
    return e.primitive.name == "pad"


def body(group: Jaxpr, scalars: Sequence[bool], pad: str, rank: int | None = None,
         prefix: str = "", names: Sequence[str] = ()) -> tuple[list[str], list[str], list[str]]:
    """The statements computing ``group``'s outputs at the loop index
    ``i0, i1, ...`` (with indent ``pad``): the kernel's globals (its
    literals), the statements, and the expression of each output.
    ``scalars`` flags the rank-0 inputs, named ``a0, a1, ...`` like the
    others (or ``names``); see ``kernel_source``.  ``rank`` (the group's
    by default) is the number of indices the arrays are read at: 1 for a
    kernel that reads every array raveled (``chunked.py``).  ``prefix``
    starts the names of the temporaries and literals, so that several
    bodies can share one kernel."""
    rank = group.outvars[0].aval.ndim if rank is None else rank
    pads = [e for e in group.eqns if _is_pad(e)]
    producer = {id(v): e for e in group.eqns for v in e.outputs}
    inputs = {id(v): (names[k] if names else f"a{k}", scalar)
              for k, (v, scalar) in enumerate(zip(group.invars, scalars))}
    globs: list[str] = []
    constants: dict[str, str] = {}  # literal source -> its global's name
    lines: list[str] = []
    count = [0]
    zero = (0,) * rank

    def index(shift: tuple[int, ...]) -> str:
        if not rank:
            return "()"
        return ", ".join(f"i{d} - {s}" if s > 0 else f"i{d} + {-s}" if s < 0 else f"i{d}"
                         for d, s in enumerate(shift))

    def operand(a, dtype: np.dtype, names: dict, shift: tuple[int, ...]) -> str:
        if type(a) is Literal:
            text = _literal(a.val, dtype)
            if text not in constants:
                constants[text] = f"{prefix}K{len(constants)}"
                globs.append(f"{constants[text]} = {text}")
            return constants[text]
        if id(a) in names:
            text = names[id(a)]
        else:
            name, scalar = inputs[id(a)]
            text = name if scalar else f"{name}[{index(shift)}]"
        return text if a.aval.dtype == dtype else f"np.{dtype.name}({text})"

    def emit(targets, shift: tuple[int, ...], pad: str) -> dict:
        """Write the equations ``targets`` need at ``shift`` (the index less
        ``shift``) with indent ``pad``; return their temporaries' names."""
        need: set[int] = set()
        stack = [a for a in targets if type(a) is Var]
        while stack:
            e = producer.get(id(stack.pop()))
            if e is None or id(e) in need:
                continue
            need.add(id(e))
            stack.extend(a for a in (e.inputs[1:] if _is_pad(e) else e.inputs) if type(a) is Var)
        names: dict[int, str] = {}
        for e in group.eqns:
            if id(e) not in need:
                continue
            t = f"{prefix}t{count[0]}"
            count[0] += 1
            out = e.outputs[0].aval.dtype
            if _is_pad(e):
                config = e.params["padding_config"]
                inner_shift = tuple(s + lo for s, (lo, _, _) in zip(shift, config))
                p = pads.index(e)
                tests = []
                for d, ((lo, hi, _), s) in enumerate(zip(config, shift)):
                    if lo > 0:  # the operand starts after the low padding
                        tests.append(f"i{d} >= {s + lo}")
                    if hi > 0:  # and ends before the high padding
                        end = f"s{p}[{d}]" + (f" + {s + lo}" if s + lo > 0 else
                                              f" - {-s - lo}" if s + lo < 0 else "")
                        tests.append(f"i{d} < {end}")
                fill = operand(e.inputs[1], out, names, shift)
                if tests:
                    lines.append(f"{pad}if {' and '.join(tests)}:")
                    inner = emit(e.inputs[:1], inner_shift, pad + "    ")
                    lines.append(f"{pad}    {t} = "
                                 f"{operand(e.inputs[0], out, inner, inner_shift)}")
                    lines.append(f"{pad}else:")
                    lines.append(f"{pad}    {t} = {fill}")
                else:
                    inner = emit(e.inputs[:1], inner_shift, pad)
                    lines.append(f"{pad}{t} = {operand(e.inputs[0], out, inner, inner_shift)}")
            elif _native_select(e):
                which, yes, no = (operand(a, d, names, shift)
                                  for a, d in zip(e.inputs, (np.dtype(np.bool_), out, out)))
                lines.append(f"{pad}{t} = {yes} if {which} else {no}")
            else:
                found = native_ufunc(e)
                if found is None:  # the groups hold only equations native_ufunc accepts
                    raise RuntimeError(f"functrans: no native lowering for {e.primitive.name} "
                                       "(internal error); please report it")
                ufunc, loop = found
                texts = [operand(a, d, names, shift) for a, d in zip(e.inputs, loop)]
                if isinstance(ufunc, CPower):
                    call = ufunc.expression(texts)
                    if ufunc.imports() not in globs:
                        globs.append(ufunc.imports())
                else:
                    call = f"np.{ufunc.__name__}({', '.join(texts)})"
                if ufunc is np.power and loop[-1].kind == "f" and not e.inputs[1].aval.ndim:
                    call = _scalar_power(e.inputs[1], *texts)
                if loop[-1] != out:
                    call = f"np.{out.name}({call})"
                lines.append(f"{pad}{t} = {call}")
            names[id(e.outputs[0])] = t
        return names

    top = emit(group.outvars, zero, pad)
    return globs, lines, [operand(v, v.aval.dtype, top, zero) for v in group.outvars]


def kernel_source(group: Jaxpr, scalars: Sequence[bool], split: bool = False) -> str:
    """Source of the kernel computing the fused ``group``: a function of the
    output shape, the shapes of the operands of the group's pads (see
    ``merge_pads``), arrays to write the group's outputs into, and the
    group's inputs (``scalars`` flags the rank-0 ones, passed as scalars; the
    others are arrays of the rank of the values they feed), returning the
    tuple of its outputs.  Shapes appear only as arguments: the text depends
    on dtypes, ranks, literals and pad widths alone.

    A pad's value at an index is its operand's value at the index less the
    low padding when that lies in the operand, else the padding value: the
    operand's equations are written inside that test, at the shifted index,
    so no padded array is made.  With ``split`` the kernel takes the range
    of the outer index it computes first (``start``, ``stop``), so that
    threads can compute parts of one result (``_run_split``)."""
    rank = group.outvars[0].aval.ndim
    body_pad = "    " * (rank + 1)
    globs, lines, values = body(group, scalars, body_pad)
    index = ", ".join(f"i{d}" for d in range(rank)) if rank else "()"
    lines += [f"{body_pad}o{k}[{index}] = {v}" for k, v in enumerate(values)]
    outs = [f"o{k}" for k in range(len(group.outvars))]
    pads = [e for e in group.eqns if _is_pad(e)]
    args = [f"a{k}" for k in range(len(group.invars))]
    shapes = [f"s{p}" for p in range(len(pads))]
    bounds = ["start", "stop"] if split and rank else []
    head = ["import numpy as np", "import numba", "", *globs, "",
            "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
            f"def kernel({', '.join([*bounds, 'shape', *shapes, *outs, *args])}):"]
    pad = "    "
    for d in range(rank):
        extent = "start, stop" if bounds and d == 0 else f"shape[{d}]"
        head.append(f"{pad}for i{d} in range({extent}):")
        pad += "    "
    lines.append(f"    return ({', '.join(outs)},)")
    return "\n".join(head + lines) + "\n"


def _read_shapes(group: Jaxpr) -> dict[int, set[tuple]]:
    """The shapes each of ``group``'s inputs is read at (by variable id): a
    member's output shape (every member of a group has the shape of the
    group, inner or outer), or for a pad's operand its own."""
    found: dict[int, set[tuple]] = {id(v): set() for v in group.invars}
    for e in group.eqns:
        for a in e.inputs:
            if type(a) is Var and id(a) in found:
                found[id(a)].add(a.aval.shape if _is_pad(e) else e.outputs[0].aval.shape)
    return found


def _signature(group: Jaxpr, kinds: Sequence[str], split: bool = False) -> tuple:
    """Numba argument types for the kernel as the program calls it: the
    outer index's range (``split``), shape tuples (the output's, then each
    pad operand's), the C-contiguous output
    arrays, then scalars, C-contiguous arrays, or read-only broadcast views."""
    from numba import types
    from numba.np.numpy_support import from_dtype

    rank = group.outvars[0].aval.ndim
    shape_type = types.UniTuple(types.int64, rank) if rank else types.Tuple(())
    sig: list[Any] = [types.int64] * (2 * split) + [shape_type] * (1 + sum(map(_is_pad,
                                                                            group.eqns)))
    sig += [types.Array(from_dtype(v.aval.dtype), rank, "C") for v in group.outvars]
    return tuple(sig + operand_types(group, kinds, rank))


def operand_types(group: Jaxpr, kinds: Sequence[str], rank: int) -> list:
    """Numba types of ``group``'s operands as a kernel takes them: each a
    scalar, a C-contiguous array of ``rank``, or a read-only broadcast view
    (``kinds``: "scalar", "array" or anything else)."""
    from numba import types
    from numba.np.numpy_support import from_dtype

    out: list[Any] = []
    for v, kind in zip(group.invars, kinds):
        dt = from_dtype(v.aval.dtype)
        if kind == "scalar":
            out.append(dt)
        elif kind == "array":
            out.append(types.Array(dt, rank, "C"))
        else:
            out.append(types.Array(dt, rank, "A", readonly=True))
    return out


def _scalar(x: Any) -> Any:
    """A rank-0 operand as the scalar the kernel takes."""
    return x if type(x) in (bool, int, float) else np.asarray(x).reshape(-1)[0]


#: Outputs of at least this many bytes are written into the arrays of the
#: call before when nothing else holds those any more.  Fresh large arrays
#: cost page faults on every call where the allocator has handed their
#: memory back to the system: a kernel writing two f64[100000] outputs took
#: 1.1 ms with fresh arrays and 0.14 ms with reused ones (measured on the
#: 2-core CI-like machine).  Needs CPython's exact reference counts, which a
#: free-threaded build does not promise.
_REUSE_BYTES = 1 << 17
_REFCOUNTS_EXACT = not sysconfig.get_config_var("Py_GIL_DISABLED")

#: Kernels over at least this many elements are run by several threads, each
#: computing chunks of the outer index (``_run_split``): the sine and cosine
#: of the gradient at n=1e6 took half the time on two cores.  Below it,
#: waking threads costs more than they save (docs/jit.md, "The native tier").
SPLIT_ELEMENTS = 1 << 18

#: Chunks per thread: a thread that starts late (a busy machine) finds the
#: chunks taken by the others instead of holding up the call.
_CHUNKS_PER_THREAD = 4


def _threads() -> int:
    """Threads for one kernel call (``functrans.config.native_threads``, else
    the cores this process may use)."""
    return thread_setting.count()


class _Pool:
    """The helper threads of split kernel calls, made on first use, again
    where a call needs more of them than there are (the setting grew), and
    again in a forked child, where the parent's threads do not exist (its
    lock may even have been held by one of them: the child gets a fresh
    one)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.executor: Any = None
        self.workers = 0

    def get(self, workers: int) -> Any:
        with self.lock:
            if self.executor is None or self.workers < workers:
                from concurrent.futures import ThreadPoolExecutor

                if self.executor is not None:  # its threads end once idle
                    self.executor.shutdown(wait=False)
                self.executor = ThreadPoolExecutor(workers, "functrans-native")
                self.workers = workers
            return self.executor

    def after_fork_in_child(self) -> None:
        self.lock = threading.Lock()
        self.executor = None
        self.workers = 0


_pool = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.after_fork_in_child)


def _run_split(kernel: Callable, length: int, threads: int, args: tuple,
               align: int = 1) -> list:
    """``kernel`` over the outer index ``range(length)``, in chunks taken in
    turn by this thread and ``threads - 1`` helpers, each starting at a
    multiple of ``align``; the kernel's results.  Each element is computed
    alone, so the results are the serial loop's bit for bit.  Returns once
    every helper has stopped (none writes an output after); the first
    exception a chunk raised, in any thread, is raised here, and the chunks
    not yet taken are not computed."""
    chunks = min(-(-length // align), threads * _CHUNKS_PER_THREAD)
    bounds = [length * c // chunks // align * align for c in range(chunks)] + [length]
    taken = itertools.count()  # next() on it is atomic under the GIL
    results: list = []
    errors: list = []

    def work() -> None:
        try:
            while not errors and (c := next(taken)) < chunks:
                results.append(kernel(bounds[c], bounds[c + 1], *args))
        except BaseException as e:  # raised in the caller's thread below
            errors.append(e)

    helpers: list = []
    try:
        pool = _pool.get(threads - 1)
        for _ in range(threads - 1):
            helpers.append(pool.submit(work))
    except RuntimeError:  # the interpreter is shutting down: no more helpers
        pass
    work()
    for h in helpers:  # one not started yet (the helpers busy with another call) never is
        if not h.cancel():
            h.result()
    if errors:
        raise errors[0]
    return results


class _Kept(threading.local):
    """The output arrays one kernel call site wrote last, per thread."""

    arrays: tuple | None = None


def _call(group: Jaxpr, name: str, folder: str = "") -> tuple[Callable, str, float]:
    """The Python function running ``group`` through its kernel (with the
    program's static shapes: broadcasting happens here), the kernel source,
    and the seconds spent compiling it (0 when it came from a cache)."""
    shape = group.outvars[0].aval.shape
    domains = {k: min(shapes, default=()) for k, shapes in _read_shapes(group).items()}
    kinds = []
    for v in group.invars:
        if v.aval.ndim == 0:
            kinds.append("scalar")
        elif v.aval.shape == domains[id(v)]:
            kinds.append("array")
        else:
            kinds.append("broadcast")
    threads = _threads()
    split = bool(shape) and math.prod(shape) >= SPLIT_ELEMENTS and threads > 1
    source = kernel_source(group, [k == "scalar" for k in kinds], split)
    kernel, seconds = _load_compiled(source, folder, _signature(group, kinds, split))
    args = [f"a{k}" for k in range(len(kinds))]
    passed = [f"_scalar({a})" if kind == "scalar" else
              f"_broadcast_to({a}, {domains[id(v)]!r})" if kind == "broadcast" else a
              for a, kind, v in zip(args, kinds, group.invars)]
    pad_shapes = [repr(tuple(e.inputs[0].aval.shape)) for e in group.eqns if _is_pad(e)]
    dtypes = [v.aval.dtype for v in group.outvars]
    outs = ", ".join(f"o{k}" for k in range(len(dtypes))) + ","
    fresh = ", ".join(f"_empty(_shape, _d{k})" for k in range(len(dtypes))) + ","
    nbytes = math.prod(shape) * max(d.itemsize for d in dtypes)
    if nbytes >= _REUSE_BYTES and _REFCOUNTS_EXACT:
        kept = " and ".join(f"_refcount(kept[{k}]) == 2" for k in range(len(dtypes)))
        take = (f"    kept = _kept.arrays\n"
                f"    if kept is not None and {kept}:  # nothing else holds them\n"
                f"        {outs} = kept\n"
                f"    else:\n"
                f"        {outs} = _kept.arrays = ({fresh})\n")
    else:
        take = f"    {outs} = {fresh}\n"
    operands = f"{', '.join(['_shape', *pad_shapes])}, {outs} {', '.join(passed)}"
    # The flags the kernel raised (per thread), read around its calls: where
    # the caller's np.errstate would report one, the NumPy tier computes the
    # group again and warns or raises as it does, with the same values.
    watched = fp_status.watched(kernel)
    if watched is None:  # no status functions: the kernel alone, reporting nothing
        run = (f"    _run_split(_kernel, {shape[0]}, {threads}, ({operands}))\n"
               f"    return ({outs})\n" if split else f"    return _kernel({operands})\n")
    else:
        if split:
            run = (f"    _flags = 0\n"
                   f"    for _, _f in _run_split(_watched, {shape[0]}, {threads}, ({operands})):\n"
                   f"        _flags |= _f\n"
                   f"    _result = ({outs})\n")
        else:
            run = f"    _result, _flags = _watched({operands})\n"
        run += (f"    if _flags and _reported(_flags, _status):\n"
                f"        return _numpy_tier({', '.join(args)})\n"
                f"    return _result\n")
    text = f"def {name}({', '.join(args)}):\n{take}{run}"
    numpy_calls: list[Compiled] = []  # the NumPy tier's calls of the group, at the first need

    def numpy_tier(*xs: Any) -> tuple:
        if not numpy_calls:
            numpy_calls.append(Compiled(ClosedJaxpr(group, ()), f"{name}_numpy"))
        return tuple(numpy_calls[0](*xs))

    namespace = {"_kernel": kernel, "_shape": tuple(shape), "_scalar": _scalar,
                 "_broadcast_to": np.broadcast_to, "_empty": np.empty,
                 "_refcount": sys.getrefcount, "_kept": _Kept(), "_run_split": _run_split,
                 "_watched": watched, "_reported": fp_status.reported,
                 "_status": fp_status.status(), "_numpy_tier": numpy_tier}
    namespace.update((f"_d{k}", d) for k, d in enumerate(dtypes))
    exec(compile(text, f"<functrans native call {name}>", "exec"), namespace)
    return namespace[name], source, seconds


def split_ufunc(e: Eqn) -> Callable | None:
    """For the exact lowering, where ``chunked.py`` cannot call the
    function's loop by address (float16; a loop that needs its data
    pointer): a ``transcendental`` equation over
    ``SPLIT_ELEMENTS`` or more, as the NumPy tier's own ufunc call made on
    chunks of the output's first axis by several threads (NumPy's loop
    releases the GIL), or None (smaller, one thread, or an operand of
    another shape or dtype, which the loop would read through NumPy's
    casting and broadcasting).  A ufunc's loop computes each element from
    that element alone, whatever the count and stride it is called with (as
    NumPy itself assumes where it calls a loop on buffered or strided
    pieces), so the values are the single call's.  The helper threads take
    the caller's ``np.errstate`` (NumPy keeps it per thread), so a
    floating-point error warns or raises as the single call would.  The
    result is written into the array of the call before when nothing else
    holds that."""
    found = native_ufunc(e)
    out = e.outputs[0].aval
    threads = _threads()
    if found is None or not may_differ(*found) or threads < 2 or not out.ndim \
            or math.prod(out.shape) < SPLIT_ELEMENTS:
        return None
    ufunc, dtypes = found
    if dtypes[-1] != out.dtype or any(type(a) is not Var or a.aval.shape != out.shape
                                      or a.aval.dtype != d for a, d in zip(e.inputs, dtypes)):
        return None
    shape, dtype = tuple(out.shape), out.dtype
    kept = _Kept()

    def call(*xs):
        held = kept.arrays
        if held is not None and _REFCOUNTS_EXACT and sys.getrefcount(held[0]) == 2:
            o = held[0]  # nothing but ``kept`` holds it
        else:
            o = np.empty(shape, dtype)
            kept.arrays = (o,)

        errors = np.geterr()

        def chunk(start: int, stop: int) -> None:
            with np.errstate(**errors):
                ufunc(*(x[start:stop] for x in xs), out=o[start:stop])

        _run_split(chunk, shape[0], threads, ())
        return (o,)

    return call
