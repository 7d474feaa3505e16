"""``check_grads``: compare a function's derivatives against finite differences.

Forward mode is checked against central differences along random directions;
reverse mode against forward mode by the dot-product identity
``<ct, J v> == <J^T ct, v>`` with ``<a, b> = Re sum(a * b)``.  Both are checked
again on the derivative
functions themselves, up to ``order``, so second derivatives (``jvp`` of
``jvp``, ``vjp`` of ``jvp`` ...) are covered too.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from functrans.api import jvp, vjp
from functrans.dtypes import is_floating, is_inexact
from functrans.testing._arguments import (
    numeric,
    random_like,
    refuse_bad_modes,
    refuse_nothing_to_check,
)
from functrans.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_map

# By dtype name (bfloat16 is not one of NumPy's own dtypes).  The 16-bit floats
# round at 2**-11 (float16) and 2**-8 (bfloat16) of a value: their differences
# need long steps and loose tolerances to say anything.
_DEFAULT_TOL = {"float64": 1e-5, "float32": 2e-2, "complex128": 1e-5, "complex64": 2e-2,
                "float16": 5e-2, "bfloat16": 1e-1}
_DEFAULT_EPS = {"float64": 1e-4, "float32": 1e-2, "complex128": 1e-4, "complex64": 1e-2,
                "float16": 1e-1, "bfloat16": 1e-1}


def _inexact_leaves(tree) -> list:
    return [np.asarray(x) for x in tree_flatten(tree)[0]]


def _lowest_precision(trees) -> np.dtype:
    dts = [x.dtype for t in trees for x in _inexact_leaves(t) if is_inexact(x.dtype)]
    return min(dts, key=lambda d: d.itemsize) if dts else np.dtype(np.float64)


def _random_like(rng: np.random.Generator, tree):
    return tree_map(lambda x: random_like(rng, x), tree)


def _axpy(a: float, x, y):
    return tree_map(lambda xi, yi: (yi + a * xi).astype(np.asarray(yi).dtype)
                    if is_inexact(np.asarray(yi).dtype) else yi, x, y)


def _pairing(x, y) -> float:
    """``Re sum(x * y)``: the real bilinear pairing under which reverse mode is
    the transpose of forward mode (no conjugation: JAX's convention for
    complex numbers)."""
    return float(sum(np.real(np.sum(_wide(numeric(a)) * _wide(numeric(b)))) for a, b in
                     zip(tree_flatten(x)[0], tree_flatten(y)[0])))


def _wide(x: np.ndarray) -> np.ndarray:
    """16-bit floats as float64 for the pairing's sum (NumPy adds bfloat16 in
    bfloat16, where 256 + 1 is 256)."""
    return x.astype(np.float64) if x.dtype.itemsize == 2 and is_floating(x.dtype) else x


def _assert_close(what: str, got, want, atol: float, rtol: float) -> None:
    paths, g_leaves, _ = tree_flatten_with_path(got)
    w_leaves = tree_flatten(want)[0]
    for path, g, w in zip(paths, g_leaves, w_leaves):
        g, w = numeric(g), numeric(w)
        # Compared as complex numbers; shown as real ones unless either is complex.
        show = np.complex128 if np.iscomplexobj(g) or np.iscomplexobj(w) else np.float64
        g, w = np.asarray(g, dtype=np.complex128), np.asarray(w, dtype=np.complex128)
        err = np.abs(g - w)
        bound = atol + rtol * np.abs(w)
        if g.shape != w.shape or not np.all(err <= bound):
            worst = float(np.max(err - bound)) if g.shape == w.shape and err.size else float("nan")
            shown = [np.array2string(v if show is np.complex128 else v.real, precision=6)
                     for v in (g, w)]
            raise AssertionError(
                f"check_grads: {what}, output{keystr(path)}: mismatch beyond "
                f"atol={atol:g}, rtol={rtol:g} (worst excess {worst:.3g})\n"
                f"  got:      {shown[0]}\n"
                f"  expected: {shown[1]}"
            )


def _central_difference(eps: float) -> Callable:
    def diff(plus, minus):
        plus, minus = np.asarray(plus), np.asarray(minus)
        if not is_inexact(plus.dtype):  # integer and bool outputs have zero tangents
            return np.zeros(plus.shape)
        return (plus - minus) / (2 * eps)

    return diff


def check_jvp(f: Callable, args: Sequence[Any], *, atol, rtol, eps, rng, order_label="") -> None:
    """``jvp`` of ``f`` along a random direction against central differences."""
    tangents = _random_like(rng, tuple(args))
    _, t_out = jvp(f, tuple(args), tangents)
    plus = f(*_axpy(eps, tangents, tuple(args)))
    minus = f(*_axpy(-eps, tangents, tuple(args)))
    fd = tree_map(_central_difference(eps), plus, minus)
    _assert_close(f"{order_label}forward mode (jvp) vs finite differences", t_out, fd, atol, rtol)


def check_vjp(f: Callable, args: Sequence[Any], *, atol, rtol, rng, order_label="") -> None:
    """``vjp`` of ``f`` against ``jvp`` by the dot-product identity."""
    tangents = _random_like(rng, tuple(args))
    out, t_out = jvp(f, tuple(args), tangents)
    ct = _random_like(rng, out)
    _, vjp_fn = vjp(f, *args)
    ct_in = vjp_fn(ct)
    lhs = _pairing(ct, t_out)
    rhs = _pairing(ct_in, tangents)
    _assert_close(
        f"{order_label}reverse mode (vjp) vs forward mode, <ct, J v> == <J^T ct, v>",
        np.asarray(rhs), np.asarray(lhs), atol, rtol,
    )


def check_grads(
    f: Callable,
    args: Sequence[Any],
    order: int = 2,
    modes: Sequence[str] = ("fwd", "rev"),
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
    seed: int = 0,
) -> None:
    """Check ``f``'s derivatives at ``args`` up to ``order``; raise an
    AssertionError naming the order, the mode and the worst mismatch.

    Integer and bool arguments are held fixed.  A call that would check
    nothing (``order < 1``, no mode, no float or complex argument) raises
    ValueError.  ``check_derivatives`` checks more at the same point: against
    a high-accuracy reference, Jacobians, Hessians, ``vmap`` and ``jit``.

    >>> import numpy as np
    >>> from functrans.testing import check_grads
    >>> check_grads(lambda x: np.sin(x) * x, (np.array([0.5, 1.5]),), order=2)
    """
    args = tuple(args)
    modes = refuse_bad_modes("check_grads", f, modes)
    refuse_nothing_to_check("check_grads", f, args, order)
    dtype = _lowest_precision([args, f(*args)])
    tol = _DEFAULT_TOL.get(dtype.name, 1e-5)
    atol = tol if atol is None else atol
    rtol = tol if rtol is None else rtol
    eps = _DEFAULT_EPS.get(dtype.name, 1e-4) if eps is None else eps
    rng = np.random.default_rng(seed)
    _check(f, args, order, modes, atol, rtol, eps, rng, 1)


def _check(f, args, order, modes, atol, rtol, eps, rng, level) -> None:
    label = f"order {level}: "
    if "fwd" in modes:
        check_jvp(f, args, atol=atol, rtol=rtol, eps=eps, rng=rng, order_label=label)
    if "rev" in modes:
        check_vjp(f, args, atol=atol, rtol=rtol, rng=rng, order_label=label)
    if order <= 1:
        return
    if "fwd" in modes:
        v = _random_like(rng, args)

        def f_jvp(*primals):
            return jvp(f, primals, v)[1]

        _check(f_jvp, args, order - 1, modes, atol, rtol, eps, rng, level + 1)
    if "rev" in modes:
        ct = _random_like(rng, f(*args))

        def f_vjp(*primals):
            return vjp(f, *primals)[1](ct)

        _check(f_vjp, args, order - 1, modes, atol, rtol, eps, rng, level + 1)
