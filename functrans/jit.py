"""``jit``: trace once per argument signature, optimise, compile to straight-line
NumPy code, and cache.

The cache key is the argument pytree structure, each leaf's shape and dtype
(a Python scalar is keyed by its type, never its value, so ``f(1.0)`` and
``f(2.0)`` share an entry), the static arguments and the backend.  Like
JAX's, jit's contract is that the function is pure: values it closes over
(globals, captured arrays) are baked in when it is traced, and Python
control flow on traced values raises a concretization error.

Called with tracers (inside ``grad``, ``vmap``, another ``jit`` ...), a
jitted function contributes its optimised Jaxpr to the enclosing trace.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from functrans import core
from functrans._api_util import check_argnames, check_argnums, check_leaves, normalize_argnums
from functrans.backends.numpy import Compiled
from functrans.core import ClosedJaxpr, ShapedArray, ShapeDtypeStruct, Tracer
from functrans.devices import check_devices, is_device_array
from functrans.errors import DeviceError
from functrans.passes.pipeline import run_passes
from functrans.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["CacheInfo", "JitCacheMiss", "Lowered", "ShapeDtypeStruct", "jit"]

_SCALAR_TYPES = (bool, int, float, complex)


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    entries: int


class JitCacheMiss(UserWarning):
    """Issued by ``jit(f, explain_cache_misses=True)`` on each new compilation."""


def _leaf_key(x: Any) -> Any:
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if t in _SCALAR_TYPES:
        return t
    if isinstance(x, Tracer):
        return (x.aval.shape, x.aval.dtype, x.aval.weak_type)
    if is_device_array(x):
        return (tuple(x.shape), x.dtype, "gpu")
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return (tuple(x.shape), x.dtype)
    return (t, id(x))  # not an array: tracing it raises the error that names it


def _leaf_aval(x: Any) -> ShapedArray:
    return x.aval if isinstance(x, Tracer) else core.get_aval(x)


class Lowered:
    """The result of ``jit(f).lower(*args)``: the optimised Jaxpr and the
    generated Python source; ``compile()`` gives the callable executable.

    Lowered for the GPU (``device="gpu"``, or CuPy arguments), ``jaxpr`` is
    the fused program that runs, ``kernels`` its CUDA kernels (each with
    ``name``, ``source``, the complete ``.cu`` text, and ``eqns``, the
    equations it computes), and ``compile_check()`` compiles them with nvcc;
    none of this needs CuPy or a GPU.
    """

    def __init__(self, entry: _Entry, device: str = "cpu"):
        self._entry = entry
        self.device = device
        self.jaxpr: ClosedJaxpr = entry.compiled.jaxpr if device == "gpu" else entry.jaxpr
        self.source: str = entry.compiled.source

    @property
    def kernels(self) -> list:
        """The CUDA kernels of a GPU lowering, in program order ([] on the CPU)."""
        return list(self._entry.compiled.lowering.kernels) if self.device == "gpu" else []

    def compile_check(self, arch: str = "90") -> list:
        """Compile every kernel with nvcc for ``sm_<arch>`` (one nvcc call) and
        return the kernels checked; a KernelCompileError shows the source and
        the equations of a kernel that fails."""
        from functrans.backends import cuda

        return cuda.compile_check(self.kernels, arch=arch)

    def compile(self) -> Callable:
        entry = self._entry

        def executable(*args, **kwargs):
            leaves = tree_flatten((args, kwargs))[0]
            return tree_unflatten(entry.out_tree, entry.compiled(*leaves))

        return executable

    def __repr__(self):
        return f"Lowered(\n{self.jaxpr}\n)"


class _Entry(NamedTuple):
    jaxpr: ClosedJaxpr
    compiled: Any  # a backends.numpy.Compiled, or a backends.cupy.Compiled for the GPU
    out_tree: Any
    single_output: bool  # the output is one array, not a container
    # Closed over a tracer of an enclosing transform: evaluated by binding into
    # that transform's trace, and never cached past it.
    traced_consts: bool


class _Jitted:
    """The callable ``jit`` returns."""

    def __init__(self, fun, static_argnums, static_argnames, explain_cache_misses):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = core.fun_name(fun)
        self._label = f"jit({self._name})"
        nums = check_argnums(self._label, static_argnums, static=True)
        self._static_argnums = (nums,) if isinstance(nums, int) else nums
        self._static_argnames = check_argnames(self._label, "static_argnames", static_argnames)
        self._explain = explain_cache_misses
        self._cache: dict[Any, _Entry] = {}
        self._hits = 0
        self._misses = 0
        self._last_signature: tuple | None = None

    # -- the call path ---------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if not kwargs and not self._static_argnums and all(type(a) is np.ndarray for a in args):
            # The common case, kept short: positional arrays only.
            key = tuple([(a.shape, a.dtype) for a in args])
            entry = self._cache.get(key)
            if entry is not None:
                self._hits += 1
                outs = entry.compiled.fn(*args)
                return outs[0] if entry.single_output else tree_unflatten(entry.out_tree, outs)
            return self._call(args, kwargs)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if not self._static_argnums and not self._static_argnames:
            leaves, tree = tree_flatten((args, kwargs))
            static_key: tuple = ()
        else:
            dyn_args, dyn_kwargs, static_key = self._split(args, kwargs)
            leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
        key = (tree, tuple(map(_leaf_key, leaves)), static_key)
        entry = self._cache.get(key)
        if entry is None:
            device = check_devices(self._label, "argument ", (args, kwargs), leaves, call=True)
            entry = self._compile(key, args, kwargs, leaves, device)
            cacheable = not entry.traced_consts and not kwargs and not static_key
            if cacheable and all(type(a) is np.ndarray for a in args):
                self._cache[tuple([(a.shape, a.dtype) for a in args])] = entry
        else:
            self._hits += 1
        if entry.traced_consts or any(isinstance(x, Tracer) for x in leaves):
            outs = core.eval_jaxpr(entry.jaxpr.jaxpr, entry.jaxpr.consts, *leaves)
        else:
            outs = entry.compiled.fn(*leaves)
        return tree_unflatten(entry.out_tree, outs)

    def _split(self, args: tuple, kwargs: dict):
        nums = normalize_argnums(self._label, self._static_argnums, len(args), static=True)
        statics = [(i, args[i]) for i in nums]
        statics += [(k, kwargs[k]) for k in self._static_argnames if k in kwargs]
        for where, value in statics:
            if isinstance(value, Tracer):
                raise TypeError(
                    f"{self._label}: static argument {where!r} is a traced value; static "
                    "arguments must be concrete, hashable Python values. Make it a regular "
                    "(traced) argument, or compute it outside the transform"
                )
            try:
                hash(value)
            except TypeError:
                raise TypeError(
                    f"{self._label}: static argument {where!r} of type "
                    f"{type(value).__name__} is not hashable; pass a hashable value (a tuple "
                    "instead of a list) or make it a regular argument"
                ) from None
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return dyn_args, dyn_kwargs, tuple(statics)

    # -- tracing and compiling ---------------------------------------------------

    def _compile(self, key, args, kwargs, leaves, device="cpu") -> _Entry:
        self._misses += 1
        if self._explain:
            self._explain_miss(args, kwargs, key)
        entry = self._lower(args, kwargs, [_leaf_aval(x) for x in leaves], device)
        if not entry.traced_consts:
            self._cache[key] = entry
        return entry

    def _lower(self, args, kwargs, avals, device="cpu") -> _Entry:
        nums = normalize_argnums(self._label, self._static_argnums, len(args), static=True)
        static_kw = {k: kwargs[k] for k in self._static_argnames if k in kwargs}
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_kw}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        check_leaves(self._label, "argument ", dyn_args)
        check_leaves(self._label, "keyword argument ", dyn_kwargs)
        in_tree = tree_flatten((dyn_args, dyn_kwargs))[1]
        fun = self._fun

        def call(*dyn, **dyn_kw):
            it = iter(dyn)
            full = [args[i] if i in nums else next(it) for i in range(len(args))]
            return fun(*full, **dyn_kw, **static_kw)

        out_cell: list = []

        def flat(*xs):
            a, k = tree_unflatten(in_tree, xs)
            out = call(*a, **k)
            out_leaves, out_tree = check_leaves(self._label, "output", out)
            out_cell.append(out_tree)
            return out_leaves

        closed, _, _ = core.trace_to_jaxpr(flat, avals, name=self._name, reason=" inside jit",
                                           in_jit=True)
        optimized = run_passes(closed)
        out_tree = out_cell[-1]
        single = out_tree.num_leaves == 1 and out_tree.num_nodes == 1
        compiled: Any
        if device == "gpu":
            from functrans.backends import cupy as gpu_backend

            compiled = gpu_backend.Compiled(optimized, self._name)
        else:
            optimized = _fuse_for_cpu(optimized)
            compiled = Compiled(optimized, self._name)
        traced = any(isinstance(c, Tracer) for c in optimized.consts)
        return _Entry(optimized, compiled, out_tree, single, traced)

    def _explain_miss(self, args, kwargs, key) -> None:
        paths, leaves, _ = tree_flatten_with_path((args, kwargs))
        signature = {
            keystr(p): (_leaf_aval(x).str_short(), type(x).__name__) for p, x in zip(paths, leaves)
        }
        if self._last_signature is None:
            reason = "first call"
        else:
            old = dict(self._last_signature)
            changed = [
                f"{p}: {old.get(p, ('absent',))[0]} -> {s[0]}"
                for p, s in signature.items() if old.get(p) != s
            ]
            changed += [f"{p}: removed" for p in old if p not in signature]
            reason = "; ".join(changed) or f"static arguments changed: {key[2]}"
        self._last_signature = tuple(signature.items())
        warnings.warn(f"{self._label}: compiling for a new signature ({reason})", JitCacheMiss,
                      stacklevel=4)

    # -- inspection -----------------------------------------------------------------

    def lower(self, *args, device: str | None = None, **kwargs) -> Lowered:
        """Trace and optimise for these arguments (arrays or ShapeDtypeStructs)
        without running; see ``Lowered``.  ``device`` (``"cpu"`` or ``"gpu"``)
        defaults to the arguments' device; lowering for the GPU generates all
        its code (kernels included) on any machine.  (``device`` is taken by
        ``lower``, so it cannot name a keyword argument of the function.)"""
        if self._static_argnums or self._static_argnames:
            dyn_args, dyn_kwargs, _ = self._split(args, kwargs)
        else:
            dyn_args, dyn_kwargs = args, kwargs
        leaves = tree_flatten((dyn_args, dyn_kwargs))[0]
        found = check_devices(self._label, "argument ", (dyn_args, dyn_kwargs), leaves,
                              call=True)
        if device is None:
            device = found
        elif device not in ("cpu", "gpu"):
            raise DeviceError(f"{self._label}.lower: unknown device {device!r}; use 'cpu' or "
                              "'gpu'")
        avals = [_leaf_aval(x) for x in leaves]
        return Lowered(self._lower(args, kwargs, avals, device), device)

    def cache_info(self) -> CacheInfo:
        entries = len({id(e) for e in self._cache.values()})
        return CacheInfo(self._hits, self._misses, entries)

    def clear_cache(self) -> None:
        self._cache.clear()
        self._hits = self._misses = 0


def _fuse_for_cpu(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Large float64 elementwise groups become ``fused_elementwise`` equations,
    which the NumPy backend evaluates in one numexpr pass (when numexpr is
    installed: the ``fast`` extra)."""
    from functrans.primitives.fused import cpu_fusible, have_numexpr

    if not have_numexpr() or not any(cpu_fusible(e) for e in closed.jaxpr.eqns):
        return closed
    from functrans.passes.fuse import fuse, unfuse_small

    # A group of one or two operations saves too little to pay numexpr's
    # setup (measured on the Rosenbrock Hessian at n=1000): those stay NumPy calls.
    fused = unfuse_small(fuse(closed, cpu_fusible), min_members=3)
    fused_p = core.lookup_primitive("fused_elementwise")
    if not any(e.primitive is fused_p for e in fused.jaxpr.eqns):
        return closed  # keep the original order of the equations
    return fused


def jit(
    fun: Callable,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    explain_cache_misses: bool = False,
) -> _Jitted:
    """Compile ``fun`` for each new argument signature and reuse it after.

    >>> import functrans as ft, numpy as np
    >>> f = ft.jit(lambda x, y: np.sin(x) * y)
    >>> f(np.zeros(3), 2.0)
    array([0., 0., 0.])
    >>> f(np.ones(3), 5.0)  # same shapes and dtypes: no new compilation
    array([4.20735492, 4.20735492, 4.20735492])
    >>> f.cache_info()
    CacheInfo(hits=1, misses=1, entries=1)
    """
    return _Jitted(fun, static_argnums, static_argnames, explain_cache_misses)

