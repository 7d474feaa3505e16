"""The GPU backend on a real GPU with CuPy (every test marked ``gpu``;
skipped without CuPy and a CUDA GPU).

* every elementwise primitive, for every dtype it takes, run eagerly on CuPy
  arrays against its NumPy impl on the same values;
* the fused programs of grad, hessian and vmap of grad, jitted on the GPU,
  against the CPU;
* what only a GPU shows: non-contiguous and broadcast operands, zero-size
  arrays, kernels cached across shapes, a kernel that fails to compile.

``python -m benchmarks.gpu_check`` runs this file, the GPU cases of
tests/backends/gpu/test_dispatch.py, and the GPU benchmarks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from functrans.primitives.elementwise import Cuda

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import cupy as gpu
from functrans.core import Primitive, ShapedArray, registry
from functrans.errors import FunctransError, KernelCompileError

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu.gpu_available(), reason="needs CuPy and a CUDA GPU"),
]

DTYPES = [np.dtype(c) for c in "?bhilBHILefdFD"]


def _values(dtype: np.dtype, n: int, rng) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        lo = -20 if dtype.kind == "i" else 0
        return rng.integers(lo, 20, n).astype(dtype)
    x = rng.uniform(-3, 3, n)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(-3, 3, n)
    return x.astype(dtype)


def _cases():
    for name, prim in sorted(registry.items()):
        if not isinstance(prim.cuda, Cuda):
            continue
        yield name


@pytest.mark.parametrize("name", list(_cases()))
def test_every_elementwise_primitive_matches_numpy_on_the_gpu(name):
    cp = gpu.cupy_module()
    prim = registry[name]
    rng = np.random.default_rng(0)
    arity = 3 if name == "select" else 1 if name in ("integer_pow", "convert_element_type") \
        else (prim.cuda.loop.nin if prim.cuda.loop is not None else 1)
    # Conversions to a sample of targets keep the count of kernels NVRTC
    # compiles on a first run in check (every pair is compile-checked and
    # run on the host in tests/backends/gpu/test_lowering.py and
    # tests/backends/gpu/test_host_semantics.py).
    params_list = ([{"y": y} for y in (-3, 0, 2, 5)] if name == "integer_pow" else
                   [{"new_dtype": np.dtype(d)} for d in "?bqIefdD"]
                   if name == "convert_element_type" else [{}])
    checked = 0
    for dtype in DTYPES:
        dtypes = [np.dtype(bool), dtype, dtype] if arity == 3 else [dtype] * arity
        for params in params_list:
            try:
                prim.abstract_eval(*[ShapedArray((64,), d) for d in dtypes], **params)
            except FunctransError:
                continue
            args = [_values(d, 64, rng) for d in dtypes]
            if name in ("integer_pow",) and dtype.kind in "biu" and params["y"] < 0:
                continue  # NumPy refuses negative integer powers of integers
            if name in ("pow", "scalar_pow") and dtype.kind in "iu":
                args[1] = np.abs(args[1]) % 5
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = prim.impl(*args, **params)
                got = prim.bind(*[cp.asarray(a) for a in args], **params)
            assert gpu.is_device_array(got)
            got = got.get()
            assert got.dtype == want.dtype, (name, dtype, params)
            if want.dtype.kind in "biu":
                np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype} {params}")
            else:
                part = np.dtype(want.dtype.char.lower())
                rtol = {2: 2e-3, 4: 2e-5, 8: 1e-12}[part.itemsize]
                np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True,
                                           err_msg=f"{name} {dtype} {params}")
            checked += 1
    assert checked


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def softplus_sum(x):
    return fnp.sum(fnp.log1p(fnp.exp(-fnp.abs(x))) + fnp.maximum(x, 0.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, make, shape", [
    ("grad", lambda f: ft.grad(f), (1000,)),
    ("hessian", lambda f: ft.hessian(f), (32,)),
    ("vmap_of_grad", lambda f: ft.vmap(ft.grad(f)), (8, 100)),
])
@pytest.mark.parametrize("f", [rosenbrock, softplus_sum])
def test_fused_programs_match_the_cpu(dtype, name, make, shape, f):
    x = np.random.default_rng(1).uniform(-1, 1.5, shape).astype(dtype)
    run = ft.jit(make(f))
    want = run(x)
    got = run(ft.device_put(x, "gpu"))
    assert gpu.is_device_array(got)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got.get(), want, rtol=rtol, atol=rtol)


def test_non_contiguous_and_broadcast_operands():
    cp = gpu.cupy_module()
    m = np.arange(24.0).reshape(4, 6) / 7
    md = cp.asarray(m)

    def f(a, row, col):  # fnp calls: on CuPy arrays, operators would be CuPy's own
        return fnp.add(fnp.multiply(fnp.sin(a), row), col)

    want = f(m.T, m[0, :4], m.T[:, :1])
    got = ft.jit(f)(md.T, md[0, :4], md.T[:, :1])  # a transposed view, a row, a column
    np.testing.assert_allclose(got.get(), want, rtol=1e-12)
    got = f(md.T, md[0, :4], md.T[:, :1])  # eagerly too
    np.testing.assert_allclose(got.get(), want, rtol=1e-12)


def test_zero_size_arrays():
    cp = gpu.cupy_module()
    x = cp.zeros((0, 3))
    assert ft.jit(lambda a: fnp.exp(a) * 2 + 1)(x).shape == (0, 3)
    assert fnp.sin(x).shape == (0, 3)


def test_kernels_are_shared_across_shapes():
    cp = gpu.cupy_module()
    f = ft.jit(ft.grad(softplus_sum))
    f(cp.ones(10))
    before = len(gpu._CUPY_KERNELS)
    f(cp.ones(1000))
    assert len(gpu._CUPY_KERNELS) == before


def test_a_kernel_that_fails_to_compile_on_the_gpu():
    cp = gpu.cupy_module()
    prim = Primitive("test_gpu_cupy_broken", abstract_eval=lambda x: x, impl=lambda x: x,
                     cuda=Cuda("no_such_function(x)", args=("x",)))
    try:
        with pytest.raises(KernelCompileError, match="no_such_function") as info:
            prim.bind(cp.ones(3))
        assert "It computes these equations" in str(info.value)
    finally:
        del registry[prim.name]


def test_results_stay_on_the_device():
    cp = gpu.cupy_module()
    x = cp.linspace(-1, 1, 16)
    for out in (ft.grad(rosenbrock)(x), ft.hessian(rosenbrock)(x[:4]),
                ft.jit(rosenbrock)(x), fnp.sum(x)):
        assert isinstance(out, cp.ndarray)
