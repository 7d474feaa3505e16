"""Scan and while loops as Numba kernels: the loop and its body in machine code."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from functrans.backends.native.cache import _load
from functrans.backends.native.elementwise import _KINDS, _literal, _scalar, native_ufunc
from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal, lookup_primitive

# -- scan loops ------------------------------------------------------------------
#
# A scan whose body is made of operations with an array-level native form
# (same-dtype elementwise ufuncs on operands of the result's shape or
# scalars, and matrix-vector, vector-matrix, matrix and outer products) runs
# as one kernel: the step loop and its body in machine code, each step's
# values Numba arrays, the stacked outputs written per step.  Anything else
# leaves the scan to the NumPy tier.


class _Constants:
    """The module-level constants of a generated kernel: ``constant(value,
    dtype)`` names a literal (``K0``, ``K1`` ..., one name per distinct text)
    and ``lines`` holds their assignments, written above the kernel."""

    def __init__(self):
        self._names: dict[str, str] = {}
        self.lines: list[str] = []

    def __call__(self, value, dtype) -> str:
        text = _literal(value, dtype)
        if text not in self._names:
            self._names[text] = f"K{len(self._names)}"
            self.lines.append(f"{self._names[text]} = {text}")
        return self._names[text]



def _dot_expr(e: Eqn, a: str, b: str) -> str | None:
    """``np.dot``/``np.outer`` of a ``dot_general`` without batch axes on
    float operands of one dtype, or None."""
    (contract, batch) = e.params["dimension_numbers"]
    x, y = (v.aval for v in e.inputs)
    dtype = e.outputs[0].aval.dtype
    if batch != ((), ()) or dtype.kind != "f" or x.dtype != dtype or y.dtype != dtype:
        return None
    if contract == ((x.ndim - 1,), (0,)) and x.ndim in (1, 2) and y.ndim in (1, 2):
        return f"np.dot({a}, {b})"
    if contract == ((), ()) and x.ndim == y.ndim == 1:
        return f"np.outer({a}, {b})"
    return None


def _cast(name: str, aval, dtype: np.dtype) -> str:
    """Operand ``name`` converted to the loop's ``dtype`` as NumPy converts it
    before the ufunc's loop (a safe cast ``resolve_dtypes`` chose), so
    Numba's own promotion of mixed operands never applies."""
    if aval.dtype == dtype:
        return name
    kind = f"np.{dtype.type.__name__}"
    return f"{name}.astype({kind})" if aval.ndim else f"{kind}({name})"


def _body_source(body: Jaxpr, names: dict[int, str], constant,
                 prefix: str = "t") -> list[str] | None:
    """Statements computing ``body``'s equations on Numba values named in
    ``names`` (extended with the results, named ``prefix`` and a number), or
    None if one has no array-level native form."""
    dot_p = lookup_primitive("dot_general")
    lines = []
    for n, e in enumerate(body.eqns):
        if any(type(a) is Literal and a.aval.ndim for a in e.inputs):
            return None
        if e.primitive is dot_p:
            if any(type(a) is Literal for a in e.inputs):
                return None
            expr = _dot_expr(e, *(names[id(a)] for a in e.inputs))
        else:
            found = native_ufunc(e)
            out = e.outputs[0].aval if found else None
            if found is None or out is None or found[1][-1] != out.dtype or any(
                    type(a) is not Literal and a.aval.shape not in (out.shape, ())
                    for a in e.inputs):
                return None
            ops = [constant(a.val, d) if type(a) is Literal else _cast(names[id(a)], a.aval, d)
                   for a, d in zip(e.inputs, found[1])]
            expr = f"np.{found[0].__name__}({', '.join(ops)})"
        if expr is None:
            return None
        names[id(e.outputs[0])] = f"{prefix}{n}"
        lines.append(f"{prefix}{n} = {expr}")
    return lines


def scan_source(closed_body: ClosedJaxpr, num_consts: int, num_carry: int,
                reverse: bool) -> str | None:
    """Source of a kernel running a whole scan, or None: a function of the
    trip count, the stacked outputs' shapes, the consts, the initial carry
    and the xs, returning the final carry and the stacked outputs."""
    body = closed_body.jaxpr
    if closed_body.consts or body.constvars:
        return None
    avals = [v.aval for v in (*body.invars, *body.outvars)]
    if any(a.dtype.kind not in _KINDS for a in avals):
        return None
    constant = _Constants()

    n_in = len(body.invars)
    args = [f"a{k}" for k in range(n_in)]
    names = {id(v): a for v, a in zip(body.invars, args)}
    for k in range(num_consts + num_carry, n_in):  # a step's xs: slices of the stacks
        names[id(body.invars[k])] = f"x{k}"
    statements = _body_source(body, names, constant)
    if statements is None:
        return None
    carry_in = body.invars[num_consts:num_consts + num_carry]
    outs = body.outvars
    ys = outs[num_carry:]

    def value(a) -> str:
        return constant(a.val, a.aval.dtype) if type(a) is Literal else names[id(a)]

    new_carry = [value(a) for a in outs[:num_carry]]
    new_ys = [value(a) for a in ys]  # (before the globals are written out)
    lines = ["import numpy as np", "import numba", "", *constant.lines, "",
             "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
             f"def kernel(length, {', '.join([f'ys{k}' for k in range(len(ys))] + args)}):"]
    lines.append("    for step in range(length):")
    lines.append(f"        i = length - 1 - step if {reverse} else step")
    lines += [f"        x{k} = a{k}[i]" for k in range(num_consts + num_carry, n_in)]
    lines += [f"        {st}" for st in statements]
    lines += [f"        ys{k}[i] = {y}" for k, y in enumerate(new_ys)]
    if num_carry:  # one assignment: a new carry may be another's old value
        lines.append(f"        {', '.join(names[id(v)] for v in carry_in)}, = "
                     f"{', '.join(new_carry)},")
    carry_out = ", ".join(f"a{num_consts + k}" for k in range(num_carry))
    ys_out = ", ".join(f"ys{k}" for k in range(len(ys)))
    lines.append(f"    return ({', '.join(x for x in (carry_out, ys_out) if x)},)")
    return "\n".join(lines) + "\n"


def while_source(cond: ClosedJaxpr, body: ClosedJaxpr, cond_nconsts: int,
                 body_nconsts: int) -> str | None:
    """Source of a kernel running a whole while loop, or None: a function of
    the cond consts, the body consts and the initial carry, returning the
    final carry.  The predicate and the body are both inlined in the loop."""
    if cond.consts or body.consts or cond.jaxpr.constvars or body.jaxpr.constvars:
        return None
    avals = [v.aval for j in (cond.jaxpr, body.jaxpr) for v in (*j.invars, *j.outvars)]
    if any(a.dtype.kind not in _KINDS for a in avals):
        return None
    constant = _Constants()

    num_carry = len(body.jaxpr.invars) - body_nconsts
    first = cond_nconsts + body_nconsts  # the carry's place among the operands
    args = [f"a{k}" for k in range(first + num_carry)]
    carry = args[first:]
    names = {id(v): a for v, a in zip(cond.jaxpr.invars, args[:cond_nconsts] + carry)}
    names.update((id(v), a) for v, a in zip(body.jaxpr.invars, args[cond_nconsts:]))
    test = _body_source(cond.jaxpr, names, constant, "p")
    step = _body_source(body.jaxpr, names, constant, "t")
    if test is None or step is None:
        return None

    def value(a) -> str:
        return constant(a.val, a.aval.dtype) if type(a) is Literal else names[id(a)]

    (pred,) = (value(a) for a in cond.jaxpr.outvars)
    new_carry = [value(a) for a in body.jaxpr.outvars]
    lines = ["import numpy as np", "import numba", "", *constant.lines, "",
             "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
             f"def kernel({', '.join(args)}):", "    while True:"]
    lines += [f"        {st}" for st in test]
    lines.append(f"        if not {pred}:")
    lines.append("            break")
    lines += [f"        {st}" for st in step]
    if num_carry:  # one assignment: a new carry may be another's old value
        lines.append(f"        {', '.join(carry)}, = {', '.join(new_carry)},")
    lines.append(f"    return ({''.join(c + ', ' for c in carry)})")
    return "\n".join(lines) + "\n"


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


def _wrapper(e: Eqn, name: str, kernel, lead: str, num_carry: int, namespace: dict) -> Callable:
    """The Python function calling ``kernel`` for equation ``e``: ``lead``
    (text) before its operands, rank-0 operands as scalars, arrays
    C-contiguous, the carries coming back as arrays of their dtype."""
    args = [f"a{k}" for k in range(len(e.inputs))]
    passed = [f"_scalar({a})" if v.aval.ndim == 0 else f"_contiguous({a})"
              for a, v in zip(args, e.inputs)]
    carry = [f"_asarray(r[{k}], _c{k})" for k in range(num_carry)]
    results = carry + [f"r[{k}]" for k in range(num_carry, len(e.outputs))]
    text = (f"def {name}({', '.join(args)}):\n"
            f"    r = _kernel({', '.join(x for x in (lead, *passed) if x)})\n"
            f"    return [{', '.join(results)}]\n")
    namespace.update({"_kernel": kernel, "_scalar": _scalar,
                      "_contiguous": np.ascontiguousarray, "_asarray": np.asarray})
    namespace.update((f"_c{k}", v.aval.dtype) for k, v in enumerate(e.outputs[:num_carry]))
    exec(compile(text, f"<functrans native loop {name}>", "exec"), namespace)
    return namespace[name]


def _while_call(e: Eqn, name: str, folder: str) -> tuple[Callable, str, float] | None:
    """The Python function running while equation ``e`` through one kernel,
    its source and compile seconds; None when the predicate or the body has
    no native form (the loop then stays the NumPy tier's)."""
    params = e.params
    source = while_source(params["cond_jaxpr"], params["body_jaxpr"], params["cond_nconsts"],
                          params["body_nconsts"])
    if source is None:
        return None
    found = _compiled(source, folder, tuple(_numba_type(a.aval) for a in e.inputs))
    if found is None:
        return None
    kernel, seconds = found
    return _wrapper(e, name, kernel, "", len(e.outputs), {}), source, seconds


def _scan_call(e: Eqn, name: str, folder: str) -> tuple[Callable, str, float] | None:
    """The Python function running scan equation ``e`` through one kernel,
    its source and compile seconds; None when the body has no native form
    or Numba cannot compile it (the scan then stays the NumPy tier's)."""
    params = e.params
    source = scan_source(params["jaxpr"], params["num_consts"], params["num_carry"],
                         params["reverse"])
    if source is None:
        return None
    from numba import types

    num_carry, length = params["num_carry"], params["length"]
    y_avals = [v.aval for v in e.outputs[num_carry:]]
    signature = (types.int64, *(_numba_type(a) for a in y_avals),
                 *(_numba_type(a.aval) for a in e.inputs))
    found = _compiled(source, folder, signature)
    if found is None:
        return None
    kernel, seconds = found
    stacks = ", ".join(f"_empty({tuple(a.shape)}, _d{k})" for k, a in enumerate(y_avals))
    namespace: dict = {"_empty": np.empty}
    namespace.update((f"_d{k}", a.dtype) for k, a in enumerate(y_avals))
    lead = ", ".join(x for x in (str(length), stacks) if x)
    return _wrapper(e, name, kernel, lead, num_carry, namespace), source, seconds
