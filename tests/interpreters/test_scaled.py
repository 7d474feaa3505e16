"""Dense batched tangents scaled elementwise up to a contraction
(``functrans.interpreters.scaled``): the Hessian of a GLM's loss becomes
``X.T @ (d[:, None] * X)``, and equals the closed form and the plain batched
push (``vmap`` of ``jvp``) within floating-point reassociation."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp


def _data(n=200, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (rng.random(n) < 0.5).astype(np.float64)
    return X, y, rng.standard_normal(d) * 0.3


def _glm(X, y):
    def loss(w):
        z = X @ w
        return fnp.sum(fnp.logaddexp(0.0, z) - y * z)

    return loss


def _batched_push(f, w):
    """The Hessian by ``vmap`` of ``jvp`` of the gradient: no structure."""
    return ft.vmap(lambda v: ft.jvp(ft.grad(f), (w,), (v,))[1])(np.eye(w.size, dtype=w.dtype))


@pytest.mark.parametrize("transform", [ft.hessian, lambda f: ft.jit(ft.hessian(f))])
def test_glm_hessian_is_the_closed_form_and_the_batched_push(transform):
    X, y, w = _data()
    got = transform(_glm(X, y))(w)
    s = 1.0 / (1.0 + np.exp(-(X @ w)))
    np.testing.assert_allclose(got, X.T @ ((s * (1.0 - s))[:, None] * X), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(got, _batched_push(_glm(X, y), w), rtol=1e-12, atol=1e-12)


def test_glm_hessian_scales_no_batched_value_elementwise():
    # Only the root's mask and the contraction touch rows * n elements; the
    # batched push multiplied each scaling into the (d, n) tangent.
    X, y, w = _data(n=300, d=7)
    jaxpr = ft.make_jaxpr(ft.hessian(_glm(X, y)))(w)
    big = [e for e in jaxpr.eqns
           if e.primitive.name in ("mul", "div", "neg", "add", "sub")
           and any(v.aval.shape[:1] == (7,) and v.aval.size >= 7 * 300 for v in e.outputs)]
    assert big == [], [str(e.primitive) for e in big]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_special_values_reach_no_more_than_in_the_batched_push():
    X, y, w = _data(n=50, d=4)
    X[3, 1] = np.nan  # z[3] is NaN: logaddexp's masks are set there
    X[7, 2] = np.inf
    f = _glm(X, y)
    got, want = ft.hessian(f)(w), _batched_push(f, w)
    # The batched push's X @ basis spread X's NaN along its row (nan * 0):
    # every entry NaN.  Here it stays in its own entries, and the entries
    # finite here are the derivatives of the gradient (whose masks leave the
    # NaN row of z out), by central differences.
    assert np.isnan(want).all() and np.isfinite(got).sum() == 6
    assert (np.isnan(got) <= np.isnan(want)).all()
    grad, h = ft.grad(f), 1e-6
    with np.errstate(invalid="ignore"):
        fd = np.stack([(grad(w + h * e) - grad(w - h * e)) / (2 * h) for e in np.eye(4)], 1)
    kept = np.isfinite(got)
    np.testing.assert_allclose(got[kept], fd[kept], rtol=1e-7, atol=1e-7)
    # Without the NaN, X's infinity (z[7] = inf, where the sigmoid's
    # derivative is 0) makes NaN of the entries it multiplies, as in the
    # closed form X.T @ (d[:, None] * X); the push made every entry NaN.
    X[3, 1] = 0.5
    got, want = ft.hessian(f)(w), _batched_push(f, w)
    with np.errstate(invalid="ignore", over="ignore"):
        s = 1.0 / (1.0 + np.exp(-(X @ w)))
        closed = X.T @ ((s * (1.0 - s))[:, None] * X)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(closed))
    assert np.isnan(want).all()
    kept = np.isfinite(got)
    np.testing.assert_allclose(got[kept], closed[kept], rtol=1e-12)


def test_a_scaled_value_of_a_dense_jacobian_and_its_rows_checked_by_finite_differences():
    X, y, w = _data(n=40, d=3)
    A = np.random.default_rng(1).standard_normal((3, 40))

    def f(w):  # scalings, a select and a sum of two products of one root
        z = X @ w
        t = fnp.where(z > 0.0, fnp.tanh(z) * 2.0, -z * z)
        return A @ (t * y + fnp.sin(z) * t)

    jac = ft.jacfwd(f)(w)
    eps = 1e-6
    fd = np.stack([(f(w + eps * e) - f(w - eps * e)) / (2 * eps) for e in np.eye(3)], -1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jac, ft.jacrev(f)(w), rtol=1e-12, atol=1e-12)


def _big_elementwise(jaxpr, rows: int, n: int) -> list[str]:
    """Elementwise equations on batched-size values (rows first)."""
    return [str(e.primitive) for e in jaxpr.eqns
            if e.primitive.name in ("mul", "div", "neg", "add", "sub")
            and any(v.aval.shape[:1] == (rows,) and v.aval.size >= rows * n
                    for v in e.outputs)]


_RNG = np.random.default_rng(3)
_X3 = _RNG.standard_normal((60, 3, 4))
_Y = (_RNG.random(60) < 0.5).astype(np.float64)


@pytest.mark.parametrize("name, loss, w", [
    # the parameter on the right of the product, on the left, a matrix of parameters
    # contracted over two axes, float32
    ("X @ w", lambda w: fnp.sum(fnp.logaddexp(0.0, _X3[:, 0] @ w) - _Y * (_X3[:, 0] @ w)),
     _RNG.standard_normal(4) * 0.3),
    ("w @ X.T", lambda w: fnp.sum(fnp.logaddexp(0.0, w @ _X3[:, 0].T) - (w @ _X3[:, 0].T) * _Y),
     _RNG.standard_normal(4) * 0.3),
    ("tensordot", lambda W: fnp.sum(fnp.tanh(fnp.tensordot(_X3, W, 2)) ** 2),
     _RNG.standard_normal((3, 4)) * 0.3),
    ("float32", lambda w: fnp.sum(fnp.log1p(fnp.exp(_X3[:, 0].astype(np.float32) @ w))),
     (_RNG.standard_normal(4) * 0.3).astype(np.float32)),
])
def test_products_of_each_layout_and_dtype_equal_the_batched_push(name, loss, w):
    got = ft.hessian(loss)(w)
    want = _batched_push(loss, w) if w.ndim == 1 else None
    if want is None:  # the matrix parameter: the push over its raveled elements
        def flat(v):
            return loss(v.reshape(w.shape))
        want = _batched_push(flat, w.reshape(-1)).reshape(w.shape * 2)
    tol = 1e-5 if w.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(ft.jit(ft.hessian(loss))(w), got, rtol=tol, atol=tol)
    # one scaling of the contracted operand (rows * n too, here) is all
    assert len(_big_elementwise(ft.make_jaxpr(ft.hessian(loss))(w), w.size, 60)) <= 1


def _always_zeroed(mask, x):
    """The root's masked rows zeroed by a select on every call, as before
    the select ran only where a row is masked."""
    from functrans.core import bind, registry

    return bind(registry["select"], mask, np.zeros((), x.aval.dtype), x)


@pytest.mark.parametrize("special", ["none", "nan in X", "inf in X", "-inf and inf in a row",
                                     "nan in w", "inf in w", "-0.0 in X and w"])
@pytest.mark.parametrize("jit", [False, True])
def test_the_roots_masked_rows_are_zeroed_only_when_a_row_is_masked(special, jit, monkeypatch):
    """Zeroing the masked rows of the dense root (rows * n elements) runs
    under a cond on any(mask): the same bits as zeroing on every call, NaN
    where the batched push has NaN, with NaN and inf in the data and in the
    parameters; the program has no select over rows * n elements outside
    the cond."""
    from _bits import bits_equal

    from functrans.interpreters import scaled

    X, y, w = _data(n=60, d=5)
    if special == "nan in X":
        X[3, 1] = np.nan
    elif special == "inf in X":
        X[7, 2] = np.inf
    elif special == "-inf and inf in a row":
        X[5, 0], X[5, 3] = -np.inf, np.inf
    elif special == "nan in w":
        w[2] = np.nan
    elif special == "inf in w":
        w[4] = np.inf
    elif special == "-0.0 in X and w":
        X[:, 1], w[0] = -0.0, -0.0
    f = _glm(X, y)
    hess = (lambda g: ft.jit(ft.hessian(g))) if jit else ft.hessian
    got = hess(f)(w)
    with monkeypatch.context() as m:
        m.setattr(scaled, "_zero_where", _always_zeroed)
        want = hess(_glm(X, y))(w)
    assert bits_equal(got, want), (got, want)
    # The push's row j is H e_j, the derivative along w_j: hessian's column j.
    # Its product of X with the basis spread an inf or NaN of X along the
    # row (inf * 0): NaN reaches no more here.
    pushed = _batched_push(f, w).T
    assert (np.isnan(got) <= np.isnan(pushed)).all()
    both = np.isfinite(got) & np.isfinite(pushed)
    np.testing.assert_allclose(got[both], pushed[both], rtol=1e-12, atol=1e-12)
    jaxpr = ft.make_jaxpr(ft.hessian(f))(w)
    big = [e for e in jaxpr.eqns if e.primitive.name == "select"
           and e.outputs[0].aval.size >= X.size]
    assert big == []
