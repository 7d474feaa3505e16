"""The reference backend: evaluate a Jaxpr on NumPy arrays by calling each
primitive's NumPy impl in order.

Unlike ``core.eval_jaxpr``, which binds (and so re-traces under an active
trace), this calls the impls directly and drops each intermediate as soon as
its last use has run, so peak memory follows the program's live values.
"""

from __future__ import annotations

import functools
import keyword
import math
from typing import Any

import numpy as np

from functrans.core import ClosedJaxpr, Jaxpr, Literal


def as_array(x: Any) -> np.ndarray:
    return x if type(x) is np.ndarray else np.asarray(x)


def last_uses(jaxpr: Jaxpr) -> list[list[int]]:
    """For each equation, the ids of the variables whose last use it is."""
    last: dict[int, int] = {}
    for i, e in enumerate(jaxpr.eqns):
        for a in e.inputs:
            if type(a) is not Literal:
                last[id(a)] = i
    keep = {id(a) for a in jaxpr.outvars if type(a) is not Literal}
    out: list[list[int]] = [[] for _ in jaxpr.eqns]
    for vid, i in last.items():
        if vid not in keep:
            out[i].append(vid)
    return out


def eval_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[Any]:
    """Run ``closed`` on concrete arrays and return its outputs as a list."""
    jaxpr = closed.jaxpr
    env: dict[int, Any] = {}
    for v, x in zip(jaxpr.constvars, closed.consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x
    drops = last_uses(jaxpr)
    for e, dead in zip(jaxpr.eqns, drops):
        ins = [a.val if type(a) is Literal else env[id(a)] for a in e.inputs]
        out = e.primitive.impl(*ins, **e.params)
        if e.primitive.multiple_results:
            for v, x in zip(e.outputs, out):
                env[id(v)] = x
        else:
            env[id(e.outputs[0])] = out
        for vid in dead:
            env.pop(vid, None)
    return [a.val if type(a) is Literal else env[id(a)] for a in jaxpr.outvars]



class Compiled:
    """A Jaxpr compiled to one straight-line Python function calling NumPy.

    ``source`` is the generated code; the impls, params and constants it
    uses are bound in its namespace.  Intermediates are deleted right after
    their last use, so peak memory follows the program's live values.
    """

    def __init__(self, closed: ClosedJaxpr, name: str = "compiled"):
        self.jaxpr = closed
        name = _identifier(name)
        self.source, namespace = generate_source(closed, name)
        exec(compile(self.source, f"<functrans:{name}>", "exec"), namespace)
        self.fn = namespace[name]

    def __call__(self, *args: Any) -> list[Any]:
        return self.fn(*args)


@functools.lru_cache(maxsize=1024)
def compiled(closed: ClosedJaxpr) -> Compiled:
    """The compiled form of ``closed``, cached: the transforms hand back the
    same (cached) Jaxprs call after call, so their code is generated once."""
    return Compiled(closed)


def _identifier(name: str) -> str:
    ident = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "compiled"
    if ident[0].isdigit() or keyword.iskeyword(ident):
        return f"f_{ident}"
    return ident


def generate_source(closed: ClosedJaxpr, name: str) -> tuple[str, dict]:
    """Python source of ``closed`` as a function, and the namespace it needs."""
    jaxpr = closed.jaxpr
    name = _identifier(name)
    namespace: dict[str, Any] = {"_asarray": as_array}
    names: dict[int, str] = {}
    callables: dict[Any, str] = {}

    def constant(value: Any, prefix: str) -> str:
        key = f"{prefix}{len(namespace)}"
        namespace[key] = value
        return key

    def local(v) -> str:
        names[id(v)] = f"v{len(names)}"
        return names[id(v)]

    def ref(a) -> str:
        if type(a) is Literal:
            val = a.val
            if type(val) in (bool, int) or (type(val) is float and math.isfinite(val)):
                return repr(val)
            return constant(val, "k")
        return names[id(a)]

    for v, c in zip(jaxpr.constvars, closed.consts):
        names[id(v)] = constant(c, "c")
    args = [local(v) for v in jaxpr.invars]
    lines = [f"def {name}({', '.join(args)}):"]
    for e, dead in zip(jaxpr.eqns, last_uses(jaxpr)):
        fn = _callable(e)
        fn_name = callables.get(fn)
        if fn_name is None:
            fn_name = callables[fn] = constant(fn, "f")
        outs = [local(v) for v in e.outputs]
        call = f"{fn_name}({', '.join(ref(a) for a in e.inputs)})"
        if e.primitive.multiple_results:
            lhs = ", ".join(outs) + "," if outs else "_"
        else:
            lhs = outs[0]
        lines.append(f"    {lhs} = {call}")
        dead_locals = [names[i] for i in dead if names[i].startswith("v")]
        if dead_locals:
            lines.append(f"    del {', '.join(dead_locals)}")
    # NumPy returns scalars for 0-d results; anything with an axis is an array.
    results = ", ".join(
        f"_asarray({ref(a)})" if type(a) is Literal or not a.aval.shape else ref(a)
        for a in jaxpr.outvars
    )
    lines.append(f"    return [{results}]")
    return "\n".join(lines) + "\n", namespace


class _Bound:
    """``impl`` with its params bound; equal for equal (impl, params), so the
    generated code names each distinct operation once."""

    __slots__ = ("fn", "key", "params")

    def __init__(self, impl, params: dict):
        self.fn = impl
        self.params = params
        self.key = (impl, tuple(sorted(params.items(), key=lambda kv: kv[0])))

    def __call__(self, *args):
        return self.fn(*args, **self.params)

    def __eq__(self, other):
        return type(other) is _Bound and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def _callable(e):
    if e.primitive.numpy_kernel is not None:
        kernel = e.primitive.numpy_kernel([a.aval for a in e.inputs], **e.params)
        if kernel is not None:
            return kernel
    if not e.params:
        return e.primitive.numpy_fn or e.primitive.impl
    try:
        bound = _Bound(e.primitive.impl, e.params)
        hash(bound)
        return bound
    except TypeError:
        return functools.partial(e.primitive.impl, **e.params)
