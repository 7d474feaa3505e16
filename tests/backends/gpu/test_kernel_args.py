"""The arguments of every generated kernel are what CuPy accepts.

CuPy broadcasts all array arguments of an ``ElementwiseKernel`` call, outputs
included, together, and takes only arrays of each parameter's dtype.  A
fused group input that is read only through a ``broadcast_in_dim`` must
therefore be passed as its view alone: passed as it is too, a (3,) operand
meets the (3, 4) output and CuPy refuses the call (every softmax, layer-norm
and row-reduction gradient has such a group).  Checked two ways, both
without a GPU:

* structurally, on the lowerings of those gradients and of random programs:
  the array arguments and outputs of each kernel broadcast to its shape;
* by running the programs on the stand-in for CuPy (tests/_gpu_fake.py),
  which makes CuPy's checks, against the CPU.
"""

from __future__ import annotations

import _gpu_fake
import numpy as np
import pytest
from _gpu_kernels import LOSSES, row_sum_loss
from _op_chains import program, programs
from hypothesis import given, settings

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import cupy as gpu

M = np.random.default_rng(0).uniform(-1, 1, (3, 4))


def kernel_problems(kernels) -> list[str]:
    """Each kernel whose array arguments (as passed: viewed or as they are)
    and outputs do not broadcast to its shape, as CuPy requires."""
    bad = []
    for k in kernels:
        shapes = [i.view or i.shape for i in k.inputs if not i.scalar]
        shapes += [a.shape for a in k.out_avals]
        try:
            together = np.broadcast_shapes(*shapes)
        except ValueError:
            together = None
        if together != k.shape or any(a.shape != k.shape for a in k.out_avals):
            bad.append(f"{k.name} over {k.shape}: arguments {shapes}\n{k.describe()}")
    return bad


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("transform", [ft.grad, ft.hessian], ids=["grad", "hessian"])
def test_kernel_arguments_broadcast_to_the_kernel_shape(loss, transform):
    low = ft.jit(transform(loss)).lower(ft.ShapeDtypeStruct((3, 4), np.float64), device="gpu")
    assert any(len(k.eqns) > 1 for k in low.kernels)
    assert not kernel_problems(low.kernels)


def test_an_input_read_only_through_a_broadcast_is_passed_as_its_view():
    low = ft.jit(ft.grad(row_sum_loss)).lower(M, device="gpu")
    (k,) = [k for k in low.kernels if any(i.view for i in k.inputs)]
    viewed = {i.operand for i in k.inputs if i.view is not None}
    direct = {i.operand for i in k.inputs if i.view is None}
    assert viewed and not viewed & direct


@settings(max_examples=25, deadline=None)
@given(programs())
def test_kernels_of_random_programs_broadcast(case):
    ops, x0, w = case
    f = program(ops)

    def loss(x, v):
        return fnp.sum(f(x, v) ** 2)

    lows = [ft.jit(ft.grad(loss)).lower(x0, w, device="gpu"),
            ft.jit(ft.grad(loss, argnums=1)).lower(x0, w, device="gpu"),
            ft.jit(f).lower(x0, w, device="gpu")]
    assert not kernel_problems([k for low in lows for k in low.kernels])


@pytest.fixture
def fake():
    module, undo = _gpu_fake.install()
    try:
        yield module
    finally:
        undo()


def _dev(x):
    return ft.device_put(np.asarray(x), "gpu")


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_the_gradients_run_on_the_strict_stand_in(fake, loss):
    for run in (ft.jit(ft.grad(loss)), ft.grad(loss)):
        got = run(_dev(M))
        assert gpu.is_device_array(got)
        np.testing.assert_allclose(got.get(), run(M), rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(programs())
def test_random_programs_run_on_the_strict_stand_in(case):
    ops, x0, w = case
    f = program(ops)
    grad = ft.jit(ft.grad(lambda x, v: fnp.sum(f(x, v) ** 2), argnums=(0, 1)))
    want = grad(x0, w)
    _, undo = _gpu_fake.install()
    try:
        got = grad(_dev(x0), _dev(w))
    finally:
        undo()
    for g, wnt in zip(got, want):
        np.testing.assert_allclose(g.get(), wnt, rtol=1e-9, atol=1e-9)


# -- the stand-in refuses what CuPy refuses -------------------------------------------------


def test_the_stand_in_makes_cupys_checks(fake):
    x = fnp.sin(_dev(M))  # builds and caches the kernel of sin on f64
    (name,) = [n for n in gpu._CUPY_KERNELS if n.startswith("ft_sin")]
    kernel = gpu._CUPY_KERNELS[name]
    out = fake.empty((3, 4), np.float64)
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes "
                                         r"\(3,\) \(3,4\)"):
        kernel(_dev(M[:, 0]), out)
    with pytest.raises(TypeError, match=r"Type is mismatched. in0 float32 float64"):
        kernel(_dev(M.astype(np.float32)), out)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy.ndarray'>"):
        kernel(M, out)
    with pytest.raises(ValueError, match=r"Out shape is mismatched"):
        kernel(_dev(M), fake.empty((1, 4), np.float64))
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy.ndarray'>"):
        fake.add(x, M)
    with pytest.raises(TypeError, match=r"cupy.add.at only supports int32, int64"):
        fake.add.at(_dev(np.zeros(3, np.int8)), _dev(np.array([0, 0])), 1)
    with pytest.raises(NotImplementedError, match=r"multiply.at` is not supported"):
        fake.multiply.at(_dev(np.zeros(3)), _dev(np.array([0, 0])), 1.0)
    # maximum.at on float64 rounds through float32 and drops NaN, as CuPy's atomics do.
    target = _dev(np.zeros(2))
    fake.maximum.at(target, _dev(np.array([0, 1])), _dev(np.array([1 + 2**-40, np.nan])))
    assert target.get().tolist() == [1.0, 0.0]


def test_eager_out_of_range_python_integers_are_written_into_the_kernel(fake):
    """As a typed scalar argument, -1 would be converted to the uint8 loop
    (255) inside the kernel; written into it, the comparison folds as NumPy's."""
    x = np.array([0, 7, 255], np.uint8)
    for f, want in ((lambda v: fnp.less(v, -1), [False] * 3),
                    (lambda v: fnp.greater_equal(v, -1), [True] * 3),
                    (lambda v: fnp.equal(v, 256), [False] * 3)):
        got = f(_dev(x))
        assert got.get().tolist() == want == f(x).tolist()
    kernels = [k for k in gpu._EAGER_KERNELS.values() if k.eqns[0].primitive.name == "lt"]
    assert any(k.operation == "out0 = false;" and not k.inputs for k in kernels)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        fnp.add(_dev(x), 300)
    assert fnp.add(_dev(x), 3).get().tolist() == (x + 3).tolist()  # in range: an argument


def test_eager_python_integers_beyond_int64_reach_a_uint64_kernel(fake):
    """2**63 fits the uint64 loop but not the int64 parameter of a Python
    integer, which CuPy refuses to pass: it is written into the kernel."""
    x = np.array([0, 1, 2**63], np.uint64)
    for f in (lambda v: fnp.add(v, 2**63), lambda v: fnp.less(v, 2**63 + 1),
              lambda v: fnp.equal(v, 2**64 - 1)):
        assert f(_dev(x)).get().tolist() == f(x).tolist()
