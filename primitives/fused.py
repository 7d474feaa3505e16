"""``fused_elementwise``: a group of elementwise equations run as one.

The fusion pass (``functrans.transforms.fuse``) replaces each maximal group
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

from functrans.core import Jaxpr, Literal, Primitive


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


def _fused_jvp(primals, tangents, *, jaxpr):
    from functrans.transforms.jvp import jvp_eval

    return jvp_eval(jaxpr, (), primals, tangents)


def _fused_batch(vals, dims, *, axis_size, jaxpr):
    from functrans.transforms.vmap import batch_eval

    return batch_eval(jaxpr, (), vals, dims, axis_size)


def _fused_cuda(jaxpr: Jaxpr):
    """The group's kernel (a ``functrans.backends.cuda.Kernel``)."""
    from functrans.backends.cuda import jaxpr_kernel

    return jaxpr_kernel(jaxpr)


fused_elementwise_p = Primitive(
    "fused_elementwise",
    abstract_eval=_fused_abstract_eval,
    impl=lambda *args, jaxpr: run_members(jaxpr, args),
    jvp=_fused_jvp,
    batch=_fused_batch,
    cuda=_fused_cuda,
    multiple_results=True,
)
