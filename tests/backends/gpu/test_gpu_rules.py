"""Every primitive's GPU path, from its declaration (see ``core.Primitive``).

* Completeness: each primitive in the registry has an elementwise CUDA rule,
  an impl written against the operands' array module (``xp_impl=True``) or
  a ``gpu=`` impl; the fused primitive is the backend's one kernel per group.
* Each primitive with ``xp_impl`` or ``gpu=``, run eagerly on device arrays
  (the stand-in for CuPy of tests/_gpu_fake.py, or CuPy on a GPU), gives its
  NumPy impl's dtypes and values and stays on the device; every function the
  stand-in was asked for is one CuPy has.
* The GPU program moves to the device what an impl makes on the host (the
  results of iota, which has no operand to take an array module from) and
  the Python-number literals an impl gets as its only operands.
"""

from __future__ import annotations

import importlib.util

import _gpu_fake
import numpy as np
import pytest
from functrans.primitives import collectives, indexing, linalg, reductions, shape
from functrans.primitives.elementwise import Cuda
from functrans.primitives.fused import fused_elementwise_p

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.backends import cupy as gpu
from functrans.errors import MissingRuleError
from functrans.tree_util import tree_structure

# -- completeness ------------------------------------------------------------------------



def gpu_path(prim: core.Primitive) -> str | None:
    if isinstance(prim.cuda, Cuda):
        return "elementwise kernel"
    if prim is fused_elementwise_p:
        return "the kernel of its group"
    if prim.gpu is not None:
        return "gpu impl"
    if prim.xp_impl:
        return "xp impl"
    return None


@pytest.mark.parametrize("name", [n for n in sorted(core.registry) if not n.startswith("test_")])
def test_every_primitive_declares_its_gpu_path(name):
    prim = core.registry[name]
    assert gpu_path(prim) is not None, (
        f"primitive '{name}' declares no GPU path: give it a cuda= rule, write its impl "
        "with xp = functrans.core.array_module(operands) and declare xp_impl=True, or add gpu="
    )


def test_a_declaration_gives_gpu_or_xp_impl_not_both():
    with pytest.raises(ValueError, match="give gpu= or xp_impl=True, not both"):
        core.Primitive("test_gpu_rules_both", abstract_eval=lambda x: x, impl=lambda x: x,
                       xp_impl=True, gpu=lambda x: x)
    assert "test_gpu_rules_both" not in core.registry


def test_the_backend_keys_nothing_by_primitive_name():
    source = open(gpu.__file__).read()
    for pattern in ("IMPLS", "NUMPY_IMPL_RUNS", "registry[", ".name ==", "lookup_primitive"):
        assert pattern not in source, pattern


# -- each primitive's GPU impl, eagerly on device arrays ------------------------------------

RNG = np.random.default_rng(0)
M = RNG.standard_normal((3, 4))
V = np.array([2.0, -0.0, np.nan, 1.0, 2.0, -3.0])
SPD = M[:, :3].T @ M[:, :3] + 3 * np.eye(3)
BATCH = RNG.standard_normal((2, 4, 4))
IDX = np.array([0, 2, 0, 1])

#: Operands and params per primitive: several dtypes, NaN, -0.0, ties and
#: empty axes where the impl treats them.
CASES: dict[str, list[tuple[tuple, dict]]] = {
    "broadcast_in_dim": [((V[:3],), dict(shape=(2, 3), broadcast_dimensions=(1,))),
                         ((np.float32(2.5),), dict(shape=(2,), broadcast_dimensions=()))],
    "reshape": [((M,), dict(new_sizes=(4, 3))), ((np.zeros((0, 2)),), dict(new_sizes=(2, 0)))],
    "transpose": [((M,), dict(permutation=(1, 0)))],
    "squeeze": [((M[:1],), dict(dimensions=(0,)))],
    "expand_dims": [((M,), dict(dimensions=(0, 3)))],
    "concatenate": [((M, M[:1].astype(np.float32)), dict(dimension=0))],
    "slice": [((M,), dict(start_indices=(0, 1), limit_indices=(3, 4), strides=(2, 2)))],
    "pad": [((M, np.float64(-0.0)), dict(padding_config=((1, 2, 1), (-1, 0, 0)))),
            ((M.astype(np.int8), np.int8(0)), dict(padding_config=((0, 1, 0), (2, 0, 0))))],
    "rev": [((M,), dict(dimensions=(0, 1)))],
    "reduce_sum": [((M,), dict(axes=(0,))), ((M > 0,), dict(axes=(0, 1))),
                   ((M.astype(np.int8),), dict(axes=(1,))),
                   ((M.astype(np.float16),), dict(axes=(0,))),
                   ((np.zeros((0, 3)),), dict(axes=(0,)))],
    "reduce_prod": [((M,), dict(axes=(1,))), ((M.astype(np.uint8),), dict(axes=(0,)))],
    "reduce_max": [((V,), dict(axes=(0,))), ((M.astype(np.int16),), dict(axes=(0, 1)))],
    "reduce_min": [((V[3:],), dict(axes=(0,))), ((M,), dict(axes=(1,)))],
    "reduce_and": [((M > -1,), dict(axes=(0,)))],
    "reduce_or": [((M > 1,), dict(axes=(1,)))],
    "argmax": [((V,), dict(axis=0, index_dtype=np.dtype(np.int32))),
               ((M,), dict(axis=1, index_dtype=np.dtype(np.int64)))],
    "argmin": [((V[3:],), dict(axis=0, index_dtype=np.dtype(np.int64)))],
    "cumsum": [((M,), dict(axis=1, reverse=True)), ((M > 0,), dict(axis=0, reverse=False))],
    "cumprod": [((M,), dict(axis=0, reverse=False)),
                ((M.astype(np.int32),), dict(axis=1, reverse=True))],
    "cummax": [((V,), dict(axis=0, reverse=False)), ((V,), dict(axis=0, reverse=True)),
               ((M.astype(np.int8),), dict(axis=1, reverse=False)),
               ((np.zeros((2, 0)),), dict(axis=1, reverse=False))],
    "cummin": [((M,), dict(axis=0, reverse=True)), ((V[::-1],), dict(axis=0, reverse=False))],
    "gather": [((M, IDX[:3]), dict(spec=(("array",), ("slice", 1, None, None)))),
               ((M,), dict(spec=(("int", -1), ("none",), ("slice", None, None, 2))))],
    "scatter": [((V, np.ones(4), IDX), dict(spec=(("array",),), mode="add")),
                ((V, np.ones(4), IDX), dict(spec=(("array",),), mode="max")),
                ((V, 5.0, IDX[:1]), dict(spec=(("array",),), mode="set")),
                ((V, 2.0), dict(spec=(("slice", 1, 4, None),), mode="mul")),
                ((V + 1j, np.full(4, 1 - 2j), IDX), dict(spec=(("array",),), mode="add")),
                ((np.arange(6, dtype=np.int8), np.int8(7), IDX), dict(spec=(("array",),),
                                                                      mode="add")),
                ((np.zeros(6, bool), np.ones(4, bool), IDX), dict(spec=(("array",),), mode="max")),
                ((V.astype(np.float16), np.ones(4, np.float16), IDX),
                 dict(spec=(("array",),), mode="min"))],
    "dynamic_slice": [((M, np.int64(2), np.int32(-1)), dict(slice_sizes=(2, 3)))],
    "dynamic_update_slice": [((M, np.ones((2, 2)), np.int64(5), np.int64(1)), {})],
    "dot_general": [((M, M), dict(dimension_numbers=(((1,), (1,)), ((), ())))),
                    ((M, M[0]), dict(dimension_numbers=(((1,), (0,)), ((), ())))),
                    ((M[0], M), dict(dimension_numbers=(((), ()), ((), ())))),
                    ((BATCH, BATCH), dict(dimension_numbers=(((2,), (1,)), ((0,), (0,))))),
                    ((BATCH, BATCH), dict(dimension_numbers=(((1,), (2,)), ((0,), (0,))))),
                    ((BATCH, BATCH[0]), dict(dimension_numbers=(((2, 1), (0, 1)), ((), ())))),
                    ((M.astype(np.float32), M), dict(dimension_numbers=(((0,), (0,)), ((), ())))),
                    ((M.astype(np.int32), M.astype(np.int32)),
                     dict(dimension_numbers=(((1,), (1,)), ((), ()))))],
    "triangular_solve": [((SPD, M[:, :3]), dict(lower=True, transpose_a=True, conjugate_a=False,
                                                unit_diagonal=False)),
                         ((BATCH + 1j * BATCH, BATCH[:, :, :1]),
                          dict(lower=True, transpose_a=False, conjugate_a=True,
                               unit_diagonal=False)),
                         ((BATCH, BATCH[:, :, :2]), dict(lower=False, transpose_a=False,
                                                         conjugate_a=False, unit_diagonal=True))],
    "lu": [((BATCH,), {}), ((SPD.astype(np.complex128) * 1j,), {}),
           ((np.array([[0.0, 1.0], [0.0, 2.0]]),), {}), ((SPD.astype(np.float32),), {}),
           ((np.zeros((2, 0, 0)),), {})],
    "lu_pivots_to_permutation": [((np.array([[2, 2, 2], [0, 2, 2]], np.int32),),
                                  dict(permutation_size=4))],
    "cholesky": [((SPD,), {}), ((np.stack([SPD, 2 * SPD]),), {})],
    "eigh": [((SPD,), {})],
    "qr": [((M,), dict(full_matrices=False)), ((M.T,), dict(full_matrices=True))],
    "svd": [((M,), dict(full_matrices=False, compute_uv=True)),
            ((BATCH,), dict(full_matrices=True, compute_uv=False))],
    "sort": [((V,), dict(axis=0)), ((np.array([[2, 1, 2, 1]], np.int16),), dict(axis=1))],
    "stop_gradient": [((M,), {}), ((M.astype(np.int32),), {})],
    "bitcast_convert_type": [((V,), dict(new_dtype=np.dtype(np.int64))),
                             ((M.T,), dict(new_dtype=np.dtype(np.uint8))),
                             ((M.astype(np.float32).reshape(6, 2),),
                              dict(new_dtype=np.dtype(np.complex64))),
                             ((np.float64(-0.0),), dict(new_dtype=np.dtype(np.int16)))],
    "band_fill": [((V, V[::-1]), dict(offsets=(0, -2), start=1, rows=4, shape=(6,),
                                      transposed=False)),
                  ((M, M.reshape(-1).astype(np.float64)), dict(offsets=(3, 1), start=0, rows=5,
                                                               shape=(3, 4), transposed=True)),
                  ((M.astype(np.int8),), dict(offsets=(20,), start=0, rows=2, shape=(3, 4),
                                              transposed=False)),
                  ((np.zeros(0),), dict(offsets=(0,), start=0, rows=3, shape=(0,),
                                        transposed=True))],
    "digamma": [((np.abs(V) + 0.5,), {}), ((np.array([1.5, 3.0], np.float32),), {})],
    "polygamma": [((np.array([1, 2]), np.array([0.5, 4.0])), {})],
    # prints its device operand; no results (tests/api/test_debug_print.py)
    "debug_print": [((V,), dict(fmt="{}", tree=tree_structure(((0,), {})), statics=(),
                                batch=()))],
}

#: Impls whose GPU algorithm is another one than the CPU's (the same result up
#: to rounding; for LU the same pivots, as neither matrix has ties).
APPROXIMATE = {"lu", "triangular_solve", "digamma", "polygamma"}
#: Primitives that evaluate sub-Jaxprs: tests/backends/gpu/test_dispatch.py runs them on the device.
SUB_JAXPR = {"cond", "scan", "while_loop", "recorded_loop", "custom_jvp_call",
             "custom_vjp_call", "custom_lin", "checkpoint"}


#: The collectives: outside vmap they need a process group (MPI, NCCL on the GPU).
COLLECTIVES = {n for n, p in core.registry.items()
               if any(p is v for v in vars(collectives).values())}


def test_every_primitive_with_a_gpu_impl_has_cases():
    declared = {n for n, p in core.registry.items()
                if (p.xp_impl or p.gpu is not None) and not n.startswith("test_")} - COLLECTIVES
    covered = set(CASES) | {"iota"}  # iota has no operands: see the program tests below
    assert declared - covered == SUB_JAXPR, declared - covered
    assert set(CASES) <= declared



def _to_device(x):
    if isinstance(x, np.ndarray) or isinstance(x, np.generic) and x.ndim == 0 \
            and not isinstance(x, np.integer):
        return ft.device_put(np.asarray(x), "gpu")
    return x  # Python numbers and NumPy integer scalars (start indices) stay on the host


def _check(name, got, want):
    for g, w in zip(got if isinstance(got, list) else [got],
                    want if isinstance(want, list) else [want]):
        assert gpu.is_device_array(g), f"{name}: a {type(g).__name__}, not a device array"
        g = g.get()
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g, w)
        if name in APPROXIMATE:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        else:
            np.testing.assert_array_equal(g, w)
            assert (np.signbit(g.real) == np.signbit(w.real)).all(), (name, g, w)


@pytest.mark.parametrize("name, k", [(n, k) for n in sorted(CASES) for k in range(len(CASES[n]))])
def test_gpu_impl_matches_the_numpy_impl(device, name, k):
    prim = core.registry[name]
    args, params = CASES[name][k]
    with np.errstate(invalid="ignore"):  # NaN among the values compared
        want = prim.impl(*args, **params)
        got = prim.bind(*[_to_device(a) for a in args], **params)
    _check(name, got, want)


def test_gpu_impls_raise_what_cuda_cannot_do(device):
    x = _to_device(V)
    with pytest.raises(NotImplementedError, match="CUDA has no atomic multiply"):
        indexing.scatter_p.bind(x, _to_device(np.ones(4)), _to_device(IDX),
                                spec=(("array",),), mode="mul")
    with pytest.raises(NotImplementedError, match=r"x.at\[index\].max\(\) of complex arrays"):
        indexing.scatter_p.bind(_to_device(V + 1j), _to_device(np.ones(4) + 0j),
                                _to_device(IDX), spec=(("array",),), mode="max")


def test_the_stand_in_only_offers_what_cupy_has(device):
    """Run after the cases above (same module): the functions the impls asked the
    stand-in for, and its array methods, all exist in CuPy."""
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("needs CuPy installed (no GPU needed)")
    import cupy

    modules = {"cupy": cupy, "cupy.linalg": cupy.linalg}
    missing = [f"{path}.{name}" for path, name in sorted(_gpu_fake.USED)
               if not hasattr(modules[path], name)]
    missing += [f"cupy.ndarray.{m}" for m in _gpu_fake.METHODS if not hasattr(cupy.ndarray, m)]
    assert not missing


# -- the GPU program: host-made values moved to the device ----------------------------------


def test_host_results_and_literal_operands_go_to_the_device(device):
    # Written out: tracing would evaluate the operand-free equations at once.
    f64 = np.dtype(np.float64)
    x, counts, half, both, sums, out = (core.Var(core.ShapedArray(s, f64)) for s in
                                        [(3,), (2, 3), (1, 3), (3, 3), (3,), (3,)])
    eqns = [
        core.Eqn(shape.iota_p, (), (counts,), dict(dtype=f64, shape=(2, 3), dimension=1)),
        core.Eqn(shape.broadcast_in_dim_p, (core.Literal(0.5, core.get_aval(0.5)),), (half,),
                 dict(shape=(1, 3), broadcast_dimensions=())),
        core.Eqn(shape.concatenate_p, (counts, half), (both,), dict(dimension=0)),
        core.Eqn(reductions.reduce_sum_p, (both,), (sums,), dict(axes=(0,))),
        core.Eqn(core.registry["add"], (sums, x), (out,), {}),
    ]
    closed = core.ClosedJaxpr(core.Jaxpr([], [x], [out], eqns), [])
    core.check_jaxpr(closed.jaxpr)
    got = core.run_jaxpr(closed, [_to_device(np.array([1.0, 2.0, 3.0]))])[0]
    assert gpu.is_device_array(got)
    np.testing.assert_array_equal(got.get(), [1.5, 4.5, 7.5])


def test_an_impl_that_converts_to_numpy_names_the_fix(device):
    def host_only(x):
        return np.asarray(x) + 1

    host_only.__module__ = "functrans.primitives.example"
    prim = core.Primitive("test_gpu_rules_host_only", abstract_eval=lambda x: x, impl=host_only)
    try:
        with pytest.raises(MissingRuleError, match=(
                r"primitive 'test_gpu_rules_host_only' has no GPU impl, and its NumPy impl "
                r"converts its operands to NumPy arrays, which would copy them to the host; "
                r"write the impl with the operands' array module \(xp = "
                r"functrans.core.array_module\(operands\)\) or add gpu= to the declaration in "
                r"functrans/primitives/example.py, or run this on the CPU")):
            prim.bind(_to_device(V))
    finally:
        del core.registry[prim.name]


def test_an_impl_that_returns_host_arrays_names_the_fix(device):
    def host_result(x):
        return np.zeros(x.shape)

    host_result.__module__ = "functrans.primitives.example"
    prim = core.Primitive("test_gpu_rules_host_result", abstract_eval=lambda x: x,
                          impl=host_result)
    try:
        with pytest.raises(MissingRuleError, match=(
                r"primitive 'test_gpu_rules_host_result' has no GPU impl, and its NumPy impl "
                r"returned a NumPy array for CuPy operands; write the impl with the operands' "
                r"array module .* or add gpu= to the declaration in "
                r"functrans/primitives/example.py, or run this on the CPU")):
            prim.bind(_to_device(V))
    finally:
        del core.registry[prim.name]


def test_a_gpu_impl_that_returns_host_arrays_is_named_as_such(device):
    def host_result(x):
        return np.zeros(x.shape)

    host_result.__module__ = "functrans.primitives.example"
    prim = core.Primitive("test_gpu_rules_host_gpu_impl", abstract_eval=lambda x: x,
                          impl=host_result, gpu=host_result)
    try:
        with pytest.raises(MissingRuleError, match=(
                r"primitive 'test_gpu_rules_host_gpu_impl': its gpu= impl in "
                r"functrans/primitives/example.py returned a NumPy array for CuPy operands; "
                r"make it return CuPy arrays")):
            prim.bind(_to_device(V))
    finally:
        del core.registry[prim.name]


# -- pad keeps a padding value of -0.0 ---------------------------------------------------------


def test_padding_with_negative_zero_keeps_its_sign():
    x = np.ones(2)
    want = np.pad(x, 1, constant_values=-0.0)
    for got in (shape.pad_p.bind(x, np.float64(-0.0), padding_config=((1, 1, 0),)),
                shape.pad_p.bind(x, -0.0, padding_config=((1, 1, 0),)),
                ft.jit(lambda v: fnp.pad(v, 1, constant_values=-0.0))(x)):
        assert np.signbit(got).tolist() == np.signbit(want).tolist()
    plus = shape.pad_p.bind(x, 0.0, padding_config=((1, 1, 0),))
    assert not np.signbit(plus).any()


def test_cholesky_of_a_matrix_that_is_not_positive_definite_raises(device):
    """cuSOLVER gives NaN (and the stand-in, like CuPy, passes it on); NumPy raises."""
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    for a in (bad, np.stack([SPD[:2, :2], bad])):
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
            linalg.cholesky_p.bind(_to_device(a))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        fnp.linalg.cholesky(_to_device(bad))


def test_cholesky_checks_each_matrix_of_a_stack(device):
    """A NaN matrix factorises to NaN quietly (NumPy too), but does not hide
    a matrix beside it that is not positive definite."""
    nan = np.array([[np.nan, 0.0], [0.0, 1.0]])
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        np.linalg.cholesky(np.stack([nan, bad]))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        linalg.cholesky_p.bind(_to_device(np.stack([nan, bad])))
    got = linalg.cholesky_p.bind(_to_device(np.stack([nan, SPD[:2, :2]]))).get()
    np.testing.assert_array_equal(got, np.linalg.cholesky(np.stack([nan, SPD[:2, :2]])))


def test_solve_det_and_slogdet_on_the_gpu(device):
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((2, 4, 3))
    # det and slogdet jitted: eagerly, functrans/numpy/linalg.py mixes host
    # constants in (np.arange), which a GPU call refuses.
    for f in (fnp.linalg.solve, ft.jit(lambda a, b: fnp.linalg.det(a)),
              ft.jit(lambda a, b: fnp.linalg.slogdet(a)[1])):
        want = f(a, b)
        got = f(_to_device(a), _to_device(b))
        assert gpu.is_device_array(got)
        np.testing.assert_allclose(got.get(), want, rtol=1e-10)
    g = ft.grad(lambda m: fnp.sum(fnp.linalg.solve(m, b)))
    np.testing.assert_allclose(g(_to_device(a)).get(), g(a), rtol=1e-10)


def test_the_gradient_of_gammaln_on_the_gpu(device):
    """lgamma' is digamma and digamma' polygamma(1, .): CuPy's special functions."""
    import functrans.scipy.special as sps

    x = np.array([0.5, 1.5, 4.0])
    f = ft.grad(lambda v: fnp.sum(sps.gammaln(v) * v))
    np.testing.assert_allclose(f(_to_device(x)).get(), f(x), rtol=1e-12)
    h = ft.jit(ft.grad(lambda v: fnp.sum(sps.digamma(v))))
    np.testing.assert_allclose(h(_to_device(x)).get(), h(x), rtol=1e-12)


def test_lu_on_the_gpu_solves(device):
    a = RNG.standard_normal((3, 5, 5))
    lu, pivots, perm = linalg.lu_p.bind(_to_device(a))
    lu, perm = lu.get(), perm.get()
    lower = np.tril(lu, -1) + np.eye(5)
    upper = np.triu(lu)
    np.testing.assert_allclose(np.take_along_axis(a, perm[..., None], axis=1),
                               lower @ upper, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("starts", [(1, 2), (-3, 1), (7, -1), (0, 9)])
def test_dynamic_slices_with_device_starts_stay_on_the_device(device, starts, monkeypatch):
    """Start indices on the device are not read back (that would wait for the
    GPU): the window is gathered, or scattered, at clamped coordinates."""
    if device == "fake":
        def no_reads(self, *args):
            raise AssertionError("a device start index was read to the host")

        for name in ("__int__", "__index__", "__bool__", "get"):
            monkeypatch.setattr(_gpu_fake.ndarray, name, no_reads, raising=False)
    s = [np.int32(v) for v in starts]
    ds = [ft.device_put(np.asarray(v), "gpu") for v in s]
    got = indexing.dynamic_slice_p.bind(_to_device(M), *ds, slice_sizes=(2, 3))
    got_u = indexing.dynamic_update_slice_p.bind(_to_device(M), _to_device(np.ones((2, 2))),
                                                 *ds)
    monkeypatch.undo()
    np.testing.assert_array_equal(
        got.get(), indexing.dynamic_slice_p.impl(M, *s, slice_sizes=(2, 3)))
    np.testing.assert_array_equal(
        got_u.get(), indexing.dynamic_update_slice_p.impl(M, np.ones((2, 2)), *s))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint64", "int64"])
def test_device_starts_at_their_dtypes_extremes_clamp_as_on_the_cpu(device, dtype):
    """A uint64 start from 2**63 on is past the end, not negative (as int64
    it would wrap); the extremes of every width clamp as the CPU impl does."""
    info = np.iinfo(dtype)
    edges = [(info.max, 1), (1, info.max), (info.min, info.max - 1)]
    for starts in edges + ([(2**63, 2**63 + 5)] if dtype == "uint64" else []):
        s = [np.asarray(v, dtype) for v in starts]
        got = indexing.dynamic_slice_p.bind(_to_device(M), *map(_to_device, s),
                                            slice_sizes=(2, 3))
        np.testing.assert_array_equal(
            got.get(), indexing.dynamic_slice_p.impl(M, *s, slice_sizes=(2, 3)), err_msg=starts)
        got_u = indexing.dynamic_update_slice_p.bind(
            _to_device(M), _to_device(np.ones((2, 2))), *map(_to_device, s))
        np.testing.assert_array_equal(
            got_u.get(), indexing.dynamic_update_slice_p.impl(M, np.ones((2, 2)), *s),
            err_msg=starts)
