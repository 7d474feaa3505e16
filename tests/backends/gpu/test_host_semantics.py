"""What the generated CUDA C computes, checked on the CPU.

Every elementwise primitive's kernel (each operand dtype, each param form)
has its ``operation`` compiled by nvcc as host code, all in one shared
library (the ``ft_*`` helpers and CuPy's ``thrust::complex`` are host code
too), then run on edge values (signed zeros, infinities, NaN, the extreme
integers, negative divisors) and compared with the primitive's NumPy impl:
the same dtypes, the same values, NaN where NumPy gives NaN, the sign of
zero where NumPy keeps it.  Host and device math libraries differ in the
last place at most, well within the tolerances here.

float16 kernels are left out (CuPy's float16 type is device code), and so
are conversions of NaN, infinities and out-of-range floats to integers,
which C leaves undefined and NumPy answers arbitrarily.  Skipped without
nvcc or without CuPy's headers.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
import warnings

import numpy as np
import pytest
from _gpu_kernels import primitive_kernels, program_lowerings

from functrans import core
from functrans.backends import cuda

CHAIN = cuda.toolchain()
pytestmark = pytest.mark.skipif(
    CHAIN is None or CHAIN.include is None,
    reason="needs nvcc and CuPy's headers (for thrust::complex)",
)

_HOST_PRELUDE = r"""#define FUNCTRANS_FN inline __host__ __device__
#include <cupy/complex.cuh>
#include <cmath>
#include <cstring>
// Host stand-ins for the device intrinsics that spell infinities and NaN.
inline float ft_host_int_as_float(unsigned int b) { float f; memcpy(&f, &b, 4); return f; }
inline double ft_host_ll_as_double(unsigned long long b) {
  double d; memcpy(&d, &b, 8); return d;
}
#define __int_as_float(b) ft_host_int_as_float((unsigned int)(b))
#define __longlong_as_double(b) ft_host_ll_as_double((unsigned long long)(b))
"""


def _storage(dtype: np.dtype) -> str:
    return cuda._STORAGE_CTYPE[np.dtype(dtype).name]


def _host_function(k: cuda.Kernel) -> str:
    lines = [f'extern "C" void {k.name}(void** args, long n, const long* steps) {{',
             "  for (long i = 0; i < n; ++i) {"]
    for j, spec in enumerate(k.inputs):
        t = _storage(spec.dtype)
        lines.append(f"    const {t} &in{j} = ((const {t}*)args[{j}])[i * steps[{j}]];")
    for j, a in enumerate(k.out_avals):
        t = _storage(a.dtype)
        lines.append(f"    {t} &out{j} = (({t}*)args[{len(k.inputs) + j}])[i];")
    lines += ["    " + line for line in k.operation.splitlines()]
    lines += ["  }", "}"]
    return "\n".join(lines)


def _host_kernels(kernels) -> list[cuda.Kernel]:
    # float16 in the operands or inside (a float16 loop, as signbit's for int8).
    out = [k for k in kernels
           if np.dtype(np.float16) not in k.dtypes and "float16(" not in k.operation]
    return list({k.name: k for k in out}.values())


def _program_kernels() -> list[cuda.Kernel]:
    return [k for low in program_lowerings() for k in low.kernels]


@pytest.fixture(scope="module")
def library():
    kernels = _host_kernels(primitive_kernels() + _program_kernels())
    source = _HOST_PRELUDE + cuda.HELPERS + "\n".join(_host_function(k) for k in kernels)
    with tempfile.TemporaryDirectory(prefix="functrans_host_") as tmp:
        path = os.path.join(tmp, "host.cu")
        with open(path, "w") as f:
            f.write(source)
        lib_path = os.path.join(tmp, "host.so")
        proc = subprocess.run(
            [CHAIN.nvcc, "-shared", "-Xcompiler", "-fPIC", "--std=c++17", "-w", "-O1",
             f"-I{CHAIN.include}", "-o", lib_path, path],
            capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]
        lib = ctypes.CDLL(lib_path)
    return kernels, lib


# -- operand values --------------------------------------------------------------------------


def _pool(dtype: np.dtype, finite: bool = False) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        vals = [0, 1, 2, 3, 7, info.max, info.max - 1]
        if dtype.kind == "i":
            vals += [-1, -2, -3, -7, info.min, info.min + 1]
        return np.array(vals, dtype)
    big = 1e30 if dtype in (np.float32, np.complex64) else 1e300
    reals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 7.25, -big]
    if not finite:
        reals += [np.inf, -np.inf, np.nan]
    if dtype.kind == "f":
        return np.array(reals, dtype)
    imags = [0.0, 1.0, -0.5, 2.0, -3.0, 0.25, -1.0, 0.0, 4.0, 1.5] + (
        [] if finite else [np.nan, 1.0, np.inf])
    out = np.empty(len(imags), dtype)
    out.real, out.imag = reals[: len(imags)], imags
    return out


_TRANSCENDENTAL = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan",
                   "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                   "arctanh", "sqrt", "logistic", "pow", "scalar_pow", "sign", "integer_pow",
                   "div"}


def _operands(k: cuda.Kernel) -> list[np.ndarray]:
    e = k.eqns[0]
    name = e.primitive.name
    dtypes = [spec.dtype for spec in k.inputs]
    finite = name in _TRANSCENDENTAL and any(d.kind == "c" for d in dtypes)
    pools = [_pool(d, finite) for d in dtypes]
    if name == "convert_element_type":
        target = e.params["new_dtype"]
        (x,) = pools
        if target.kind in "iu" and x.dtype.kind in "fc":
            info = np.iinfo(target)
            r = x.real
            x = x[np.isfinite(r) & (r >= info.min) & (r <= info.max)]
            x = x[np.isfinite(x.imag)] if x.dtype.kind == "c" else x
        return [x]
    if name in ("pow", "scalar_pow") and dtypes[0].kind in "iu":
        base = np.array([0, 1, 2, 3, 7] + ([-1, -2, -3] if dtypes[0].kind == "i" else []),
                        dtypes[0])
        exps = np.array([0, 1, 2, 3, 5], dtypes[1])
        pools = [base, exps]
    if name == "integer_pow" and dtypes[0].kind in "biu":
        if e.params["y"] < 0:
            return [np.array([], dtypes[0])]  # NumPy refuses negative powers of integers
        pools = [np.array([0, 1, 2, 3] + ([-2, -3] if dtypes[0].kind == "i" else []),
                          dtypes[0])]
    if len(pools) == 1:
        return pools
    grids = np.meshgrid(*pools, indexing="ij")
    return [g.ravel() for g in grids]


def _run(lib, k: cuda.Kernel, operands: list[np.ndarray]) -> list[np.ndarray]:
    n = len(operands[0])
    ins = [np.ascontiguousarray(x) for x in operands]
    outs = [np.empty(n, a.dtype) for a in k.out_avals]
    ptrs = (ctypes.c_void_p * (len(ins) + len(outs)))(
        *[x.ctypes.data for x in ins + outs])
    steps = (ctypes.c_long * len(ins))(*[1] * len(ins))
    fn = getattr(lib, k.name)
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_long, ctypes.POINTER(ctypes.c_long)]
    fn(ptrs, n, steps)
    return outs


#: Where CUDA's math library and SciPy's differ at single points, by
#: (primitive, operand value): the kernel's answer is kept and documented.
KNOWN_DIFFERENCES = {
    ("erfinv", "-0.0"): "CUDA keeps the sign of zero (erfinv(-0) = -0); SciPy gives +0",
    ("lgamma", "-inf"): "CUDA follows C (lgamma(-inf) = +inf); SciPy's gammaln gives -inf",
}


def _known(name: str, operands, i: np.ndarray) -> np.ndarray:
    keys = [(name, ", ".join(repr(float(x[j])) if x.dtype.kind == "f" else repr(x[j])
                             for x in operands)) for j in i]
    return np.array([key in KNOWN_DIFFERENCES for key in keys], bool)


def _compare(k: cuda.Kernel, operands, got, want) -> None:
    e = k.eqns[0]
    what = f"{e.primitive.name}{e.params or ''} on {[x.dtype.name for x in operands]}"
    want = np.asarray(want)
    assert got.dtype == want.dtype, what
    if want.dtype.kind in "biu":
        bad = got != want
    else:
        part = np.dtype(want.dtype.char.lower())
        rtol = 2e-5 if part.itemsize <= 4 else 1e-12
        if e.primitive.name in _TRANSCENDENTAL and want.dtype.kind == "c":
            rtol *= 10
        bad = np.zeros(want.shape, bool)
        for g, w in ((got.real, want.real), (got.imag, want.imag)) if want.dtype.kind == "c" \
                else ((got, want),):
            close = np.isclose(g, w, rtol=rtol, atol=rtol * 1e-3, equal_nan=True)
            same_inf = (g == w)
            bad |= ~(close | same_inf)
            if want.dtype.kind == "f" and e.primitive.name not in _TRANSCENDENTAL:
                bad |= (w == 0) & (g == 0) & (np.signbit(g) != np.signbit(w))
    if bad.any():
        i = np.flatnonzero(bad)
        i = i[~_known(e.primitive.name, operands, i)][:5]
    if bad.any() and len(i):
        args = [x[i] for x in operands]
        raise AssertionError(f"{what}: at operands {args} the kernel gives {got[i]}, NumPy "
                             f"{want[i]}\n{k.operation}")


def test_the_cuda_expressions_compute_what_numpy_computes(library):
    kernels, lib = library
    failures = []
    for k in _host_kernels(primitive_kernels()):
        operands = _operands(k)
        if not len(operands[0]):
            continue
        e = k.eqns[0]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = e.primitive.impl(*operands, **e.params)
        (got,) = _run(lib, k, operands)
        try:
            _compare(k, operands, got, want)
        except AssertionError as err:
            failures.append(str(err))
    assert not failures, f"{len(failures)} kernels differ from NumPy:\n" + "\n\n".join(
        failures[:12])


def test_fused_kernels_compute_what_their_equations_compute(library):
    """The kernels of fused groups from grad, hessian and vmap-of-grad
    programs, on random operands (broadcast to the group's shape, as CuPy
    indexes them), against their member equations run with NumPy."""
    _, lib = library
    rng = np.random.default_rng(0)
    kernels = [k for k in _host_kernels(_program_kernels()) if len(k.eqns) > 1]
    assert len(kernels) >= 6
    for k in kernels:
        env, operands = {}, []
        for spec in k.inputs:
            var = k.invars[spec.operand]
            dtype = var.aval.dtype
            if id(var) not in env:
                value = rng.uniform(-1.5, 1.5, var.aval.shape) if dtype.kind != "b" \
                    else rng.random(var.aval.shape) < 0.5
                env[id(var)] = np.asarray(value).astype(dtype)
            view = env[id(var)] if spec.view is None else env[id(var)].reshape(spec.view)
            operands.append(np.broadcast_to(view, k.shape).ravel())
        for e in k.eqns:
            ins = [a.val if type(a) is not core.Var else env[id(a)] for a in e.inputs]
            env[id(e.outputs[0])] = e.primitive.impl(*ins, **e.params)
        got = _run(lib, k, operands)
        for g, v in zip(got, k.outvars):
            want = np.broadcast_to(env[id(v)], k.shape).ravel()
            rtol = 1e-4 if v.aval.dtype == np.float32 else 1e-11
            np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol,
                                       err_msg=f"{k.name}\n{k.operation}")


# -- comparisons across signedness, out-of-range literals, float to unsigned ----------------


def _host_library(kernels, tmp_path):
    unique = list({k.name: k for k in kernels}.values())
    source = _HOST_PRELUDE + cuda.HELPERS + "\n".join(_host_function(k) for k in unique)
    path, lib_path = tmp_path / "host.cu", tmp_path / "host.so"
    path.write_text(source)
    proc = subprocess.run(
        [CHAIN.nvcc, "-shared", "-Xcompiler", "-fPIC", "--std=c++17", "-w", "-O1",
         f"-I{CHAIN.include}", "-o", str(lib_path), str(path)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return ctypes.CDLL(str(lib_path))


def _run_group(lib, k: cuda.Kernel, operands: list[np.ndarray]) -> list[np.ndarray]:
    """``_run`` with the group's operands (a kernel passes only those it reads)."""
    n = len(operands[0])
    ins = [np.ascontiguousarray(operands[i.operand]) for i in k.inputs]
    outs = [np.empty(n, a.dtype) for a in k.out_avals]
    ptrs = (ctypes.c_void_p * (len(ins) + len(outs)))(*[x.ctypes.data for x in ins + outs])
    steps = (ctypes.c_long * max(len(ins), 1))(*[1] * max(len(ins), 1))
    fn = getattr(lib, k.name)
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_long, ctypes.POINTER(ctypes.c_long)]
    fn(ptrs, n, steps)
    return outs


def _lowered(f, *avals):
    import functrans as ft

    (k,) = ft.jit(f).lower(*[ft.ShapeDtypeStruct((8,), a) for a in avals], device="gpu").kernels
    return k


_COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                "gt": np.greater, "ge": np.greater_equal}


def test_uint64_and_int64_compare_exactly(tmp_path):
    """NumPy has mixed (uint64, int64) comparison loops; in C the int64 would
    be converted to unsigned (5 < -1 is true)."""
    u = np.array([0, 1, 5, 2**63 - 1, 2**63, 2**64 - 1], np.uint64)
    s = np.array([-(2**63), -1, 0, 1, 5, 2**63 - 1], np.int64)
    uu, ss = (g.ravel() for g in np.meshgrid(u, s, indexing="ij"))
    cases = []
    for fn in _COMPARISONS.values():
        cases.append((_lowered(fn, np.uint64, np.int64), (uu, ss), fn(uu, ss)))
        cases.append((_lowered(fn, np.int64, np.uint64), (ss, uu), fn(ss, uu)))
    lib = _host_library([k for k, _, _ in cases], tmp_path)
    for k, operands, want in cases:
        assert "ft_signed(" in k.operation, k.operation
        (got,) = _run_group(lib, k, list(operands))
        bad = np.flatnonzero(got != want)
        assert not len(bad), f"{k.operation}: at {[x[bad] for x in operands]}"


_LITERALS = [-(2**63) - 1, -129, -1, 0, 127, 128, 255, 256, 300, 2**63, 2**64 - 1, 2**64]


def test_out_of_range_integer_literals_compare_as_numpy_does(tmp_path):
    """``x < -1`` for a uint8 ``x`` is False everywhere in NumPy 2; written
    in uint8 the literal would wrap to 255."""
    cases = []
    for dtype in (np.uint8, np.int8, np.uint32, np.int64, np.uint64):
        pool = _pool(np.dtype(dtype))
        for c in _LITERALS:
            for name, fn in _COMPARISONS.items():
                def f(x, fn=fn, c=c):
                    return fn(x, c)

                cases.append((_lowered(f, dtype), pool, fn(pool, c), (dtype, name, c)))
    lib = _host_library([k for k, _, _, _ in cases], tmp_path)
    for k, pool, want, what in cases:
        (got,) = _run_group(lib, k, [pool])
        assert (got == want).all(), f"{what}: {k.operation}\n{pool}, {got}, {want}"


def test_arithmetic_with_out_of_range_literals_raises_as_numpy_does():
    x = np.arange(3, dtype=np.uint8)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        x + 300
    with pytest.raises(OverflowError, match=r"add with the Python integer 300: Python integer "
                                            r"300 out of bounds for uint8 \(NumPy refuses it "
                                            r"too\); convert the operand with \.astype\(\)"):
        _lowered(lambda v: v + 300, np.uint8)
    with pytest.raises(OverflowError, match=r"mul with the Python integer -1"):
        _lowered(lambda v: v * -1, np.uint16)


def test_floats_convert_to_small_and_unsigned_integers_as_numpy_does(tmp_path):
    """The device's conversions to unsigned and to 8- and 16-bit integers
    saturate (-2.5 -> 0 for uint8); NumPy truncates towards zero to a 64-bit
    integer and wraps (-2.5 -> 254), and so do the kernels, through int64
    (above 2**63, directly for uint64)."""
    import functrans.numpy as fnp

    values = np.array([-2.5, -1.0, -0.0, 0.75, 200.5, 300.7, 70000.2, -70000.5, 1e9, -1e9])
    targets = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16]
    cases = []
    for src in (np.float64, np.float32):
        x = values.astype(src)
        for dst in targets:
            k = _lowered(lambda v, dst=dst: fnp.asarray(v).astype(dst), src)
            assert "static_cast<long long>" in k.operation or "ft_float_to_uint64" in \
                k.operation, k.operation
            cases.append((k, x, x.astype(np.int64).astype(dst)))
        k = _lowered(lambda v: fnp.asarray(v).astype(np.uint64), src)
        big = np.array([2.0**63, 2.0**63 + 2**12, 1.5e19], src)
        cases.append((k, big, big.astype(np.uint64)))
    lib = _host_library([k for k, _, _ in cases], tmp_path)
    for k, x, want in cases:
        with np.errstate(invalid="ignore"):
            (got,) = _run_group(lib, k, [x])
        assert got.tolist() == want.tolist(), (k.operation, x, got, want)
        if want.dtype.kind == "u" and x[0] < 0:
            assert got[0] == np.iinfo(want.dtype).max - 1  # -2.5 wraps to max - 1
