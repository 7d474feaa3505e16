"""The dense ``jacfwd``/``hessian`` push their one-hot basis as bands
(functrans.interpreters.structured, the band_fill primitive): the results
equal the dense push of the basis through ``vmap`` on random and real
programs, eagerly and under jit, with chunks, several argnums and pytrees,
float32, n-D and empty inputs; NaN and inf reach exactly the entries on the
bands that the dense push gives them, and structural zeros stay 0; the
jitted Rosenbrock Hessian does O(n) work before its one O(n^2) fill."""


import numpy as np
import pytest
from _programs import dataflow, scalar_program, vector_program
from _real_programs import banded_least_squares, laplacian_energy, rosenbrock
from functrans.primitives.indexing import dynamic_slice_p, dynamic_update_slice_p
from functrans.primitives.shape import pad_p
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import api, lax
from functrans.core import bind
from functrans.interpreters import structured
from functrans.tree_util import tree_flatten

N = 7
RNG = np.random.default_rng(3)
BANDED = np.triu(np.tril(RNG.normal(size=(N, N)), 1), -1)
MASK = RNG.random(N) > 0.5


def dense_push(transform, *args):
    """``transform(*args)`` with the basis pushed densely through ``vmap``
    (the reference: no bands anywhere)."""
    saved = api._structured_basis
    api._structured_basis = lambda *a: None
    try:
        return transform(*args)
    finally:
        api._structured_basis = saved


def assert_same(new, old, exact=False):
    """Equal entry by entry, NaN and inf in the same places (-0.0 == 0.0); to
    1e-12 unless ``exact``, as a sum over a member's elements adds the bands
    in another order than NumPy's pairwise sum of a dense row."""
    new, old = np.asarray(new), np.asarray(old)
    assert new.shape == old.shape and new.dtype == old.dtype
    if exact:
        np.testing.assert_array_equal(new, old)
    else:
        finite = np.abs(old[np.isfinite(old)])
        scale = max(1.0, float(finite.max(initial=0.0)))
        np.testing.assert_allclose(new, old, rtol=1e-12, atol=1e-12 * scale)


def assert_tree_same(new, old):
    new_leaves, new_tree = tree_flatten(new)
    old_leaves, old_tree = tree_flatten(old)
    assert new_tree == old_tree
    for a, b in zip(new_leaves, old_leaves):
        assert_same(a, b)


# -- random programs ----------------------------------------------------------------


def shift(v):
    return fnp.concatenate([v[1:], v[:1]])


UNARY = [
    fnp.sin,
    lambda v: fnp.exp(0.3 * v),
    lambda v: v ** 2,
    lambda v: -v / 3.0,
    shift,
    lambda v: fnp.pad(v[1:], (0, 1)),
    lambda v: fnp.pad(v[:-2] * 2.0, (2, 0)),
    lambda v: v.reshape(N, 1).T.reshape(N),
    lambda v: fnp.where(MASK, v, 2.0),
    lambda v: fnp.where(v > 0, v * v, 0.0),
    lambda v: v[::-1],  # no band rule: materialised, then vmap's rule
    lambda v: BANDED @ v,
    lambda v: fnp.sum(v) * fnp.ones(N),
    lambda v: fnp.cumsum(v),
    lambda v: v.astype(np.float32).astype(np.float64),
    fnp.tanh,
]
BINARY = [
    fnp.add,
    fnp.multiply,
    fnp.subtract,
    lambda a, b: a / (1.5 + b ** 2),
    lambda a, b: fnp.where(MASK, a, b),
    lambda a, b: fnp.concatenate([a[:3], b[3:]]),
    lambda a, b: fnp.dot(a, b) * fnp.ones(N),
    fnp.maximum,
]


def program_function(program):
    return scalar_program(program, UNARY, BINARY)


def program_vector(program):
    return vector_program(program, UNARY, BINARY)


@settings(max_examples=30, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 1, 6), st.integers(0, 2**31), st.booleans())
def test_random_programs_hessian(program, seed, jitted):
    f = program_function(program)
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, N)
    h = ft.jit(ft.hessian(f)) if jitted else ft.hessian(f)
    assert_same(h(x), dense_push(ft.hessian(f), x))


@settings(max_examples=30, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 1, 6), st.integers(0, 2**31),
       st.sampled_from([None, 1, 3, 100]))
def test_random_programs_jacfwd(program, seed, chunk_size):
    f = program_vector(program)
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, N)
    assert_same(ft.jacfwd(f, chunk_size=chunk_size)(x), dense_push(ft.jacfwd(f), x))


# -- real programs ------------------------------------------------------------------


def rosenbrock_hessian(x):
    """The closed form (hand-written, as in benchmarks/jacobians.py)."""
    n = x.size
    a, b = x[:-1], x[1:]
    h = np.zeros((n, n), x.dtype)
    i = np.arange(n - 1)
    h[i, i] = 1200.0 * a ** 2 - 400.0 * b + 2.0
    h[i + 1, i + 1] += 200.0
    h[i, i + 1] = h[i + 1, i] = -400.0 * a
    return h


def logsumexp(x):
    m = fnp.max(x)
    return m + fnp.log(fnp.sum(fnp.exp(x - m)))


W1 = RNG.normal(size=(5, 4)) / 2
W2 = RNG.normal(size=4)


def mlp(x):
    return fnp.tanh(fnp.tanh(x @ W1) @ W2)


REAL = [
    (rosenbrock, (12,)),
    (laplacian_energy, (4, 5)),
    (laplacian_energy, (1, 6)),
    (banded_least_squares, (N,)),
    (logsumexp, (6,)),
    (mlp, (5,)),
    (lambda x: fnp.sum(fnp.sin(x) * x[::-1]), (2, 3, 2)),
]


@pytest.mark.parametrize("f, shape", REAL, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_real_programs(f, shape, dtype):
    x = np.random.default_rng(1).uniform(-1.0, 1.0, shape).astype(dtype)
    want = dense_push(ft.hessian(f), x)
    assert_same(ft.hessian(f)(x), want)
    assert_same(ft.jit(ft.hessian(f))(x), dense_push(ft.jit(ft.hessian(f)), x))
    chunked = ft.hessian(f, chunk_size=4)
    assert_same(chunked(x), dense_push(chunked, x))
    grad = ft.grad(f)
    assert_same(ft.jacfwd(grad)(x), dense_push(ft.jacfwd(grad), x))


def test_rosenbrock_matches_the_closed_form():
    x = np.random.default_rng(2).uniform(-2.0, 2.0, 30)
    np.testing.assert_allclose(ft.jit(ft.hessian(rosenbrock))(x), rosenbrock_hessian(x),
                               rtol=1e-13, atol=1e-12)


def test_integer_valued_inputs():
    x = np.arange(-4.0, 5.0)
    assert_same(ft.hessian(rosenbrock)(x), dense_push(ft.hessian(rosenbrock), x), exact=True)
    np.testing.assert_array_equal(ft.hessian(rosenbrock)(x), rosenbrock_hessian(x))


# -- the structure is used ----------------------------------------------------------


def _big_equations(jaxpr, n):
    return [e.primitive.name for e in jaxpr.jaxpr.eqns
            if any(v.aval.size >= n * (n - 1) for v in e.outputs)]


def test_the_rosenbrock_hessian_program_fills_once():
    """Under jit, every equation but the one fill works on O(n) values; the
    dense push held 13 passes over (n, n) arrays."""
    n = 50
    x = np.linspace(-1.0, 1.0, n)
    assert _big_equations(ft.make_jaxpr(ft.hessian(rosenbrock))(x), n) == ["band_fill"]
    dense = _big_equations(dense_push(ft.make_jaxpr(ft.hessian(rosenbrock)), x), n)
    assert len(dense) > 5
    assert_same(ft.hessian(rosenbrock)(x), dense_push(ft.hessian(rosenbrock), x), exact=True)
    np.testing.assert_allclose(ft.jit(ft.hessian(rosenbrock))(x), rosenbrock_hessian(x),
                               rtol=1e-13, atol=1e-12)


def test_a_full_sum_makes_each_row_from_the_vectors():
    """jacfwd of a scalar function: the gradient, in O(n) equations."""
    n = 60
    f = lambda x: fnp.sum(fnp.sin(x[1:]) * x[:-1]) * 3.0  # noqa: E731
    x = np.linspace(-1.0, 1.0, n)
    assert _big_equations(ft.make_jaxpr(ft.jacfwd(f))(x), n) == []
    assert_same(ft.jacfwd(f)(x), dense_push(ft.jacfwd(f), x))
    np.testing.assert_allclose(ft.jit(ft.jacfwd(f))(x), ft.grad(f)(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("other", [0.0, 2.0])
def test_a_select_against_a_scalar_zero_keeps_the_bands(other):
    # The tangent of where(mask, x, c) selects against a scalar zero, a
    # structural zero of any shape (max's derivative selects this way too);
    # it materialised the basis.
    n = 40
    mask = np.random.default_rng(4).random(n) > 0.5
    f = lambda x: fnp.sum(fnp.where(mask, x, other) ** 2) * fnp.sin(x)  # noqa: E731
    x = np.linspace(-1.0, 1.0, n)
    big = _big_equations(ft.make_jaxpr(ft.jacfwd(f))(x), n)
    assert "select" not in big
    assert_same(ft.jacfwd(f)(x), dense_push(ft.jacfwd(f), x))
    assert_same(ft.jit(ft.jacfwd(f))(x), ft.jacfwd(f)(x), exact=True)


def test_a_bidiagonal_jacobian_has_two_bands():
    f = lambda x: x[1:] * x[:-1] + fnp.sin(x[1:])  # noqa: E731
    x = np.linspace(0.1, 1.0, 9)
    program, layout = structured.basis_program(*_linear(f, x))
    (out,) = layout
    assert type(out) is structured.BandsOut and out.offsets == (0, 1)
    assert not structured.dense_steps(layout)
    assert_same(ft.jacfwd(f)(x), dense_push(ft.jacfwd(f), x))


_R = np.random.default_rng(11)
_M = _R.normal(size=(5, 4))
_T = _R.normal(size=(2, 3, 4))
_W = _R.normal(size=(4, 3))

#: Contractions of the basis with a matrix (an argument, so that no product
#: is made while tracing), the matrix, and the Jacobian it gives.
_CONTRACTIONS = {
    "matrix @ vector": (lambda w, m: m @ w, _M, (4,), lambda m: m),
    "vector @ matrix": (lambda w, m: w @ m.T, _M, (4,), lambda m: m),
    "tensordot over two axes": (lambda w, t: fnp.tensordot(t, w, axes=([1, 2], [1, 0])), _T,
                                (4, 3), lambda t: t.transpose(0, 2, 1)),
    "contracted in another order": (lambda w, t: fnp.einsum("ijk,kj->i", t, w), _T, (4, 3),
                                    lambda t: t.transpose(0, 2, 1)),
    "a slice of the input": (lambda w, m: m[:, :3] @ w[1:], _M, (4,),
                             lambda m: np.concatenate([np.zeros((5, 1)), m[:, :3]], axis=1)),
}


@pytest.mark.parametrize("case", sorted(_CONTRACTIONS))
def test_the_basis_contracted_with_a_matrix_is_its_columns(case):
    """A contraction of the whole basis is the matrix itself (no product
    with the materialised basis), bit for bit, eagerly and under jit."""
    f, m, shape, jacobian = _CONTRACTIONS[case]
    w, want = _R.normal(size=shape), jacobian(m)
    for jac in (ft.jacfwd(f), ft.jit(ft.jacfwd(f))):
        np.testing.assert_array_equal(jac(w, m), want)
    assert_same(ft.jacfwd(f)(w, m), dense_push(ft.jacfwd(f), w, m), exact=True)
    program = ft.make_jaxpr(ft.jacfwd(f))(w, m)  # the primal's product only
    assert not [e for e in program.jaxpr.eqns if e.primitive.name == "dot_general"
                and e.outputs[0].aval.size >= want.size], case


def test_the_basis_of_several_inputs_contracted_with_matrices():
    # Bands at offsets 0 and 4 over 4 + 5 basis rows, in float32 and float64.
    a, b = _R.normal(size=(3, 4)), _R.normal(size=(3, 5)).astype(np.float32)
    f = lambda u, v: a @ u + b @ v  # noqa: E731
    u, v = _R.normal(size=4), _R.normal(size=5).astype(np.float32)
    for jac in (ft.jacfwd(f, argnums=(0, 1)), ft.jit(ft.jacfwd(f, argnums=(0, 1)))):
        ju, jv = jac(u, v)
        np.testing.assert_array_equal(ju, a)
        np.testing.assert_array_equal(jv, b.astype(np.float64))
        assert ju.dtype == jv.dtype == np.float64


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_contraction_keeps_inf_nan_and_minus_zero_in_their_own_entries():
    """The Jacobian of M @ w is M, its infinities, NaN and -0.0 included;
    the dense push's inf * 0 spread NaN along their rows and its sums made
    -0.0 into +0.0."""
    m = _M.copy()
    m[0, 1], m[2, 3], m[4, 0] = np.inf, np.nan, -0.0
    f = lambda w: m @ w  # noqa: E731
    w = _R.normal(size=4)
    for jac in (ft.jacfwd(f), ft.jit(ft.jacfwd(f))):
        got = jac(w)
        np.testing.assert_array_equal(got, m)
        assert np.signbit(got[4, 0])
    old = dense_push(ft.jacfwd(f), w)
    assert np.isnan(old[0, [0, 2, 3]]).all() and not np.signbit(old[4, 0])


def test_the_glm_hessian_multiplies_no_identity_matrix():
    """Forward over reverse of X @ w: the Hessian of a logistic regression's
    loss is one product X.T @ (d * X), not a product with the basis first."""
    rng = np.random.default_rng(5)
    x, y, w = rng.normal(size=(40, 6)), (rng.random(40) < 0.5) * 1.0, rng.normal(size=6) * 0.1

    def loss(w, x, y):  # x an argument: a product with it is no constant
        z = x @ w
        return fnp.sum(fnp.logaddexp(0.0, z) - y * z)

    s = 1.0 / (1.0 + np.exp(-(x @ w)))
    want = x.T @ ((s * (1.0 - s))[:, None] * x)
    closed = ft.make_jaxpr(ft.hessian(loss))(w, x, y)
    products = [e for e in closed.jaxpr.eqns if e.primitive.name == "dot_general"
                and sum(n > 1 for n in e.outputs[0].aval.shape) >= 2]  # matrix results
    assert len(products) == 1  # the dense push also multiplied X by the (6, 6) basis
    for hess in (ft.hessian(loss), ft.jit(ft.hessian(loss))):
        np.testing.assert_allclose(hess(w, x, y), want, rtol=1e-12, atol=1e-14)


def _linear(f, x, **options):
    captured = {}
    saved = api._structured_basis

    def spy(lin, in_avals, offsets, n_out, n_chunks):
        captured["args"] = (lin.linear, len(lin.residuals),
                            tuple((int(o), a) for o, a in zip(offsets, in_avals)), n_out)
        return saved(lin, in_avals, offsets, n_out, n_chunks)

    api._structured_basis = spy
    try:
        ft.jacfwd(f, **options)(x)
    finally:
        api._structured_basis = saved
    return captured["args"]


# -- argnums, pytrees, chunks, shapes -----------------------------------------------


def two_args(x, y):
    return fnp.sum(x[1:] * y[:-1] ** 2) + fnp.sum(fnp.sin(x) * y[::-1])


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
@pytest.mark.parametrize("chunk_size", [None, 1, 5])
def test_several_argnums(argnums, chunk_size):
    x, y = np.linspace(-1, 1, 6), np.linspace(0.5, 2, 6)
    h = ft.hessian(two_args, argnums, chunk_size=chunk_size)
    assert_tree_same(h(x, y), dense_push(ft.hessian(two_args, argnums), x, y))


def test_pytree_inputs_and_outputs():
    def f(p):
        a, b = p["a"], p["b"]
        return {"u": a[1:] * b[0, :2], "v": fnp.tanh(b).reshape(-1)[::2] + a[0]}

    p = {"a": np.linspace(-1, 1, 3), "b": np.linspace(0.5, 2, 6).reshape(2, 3)}
    for chunk in (None, 2):
        assert_tree_same(ft.jacfwd(f, chunk_size=chunk)(p), dense_push(ft.jacfwd(f), p))
        jitted = ft.jit(ft.jacfwd(f, chunk_size=chunk))
        assert_tree_same(jitted(p), dense_push(ft.jacfwd(f), p))


def test_has_aux_and_integer_outputs():
    def f(x):
        return x[1:] * x[:-1], (fnp.sum(x), x.astype(np.int32))

    x = np.linspace(1.0, 2.0, 5)
    jac, aux = ft.jacfwd(f, has_aux=True)(x)
    jac_old, aux_old = dense_push(ft.jacfwd(f, has_aux=True), x)
    assert_same(jac, jac_old)
    assert_tree_same(aux, aux_old)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0)])
def test_empty_inputs(shape):
    x = np.zeros(shape)
    f = lambda x: fnp.sum(x ** 3)  # noqa: E731
    assert_same(ft.hessian(f)(x), dense_push(ft.hessian(f), x))
    assert ft.hessian(f)(x).shape == shape + shape
    g = lambda x: fnp.concatenate([x.reshape(-1), fnp.ones(2)]) * 2.0  # noqa: E731
    assert_same(ft.jacfwd(g)(x), dense_push(ft.jacfwd(g), x))
    assert_same(ft.jit(ft.jacfwd(g))(x), dense_push(ft.jacfwd(g), x))


def test_empty_output_and_scalar_input():
    x = np.float64(1.5)
    f = lambda x: x * fnp.zeros(0)  # noqa: E731
    assert_same(ft.jacfwd(f)(x), dense_push(ft.jacfwd(f), x))
    g = lambda x: fnp.sin(x) * 3.0  # noqa: E731
    assert_same(ft.hessian(g)(x), dense_push(ft.hessian(g), x))
    assert_same(ft.jit(ft.hessian(g))(x), dense_push(ft.hessian(g), x))
    assert_same(ft.jit(ft.jacfwd(lambda x: x * fnp.ones(3)))(x), np.ones(3))


def test_complex_holomorphic():
    f = lambda z: z[1:] * z[:-1] + 1j * z[1:] ** 2  # noqa: E731
    z = np.linspace(0.5, 1.5, 5) + 0.3j
    assert_same(ft.jacfwd(f, holomorphic=True)(z),
                dense_push(ft.jacfwd(f, holomorphic=True), z))
    # conj, real and imag keep the bands (the map is then only real-linear)
    g = lambda z: fnp.conj(z[1:]) * z[:-1] + fnp.real(z[1:]) - 2j * fnp.imag(z[:-1])  # noqa: E731
    assert_same(ft.jacfwd(g, holomorphic=True)(z), dense_push(ft.jacfwd(g, holomorphic=True), z))
    lin = _linear(lambda z: fnp.conj(z[1:]) + fnp.real(z[:-1]), z, holomorphic=True)
    assert not structured.dense_steps(structured.basis_program(*lin)[1])


# -- NaN and inf: structural zeros stay zero ---------------------------------------


def assert_structural(new, old, generic):
    """``new`` against the dense push ``old`` at a point with a NaN or inf
    input, and ``generic``, the same derivative with that input finite: where
    ``old`` is finite, ``new`` is ``old`` bit for bit; ``new`` is non-finite
    only where ``old`` is; and where ``old`` is non-finite but ``new`` is not
    (a structural zero, or an entry the bad input does not reach, which the
    dense push spoils by ``0 * nan``), ``new`` is the entry's value at the
    generic point."""
    new, old, generic = np.asarray(new), np.asarray(old), np.asarray(generic)
    finite = np.isfinite(old)
    assert_same(new[finite], old[finite])
    assert not np.any(~np.isfinite(new) & finite)
    spared = ~finite & np.isfinite(new)
    np.testing.assert_allclose(new[spared], generic[spared], rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 4, 9])
def test_nan_and_inf_reach_only_their_entries(bad, where):
    """The entries that depend on a NaN or inf input are non-finite exactly as
    in the closed form (NaN, or inf of its sign); the others keep their
    finite values and structural zeros stay 0, where the dense push spreads
    NaN over whole rows."""
    x = np.linspace(-1.0, 1.0, 10)
    generic = ft.hessian(rosenbrock)(x)
    x[where] = bad
    want = rosenbrock_hessian(x)
    new, old = ft.hessian(rosenbrock)(x), dense_push(ft.hessian(rosenbrock), x)
    np.testing.assert_allclose(new, want, rtol=1e-13, atol=1e-12)  # NaN and inf in place
    np.testing.assert_allclose(ft.jit(ft.hessian(rosenbrock))(x), want, rtol=1e-13, atol=1e-12)
    assert_structural(new, old, generic)
    assert np.isnan(old).sum() > np.isnan(new).sum()  # what the dense push did


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_on_a_band_in_float32_and_chunks():
    x = np.linspace(-1.0, 1.0, 9).astype(np.float32)
    x[2] = np.nan
    want = rosenbrock_hessian(x)
    for h in (ft.hessian(rosenbrock, chunk_size=2), ft.jit(ft.hessian(rosenbrock))):
        got = h(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


@settings(max_examples=25, deadline=None)
@given(dataflow(len(UNARY), len(BINARY), 1, 6), st.integers(0, 2**31),
       st.sampled_from([np.nan, np.inf]), st.integers(0, N - 1))
def test_random_programs_with_a_nan_input(program, seed, bad, where):
    f = program_function(program)
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, N)
    generic = dense_push(ft.hessian(f), x)
    x[where] = bad
    with np.errstate(all="ignore"):
        assert_structural(ft.hessian(f)(x), dense_push(ft.hessian(f), x), generic)


def test_nan_in_an_unselected_branch():
    f = lambda x: fnp.sum(fnp.where(x > 0, x ** 3, fnp.log(x)))  # noqa: E731
    x = np.array([1.0, -1.0, 2.0, 0.5])
    with np.errstate(all="ignore"):
        new, old = ft.hessian(f)(x), dense_push(ft.hessian(f), x)
    # log's branch: its second derivative -1/x**2 at x = -1; x**3's elsewhere
    np.testing.assert_array_equal(new, np.diag([6.0, -1.0, 12.0, 3.0]))
    assert_structural(new, old, new)


# -- transforms around and inside ---------------------------------------------------


def test_under_vmap_and_grad():
    xs = np.random.default_rng(4).uniform(-1, 1, (3, 6))
    h = ft.vmap(ft.hessian(rosenbrock))
    assert_same(h(xs), dense_push(h, xs))
    assert_same(ft.jit(h)(xs), dense_push(h, xs))
    g = ft.grad(lambda x: fnp.sum(ft.hessian(rosenbrock)(x) ** 2))
    assert_same(g(xs[0]), dense_push(g, xs[0]))
    third = ft.jacfwd(ft.hessian(rosenbrock))
    assert_same(third(xs[0]), dense_push(third, xs[0]))


def test_control_flow_and_custom_rules_materialise():
    @ft.custom_jvp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1 + fnp.exp(-p[0]))))

    def f(x):
        y = lax.fori_loop(0, 3, lambda i, c: fnp.sin(c) * 1.1, x)
        return fnp.sum(softplus(y[1:] * y[:-1]))

    x = np.linspace(-1, 1, 6)
    assert_same(ft.hessian(f)(x), dense_push(ft.hessian(f), x))
    assert_same(ft.jit(ft.hessian(f))(x), dense_push(ft.hessian(f), x))


def test_collectives_take_the_vmap_path():
    def f(x):
        return x * lax.psum(fnp.sum(x ** 2), "i")

    xs = np.linspace(0.5, 1.5, 6).reshape(2, 3)
    j = ft.vmap(ft.jacfwd(f), axis_name="i")
    assert_same(j(xs), dense_push(j, xs))


def test_jacrev_does_not_push_bands(monkeypatch):
    def fail(*args):
        raise AssertionError("jacrev pushed the input basis")

    monkeypatch.setattr(structured, "basis_program", fail)
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(ft.jacrev(ft.grad(rosenbrock))(x), rosenbrock_hessian(x),
                               rtol=1e-13, atol=1e-12)
    with pytest.raises(AssertionError, match="pushed the input basis"):
        ft.hessian(rosenbrock)(x)


# -- n-D movement: raveled shifts where they are one, materialised where not ---------

SHAPE = (3, 4)
MOVES = [
    lambda u: fnp.pad(u[1:, :], ((0, 1), (0, 0))),  # a shift of whole rows
    lambda u: fnp.pad(u[:, 1:], ((0, 0), (1, 0))),  # not one raveled shift
    lambda u: fnp.pad(u[:2], ((1, 0), (0, 0))) * 2.0,
    lambda u: fnp.concatenate([u[2:], u[:2]], axis=0),
    lambda u: fnp.concatenate([u[:, 3:], u[:, :3]], axis=1),
    lambda u: u.T.reshape(SHAPE),
    lambda u: u.reshape(1, 12).reshape(SHAPE),
    lambda u: fnp.broadcast_to(u[:1], SHAPE) + u,
    lambda u: fnp.expand_dims(u, 0)[0] - u[::-1],
    lambda u: fnp.where(u > 0, u, -0.5 * u),
    lambda u: fnp.sum(u, axis=0, keepdims=True) * u,
    lambda u: fnp.tile(u[:, ::2], (1, 2)),
    lambda u: fnp.sin(u) * fnp.cos(u[::-1, ::-1]),
    lambda u: fnp.pad(u, ((0, 0), (0, 0)))[1:2, :].reshape(1, 4) * u,
]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, len(MOVES) - 1), min_size=1, max_size=5),
       st.integers(0, 2**31), st.sampled_from([np.float64, np.float32]))
def test_random_nd_movement(moves, seed, dtype):
    def f(u):
        for m in moves:
            u = MOVES[m](u) * 1.25 + u ** 2 * 0.5
        return u

    x = np.random.default_rng(seed).uniform(-1.0, 1.0, SHAPE).astype(dtype)
    assert_same(ft.jacfwd(f)(x), dense_push(ft.jacfwd(f), x))
    assert_same(ft.jit(ft.jacfwd(f))(x), dense_push(ft.jit(ft.jacfwd(f)), x))
    g = lambda u: fnp.sum(f(u) ** 2)  # noqa: E731
    assert_same(ft.hessian(g)(x), dense_push(ft.hessian(g), x))


# -- transform modes and devices ------------------------------------------------------


@pytest.mark.usefixtures("transform_mode")
def test_each_transform_mode():
    """Eagerly, under jit and under the native tier (band_fill runs as its
    NumPy kernel there): a banded and a materialised program."""
    x = np.random.default_rng(5).uniform(-1.0, 1.0, N)
    assert_same(ft.hessian(rosenbrock)(x), dense_push(ft.hessian(rosenbrock), x), exact=True)
    assert_same(ft.jacfwd(banded_least_squares)(x), dense_push(ft.jacfwd(banded_least_squares), x))


def sum_apart(x, y):
    return fnp.sum(x[1:] * x[:-1]) + fnp.sum(fnp.sin(y))


def test_device_arrays_stay_on_the_device(device):
    from functrans.backends.cupy import is_device_array

    x, y = np.linspace(-1.0, 1.0, 6), np.linspace(0.5, 1.5, 4)
    dx, dy = ft.device_put(x, "gpu"), ft.device_put(y, "gpu")
    for h in (ft.hessian(rosenbrock), ft.jit(ft.hessian(rosenbrock))):
        got = h(dx)
        assert is_device_array(got)
        np.testing.assert_allclose(got.get(), rosenbrock_hessian(x), rtol=1e-12, atol=1e-12)
    # the blocks no band reaches (d2/dxdy) are zeros on the device too
    for h in (ft.hessian(sum_apart, (0, 1)), ft.jit(ft.hessian(sum_apart, (0, 1)))):
        got, want = h(dx, dy), ft.hessian(sum_apart, (0, 1))(x, y)
        for row_got, row_want in zip(got, want):
            for a, b in zip(row_got, row_want):
                assert is_device_array(a)
                np.testing.assert_allclose(a.get(), b, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_debug_nans_switched_on_and_off():
    """debug_nans reports the NaN as before; switched off again, the banded
    program (its cache cleared with the switch) gives the same result."""
    from functrans import config

    f = lambda x: fnp.sum(fnp.log(x[1:]) * x[:-1])  # noqa: E731
    x = np.array([1.0, 2.0, -1.0, 3.0])
    before = ft.hessian(f)(x)
    config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="debug_nans: the primitive 'log'"):
            ft.hessian(f)(x)
    finally:
        config.update("debug_nans", False)
    assert_same(ft.hessian(f)(x), before, exact=True)
    assert np.isfinite(before).all()  # the NaN is in the value only


# -- the structured basis push -------------------------------------------------------


def _pad(x, value, config):
    return bind(pad_p, x, np.asarray(value, x.dtype), padding_config=tuple(config))


_B = np.diag(np.arange(1.0, 8.0)) + np.diag(np.arange(6.0) - 2.0, 1)
_IDX = np.array([0, 3, 3, 6, 1])
_JACOBIAN_PROGRAMS = {
    "strides": lambda x: x[1::2] * x[::3][:3],
    "negative_steps": lambda x: x[::-1] * x + x[::-2][:4].sum(),
    "pad_crop_interior": lambda x: _pad(x, 0.0, [(-1, 2, 1)]) * 2.0,
    "pad_value_crop": lambda x: _pad(x * x, 1.5, [(2, -3, 2)]),
    "concatenate_self": lambda x: fnp.concatenate([x, x, x[::-1]]) * fnp.concatenate([x, x, x]),
    "gather": lambda x: x[_IDX] * x[1:6],
    "scatter_add": lambda x: (x * 0).at[_IDX].add(x[:5] ** 2) + x,
    "scatter_set": lambda x: x.at[_IDX].set(x[:5] * 3),
    "dynamic_slice_clamped": lambda x: bind(dynamic_slice_p, x, np.int64(5),
                                            slice_sizes=(4,)) * x[:4],
    "dynamic_update_slice": lambda x: bind(dynamic_update_slice_p, x, x[:3] * 2, np.int64(5)),
    "cumsum": lambda x: fnp.cumsum(x * x) + fnp.cumsum(x[::-1]),
    "sort": lambda x: fnp.sort(x) * x,
    "banded_dot": lambda x: _B @ (x * x) + x @ _B,
    "roll": lambda x: fnp.roll(x, 2) * x,
    "traced_select": lambda x: fnp.where(x[::-1] > x, x, x * x),
    "maximum": lambda x: fnp.maximum(x, x[::-1]) + fnp.minimum(x[1:], 0.0).sum(),
    "complex_middle": lambda x: fnp.real((x * (1 + 2j))[::-1] * x * (1 - 1j)),
    "integer_constant": lambda x: x[::2] * np.arange(4) + x[1::2].astype(np.float32).sum(),
    "outer": lambda x: fnp.expand_dims(x, 0) * fnp.expand_dims(x[::-1], 1),
    "repeat": lambda x: fnp.repeat(x[:3], 2) * x[1:],
}


@pytest.mark.parametrize("name", sorted(_JACOBIAN_PROGRAMS))
@pytest.mark.parametrize("chunk_size", [None, 2, 3])
def test_banded_jacfwd_equals_jacrev(name, chunk_size):
    f = _JACOBIAN_PROGRAMS[name]
    x = np.random.default_rng(0).standard_normal(7)
    want = ft.jacrev(f)(x)
    for jac in (ft.jacfwd(f, chunk_size=chunk_size), ft.jit(ft.jacfwd(f, chunk_size=chunk_size))):
        got = jac(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_banded_jacfwd_of_n_d_inputs_argnums_and_edges():
    x = np.random.default_rng(1).standard_normal((3, 4))

    def nd(x):
        return (x.reshape(4, 3) * 2).T.reshape(-1)[2:9] * x.ravel()[:7] + x[None, 0, :].sum()

    np.testing.assert_allclose(ft.jacfwd(nd)(x), ft.jacrev(nd)(x), rtol=1e-12)

    def two(x, y):
        return x[1:] * y[:-1] + fnp.sum(y)

    v = x.ravel()[:5]
    for got, want in zip(ft.jacfwd(two, argnums=(0, 1))(v, v[::-1].copy()),
                         ft.jacrev(two, argnums=(0, 1))(v, v[::-1].copy())):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for n in (0, 1):
        def edge(x):
            return x[::-1] * fnp.sin(x) + _pad(x, 0.0, [(1, -1, 0)])

        np.testing.assert_allclose(ft.jacfwd(edge)(np.full(n, 0.3)),
                                   ft.jacrev(edge)(np.full(n, 0.3)), rtol=1e-12)


@pytest.mark.parametrize("name", ["rosenbrock", "reversed", "padded", "cumsum", "sort"])
def test_banded_hessian_equals_reverse_over_reverse(name):
    f = {
        "rosenbrock": lambda x: fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
        "reversed": lambda x: fnp.sum(fnp.sin(x[::-1]) * x * x[::2].sum()),
        "padded": lambda x: fnp.sum(_pad(x, 0.0, [(-1, 2, 1)]) ** 3),
        "cumsum": lambda x: fnp.sum(fnp.cumsum(x) ** 2 * x),
        "sort": lambda x: fnp.sum(fnp.sort(x) ** 3),
    }[name]
    x = np.random.default_rng(2).standard_normal(7)
    want = ft.jacrev(ft.jacrev(f))(x)
    for hess in (ft.hessian(f), ft.jit(ft.hessian(f))):
        np.testing.assert_allclose(hess(x), want, rtol=1e-10, atol=1e-10)
