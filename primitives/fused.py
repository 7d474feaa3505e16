"""``fused_elementwise``: a group of elementwise equations run as one.

The fusion pass (``functrans.passes.fuse``) replaces each maximal group
of elementwise equations over one shape by a single ``fused_elementwise``
equation whose param ``jaxpr`` holds the members; its outputs are the
members' values used outside the group.  On the GPU the group is one CUDA
kernel (the ``cuda`` rule generates it, see ``functrans.backends.cuda``), so
intermediates never travel through GPU memory; on the CPU the impl runs the
members one after the other.

The equation only appears in Jaxprs lowered for execution, but it has every
rule of a primitive: its JVP and batching rules unfold the members, so a
fused program can still be transformed.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Primitive, program_cache
from functrans.interpreters import sparsity
from functrans.interpreters.jvp import jvp_eval
from functrans.interpreters.vmap import batch_eval


def _fused_abstract_eval(*avals, jaxpr: Jaxpr):
    return [v.aval.strip_weak() for v in jaxpr.outvars]


def run_members(jaxpr: Jaxpr, args):
    """Each member's impl in turn (every member is elementwise, so plain
    NumPy calls), keeping only the values still needed."""
    env = {id(v): x for v, x in zip(jaxpr.invars, args)}
    for e in jaxpr.eqns:
        ins = [a.val if type(a) is Literal else env[id(a)] for a in e.inputs]
        env[id(e.outputs[0])] = e.primitive.impl(*ins, **e.params)
    return [a.val if type(a) is Literal else env[id(a)] for a in jaxpr.outvars]


# -- the CPU evaluation of large float64 groups with numexpr ----------------
#
# numexpr evaluates a whole expression blockwise, without temporaries, on
# every core.  Measured here (2 cores) on a 4-op chain with a sine, NumPy time
# over numexpr time: 0.55x at 1e3 elements, 1.2x at 1.6e4, 1.4x at 6.6e4,
# 2.6x at 2.6e5, 1.7x at 1e6; on whole programs, the gradient of
# sum(sin(x) x + x**2) at 1e6 went from 19.8 to 8.7 ms, while the Rosenbrock
# HVP at 1e5 (two outputs sharing work) went from 421 to 477 us.  So groups
# of at least 2**18 elements use it; only float64 groups, where numexpr
# computes exactly NumPy's dtypes.

NUMEXPR_MIN_SIZE = 1 << 18
_MAX_EXPRESSION = 4000  # inlining shared values must not blow the text up


def have_numexpr() -> bool:
    return importlib.util.find_spec("numexpr") is not None


def numexpr_template(e: Eqn) -> str | None:
    """The numexpr template of equation ``e`` (its primitive's, for its params)."""
    template = e.primitive.numexpr
    return template(**e.params) if callable(template) else template


def cpu_fusible(e: Eqn) -> bool:
    """The equations a numexpr group may hold: a numexpr template, one float64
    output of at least NUMEXPR_MIN_SIZE elements, operands that are Python
    numbers or float64 arrays of the output's shape."""
    if numexpr_template(e) is None or len(e.outputs) != 1:
        return False
    out = e.outputs[0].aval
    if out.dtype != np.float64 or out.size < NUMEXPR_MIN_SIZE:
        return False
    # Broadcast operands make numexpr iterate slowly: those stay NumPy ops.
    return all(
        type(a.val) in (int, float) if type(a) is Literal
        else a.aval.dtype == np.float64 and a.aval.shape == out.shape
        for a in e.inputs
    )


@program_cache(maxsize=256, max_equations=50_000)
def numexpr_plan(jaxpr: Jaxpr) -> tuple | None:
    """``(expressions, constants)``: one numexpr expression per group output
    over the inputs ``a0, a1 ...`` and the literals ``c0, c1 ...`` (members
    inlined into their users), and the literals' values; or None unless every
    member is one ``cpu_fusible`` accepts.  Literals are variables, not
    numbers in the text: numexpr turns a division by a number into a
    multiplication by its reciprocal, which rounds differently, and it has no
    NaN or inf literal."""
    names = {id(v): f"a{i}" for i, v in enumerate(jaxpr.invars)}
    exprs: dict[int, str] = {}
    constants: dict[str, float] = {}

    def text(a) -> str:
        if type(a) is Literal:
            name = f"c{len(constants)}"
            constants[name] = float(a.val)
            return name
        return names.get(id(a)) or exprs[id(a)]

    for e in jaxpr.eqns:
        template = numexpr_template(e)
        if template is None or not cpu_fusible(e):  # numexpr is exact only for these
            return None
        exprs[id(e.outputs[0])] = template.format(*map(text, e.inputs), **e.params)
    plan = tuple(text(a) for a in jaxpr.outvars)
    if any(len(p) > _MAX_EXPRESSION for p in plan):
        return None
    return plan, tuple(constants.items())


def _fused_impl(*args, jaxpr: Jaxpr):
    if not _streams(args, jaxpr.outvars[0].aval.shape):
        return run_members(jaxpr, args)
    plan = numexpr_plan(jaxpr)
    if plan is None or not have_numexpr():
        return run_members(jaxpr, args)
    import numexpr

    exprs, constants = plan
    local = {f"a{i}": x for i, x in enumerate(args)}
    local.update(constants)
    return [local[p] if p in local else numexpr.evaluate(p, local_dict=local, global_dict={})
            for p in exprs]


def _streams(args, shape) -> bool:
    """numexpr pays on contiguous operands of the result's shape (scalars
    aside); broadcast or strided operands are faster one NumPy op at a time
    (measured on the Rosenbrock Hessian and HVP programs)."""
    return all(
        type(x) is np.ndarray and (x.ndim == 0 or x.shape == shape)
        for x in args
    )


def _fused_jvp(primals, tangents, *, jaxpr):
    return jvp_eval(jaxpr, (), primals, tangents)


def _fused_batch(vals, dims, *, axis_size, jaxpr):
    return batch_eval(jaxpr, (), vals, dims, axis_size)


fused_elementwise_p = Primitive(
    "fused_elementwise",
    abstract_eval=_fused_abstract_eval,
    impl=_fused_impl,
    jvp=_fused_jvp,
    batch=_fused_batch,
    sparsity=lambda ins, *, jaxpr: sparsity.run_sub(ClosedJaxpr(jaxpr, ()), ins),
    multiple_results=True,
    doc=(
        "the elementwise equations of `jaxpr` run as one (one CUDA kernel on the GPU); its "
        "outputs are the members' values used outside the group"
    ),
)
