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
(test_gpu_lowering.py); on a GPU, test_gpu_cupy.py runs the real thing.

``install()`` puts it in place of CuPy for the GPU backend and returns a
function undoing that.
"""

from __future__ import annotations

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


def _method(name):
    def method(self, *args, **kwargs):
        return wrap(getattr(self._a, name)(*unwrap(args), **unwrap(kwargs)))

    method.__name__ = name
    return method


#: The methods of ``cupy.ndarray`` the stand-in has (every one is CuPy's too,
#: checked by test_gpu_rules.py).
METHODS = ("reshape", "transpose", "copy", "astype", "conj", "squeeze", "sum", "prod", "fill",
           "min", "max", "all", "any", "argmax", "argmin", "cumsum", "cumprod",
           "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
           "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__", "__invert__",
           "__and__", "__rand__", "__or__", "__ror__", "__ne__", "__eq__", "__lt__", "__le__",
           "__gt__", "__ge__")
for _name in METHODS:
    setattr(ndarray, _name, _method(_name))


class _Ufunc:
    def __init__(self, ufunc):
        self.ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return wrap(self.ufunc(*unwrap(args), **unwrap(kwargs)))

    def at(self, a, indices, b=None):
        self.ufunc.at(a._a, unwrap(indices), unwrap(b))

    def outer(self, a, b):
        return wrap(self.ufunc.outer(unwrap(a), unwrap(b)))


#: The functions looked up on the stand-in, as ("cupy" or "cupy.linalg", name):
#: test_gpu_rules.py checks that CuPy has every one.
USED: set[tuple[str, str]] = set()


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
            return wrap(f(*unwrap(args), **unwrap(kwargs)))

        return call


class ElementwiseKernel:
    """Evaluates a generated kernel's equations with NumPy (see the module doc)."""

    launches = 0

    def __init__(self, in_params, out_params, operation, name, preamble=""):
        self.kernel = cuda.BY_NAME[name]
        assert (in_params, out_params, operation, preamble) == (
            self.kernel.in_params, self.kernel.out_params, self.kernel.operation,
            self.kernel.preamble)

    def __call__(self, *args):
        # A kernel is shared by every shape with its code, so only its own
        # structure is used here, with the operands of this call: a broadcast
        # of an input is that input's (viewed) operand, and NumPy broadcasting
        # does what the kernel's indexing does.
        k = self.kernel
        ins, outs = args[: len(k.inputs)], args[len(k.inputs):]
        assert len(outs) == len(k.out_avals)
        env, viewed = {}, {}
        for spec, x in zip(k.inputs, ins):
            if spec.scalar:
                assert not isinstance(x, ndarray), "a scalar operand came as an array"
            else:
                assert isinstance(x, ndarray), "an array operand is not on the device"
                x = x._a
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
            ins_e = [a.val if type(a) is core.Literal else env[id(a)] for a in e.inputs]
            env[id(e.outputs[0])] = e.primitive.impl(*ins_e, **e.params)
        for out, v in zip(outs, k.outvars):
            value = v.val if type(v) is core.Literal else env[id(v)]
            np.copyto(out._a, value, casting="unsafe")
        ElementwiseKernel.launches += 1


class FakeCupy(_Namespace):
    pass


def make() -> FakeCupy:
    fake = FakeCupy(
        np,
        "cupy",
        ndarray=ndarray,
        ElementwiseKernel=ElementwiseKernel,
        linalg=_Namespace(np.linalg, "cupy.linalg"),
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1)),
    )
    fake.asarray = lambda x, dtype=None: x if isinstance(x, ndarray) and dtype is None \
        else ndarray(np.array(unwrap(x), dtype=dtype))
    return fake


def install():
    """Make the GPU backend use a fake CuPy; returns (fake module, undo)."""
    fake = make()
    saved = (gpu._cp, gpu._gpu_checked, dict(gpu._CUPY_KERNELS))
    gpu._cp, gpu._gpu_checked = fake, True
    gpu._CUPY_KERNELS.clear()
    core.device_backends[ndarray] = gpu.BACKEND
    gpu.compiled.cache_clear()

    def undo():
        gpu._cp, gpu._gpu_checked = saved[0], saved[1]
        gpu._CUPY_KERNELS.clear()
        gpu._CUPY_KERNELS.update(saved[2])
        core.device_backends.pop(ndarray, None)
        gpu.compiled.cache_clear()

    return fake, undo
