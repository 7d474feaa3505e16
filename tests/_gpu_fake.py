"""A stand-in for CuPy, so that the GPU backend's plumbing runs on any machine.

``FakeCupy`` is a module-like object with an ``ndarray`` type that holds a
NumPy array but, like ``cupy.ndarray``, refuses implicit conversion to NumPy
(``np.asarray`` raises the error CuPy raises) and hands back ``.get()``.  Its
functions are NumPy's, taking and returning fake device arrays; its
``ElementwiseKernel`` looks up the generated kernel by name and evaluates the
equations it was generated from with their NumPy impls, so that everything
around the kernels (dispatch, views of broadcast operands, output
allocation, the generated GPU program, the transforms' routing) is
exercised.  What the CUDA C itself computes is checked by compiling it
(tests/backends/gpu/test_lowering.py); on a GPU, tests/backends/gpu/test_cupy.py
runs the real thing.

It raises where CuPy raises, so that the backend cannot rely on leniency
CuPy lacks:

* a kernel call broadcasts all of its array arguments, outputs included,
  together ("operands could not be broadcast"), and its outputs must have
  the broadcast shape;
* array arguments must have their parameter's dtype exactly ("Type is
  mismatched"), scalar arguments must fit it (a Python integer out of range
  is NumPy's OverflowError), and NumPy arrays are refused ("Unsupported
  type"), by kernels and by every function but the constructors;
* ``cupy.linalg.cholesky`` returns NaN for a matrix that is not positive
  definite, as cuSOLVER does, and the parts of ``cupyx`` the GPU impls call
  (``cupyx.scipy.linalg.lu_factor``/``solve_triangular``,
  ``cupyx.scipy.special.digamma``/``polygamma``) are put in place, with
  CuPy's restrictions (one matrix for LU, float and complex dtypes);
* ``ufunc.at`` exists for CuPy's ufuncs only, for the dtypes CuPy's atomics
  take, and ``maximum.at``/``minimum.at`` on floats compute as CuPy's
  atomics do (``fmaxf``/``fminf``: float64 rounded to float32, NaN dropped).

``install()`` puts it in place of CuPy for the GPU backend and returns a
function undoing that.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np

from functrans import core
from functrans.backends import cuda
from functrans.backends import cupy as gpu

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
             "construct a NumPy array explicitly.")


def unwrap(x: Any) -> Any:
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, tuple):
        return tuple(unwrap(e) for e in x)
    if isinstance(x, list):
        return [unwrap(e) for e in x]
    if isinstance(x, dict):
        return {k: unwrap(v) for k, v in x.items()}
    return x


def wrap(x: Any) -> Any:
    if isinstance(x, np.ndarray) and not isinstance(x, ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):
        return ndarray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(wrap(e) for e in x)
    if isinstance(x, list):
        return [wrap(e) for e in x]
    return x


class ndarray:  # noqa: N801 (CuPy's name)
    """A device array stand-in (its data is a NumPy array, ``_a``)."""

    __array_priority__ = 200

    def __init__(self, a: np.ndarray):
        self._a = a

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    real = property(lambda self: ndarray(self._a.real))
    imag = property(lambda self: ndarray(self._a.imag))
    T = property(lambda self: ndarray(self._a.T))

    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    def get(self) -> np.ndarray:
        return self._a.copy()

    def __repr__(self):
        return f"fake_cupy.{self._a!r}"

    def __len__(self):
        return len(self._a)

    def __bool__(self):
        return bool(self._a)

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __index__(self):
        return int(self._a)

    def __getitem__(self, idx):
        return wrap(self._a[unwrap(idx)])

    def __setitem__(self, idx, value):
        self._a[unwrap(idx)] = unwrap(value)


def _refuse_host_arrays(args: Any) -> None:
    """CuPy's TypeError for a NumPy array where it takes device arrays or scalars."""
    for x in args if isinstance(args, (tuple, list)) else (args,):
        if isinstance(x, (tuple, list)):
            _refuse_host_arrays(x)
        elif isinstance(x, np.ndarray):
            raise TypeError(f"Unsupported type {type(x)}")


def _method(name):
    def method(self, *args, **kwargs):
        _refuse_host_arrays(args)
        return wrap(getattr(self._a, name)(*unwrap(args), **unwrap(kwargs)))

    method.__name__ = name
    return method


#: The methods of ``cupy.ndarray`` the stand-in has (every one is CuPy's too,
#: checked by tests/backends/gpu/test_gpu_rules.py).
METHODS = ("reshape", "transpose", "copy", "astype", "view", "conj", "squeeze", "sum", "prod",
           "fill", "min", "max", "all", "any", "argmax", "argmin", "cumsum", "cumprod",
           "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
           "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__", "__invert__",
           "__and__", "__rand__", "__or__", "__ror__", "__ne__", "__eq__", "__lt__", "__le__",
           "__gt__", "__ge__")
for _name in METHODS:
    setattr(ndarray, _name, _method(_name))


#: CuPy's ``ufunc.at`` (``cupy/_core/_routines_indexing.pyx``): the dtypes of
#: the CUDA atomics behind each ufunc that has one.
_AT_DTYPES = {
    "add": "int32 int64 float16 float32 float64 uint32 uint64",
    "subtract": "int32 uint32",
    "maximum": "int32 int64 float32 float64 uint32 uint64",
    "minimum": "int32 int64 float32 float64 uint32 uint64",
    "bitwise_and": "int32 int64 uint32 uint64",
    "bitwise_or": "int32 int64 uint32 uint64",
    "bitwise_xor": "int32 int64 uint32 uint64",
}
#: CuPy's float atomics for maximum/minimum go through the float functions.
_AT_FLOAT = {"maximum": np.fmax, "minimum": np.fmin}


class _Ufunc:
    def __init__(self, ufunc):
        self.ufunc = ufunc

    def __call__(self, *args, **kwargs):
        _refuse_host_arrays(args)
        return wrap(self.ufunc(*unwrap(args), **unwrap(kwargs)))

    def at(self, a, indices, b=None):
        name = self.ufunc.__name__
        if name not in _AT_DTYPES:
            raise NotImplementedError(f"`cupy_{name}.at` is not supported yet")
        if a.dtype.name not in _AT_DTYPES[name].split():
            raise TypeError(f"cupy.{name}.at only supports "
                            f"{', '.join(_AT_DTYPES[name].split())} as data type")
        out, idx = a._a, unwrap(indices)
        values = np.broadcast_to(np.asarray(unwrap(b)).astype(out.dtype), out[idx].shape)
        if name in _AT_FLOAT and out.dtype.kind == "f":
            # One atomic update at a time, each through fmaxf/fminf.
            positions = np.arange(out.size).reshape(out.shape)[idx].reshape(-1)
            flat = out.reshape(-1)
            for p, v in zip(positions, values.reshape(-1)):
                flat[p] = _AT_FLOAT[name](np.float32(v), np.float32(flat[p]))
            return
        self.ufunc.at(out, idx, values)

    def outer(self, a, b):
        _refuse_host_arrays((a, b))
        return wrap(self.ufunc.outer(unwrap(a), unwrap(b)))


#: The functions looked up on the stand-in, as ("cupy" or "cupy.linalg", name):
#: tests/backends/gpu/test_gpu_rules.py checks that CuPy has every one.
USED: set[tuple[str, str]] = set()


#: The functions that take host arrays (and copy them to the device).
_CONSTRUCTORS = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray"})


class _Namespace(types.SimpleNamespace):
    """NumPy's functions (or a submodule's), on fake device arrays."""

    def __init__(self, source, path, **extra):
        super().__init__(**extra)
        self._source = source
        self._path = path

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        f = getattr(self._source, name)
        USED.add((self._path, name))
        if isinstance(f, np.ufunc):
            return _Ufunc(f)

        def call(*args, **kwargs):
            if name not in _CONSTRUCTORS:
                _refuse_host_arrays(args)
            return wrap(f(*unwrap(args), **unwrap(kwargs)))

        return call


def _param_dtypes(params: str) -> list[np.dtype]:
    return [np.dtype(p.split()[0]) for p in params.split(",") if p.strip()]


class ElementwiseKernel:
    """Evaluates a generated kernel's equations with NumPy (see the module doc),
    after CuPy's checks of the arguments."""

    launches = 0

    def __init__(self, in_params, out_params, operation, name, preamble=""):
        self.kernel = cuda.BY_NAME[name]
        assert (in_params, out_params, operation, preamble) == (
            self.kernel.in_params, self.kernel.out_params, self.kernel.operation,
            self.kernel.preamble)
        self.in_dtypes = _param_dtypes(in_params)
        self.out_dtypes = _param_dtypes(out_params)

    def _check(self, ins, outs) -> None:
        """CuPy's checks: argument types and dtypes, one broadcast shape of
        every array argument, outputs of that shape."""
        if len(outs) != len(self.out_dtypes):
            raise TypeError(f"Wrong number of arguments for {self.kernel.name!r}")
        shapes = []
        for k, (x, dtype) in enumerate(zip(ins, self.in_dtypes)):
            if isinstance(x, ndarray):
                if x.dtype != dtype:
                    raise TypeError(f"Type is mismatched. in{k} {x.dtype} {dtype}")
                shapes.append(x.shape)
            elif isinstance(x, (bool, int, float, complex, np.generic)):
                np.empty((), dtype)[()] = x  # NumPy's assignment: OverflowError out of range
            else:
                raise TypeError(f"Unsupported type {type(x)}")
        for k, (x, dtype) in enumerate(zip(outs, self.out_dtypes)):
            if not isinstance(x, ndarray):
                raise TypeError("Output arguments type must be cupy.ndarray")
            if x.dtype != dtype:
                raise TypeError(f"Type is mismatched. out{k} {x.dtype} {dtype}")
            shapes.append(x.shape)
        if not shapes:
            raise ValueError("Loop size is undecided.")
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError("operands could not be broadcast together with shapes "
                             + " ".join(str(s).replace(" ", "") for s in shapes)) from None
        if any(x.shape != shape for x in outs):
            raise ValueError("Out shape is mismatched")

    def __call__(self, *args):
        # A kernel is shared by every shape with its code, so only its own
        # structure is used here, with the operands of this call: a broadcast
        # of an input is that input's (viewed) operand, and NumPy broadcasting
        # does what the kernel's indexing does.
        k = self.kernel
        ins, outs = args[: len(k.inputs)], args[len(k.inputs):]
        self._check(ins, outs)
        env, viewed = {}, {}
        for spec, x in zip(k.inputs, ins):
            if isinstance(x, ndarray):
                assert not spec.scalar, "an array came for a scalar operand"
                x = x._a
            else:
                assert spec.scalar, "a scalar came for an array operand"
            if spec.view is None:
                env[id(k.invars[spec.operand])] = x
            else:
                viewed[(spec.operand, spec.view)] = x
        position = {id(v): i for i, v in enumerate(k.invars)}
        for e in k.eqns:
            if e.primitive.name == "broadcast_in_dim":
                (a,) = e.inputs
                if type(a) is core.Literal:
                    env[id(e.outputs[0])] = a.val
                elif id(a) in position and a.aval.shape != e.outputs[0].aval.shape:
                    view = [1] * len(e.params["shape"])
                    for i, d in enumerate(e.params["broadcast_dimensions"]):
                        view[d] = a.aval.shape[i]
                    env[id(e.outputs[0])] = viewed[(position[id(a)], tuple(view))]
                else:
                    env[id(e.outputs[0])] = env[id(a)]
                continue
            if any(type(a) is not core.Literal and id(a) not in env for a in e.inputs):
                # An operand the kernel was not given: the equation was folded
                # (an out-of-range literal in a comparison).
                loops = e.primitive.cuda.loop_dtypes([a.aval for a in e.inputs],
                                                     e.outputs[0].aval)
                folded = cuda._out_of_range_result(e, loops)
                assert folded is not None, f"{k.name} reads an operand it was not given"
                env[id(e.outputs[0])] = folded
                continue
            ins_e = [a.val if type(a) is core.Literal else env[id(a)] for a in e.inputs]
            env[id(e.outputs[0])] = e.primitive.impl(*ins_e, **e.params)
        for out, v in zip(outs, k.outvars):
            value = v.val if type(v) is core.Literal else env[id(v)]
            np.copyto(out._a, value, casting="unsafe")
        ElementwiseKernel.launches += 1


def _cholesky(a):
    """``cupy.linalg.cholesky``: cuSOLVER's potrf leaves NaN in each matrix
    that is not positive definite (CuPy raises only under ``cupyx.errstate``)."""
    _refuse_host_arrays(a)
    out = np.empty(a.shape, a.dtype)
    for index in np.ndindex(*a.shape[:-2]):
        try:
            out[index] = np.linalg.cholesky(a._a[index])
        except np.linalg.LinAlgError:
            out[index] = np.nan
    return ndarray(out)


def _device_only(fn):
    """A cupyx function on fake device arrays (host arrays refused)."""

    def call(*args, **kwargs):
        _refuse_host_arrays(args)
        return wrap(fn(*unwrap(args), **unwrap(kwargs)))

    call.__name__ = fn.__name__
    return call


def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                      check_finite=False):
    """``cupyx.scipy.linalg.solve_triangular`` (batched over leading axes since
    CuPy 14)."""
    import scipy.linalg

    if a.ndim > 2 and a.shape[:-2] != b.shape[:a.ndim - 2]:
        raise ValueError("incompatible batch count")
    out = np.empty(np.broadcast_shapes(b.shape), np.result_type(a.dtype, b.dtype))
    for i in np.ndindex(*a.shape[:-2]):
        out[i] = scipy.linalg.solve_triangular(a[i], b[i], trans=trans, lower=lower,
                                               unit_diagonal=unit_diagonal,
                                               check_finite=check_finite)
    return out


def _lu_factor(a, overwrite_a=False, check_finite=True):
    """``cupyx.scipy.linalg.lu_factor``: one matrix, float or complex,
    cuSOLVER's getrf (LAPACK's algorithm), a RuntimeWarning when singular."""
    import warnings

    import scipy.linalg

    if a.ndim != 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be "
                                    "two-dimensional")
    if a.dtype.char not in "fdFD":
        raise NotImplementedError("Only float32, float64, complex64 and complex128 are "
                                  "supported.")
    if check_finite and not np.isfinite(a).all():
        raise ValueError("array must not contain infs or NaNs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lu, piv = scipy.linalg.lu_factor(a, check_finite=False)
    zero = np.flatnonzero(np.diagonal(lu) == 0)
    if zero.size:
        warnings.warn(f"Diagonal number {zero[0] + 1} is exactly zero. Singular matrix.",
                      RuntimeWarning, stacklevel=2)
    return lu, piv.astype(np.int32)


def _special(name):
    def fn(*args):
        import scipy.special

        return getattr(scipy.special, name)(*args)

    fn.__name__ = name
    return _device_only(fn)


def make_cupyx() -> dict[str, types.ModuleType]:
    """The parts of ``cupyx`` the GPU impls call, as modules by name."""
    linalg = types.ModuleType("cupyx.scipy.linalg")
    linalg.solve_triangular = _device_only(_solve_triangular)  # type: ignore[attr-defined]
    linalg.lu_factor = _device_only(_lu_factor)  # type: ignore[attr-defined]
    special = types.ModuleType("cupyx.scipy.special")
    special.digamma = _special("digamma")  # type: ignore[attr-defined]
    special.polygamma = _special("polygamma")  # type: ignore[attr-defined]
    scipy_ = types.ModuleType("cupyx.scipy")
    scipy_.linalg, scipy_.special = linalg, special  # type: ignore[attr-defined]
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = scipy_  # type: ignore[attr-defined]
    return {"cupyx": cupyx, "cupyx.scipy": scipy_, "cupyx.scipy.linalg": linalg,
            "cupyx.scipy.special": special}


class FakeCupy(_Namespace):
    pass


def make() -> FakeCupy:
    fake = FakeCupy(
        np,
        "cupy",
        ndarray=ndarray,
        ElementwiseKernel=ElementwiseKernel,
        linalg=_Namespace(np.linalg, "cupy.linalg", cholesky=_cholesky),
        __version__="14.2.0",  # the CuPy it stands in for (batched solve_triangular)
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1)),
    )
    fake.asarray = lambda x, dtype=None: x if isinstance(x, ndarray) and dtype is None \
        else ndarray(np.array(unwrap(x), dtype=dtype))
    return fake


def install():
    """Make the GPU backend use a fake CuPy; returns (fake module, undo)."""
    fake = make()
    saved = (gpu._cp, gpu._gpu_checked, dict(gpu._CUPY_KERNELS))
    cupyx = make_cupyx()
    saved_modules = {name: sys.modules.get(name) for name in cupyx}
    sys.modules.update(cupyx)
    gpu._cp, gpu._gpu_checked = fake, True
    gpu._CUPY_KERNELS.clear()
    core.device_backends[ndarray] = gpu.BACKEND
    gpu.compiled.cache_clear()

    def undo():
        for name, module in saved_modules.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        gpu._cp, gpu._gpu_checked = saved[0], saved[1]
        gpu._CUPY_KERNELS.clear()
        gpu._CUPY_KERNELS.update(saved[2])
        core.device_backends.pop(ndarray, None)
        gpu.compiled.cache_clear()

    return fake, undo
