"""functrans.sparse: sparse Jacobians and Hessians equal the dense ones, and
their patterns never miss a nonzero, on random and real programs; jit,
float32, n-D inputs, several argnums; the errors."""

import subprocess
import sys
import threading

import numpy as np
import pytest
from _programs import dataflow, scalar_program, vector_program
from _real_programs import REAL, minimal_surface, rosenbrock
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
import functrans.sparse as fsp
from functrans import lax
from functrans.errors import ConcretizationError, DTypeError, FunctransError, ShapeError

N = 7
RNG = np.random.default_rng(0)
BANDED = np.triu(np.tril(RNG.normal(size=(N, N)), 1), -1)  # a tridiagonal constant
MASK = RNG.random(N) > 0.5


def shift(v):
    return fnp.concatenate([v[1:], v[:1]])


UNARY = [
    fnp.sin,
    lambda v: fnp.exp(0.3 * v),
    lambda v: v ** 2,
    lambda v: v[::-1],
    shift,
    fnp.tanh,
    lambda v: BANDED @ v,
    lambda v: fnp.sum(v) * fnp.ones(N),  # couples every element
    lambda v: fnp.pad(v[1:], (0, 1)),
    lambda v: v.reshape(N, 1).T.reshape(N),
    lambda v: fnp.where(MASK, v, 2.0),
    fnp.abs,
]
BINARY = [
    fnp.add,
    fnp.multiply,
    fnp.subtract,
    lambda a, b: a / (1.5 + b ** 2),
    fnp.maximum,
    lambda a, b: fnp.where(MASK, a, b),
    lambda a, b: fnp.dot(a, b) * fnp.ones(N),
]


def program_function(program):
    return scalar_program(program, UNARY, BINARY)


def program_vector(program):
    return vector_program(program, UNARY, BINARY)


def assert_covers(pattern, dense):
    missing = (dense != 0) & ~pattern.toarray()
    assert not missing.any(), f"pattern misses {np.argwhere(missing)[:5]}"


def assert_equal_dense(sparse, dense):
    scale = max(1.0, float(np.abs(dense).max(initial=0.0)))
    np.testing.assert_allclose(sparse.toarray(), dense, rtol=1e-12, atol=1e-12 * scale)


@settings(max_examples=25, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 1, 6), st.integers(0, 2**31))
def test_random_programs_hessian(program, seed):
    f = program_function(program)
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, N)
    dense = ft.hessian(f)(x)
    pattern = fsp.hessian_sparsity(f)(x)
    assert_covers(pattern, dense)
    assert (pattern != pattern.T).nnz == 0
    h = fsp.hessian(f)(x)
    assert isinstance(h, fsp._api.sp.csr_array)
    assert (h != h.T).nnz == 0  # both halves read one entry
    assert_equal_dense(h, dense)


@settings(max_examples=25, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 1, 6), st.integers(0, 2**31),
       st.sampled_from(["auto", "fwd", "rev"]))
def test_random_programs_jacobian(program, seed, mode):
    f = program_vector(program)
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, N)
    dense = ft.jacfwd(f)(x)
    assert_covers(fsp.jacobian_sparsity(f)(x), dense)
    assert_equal_dense(fsp.jacobian(f, mode=mode)(x), dense)


# -- real programs ------------------------------------------------------------------


@pytest.mark.parametrize("f, shape", REAL, ids=[f.__name__ for f, _ in REAL])
def test_real_programs(f, shape):
    x = RNG.uniform(0.2, 1.3, shape)
    dense = ft.hessian(f)(x).reshape(x.size, x.size)
    pattern = fsp.hessian_sparsity(f)(x)
    assert_covers(pattern, dense)
    assert_equal_dense(fsp.hessian(f)(x), dense)
    g = ft.grad(f)
    jac = ft.jacfwd(g)(x).reshape(x.size, x.size)
    assert_equal_dense(fsp.jacobian(g)(x), jac)


def test_jit_float32_and_nd():
    x = RNG.uniform(0.5, 1.0, (3, 4)).astype(np.float32)
    hs = fsp.hessian(minimal_surface)(x)
    assert hs.dtype == np.float32 and hs.shape == (12, 12)
    dense = ft.hessian(minimal_surface)(x).reshape(12, 12)
    np.testing.assert_allclose(hs.toarray(), dense, rtol=1e-5, atol=1e-5)


def test_a_jitted_function():
    x = RNG.uniform(0.5, 1.0, 9)
    h = fsp.hessian(ft.jit(rosenbrock))
    assert_equal_dense(h(x), ft.hessian(rosenbrock)(x))
    assert h.plan(x).n_colours == 3


def test_several_argnums_and_other_arguments():
    def f(a, c, b):
        return fnp.sum(c * a[1:] * b[:-1]) + fnp.sum(a ** 3)

    a, b, c = RNG.normal(size=4), RNG.normal(size=4), RNG.normal(size=3)
    h = fsp.hessian(f, argnums=(0, 2))(a, c, b)
    dense = ft.hessian(lambda ab: f(ab[:4], c, ab[4:]))(np.concatenate([a, b]))
    assert_equal_dense(h, dense)
    # A plan is made per argument signature and reused.
    hf = fsp.hessian(f, argnums=(0, 2))
    hf(a, c, b)
    hf(a + 1, c * 2, b)
    assert len(hf._plans) == 1
    assert_equal_dense(hf(a, 2 * c, b),
                       ft.hessian(lambda ab: f(ab[:4], 2 * c, ab[4:]))(np.concatenate([a, b])))


def test_control_flow_is_conservative_and_correct():
    def f(x):
        y = lax.cond(x[0] > 0, lambda v: v ** 2, lambda v: fnp.sin(v), x)
        z = lax.fori_loop(0, 3, lambda i, v: v * fnp.roll(v, 1), y)
        return fnp.sum(z)

    x = RNG.uniform(0.1, 1.0, 6)
    dense = ft.hessian(f)(x)
    assert_covers(fsp.hessian_sparsity(f)(x), dense)
    assert_equal_dense(fsp.hessian(f)(x), dense)


def longloop(x):
    return fnp.sum(lax.fori_loop(0, 40, lambda i, v: v + 0.01 * fnp.sin(v[::-1]), x))


def while_loop(x):
    body = lambda c: (c[0] * 1.1 + fnp.sin(shift(c[0])), c[1] + 1)  # noqa: E731
    return fnp.sum(lax.while_loop(lambda c: c[1] < 3, body, (x, 0))[0])


def scan(x):
    c, ys = lax.scan(lambda c, xi: (c + xi ** 2, c * xi), 0.0, x)
    return c + fnp.sum(ys)


def custom_rule(x):
    return fnp.sum(fnp.sinc(x) * x[::-1])


def checkpointed(x):
    return fnp.sum(ft.checkpoint(lambda v: fnp.sin(v) * shift(v))(x))


@pytest.mark.parametrize("f", [longloop, while_loop, scan, custom_rule, checkpointed])
def test_loops_and_custom_rules(f):
    x = RNG.uniform(0.1, 1.0, 6)
    dense = ft.hessian(f)(x)
    assert_covers(fsp.hessian_sparsity(f)(x), dense)
    assert_equal_dense(fsp.hessian(f)(x), dense)


def test_value_dependent_index_is_conservative():
    def f(x):
        i = fnp.argmax(x)
        return fnp.sum(x * x[i]) + fnp.sum(x[1:] ** 2)

    x = RNG.uniform(0.1, 1.0, 5)
    dense = ft.hessian(f)(x)
    assert_covers(fsp.hessian_sparsity(f)(x), dense)
    assert_equal_dense(fsp.hessian(f)(x), dense)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_given_sparsity_is_used_instead_of_detection(mode):
    """Rows that gather by a traced index: detection must take every column,
    a given pattern (dense or scipy.sparse) knows better; the values equal
    the dense Jacobian's, and the wrong shape is an error."""
    import scipy.sparse as sp

    idx = np.array([3, 0, 2, 1, 3, 0])

    def f(x, i):
        return x[i] ** 2

    x = RNG.uniform(0.5, 2.0, 4)
    assert fsp.jacobian_sparsity(f)(x, idx).nnz == 24
    pattern = np.zeros((6, 4))
    pattern[np.arange(6), idx] = 1.0
    dense = ft.jacfwd(f)(x, idx)
    for as_given in (pattern, sp.csr_array(pattern), pattern.astype(bool)):
        jac = fsp.jacobian(f, mode=mode, sparsity=as_given)
        out = jac(x, idx)
        # Forward: every column in one product; reverse: rows 0 and 4 (and
        # 1 and 5) read the same column, two colours.
        assert out.nnz == 6 and jac.plan(x, idx).n_colours == (1 if mode == "fwd" else 2)
        np.testing.assert_array_equal(out.toarray(), dense)
    with pytest.raises(ShapeError, match=r"sparsity has shape \(4, 6\); the Jacobian has shape "
                                         r"\(6, 4\)"):
        fsp.jacobian(f, sparsity=pattern.T)(x, idx)


def test_threads_share_a_plan():
    h = fsp.hessian(rosenbrock)
    x = np.ones(30)
    results = []
    threads = [threading.Thread(target=lambda: results.append(h(x))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all((r != results[0]).nnz == 0 for r in results)


# -- errors -------------------------------------------------------------------------


def test_error_non_scalar_hessian():
    with pytest.raises(ShapeError, match=r"sparse.hessian\(<lambda>\): the function must "
                                         r"return a scalar, got f64\[3\]; sum it"):
        fsp.hessian(lambda x: x ** 2)(np.ones(3))


def test_error_complex_and_integer_inputs():
    with pytest.raises(DTypeError, match=r"argument 0 is complex \(c128\[3\]\); sparse "
                                         "derivatives take real inputs"):
        fsp.hessian(lambda x: fnp.sum(fnp.abs(x)))(np.ones(3, complex))
    with pytest.raises(DTypeError, match=r"argument 0 has dtype int64 .* must be floats"):
        fsp.jacobian(lambda x: x * 2.0)(np.arange(3))


def test_error_python_branch_on_a_value():
    def f(x):
        return fnp.sum(x ** 2) if x[0] > 0 else fnp.sum(x)

    with pytest.raises(ConcretizationError, match=r"sparse.hessian\(f\): the sparsity pattern "
                                                  r"is found from the program alone.*where"):
        fsp.hessian(f)(np.ones(3))


def test_error_bad_arguments():
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple"):
        fsp.hessian(rosenbrock, argnums="x")
    with pytest.raises(ValueError, match="mode must be one of"):
        fsp.jacobian(rosenbrock, mode="sideways")
    with pytest.raises(ValueError, match="argnums value 2 is out of range"):
        fsp.hessian(rosenbrock, argnums=2)(np.ones(3))


def test_empty_scalar_and_derivative_free():
    assert fsp.hessian(lambda x: fnp.sum(x ** 2))(np.zeros(0)).shape == (0, 0)
    assert fsp.hessian(lambda x: x ** 3)(2.0).toarray().tolist() == [[12.0]]
    # Zero derivatives (floor, comparisons) store nothing; a linear function
    # has an empty Hessian.
    assert fsp.jacobian(fnp.floor)(np.ones(3)).nnz == 0
    assert fsp.jacobian(lambda x: (x > 0).astype(float))(np.ones(3)).nnz == 0
    assert fsp.hessian(lambda x: fnp.sum(3.0 * x[::-1]))(np.ones(3)).nnz == 0


def test_error_nearly_dense_pattern():
    with pytest.raises(FunctransError, match=r"sparse.jacobian_sparsity\(<lambda>\): sparsity "
                                             r"detection: 'cumsum' along an axis of 20000 "
                                             r"would hold 2e\+08 .* use the dense transforms"):
        fsp.jacobian_sparsity(lambda x: fnp.cumsum(x))(np.ones(20000))


def test_without_scipy_the_error_names_the_extra():
    code = ("import sys; sys.modules['scipy'] = None\n"
            "import functrans\n"
            "try:\n    functrans.sparse\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "functrans.sparse needs SciPy, which is not installed: pip install " \
           "functrans[scipy]" in out.stdout, out.stderr
