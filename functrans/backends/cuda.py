"""CUDA C for elementwise equations, generated without CuPy or a GPU.

A group of elementwise equations (one equation, for an eager call, or a
fused group from ``functrans.passes.fuse``) becomes one ``Kernel``: the
``in_params``, ``out_params``, ``operation`` and ``preamble`` that
``cupy.ElementwiseKernel`` takes, and the complete ``.cu`` text CuPy would
compile from them (``Kernel.source``), so that any machine with ``nvcc``
can compile-check what the GPU will run (``compile_check``).

Each equation contributes one line, ``<C type> tK = <expression>;``, from
its primitive's ``cuda`` rule (``primitives.elementwise.Cuda``): operands are
converted to the NumPy loop dtype first, so the C code computes in the
dtypes NumPy computes in.  Two C-level notes:

* float32 calls the f-suffixed C functions (``sinf``), derived here from
  the double form of the rule, and float literals carry an ``f``; float16
  is computed in float within a kernel and rounded when stored or converted.
* complex numbers are CuPy's ``thrust::complex`` (from CuPy's headers).

The ``ft_*`` helpers (``HELPERS``) give NumPy's results where C's differ:
floor division and remainder signs, division by zero for integers, integer
powers, and the lexicographic, NaN-aware ordering of complex numbers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any, NamedTuple, Sequence

import numpy as np

from functrans.core import Eqn, Jaxpr, Literal, ShapedArray, Var, pp_jaxpr, program_cache
from functrans.dtypes import short_name
from functrans.errors import DTypeError, KernelCompileError

# -- C types --------------------------------------------------------------------

# Compute types are single tokens (``ft_int8`` for ``signed char``, typedefs
# in HELPERS), so that rules can write functional casts such as ``{T}(1)``.
_COMPUTE_CTYPE = {
    "bool": "bool",
    "int8": "ft_int8", "int16": "short", "int32": "int", "int64": "ft_int64",
    "uint8": "ft_uint8", "uint16": "ft_uint16", "uint32": "unsigned", "uint64": "ft_uint64",
    "float16": "float", "float32": "float", "float64": "double",
    "complex64": "thrust::complex<float>", "complex128": "thrust::complex<double>",
}  # fmt: skip
#: CuPy's names of the storage types (``cupy._core._scalar.get_typename``).
_STORAGE_CTYPE = dict(
    _COMPUTE_CTYPE, int8="signed char", int64="long long", uint8="unsigned char",
    uint16="unsigned short", uint32="unsigned int", uint64="unsigned long long",
    float16="float16",
)
SUPPORTED_DTYPES = tuple(np.dtype(n) for n in _COMPUTE_CTYPE)


def check_dtype(dtype: np.dtype, where: str) -> None:
    """A DTypeError unless CUDA kernels can hold ``dtype``."""
    if np.dtype(dtype).name not in _COMPUTE_CTYPE:
        names = ", ".join(short_name(d) for d in SUPPORTED_DTYPES)
        raise DTypeError(
            f"{where}: the GPU backend has no CUDA type for dtype {np.dtype(dtype).name}; "
            f"GPU kernels take {names}; convert with .astype() first, or run on the CPU"
        )


def ctype(dtype: np.dtype) -> str:
    """The C type values of ``dtype`` are computed in."""
    return _COMPUTE_CTYPE[np.dtype(dtype).name]


def real_ctype(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    return ctype(np.dtype(dtype.char.lower())) if dtype.kind == "c" else ctype(dtype)


# -- literals and conversions ------------------------------------------------------

_FLOAT_BITS = {
    # value class: (float expression, double expression)
    "inf": ("__int_as_float(0x7f800000)", "__longlong_as_double(0x7ff0000000000000LL)"),
    "-inf": ("__int_as_float(0xff800000)", "__longlong_as_double(0xfff0000000000000ULL)"),
    "nan": ("__int_as_float(0x7fc00000)", "__longlong_as_double(0x7ff8000000000000LL)"),
}


def _float_literal(value: float, single: bool) -> str:
    if not np.isfinite(value):
        key = "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
        return _FLOAT_BITS[key][0 if single else 1]
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    text += "f" if single else ""
    return f"({text})" if text.startswith("-") else text


def c_literal(value: Any, dtype: np.dtype) -> str:
    """``value`` converted to ``dtype`` (as NumPy converts it) as a C expression."""
    dtype = np.dtype(dtype)
    v = np.asarray(value).astype(dtype)[()]
    kind, name = dtype.kind, dtype.name
    if kind == "b":
        return "true" if v else "false"
    if kind in "iu":
        n = int(v)
        if name in ("int64", "uint64"):
            if n == -(2**63):
                return "(-9223372036854775807LL - 1)"
            return f"{n}{'ULL' if kind == 'u' else 'LL'}" if n >= 0 else f"({n}LL)"
        if name == "int32":
            return "(-2147483647 - 1)" if n == -(2**31) else (f"({n})" if n < 0 else str(n))
        if name == "uint32":
            return f"{n}U"
        return f"(({ctype(dtype)}){n})"
    if kind == "f":
        return _float_literal(float(v), dtype.itemsize <= 4)
    single = dtype.itemsize <= 8
    re_, im = _float_literal(float(v.real), single), _float_literal(float(v.imag), single)
    return f"{ctype(dtype)}({re_}, {im})"


def cast(expr: str, src: np.dtype, dst: np.dtype) -> str:
    """C code converting ``expr`` (computed as ``src``) to ``dst`` as NumPy's
    ``astype`` does (complex to real keeps the real part)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return expr
    if dst.kind == "b":
        if src.kind == "c":
            return f"(({expr}).real() != 0 || ({expr}).imag() != 0)"
        return f"(({expr}) != 0)"
    if dst.kind == "c":
        return f"{ctype(dst)}({expr})"
    if src.kind == "c":
        expr = f"({expr}).real()"
    if dst == np.float16:  # round to half precision, then compute in float
        if ctype(src) == "double":  # once: through float, halfway cases would round twice
            return f"static_cast<float>(float16({expr}))"
        return f"static_cast<float>(float16(static_cast<float>({expr})))"
    if ctype(src) == ctype(dst) and src.kind != "c":
        return expr
    if src.kind in "fc" and dst.kind in "iu" and dst.itemsize < 8 and dst != np.int32:
        # The device's float to narrow integer conversions saturate (-2.5 ->
        # 0 for uint8, 300.0 -> 127 for int8); NumPy truncates to a 64-bit
        # integer and wraps, as x86-64 does.
        return f"static_cast<{ctype(dst)}>(static_cast<long long>({expr}))"
    if src.kind in "fc" and dst == np.uint64:
        # Below 2**63 through int64, so that negative values wrap as in NumPy.
        return (f"ft_float_to_uint64({expr})")
    return f"static_cast<{ctype(dst)}>({expr})"


_MATH_FUNCTIONS = (
    "sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 expm1 log log2 "
    "log10 log1p sqrt cbrt fabs floor ceil rint trunc fmod pow atan2 copysign hypot erf erfc "
    "erfinv lgamma"
).split()
_F32_NAMES = re.compile(r"\b(" + "|".join(_MATH_FUNCTIONS) + r")\(")


def single_precision(expr: str) -> str:
    """``sin(x)`` -> ``sinf(x)``: the float (not double) C math functions."""
    return _F32_NAMES.sub(lambda m: m.group(1) + "f(", expr)


def instantiate_template(template: str, dtype: np.dtype, args: dict[str, str]) -> str:
    """A rule's expression for operands computed as ``dtype``, with the
    operand names replaced by ``args`` (C expressions)."""
    dtype = np.dtype(dtype)
    text = template.replace("{T}", ctype(dtype)).replace("{R}", real_ctype(dtype))
    if not args:
        return text
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, args)) + r")\b")
    text = pattern.sub(lambda m: args[m.group(1)], text)
    if dtype.kind == "f" and dtype.itemsize <= 4:
        text = single_precision(text)
    return text


# -- helpers every kernel may call -----------------------------------------------------

HELPERS = r"""#ifndef FUNCTRANS_HELPERS
#define FUNCTRANS_HELPERS
// functrans: one-token names of the integer types, and NumPy's results
// where C's differ.
#ifndef FUNCTRANS_FN
#define FUNCTRANS_FN __device__ __forceinline__
#endif
typedef signed char ft_int8;
typedef unsigned char ft_uint8;
typedef unsigned short ft_uint16;
typedef long long ft_int64;
typedef unsigned long long ft_uint64;
// Integer floor division and remainder: by 0 they give 0, MIN // -1 wraps.
template <typename T> FUNCTRANS_FN T ft_floordiv_s(T x, T y) {
  if (y == 0) return T(0);
  if (y == T(-1)) return T(0ULL - (unsigned long long)x);
  T q = T(x / y);
  return (((x > 0) != (y > 0)) && T(q * y) != x) ? T(q - 1) : q;
}
template <typename T> FUNCTRANS_FN T ft_floordiv_u(T x, T y) {
  return y == 0 ? T(0) : T(x / y);
}
template <typename T> FUNCTRANS_FN T ft_rem_s(T x, T y) {
  if (y == 0 || y == T(-1)) return T(0);
  T r = T(x % y);
  return ((x > 0) == (y > 0) || r == 0) ? r : T(r + y);
}
template <typename T> FUNCTRANS_FN T ft_rem_u(T x, T y) {
  return y == 0 ? T(0) : T(x % y);
}
// Float floor division and remainder: NumPy's npy_divmod.
template <typename T> FUNCTRANS_FN T ft_floordiv_f(T a, T b) {
  if (b == 0) return a / b;
  T mod = fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
  if (div == 0) return copysign(T(0), a / b);
  T q = floor(div);
  return (div - q > T(0.5)) ? T(q + T(1)) : q;
}
template <typename T> FUNCTRANS_FN T ft_rem_f(T a, T b) {
  T mod = fmod(a, b);
  if (b == 0) return mod;
  if (mod == 0) return copysign(T(0), b);
  return ((b < 0) != (mod < 0)) ? T(mod + b) : mod;
}
// Integer powers by squaring; a negative power of an integer truncates
// towards zero (NumPy refuses it).
template <typename T> FUNCTRANS_FN T ft_ipow(T x, long long n) {
  if (n < 0) return x == T(1) ? T(1) : (x == T(-1) ? ((n & 1) ? T(-1) : T(1)) : T(0));
  T out = T(1);
  while (n) { if (n & 1) out = T(out * x); x = T(x * x); n >>= 1; }
  return out;
}
// Float to uint64 as NumPy converts on x86-64: below 2**63 through int64
// (negative values wrap), above it directly.
template <typename T> FUNCTRANS_FN ft_uint64 ft_float_to_uint64(T x) {
  return x >= T(9223372036854775808.0) ? (ft_uint64)x : (ft_uint64)(ft_int64)x;
}
// NumPy compares uint64 with int64 exactly (its mixed loops); C would
// convert the int64 to unsigned (5 < -1).  ft_signed(x) marks the int64
// operand of such a comparison.
struct ft_signed_i64 { ft_int64 v; };
FUNCTRANS_FN ft_signed_i64 ft_signed(ft_int64 v) { ft_signed_i64 s; s.v = v; return s; }
#define FT_MIXED_COMPARE(op, if_negative_right, if_negative_left) \
  FUNCTRANS_FN bool operator op(ft_uint64 a, ft_signed_i64 b) { \
    return b.v < 0 ? if_negative_right : a op (ft_uint64)b.v; } \
  FUNCTRANS_FN bool operator op(ft_signed_i64 a, ft_uint64 b) { \
    return a.v < 0 ? if_negative_left : (ft_uint64)a.v op b; }
FT_MIXED_COMPARE(<, false, true)
FT_MIXED_COMPARE(<=, false, true)
FT_MIXED_COMPARE(>, true, false)
FT_MIXED_COMPARE(>=, true, false)
FT_MIXED_COMPARE(==, false, false)
FT_MIXED_COMPARE(!=, true, true)
#undef FT_MIXED_COMPARE
#ifndef FUNCTRANS_NO_COMPLEX
// Complex division as NumPy's loops do it (Smith's method; by 0 it divides
// each part by 0).
template <typename T>
FUNCTRANS_FN thrust::complex<T> ft_cdiv(thrust::complex<T> a, thrust::complex<T> b) {
  const T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  const T abs_br = br < 0 ? -br : br, abs_bi = bi < 0 ? -bi : bi;
  if (abs_br >= abs_bi) {
    if (abs_br == 0 && abs_bi == 0) return thrust::complex<T>(ar / abs_br, ai / abs_br);
    const T rat = bi / br, scl = T(1) / (br + bi * rat);
    return thrust::complex<T>((ar + ai * rat) * scl, (ai - ar * rat) * scl);
  }
  const T rat = br / bi, scl = T(1) / (bi + br * rat);
  return thrust::complex<T>((ar * rat + ai) * scl, (ai * rat - ar) * scl);
}
// Complex powers as NumPy's npy_cpow: x**0 is 1, 0**y is 0 where Re y > 0
// and NaN otherwise, small integer exponents multiply (by squaring, without
// C99's infinity recovery), the rest is thrust's pow.
template <typename T>
FUNCTRANS_FN thrust::complex<T> ft_cmul(thrust::complex<T> a, thrust::complex<T> b) {
  return thrust::complex<T>(a.real() * b.real() - a.imag() * b.imag(),
                            a.real() * b.imag() + a.imag() * b.real());
}
template <typename T>
FUNCTRANS_FN thrust::complex<T> ft_cpow_n(thrust::complex<T> a, long long n) {
  if (n == 0) return thrust::complex<T>(T(1), T(0));
  if (a.real() == 0 && a.imag() == 0) {
    return n > 0 ? thrust::complex<T>(T(0), T(0)) : thrust::complex<T>(T(nan("")), T(nan("")));
  }
  if (n == 1) return a;
  if (n == 2) return ft_cmul(a, a);
  if (n == 3) return ft_cmul(a, ft_cmul(a, a));
  if (n > -100 && n < 100) {
    long long m = n < 0 ? -n : n, mask = 1;
    thrust::complex<T> acc(T(1), T(0)), p = a;
    while (true) {
      if (m & mask) acc = ft_cmul(acc, p);
      mask <<= 1;
      if (m < mask) break;
      p = ft_cmul(p, p);
    }
    return n < 0 ? ft_cdiv(thrust::complex<T>(T(1), T(0)), acc) : acc;
  }
  return pow(a, thrust::complex<T>(T(n), T(0)));
}
template <typename T>
FUNCTRANS_FN thrust::complex<T> ft_cpow(thrust::complex<T> a, thrust::complex<T> b) {
  if (b.real() == 0 && b.imag() == 0) return thrust::complex<T>(T(1), T(0));
  if (a.real() == 0 && a.imag() == 0) {
    return b.real() > 0 ? thrust::complex<T>(T(0), T(0))
                        : thrust::complex<T>(T(nan("")), T(nan("")));
  }
  if (b.imag() == 0 && b.real() == T((long long)b.real()) && b.real() > -100 && b.real() < 100) {
    return ft_cpow_n(a, (long long)b.real());
  }
  return pow(a, b);
}
// Complex order: lexicographic, NaN-aware, as NumPy's CLT/CLE.
template <typename T>
FUNCTRANS_FN bool ft_clt(thrust::complex<T> x, thrust::complex<T> y) {
  return (x.real() < y.real() && !isnan(x.imag()) && !isnan(y.imag())) ||
         (x.real() == y.real() && x.imag() < y.imag());
}
template <typename T>
FUNCTRANS_FN bool ft_cle(thrust::complex<T> x, thrust::complex<T> y) {
  return (x.real() < y.real() && !isnan(x.imag()) && !isnan(y.imag())) ||
         (x.real() == y.real() && x.imag() <= y.imag());
}
template <typename T>
FUNCTRANS_FN thrust::complex<T> ft_cmax(thrust::complex<T> x, thrust::complex<T> y) {
  return (ft_cle(y, x) || isnan(x.real()) || isnan(x.imag())) ? x : y;
}
template <typename T>
FUNCTRANS_FN thrust::complex<T> ft_cmin(thrust::complex<T> x, thrust::complex<T> y) {
  return (ft_cle(x, y) || isnan(x.real()) || isnan(x.imag())) ? x : y;
}
#endif
#endif
"""

#: What ``cupy.ElementwiseKernel`` puts before every kernel (CuPy's headers).
CUPY_HEADERS = (
    "#include <cupy/complex.cuh>\n#include <cupy/carray.cuh>\n"
    "#include <cupy/atomics.cuh>\n#include <cupy/math_constants.h>\n"
)
_FLOAT16_DECL = '#include "cupy/float16.cuh"\n'


# -- kernels ---------------------------------------------------------------------------


class KernelInput(NamedTuple):
    """One operand of a kernel: the position of its value among the group's
    inputs, its dtype, the shape its array is viewed as before the call
    (None: as it is; CuPy broadcasts it like NumPy), whether it is a scalar
    (a Python or NumPy scalar, passed by value) rather than an array, and
    its shape."""

    operand: int
    dtype: np.dtype
    view: tuple[int, ...] | None
    scalar: bool
    shape: tuple[int, ...]


class Kernel:
    """One ``cupy.ElementwiseKernel``: ``name``, ``in_params``, ``out_params``,
    ``operation`` and ``preamble`` as CuPy takes them; ``inputs`` and
    ``out_avals`` say how to call it; ``eqns`` are the equations it computes
    (from ``invars`` to ``outvars``); ``source`` is the complete ``.cu`` text
    CuPy compiles for arrays of ``shape`` (contiguous where not broadcast)."""

    def __init__(self, name, inputs, out_avals, operation, eqns, shape, invars=(), outvars=(),
                 loop_dtypes=()):
        self.name: str = name
        self.inputs: tuple[KernelInput, ...] = tuple(inputs)
        self.out_avals: tuple[ShapedArray, ...] = tuple(out_avals)
        self.operation: str = operation
        self.preamble: str = HELPERS
        self.eqns: tuple[Eqn, ...] = tuple(eqns)
        self.invars: tuple = tuple(invars)  # the group's inputs (``inputs[j].operand``)
        self.outvars: tuple = tuple(outvars)
        self.shape: tuple[int, ...] = tuple(shape)
        # The dtypes equations compute in and produce (bool's signbit computes in
        # float16): their C types need declaring even where no operand has them.
        self.loop_dtypes: frozenset[np.dtype] = frozenset(loop_dtypes)
        self.in_params = ", ".join(
            f"{i.dtype.name} in{k}" for k, i in enumerate(self.inputs))
        self.out_params = ", ".join(
            f"{a.dtype.name} out{k}" for k, a in enumerate(self.out_avals))
        self._source: str | None = None

    @property
    def dtypes(self) -> set[np.dtype]:
        return ({i.dtype for i in self.inputs} | {a.dtype for a in self.out_avals}
                | self.loop_dtypes)

    @property
    def source(self) -> str:
        if self._source is None:
            self._source = _cu_source(self)
        return self._source

    def describe(self) -> str:
        """The equations of the kernel, one per line, as in a printed Jaxpr."""
        return describe_eqns(self.eqns)

    def __repr__(self):
        return f"Kernel({self.name}: {len(self.eqns)} equations, {len(self.inputs)} inputs)"


def describe_eqns(eqns: Sequence[Eqn]) -> str:
    invars: list = []
    defined: set[int] = set()
    for e in eqns:
        for a in e.inputs:
            if type(a) is Var and id(a) not in defined and a not in invars:
                invars.append(a)
        defined.update(id(v) for v in e.outputs)
    outs = [v for v in eqns[-1].outputs] if eqns else []
    return pp_jaxpr(Jaxpr((), invars, outs, eqns))


def _broadcasts(kernel: Kernel) -> bool:
    return any(not i.scalar and (i.view or i.shape) != kernel.shape for i in kernel.inputs)


def _cu_source(k: Kernel) -> str:
    """The text ``cupy.ElementwiseKernel`` compiles for this kernel: CuPy's
    headers, type declarations, the preamble, then the kernel, whose loop
    binds each array element to its parameter's name before the operation."""
    size = int(np.prod(k.shape, dtype=np.int64)) if k.shape else 1
    index32 = int(size < 2**31)
    # CuPy collapses contiguous operands of one shape to one dimension.
    ndim = max(len(k.shape), 1) if _broadcasts(k) else 1
    params, binds = [], []
    for j, i in enumerate(k.inputs):
        t = _STORAGE_CTYPE[i.dtype.name]
        if i.scalar:
            params.append(f"const {t} in{j}")
            continue
        contiguous = int(ndim == 1 or (i.view or i.shape) == k.shape)
        params.append(f"const CArray<{t}, {ndim}, {contiguous}, {index32}> _raw_in{j}")
        binds.append(f"const {t} &in{j} = _raw_in{j}[_ind.get()];")
    for j, a in enumerate(k.out_avals):
        t = _STORAGE_CTYPE[a.dtype.name]
        params.append(f"CArray<{t}, {ndim}, 1, {index32}> _raw_out{j}")
        binds.append(f"{t} &out{j} = _raw_out{j}[_ind.get()];")
    params.append(f"CIndexer<{ndim}, {index32}> _ind")
    decls = _FLOAT16_DECL + "\n" if np.dtype(np.float16) in k.dtypes else ""
    body = "\n".join(binds + [k.operation])
    body = "\n".join("    " + line for line in body.splitlines())
    return (
        f"{CUPY_HEADERS}{decls}\n{k.preamble}\n"
        f'extern "C" __global__ void {k.name}({", ".join(params)}) {{\n'
        f"  ;\n  #pragma unroll 1\n  CUPY_FOR(i, _ind.size()) {{\n    _ind.set(i);\n"
        f"{body};\n  }}\n  ;\n}}\n"
    )


def _kernel_name(eqns: Sequence[Eqn], operation: str, signature: str) -> str:
    names: list[str] = []
    for e in eqns:
        if e.primitive.name not in names:
            names.append(e.primitive.name)
    head = "_".join(names[:4]) + ("_etc" if len(names) > 4 else "")
    digest = hashlib.sha1((signature + operation).encode()).hexdigest()[:10]
    return f"ft_{head}_{digest}"


def elementwise_kernel(
    eqns: Sequence[Eqn],
    invars: Sequence[Any],
    outvars: Sequence[Var],
    shape: tuple[int, ...],
    scalars: Sequence[bool] = (),
) -> Kernel:
    """The kernel computing ``outvars`` of the elementwise equations ``eqns``
    (in order) from ``invars``, over ``shape``.  A ``broadcast_in_dim`` of an
    input becomes a view of it (unit axes inserted) that CuPy broadcasts.
    ``scalars`` marks inputs passed as scalars (eager calls).

    An input becomes a kernel parameter where an equation (or an output)
    reads it directly, and once per view where it is read through a
    broadcast: CuPy broadcasts every argument of a kernel with every other
    and with the outputs, so an input read only through a broadcast must
    not be passed as it is (a (3,) array beside a (3, 4) output)."""
    scalars = tuple(scalars) or (False,) * len(invars)
    inputs: list[KernelInput] = []
    value: dict[int, tuple[str, np.dtype]] = {}  # var id -> (C expression, dtype)
    position = {id(v): k for k, v in enumerate(invars)}
    loop_dtypes: set[np.dtype] = set()

    def add_input(var, view) -> tuple[str, np.dtype]:
        dtype = var.aval.dtype
        check_dtype(dtype, "GPU kernel input")
        operand = position[id(var)]
        found = [j for j, i in enumerate(inputs) if i.operand == operand and i.view == view]
        if found:
            j = found[0]
        else:
            inputs.append(KernelInput(operand, dtype, view, scalars[operand], var.aval.shape))
            j = len(inputs) - 1
        # float16 operands are computed in float.
        return (f"static_cast<float>(in{j})" if dtype == np.float16 else f"in{j}"), dtype

    def read(var) -> tuple[str, np.dtype]:
        if id(var) not in value:  # a group input, read directly
            value[id(var)] = add_input(var, None)
        return value[id(var)]

    lines: list[str] = []
    temps = 0
    for e in eqns:
        prim = e.primitive
        out = e.outputs[0]
        check_dtype(out.aval.dtype, prim.name)
        if prim.broadcasts:
            (x,) = e.inputs
            if type(x) is Literal:
                value[id(out)] = (c_literal(x.val, x.aval.dtype), x.aval.dtype)
            elif x.aval.shape == out.aval.shape:
                value[id(out)] = read(x)
            elif id(x) in position:
                view = [1] * len(e.params["shape"])
                for i, d in enumerate(e.params["broadcast_dimensions"]):
                    view[d] = x.aval.shape[i]
                value[id(out)] = add_input(x, tuple(view))
            else:  # computed in the kernel: one value per thread
                value[id(out)] = value[id(x)]
            continue
        rule: Any = prim.rule("cuda")
        loops = rule.loop_dtypes([a.aval for a in e.inputs], out.aval)
        loop_dtypes.update(loops)
        loop_dtypes.add(out.aval.dtype)
        kind_dtype = next(d for name, d in zip(rule.args, loops) if name != "p")
        template = rule.template(kind_dtype.kind, e.params)
        if template is None:
            types = ", ".join(a.aval.str_short() for a in e.inputs)
            raise DTypeError(
                f"{prim.name}: the GPU backend has no CUDA code for operands of type {types} "
                f"({kind_dtype.name} arithmetic); convert with .astype() first, or run on "
                "the CPU"
            )
        folded = _out_of_range_result(e, loops)
        if folded is not None:
            value[id(out)] = (c_literal(folded, out.aval.dtype), out.aval.dtype)
            continue
        mixed = {d.kind for d in loops if d.kind in "iu"} == {"i", "u"}
        args = {}
        for name, a, loop in zip(rule.args, e.inputs, loops):
            check_dtype(a.aval.dtype, prim.name)
            if type(a) is Literal:
                args[name] = c_literal(a.val, loop)
            else:
                expr, dtype = read(a)
                args[name] = f"({cast(expr, dtype, loop)})" if dtype != loop else expr
            if mixed and loop.kind == "i":
                args[name] = f"ft_signed({args[name]})"
        expr = instantiate_template(template, kind_dtype, args)
        name = f"t{temps}"
        temps += 1
        lines.append(f"{ctype(out.aval.dtype)} {name} = {expr};")
        value[id(out)] = (name, out.aval.dtype)
    for j, v in enumerate(outvars):
        if type(v) is Literal:
            expr, dtype = c_literal(v.val, v.aval.dtype), v.aval.dtype
        else:
            expr, dtype = read(v)
        expr = cast(expr, dtype, v.aval.dtype)
        if v.aval.dtype == np.float16:
            expr = f"float16({expr})"
        lines.append(f"out{j} = {expr};")
    operation = "\n".join(lines)
    signature = ",".join(f"{i.dtype.name}{i.scalar}" for i in inputs)
    signature += "->" + ",".join(v.aval.dtype.name for v in outvars)
    name = _kernel_name(eqns, operation, signature)
    kernel = Kernel(name, inputs, [v.aval for v in outvars], operation, eqns, shape,
                    invars, outvars, loop_dtypes)
    BY_NAME.setdefault(name, kernel)
    return kernel


def literal_fits(value: Any, dtype: np.dtype) -> bool:
    """Whether a Python integer ``value`` is one of ``dtype``'s values (always
    True for other values and other dtypes)."""
    dtype = np.dtype(dtype)
    if type(value) is not int or dtype.kind not in "iu":
        return True
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


def _out_of_range_result(e: Eqn, loops: Sequence[np.dtype]) -> Any:
    """The value of ``e`` when one of its operands is a Python integer literal
    outside its loop dtype (``x < -1`` for a uint8 ``x``), else None.

    Written in the loop dtype the literal would wrap (-1 -> 255).  NumPy
    compares such literals exactly, so a comparison is the same for every
    value of the other operands: it is found by evaluating the primitive's
    NumPy impl at their extreme values.  Arithmetic with them is NumPy's
    OverflowError, raised here as NumPy raises it."""
    if all(type(a) is not Literal or literal_fits(a.val, d) for a, d in zip(e.inputs, loops)):
        return None
    operands = []
    for a in e.inputs:
        if type(a) is Literal:
            operands.append(a.val)
        elif a.aval.dtype.kind in "iu":
            info = np.iinfo(a.aval.dtype)
            operands.append(np.array([info.min, info.max], a.aval.dtype))
        elif a.aval.dtype.kind == "b":
            operands.append(np.array([False, True]))
        else:
            operands.append(None)
    literals = ", ".join(str(a.val) for a, d in zip(e.inputs, loops)
                         if type(a) is Literal and not literal_fits(a.val, d))
    where = f"{e.primitive.name} with the Python integer {literals}"
    if any(x is None for x in operands):
        raise OverflowError(f"{where}: out of bounds for the operands' dtypes; write it as "
                            "an array of a dtype that holds it")
    try:
        with np.errstate(all="ignore"):
            got = np.asarray(e.primitive.impl(*operands, **e.params))
    except OverflowError as err:
        raise OverflowError(f"{where}: {err} (NumPy refuses it too); convert the operand "
                            "with .astype() to a dtype that holds it") from None
    flat = got.reshape(-1)
    if flat.size and (flat == flat[0]).all():
        return flat[0].item()
    raise OverflowError(f"{where}: out of bounds for the operands' dtypes, and the result "
                        "depends on the other operands; convert them with .astype() to a "
                        "dtype that holds it")


#: Every kernel generated in this process, by name (for inspection and tests).
BY_NAME: dict[str, Kernel] = {}


@program_cache(maxsize=4096, max_equations=50_000)
def jaxpr_kernel(jaxpr: Jaxpr) -> Kernel:
    """The kernel of a fused group (the sub-Jaxpr of a ``fused_elementwise``),
    cached on the group's structure."""
    shape = jaxpr.outvars[0].aval.shape
    return elementwise_kernel(jaxpr.eqns, jaxpr.invars, jaxpr.outvars, shape)


# -- compile checks with nvcc --------------------------------------------------------------


def cupy_include_dir() -> str | None:
    """CuPy's header directory, found without importing CuPy."""
    try:
        spec = importlib.util.find_spec("cupy")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "_core", "include")
    return path if os.path.isfile(os.path.join(path, "cupy", "carray.cuh")) else None


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    return None


#: Stand-ins for the parts of CuPy's headers the kernels use, for machines
#: with nvcc but without CuPy: no complex, no float16.
FALLBACK_HEADERS = r"""#pragma once
#include <cstddef>
#define FUNCTRANS_NO_COMPLEX
#define CUPY_FOR(i, n) \
    for (ptrdiff_t i = static_cast<ptrdiff_t>(blockIdx.x) * blockDim.x + threadIdx.x; \
         i < (n); i += static_cast<ptrdiff_t>(blockDim.x) * gridDim.x)
template <typename T, int ndim, bool c_contiguous = true, bool use_32bit_indexing = false>
class CArray {
  T* data_; ptrdiff_t size_; ptrdiff_t shape_[ndim]; ptrdiff_t strides_[ndim];
 public:
  __device__ const T& operator[](const ptrdiff_t (&idx)[ndim]) const {
    ptrdiff_t diff = 0;
    for (int d = 0; d < ndim; ++d) diff += strides_[d] * idx[d];
    return *reinterpret_cast<const T*>(reinterpret_cast<const char*>(data_) + diff);
  }
  __device__ T& operator[](const ptrdiff_t (&idx)[ndim]) {
    return const_cast<T&>(const_cast<const CArray&>(*this)[idx]);
  }
};
template <int ndim, bool use_32bit_indexing = false>
class CIndexer {
  ptrdiff_t size_; ptrdiff_t shape_[ndim]; ptrdiff_t index_[ndim];
 public:
  __device__ ptrdiff_t size() const { return size_; }
  __device__ void set(ptrdiff_t i) {
    for (int d = ndim; --d > 0;) { index_[d] = i % shape_[d]; i /= shape_[d]; }
    index_[0] = i;
  }
  __device__ const ptrdiff_t (&get() const)[ndim] { return index_; }
};
"""


class Toolchain(NamedTuple):
    nvcc: str
    include: str | None  # CuPy's header directory; None: the fallback headers

    @property
    def complex_ok(self) -> bool:
        return self.include is not None


def toolchain() -> Toolchain | None:
    nvcc = find_nvcc()
    return None if nvcc is None else Toolchain(nvcc, cupy_include_dir())


def skip_reason(kernel: Kernel, chain: Toolchain | None) -> str | None:
    """Why ``kernel`` cannot be compile-checked here, or None if it can."""
    if chain is None:
        return "nvcc is not installed (set CUDA_PATH or put nvcc on PATH)"
    if chain.include is None:
        kinds = {d.kind for d in kernel.dtypes}
        if "c" in kinds:
            return "complex kernels need CuPy's headers (pip install cupy-cuda12x)"
        if np.dtype(np.float16) in kernel.dtypes:
            return "float16 kernels need CuPy's headers (pip install cupy-cuda12x)"
    return None


def compile_check(
    kernels: Sequence[Kernel], arch: str = "90", chain: Toolchain | None = None,
    timeout: float = 600.0, stage: str = "cubin",
) -> list[Kernel]:
    """Compile ``kernels`` with nvcc (one call, one file) for ``sm_<arch>``,
    to machine code (``stage="cubin"``) or only through the C++ front end to
    PTX (``"ptx"``, faster, and where the errors of generated C++ show).

    Returns the kernels that were checked (those ``skip_reason`` lets
    through); raises ``KernelCompileError`` naming the first kernel that fails,
    with its source, the equations it came from and nvcc's messages.
    """
    if stage not in ("cubin", "ptx"):
        raise ValueError(f"compile_check: stage must be 'cubin' or 'ptx', got {stage!r}")
    if not kernels:
        return []
    chain = chain or toolchain()
    if chain is None:
        raise KernelCompileError(
            "compile_check: nvcc was not found; install the CUDA toolkit or set CUDA_PATH"
        )
    unique: dict[str, Kernel] = {}
    for k in kernels:
        if skip_reason(k, chain) is None:
            unique.setdefault(k.name, k)
    if not unique:
        return []
    parts, starts, line = [], [], 1
    for k in unique.values():
        text = k.source
        if chain.include is None:
            text = text.replace(CUPY_HEADERS, '#include "functrans_fallback.cuh"\n')
        starts.append(line)
        parts.append(text)
        line += text.count("\n")
    with tempfile.TemporaryDirectory(prefix="functrans_nvcc_") as tmp:
        path = os.path.join(tmp, "kernels.cu")
        with open(path, "w") as f:
            f.write("".join(parts))
        cmd = [chain.nvcc, f"--{stage}", f"-arch=sm_{arch}", "--std=c++17", "-w",
               "-o", os.path.join(tmp, f"kernels.{stage}")]
        if chain.include is None:
            with open(os.path.join(tmp, "functrans_fallback.cuh"), "w") as f:
                f.write(FALLBACK_HEADERS)
            cmd.append(f"-I{tmp}")
        else:
            cmd.append(f"-I{chain.include}")
        cmd.append(path)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        log = proc.stdout + proc.stderr
        lines = [int(m.group(1)) for m in re.finditer(r"kernels\.cu\((\d+)\)", log)]
        culprit = None
        if lines:
            index = max(i for i, s in enumerate(starts) if s <= lines[0])
            culprit = list(unique.values())[index]
        raise kernel_compile_error(culprit, log, list(unique.values()))
    return list(unique.values())


# -- compile checks through CuPy's own code path and NVRTC ---------------------------------


def nvrtc_unavailable() -> str | None:
    """Why ``nvrtc_check`` cannot run here (CuPy or NVRTC missing), or None.
    Neither needs a GPU."""
    try:
        from cupy.cuda import nvrtc
    except ImportError as e:
        return f"CuPy is not installed ({e}); pip install 'functrans[nvrtc]'"
    try:
        nvrtc.getVersion()
    except Exception as e:  # the NVRTC library is not found
        return (f"CuPy cannot load NVRTC ({type(e).__name__}: {str(e).splitlines()[0]}); "
                "pip install 'functrans[nvrtc]' (the nvidia-cuda-nvrtc wheel)")
    return None


def cupy_kernel_code(kernel: Kernel) -> str:
    """The source ``cupy.ElementwiseKernel`` compiles for ``kernel``, from
    CuPy's own generator (``_get_elementwise_kernel_code``) with CuPy's
    headers: scalar inputs by value, broadcast (viewed) inputs strided, the
    rest contiguous, and 32-bit indexing, as for arrays below 2**31
    elements."""
    import cupy
    from cupy._core import _carray, _kernel, _scalar

    ndim = max(len(kernel.shape), 1) if _broadcasts(kernel) else 1
    infos = []
    for i in kernel.inputs:
        if i.scalar:
            infos.append(_kernel._ArgInfo(3, _scalar.CScalar, i.dtype, 0, True, True))
        else:
            contiguous = ndim == 1 or (i.view or i.shape) == kernel.shape
            infos.append(_kernel._ArgInfo(1, cupy.ndarray, i.dtype, ndim, contiguous, True))
    infos += [_kernel._ArgInfo(1, cupy.ndarray, a.dtype, ndim, True, True)
              for a in kernel.out_avals]
    infos.append(_kernel._ArgInfo(2, _carray.Indexer, None, ndim, True, True))
    params = (_kernel._get_param_info(kernel.in_params, True)
              + _kernel._get_param_info(kernel.out_params, False)
              + (_kernel.ParameterInfo("CIndexer _ind", False),))
    code = _kernel._get_elementwise_kernel_code(
        tuple(infos), _kernel._TypeMap(()), params, kernel.operation, kernel.name,
        kernel.preamble)
    return CUPY_HEADERS + code


def nvrtc_options(arch: str = "90") -> tuple[str, ...]:
    """The NVRTC options CuPy compiles an ElementwiseKernel with: its include
    paths and C++ standard, ``-ftz=true`` (float32 subnormals flush to zero)
    and the device as the default execution space, for ``sm_<arch>``."""
    from cupy._core import core as cupy_core

    return cupy_core.assemble_cupy_compiler_options(()) + (
        "-ftz=true", f"-arch=sm_{arch}", "--device-as-default-execution-space")


def nvrtc_check(
    kernels: Sequence[Kernel], arch: str = "90", per_program: int = 200
) -> list[Kernel]:
    """Compile ``kernels`` as CuPy would on a GPU of compute capability
    ``arch``: CuPy's generated source (``cupy_kernel_code``), CuPy's options
    (``nvrtc_options``), NVRTC, to machine code; ``per_program`` kernels per
    NVRTC program.  Needs CuPy and the NVRTC library, no GPU.

    Returns the kernels checked; raises ``KernelCompileError`` naming the
    first kernel that fails, with its source, equations and NVRTC's log."""
    reason = nvrtc_unavailable()
    if reason is not None:
        raise KernelCompileError(f"nvrtc_check: {reason}")
    from cupy.cuda import compiler

    unique = list({k.name: k for k in kernels}.values())
    options = nvrtc_options(arch)
    for first in range(0, len(unique), per_program):
        group = unique[first:first + per_program]
        parts, starts, line = [], [], 1
        for k in group:
            text = cupy_kernel_code(k)
            starts.append(line)
            parts.append(text)
            line += text.count("\n")
        program = compiler._NVRTCProgram("".join(parts), "functrans_kernels.cu",
                                         method="cubin")
        try:
            program.compile(options)
        except compiler.CompileException as e:
            log = str(e)
            lines = [int(m.group(1)) for m in re.finditer(r"functrans_kernels\.cu\((\d+)\)",
                                                          log)]
            culprit = group[max(i for i, s in enumerate(starts) if s <= lines[0])] \
                if lines else None
            raise kernel_compile_error(culprit, log, group, "NVRTC") from None
    return unique


def kernel_compile_error(kernel: Kernel | None, log: str, kernels: list[Kernel],
                         compiler: str = "nvcc"):
    if kernel is None:
        names = ", ".join(k.name for k in kernels)
        return KernelCompileError(f"{compiler} failed on the kernels {names}:\n{log.strip()}")
    return KernelCompileError(
        f"GPU kernel {kernel.name} does not compile.\nIt computes these equations:\n"
        f"{kernel.describe()}\n{compiler} says:\n{log.strip()}\nThe generated source:\n"
        f"{kernel.source}"
    )
