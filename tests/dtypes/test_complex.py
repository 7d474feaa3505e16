"""Complex numbers under the transforms, following JAX's conventions:

* ``jvp`` pushes a complex tangent through the (real-linear) derivative;
* ``vjp`` is its plain transpose under the pairing ``Re sum(a * b)`` (no
  conjugation), so for a holomorphic ``f`` it multiplies by ``f'(z)``;
* ``grad`` of a real-valued ``f`` of complex ``z = x + iy`` is
  ``df/dx - i df/dy``; ``grad(f, holomorphic=True)`` of a complex-valued
  holomorphic ``f`` is ``f'(z)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import DTypeError
from functrans.testing import check_grads

RNG = np.random.default_rng(11)
Z = np.array([0.3 + 0.4j, -1.2 + 0.7j, 2.0 - 1.5j])


def _partials(f, z, eps=1e-6):
    """(df/dx, df/dy) of a real function of a complex scalar, by central differences."""
    dx = (f(z + eps) - f(z - eps)) / (2 * eps)
    dy = (f(z + 1j * eps) - f(z - 1j * eps)) / (2 * eps)
    return dx, dy


def test_grad_of_abs_squared_is_twice_the_conjugate():
    assert ft.grad(lambda z: abs(z) ** 2)(3 + 4j) == 6 - 8j
    np.testing.assert_allclose(ft.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(Z), 2 * np.conj(Z))


REAL_FUNCTIONS = {
    "abs": lambda z: fnp.abs(z),
    "real_times_imag": lambda z: fnp.real(z) * fnp.imag(z),
    "abs_sin": lambda z: fnp.abs(fnp.sin(z)),
    "angle": lambda z: fnp.angle(z),
    "re_exp_conj": lambda z: fnp.real(fnp.exp(fnp.conj(z)) * z),
    "abs_squared_via_conj": lambda z: fnp.real(z * fnp.conj(z)),
}


@pytest.mark.parametrize("name", sorted(REAL_FUNCTIONS))
@settings(max_examples=10)
@given(re=st.floats(-2, 2), im=st.floats(-2, 2))
def test_grad_of_real_function_of_complex_input_is_dx_minus_i_dy(name, re, im):
    f = REAL_FUNCTIONS[name]
    # Away from 0 (|z| is not smooth there) and from angle's branch cut.
    z = complex(re, im if abs(im) >= 0.1 else im + 0.5)
    dx, dy = _partials(lambda w: float(f(np.asarray(w))), z)
    got = ft.grad(f)(z)
    np.testing.assert_allclose(got, dx - 1j * dy, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ft.jit(ft.grad(f))(z), got, rtol=1e-12)


HOLOMORPHIC = {
    "square": (lambda z: z ** 2, lambda z: 2 * z),
    "cube_plus": (lambda z: z ** 3 + 2j * z, lambda z: 3 * z ** 2 + 2j),
    "sin": (fnp.sin, np.cos),
    "exp": (fnp.exp, np.exp),
    "log": (fnp.log, lambda z: 1 / z),
    "reciprocal": (lambda z: 1 / z, lambda z: -1 / z ** 2),
    "tanh": (fnp.tanh, lambda z: 1 - np.tanh(z) ** 2),
    "sqrt": (fnp.sqrt, lambda z: 0.5 / np.sqrt(z)),
    "composite": (lambda z: fnp.exp(fnp.sin(z) * z), lambda z: np.exp(np.sin(z) * z)
                  * (np.cos(z) * z + np.sin(z))),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_grad_is_the_complex_derivative(name):
    f, df = HOLOMORPHIC[name]
    for z in Z:
        np.testing.assert_allclose(ft.grad(f, holomorphic=True)(z), df(z), rtol=1e-12)
        value, g = ft.value_and_grad(f, holomorphic=True)(z)
        np.testing.assert_allclose(value, f(z), rtol=1e-12)
        np.testing.assert_allclose(g, df(z), rtol=1e-12)
        # jvp multiplies by f'(z); vjp, the unconjugated transpose, too.
        t = 0.7 - 0.2j
        np.testing.assert_allclose(ft.jvp(f, (z,), (t,))[1], df(z) * t, rtol=1e-12)
        np.testing.assert_allclose(ft.vjp(f, z)[1](t)[0], df(z) * t, rtol=1e-12)
    jac = ft.jacfwd(lambda v: f(v), holomorphic=True)(Z)
    np.testing.assert_allclose(jac, np.diag(df(Z)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ft.jacrev(lambda v: f(v), holomorphic=True)(Z), jac,
                               rtol=1e-12, atol=1e-15)


def test_holomorphic_hessian_and_second_derivatives():
    f = lambda z: fnp.sum(z ** 3 + fnp.sin(z))  # noqa: E731
    np.testing.assert_allclose(ft.hessian(f, holomorphic=True)(Z),
                               np.diag(6 * Z - np.sin(Z)), rtol=1e-12, atol=1e-15)
    g = ft.grad(ft.grad(lambda z: fnp.exp(2 * z), holomorphic=True), holomorphic=True)
    np.testing.assert_allclose(g(0.5j), 4 * np.exp(1j), rtol=1e-12)


def test_vjp_of_conjugate_is_the_conjugate():
    out, f_vjp = ft.vjp(fnp.conj, Z)
    np.testing.assert_allclose(out, np.conj(Z))
    ct = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    np.testing.assert_allclose(f_vjp(ct)[0], np.conj(ct))
    np.testing.assert_allclose(ft.jvp(fnp.conj, (Z,), (ct,))[1], np.conj(ct))


def test_vjp_of_real_and_imag_embed_back_into_complex():
    ct = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(ft.vjp(fnp.real, Z)[1](ct)[0], ct + 0j)
    np.testing.assert_allclose(ft.vjp(fnp.imag, Z)[1](ct)[0], -1j * ct)


def test_real_input_with_complex_intermediate_gets_a_real_gradient():
    g = ft.grad(lambda x: fnp.real(fnp.exp(1j * x)))(0.3)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, -np.sin(0.3))


COMPLEX_CHECKS = {
    "elementwise": (lambda z: fnp.sin(z) * fnp.conj(z) + fnp.exp(z) / (z + 3), (Z,)),
    "abs_angle": (lambda z: fnp.abs(z) + fnp.angle(z), (Z,)),
    "real_imag": (lambda z: fnp.real(z) ** 2 - fnp.imag(z) * fnp.real(z), (Z,)),
    "matmul": (lambda a, b: a @ b, (RNG.standard_normal((2, 3)) + 1j,
                                    RNG.standard_normal((3, 2)) - 2j)),
    "sum_mean_var": (lambda z: fnp.var(z) + fnp.sum(z) * fnp.mean(z), (Z,)),
    "vdot": (lambda a, b: fnp.vdot(a, b), (Z, Z[::-1] * 1j)),
    "einsum": (lambda a, b: fnp.einsum("i,j->ij", a, fnp.conj(b)), (Z, Z + 1)),
    "linalg_solve": (lambda a, b: fnp.linalg.solve(a, b),
                     (RNG.standard_normal((3, 3)) + 3 * np.eye(3) + 1j * np.eye(3), Z)),
    "linalg_norm": (lambda z: fnp.linalg.norm(z), (Z,)),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CHECKS))
def test_check_grads_on_complex_functions(name):
    f, args = COMPLEX_CHECKS[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_vmap_of_complex_grad():
    f = lambda z: fnp.abs(fnp.sin(z)) ** 2  # noqa: E731
    got = ft.vmap(ft.grad(f))(Z)
    np.testing.assert_allclose(got, [ft.grad(f)(z) for z in Z], rtol=1e-12)
    got = ft.vmap(ft.grad(fnp.sin, holomorphic=True))(Z)
    np.testing.assert_allclose(got, np.cos(Z), rtol=1e-12)


def test_complex_parts_match_numpy():
    for name in ("real", "imag", "conj", "conjugate", "angle", "abs", "iscomplex", "isreal"):
        for x in (Z, np.arange(3.0), np.array(2 + 1j)):
            want = getattr(np, name)(x)
            got = getattr(fnp, name)(x)
            np.testing.assert_array_equal(got, want)
            assert np.asarray(got).dtype == np.asarray(want).dtype, name
    np.testing.assert_allclose(fnp.angle(Z, deg=True), np.angle(Z, deg=True))
    assert fnp.iscomplexobj(Z) and not fnp.iscomplexobj(1.0) and fnp.isrealobj(np.ones(2))
    traced = ft.jit(lambda z: (z.real, z.imag, z.conj(), fnp.iscomplexobj(z) + 0))(Z)
    np.testing.assert_array_equal(traced[0], Z.real)
    np.testing.assert_array_equal(traced[1], Z.imag)
    np.testing.assert_array_equal(traced[2], np.conj(Z))
    assert traced[3] == 1


def test_errors_name_holomorphic():
    with pytest.raises(TypeError, match=r"must return a real float scalar, got c128\[\]; pass "
                                        r"holomorphic=True"):
        ft.grad(lambda z: z ** 2)(1 + 1j)
    with pytest.raises(DTypeError, match=r"holomorphic=True needs complex inputs, but argument "
                                         r"0 has type f64\[\]"):
        ft.grad(lambda z: z ** 2, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match=r"with holomorphic=True, <lambda> must return a "
                                        r"complex scalar, got f64\[\]"):
        ft.grad(lambda z: fnp.abs(z), holomorphic=True)(1j)
    with pytest.raises(DTypeError, match=r"jacfwd needs real inputs unless holomorphic=True"):
        ft.jacfwd(lambda z: fnp.abs(z))(Z)
    with pytest.raises(TypeError, match=r"jacrev needs real outputs unless holomorphic=True"):
        ft.jacrev(lambda z: z * 2)(Z)
    with pytest.raises(TypeError, match=r"must return complex outputs, but output 0 is f64"):
        ft.jacfwd(lambda z: fnp.abs(z), holomorphic=True)(Z)


def test_jacrev_of_real_output_of_complex_input_matches_grad():
    f = lambda z: fnp.abs(z) ** 2  # noqa: E731
    np.testing.assert_allclose(ft.jacrev(f)(Z), np.diag(2 * np.conj(Z)), atol=1e-15)
