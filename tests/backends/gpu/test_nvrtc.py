"""The generated kernels compiled as CuPy compiles them on a GPU, without one.

``cuda.nvrtc_check`` takes CuPy's own source generator
(``_get_elementwise_kernel_code``), CuPy's headers and compiler options
(its bundled CCCL, ``-ftz=true``, the device as the default execution
space) and NVRTC, the compiler CuPy calls at run time.  The nvcc check of
tests/backends/gpu/test_lowering.py uses the system's CCCL and no ``-ftz``; this one is
the GPU's code path up to loading the binary.

Needs CuPy and the NVRTC library (``pip install 'functrans[nvrtc]'``), no
GPU; skipped without them.  By default the fused kernels of the transformed
programs and a sample of the per-primitive kernels are compiled (seconds);
with ``FUNCTRANS_NVRTC_ALL=1`` (set by ``python -m benchmarks.gpu_check``)
every per-primitive kernel.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from _gpu_kernels import LOSSES, primitive_kernels, program_lowerings
from functrans.primitives.elementwise import Cuda

import functrans as ft
from functrans.backends import cuda
from functrans.core import Primitive, registry
from functrans.errors import KernelCompileError

REASON = cuda.nvrtc_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"no NVRTC: {REASON}")

#: The sample compiled by default: every primitive in these operand dtypes.
SAMPLE_DTYPES = {"float16", "float32", "complex128", "uint64"}


def _sample(kernels):
    if os.environ.get("FUNCTRANS_NVRTC_ALL") == "1":
        return kernels
    seen, out = set(), []
    for k in kernels:
        key = (k.eqns[0].primitive.name, tuple(i.dtype.name for i in k.inputs))
        mixed = {i.dtype.name for i in k.inputs} == {"uint64", "int64"}
        if key not in seen and (key[1] and key[1][0] in SAMPLE_DTYPES or mixed):
            seen.add(key)
            out.append(k)
    return out


def test_cupys_source_is_the_kernels_source():
    for low in program_lowerings()[:3]:
        for k in low.kernels:
            assert " ".join(cuda.cupy_kernel_code(k).split()) == " ".join(k.source.split())


def test_cupys_options_flush_subnormals():
    options = cuda.nvrtc_options("90")
    assert "-ftz=true" in options and "-arch=sm_90" in options
    assert any(o.startswith("--std=c++") for o in options)


def test_program_kernels_compile_with_nvrtc():
    kernels = [k for low in program_lowerings() for k in low.kernels]
    for loss in LOSSES:
        for transform in (ft.grad, ft.hessian):
            kernels += ft.jit(transform(loss)).lower(
                ft.ShapeDtypeStruct((3, 4), np.float64), device="gpu").kernels
    assert len(cuda.nvrtc_check(kernels)) >= 20


def test_primitive_kernels_compile_with_nvrtc():
    kernels = _sample(primitive_kernels())
    assert len(kernels) >= 80
    assert len(cuda.nvrtc_check(kernels)) == len({k.name for k in kernels})


def test_eager_kernels_with_scalar_operands_compile_with_nvrtc():
    from functrans import core

    prim = registry["mul"]
    avals = [core.ShapedArray((5,), np.dtype(np.float32)), core.get_aval(2.0)]
    invars = tuple(core.Var(a) for a in avals)
    out = core.Var(prim.abstract_eval(*avals))
    eqn = core.Eqn(prim, invars, (out,), {})
    k = cuda.elementwise_kernel([eqn], invars, (out,), (5,), (False, True))
    assert "const double in1" in cuda.cupy_kernel_code(k)
    assert cuda.nvrtc_check([k]) == [k]


def test_a_kernel_nvrtc_refuses_names_itself():
    prim = Primitive("test_gpu_nvrtc_broken", abstract_eval=lambda x: x, impl=lambda x: x,
                     cuda=Cuda({"f": "no_such_function(x)"}, args=("x",)))
    try:
        good = ft.jit(ft.grad(LOSSES[0])).lower(np.ones((3, 4)), device="gpu").kernels
        (bad,) = ft.jit(prim.bind).lower(np.ones(3), device="gpu").kernels
        with pytest.raises(KernelCompileError) as info:
            cuda.nvrtc_check(good + [bad])
        message = str(info.value)
        assert f"GPU kernel {bad.name} does not compile" in message
        assert "NVRTC says" in message and "no_such_function" in message
    finally:
        del registry[prim.name]
