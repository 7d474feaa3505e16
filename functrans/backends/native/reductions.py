"""Map-reduce kernels: a reduction whose operand a native group computes is
folded into the group's loop, so the mapped values are never written out.

Only where the result can be NumPy's bit for bit:

* sums, products, maxima and minima of integers and bools, and ``all`` /
  ``any`` of any real dtype, over any axes: integer arithmetic wraps, so the
  order of the terms does not change the result (each term is converted to
  the result's dtype first, as NumPy's reduction loop converts it);
* ``argmax`` / ``argmin`` along one axis: the first position of the extreme,
  or of the first NaN (NumPy's rule; ``-0.0`` and ``0.0`` tie);
* float32 and float64 sums of a whole vector, in NumPy's own order: its
  pairwise summation (blocks of at most 128 terms summed by eight running
  sums, halves of longer runs summed apart and added), checked once per
  process against ``np.add.reduce`` (``numpy_sums_pairwise``): a NumPy that
  sums in another order keeps these sums as NumPy calls.

Float products, maxima and minima, and float sums over some axes of an
array (whose order NumPy picks by memory layout) stay NumPy calls.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from functrans.backends.native.cache import _load_compiled
from functrans.backends.native.elementwise import (
    _call,
    _literal,
    _scalar,
    body,
    fusible,
    native_group,
    operand_types,
)
from functrans.backends.native.reducers import ARG, FOLDED, LOGICAL, UFUNCS, identity
from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Var, lookup_primitive

#: Terms NumPy's pairwise summation adds one by one before splitting a run.
_BLOCK = 128


def _pairwise_reference(values: np.ndarray) -> Any:
    """NumPy's pairwise sum of the vector ``values`` computed in Python, term
    by term in ``values.dtype`` (what the kernels do, for the check)."""
    zero = values.dtype.type(0.0)

    def run(lo: int, n: int):
        if n < 8:
            total = -zero
            for k in range(n):
                total = total + values[lo + k]
            return total
        if n <= _BLOCK:
            r = [values[lo + j] for j in range(8)]
            k = 8
            while k < n - n % 8:
                r = [r[j] + values[lo + k + j] for j in range(8)]
                k += 8
            total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            for k in range(n - n % 8, n):
                total = total + values[lo + k]
            return total
        half = n // 2
        half -= half % 8
        return run(lo, half) + run(lo + half, n - half)

    return zero + run(0, len(values))


@functools.cache
def numpy_sums_pairwise() -> bool:
    """Whether this NumPy sums float32 and float64 vectors in the order the
    kernels use, on terms of mixed magnitudes (where any other order rounds
    differently) at the lengths where the order changes shape."""
    rng = np.random.default_rng(20)
    for dtype in (np.float32, np.float64):
        for n in (0, 1, 7, 8, 9, 16, 127, 128, 129, 136, 257, 1000, 2051):
            x = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n)).astype(dtype)
            if np.add.reduce(x).tobytes() != _pairwise_reference(x).tobytes():
                return False
    return True


def fold_kind(r: Eqn) -> str | None:
    """How reduction ``r`` folds into a kernel: ``"exact"`` (integer and
    bool arithmetic, ``all``/``any``: any order of terms), ``"arg"``
    (argmax/argmin), ``"pairwise"`` (a float vector's sum in NumPy's
    order), or None (stays a NumPy call)."""
    name = r.primitive.name
    if name not in FOLDED or len(r.inputs) != 1 or type(r.inputs[0]) is not Var:
        return None
    x, out = r.inputs[0].aval, r.outputs[0].aval
    if x.dtype.kind not in "biuf" or x.dtype.itemsize < 4 and x.dtype.kind == "f":
        return None
    if name in ARG:
        return "arg" if out.dtype.kind in "iu" else None
    if name in LOGICAL:
        return "exact"
    if x.dtype.kind in "biu" and out.dtype.kind in "biu":
        return "exact"
    if (name == "reduce_sum" and x.dtype == out.dtype and x.ndim == 1
            and tuple(r.params["axes"]) == (0,) and numpy_sums_pairwise()):
        return "pairwise"
    return None


def folded(group: Jaxpr) -> bool:
    """Whether ``group`` is a map-reduce group (``fold_reductions``)."""
    return bool(group.eqns) and group.eqns[-1].primitive.name in FOLDED


def fold_reductions(closed: ClosedJaxpr, exact: bool = False) -> ClosedJaxpr:
    """``closed`` with each reduction of a native group's result that
    nothing else reads (``fold_kind``) made part of the group, at the
    group's place (a reduction reads nothing else).  The group's other
    results are still written.  ``exact``: as in ``elementwise.fusible``."""
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    if not any(e.primitive.name in FOLDED for e in eqns):
        return closed
    producer = {id(v): i for i, e in enumerate(eqns) for v in e.outputs}
    users: dict[int, int] = {}
    for e in eqns:
        for a in e.inputs:
            if type(a) is Var:
                users[id(a)] = users.get(id(a), 0) + 1
    for a in jaxpr.outvars:
        if type(a) is Var:
            users[id(a)] = users.get(id(a), 0) + 1
    fused_p = lookup_primitive("fused_elementwise")
    placed: dict[int, Eqn] = {}
    dropped: set[int] = set()
    for i, r in enumerate(eqns):
        if fold_kind(r) is None:
            continue
        y = r.inputs[0]
        g = producer.get(id(y), -1)
        if g < 0 or g in placed or users[id(y)] != 1:
            continue
        group = native_group(eqns[g], exact)
        if group is None or not all(fusible(m, exact) for m in group.eqns) or not y.aval.ndim:
            continue
        others = [v for v in group.outvars if v is not y]
        inner = Jaxpr((), group.invars, [*others, *r.outputs], [*group.eqns, r])
        placed[g] = Eqn(fused_p, tuple(group.invars), tuple(inner.outvars), {"jaxpr": inner})
        dropped.add(i)
    if not placed:
        return closed
    new = [placed.get(i, e) for i, e in enumerate(eqns) if i not in dropped]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, new), closed.consts)


def _step(name: str, acc: str, v: str, x: np.dtype, out: np.dtype, zero: str) -> str:
    """The accumulator ``acc`` updated by the term ``v`` (of dtype ``x``)."""
    if name in LOGICAL:
        test = v if x.kind == "b" else f"{v} != {zero}"
        return f"np.{LOGICAL[name].__name__}({acc}, {test})"
    if name in ("reduce_max", "reduce_min") and out.kind == "b":
        return f"{acc} | {v}" if name == "reduce_max" else f"{acc} & {v}"
    return f"np.{UFUNCS[name].__name__}({acc}, np.{out.name}({v}))"


def reduce_source(group: Jaxpr, scalars: Sequence[bool]) -> str:
    """Source of the map-reduce kernel of ``group`` (its last equation the
    reduction, the others an elementwise group over the reduction operand's
    shape): a function of that shape, arrays for the group's other outputs,
    the reduction's result (pre-filled with the identity for a reduction
    over some axes), for argmax/argmin an array of the best values so far,
    then the inputs."""
    r = group.eqns[-1]
    kind = fold_kind(r)
    y = r.inputs[0]
    x_dtype, out = y.aval.dtype, r.outputs[0].aval.dtype
    mapped = Jaxpr((), group.invars, [y, *group.outvars[:-1]], group.eqns[:-1])
    rank = y.aval.ndim
    axes = (r.params["axis"],) if kind == "arg" else tuple(r.params["axes"])
    kept = ", ".join(f"i{d}" for d in range(rank) if d not in axes) or "()"
    others = [f"o{k}" for k in range(len(group.outvars) - 1)]
    extra = ["best"] if kind == "arg" else []
    args = [f"a{k}" for k in range(len(group.invars))]
    name = r.primitive.name
    pad = " " * 16 if kind == "pairwise" else "    " * (rank + 1)
    globs, lines, values = body(mapped, scalars, pad)
    v, outs = values[0], values[1:]
    index = ", ".join(f"i{d}" for d in range(rank))
    stores = [f"{pad}{o}[{index}] = {text}" for o, text in zip(others, outs)]
    zero = _literal(0, x_dtype)
    globs.append(f"ZERO = {zero}")
    code: list[str] = []
    if kind == "pairwise":
        acc = out.name
        code += [
            f"    buf = np.empty({_BLOCK}, np.{acc})",
            "    st_lo = np.empty(192, np.int64)",
            "    st_n = np.empty(192, np.int64)",
            "    st_join = np.empty(192, np.bool_)",
            f"    sums = np.empty(192, np.{acc})",
            "    sp, vp = 1, 0",
            "    st_lo[0], st_n[0], st_join[0] = 0, shape[0], False",
            "    while sp > 0:  # NumPy's recursion, its pending halves on a stack",
            "        sp -= 1",
            "        lo, n = st_lo[sp], st_n[sp]",
            "        if st_join[sp]:",
            "            vp -= 1",
            "            sums[vp - 1] = sums[vp - 1] + sums[vp]",
            f"        elif n > {_BLOCK}:",
            "            half = n // 2",
            "            half -= half % 8",
            "            st_lo[sp], st_n[sp], st_join[sp] = lo, n, True",
            "            st_lo[sp + 1], st_n[sp + 1], st_join[sp + 1] = lo + half, n - half, False",
            "            st_lo[sp + 2], st_n[sp + 2], st_join[sp + 2] = lo, half, False",
            "            sp += 3",
            "        else:",
            # (unsigned indices: no test for a negative index on each read)
            "            for k in range(n):",
            "                i0 = np.uintp(lo + k)",
            *lines, *stores,
            f"{pad}buf[np.uintp(k)] = {v}",
            "            if n < 8:",
            "                total = -ZERO",
            "                for k in range(n):",
            "                    total = total + buf[np.uintp(k)]",
            "            else:",
            "                r0, r1, r2, r3 = buf[0], buf[1], buf[2], buf[3]",
            "                r4, r5, r6, r7 = buf[4], buf[5], buf[6], buf[7]",
            "                for k in range(8, n - n % 8, 8):",
            *[f"                    r{j} = r{j} + buf[np.uintp(k{f' + {j}' if j else ''})]"
              for j in range(8)],
            "                total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))",
            "                for k in range(n - n % 8, n):",
            "                    total = total + buf[np.uintp(k)]",
            "            sums[vp] = total",
            "            vp += 1",
            "    red[()] = ZERO + sums[0]",
        ]
    else:
        head = []
        loop_pad = "    "
        for d in range(rank):
            head.append(f"{loop_pad}for i{d} in range(shape[{d}]):")
            loop_pad += "    "
        if kind == "arg":
            a = axes[0]
            better = ">" if name == "argmax" else "<"
            test = f"v {better} c"
            if x_dtype.kind == "f":  # the first NaN wins, and stays
                test = f"c == c and (v != v or v {better} c)"
            step = [f"{pad}v = {v}",
                    f"{pad}if i{a} == 0:",
                    f"{pad}    best[{kept}] = v",
                    f"{pad}    red[{kept}] = 0",
                    f"{pad}else:",
                    f"{pad}    c = best[{kept}]",
                    f"{pad}    if {test}:",
                    f"{pad}        best[{kept}] = v",
                    f"{pad}        red[{kept}] = i{a}"]
            code += [*head, *lines, *stores, *step]
        elif kept == "()":  # a whole reduction: one running value
            globs.append(f"IDENTITY = {_literal(identity(name, out), out)}")
            code += ["    acc = IDENTITY", *head, *lines, *stores,
                     f"{pad}acc = {_step(name, 'acc', v, x_dtype, out, 'ZERO')}",
                     "    red[()] = acc"]
        else:
            code += [*head, *lines, *stores,
                     f"{pad}red[{kept}] = "
                     f"{_step(name, f'red[{kept}]', v, x_dtype, out, 'ZERO')}"]
    results = [*others, "red"]
    text = ["import numpy as np", "import numba", "", *globs, "",
            "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
            f"def kernel({', '.join(['shape', *others, 'red', *extra, *args])}):",
            *code, f"    return ({', '.join(results)},)"]
    return "\n".join(text) + "\n"


def _signature(group: Jaxpr, kinds: Sequence[str]) -> tuple:
    from numba import types
    from numba.np.numpy_support import from_dtype

    r = group.eqns[-1]
    y = r.inputs[0]
    rank = y.aval.ndim
    kept = r.outputs[0].aval.ndim
    sig: list[Any] = [types.UniTuple(types.int64, rank)]
    sig += [types.Array(from_dtype(v.aval.dtype), rank, "C") for v in group.outvars[:-1]]
    sig.append(types.Array(from_dtype(r.outputs[0].aval.dtype), kept, "C"))
    if fold_kind(r) == "arg":
        sig.append(types.Array(from_dtype(y.aval.dtype), kept, "C"))
    return tuple(sig + operand_types(group, kinds, rank))


def group_call(group: Jaxpr, name: str, folder: str = "") -> tuple[Callable, str, float]:
    """The Python function running a native ``group`` (map-reduce or not)
    through its kernel, the kernel source, and the compile seconds."""
    return reduce_call(group, name, folder) if folded(group) else _call(group, name, folder)


def reduce_call(group: Jaxpr, name: str, folder: str = "") -> tuple[Callable, str, float]:
    """The Python function running the map-reduce ``group`` through its
    kernel, the kernel source, and the seconds spent compiling it."""
    r = group.eqns[-1]
    kind = fold_kind(r)
    y = r.inputs[0]
    shape = tuple(y.aval.shape)
    out = r.outputs[0].aval
    kinds = ["scalar" if v.aval.ndim == 0 else "array" if v.aval.shape == shape else "broadcast"
             for v in group.invars]
    source = reduce_source(group, [k == "scalar" for k in kinds])
    kernel, seconds = _load_compiled(source, folder, _signature(group, kinds))
    args = [f"a{k}" for k in range(len(kinds))]
    passed = [f"_scalar({a})" if kind == "scalar" else
              f"_broadcast_to({a}, _shape)" if kind == "broadcast" else a
              for a, kind in zip(args, kinds)]
    arrays = [f"_empty(_shape, _d{k})" for k in range(len(group.outvars) - 1)]
    if kind == "exact" and out.ndim:
        start = identity(r.primitive.name, out.dtype)
        arrays.append(f"_full({tuple(out.shape)!r}, _dtype.type({start!r}), _dtype)")
    else:
        arrays.append(f"_empty({tuple(out.shape)!r}, _dtype)")
    if kind == "arg":
        arrays.append(f"_empty({tuple(out.shape)!r}, _x_dtype)")
    text = (f"def {name}({', '.join(args)}):\n"
            f"    return _kernel(_shape, {', '.join([*arrays, *passed])})\n")
    namespace = {"_kernel": kernel, "_shape": shape, "_scalar": _scalar,
                 "_broadcast_to": np.broadcast_to, "_empty": np.empty, "_full": np.full,
                 "_dtype": out.dtype, "_x_dtype": y.aval.dtype}
    namespace.update((f"_d{k}", v.aval.dtype) for k, v in enumerate(group.outvars[:-1]))
    exec(compile(text, f"<functrans native call {name}>", "exec"), namespace)
    return namespace[name], source, seconds
