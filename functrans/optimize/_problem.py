"""One minimisation problem on a flat float64 vector.

``Problem`` flattens the pytree ``x0`` into one vector, checks it, and builds
the jitted derivatives once (``value_and_grad`` always, ``hessian`` or
``hvp`` when the method asks), with the arrays in ``args`` as traced,
non-differentiated arguments: the solver loop then only calls compiled code.
It also counts evaluations.  ``Monitor`` runs the user's callback and the
``disp`` table.
"""

from __future__ import annotations

import inspect
import numbers
import os
import time
import weakref
from typing import Any, Callable, NamedTuple

import numpy as np

from functrans import core
from functrans.api import hessian, hvp, value_and_grad
from functrans.errors import ConcretizationError
from functrans.jit import jit
from functrans.optimize._result import OptimizeResult
from functrans.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_unflatten,
)

# Leaves of ``args`` that are traced; Python ints, bools and other objects are
# baked into the compiled functions as constants (they often size or index).
_TRACED_ARG_TYPES = (np.ndarray, np.generic, float, complex)


def _numbers_only(x: Any) -> bool:
    """A (nested) plain list or tuple of Python or NumPy scalars."""
    if type(x) in (list, tuple):
        return all(_numbers_only(e) for e in x)
    return isinstance(x, (numbers.Number, np.generic))


def array_like_x0(label: str, x0: Any) -> Any:
    """A list or tuple of numbers is an array, as in SciPy (a container that
    holds arrays, or a namedtuple, stays a pytree)."""
    if type(x0) in (list, tuple) and tree_leaves(x0) and _numbers_only(x0):
        try:
            return np.asarray(x0)
        except ValueError:
            raise ValueError(
                f"{label}: x0 is a ragged list (its rows differ in length); pass an array, or "
                "a pytree of arrays"
            ) from None
    return x0


class Layout:
    """A pytree ``x0`` as one flat float64 vector (``flat``: its leaves raveled
    in C order and concatenated), checked (real, finite, not empty), and the
    way back (``unravel``).  ``label`` starts the error messages."""

    def __init__(self, label: str, x0: Any):
        paths, leaves, self.treedef = tree_flatten_with_path(x0)
        if not leaves:
            raise ValueError(f"{label}: x0 holds no arrays; pass an array or a pytree of them")
        arrays = []
        for path, leaf in zip(paths, leaves):
            where = f"x0{keystr(path)}"
            a = np.asarray(leaf)
            if a.dtype.kind not in "iuf":
                raise TypeError(
                    f"{label}: {where} has dtype {a.dtype}; {label.split('(')[0]} works on real "
                    "numbers: pass a float array (split complex parameters into real and "
                    "imaginary parts)"
                )
            bad = ~np.isfinite(a)
            if bad.any():
                raise ValueError(
                    f"{label}: {where} is not finite ({a[bad].flat[0]} at index "
                    f"{np.argwhere(bad)[0].tolist() if a.ndim else '()'}); start from finite values"
                )
            arrays.append(a)
        self.shapes = [a.shape for a in arrays]
        self.sizes = [a.size for a in arrays]
        self.flat = np.concatenate([a.astype(np.float64).ravel() for a in arrays])
        if self.flat.size == 0:
            raise ValueError(
                f"{label}: x0 has no elements (shapes {', '.join(map(str, self.shapes))}); "
                "there is nothing to minimise over: pass at least one number"
            )
        self._paths = paths

    def unravel(self, v: Any) -> Any:
        """The flat vector (array or tracer) back in ``x0``'s pytree shape."""
        if len(self.shapes) == 1:
            leaves = [v.reshape(self.shapes[0])]
        else:
            leaves, start = [], 0
            for shape, size in zip(self.shapes, self.sizes):
                leaves.append(v[start:start + size].reshape(shape))
                start += size
        return tree_unflatten(self.treedef, leaves)

    def leaf_of(self, index: int) -> str:
        """``x0['w'][2, 1]``: where flat index ``index`` lives in x0."""
        for path, shape, size in zip(self._paths, self.shapes, self.sizes):
            if index < size:
                at = np.unravel_index(index, shape) if shape else ()
                return f"x0{keystr(path)}" + (f"[{', '.join(map(str, at))}]" if at else "")
            index -= size
        raise IndexError(index)


class Point(NamedTuple):
    """An evaluated point: the flat ``x``, ``f(x)``, the flat gradient, and the
    auxiliary output of ``fun`` there (``None`` without ``has_aux``)."""

    x: np.ndarray
    f: float
    g: np.ndarray
    aux: Any


# The jitted derivatives of each objective, reused by later solves of the same
# problem (same function object, x0 layout, argument layout and method needs),
# as jit reuses its compilations: like jit, minimize takes ``fun`` to be pure.
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Problem:
    """``jac``, ``hess``, ``hessp``: derivatives the user gives instead of
    functrans' own (SciPy's conventions: ``jac(x, *args)``, or ``jac=True``
    for a ``fun`` returning ``(f, g)``; ``hess(x, *args)`` an ``(n, n)``
    matrix over the flattened ``x0``; ``hessp(x, p, *args)``).  With ``jac``,
    ``fun`` is called as it is, never traced."""

    def __init__(self, fun: Callable, x0: Any, args: tuple, has_aux: bool, need: frozenset,
                 jac: Any = None, hess: Callable | None = None,
                 hessp: Callable | None = None):
        self.name = core.fun_name(fun)
        self.label = f"minimize({self.name})"
        self.fun, self.has_aux = fun, has_aux
        self.x0 = self._flatten_x0(x0)
        self.bounds: tuple[np.ndarray, np.ndarray] | None = None
        self._dynamic, self._rebuild_args, static_key = self._split_args(args)
        self.static_key = static_key
        self.nfev = self.njev = self.nhev = 0
        given = UserDerivatives(self, args, jac, hess, hessp)
        need = need - given.provides
        with_vg = jac is None or jac is False
        # With jac=True, fun returns (value, gradient): what functrans still
        # differentiates (the Hessian) is of the value alone.
        self._value_first = jac is True
        key: tuple | None = (has_aux, self.treedef, tuple(self.shapes), static_key, need,
                             with_vg, self._value_first)
        try:
            per_fun = _COMPILED.setdefault(fun, {})
            hash(key)
        except TypeError:  # not weak-referenceable, or an unhashable constant argument
            per_fun, key = {}, None
        if key not in per_fun:
            per_fun[key] = self._compile(need, with_vg)
        self._vg, self._hess, self._hvp = per_fun[key]
        if not with_vg:
            self._vg = given.value_and_grad
            # What is left to functrans still traces fun: say what to pass instead.
            self._hess = self._untraced_hint(self._hess, "Hessian", "pass hess=")
            self._hvp = self._untraced_hint(self._hvp, "Hessian-vector products",
                                            "pass hessp= (or hess=)")
        self._hess = given.hessian or self._hess
        self._hvp = given.hvp or self._hvp

    def _untraced_hint(self, fn: Callable | None, what: str, fix: str) -> Callable | None:
        if fn is None:
            return None
        label, name = self.label, self.name

        def call(*args):
            try:
                return fn(*args)
            except ConcretizationError as e:
                raise type(e)(
                    f"{e}\n{label}: jac is given, but functrans traces {name} to compute the "
                    f"{what} the method needs; to use your own instead, {fix}"
                ) from None

        return call

    def _compile(self, need: frozenset, with_vg: bool = True):
        """The jitted value-and-gradient (unless the user gives ``jac``), and
        the Hessian or HVP the method needs."""
        has_aux = self.has_aux
        flat_value_and_aux = self._flat_fun()

        def flat_value(v, *dyn):
            out = flat_value_and_aux(v, *dyn)
            return out[0] if has_aux else out

        def flat_hvp(v, t, *dyn):
            def value_at(u):
                return flat_value(u, *dyn)

            value_at.__name__ = self.name  # errors name the user's function
            return hvp(value_at, (v,), (t,))

        flat_value.__name__ = flat_hvp.__name__ = self.name
        return (
            jit(value_and_grad(flat_value_and_aux, has_aux=has_aux)) if with_vg else None,
            jit(hessian(flat_value)) if "hess" in need else None,
            jit(flat_hvp) if "hvp" in need else None,
        )

    # -- x0 and args ---------------------------------------------------------------

    def _flatten_x0(self, x0: Any) -> np.ndarray:
        self.layout = layout = Layout(self.label, x0)
        self.treedef, self.shapes, self.sizes = layout.treedef, layout.shapes, layout.sizes
        self.unravel, self.leaf_of = layout.unravel, layout.leaf_of
        return layout.flat

    @staticmethod
    def _split_args(args: tuple):
        leaves, tree = tree_flatten(args)
        traced = [isinstance(x, _TRACED_ARG_TYPES) and not isinstance(x, bool) for x in leaves]
        dynamic = tuple(np.asarray(x) for x, t in zip(leaves, traced) if t)

        def rebuild(dyn):
            it = iter(dyn)
            return tree_unflatten(tree, [next(it) if t else x for x, t in zip(leaves, traced)])

        # What the compiled functions depend on besides array shapes: the
        # layout of args and the constants baked in.
        static_key = (tree, tuple(x if not t else None for x, t in zip(leaves, traced)))
        return dynamic, rebuild, static_key

    def _flat_fun(self) -> Callable:
        name, label, has_aux = self.name, self.label, self.has_aux
        value_first = self._value_first
        fun, unravel, rebuild = self.fun, self.unravel, self._rebuild_args

        def flat(v, *dyn):
            out = fun(unravel(v), *rebuild(dyn))
            if value_first and isinstance(out, (tuple, list)) and len(out) == 2:
                out = out[0]
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise TypeError(
                        f"{label}: with has_aux=True, {name} must return a pair (value, aux), "
                        f"got {type(out).__name__}"
                    )
                value = out[0]
            else:
                value = out
            if isinstance(value, (tuple, list, dict)) or value is None:
                hint = "; pass has_aux=True to return (value, aux)" if not has_aux else ""
                raise TypeError(
                    f"{label}: {name} must return a scalar, got a {type(value).__name__}{hint}"
                )
            aval = core.get_aval(value)
            if aval.shape != ():
                raise TypeError(
                    f"{label}: {name} must return a scalar, got an array of shape "
                    f"{aval.shape} ({aval.str_short()}); reduce it to one number, for example "
                    "with a sum or a norm (least squares: the sum of squared residuals)"
                )
            return out

        flat.__name__ = name
        return flat

    # -- evaluations -----------------------------------------------------------------

    def point(self, x: np.ndarray) -> Point:
        self.nfev += 1
        self.njev += 1
        value, g = self._vg(x, *self._dynamic)
        f, aux = value if self.has_aux else (value, None)
        return Point(x, float(f), g, aux)

    def start(self) -> Point:
        """Evaluate at ``x0``; refuse to start where fun or its gradient is not finite."""
        try:
            p = self.point(self.x0)
        except ConcretizationError as e:
            module = getattr(self.fun, "__module__", None) or ""
            if not module.startswith("scipy.") or os.environ.get("SCIPY_ARRAY_API") == "1":
                raise
            raise type(e)(
                f"{e}\n{self.label}: {self.name} is SciPy's ({module}), which converts its "
                "argument with np.asarray unless SciPy runs in array-API mode: set the "
                "environment variable SCIPY_ARRAY_API=1 before SciPy is imported, and its "
                "functions written for the array API (rosen among them) trace"
            ) from None
        if not np.isfinite(p.f):
            raise ValueError(
                f"{self.label}: {self.name}(x0) is {p.f}; start from a point where the "
                "objective is finite"
            )
        bad = np.flatnonzero(~np.isfinite(p.g))
        if bad.size:
            raise ValueError(
                f"{self.label}: the gradient of {self.name} at x0 is not finite "
                f"({p.g[bad[0]]} with respect to {self.leaf_of(int(bad[0]))}"
                f"{f' and {bad.size - 1} more entries' if bad.size > 1 else ''}); start "
                "from a point where the objective is differentiable"
            )
        return p

    def hessian(self, x: np.ndarray) -> np.ndarray:
        if self._hess is None:  # a method asked for what it did not declare: a bug here
            raise RuntimeError(f"{self.label}: internal error: the problem has no Hessian")
        self.nhev += 1
        h = np.asarray(self._hess(x, *self._dynamic))
        return 0.5 * (h + h.T)  # exact symmetry, for the Cholesky factorisations

    def hvp(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        if self._hvp is None:
            raise RuntimeError(
                f"{self.label}: internal error: the problem has no Hessian-vector products")
        self.nhev += 1
        return self._hvp(x, t, *self._dynamic)

    @property
    def jitted(self) -> dict:
        """The compiled functions, by name (for tests and ``cache_info()``)."""
        out = {"value_and_grad": self._vg, "hessian": self._hess, "hvp": self._hvp}
        return {name: fn for name, fn in out.items() if fn is not None}


class UserDerivatives:
    """The derivatives given to ``minimize`` as plain functions on the flat
    vector (each call gets a fresh copy of ``x``, reshaped like ``x0``),
    their results checked and flattened; ``provides``: what the method no
    longer needs functrans to compute."""

    def __init__(self, problem: Problem, args: tuple, jac: Any, hess: Callable | None,
                 hessp: Callable | None):
        self.problem, self.args = problem, args
        self.jac: Any = jac
        self.hess_fn: Any = hess
        self.hessp_fn: Any = hessp
        self.value_and_grad = self._value_and_grad if jac is not None and jac is not False else None
        self.hessian = self._hessian if hess is not None else None
        self.hvp = (self._hessp if hessp is not None
                    else self._hess_times if hess is not None else None)
        self.provides = frozenset(
            name for name, fn in (("hess", self.hessian), ("hvp", self.hvp)) if fn is not None)

    def _x(self, x: np.ndarray) -> Any:
        return self.problem.unravel(x.copy())

    def _value_and_grad(self, x: np.ndarray, *dyn):
        label, name = self.problem.label, self.problem.name
        if self.jac is True:
            out = self.problem.fun(self._x(x), *self.args)
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    f"{label}: with jac=True, {name} must return a pair (value, gradient), got "
                    f"{type(out).__name__}; return both, or pass jac=None to let functrans "
                    "differentiate it"
                )
            f, g = out
        else:
            f = self.problem.fun(self._x(x), *self.args)
            g = self.jac(self._x(x), *self.args)
        return self._scalar(f), self.flat_like_x0(g, "jac")

    def _scalar(self, f: Any) -> float:
        a = np.asarray(f)
        if a.size != 1 or a.dtype.kind not in "biuf":
            raise TypeError(
                f"{self.problem.label}: {self.problem.name} must return a real scalar, got "
                f"{'shape ' + str(a.shape) if a.size != 1 else 'dtype ' + str(a.dtype)}; "
                "return one number (sum the terms of a vector objective)"
            )
        return float(a.reshape(()))

    def flat_like_x0(self, v: Any, what: str) -> np.ndarray:
        """A derivative returned by the user as one float64 vector; it must be
        shaped like ``x0`` (or, for an array ``x0``, have its size)."""
        p = self.problem
        leaves, treedef = tree_flatten(v)
        if len(p.shapes) == 1 and treedef != p.treedef:
            leaves, treedef = [v], None  # an array-like (a list of numbers) for an array x0
        if treedef is not None and treedef != p.treedef:
            raise ValueError(
                f"{p.label}: {what} returned a {treedef} for x0 of structure {p.treedef}; "
                "return the derivative shaped like x0"
            )
        arrays = [np.asarray(leaf, dtype=np.float64) for leaf in leaves]
        sizes = [a.size for a in arrays]
        if (treedef is None and sum(sizes) != sum(p.sizes)) or (
                treedef is not None and [a.shape for a in arrays] != p.shapes):
            got = ", ".join(str(a.shape) for a in arrays)
            want = ", ".join(str(s) for s in p.shapes)
            raise ValueError(
                f"{p.label}: {what} returned shape {got} for x0 of shape {want}; return the "
                "derivative shaped like x0"
            )
        return np.concatenate([a.ravel() for a in arrays])

    def _hessian(self, x: np.ndarray, *dyn) -> np.ndarray:
        h = self.hess_fn(self._x(x), *self.args)
        if hasattr(h, "toarray"):  # a scipy.sparse matrix
            h = h.toarray()
        h = np.asarray(h, dtype=np.float64)
        n = x.size
        if h.shape != (n, n):
            raise ValueError(
                f"{self.problem.label}: hess returned shape {h.shape}; it must return the "
                f"({n}, {n}) Hessian over x0 flattened (leaves in pytree order)"
            )
        return h

    def _hess_times(self, x: np.ndarray, t: np.ndarray, *dyn) -> np.ndarray:
        return self._hessian(x) @ t

    def _hessp(self, x: np.ndarray, t: np.ndarray, *dyn) -> np.ndarray:
        return self.flat_like_x0(self.hessp_fn(self._x(x), self._x(t), *self.args), "hessp")


class Monitor:
    """Per-iteration bookkeeping shared by the methods: the user's callback
    (SciPy's two styles: ``callback(intermediate_result)`` with an
    ``OptimizeResult``, or ``callback(xk)``), ``StopIteration`` from it, and
    the ``disp`` table."""

    def __init__(self, problem: Problem, callback: Callable | None, disp: bool, gnorm_label: str):
        self.problem, self.callback, self.disp = problem, callback, disp
        self.stopped = False
        self._t0 = time.perf_counter()
        self._new_style = False
        if callback is not None:
            try:
                params = set(inspect.signature(callback).parameters)
            except (TypeError, ValueError):
                params = set()
            self._new_style = params == {"intermediate_result"}
        if disp:
            print(f"{'iter':>6}  {'f':>14}  {gnorm_label:>10}  {'step':>10}  {'time':>8}")

    def row(self, k: int, f: float, gnorm: float, step: float | None) -> None:
        if self.disp:
            step_text = f"{step:10.3e}" if step is not None else f"{'-':>10}"
            elapsed = time.perf_counter() - self._t0
            print(f"{k:6d}  {f:14.7e}  {gnorm:10.3e}  {step_text}  {elapsed:7.3f}s", flush=True)

    def iteration(self, k: int, p: Point, gnorm: float, step: float | None) -> bool:
        """Report iteration ``k``; True when the callback asked to stop."""
        self.row(k, p.f, gnorm, step)
        if self.callback is None:
            return False
        x = self.problem.unravel(p.x.copy())
        try:
            if self._new_style:
                self.callback(intermediate_result=OptimizeResult(x=x, fun=p.f))
            else:
                self.callback(x)
        except StopIteration:
            self.stopped = True
        return self.stopped
