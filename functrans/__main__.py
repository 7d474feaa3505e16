"""A tour of functrans: ``python -m functrans``.

Each section is a small function registered with ``@section``; they run in
order and print under a heading, so the tour grows one section per feature.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

SECTIONS: list[tuple[str, Callable[[], None]]] = []


def section(title: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(fn: Callable[[], None]) -> Callable[[], None]:
        SECTIONS.append((title, fn))
        return fn

    return register


def f(x):
    """The running example: plain NumPy code, traced without changes."""
    return np.sum(np.sin(x) * x + x**2)


@section("Tracing plain NumPy code into a Jaxpr")
def tracing() -> None:
    print("def f(x):\n    return np.sum(np.sin(x) * x + x**2)\n")
    jaxpr = ft.make_jaxpr(f)(np.ones(3))
    print("ft.make_jaxpr(f)(np.ones(3)):")
    print(jaxpr)
    print(f"\n{len(jaxpr.eqns)} equations; jaxpr.to_dot() gives {len(jaxpr.to_dot())} "
          "characters of Graphviz DOT text.")


@section("Running the Jaxpr")
def running() -> None:
    x = np.linspace(0.0, 1.0, 5)
    jaxpr = ft.make_jaxpr(f)(x)
    (out,) = jaxpr(x)
    print(f"x = {x}")
    print(f"jaxpr(x) = {out!r}   f(x) with NumPy = {f(x)!r}")


@section("functrans.numpy, eagerly: NumPy's results, as NumPy arrays")
def eager() -> None:
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])
    x32 = x[1].astype(np.float32)
    print(f"x = np.array({x.tolist()})\nx32 = x[1].astype(np.float32)\n")
    cases = [
        ("fnp.sin(x[0])", lambda: fnp.sin(x[0]), lambda: np.sin(x[0])),
        ("fnp.sum(x, axis=0)", lambda: fnp.sum(x, axis=0), lambda: np.sum(x, axis=0)),
        ("fnp.max(fnp.exp(x))", lambda: fnp.max(fnp.exp(x)), lambda: np.max(np.exp(x))),
        ("fnp.multiply(x32, 2.0)", lambda: fnp.multiply(x32, 2.0), lambda: x32 * 2.0),
    ]
    for name, ours, ref in cases:
        got, want = ours(), ref()
        same = (type(got) is np.ndarray and got.dtype == want.dtype
                and np.array_equal(got, want))
        verdict = "equal to NumPy's" if same else f"DIFFERS FROM NUMPY: {want!r}"
        print(f"{name:<22} {np.array_repr(got, precision=4):<44} {verdict}")


@section("Gradient: reverse mode is JVP, partial evaluation and transposition")
def gradient() -> None:
    x = np.array([0.0, 1.0, 2.0])
    by_hand = np.sin(x) + x * np.cos(x) + 2 * x
    print(f"ft.grad(f)(x)             = {ft.grad(f)(x)!r}")
    print(f"sin x + x cos x + 2x      = {by_hand!r}")
    n = len(ft.make_jaxpr(ft.grad(f))(x).eqns)
    print(f"(ft.make_jaxpr(ft.grad(f))(x) has {n} equations)")


@section("Hessian: forward over reverse (jacfwd of jacrev)")
def hessian() -> None:
    x = np.array([0.0, 1.0, 2.0])
    h = ft.hessian(f)(x)
    by_hand = np.diag(2 * np.cos(x) - x * np.sin(x) + 2)
    print(f"ft.hessian(f)(x) =\n{h!r}")
    print(f"equal to diag(2cos x - x sin x + 2): {np.allclose(h, by_hand)}")


@section("Hessian-vector product, without forming the Hessian")
def hessian_vector() -> None:
    x, v = np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.5, -1.0])
    by_hand = (2 * np.cos(x) - x * np.sin(x) + 2) * v
    print(f"ft.hvp(f, (x,), (v,))     = {ft.hvp(f, (x,), (v,))!r}")
    print(f"(2cos x - x sin x + 2) v  = {by_hand!r}")


@section("vmap: one gradient per row, no Python loop")
def batched() -> None:
    xs = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
    per_row = ft.vmap(ft.grad(f))(xs)
    print(f"ft.vmap(ft.grad(f))(xs) =\n{per_row!r}")
    print(f"equal to [grad(f)(row) for row in xs]: "
          f"{np.allclose(per_row, [ft.grad(f)(row) for row in xs])}")


@section("Jacobians: jacfwd pushes the input basis, jacrev pulls the output basis")
def jacobians() -> None:
    def g(x):
        return np.sin(x) * x[::-1]

    x = np.array([0.5, 1.0, 2.0])
    jf, jr = ft.jacfwd(g)(x), ft.jacrev(g)(x)
    print(f"ft.jacfwd(g)(x) =\n{jf!r}")
    print(f"equal to ft.jacrev(g)(x): {np.allclose(jf, jr)}")
    h_full = ft.hessian(f)(x)
    h_chunked = ft.hessian(f, chunk_size=1)(x)
    print(f"ft.hessian(f, chunk_size=1) (one basis vector at a time) equal to "
          f"ft.hessian(f): {np.allclose(h_full, h_chunked)}")


@section("Control flow: lax.scan and lax.while_loop under grad and vmap")
def control_flow() -> None:
    def newton_sqrt(a):
        return lax.while_loop(lambda y: abs(y * y - a) > 1e-12,
                              lambda y: 0.5 * (y + a / y), a)

    a = np.array([4.0, 9.0, 2.0])
    roots = ft.vmap(newton_sqrt)(a)
    slopes = ft.vmap(ft.grad(newton_sqrt))(a)
    print(f"ft.vmap(newton_sqrt)(a)          = {roots!r}")
    print(f"ft.vmap(ft.grad(newton_sqrt))(a) = {slopes!r}")
    print(f"equal to 1 / (2 sqrt(a)): {np.allclose(slopes, 0.5 / np.sqrt(a))}")

    def cumulative(x):
        return np.sum(lax.scan(lambda c, xi: (c * xi, c * xi), 1.0, x)[1])

    x = np.array([1.0, 2.0, 3.0])
    # d/dx of x0 + x0 x1 + x0 x1 x2
    by_hand = np.array([1 + x[1] + x[1] * x[2], x[0] + x[0] * x[2], x[0] * x[1]])
    print(f"grad of the sum of cumulative products, via lax.scan: "
          f"{ft.grad(cumulative)(x)!r}; by hand: {by_hand!r}")


@section("jit: optimised once per signature, then cached")
def compiled() -> None:
    x = np.array([0.0, 1.0, 2.0])
    grad_f = ft.jit(ft.grad(f))
    lowered = grad_f.lower(x)
    n_plain = len(ft.make_jaxpr(ft.grad(f))(x).eqns)
    print(f"grad(f) traces to {n_plain} equations; jit optimises them to "
          f"{len(lowered.jaxpr.eqns)}:")
    print(lowered.jaxpr)
    grad_f(x), grad_f(x + 1.0)
    print(f"\ntwo calls at f64[3]: {grad_f.cache_info()}")


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


A = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0], [-2.0, 0.5, 1.0], [1.0, 1.0, 1.0]])
Y = np.array([1.0, 0.0, 1.0, 0.0])


def logistic_loss(w):
    """Ridge-regularised logistic regression: strictly convex."""
    z = A @ w
    return fnp.sum(fnp.logaddexp(0.0, z) - Y * z) + 0.5 * fnp.sum(w * w)


@section("A Newton solve: exact Hessians from functrans, then functrans.optimize")
def newton() -> None:
    print("Newton's method written out, inside jit: w <- w - solve(H(w), g(w))")
    step = ft.jit(lambda w: w - fnp.linalg.solve(ft.hessian(logistic_loss)(w),
                                                 ft.grad(logistic_loss)(w)))
    w = np.zeros(3)
    for k in range(1, 6):
        w = step(w)
        print(f"  step {k}: |grad| = {np.linalg.norm(ft.grad(logistic_loss)(w)):.1e}")
    res = ft.optimize.minimize(logistic_loss, np.zeros(3), method="newton")
    print(f"functrans.optimize.minimize(method='newton'): nit={res.nit}, "
          f"same w: {np.allclose(res.x, w)}")
    x0 = np.full(10, -1.0)
    res = ft.optimize.minimize(rosenbrock, x0, method="lbfgs")
    print(f"chained Rosenbrock, n=10, method='lbfgs': nit={res.nit}, f={res.fun:.1e}")


def main() -> None:
    start = time.perf_counter()
    print(f"functrans {ft.__version__} on NumPy {np.__version__}")
    for title, fn in SECTIONS:
        print(f"\n== {title} ==\n")
        fn()
    print(f"\n(sections ran in {time.perf_counter() - start:.2f} s)")


if __name__ == "__main__":
    main()
