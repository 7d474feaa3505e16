"""GPU code generation, checked without a GPU: ``jit(f).lower(..., device="gpu")``,
the kernels of every elementwise primitive and of fused groups from real
transformed programs, compiled with nvcc (one call for all of them), and the
errors of the GPU path that need no GPU.

Compile tests skip when nvcc is missing; complex and float16 kernels also
need CuPy's headers (CuPy installed, no GPU needed) and are skipped without
them.  Tests needing CuPy and a GPU are in test_cupy.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _gpu_kernels import primitive_kernels, program_lowerings, rosenbrock, sds, softplus_sum
from functrans.primitives.elementwise import BINARY, UNARY, Cuda

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.backends import cuda
from functrans.backends import cupy as gpu
from functrans.core import Eqn, Primitive, registry
from functrans.errors import (
    DeviceError,
    DTypeError,
    GPUUnavailableError,
    KernelCompileError,
)

CHAIN = cuda.toolchain()
needs_nvcc = pytest.mark.skipif(CHAIN is None, reason="nvcc is not installed")


# --------------------------------------------------------------------------
# The table and the kernels of single primitives
# --------------------------------------------------------------------------


def test_every_elementwise_row_has_a_cuda_expression():
    missing = [r.name for r in UNARY + BINARY if r.cuda is None]
    assert not missing, f"rows without a cuda entry: {missing}"
    for name in [r.name for r in UNARY + BINARY] + ["integer_pow", "select",
                                                    "convert_element_type"]:
        assert isinstance(registry[name].cuda, Cuda), name


def test_kernels_exist_for_every_dtype_numpy_accepts():
    kernels = primitive_kernels()
    names = {k.eqns[0].primitive.name for k in kernels}
    assert {r.name for r in UNARY + BINARY} <= names
    by = {(k.eqns[0].primitive.name, k.inputs[0].dtype.name) for k in kernels}
    assert ("sin", "float16") in by and ("floordiv", "uint64") in by
    assert ("atan2", "float32") in by and ("eq", "complex128") in by


def test_float32_uses_single_precision_functions_and_literals():
    (k,) = ft.jit(lambda x: fnp.exp(fnp.sin(x) * 0.5)).lower(sds((8,)), device="gpu").kernels
    assert "sinf(in0)" in k.operation and "expf(" in k.operation
    assert "0.5f" in k.operation and "double" not in k.operation


def test_integer_division_and_remainder_use_numpys_rules():
    low = ft.jit(lambda a, b: (a // b, a % b)).lower(sds((4,), np.int32), sds((4,), np.int32),
                                                     device="gpu")
    ops = " ".join(k.operation for k in low.kernels)
    assert "ft_floordiv_s(" in ops and "ft_rem_s(" in ops
    assert "int floordiv" not in cuda.HELPERS  # helpers are templates
    assert "if (y == 0) return T(0);" in cuda.HELPERS


def test_literals_are_written_in_the_operand_dtype():
    assert cuda.c_literal(2.0, np.float32) == "2.0f"
    assert cuda.c_literal(-0.5, np.float64) == "(-0.5)"
    assert cuda.c_literal(np.inf, np.float32) == "__int_as_float(0x7f800000)"
    assert cuda.c_literal(-(2**63), np.int64) == "(-9223372036854775807LL - 1)"
    assert cuda.c_literal(3, np.uint8) == "((ft_uint8)3)"
    assert cuda.c_literal(1 + 2j, np.complex64) == "thrust::complex<float>(1.0f, 2.0f)"
    assert cuda.c_literal(True, np.bool_) == "true"


def test_float64_rounds_to_float16_once():
    """Through float32 first, 1 + 2**-11 + 2**-40 would round to 1 + 2**-11
    (a float16 halfway case), then to 1.0; NumPy rounds once, to 1 + 2**-10."""
    x = np.float64(1 + 2**-11 + 2**-40)
    assert np.float16(x) != np.float16(np.float32(x))
    (k,) = ft.jit(lambda v: v.astype(np.float16) * 2).lower(sds((4,), np.float64),
                                                           device="gpu").kernels
    assert "float16(in0)" in k.operation, k.operation
    (k,) = ft.jit(lambda v: v.astype(np.float16) * 2).lower(sds((4,), np.int16),
                                                           device="gpu").kernels
    assert "float16(static_cast<float>(" in k.operation, k.operation


# --------------------------------------------------------------------------
# Lowering real programs
# --------------------------------------------------------------------------


def test_lowering_for_the_gpu_fuses_and_exposes_kernels():
    low = ft.jit(ft.grad(rosenbrock)).lower(sds((16,)), device="gpu")
    assert low.device == "gpu"
    fused = [e for e in low.jaxpr.eqns if e.primitive.name == "fused_elementwise"]
    assert fused and len(low.kernels) >= len(fused)
    for k in low.kernels:
        assert re.fullmatch(r"ft_\w+_[0-9a-f]{10}", k.name)
        assert f'extern "C" __global__ void {k.name}(' in k.source
        assert k.source.startswith(cuda.CUPY_HEADERS)
        assert "CUPY_FOR(i, _ind.size())" in k.source
        assert all(line in k.source for line in k.operation.splitlines())
        assert all(isinstance(e, Eqn) for e in k.eqns) and k.eqns
        assert k.describe().startswith("{ lambda ")
    # The Python program calls the kernels by name and CuPy for the rest.
    assert all(k.name in low.source for k in low.kernels)
    assert "_to_device" in low.source


def test_cpu_lowering_has_no_kernels():
    low = ft.jit(lambda x: fnp.sin(x) * 2).lower(np.ones(3))
    assert low.device == "cpu" and low.kernels == [] and low.compile_check() == []


def test_broadcast_operands_become_views():
    def f(m, v):
        return fnp.exp(m) * v[:, None] + fnp.broadcast_to(v, (3, 3))

    (k,) = ft.jit(f).lower(sds((3, 3)), sds((3,)), device="gpu").kernels
    views = sorted(str(i.view) for i in k.inputs)
    assert views == ["(1, 3)", "(3, 1)", "None"] or "(1, 3)" in views
    assert "CArray<float, 2, 0, 1>" in k.source  # broadcast operands are not contiguous


def test_the_kernel_source_is_what_cupy_generates():
    """Up to whitespace, ``Kernel.source`` minus CuPy's headers is the text
    ``cupy.ElementwiseKernel`` generates for contiguous operands (CuPy imported,
    no GPU needed)."""
    kernel_mod = pytest.importorskip("cupy._core._kernel")
    carray = pytest.importorskip("cupy._core._carray")
    cp = pytest.importorskip("cupy")
    low = ft.jit(lambda x, n: fnp.sin(x) * n + 2.0).lower(sds((100,)), sds((100,), np.float16),
                                                         device="gpu")
    (k,) = low.kernels
    params = (kernel_mod._get_param_info(k.in_params, True)
              + kernel_mod._get_param_info(k.out_params, False)
              + (kernel_mod.ParameterInfo("CIndexer _ind", False),))
    ndarray_info = [kernel_mod._ArgInfo(1, cp.ndarray, np.dtype(d), 1, True, True)
                    for d in [i.dtype for i in k.inputs] + [a.dtype for a in k.out_avals]]
    arginfos = tuple(ndarray_info) + (kernel_mod._ArgInfo(2, carray.Indexer, None, 1, True,
                                                          True),)
    theirs = kernel_mod._get_elementwise_kernel_code(
        arginfos, kernel_mod._TypeMap(()), params, k.operation, k.name, k.preamble)
    mine = k.source[len(cuda.CUPY_HEADERS):]
    assert " ".join(theirs.split()) == " ".join(mine.split())


# --------------------------------------------------------------------------
# Compiling with nvcc
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compiled_kernels():
    """The kernels of every primitive, through nvcc's C++ front end in one
    call (to PTX: the front end is where generated code can go wrong, and
    it is the slow part), and those of the transformed programs to machine
    code in another."""
    if CHAIN is None:
        pytest.skip("nvcc is not installed")
    kernels = primitive_kernels()
    checked = cuda.compile_check(kernels, arch="90", chain=CHAIN, stage="ptx")
    programs = [k for low in program_lowerings() for k in low.kernels]
    checked += cuda.compile_check(programs, arch="90", chain=CHAIN)
    return kernels + programs, {k.name for k in checked}


@needs_nvcc
def test_every_primitive_kernel_compiles(compiled_kernels):
    kernels, checked = compiled_kernels
    for k in primitive_kernels():
        reason = cuda.skip_reason(k, CHAIN)
        assert k.name in checked or reason, f"{k.name} was not compiled"
    if CHAIN.include is None:
        pytest.skip("complex and float16 kernels were skipped: CuPy's headers are missing")


@needs_nvcc
def test_fused_kernels_of_transformed_programs_compile(compiled_kernels):
    _, checked = compiled_kernels
    lowerings = program_lowerings()
    fused = [k for low in lowerings for k in low.kernels if len(k.eqns) > 1]
    assert len(fused) >= 6
    assert all(k.name in checked for k in fused)


@needs_nvcc
def test_lowered_compile_check():
    low = ft.jit(ft.grad(softplus_sum)).lower(sds((8,)), device="gpu")
    assert [k.name for k in low.compile_check(arch="90")] == [k.name for k in low.kernels]


@pytest.fixture
def broken_primitive():
    prim = Primitive("test_gpu_broken", abstract_eval=lambda x: x, impl=lambda x: x,
                     cuda=Cuda({"f": "no_such_function(x)"}, args=("x",)))
    try:
        yield prim
    finally:
        del registry[prim.name]


@needs_nvcc
def test_a_kernel_that_fails_to_compile_shows_its_source_and_equations(broken_primitive):
    def f(x):
        return broken_primitive.bind(fnp.sin(x) * 2.0) + 1.0

    good = ft.jit(ft.grad(softplus_sum)).lower(sds((8,)), device="gpu").kernels
    low = ft.jit(f).lower(sds((8,)), device="gpu")
    (bad,) = low.kernels
    with pytest.raises(KernelCompileError) as info:
        cuda.compile_check(good + [bad])
    message = str(info.value)
    assert f"GPU kernel {bad.name} does not compile" in message
    assert "test_gpu_broken" in message and "sin" in message  # the equations
    assert "no_such_function" in message  # nvcc's error
    assert bad.source in message


def test_a_dtype_without_cuda_code_is_a_clear_error(broken_primitive):
    with pytest.raises(DTypeError, match=r"test_gpu_broken: the GPU backend has no CUDA code "
                                         r"for operands of type i32\[8\]"):
        ft.jit(broken_primitive.bind).lower(sds((8,), np.int32), device="gpu")


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="longdouble is double here")
def test_a_dtype_cuda_lacks_is_a_clear_error():
    with pytest.raises(DTypeError, match=r"no CUDA type for dtype float128.*convert with "
                                         r"\.astype\(\)"):
        ft.jit(lambda x: x * 2.0).lower(sds((3,), np.longdouble), device="gpu")


def test_unknown_devices_are_refused():
    with pytest.raises(DeviceError, match=r"unknown device 'tpu'"):
        ft.jit(lambda x: x).lower(sds((3,)), device="tpu")
    with pytest.raises(DeviceError, match=r"device_put: unknown device 'tpu'"):
        ft.device_put(np.ones(3), "tpu")


# --------------------------------------------------------------------------
# Without a GPU (or without CuPy)
# --------------------------------------------------------------------------

no_gpu = pytest.mark.skipif(gpu.gpu_available(), reason="a GPU is available")


@no_gpu
def test_without_a_gpu_device_put_and_gpu_executables_say_so():
    with pytest.raises(GPUUnavailableError, match=r"GPU"):
        ft.device_put(np.ones(3), "gpu")
    assert ft.devices() == ["cpu"]
    run = ft.jit(lambda x: fnp.sin(x)).lower(sds((3,)), device="gpu").compile()
    with pytest.raises(GPUUnavailableError):
        run(np.ones(3, np.float32))


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def test_importing_and_lowering_never_import_cupy():
    proc = _python("""
        import sys
        import numpy as np
        import functrans as ft, functrans.numpy as fnp
        fnp.sin(np.ones(3)); ft.grad(lambda x: fnp.sum(x * x))(np.ones(3))
        low = ft.jit(ft.grad(lambda x: fnp.sum(fnp.tanh(x)))).lower(
            ft.ShapeDtypeStruct((8,), np.float32), device="gpu")
        assert low.kernels and low.kernels[0].source
        assert "cupy" not in sys.modules, "functrans imported cupy"
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_cupy_array_type_loads_the_gpu_backend_lazily():
    proc = _python("""
        import sys
        import numpy as np
        import functrans as ft, functrans.numpy as fnp
        from functrans import core
        assert "functrans.backends.cupy" not in sys.modules
        Fake = type("ndarray", (), {"__module__": "cupy._core.core"})
        assert core.backend_of_type(Fake) is None   # not CuPy's real ndarray
        assert "functrans.backends.cupy" in sys.modules and "cupy" not in sys.modules
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_without_cupy_the_error_says_what_to_install():
    proc = _python("""
        import sys
        sys.modules["cupy"] = None  # as if CuPy were not installed
        import numpy as np
        import functrans as ft
        from functrans.errors import GPUUnavailableError
        assert ft.devices() == ["cpu"]
        try:
            ft.device_put(np.ones(3), "gpu")
        except GPUUnavailableError as e:
            print(e)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "needs CuPy" in proc.stdout and "pip install 'functrans[gpu]'" in proc.stdout


def test_the_fallback_headers_compile_real_kernels(tmp_path):
    """Without CuPy's headers, compile_check uses small stand-ins for CArray
    and CIndexer, and skips complex and float16 kernels with a reason."""
    if CHAIN is None:
        pytest.skip("nvcc is not installed")
    chain = cuda.Toolchain(CHAIN.nvcc, None)
    low = ft.jit(ft.grad(softplus_sum)).lower(sds((8,)), device="gpu")
    cplx = ft.jit(lambda z: z * z).lower(sds((4,), np.complex64), device="gpu")
    assert cuda.skip_reason(cplx.kernels[0], chain).startswith("complex kernels need CuPy")
    checked = cuda.compile_check(low.kernels + cplx.kernels, chain=chain)
    assert [k.name for k in checked] == [k.name for k in low.kernels]


def test_kernels_are_cached_by_structure():
    a = ft.jit(ft.grad(softplus_sum)).lower(sds((8,)), device="gpu").kernels
    b = ft.jit(ft.grad(softplus_sum)).lower(sds((9,)), device="gpu").kernels
    assert [k.name for k in a] == [k.name for k in b]  # shapes do not change the code
    c = ft.jit(ft.grad(softplus_sum)).lower(sds((8,), np.float64), device="gpu").kernels
    assert {k.name for k in a}.isdisjoint(k.name for k in c)


def test_kernel_inputs_name_the_group_inputs():
    low = ft.jit(lambda x, y: fnp.sin(x) * y + x).lower(sds((4,)), sds((4,)), device="gpu")
    (k,) = low.kernels
    assert [i.operand for i in k.inputs] == [0, 1]
    assert k.in_params == "float32 in0, float32 in1" and k.out_params == "float32 out0"
    assert [v.aval for v in k.invars] == [core.ShapedArray((4,), np.float32)] * 2


def test_float32_kernels_call_the_float_math_functions():
    import functrans.scipy.special as sps

    def f(x, y):
        return fnp.hypot(x, y) * fnp.trunc(x) + sps.erf(x) + sps.erfc(y) + sps.gammaln(y)

    x = np.ones(8, np.float32)
    (kernel,) = ft.jit(f).lower(x, x, device="gpu").kernels
    for name in ("hypotf(", "truncf(", "erff(", "erfcf(", "lgammaf("):
        assert name in kernel.source, name


def test_a_kernel_computing_in_float16_declares_it():
    """signbit of a bool operand computes in float16 (NumPy's loop) though no
    operand or result is float16: the kernel still includes CuPy's float16
    header, or nvcc stops at ``identifier "float16" is undefined``."""
    low = ft.jit(fnp.signbit).lower(sds((4,), np.bool_), device="gpu")
    (kernel,) = low.kernels
    assert "float16(" in kernel.source and np.dtype(np.float16) in kernel.dtypes
    assert '#include "cupy/float16.cuh"' in kernel.source
