"""The kernels and programs shared by the GPU code-generation tests
(tests/backends/gpu/test_lowering.py, test_nvrtc.py, test_host_semantics.py,
test_kernel_args.py): the kernel of every elementwise primitive in every
operand dtype, the lowerings of transformed real programs, and the losses whose
fused groups read broadcast operands."""

from __future__ import annotations

import numpy as np
from functrans.primitives.elementwise import UNARY, Cuda

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import cuda
from functrans.core import Eqn, Primitive, ShapedArray, ShapeDtypeStruct, Var, registry
from functrans.errors import FunctransError

DTYPES = [np.dtype(c) for c in "?bhilBHILefdFD"]


def sds(shape, dtype=np.float32):
    return ShapeDtypeStruct(shape, dtype)


# -- the kernels of single primitives --


def _arity(name: str, prim: Primitive) -> int:
    if name in ("integer_pow", "convert_element_type") or name in {r.name for r in UNARY}:
        return 1
    if name == "select":
        return 3
    loop = prim.cuda.loop
    return loop.nin if loop is not None else 1


def _params(name: str) -> list[dict]:
    if name == "integer_pow":  # the product, reciprocal and loop forms
        return [{"y": y} for y in (-5, -2, 0, 3, 7)]
    if name == "convert_element_type":
        return [{"new_dtype": d} for d in DTYPES]
    return [{}]


def primitive_kernels() -> list[cuda.Kernel]:
    """One kernel per elementwise primitive, operand dtype (all the dtypes
    its shape rule accepts) and param variant, plus mixed-dtype binaries."""
    kernels = []
    mixed = [("int32", "float32"), ("uint8", "int8"), ("float16", "complex64"),
             ("uint64", "int64"), ("int64", "uint64")]
    for name, prim in sorted(registry.items()):
        if not isinstance(prim.cuda, Cuda):
            continue
        n = _arity(name, prim)
        combos = [[d] * n for d in DTYPES]
        if n == 2:
            combos += [[np.dtype(a), np.dtype(b)] for a, b in mixed]
        if n == 3:
            combos = [[np.dtype(bool), d, d] for d in DTYPES]
        for dtypes in combos:
            avals = [ShapedArray((7,), d) for d in dtypes]
            for params in _params(name):
                try:
                    out = prim.abstract_eval(*avals, **params)
                except FunctransError:
                    continue  # NumPy has no loop for these dtypes: neither do we
                invars = tuple(Var(a) for a in avals)
                eqn = Eqn(prim, invars, (Var(out),), params)
                kernels.append(cuda.elementwise_kernel([eqn], invars, eqn.outputs, (7,)))
    return kernels


# -- lowerings of real programs --


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = fnp.tanh(x @ w1 + b1)
    out = h @ w2 + b2
    return fnp.sum((out - y) ** 2) + 1e-3 * fnp.sum(w1 * w1)


def softplus_sum(x):
    return fnp.sum(fnp.log1p(fnp.exp(-fnp.abs(x))) + fnp.maximum(x, 0.0))


def _mlp_args(dtype):
    shapes = [(4, 8), (8,), (8, 2), (2,)]
    return ([sds(s, dtype) for s in shapes], sds((4,), dtype), sds((2,), dtype))


def program_lowerings() -> list:
    """Lowerings of transformed programs whose fused groups the compile test
    checks: grad, hessian, vmap of grad, in float32 and float64."""
    out = []
    for dtype in (np.float32, np.float64):
        x = sds((16,), dtype)
        out.append(ft.jit(ft.grad(rosenbrock)).lower(x, device="gpu"))
        out.append(ft.jit(ft.hessian(rosenbrock)).lower(x, device="gpu"))
        out.append(ft.jit(ft.grad(softplus_sum)).lower(x, device="gpu"))
        out.append(ft.jit(ft.hessian(softplus_sum)).lower(sds((5,), dtype), device="gpu"))
        params, xe, ye = _mlp_args(dtype)
        per_example = ft.vmap(ft.grad(mlp_loss), in_axes=(None, 0, 0))
        out.append(ft.jit(per_example).lower(params, sds((32, 4), dtype), sds((32, 2), dtype),
                                             device="gpu"))
        out.append(ft.jit(ft.vmap(ft.grad(softplus_sum))).lower(sds((3, 6), dtype),
                                                               device="gpu"))
    return out


# -- losses whose fused groups read broadcast operands --


def softmax_loss(m):
    z = m - fnp.max(m, axis=1, keepdims=True)
    p = fnp.exp(z) / fnp.sum(fnp.exp(z), axis=1, keepdims=True)
    return fnp.sum(p * fnp.sin(m))


def layer_norm_loss(m):
    mu = fnp.mean(m, axis=1, keepdims=True)
    var = fnp.mean((m - mu) ** 2, axis=1, keepdims=True)
    return fnp.sum(fnp.tanh((m - mu) / fnp.sqrt(var + 1e-5)))


def row_sum_loss(m):
    return fnp.sum(fnp.exp(fnp.sum(m, axis=1))[:, None] * fnp.sin(m))


LOSSES = [softmax_loss, layer_norm_loss, row_sum_loss]
