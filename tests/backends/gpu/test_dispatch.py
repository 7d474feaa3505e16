"""The GPU backend's plumbing, on any machine: a stand-in for CuPy
(tests/_gpu_fake.py) whose arrays refuse implicit conversion to NumPy, as
CuPy's do, and whose ElementwiseKernel evaluates the generated kernel's
equations with NumPy.

Checked here: ``bind`` sends device operands to the GPU backend (kernels for
elementwise primitives, the CuPy impls for the rest), results stay on the
device, ``jit`` and every transform route device arguments to the GPU
program, the caches keep CPU and GPU entries apart, and mixing devices is a
clear error naming both arguments.  What the kernels compute is checked in
tests/backends/gpu/test_host_semantics.py; on a GPU, tests/backends/gpu/test_cupy.py runs all
this with CuPy itself.
"""

from __future__ import annotations

import _gpu_fake
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import core, lax
from functrans.backends import cupy as gpu
from functrans.errors import DeviceError, MissingRuleError


@pytest.fixture(params=["fake", pytest.param("cupy", marks=pytest.mark.gpu)])
def fake(request):
    """The GPU backend on the stand-in for CuPy, or on CuPy and a real GPU
    (marked ``gpu``; skipped without one)."""
    if request.param == "cupy":
        if not gpu.gpu_available():
            pytest.skip("needs CuPy and a CUDA GPU")
        yield gpu.cupy_module()
        return
    module, undo = _gpu_fake.install()
    try:
        yield module
    finally:
        undo()


def dev(x):
    return ft.device_put(np.asarray(x), "gpu")


def on_device(x):
    assert gpu.is_device_array(x), f"a {type(x).__name__}, not a device array"
    return x.get()


def check(got, want, rtol=1e-12):
    got = on_device(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.dtype in (np.float32, np.complex64):
        rtol = max(rtol, 1e-5)  # the GPU's float32 math differs in the last places
    np.testing.assert_allclose(got, want, rtol=max(rtol, 1e-11), atol=1e-12)


X = np.linspace(-1.0, 1.5, 6)
M = np.arange(12.0).reshape(3, 4) / 7


# --------------------------------------------------------------------------
# Eager operations
# --------------------------------------------------------------------------


# Eager calls on device arrays go through functrans.numpy (operators on a
# CuPy array are CuPy's own); inside transforms, tracers take operators too.
@pytest.mark.parametrize("name, f", [
    ("sin", lambda x, m: fnp.sin(x)),
    ("scalar", lambda x, m: fnp.add(fnp.multiply(x, 2.0), 1)),
    ("f32", lambda x, m: fnp.multiply(fnp.exp(fnp.asarray(x, dtype=np.float32)), np.float32(0.5))),
    ("mixed dtypes", lambda x, m: fnp.add(fnp.floor_divide(fnp.asarray(fnp.multiply(x, 4),
                                                                       dtype=np.int32), -3),
                                          np.int8(5))),
    ("compare", lambda x, m: fnp.where(fnp.greater(x, 0), x, fnp.negative(x))),
    ("square", lambda x, m: fnp.subtract(fnp.square(x), fnp.power(x, 3))),
    ("broadcast", lambda x, m: fnp.add(fnp.multiply(fnp.cos(m), fnp.reshape(x[:3], (3, 1))),
                                       x[:4])),
    ("complex", lambda x, m: fnp.add(fnp.abs(fnp.exp(fnp.multiply(1j, x))),
                                     fnp.real(fnp.multiply(x, 1 + 2j)))),
    ("sum", lambda x, m: fnp.add(fnp.sum(m, axis=0), fnp.max(x))),
    ("argmax", lambda x, m: fnp.argmax(m, axis=1)),
    ("cumulative", lambda x, m: fnp.multiply(fnp.cumsum(x), fnp.cumprod(x))),
    ("shape", lambda x, m: fnp.concatenate([fnp.reshape(fnp.transpose(m), -1), x[::2],
                                            x[1:3]])),
    ("matmul", lambda x, m: fnp.add(fnp.matmul(m, fnp.transpose(m)),
                                    fnp.einsum("ij,j->i", m, x[:4]))),
    ("pad", lambda x, m: fnp.pad(x, (2, 1))),
    # Index arrays made on the host (the function's own or the caller's) go
    # to the device, as CuPy's indexing takes them.
    ("diagonal", lambda x, m: fnp.diagonal(m, 1)),
    ("take", lambda x, m: fnp.take(m, np.array([2, 0, 2]), axis=1)),
    ("take_along_axis", lambda x, m: fnp.take_along_axis(m, np.array([[1], [0], [3]]), 1)),
])
def test_eager_operations_run_on_the_device(fake, name, f):
    want = f(X, M)
    got = f(dev(X), dev(M))
    check(got, want)


def test_indexing_and_updates_run_on_the_device(fake):
    def f(x, m, idx):
        rows = m[idx, 1:3]
        return fnp.sum(rows) + fnp.sum(x.at[idx].add(1.0) * x.at[idx].max(0.7))

    idx = np.array([0, 0, 2])
    check(ft.jit(f)(dev(X), dev(M), dev(idx)), ft.jit(f)(X, M, idx))
    g = ft.grad(f)(dev(X), dev(M), dev(idx))  # transposed gathers: scatter-adds
    check(g, ft.grad(f)(X, M, idx))


def test_elementwise_kernels_are_built_once_per_primitive_and_dtypes(fake):
    gpu._CUPY_KERNELS.clear()
    x = dev(X)
    fnp.sin(x)
    before = dict(gpu._CUPY_KERNELS)
    fnp.sin(dev(X[:3]))
    fnp.sin(fnp.multiply(x, 1.0))  # mul builds one more
    assert len(gpu._CUPY_KERNELS) == len(before) + 1
    fnp.sin(fnp.asarray(x, dtype=np.float32))  # another dtype, another kernel
    assert len(gpu._CUPY_KERNELS) == len(before) + 3  # convert and sin in float32


def test_scalars_mix_with_device_arrays(fake):
    x = dev(X)
    check(fnp.add(x, np.float64(2.0)), X + 2.0)
    check(fnp.multiply(x, np.array(3.0)), X * 3.0)
    check(fnp.maximum(x, 0), np.maximum(X, 0))


def test_mixing_devices_is_an_error_naming_both(fake):
    x = dev(X)
    with pytest.raises(DeviceError, match=r"add: operand 0 is a CuPy array f64\[6\] on the GPU "
                                          r"but operand 1 is a NumPy array f64\[6\] on the CPU"):
        fnp.add(x, X)
    with pytest.raises(DeviceError, match=r"jit\(f\): argument 1 is a CuPy array f64\[6\] on "
                                          r"the GPU but argument 0 is a NumPy array"):
        def f(a, b):
            return a * b

        ft.jit(f)(X, x)
    with pytest.raises(DeviceError, match=r"jit\(f\): argument 'b' is a CuPy array"):
        ft.jit(f)(X, b=x)
    with pytest.raises(DeviceError, match=r"grad\(loss\): argument 0 is a CuPy array .* "
                                          r"argument 1\['w'\] is a NumPy array"):
        def loss(a, p):
            return fnp.sum(a * p["w"])

        ft.grad(loss)(x, {"w": X})
    with pytest.raises(DeviceError, match=r"vmap\(f\): argument \[1\] is a NumPy array|"
                                          r"vmap\(f\): argument \[0\] is a CuPy array"):
        ft.vmap(f)(x, X)


def test_a_primitive_without_a_gpu_impl_says_so(fake):
    prim = core.Primitive("test_gpu_host_only", abstract_eval=lambda x: x,
                          impl=lambda x: np.asarray(x) + 1)
    try:
        with pytest.raises(MissingRuleError, match=r"primitive 'test_gpu_host_only' has no GPU "
                                                   r"impl, and its NumPy impl converts"):
            prim.bind(dev(X))
    finally:
        del core.registry[prim.name]


# --------------------------------------------------------------------------
# jit and the transforms
# --------------------------------------------------------------------------


def loss(x):
    return fnp.sum(fnp.tanh(x * 3.0) ** 2) + fnp.sum(x[1:] * x[:-1]) + fnp.max(x)


def test_jit_runs_the_gpu_program_and_caches_per_device(fake):
    f = ft.jit(loss)
    want = f(X)
    check(f(dev(X)), want)
    check(f(dev(X + 0)), want)
    info = f.cache_info()
    assert (info.hits, info.misses, info.entries) == (1, 2, 2)
    if isinstance(fake, _gpu_fake.FakeCupy):
        launches = _gpu_fake.ElementwiseKernel.launches
        f(dev(X))
        assert _gpu_fake.ElementwiseKernel.launches - launches == len(
            f.lower(dev(X)).kernels)


def test_lowering_device_arrays_lowers_for_the_gpu(fake):
    low = ft.jit(ft.grad(loss)).lower(dev(X))
    assert low.device == "gpu" and low.kernels
    assert ".get(" not in low.source  # nothing goes back to the host
    check(low.compile()(dev(X)), ft.grad(loss)(X))


@pytest.mark.parametrize("name, transform", [
    ("grad", ft.grad),
    ("jit_grad", lambda f: ft.jit(ft.grad(f))),
    ("jacfwd", lambda f: ft.jacfwd(ft.grad(f))),
    ("jacrev", lambda f: ft.jacrev(ft.grad(f))),
    ("hessian", ft.hessian),
    ("vmap_grad", lambda f: lambda x: ft.vmap(ft.grad(f))(fnp.stack([x, 2 * x]))),
    ("jvp", lambda f: lambda x: ft.jvp(f, (x,), (fnp.ones_like(x),))[1]),
    ("vjp", lambda f: lambda x: ft.vjp(f, x)[1](1.0)[0]),
    ("hvp", lambda f: lambda x: ft.hvp(f, (x,), (x * 0 + 1.0,))),
])
def test_transforms_of_device_arrays_stay_on_the_device(fake, name, transform):
    want = transform(loss)(X)
    got = transform(loss)(dev(X))
    check(got, want, rtol=1e-10)


def test_per_example_gradients_of_an_mlp(fake):
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(s) for s in [(4, 8), (8,), (8, 2), (2,)]]
    xs, ys = rng.standard_normal((16, 4)), rng.standard_normal((16, 2))

    def mlp_loss(p, x, y):
        h = fnp.tanh(x @ p[0] + p[1])
        return fnp.sum((h @ p[2] + p[3] - y) ** 2)

    per_example = ft.jit(ft.vmap(ft.grad(mlp_loss), in_axes=(None, 0, 0)))
    want = per_example(params, xs, ys)
    got = per_example(ft.device_put(params, "gpu"), dev(xs), dev(ys))
    for g, w in zip(got, want):
        check(g, w, rtol=1e-10)


def test_control_flow_on_the_device(fake):
    def f(x):
        y = lax.fori_loop(0, 3, lambda i, c: c * 1.5 + fnp.sin(c), x)
        return lax.cond(fnp.sum(y) > 0, lambda v: v * 2.0, lambda v: -v, y)

    check(f(dev(X)), f(X))
    check(ft.grad(lambda x: fnp.sum(f(x)))(dev(X)), ft.grad(lambda x: fnp.sum(f(x)))(X))


def test_while_loop_and_its_reverse_pass_on_the_device(fake):
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, fnp.sin(c[1]) * 1.5),
                              (0, x))[1]

    check(f(dev(X)), f(X))
    loss = lambda x: fnp.sum(f(x) ** 2)  # noqa: E731
    check(ft.grad(loss)(dev(X)), ft.grad(loss)(X))
    # Reverse over reverse: the recorded loop's sweeps run on the device too.
    check(ft.jacrev(ft.grad(loss))(dev(X)), ft.jacrev(ft.grad(loss))(X), rtol=1e-10)


def test_device_put_moves_pytrees(fake):
    tree = {"a": np.ones(2), "b": (np.arange(3), 2.0)}
    on = ft.device_put(tree, "gpu")
    assert all(gpu.is_device_array(leaf) for leaf in ft.tree_util.tree_leaves(on))
    back = ft.device_put(on, "cpu")
    assert type(back["a"]) is np.ndarray and back["b"][0].tolist() == [0, 1, 2]
    from functrans.devices import device_of

    assert device_of(on["a"]) == "gpu" and device_of(back["a"]) == "cpu"
